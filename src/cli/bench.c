/* cli/bench.c — memra-bench: llama-bench-like speed figures for one model.
 *
 *   memra-bench PATH [--tests pp512,pp4096,tg128,tg128@d4096] [--reps N] [--backend NAME]
 *               [--ubatch N] [--threads N] [--json] [--bw GBPS (4300)] [--flops TFLOPS (790)]
 *   memra-bench (PATH | --vocab N) --sample ROWS [--reps N] [--spread A (5)]
 *
 * --sample: the engine's host-side sampling instead of the model: ROWS rows of
 * random logits of the model's vocabulary, or of --vocab N entries (A times
 * a sum of 4 uniforms on [−½, ½]: roughly normal, sd A/√3 — a smaller A is
 * flatter, and top-p then keeps more tokens; temperature 0.8, top-p 0.95, the
 * same fixed seeds every run) drawn the way a server step
 * draws them (sample/sample_batch.h), on 1 thread and on the batch sampler's
 * default count; prints ms a step and rows/s. The model is only read for its
 * vocabulary.
 *
 * Tests: ppN = one prefill of N tokens from an empty KV slot, fed in chunks of
 * the backend's max_batch_tokens (--ubatch, default 512, like llama-bench's
 * ubatch); tgN = N single-token decode steps; tgNxB = N decode steps of B
 * sequences together (continuous batching's steady state: tok/s counts all
 * B·N tokens). Any may take "@dD": D tokens are prefilled first (into each
 * sequence), untimed, so the timed part runs at depth D. Decode steps take
 * the greedy pick from the backend (backend_seq.argmax), as generation does.
 *
 * Tokens are random ids (fixed seed): the bench needs no text, so it opens the
 * model and backend directly (model_open + backend_open) and works on a model
 * without a tokenizer, such as tools/make_test_models.py's 8B test models.
 *
 * Timing: wall clock around the backend_forward calls of the timed part. Each
 * timed part ends with a forward that returns logits or picks to the host, which
 * synchronizes the device, so the clock covers all device work. Warm-up runs
 * per test (a chunk of prefill, or 16 decode steps, after its depth; repeated
 * until 0.25 s has passed, at most 8) come first, then --reps timed runs; the
 * figure is their median.
 *
 * Figures: pp reports TFLOP/s = 2·params·N / time, where params counts the
 * weights multiplied per token (every matrix but the embedding table; a MoE
 * counts its active experts), and % of --flops; attention FLOPs are not
 * counted. tg reports GB/s = model_decode_bytes() · steps/s (the weight bytes one
 * step reads, once for all B sequences; the KV cache is not counted) and % of --bw. The defaults are the
 * ceilings measured on one H200 of the device machine (bench/RESULTS.md), so on another backend (the CPU) the
 * % column is "—" (JSON: limit and pct_limit null) unless --bw / --flops give that machine's own.
 * The KV cache's type comes from MEMRA_KV_TYPE (bf16 unless set; the banner
 * and the JSON's kv_type say which), the matmuls' activations from
 * MEMRA_ACT_TYPE (f32 unless set; act_type).
 */
#include "core/checked.h"
#include "core/dtype.h"
#include "core/log.h"
#include "engine/backend.h"
#include "model/model.h"
#include "sample/sample_batch.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The report names the weights by layer 0's attn_q type (Q4_K for a Q4_K_M file). */
#define BENCH_MAX_TESTS 16
#define BENCH_MAX_REPS 100
#define BENCH_MAX_TOKENS (1u << 20)
#define BENCH_MAX_BATCH 256u
/* Warm-up: a test's short version repeated until this much wall time has passed (its depth prefills included, so a
 * deep test on the CPU warms once; at most BENCH_WARM_RUNS times), so that a short test (pp32: ~10 ms a run on an
 * H100) starts timing from a busy device, not one just left idle */
#define BENCH_WARM_S 0.25
#define BENCH_WARM_RUNS 8

