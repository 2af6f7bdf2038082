/* test_sample_sampler.c — the token sampler: greedy, seeds, top-k / top-p /
 * min-p, penalties, logit_bias, logprobs, stop tokens, a chi-square check
 * that temperature sampling follows the softmax, the batch sampler's
 * threads giving the same draws as one row after another, and the contract
 * of backend draws (sampler_plain_temperature, sampler_draw_begin / _end). Expected values are computed
 * here independently, in double, from the definitions in sample.h. */
#include "engine/backend.h"
#include "sample/sample.h"
#include "sample/sample_batch.h"
#include "test.h"
#include "sample_topk_ref.h"
#include "sample_nucleus_ref.h"

#include <float.h>

static uint64_t trng_state = 12345;
static double trng(void) /* test data only: xorshift64* → [0, 1) */
{
    return (double)(test_rand64(&trng_state) >> 11) * 0x1p-53;
}

static void random_logits(float *l, uint32_t n, double scale)
{
    for (uint32_t i = 0; i < n; i++)
        l[i] = (float)((trng() - 0.5) * scale);
}

/* Make a sampler + work; aborts the test on failure. */
static void mk(struct sampler *s, struct sample_work *w, uint32_t n, const struct sample_params *p)
{
    char err[256] = "";
    int rc = sampler_init(s, n, p, err, sizeof(err));
    CHECK_MSG(rc == 0, "sampler_init: %s", err);
    rc = sample_work_init(w, n, err, sizeof(err));
    CHECK_MSG(rc == 0, "sample_work_init: %s", err);
    if (rc)
        exit(1);
}

static void done(struct sampler *s, struct sample_work *w)
{
    sampler_free(s);
    sample_work_free(w);
}

static void test_greedy_argmax_ties(void)
{
    struct sample_params p;
    sample_params_default(&p);
    p.temperature = 0;
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, 1000, &p);
    float l[1000];
    for (int rep = 0; rep < 20; rep++) {
        random_logits(l, 1000, 10);
        int32_t want = 0;
        for (int i = 1; i < 1000; i++)
            if (l[i] > l[want])
                want = i;
        CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), want);
    }
    /* ties: the lowest id */
    for (int i = 0; i < 1000; i++)
        l[i] = -1;
    l[700] = l[300] = l[900] = 5;
    CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), 300);
    /* NaN counts as −inf, +inf as the largest finite value (ties by id again) */
    l[10] = NAN;
    l[800] = INFINITY;
    CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), 800);
    for (int i = 0; i < 1000; i++)
        l[i] = i % 2 ? -INFINITY : NAN;
    CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), -1);
    done(&s, &w);
    /* a temperature below 1e-5 is greedy */
    p.temperature = 1e-6f;
    mk(&s, &w, 1000, &p);
    random_logits(l, 1000, 10);
    int32_t want = 0;
    for (int i = 1; i < 1000; i++)
        if (l[i] > l[want])
            want = i;
    CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), want);
    done(&s, &w);
}

static void draw_sequence(uint64_t seed, int32_t *out, int n, const struct sample_params *base)
{
    struct sample_params p = *base;
    p.seed = seed;
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, 512, &p);
    static float l[512];
    uint64_t save = trng_state;
    trng_state = 777;
    for (int i = 0; i < n; i++) {
        random_logits(l, 512, 4);
        out[i] = sampler_sample(&s, &w, l, NULL);
        sampler_accept(&s, out[i]);
    }
    trng_state = save;
    done(&s, &w);
}

static void test_seed_determinism(void)
{
    struct sample_params p;
    sample_params_default(&p);
    p.top_p = 0.9f;
    p.top_k = 100;
    p.frequency_penalty = 0.3f;
    int32_t a[200], b[200], c[200];
    draw_sequence(42, a, 200, &p);
    draw_sequence(42, b, 200, &p);
    draw_sequence(43, c, 200, &p);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
    int diff = 0;
    for (int i = 0; i < 200; i++)
        diff += a[i] != c[i];
    CHECK_MSG(diff > 100, "different seeds gave %d different tokens of 200", diff);
    /* seed 0 is a seed like any other */
    draw_sequence(0, a, 200, &p);
    draw_sequence(0, b, 200, &p);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
}

static void test_top_k_1_is_greedy(void)
{
    struct sample_params p;
    sample_params_default(&p);
    p.top_k = 1;
    p.temperature = 1.5f;
    p.seed = 9;
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, 4096, &p);
    static float l[4096];
    for (int rep = 0; rep < 50; rep++) {
        random_logits(l, 4096, 8);
        if (rep % 5 == 0) { /* ties */
            l[4000] = l[17] = l[2000] = 100;
        }
        int32_t want = 0;
        for (int i = 1; i < 4096; i++)
            if (l[i] > l[want])
                want = i;
        CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), want);
    }
    done(&s, &w);
}

/* Draw `draws` tokens with the given params and logits; counts into hist. */
static void histogram(const struct sample_params *p, const float *l, uint32_t n, int draws, int *hist)
{
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, n, p);
    memset(hist, 0, n * sizeof(int));
    for (int i = 0; i < draws; i++) {
        int32_t t = sampler_sample(&s, &w, l, NULL);
        CHECK(t >= 0 && (uint32_t)t < n);
        if (t >= 0 && (uint32_t)t < n)
            hist[t]++;
    }
    done(&s, &w);
}

