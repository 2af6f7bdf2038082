/* fuzz_sample_sampler.c — libFuzzer target for the sampler's handling of
 * request parameters and backend logits: any bytes become sampling parameters
 * (NaN, inf and out-of-range values included, so sampler_init's validation is
 * exercised), a vocabulary of 1..512 tokens, logit_bias / stop-token lists and
 * several steps of logits (NaN, ±inf, huge values included). sampler_init must
 * either accept or explain; an accepted sampler must return a token in range
 * (or -1 only when no logit is usable), logprobs ≤ 0 with the alternatives in
 * descending order. A sampler that qualifies for nucleus candidates
 * (sample.h: top-p / min-p without top-k) is replayed alongside from k of
 * them (k from the input: k < vocabulary exercises the bounds,
 * tests/unit/sample_nucleus_ref.h makes them): the replay must give
 * sampler_sample's token and PRNG, or ask for the row without touching the
 * PRNG, and sampler_sample_z must then agree. Traps otherwise. Seeds in
 * tests/fuzz/corpus/fuzz_sample_sampler/. */
#include "sample/sample.h"
#include "sample_nucleus_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct reader {
    const uint8_t *p;
    size_t n;
};

static uint32_t rd_u32(struct reader *r)
{
    uint32_t v = 0;
    size_t k = r->n < 4 ? r->n : 4;
    memcpy(&v, r->p, k);
    r->p += k;
    r->n -= k;
    return v;
}

static float rd_f32(struct reader *r)
{
    uint32_t u = rd_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size};
    const uint32_t n_vocab = rd_u32(&r) % 512 + 1;
    struct sample_params p;
    sample_params_default(&p);
    const uint32_t flags = rd_u32(&r);
    /* each field either keeps its default or takes raw bytes (possibly invalid) */
    if (flags & 1) p.temperature = rd_f32(&r);
    if (flags & 2) p.top_k = (int32_t)rd_u32(&r);
    if (flags & 4) p.top_p = rd_f32(&r);
    if (flags & 8) p.min_p = rd_f32(&r);
    if (flags & 16) p.repetition_penalty = rd_f32(&r);
    if (flags & 32) p.presence_penalty = rd_f32(&r);
    if (flags & 64) p.frequency_penalty = rd_f32(&r);
    if (flags & 128) p.seed = rd_u32(&r);
    p.logprobs = (flags & 256) != 0;
    if (flags & 512) p.top_logprobs = (int32_t)(rd_u32(&r) % 24);
    struct sample_bias bias[4];
    int32_t stops[4];
    p.n_logit_bias = (flags >> 10) % 5;
    for (uint32_t i = 0; i < p.n_logit_bias; i++) {
        bias[i].token = (int32_t)(rd_u32(&r) % (n_vocab + 2)) - 1; /* sometimes out of range */
        bias[i].bias = rd_f32(&r);
    }
    p.logit_bias = bias;
    p.n_stop_tokens = (flags >> 13) % 5;
    for (uint32_t i = 0; i < p.n_stop_tokens; i++)
        stops[i] = (int32_t)(rd_u32(&r) % (n_vocab + 1));
    p.stop_tokens = stops;

    struct sampler s;
    char err[256] = "";
    if (sampler_init(&s, n_vocab, &p, err, sizeof(err)) != 0) {
        if (!err[0])
            __builtin_trap(); /* a refusal must say why */
        return 0;
    }
    struct sample_work w;
    if (sample_work_init(&w, n_vocab, err, sizeof(err)) != 0)
        abort();
    float *logits = malloc(n_vocab * sizeof(float));
    /* the nucleus replay's twin: the same parameters and seed */
    struct sampler s2;
    const bool nuc = sampler_nucleus_candidates(&s) && sampler_init(&s2, n_vocab, &p, err, sizeof(err)) == 0;
    const uint32_t nk = (flags >> 16) % n_vocab + 1;
    int32_t *cidx = malloc(n_vocab * sizeof(int32_t));
    float *cval = malloc(n_vocab * sizeof(float)), *z = malloc(n_vocab * sizeof(float));
    const int32_t prompt[3] = {0, (int32_t)(n_vocab / 2), (int32_t)n_vocab - 1};
    sampler_add_prompt(&s, prompt, 3);
    for (int step = 0; step < 4; step++) {
        int usable = 0;
        for (uint32_t i = 0; i < n_vocab; i++) {
            logits[i] = r.n ? rd_f32(&r) : (float)(i % 7) - 3.0f;
        }
        struct sample_result res;
        const int32_t t = sampler_sample(&s, &w, logits, &res);
        if (nuc && nk <= SAMPLER_NUCLEUS_MAX) {
            double total;
            float rest;
            const float temp = s2.params.temperature;
            const int32_t g = nucleus_ref_k(logits, n_vocab, temp, nk, cidx, cval, &total, &rest);
            uint64_t rng0[4];
            memcpy(rng0, s2.rng, sizeof rng0);
            int32_t t2 = sampler_sample_nucleus(&s2, cidx, cval, nk, total, rest, g);
            if (t2 == SAMPLER_NEED_ROW) {
                if (memcmp(rng0, s2.rng, sizeof rng0) != 0)
                    __builtin_trap();
                for (uint32_t i = 0; i < n_vocab; i++)
                    z[i] = topk_ref_clean(logits[i]) / temp;
                t2 = sampler_sample_z(&s2, &w, z, g);
            }
            if (t2 != t || memcmp(s.rng, s2.rng, sizeof s.rng) != 0)
                __builtin_trap();
        }
        for (uint32_t i = 0; i < n_vocab; i++)
            usable += w.logits[i] != -INFINITY;
        if (t < -1 || t >= (int32_t)n_vocab || (t == -1) != (usable == 0) || res.token != t)
            __builtin_trap();
        if (t >= 0 && s.params.logprobs) {
            if (!(res.logprob <= 1e-5f) || res.n_top < 0 || res.n_top > s.params.top_logprobs)
                __builtin_trap();
            for (int32_t j = 1; j < res.n_top; j++)
                if (res.top_logprobs[j] > res.top_logprobs[j - 1])
                    __builtin_trap();
        }
        if (t >= 0)
            sampler_accept(&s, t);
        (void)sampler_is_stop_token(&s, t);
    }
    free(logits);
    free(cidx), free(cval), free(z);
    if (nuc)
        sampler_free(&s2);
    sample_work_free(&w);
    sampler_free(&s);
    return 0;
}