struct bench_test {
    char name[32];
    int is_pp;       /* 1: prefill of n tokens; 0: n decode steps */
    uint32_t n;      /* tokens timed */
    uint32_t depth;  /* tokens prefilled before, untimed */
    uint32_t batch;  /* tg: sequences decoding together ("tg128x64"), 1 otherwise */
    double times[BENCH_MAX_REPS];
    double median_s;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int parse_pos_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0.0) || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

/* "pp512", "tg128", "tg128@d4096" → t; 0 or -1. */
static int bench_parse_test(const char *s, size_t len, struct bench_test *t)
{
    char buf[32], *at;
    if (len < 3 || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    memset(t, 0, sizeof(*t));
    memcpy(t->name, buf, len + 1);
    if (strncmp(buf, "pp", 2) == 0)
        t->is_pp = 1;
    else if (strncmp(buf, "tg", 2) != 0)
        return -1;
    at = strchr(buf, '@');
    if (at) {
        *at = 0;
        if (at[1] != 'd' || checked_parse_u32(at + 2, 0, BENCH_MAX_TOKENS, &t->depth) != 0)
            return -1;
    }
    t->batch = 1;
    char *x = strchr(buf, 'x');
    if (x) {
        *x = 0;
        if (t->is_pp || checked_parse_u32(x + 1, 1, BENCH_MAX_BATCH, &t->batch) != 0)
            return -1;
    }
    return checked_parse_u32(buf + 2, 1, BENCH_MAX_TOKENS, &t->n);
}

static int bench_parse_tests(const char *list, struct bench_test *tests, uint32_t *n_tests)
{
    *n_tests = 0;
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (*n_tests == BENCH_MAX_TESTS || bench_parse_test(p, len, &tests[*n_tests]) != 0)
            return -1;
        (*n_tests)++;
        p += len + (c ? 1 : 0);
    }
    return *n_tests ? 0 : -1;
}

/* Weights multiplied per token: every matrix the decode step reads except the
 * embedding table (a row lookup); a MoE layer counts its n_experts_used experts. */
static uint64_t bench_params(const struct model *m)
{
    const struct model_config *c = &m->cfg;
#define P(w) ((w).rows * (w).cols)
    uint64_t n = P(m->output);
    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        n += P(L->wq) + P(L->wk) + P(L->wv) + P(L->wo);
        if (c->n_experts == 0)
            n += P(L->w_gate) + P(L->w_up) + P(L->w_down);
        else
            n += P(L->router) + c->n_experts_used * (P(L->experts[0].gate) + P(L->experts[0].up) +
                                                     P(L->experts[0].down));
    }
#undef P
    return n;
}

/* Feed toks[0..n) into the sequence of block table blocks (linear, the whole
 * context) from position pos in chunks of max_batch_tokens; the last chunk
 * returns the last token's logits (and so synchronizes). */