static void test_top_p_small(void)
{
    /* probabilities 0.5, 0.3, 0.15, 0.05 (logits = log p), shuffled ids */
    const double pr[4] = {0.15, 0.5, 0.05, 0.3};
    float l[4];
    for (int i = 0; i < 4; i++)
        l[i] = (float)log(pr[i]);
    struct sample_params p;
    sample_params_default(&p);
    p.seed = 5;
    int hist[4];
    p.top_p = 0.75f; /* 0.5 < 0.75 ≤ 0.8 → {1, 3} */
    histogram(&p, l, 4, 20000, hist);
    CHECK(hist[0] == 0 && hist[2] == 0);
    CHECK_NEAR(hist[1] / 20000.0, 0.5 / 0.8, 0.02);
    p.top_p = 0.85f; /* → {1, 3, 0} */
    histogram(&p, l, 4, 20000, hist);
    CHECK(hist[2] == 0 && hist[0] > 0);
    CHECK_NEAR(hist[0] / 20000.0, 0.15 / 0.95, 0.02);
    p.top_p = 0.4f; /* the best alone already covers it */
    histogram(&p, l, 4, 2000, hist);
    CHECK_EQ_INT(hist[1], 2000);
}

/* qsort helper for the reference: (prob desc, id asc) */
static const double *g_sort_key;
static int cmp_desc(const void *a, const void *b)
{
    int ia = *(const int *)a, ib = *(const int *)b;
    if (g_sort_key[ia] != g_sort_key[ib])
        return g_sort_key[ia] > g_sort_key[ib] ? -1 : 1;
    return ia - ib;
}

static void test_top_p_large_vocab(void)
{
    /* 6000 tokens, a flat-ish distribution: the nucleus holds hundreds of
     * tokens, so top_p_unsorted's bucket walk and the crossing-bucket sort are
     * exercised */
    enum { N = 6000 };
    static float l[N];
    static double pr[N];
    static int order[N], hist[N];
    random_logits(l, N, 3);
    const float temp = 0.8f;
    double mx = -1e300, sum = 0;
    for (int i = 0; i < N; i++)
        mx = fmax(mx, (double)(l[i] / temp));
    for (int i = 0; i < N; i++)
        sum += pr[i] = exp((double)(l[i] / temp) - mx);
    for (int i = 0; i < N; i++) {
        pr[i] /= sum;
        order[i] = i;
    }
    g_sort_key = pr;
    qsort(order, N, sizeof(int), cmp_desc);
    const double top_p = 0.3;
    double cum = 0;
    int keep = 0;
    while (cum < top_p)
        cum += pr[order[keep++]];
    CHECK_MSG(keep > 200, "nucleus of %d tokens is too small for this test", keep);
    struct sample_params p;
    sample_params_default(&p);
    p.temperature = temp;
    p.top_p = (float)top_p;
    p.seed = 77;
    histogram(&p, l, N, 12000, hist);
    int outside = 0, seen_kept = 0;
    for (int r = 0; r < N; r++) {
        if (r < keep)
            seen_kept += hist[order[r]] > 0;
        else
            outside += hist[order[r]];
    }
    CHECK_EQ_INT(outside, 0);
    CHECK_MSG(seen_kept > keep * 9 / 10, "only %d of the %d kept tokens were drawn", seen_kept, keep);
    /* top-k then top-p: p renormalised over the top-k survivors */
    p.top_k = 50;
    p.top_p = 0.5f;
    double zk = 0;
    for (int r = 0; r < 50; r++)
        zk += pr[order[r]];
    cum = 0;
    keep = 0;
    while (cum < 0.5 * zk)
        cum += pr[order[keep++]];
    histogram(&p, l, N, 4000, hist);
    outside = 0;
    seen_kept = 0;
    for (int r = 0; r < N; r++) {
        if (r < keep)
            seen_kept += hist[order[r]] > 0;
        else
            outside += hist[order[r]];
    }
    CHECK_EQ_INT(outside, 0);
    CHECK_EQ_INT(seen_kept, keep);
}

static void test_min_p(void)
{
    /* p ∝ 8, 4, 2, 1, 0.5 → min_p 0.2 keeps weights ≥ 0.2·8 = 1.6: {0, 1, 2} */
    const double wt[5] = {8, 4, 2, 1, 0.5};
    float l[5];
    for (int i = 0; i < 5; i++)
        l[i] = (float)log(wt[i]);
    struct sample_params p;
    sample_params_default(&p);
    p.min_p = 0.2f;
    p.seed = 3;
    int hist[5];
    histogram(&p, l, 5, 14000, hist);
    CHECK(hist[3] == 0 && hist[4] == 0);
    CHECK(hist[2] > 0);
    CHECK_NEAR(hist[0] / 14000.0, 8.0 / 14.0, 0.02);
    p.min_p = 1.0f; /* only the best */
    histogram(&p, l, 5, 1000, hist);
    CHECK_EQ_INT(hist[0], 1000);
}