static int bench_prefill(struct backend *b, const uint32_t *blocks, uint32_t pos, const int32_t *toks, uint32_t n, float *logits,
                         char *err, size_t errlen)
{
    const uint32_t chunk = b->cfg.max_batch_tokens;
    for (uint32_t i = 0; i < n; i += chunk) {
        const uint32_t k = n - i < chunk ? n - i : chunk;
        const int last = i + k == n;
        struct backend_seq s = {.blocks = blocks, .pos = pos + i, .n_tokens = k, .tokens = toks + i,
                                .n_logits = last ? 1 : 0, .logits = logits};
        struct backend_batch bt = {1, &s};
        if (backend_forward(b, &bt, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* n decode steps of B sequences together (sequence k in the region of the
 * linear table blocks + k·blocks_per_seq), each taking its greedy pick from
 * the backend (backend_seq.argmax, as greedy generation does); the tokens fed
 * are the fixed stream, not the picks, so every run does the same work. */
static int bench_decode(struct backend *b, const uint32_t *blocks, uint32_t blocks_per_seq, uint32_t B, uint32_t pos,
                        const int32_t *toks, uint32_t n, float *logits, char *err, size_t errlen)
{
    struct backend_seq s[BENCH_MAX_BATCH];
    int32_t picks[BENCH_MAX_BATCH];
    const uint32_t V = b->model->cfg.vocab;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < B; k++)
            s[k] = (struct backend_seq){.blocks = blocks + (size_t)k * blocks_per_seq, .pos = pos + i,
                                        .n_tokens = 1, .tokens = toks + i, .n_logits = 1,
                                        .logits = logits + (size_t)k * V, .argmax = &picks[k]};
        struct backend_batch bt = {B, s};
        if (backend_forward(b, &bt, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* One run of t: untimed depth prefill (from position 0, overwriting what an
 * earlier run left), timed part; *dt its seconds.
 * warm: a short version (one chunk or 16 steps) whose time is dropped. */
static int bench_run(struct backend *b, const uint32_t *blocks, uint32_t blocks_per_seq, const struct bench_test *t,
                     const int32_t *toks, float *logits, int warm, double *dt, char *err, size_t errlen)
{
    for (uint32_t k = 0; k < t->batch && t->depth; k++)
        if (bench_prefill(b, blocks + (size_t)k * blocks_per_seq, 0, toks, t->depth, logits, err, errlen) != 0)
            return -1;
    uint32_t n = t->n;
    if (warm)
        n = t->is_pp ? (n < b->cfg.max_batch_tokens ? n : b->cfg.max_batch_tokens) : (n < 16 ? n : 16);
    const int32_t *tk = toks + t->depth;
    const double t0 = now_s();
    int rc = t->is_pp ? bench_prefill(b, blocks, t->depth, tk, n, logits, err, errlen)
                      : bench_decode(b, blocks, blocks_per_seq, t->batch, t->depth, tk, n, logits, err, errlen);
    *dt = now_s() - t0;
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, uint32_t n)
{
    double s[BENCH_MAX_REPS];
    memcpy(s, v, sizeof(double) * n);
    qsort(s, n, sizeof(double), cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* --sample: ms a step of sampling `rows` rows of n_vocab random logits, on 1
 * thread and on the batch sampler's default thread count; median of reps runs
 * of 8 steps each, after one untimed step. */
static int bench_sampling(uint32_t n_vocab, uint32_t rows, uint32_t reps, double spread)
{
    char err[256];
    float *l = malloc(sizeof(float) * rows * n_vocab);
    struct sampler *sm = calloc(rows, sizeof(*sm));
    struct sample_job *jobs = calloc(rows, sizeof(*jobs));
    struct sample_result *res = calloc(rows, sizeof(*res));
    if (!l || !sm || !jobs || !res) {
        fprintf(stderr, "memra-bench: out of memory for %u rows of %u\n", rows, n_vocab);
        free(l), free(sm), free(jobs), free(res);
        return 1;
    }
    uint64_t x = 0x9E3779B97F4A7C15ULL; /* fixed logits: roughly normal, sd spread/√3 (~2.9 by default) */
    const float scale = (float)spread;
    for (size_t i = 0; i < (size_t)rows * n_vocab; i++) {
        float v = 0;
        for (int k = 0; k < 4; k++) {
            x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
            v += (float)((x * 0x2545F4914F6CDD1DULL) >> 40) * 0x1p-24f - 0.5f;
        }
        l[i] = scale * v;
    }
    printf("| rows | vocab | threads | ms a step | rows/s |\n| --- | --- | --- | --- | --- |\n");
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        struct sample_batch sb;
        if (sample_batch_init(&sb, n_vocab, pass == 0 ? 1 : 0, err, sizeof err) != 0) {
            fprintf(stderr, "memra-bench: %s\n", err);
            rc = 1;
            break;
        }
        for (uint32_t r = 0; r < rows && rc == 0; r++) {
            struct sample_params p;
            sample_params_default(&p);
            p.temperature = 0.8f, p.top_p = 0.95f, p.seed = r;
            if (sampler_init(&sm[r], n_vocab, &p, err, sizeof err) != 0)
                rc = 1;
            jobs[r] = (struct sample_job){.s = &sm[r], .logits = l + (size_t)r * n_vocab, .out = &res[r]};
        }
        double t[BENCH_MAX_REPS] = {0};
        sample_batch_run(&sb, jobs, rows); /* warm-up */
        for (uint32_t i = 0; i < reps && rc == 0; i++) {
            const double t0 = now_s();
            for (int k = 0; k < 8; k++)
                sample_batch_run(&sb, jobs, rows);
            t[i] = (now_s() - t0) / 8;
        }
        if (rc == 0) {
            for (uint32_t i = 1; i < reps; i++) /* insertion sort: few reps */
                for (uint32_t j = i; j > 0 && t[j] < t[j - 1]; j--) {
                    const double tmp = t[j];
                    t[j] = t[j - 1], t[j - 1] = tmp;
                }
            const double med = t[reps / 2];
            printf("| %u | %u | %u | %.3f | %.0f |\n", rows, n_vocab, sb.pool.n_threads, med * 1e3, rows / med);
        }
        for (uint32_t r = 0; r < rows; r++)
            sampler_free(&sm[r]);
        sample_batch_free(&sb);
    }
    free(l), free(sm), free(jobs), free(res);
    return rc;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *backend_name = NULL, *tests_arg = "pp512,pp4096,tg128,tg128@d4096";
    uint32_t reps = 3, ubatch = 512, threads = 0, sample_rows = 0, vocab = 0;
    int json = 0;
    double bw = 4300.0, flops = 790.0, spread = 5.0;
    int bw_given = 0, flops_given = 0; /* the defaults are an H200's: no % on another backend without these */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int bad = 0;
        if (strcmp(a, "--tests") == 0 && i + 1 < argc)
            tests_arg = argv[++i];
        else if (strcmp(a, "--reps") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 1, BENCH_MAX_REPS, &reps);
        else if (strcmp(a, "--ubatch") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 1, 65536, &ubatch);
        else if (strcmp(a, "--threads") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 0, 1024, &threads);
        else if (strcmp(a, "--backend") == 0 && i + 1 < argc)
            backend_name = argv[++i];
        else if (strcmp(a, "--bw") == 0) {
            bad = i + 1 >= argc || parse_pos_double(argv[++i], &bw);
            bw_given = 1;
        } else if (strcmp(a, "--flops") == 0) {
            bad = i + 1 >= argc || parse_pos_double(argv[++i], &flops);
            flops_given = 1;
        } else if (strcmp(a, "--json") == 0)
            json = 1;
        else if (strcmp(a, "--sample") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 1, BENCH_MAX_BATCH, &sample_rows);
        else if (strcmp(a, "--spread") == 0)
            bad = i + 1 >= argc || parse_pos_double(argv[++i], &spread);
        else if (strcmp(a, "--vocab") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 2, 1u << 22, &vocab);
        else if (a[0] != '-' && !path)
            path = a;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "memra-bench: bad argument '%s'\n", a);
            path = NULL;
            break;
        }
    }
    if (sample_rows && vocab && !path) /* no model needed */
        return bench_sampling(vocab, sample_rows, reps, spread);
    struct bench_test tests[BENCH_MAX_TESTS];
    uint32_t n_tests = 0;
    if (path && bench_parse_tests(tests_arg, tests, &n_tests) != 0) {
        fprintf(stderr, "memra-bench: bad --tests '%s' (ppN, tgN or tgNxB, optionally @dD, comma-separated, at most %d)\n",
                tests_arg, BENCH_MAX_TESTS);
        path = NULL;
    }
    if (!path) {
        fprintf(stderr, "usage: memra-bench PATH [--tests pp512,pp4096,tg128,tg128@d4096] [--reps N] "
                        "[--backend NAME] [--ubatch N] [--threads N] [--json] [--bw GBPS] [--flops TFLOPS]\n"
                        "       memra-bench (PATH | --vocab N) --sample ROWS [--reps N] [--spread A]\n");
        return 2;
    }

    char err[1024];
    struct model m;
    if (model_open(&m, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-bench: %s\n", err);
        return 1;
    }
    if (sample_rows) {
        const int src = bench_sampling(vocab ? vocab : m.cfg.vocab, sample_rows, reps, spread);
        model_close(&m);
        return src;
    }
    uint32_t max_pos = 1, max_pp = 1, max_b = 1;
    for (uint32_t i = 0; i < n_tests; i++) {
        max_b = tests[i].batch > max_b ? tests[i].batch : max_b;
        const uint32_t end = tests[i].depth + tests[i].n;
        max_pos = end > max_pos ? end : max_pos;
        const uint32_t pre = tests[i].is_pp ? end : tests[i].depth; /* tokens prefilled in chunks */
        max_pp = pre > max_pp ? pre : max_pp;
    }
    int rc = 1;
    struct backend *b = NULL;
    int32_t *toks = NULL;
    uint32_t *blocks = NULL;
    float *logits = NULL;
    if (max_pos > m.cfg.max_ctx) {
        fprintf(stderr, "memra-bench: the tests need %u positions but %s's context is %u\n", max_pos, path,
                m.cfg.max_ctx);
        goto out;
    }
    /* max_b sequences (1 unless a tgNxB test asks for more), each holding
     * exactly the positions the tests need (linear tables of that many blocks);
     * prefill chunks of ubatch tokens (fewer when no test prefills that many),
     * at least max_b (a decode step's tokens) */
    uint32_t mbt = ubatch < max_pp ? ubatch : max_pp;
    mbt = mbt > max_b ? mbt : max_b;
    const uint32_t bps = backend_kv_blocks_for(max_pos);
    struct backend_config cfg = {.max_seqs = max_b, .max_ctx = max_pos, .n_threads = threads,
                                 .kv_blocks = bps * max_b, .max_batch_tokens = mbt};
    const char *bname = backend_name ? backend_name : backend_default_name();
    const double tl0 = now_s();
    if (backend_open(&b, bname, &m, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-bench: %s\n", err);
        goto out;
    }
    const double load_s = now_s() - tl0;
    toks = malloc(sizeof(int32_t) * max_pos);
    logits = malloc(sizeof(float) * m.cfg.vocab * max_b);
    blocks = malloc(sizeof(uint32_t) * bps * max_b);
    if (!toks || !logits || !blocks) {
        fprintf(stderr, "memra-bench: out of memory\n");
        goto out;
    }
    if (blocks)
        for (uint32_t k = 0; k < max_b; k++)
            backend_blocks_linear(blocks + (size_t)k * bps, k, max_pos);
    uint64_t x = 0x9E3779B97F4A7C15ull; /* xorshift64, fixed seed */
    for (uint32_t i = 0; i < max_pos; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        toks[i] = (int32_t)(x % m.cfg.vocab);
    }
    const uint64_t params = bench_params(&m), dbytes = model_decode_bytes(&m);
    const int on_cuda = strcmp(b->ops->name, "cuda") == 0; /* the default limits are an H200's */
    const char *fmt = mf_format_name(m.file.format), *wtype = dtype_name(m.layers[0].wq.dtype);
    fprintf(stderr, "memra-bench: %s (%s, %s, %.3f B params multiplied per token, %.3f GB read per decoded token) "
            "on %s, ubatch %u, KV %s, %s activations, loaded in %.2f s\n", m.arch_name, fmt, wtype, params / 1e9,
            dbytes / 1e9, b->ops->name, b->cfg.max_batch_tokens, backend_kv_type_name(b->cfg.kv_type),
            backend_act_type_name(b->cfg.act_type), load_s);

    json_t *jres = json_array();
    if (!json) {
        printf("| model | format | weights | backend | test | tok/s | GB/s or TFLOP/s | %% of limit |\n");
        printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    }
    for (uint32_t i = 0; i < n_tests; i++) {
        struct bench_test *t = &tests[i];
        double dt;
        const double warm0 = now_s(); /* the warm-ups' wall time, depth prefills included */
        for (int w = 0; w < BENCH_WARM_RUNS && (w == 0 || now_s() - warm0 < BENCH_WARM_S); w++)
            if (bench_run(b, blocks, bps, t, toks, logits, 1, &dt, err, sizeof(err)) != 0) {
                fprintf(stderr, "memra-bench: %s: %s\n", t->name, err);
                json_decref(jres);
                goto out;
            }
        for (uint32_t r = 0; r < reps; r++)
            if (bench_run(b, blocks, bps, t, toks, logits, 0, &t->times[r], err, sizeof(err)) != 0) {
                fprintf(stderr, "memra-bench: %s: %s\n", t->name, err);
                json_decref(jres);
                goto out;
            }
        t->median_s = median(t->times, reps);
        const double tps = (double)t->n * t->batch / t->median_s; /* tgNxB: all B sequences' tokens */
        /* decode: the weights are read once a step, whatever B */
        const double rate = t->is_pp ? 2.0 * (double)params * tps / 1e12 : (double)dbytes * tps / t->batch / 1e9;
        const double pct = 100.0 * rate / (t->is_pp ? flops : bw);
        const int have_limit = on_cuda || (t->is_pp ? flops_given : bw_given);
        json_t *o = json_object(), *jt = json_array();
        for (uint32_t r = 0; r < reps; r++)
            json_array_append_new(jt, json_real(t->times[r]));
        json_object_set_new(o, "test", json_string(t->name));
        json_object_set_new(o, "kind", json_string(t->is_pp ? "pp" : "tg"));
        json_object_set_new(o, "n_tokens", json_integer(t->n));
        json_object_set_new(o, "depth", json_integer(t->depth));
        json_object_set_new(o, "batch", json_integer(t->batch));
        json_object_set_new(o, "times_s", jt);
        json_object_set_new(o, "median_s", json_real(t->median_s));
        json_object_set_new(o, "tok_s", json_real(tps));
        json_object_set_new(o, t->is_pp ? "tflops" : "gbs", json_real(rate));
        json_object_set_new(o, "limit", have_limit ? json_real(t->is_pp ? flops : bw) : json_null());
        json_object_set_new(o, "pct_limit", have_limit ? json_real(pct) : json_null());
        json_array_append_new(jres, o);
        char pcts[32] = "—";
        if (have_limit)
            snprintf(pcts, sizeof pcts, "%.2f %%", pct);
        if (!json)
            printf("| %s | %s | %s | %s | %s | %.2f | %.2f %s | %s |\n", m.arch_name, fmt, wtype, b->ops->name,
                   t->name, tps, rate, t->is_pp ? "TFLOP/s" : "GB/s", pcts);
        else
            fprintf(stderr, "memra-bench: %s: %.2f tok/s, %.2f %s, %s of limit\n", t->name, tps, rate,
                    t->is_pp ? "TFLOP/s" : "GB/s", pcts);
        fflush(stdout);
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "path", json_string(path));
        json_object_set_new(o, "arch", json_string(m.arch_name));
        json_object_set_new(o, "format", json_string(fmt));
        json_object_set_new(o, "weights", json_string(wtype));
        json_object_set_new(o, "backend", json_string(b->ops->name));
        json_object_set_new(o, "params", json_integer((json_int_t)params));
        json_object_set_new(o, "decode_bytes", json_integer((json_int_t)dbytes));
        json_object_set_new(o, "max_batch_tokens", json_integer(b->cfg.max_batch_tokens));
        json_object_set_new(o, "kv_type", json_string(backend_kv_type_name(b->cfg.kv_type))); /* MEMRA_KV_TYPE */
        json_object_set_new(o, "act_type", json_string(backend_act_type_name(b->cfg.act_type))); /* MEMRA_ACT_TYPE */
        json_object_set_new(o, "reps", json_integer(reps));
        json_object_set_new(o, "bw_gbs", on_cuda || bw_given ? json_real(bw) : json_null());
        json_object_set_new(o, "flops_tflops", on_cuda || flops_given ? json_real(flops) : json_null());
        json_object_set_new(o, "load_s", json_real(load_s));
        json_object_set_new(o, "results", jres);
        char *s = json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        json_decref(jres);
    }
    rc = 0;
out:
    free(blocks);
    free(toks);
    free(logits);
    backend_close(b);
    model_close(&m);
    return rc;
}