static void test_penalties(void)
{
    /* processed logits (sample_work.logits after a step) against the definitions */
    enum { N = 8 };
    float l[N] = {0.3f, 2.0f, -1.0f, 0.5f, -0.5f, 1.25f, -3.0f, 0.0f};
    struct sample_params p;
    sample_params_default(&p);
    p.temperature = 0;
    p.repetition_penalty = 2.0f;
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    struct sample_bias bias[2] = {{7, 1.5f}, {0, -0.25f}};
    p.logit_bias = bias;
    p.n_logit_bias = 2;
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, N, &p);
    const int32_t prompt[] = {1, 2, 1, 99, -4}; /* out-of-range ids ignored */
    sampler_add_prompt(&s, prompt, 5);
    sampler_accept(&s, 3);
    sampler_accept(&s, 3);
    sampler_accept(&s, 4);
    sampler_accept(&s, 5); /* generated once, not in the prompt */
    sampler_sample(&s, &w, l, NULL);
    double want[N];
    want[0] = 0.3 - 0.25;                        /* bias only */
    want[1] = 2.0 / 2;                           /* prompt, positive: divided */
    want[2] = -1.0 * 2;                          /* prompt, negative: multiplied */
    want[3] = 0.5 / 2 - (2 * 0.25 + 0.5);        /* generated twice */
    want[4] = -0.5 * 2 - (1 * 0.25 + 0.5);       /* generated once */
    want[5] = 1.25 / 2 - (1 * 0.25 + 0.5);
    want[6] = -3.0;                              /* untouched */
    want[7] = 0.0 + 1.5;                         /* bias */
    for (int i = 0; i < N; i++)
        CHECK_NEAR(w.logits[i], want[i], 1e-6);
    /* the raw logits are not modified */
    CHECK(l[1] == 2.0f);
    done(&s, &w);
    /* presence / frequency do not count prompt tokens */
    sample_params_default(&p);
    p.temperature = 0;
    p.presence_penalty = 1.0f;
    mk(&s, &w, N, &p);
    sampler_add_prompt(&s, prompt, 3);
    sampler_sample(&s, &w, l, NULL);
    for (int i = 0; i < N; i++)
        CHECK(w.logits[i] == l[i]);
    done(&s, &w);
}

static void test_logit_bias_bans(void)
{
    enum { N = 50 };
    float l[N];
    random_logits(l, N, 2);
    l[7] = 10; /* the favourite */
    for (int variant = 0; variant < 2; variant++) {
        struct sample_bias b = {7, variant ? -INFINITY : -100.0f};
        struct sample_params p;
        sample_params_default(&p);
        p.logit_bias = &b;
        p.n_logit_bias = 1;
        p.seed = 11;
        int hist[N];
        histogram(&p, l, N, 5000, hist);
        CHECK_EQ_INT(hist[7], 0);
        p.temperature = 0;
        histogram(&p, l, N, 10, hist);
        CHECK_EQ_INT(hist[7], 0);
    }
    /* a positive bias makes a token win greedy */
    struct sample_bias b = {3, 50};
    struct sample_params p;
    sample_params_default(&p);
    p.temperature = 0;
    p.logit_bias = &b;
    p.n_logit_bias = 1;
    int hist[N];
    histogram(&p, l, N, 3, hist);
    CHECK_EQ_INT(hist[3], 3);
}

static void test_logprobs(void)
{
    enum { N = 3000 };
    static float l[N];
    struct sample_params p;
    sample_params_default(&p);
    p.logprobs = true;
    p.top_logprobs = 20;
    p.temperature = 0.7f; /* logprobs ignore temperature */
    p.top_k = 40;
    p.seed = 1;
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, N, &p);
    for (int rep = 0; rep < 10; rep++) {
        random_logits(l, N, 12);
        l[rep] = -INFINITY;
        struct sample_result r;
        int32_t t = sampler_sample(&s, &w, l, &r);
        CHECK(t >= 0 && r.token == t);
        double mx = -1e300, sum = 0;
        for (int i = 0; i < N; i++)
            mx = fmax(mx, (double)l[i]);
        for (int i = 0; i < N; i++)
            sum += exp((double)l[i] - mx);
        const double lse = mx + log(sum);
        CHECK_NEAR(r.logprob, (double)l[t] - lse, 1e-5);
        CHECK_EQ_INT(r.n_top, 20);
        double mass = 0;
        for (int j = 0; j < r.n_top; j++) {
            mass += exp((double)r.top_logprobs[j]);
            CHECK_NEAR(r.top_logprobs[j], (double)l[r.top_tokens[j]] - lse, 1e-5);
            if (j > 0)
                CHECK(r.top_logprobs[j] <= r.top_logprobs[j - 1]);
        }
        CHECK(mass <= 1.0 + 1e-6);
        /* the listed 20 are the 20 best */
        int better_outside = 0;
        for (int i = 0; i < N; i++) {
            int listed = 0;
            for (int j = 0; j < r.n_top; j++)
                listed |= r.top_tokens[j] == i;
            if (!listed && l[i] > l[r.top_tokens[r.n_top - 1]])
                better_outside++;
        }
        CHECK_EQ_INT(better_outside, 0);
        /* with top-k 40 the chosen token is among the 40 best */
        int rank = 0;
        for (int i = 0; i < N; i++)
            rank += l[i] > l[t];
        CHECK(rank < 40);
    }
    done(&s, &w);
    /* fewer finite tokens than asked: n_top shrinks; logprobs sum to 1 */
    float small[5] = {1, -INFINITY, 2, -INFINITY, 0.5f};
    mk(&s, &w, 5, &p);
    struct sample_result r;
    sampler_sample(&s, &w, small, &r);
    CHECK_EQ_INT(r.n_top, 3);
    double mass = 0;
    for (int j = 0; j < r.n_top; j++)
        mass += exp((double)r.top_logprobs[j]);
    CHECK_NEAR(mass, 1.0, 1e-6);
    CHECK_EQ_INT(r.top_tokens[0], 2);
    done(&s, &w);
}

static void test_chi_square_softmax(void)
{
    /* 10 tokens, temperature 0.7, 200000 draws with seed 2024. Chi-square with
     * 9 degrees of freedom must stay below 27.88 (the p = 0.001 critical value). */
    enum { N = 10, DRAWS = 200000 };
    float l[N] = {0.1f, 1.3f, -0.7f, 2.0f, 0.0f, -2.5f, 1.1f, 0.4f, -0.2f, 1.7f};
    const double temp = 0.7;
    struct sample_params p;
    sample_params_default(&p);
    p.temperature = (float)temp;
    p.seed = 2024;
    int hist[N];
    histogram(&p, l, N, DRAWS, hist);
    double mx = -1e300, sum = 0, e[N];
    for (int i = 0; i < N; i++)
        mx = fmax(mx, l[i] / temp);
    for (int i = 0; i < N; i++)
        sum += e[i] = exp(l[i] / temp - mx);
    double chi2 = 0;
    for (int i = 0; i < N; i++) {
        double expect = DRAWS * e[i] / sum;
        chi2 += (hist[i] - expect) * (hist[i] - expect) / expect;
    }
    fprintf(stderr, "  chi-square %.2f (9 dof, threshold 27.88)\n", chi2);
    CHECK(chi2 < 27.88);
}

static void test_stop_tokens_and_validation(void)
{
    struct sample_params p;
    sample_params_default(&p);
    const int32_t stops[] = {2, 128001};
    p.stop_tokens = stops;
    p.n_stop_tokens = 2;
    struct sampler s;
    char err[256];
    CHECK_EQ_INT(sampler_init(&s, 128256, &p, err, sizeof(err)), 0);
    CHECK(sampler_is_stop_token(&s, 2));
    CHECK(sampler_is_stop_token(&s, 128001));
    CHECK(!sampler_is_stop_token(&s, 3));
    CHECK(!sampler_is_stop_token(&s, -1));
    sampler_free(&s);

    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "stop token 128001");
    sample_params_default(&p);
    p.top_p = 0;
    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "top_p");
    sample_params_default(&p);
    p.temperature = NAN;
    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "temperature");
    sample_params_default(&p);
    p.min_p = 1.5f;
    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "min_p");
    sample_params_default(&p);
    p.repetition_penalty = 0;
    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "repetition_penalty");
    sample_params_default(&p);
    p.top_logprobs = 21;
    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "top_logprobs");
    sample_params_default(&p);
    struct sample_bias b = {100, 1};
    p.logit_bias = &b;
    p.n_logit_bias = 1;
    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "logit_bias");
    b.token = 5;
    b.bias = NAN;
    CHECK_EQ_INT(sampler_init(&s, 100, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "logit_bias");
    sample_params_default(&p);
    CHECK_EQ_INT(sampler_init(&s, 0, &p, err, sizeof(err)), -1);
    struct sample_work w;
    CHECK_EQ_INT(sample_work_init(&w, 0, err, sizeof(err)), -1);
}

static void test_no_history_change_on_sample(void)
{
    /* sampling twice from the same state with a reset PRNG gives the same token:
     * sampler_sample leaves the penalty history alone (speculative decoding) */
    enum { N = 64 };
    float l[N];
    random_logits(l, N, 3);
    struct sample_params p;
    sample_params_default(&p);
    p.frequency_penalty = 1.0f;
    p.seed = 8;
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, N, &p);
    uint64_t rng[4];
    memcpy(rng, s.rng, sizeof(rng));
    int32_t a = sampler_sample(&s, &w, l, NULL);
    memcpy(s.rng, rng, sizeof(rng));
    int32_t b = sampler_sample(&s, &w, l, NULL);
    CHECK_EQ_INT(a, b);
    done(&s, &w);
}

static void test_extremes(void)
{
    /* huge, infinite and NaN logits, tiny temperatures: always a valid answer */
    enum { N = 40 };
    float l[N];
    struct sample_params p;
    sample_params_default(&p);
    p.seed = 4;
    const float temps[] = {1e-4f, 0.01f, 1.0f, 100.0f};
    for (size_t k = 0; k < sizeof(temps) / sizeof(temps[0]); k++) {
        p.temperature = temps[k];
        p.top_p = k % 2 ? 0.5f : 1.0f;
        struct sampler s;
        struct sample_work w;
        mk(&s, &w, N, &p);
        for (int i = 0; i < N; i++)
            l[i] = i % 3 == 0 ? -FLT_MAX : i % 3 == 1 ? NAN : -INFINITY;
        l[17] = INFINITY;
        CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), 17); /* the only huge one */
        for (int i = 0; i < N; i++)
            l[i] = -FLT_MAX;
        int32_t t = sampler_sample(&s, &w, l, NULL);
        CHECK(t >= 0 && t < N);
        for (int i = 0; i < N; i++)
            l[i] = i % 2 ? NAN : -INFINITY;
        CHECK_EQ_INT(sampler_sample(&s, &w, l, NULL), -1);
        done(&s, &w);
    }
}

/* The backends' greedy pick (engine/backend.h backend_logits_argmax, which
 * the CUDA kernel reproduces) equals the sampler's greedy choice on rows full
 * of NaN, ±inf, ±0 and ties; sampler_plain_greedy says when it may stand in. */
static void test_plain_greedy_argmax(void)
{
    enum { N = 777 };
    struct sample_params p;
    sample_params_default(&p);
    p.temperature = 0;
    struct sampler s;
    struct sample_work w;
    mk(&s, &w, N, &p);
    CHECK(sampler_plain_greedy(&s));
    float l[N];
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, FLT_MAX, 1.0f};
    for (int rep = 0; rep < 400; rep++) {
        random_logits(l, N, rep % 2 ? 4 : 1e-3); /* tiny scale: many equal floats */
        const int n_special = rep % 50;
        for (int k = 0; k < n_special; k++)
            l[(uint32_t)(trng() * N)] = special[(int)(trng() * 7)];
        if (rep % 40 == 3)
            for (int i = 0; i < N; i++) /* no finite logit: −1 */
                l[i] = i % 2 ? NAN : -INFINITY;
        if (rep % 40 == 5)
            for (int i = 0; i < N; i++) /* all tied */
                l[i] = i % 3 ? 0.0f : -0.0f;
        CHECK_EQ_INT(backend_logits_argmax(l, N), sampler_sample(&s, &w, l, NULL));
    }
    done(&s, &w);
    const struct sample_bias bias = {5, 1.0f};
    for (int k = 0; k < 4; k++) {
        sample_params_default(&p);
        p.temperature = k == 0 ? 0.5f : 0;
        if (k == 1)
            p.presence_penalty = 0.5f;
        if (k == 2)
            p.logit_bias = &bias, p.n_logit_bias = 1;
        if (k == 3)
            p.logprobs = true;
        mk(&s, &w, N, &p);
        CHECK_MSG(!sampler_plain_greedy(&s), "case %d is not plain greedy", k);
        done(&s, &w);
    }
}

/* sampler_plain_temperature: exactly the samplers whose choice is the
 * whole-vocabulary temperature draw; sampler_draw_begin / _end: the uniform
 * of the next draw, the PRNG put back when the draw does not use it (the
 * greedy case: z's max is ±inf), so that a backend's draw leaves the PRNG
 * where sampler_sample leaves it. */
static void test_plain_temperature_draw(void)
{
    enum { N = 777 };
    struct sample_params p;
    struct sampler s;
    struct sample_work w;
    const struct sample_bias bias = {5, 1.0f};
    for (int k = 0; k < 12; k++) {
        sample_params_default(&p);
        bool want = true;
        switch (k) {
        case 0: break;                                        /* temperature 1, all off */
        case 1: p.temperature = 0, want = false; break;       /* greedy */
        case 2: p.top_k = 40, want = false; break;
        case 3: p.top_k = N; break;                           /* k ≥ vocabulary: off */
        case 4: p.top_k = 5000; break;
        case 5: p.top_p = 0.9f, want = false; break;
        case 6: p.min_p = 0.05f, want = false; break;
        case 7: p.presence_penalty = 0.5f, want = false; break;
        case 8: p.repetition_penalty = 1.1f, want = false; break;
        case 9: p.logit_bias = &bias, p.n_logit_bias = 1, want = false; break;
        case 10: p.logprobs = true, want = false; break;
        case 11: p.temperature = 2.0f; break;
        }
        mk(&s, &w, N, &p);
        CHECK_MSG(sampler_plain_temperature(&s) == want, "case %d: plain temperature %d, expected %d", k,
                  sampler_plain_temperature(&s), want);
        done(&s, &w);
    }
    /* two samplers of one seed: A samples, B takes u and gives it back when
     * the draw would not use it; their PRNGs stay in step */
    struct sampler a, b;
    struct sample_work wa, wb;
    sample_params_default(&p);
    p.temperature = 1e-4f;
    p.seed = 99;
    mk(&a, &wa, N, &p);
    mk(&b, &wb, N, &p);
    float l[N];
    int greedy = 0;
    for (int rep = 0; rep < 200; rep++) {
        random_logits(l, N, 8);
        if (rep % 5 == 1) /* z = l / 1e-4 overflows: the greedy case */
            l[(uint32_t)(trng() * N)] = 1e36f;
        if (rep % 5 == 3) /* no finite logit: the greedy case (−1) */
            for (int i = 0; i < N; i++)
                l[i] = i % 2 ? NAN : -INFINITY;
        float zmax = -INFINITY;
        for (int i = 0; i < N; i++) {
            const float v = isnan(l[i]) ? -INFINITY : l[i] == INFINITY ? FLT_MAX : l[i];
            const float z = v / p.temperature;
            zmax = z > zmax ? z : zmax;
        }
        const bool used = zmax != INFINITY && zmax != -INFINITY;
        greedy += !used;
        sampler_sample(&a, &wa, l, NULL);
        uint64_t saved[4];
        const double u = sampler_draw_begin(&b, saved);
        CHECK(u >= 0 && u < 1);
        sampler_draw_end(&b, saved, used);
        CHECK_MSG(memcmp(a.rng, b.rng, sizeof a.rng) == 0, "rep %d: the PRNGs are out of step", rep);
    }
    CHECK(greedy == 80);
    done(&a, &wa);
    done(&b, &wb);
}

/* The top-k candidates' replay (what a backend that finds them on the
 * device hands back: sampler_topk_candidates / sampler_sample_candidates)
 * against sampler_sample on the whole row: the same token and PRNG, with
 * top-p and min-p on top, ties, NaN / ±inf logits, ±0, and z overflowing. */
static void test_topk_candidates(void)
{
    enum { N = 1031 };
    struct sample_params p;
    struct sampler a, b;
    struct sample_work wa, wb;
    const struct sample_bias bias = {5, 1.0f};
    for (int c = 0; c < 8; c++) { /* who qualifies */
        sample_params_default(&p);
        p.top_k = 40;
        bool want = true;
        switch (c) {
        case 0: break;
        case 1: p.top_p = 0.9f, p.min_p = 0.05f; break;
        case 2: p.top_k = 0, want = false; break;
        case 3: p.top_k = N, want = false; break;  /* ≥ vocabulary: the plain draw's */
        case 4: p.top_k = 2000, want = false; break; /* > max_k */
        case 5: p.temperature = 0, want = false; break;
        case 6: p.presence_penalty = 0.5f, want = false; break;
        case 7: p.logit_bias = &bias, p.n_logit_bias = 1, want = false; break;
        }
        mk(&a, &wa, N, &p);
        CHECK_MSG(sampler_topk_candidates(&a, 1024) == want, "case %d: candidates %d, expected %d", c,
                  sampler_topk_candidates(&a, 1024), want);
        done(&a, &wa);
    }
    float l[N];
    int32_t idx[N];
    float val[N];
    int greedy = 0;
    for (int rep = 0; rep < 400; rep++) {
        sample_params_default(&p);
        const uint32_t ks[] = {1, 2, 3, 40, 50, 100, 1000, N - 1};
        p.top_k = (int32_t)ks[rep % 8];
        p.temperature = rep % 7 == 0 ? 1e-4f : (float)(0.2 + 1.5 * trng());
        p.top_p = rep % 3 == 0 ? 1.0f : (float)(0.5 + 0.5 * trng());
        p.min_p = rep % 4 == 0 ? (float)(0.1 * trng()) : 0.0f;
        p.seed = 1000 + (uint64_t)rep;
        random_logits(l, N, rep % 2 ? 8 : 30);
        if (rep % 5 == 1)
            for (int i = 0; i < N; i += 3) /* many ties */
                l[i] = (float)(int)(l[i]);
        if (rep % 11 == 2) { /* non-finite and signed zeros */
            l[3] = NAN, l[7] = INFINITY, l[9] = -INFINITY, l[11] = 0.0f, l[12] = -0.0f;
        }
        if (rep % 13 == 4) /* no finite logit: greedy (−1) */
            for (int i = 0; i < N; i++)
                l[i] = i % 2 ? NAN : -INFINITY;
        mk(&a, &wa, N, &p);
        mk(&b, &wb, N, &p);
        CHECK(sampler_topk_candidates(&b, N));
        const int32_t ta = sampler_sample(&a, &wa, l, NULL);
        const int32_t g = topk_ref(l, N, p.temperature, (uint32_t)p.top_k, idx, val);
        greedy += val[0] == INFINITY || val[0] == -INFINITY;
        const int32_t tb = sampler_sample_candidates(&b, idx, val, (uint32_t)p.top_k, g);
        CHECK_MSG(ta == tb, "rep %d (k %d, T %g): token %d from the row, %d from the candidates", rep, p.top_k,
                  p.temperature, ta, tb);
        CHECK_MSG(memcmp(a.rng, b.rng, sizeof a.rng) == 0, "rep %d: the PRNGs are out of step", rep);
        done(&a, &wa);
        done(&b, &wb);
    }
    CHECK(greedy > 0);
}

/* The nucleus replay (sampler_nucleus_candidates / sampler_sample_nucleus,
 * with sampler_sample_z when it cannot decide) against sampler_sample on the
 * whole row: the same token and PRNG, for top-p, min-p and both, over a
 * vocabulary larger than the candidates (the total comes from another
 * order, and also moved to the edge of its stated bound) and one they cover
 * (the sampler's own total), peaked rows (decided by the candidates) and flat
 * ones (the row decides), ties, NaN / ±inf, ±0 and z overflowing. */
static void test_nucleus_candidates(void)
{
    struct sample_params p;
    struct sampler a, b;
    struct sample_work wa, wb;
    for (int c = 0; c < 7; c++) { /* who qualifies */
        sample_params_default(&p);
        bool want = true;
        switch (c) {
        case 0: p.top_p = 0.9f; break;
        case 1: p.min_p = 0.05f; break;
        case 2: p.top_p = 0.9f, p.top_k = 40, want = false; break; /* top-k: the candidates of that */
        case 3: p.top_p = 0.9f, p.top_k = 5000; break;              /* top-k ≥ vocabulary: none */
        case 4: want = false; break;                                /* temperature alone: the plain draw */
        case 5: p.top_p = 0.9f, p.temperature = 0, want = false; break;
        case 6: p.top_p = 0.9f, p.frequency_penalty = 0.5f, want = false; break;
        }
        mk(&a, &wa, 2000, &p);
        CHECK_MSG(sampler_nucleus_candidates(&a) == want, "case %d: nucleus %d, expected %d", c,
                  sampler_nucleus_candidates(&a), want);
        done(&a, &wa);
    }
    enum { NMAX = 5000 };
    static float l[NMAX], z[NMAX];
    static int32_t idx[NMAX];
    static float val[NMAX];
    int decided = 0, row = 0, decided_big = 0, row_big = 0;
    for (int rep = 0; rep < 600; rep++) {
        const uint32_t ns[] = {5000, 1031, 700, 1024};
        const uint32_t n = ns[rep % 4];
        sample_params_default(&p);
        p.temperature = rep % 17 == 0 ? 1e-4f : (float)(0.2 + 1.5 * trng());
        switch (rep % 3) {
        case 0: p.top_p = (float)(0.5 + 0.5 * trng()); break;
        case 1: p.min_p = (float)(0.2 * trng()); break;
        default: p.top_p = (float)(0.5 + 0.5 * trng()), p.min_p = (float)(0.1 * trng()); break;
        }
        if (p.min_p == 0)
            p.min_p = 0.01f;
        p.seed = 7000 + (uint64_t)rep;
        const bool flat = rep % 5 == 3;
        random_logits(l, n, flat ? 0.5 : rep % 2 ? 40 : 80);
        if (rep % 7 == 1)
            for (uint32_t i = 0; i < n; i += 3) /* many ties */
                l[i] = (float)(int)(l[i]);
        if (rep % 11 == 2) { /* non-finite and signed zeros */
            l[3] = NAN, l[7] = INFINITY, l[9] = -INFINITY, l[11] = 0.0f, l[12] = -0.0f;
        }
        if (rep % 13 == 4) /* no finite logit: greedy (−1) */
            for (uint32_t i = 0; i < n; i++)
                l[i] = i % 2 ? NAN : -INFINITY;
        mk(&a, &wa, n, &p);
        mk(&b, &wb, n, &p);
        CHECK(sampler_nucleus_candidates(&b));
        const int32_t ta = sampler_sample(&a, &wa, l, NULL);
        double total;
        float rest;
        const int32_t g = nucleus_ref(l, n, p.temperature, idx, val, &total, &rest);
        if (rep % 4 == 0 && rep % 8 == 0) /* the edge of the stated bound, either side */
            total += (rep % 16 ? 1 : -1) * 0.99 * ldexp(total, -51) * ((double)n + 4096);
        const uint32_t k = n < SAMPLER_NUCLEUS_MAX ? n : SAMPLER_NUCLEUS_MAX;
        uint64_t rng0[4];
        memcpy(rng0, b.rng, sizeof rng0);
        int32_t tb = sampler_sample_nucleus(&b, idx, val, k, total, rest, g);
        if (tb == SAMPLER_NEED_ROW) {
            CHECK_MSG(memcmp(rng0, b.rng, sizeof rng0) == 0, "rep %d: the PRNG moved before the row", rep);
            for (uint32_t i = 0; i < n; i++)
                z[i] = topk_ref_clean(l[i]) / p.temperature;
            tb = sampler_sample_z(&b, &wb, z, g);
            row++;
            row_big += n > k && !flat;
        } else {
            decided++;
            decided_big += n > k;
        }
        CHECK_MSG(ta == tb, "rep %d (n %u, T %g, top_p %g, min_p %g): token %d from the row, %d from the nucleus",
                  rep, n, p.temperature, p.top_p, p.min_p, ta, tb);
        CHECK_MSG(memcmp(a.rng, b.rng, sizeof a.rng) == 0, "rep %d: the PRNGs are out of step", rep);
        done(&a, &wa);
        done(&b, &wb);
    }
    /* a cut exactly at p·T (two weights of 1, the rest 0: T = 2, top_p 0.5):
     * a total off by less than its bound must leave it to the row */
    for (int up = 0; up < 2; up++) {
        const uint32_t n = 1031;
        sample_params_default(&p);
        p.top_p = 0.5f;
        p.seed = 99 + (uint64_t)up;
        for (uint32_t i = 0; i < n; i++)
            l[i] = i == 5 || i == 900 ? 0.0f : -200.0f;
        mk(&a, &wa, n, &p);
        mk(&b, &wb, n, &p);
        double total;
        float rest;
        const int32_t g = nucleus_ref(l, n, p.temperature, idx, val, &total, &rest);
        CHECK(total == 2.0 && rest == 0.0f);
        total *= up ? 1 + 0x1p-52 * n : 1 - 0x1p-52 * n;
        CHECK_EQ_INT(sampler_sample_nucleus(&b, idx, val, SAMPLER_NUCLEUS_MAX, total, rest, g), SAMPLER_NEED_ROW);
        for (uint32_t i = 0; i < n; i++)
            z[i] = l[i];
        CHECK_EQ_INT(sampler_sample_z(&b, &wb, z, g), sampler_sample(&a, &wa, l, NULL));
        done(&a, &wa);
        done(&b, &wb);
    }
    printf("  nucleus: %d draws decided by the candidates (%d over a larger vocabulary), %d by the row (%d of them "
           "not flat)\n", decided, decided_big, row, row_big);
    CHECK(decided_big > 100 && row > 20);
}

/* sample_batch over 4 threads vs the same rows one by one: every result
 * (token, logprob, top alternatives) the same bits, step after step, with
 * samplers of every kind in the batch. */
static void test_batch_threads_same_bits(void)
{
    enum { R = 19, V = 5003, STEPS = 6 };
    float *l = malloc(sizeof(float) * R * V);
    struct sampler a[R], b[R];
    struct sample_work w;
    struct sample_batch sb;
    char err[256] = "";
    CHECK_MSG(sample_work_init(&w, V, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(sample_batch_init(&sb, V, 4, err, sizeof err) == 0, "%s", err);
    CHECK(sb.pool.n_threads == 4);
    for (int r = 0; r < R; r++) {
        struct sample_params p;
        sample_params_default(&p);
        p.seed = 1000 + (uint64_t)r;
        p.temperature = r % 5 == 0 ? 0.0f : 0.5f + 0.1f * (float)(r % 7);
        p.top_k = r % 3 == 1 ? 50 : 0;
        p.top_p = r % 4 == 2 ? 0.9f : 1.0f;
        p.min_p = r % 6 == 3 ? 0.05f : 0.0f;
        p.frequency_penalty = r % 4 == 1 ? 0.4f : 0.0f;
        p.logprobs = r % 2 == 0;
        p.top_logprobs = r % 2 == 0 ? 5 : 0;
        CHECK_MSG(sampler_init(&a[r], V, &p, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(sampler_init(&b[r], V, &p, err, sizeof err) == 0, "%s", err);
    }
    struct sample_job jobs[R];
    struct sample_result ra[R], rb[R];
    int same = 0, differ = 0;
    for (int step = 0; step < STEPS; step++) {
        random_logits(l, (uint32_t)R * V, 12.0);
        for (int r = 0; r < R; r++) {
            sampler_sample(&a[r], &w, l + (size_t)r * V, &ra[r]);
            jobs[r] = (struct sample_job){.s = &b[r], .logits = l + (size_t)r * V, .out = &rb[r]};
        }
        sample_batch_run(&sb, jobs, R);
        for (int r = 0; r < R; r++) {
            const bool eq = ra[r].token == rb[r].token && memcmp(&ra[r].logprob, &rb[r].logprob, 4) == 0 &&
                            ra[r].n_top == rb[r].n_top &&
                            memcmp(ra[r].top_tokens, rb[r].top_tokens, sizeof(int32_t) * (size_t)ra[r].n_top) == 0 &&
                            memcmp(ra[r].top_logprobs, rb[r].top_logprobs, sizeof(float) * (size_t)ra[r].n_top) == 0;
            same += eq;
            differ += !eq;
            sampler_accept(&a[r], ra[r].token);
            sampler_accept(&b[r], rb[r].token);
        }
    }
    CHECK_MSG(differ == 0, "%d of %d rows differ between the batch sampler and one by one", differ, same + differ);
    for (int r = 0; r < R; r++) {
        sampler_free(&a[r]);
        sampler_free(&b[r]);
    }
    sample_batch_free(&sb);
    sample_work_free(&w);
    free(l);
}

int main(void)
{
    RUN(test_plain_greedy_argmax);
    RUN(test_greedy_argmax_ties);
    RUN(test_seed_determinism);
    RUN(test_top_k_1_is_greedy);
    RUN(test_top_p_small);
    RUN(test_top_p_large_vocab);
    RUN(test_min_p);
    RUN(test_penalties);
    RUN(test_logit_bias_bans);
    RUN(test_logprobs);
    RUN(test_chi_square_softmax);
    RUN(test_stop_tokens_and_validation);
    RUN(test_no_history_change_on_sample);
    RUN(test_extremes);
    RUN(test_batch_threads_same_bits);
    RUN(test_plain_temperature_draw);
    RUN(test_topk_candidates);
    RUN(test_nucleus_candidates);
    return test_summary();
}
