/* tests/kernels/kernel_sample.c — the temperature draw on the GPU
 * (backend/cuda/sample.cu, cuda_draw_rows) against the sampler itself
 * (sample/sampler.c): for every row, a sampler seeded s picks with
 * sampler_sample from the row; a second sampler seeded s takes its uniform
 * with sampler_draw_begin, the device draws with it, and sampler_draw_end
 * puts the PRNG back when the draw did not use it. The token and the PRNG
 * state after must be the same, bit for bit, for every row: vocabularies of
 * real models and odd sizes, temperatures from 1e-3 to 2, flat and peaked
 * logits, NaN / ±inf logits, rows with no finite logit, rows whose z
 * overflows (the sampler's greedy case), several draws a row. Rows that are
 * off must be left alone. The greedy pick (cuda_argmax_rows) against
 * backend_logits_argmax. And the top-k candidates (topk.cu, cuda_topk_rows)
 * against tests/unit/sample_topk_ref.h and the sampler's draw from them
 * against sampling the whole row (check_topk), and the nucleus candidates
 * with their total and rest (check_nucleus). Then the time of a draw
 * launch (1 and 64 rows of Llama-3's vocabulary; the running sum is one
 * dependent chain a row) and of the candidates'.
 *
 * Usage: kernel_sample [--quick]   (--quick: checks only)
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_decode.h"
#include "backend/cuda/cuda_ops.h"
#include "engine/backend.h"
#include "sample/sample.h"
#include "test.h"

#define KERNEL_RNG_SEED 0x5a3b1e77c0ffee11ull
#include "kernel_rng.h"
#define KERNEL_NAME "kernel_sample"
#include "kernel_util.h"
#include "kernel_time.h"
#include "sample_topk_ref.h"
#include "sample_nucleus_ref.h"

static struct cuda_ctx *g_ctx;

/* Row kinds: 0 flat (uniform × 3), 1 wide (uniform × 30), 2 peaked (one token
 * +25 over uniform), 3 with NaN / ±inf sprinkled, 4 all −inf / NaN, 5 two
 * +inf (FLT_MAX after cleaning: z overflows at small temperatures). */
static void fill_row(float *l, uint32_t n, int kind)
{
    const float amp = kind == 1 ? 30.0f : 3.0f;
    for (uint32_t i = 0; i < n; i++)
        l[i] = amp * rng_unit();
    if (kind == 2)
        l[rng_u64() % n] += 25.0f;
    if (kind == 3)
        for (uint32_t k = 0; k < 1 + n / 500; k++) {
            const uint32_t i = (uint32_t)(rng_u64() % n);
            l[i] = k % 3 == 0 ? NAN : k % 3 == 1 ? -INFINITY : (float)(rng_unit() * 5.0);
        }
    if (kind == 4)
        for (uint32_t i = 0; i < n; i++)
            l[i] = i % 2 ? -INFINITY : NAN;
    if (kind == 5) {
        l[rng_u64() % n] = INFINITY;
        l[rng_u64() % n] = INFINITY;
    }
}

/* One vocabulary size: rows × draws, each row its own kind, temperature and
 * seed; every row drawn `draws` times in a row (the PRNGs advance). */
static void check_vocab(uint32_t n, uint32_t rows, int draws, bool walk)
{
    static const float temps[] = {1.0f, 0.8f, 0.3f, 1.7f, 2.0f, 1e-3f, 0.05f};
    float *h = xmalloc((size_t)rows * n * sizeof(float));
    float *dl = cuda_alloc((size_t)rows * n * sizeof(float));
    struct cuda_draw_params *hp = xmalloc(rows * sizeof *hp);
    struct cuda_draw_params *dp = cuda_alloc(rows * sizeof *dp);
    int32_t *dout = cuda_alloc((size_t)rows * 2 * sizeof(int32_t)), *hout = xmalloc((size_t)rows * 2 * sizeof(int32_t));
    struct sampler *ref = xmalloc(rows * sizeof *ref), *dev = xmalloc(rows * sizeof *dev);
    struct sample_work w;
    char err[256];
    CHECK(sample_work_init(&w, n, err, sizeof err) == 0);
    for (uint32_t r = 0; r < rows; r++) {
        fill_row(h + (size_t)r * n, n, (int)(r % 6));
        struct sample_params p;
        sample_params_default(&p);
        p.temperature = temps[r % 7];
        p.seed = rng_u64();
        CHECK(sampler_init(&ref[r], n, &p, err, sizeof err) == 0);
        CHECK(sampler_init(&dev[r], n, &p, err, sizeof err) == 0);
        CHECK_MSG(sampler_plain_temperature(&dev[r]), "row %u: not a plain temperature sampler", r);
    }
    uint32_t mismatches = 0, greedy = 0, skipped_ok = 0;
    for (int d = 0; d < draws; d++) {
        uint64_t saved[64][4];
        for (uint32_t r = 0; r < rows; r++) {
            const bool on = r % 5 != 4; /* every fifth row off: left alone */
            hp[r] = (struct cuda_draw_params){dev[r].params.temperature, on ? 1u | (walk ? CUDA_DRAW_WALK : 0u) : 0u,
                                              on ? sampler_draw_begin(&dev[r], saved[r % 64]) : 0.0};
            hout[2 * r] = hout[2 * r + 1] = 0x7eadbeef;
        }
        cuda_upload(g_ctx, dl, h, (size_t)rows * n * sizeof(float));
        cuda_upload(g_ctx, dp, hp, rows * sizeof *hp);
        cuda_upload(g_ctx, dout, hout, (size_t)rows * 2 * sizeof(int32_t));
        cuda_draw_rows(g_ctx, dl, rows, n, dp, dout);
        cuda_download(g_ctx, hout, dout, (size_t)rows * 2 * sizeof(int32_t));
        for (uint32_t r = 0; r < rows; r++) {
            const float *row = h + (size_t)r * n;
            if (!hp[r].on) {
                /* off: out untouched, and the row itself too */
                float *back = xmalloc((size_t)n * sizeof(float));
                cuda_download(g_ctx, back, dl + (size_t)r * n, (size_t)n * sizeof(float));
                const bool same = hout[2 * r] == 0x7eadbeef && hout[2 * r + 1] == 0x7eadbeef &&
                                  memcmp(back, row, (size_t)n * sizeof(float)) == 0;
                CHECK_MSG(same, "vocab %u row %u: an off row was touched", n, r);
                skipped_ok += same;
                free(back);
                continue;
            }
            const int32_t want = sampler_sample(&ref[r], &w, row, NULL);
            const int32_t got = hout[2 * r];
            const bool used = hout[2 * r + 1] != 0;
            sampler_draw_end(&dev[r], saved[r % 64], used);
            greedy += !used;
            const bool same_rng = memcmp(ref[r].rng, dev[r].rng, sizeof ref[r].rng) == 0;
            if (got != want || !same_rng) {
                if (mismatches++ < 8)
                    printf("  vocab %u row %u (kind %u, temperature %g) draw %d: device %d (u %s), sampler %d%s\n", n,
                           r, r % 6, (double)dev[r].params.temperature, d, got, used ? "used" : "not used", want,
                           same_rng ? "" : ", PRNG states differ");
            }
        }
    }
    printf("draw   vocab %6u%s: %u rows x %d draws, %u greedy cases, %u off rows untouched, %u mismatches\n", n,
           walk ? " (walk)" : "", rows, draws, greedy, skipped_ok, mismatches);
    CHECK_MSG(mismatches == 0, "vocab %u: %u draws differ from sampler_sample", n, mismatches);
    for (uint32_t r = 0; r < rows; r++) {
        sampler_free(&ref[r]);
        sampler_free(&dev[r]);
    }
    sample_work_free(&w);
    free(ref);
    free(dev);
    free(h);
    free(hp);
    free(hout);
    cuda_free(dl);
    cuda_free(dp);
    cuda_free(dout);
}

/* walk: every draw also takes the one-by-one walk the kernel keeps for
 * draws near a boundary, which random inputs (almost) never reach */
static void test_draw(void)
{
    for (int walk = 0; walk < 2; walk++) {
        check_vocab(128256, 24, 3, walk); /* Llama 3 */
        check_vocab(151936, 12, 2, walk); /* Qwen 2/3 */
        check_vocab(49152, 24, 3, walk);  /* SmolLM2 */
        check_vocab(262144, 6, 2, walk);  /* Gemma 3 */
        check_vocab(8193, 36, 4, walk);   /* odd: a partial tile */
        check_vocab(1000, 36, 4, walk);
        check_vocab(17, 36, 8, walk);     /* below a lane's width */
        check_vocab(1025, 36, 4, walk);   /* segments of 2 and of 1 */
    }
}

/* ---- the greedy pick (sample.cu, cuda_argmax_rows) --------------------------
 * Rows of every kind (flat, wide, one peak, NaN / ±inf sprinkled, no finite
 * logit, two +inf) plus ties (integer logits) against engine/backend.h's
 * backend_logits_argmax, on vocabularies that take the 16-byte loads and
 * odd ones that do not. */
static void check_argmax(uint32_t n, uint32_t rows)
{
    float *h = xmalloc((size_t)rows * n * sizeof(float));
    float *dl = cuda_alloc((size_t)rows * n * sizeof(float));
    int32_t *dout = cuda_alloc(rows * sizeof(int32_t)), *hout = xmalloc(rows * sizeof(int32_t));
    for (uint32_t r = 0; r < rows; r++) {
        float *l = h + (size_t)r * n;
        fill_row(l, n, (int)(r % 7 < 6 ? r % 7 : 0));
        if (r % 7 == 6)
            for (uint32_t i = 0; i < n; i++)
                l[i] = (float)(int)(l[i]);
    }
    cuda_upload(g_ctx, dl, h, (size_t)rows * n * sizeof(float));
    cuda_argmax_rows(g_ctx, dl, rows, n, dout);
    cuda_download(g_ctx, hout, dout, rows * sizeof(int32_t));
    uint32_t bad = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const int32_t want = backend_logits_argmax(h + (size_t)r * n, n);
        if (hout[r] != want && bad++ < 6)
            printf("  argmax vocab %u row %u (kind %u): %d, expected %d\n", n, r, r % 7, hout[r], want);
    }
    printf("argmax vocab %6u: %u rows, %u mismatches\n", n, rows, bad);
    CHECK_MSG(bad == 0, "argmax vocab %u: %u rows differ", n, bad);
    free(h), free(hout);
    cuda_free(dl), cuda_free(dout);
}

static void test_argmax(void)
{
    check_argmax(128256, 28);
    check_argmax(151936, 14);
    check_argmax(1025, 28);
    check_argmax(17, 14);
    check_argmax(4, 14);
}

/* The buffers of a candidates check (top-k or nucleus) over `rows` rows of
 * n logits: host rows h and their device copy dl, per-row parameters, the
 * device's candidates / greedy / statistics and their host copies, room for
 * the reference's candidates; and the rows filled with every kind plus ties
 * (integer logits, r % 8 == 6) and signed zeros at the top (r % 8 == 7). */
struct cand_bufs {
    float *h, *dl, *dv, *hv, *rv;
    struct cuda_topk_params *hp, *dp;
    int32_t *di, *dg, *hi, *hg, *ri;
    struct cuda_topk_stats *ds, *hs;
};

static void cand_bufs_init(struct cand_bufs *c, uint32_t n, uint32_t rows)
{
    c->h = xmalloc((size_t)rows * n * sizeof(float));
    c->dl = cuda_alloc((size_t)rows * n * sizeof(float));
    c->hp = xmalloc(rows * sizeof *c->hp), c->dp = cuda_alloc(rows * sizeof *c->hp);
    c->di = cuda_alloc((size_t)rows * CUDA_TOPK_MAX * 4), c->dg = cuda_alloc((size_t)rows * 4);
    c->dv = cuda_alloc((size_t)rows * CUDA_TOPK_MAX * 4);
    c->ds = cuda_alloc(rows * sizeof *c->ds), c->hs = xmalloc(rows * sizeof *c->hs);
    c->hi = xmalloc((size_t)rows * CUDA_TOPK_MAX * 4), c->hg = xmalloc((size_t)rows * 4);
    c->hv = xmalloc((size_t)rows * CUDA_TOPK_MAX * 4);
    c->ri = xmalloc((size_t)CUDA_TOPK_MAX * 4), c->rv = xmalloc((size_t)CUDA_TOPK_MAX * 4);
    for (uint32_t r = 0; r < rows; r++) {
        float *l = c->h + (size_t)r * n;
        fill_row(l, n, (int)(r % 8 < 6 ? r % 8 : 0));
        if (r % 8 == 6) /* ties: integer logits */
            for (uint32_t i = 0; i < n; i++)
                l[i] = (float)(int)(l[i] * 2.0f);
        if (r % 8 == 7) /* signed zeros at the top */
            for (uint32_t i = 0; i < n; i += 2)
                l[i] = i % 4 ? -0.0f : 0.0f;
    }
}

static void cand_bufs_free(struct cand_bufs *c)
{
    free(c->h), free(c->hp), free(c->hi), free(c->hg), free(c->hv), free(c->ri), free(c->rv), free(c->hs);
    cuda_free(c->dl), cuda_free(c->dp), cuda_free(c->di), cuda_free(c->dg), cuda_free(c->dv), cuda_free(c->ds);
}

/* ---- top-k candidates (topk.cu) ----------------------------------------
 * Rows of every kind plus rows of many ties (integer logits) and of signed
 * zeros; k from 1 to CUDA_TOPK_MAX and vocab − 1; every fifth row off. The
 * device's candidates against topk_ref (ids equal, z equal as floats: a zero
 * comes back +0), its greedy token too, and the sampler's draw from them
 * (sampler_sample_candidates) against sampler_sample over the row: the same
 * token and PRNG state. */
static void check_topk(uint32_t n, uint32_t rows)
{
    static const float temps[] = {1.0f, 0.8f, 0.3f, 1.7f, 2.0f, 1e-3f, 0.05f};
    static const uint32_t ks[] = {1, 2, 5, 40, 50, 100, 1000, CUDA_TOPK_MAX, 0 /* n − 1, at most the bound */, 3, 64};
    struct cand_bufs c;
    cand_bufs_init(&c, n, rows);
    float *h = c.h, *dl = c.dl, *dv = c.dv, *hv = c.hv, *rv = c.rv;
    struct cuda_topk_params *hp = c.hp, *dp = c.dp;
    int32_t *di = c.di, *dg = c.dg, *hi = c.hi, *hg = c.hg, *ri = c.ri;
    struct sample_work w;
    char err[256];
    CHECK(sample_work_init(&w, n, err, sizeof err) == 0);
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t k = ks[r % 11] ? ks[r % 11] : n - 1;
        k = k < n ? k : n - 1;
        k = k < CUDA_TOPK_MAX ? k : CUDA_TOPK_MAX;
        hp[r] = (struct cuda_topk_params){temps[r % 7], r % 5 == 4 ? 0u : k, 0};
        hg[r] = 0x7eadbeef;
    }
    cuda_upload(g_ctx, dl, h, (size_t)rows * n * sizeof(float));
    cuda_upload(g_ctx, dp, hp, rows * sizeof *hp);
    cuda_upload(g_ctx, dg, hg, rows * 4);
    cuda_topk_rows(g_ctx, dl, rows, n, dp, di, dv, dg, NULL);
    cuda_download(g_ctx, hi, di, (size_t)rows * CUDA_TOPK_MAX * 4);
    cuda_download(g_ctx, hv, dv, (size_t)rows * CUDA_TOPK_MAX * 4);
    cuda_download(g_ctx, hg, dg, rows * 4);
    uint32_t bad = 0, bad_draw = 0, off_ok = 0, greedy_rows = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const float *row = h + (size_t)r * n;
        const uint32_t k = hp[r].k;
        if (k == 0) {
            float *back = xmalloc((size_t)n * sizeof(float));
            cuda_download(g_ctx, back, dl + (size_t)r * n, (size_t)n * sizeof(float));
            const bool same = hg[r] == 0x7eadbeef && memcmp(back, row, (size_t)n * sizeof(float)) == 0;
            CHECK_MSG(same, "top-k vocab %u row %u: an off row was touched", n, r);
            off_ok += same;
            free(back);
            continue;
        }
        const int32_t g = topk_ref(row, n, hp[r].temperature, k, ri, rv);
        bool same = g == hg[r];
        for (uint32_t j = 0; j < k && same; j++)
            same = ri[j] == hi[(size_t)r * CUDA_TOPK_MAX + j] && rv[j] == hv[(size_t)r * CUDA_TOPK_MAX + j];
        if (!same && bad++ < 6)
            printf("  top-k vocab %u row %u (kind %u, k %u, T %g): candidates or greedy differ (greedy %d vs %d)\n", n,
                   r, r % 8, k, (double)hp[r].temperature, hg[r], g);
        /* the draw from them, with top-p on every other row */
        struct sample_params p;
        sample_params_default(&p);
        p.temperature = hp[r].temperature;
        p.top_k = (int32_t)k;
        p.top_p = r % 2 ? 0.9f : 1.0f;
        p.seed = rng_u64();
        struct sampler a, b;
        CHECK(sampler_init(&a, n, &p, err, sizeof err) == 0 && sampler_init(&b, n, &p, err, sizeof err) == 0);
        const int32_t want = sampler_sample(&a, &w, row, NULL);
        const int32_t got = sampler_sample_candidates(&b, hi + (size_t)r * CUDA_TOPK_MAX, hv + (size_t)r * CUDA_TOPK_MAX,
                                                      k, hg[r]);
        greedy_rows += hv[(size_t)r * CUDA_TOPK_MAX] == INFINITY || hv[(size_t)r * CUDA_TOPK_MAX] == -INFINITY;
        if ((got != want || memcmp(a.rng, b.rng, sizeof a.rng) != 0) && bad_draw++ < 6)
            printf("  top-k vocab %u row %u: draw %d from the candidates, %d from the row\n", n, r, got, want);
        sampler_free(&a);
        sampler_free(&b);
    }
    printf("top-k  vocab %6u: %u rows, %u greedy cases, %u off rows untouched, %u candidate and %u draw mismatches\n",
           n, rows, greedy_rows, off_ok, bad, bad_draw);
    CHECK_MSG(bad == 0 && bad_draw == 0, "top-k vocab %u: %u rows' candidates, %u draws differ", n, bad, bad_draw);
    sample_work_free(&w);
    cand_bufs_free(&c);
}

/* ---- nucleus candidates (topk.cu with stats) ------------------------------
 * Rows of every kind, ties and signed zeros, k = min(CUDA_TOPK_MAX, vocab):
 * the device's candidates and greedy token against nucleus_ref, the row of
 * z it leaves equal to l / T, its rest equal to the reference's (the same exp_neg bits, an exact max), its total
 * within the bound sample.h states of the reference's (another order); then
 * the sampler's draw from them (sampler_sample_nucleus; when it cannot
 * decide, sampler_sample_z over the row of z the kernel leaves, which
 * cuda_be_draw_z brings down) against sampler_sample over the row: the same
 * token and PRNG state, for top-p, min-p and both. */
static void check_nucleus(uint32_t n, uint32_t rows)
{
    static const float temps[] = {1.0f, 0.8f, 0.3f, 1.7f, 0.1f, 1e-3f, 0.05f};
    const uint32_t k = n < CUDA_TOPK_MAX ? n : CUDA_TOPK_MAX;
    struct cand_bufs c;
    cand_bufs_init(&c, n, rows);
    float *h = c.h, *dl = c.dl, *dv = c.dv, *hv = c.hv, *rv = c.rv, *z = xmalloc((size_t)n * sizeof(float));
    struct cuda_topk_params *hp = c.hp, *dp = c.dp;
    int32_t *di = c.di, *dg = c.dg, *hi = c.hi, *hg = c.hg, *ri = c.ri;
    struct cuda_topk_stats *ds = c.ds, *hs = c.hs;
    struct sample_work w;
    char err[256];
    CHECK(sample_work_init(&w, n, err, sizeof err) == 0);
    for (uint32_t r = 0; r < rows; r++)
        hp[r] = (struct cuda_topk_params){temps[r % 7], k, 1};
    cuda_upload(g_ctx, dl, h, (size_t)rows * n * sizeof(float));
    cuda_upload(g_ctx, dp, hp, rows * sizeof *hp);
    cuda_topk_rows(g_ctx, dl, rows, n, dp, di, dv, dg, ds);
    cuda_download(g_ctx, hi, di, (size_t)rows * CUDA_TOPK_MAX * 4);
    cuda_download(g_ctx, hv, dv, (size_t)rows * CUDA_TOPK_MAX * 4);
    cuda_download(g_ctx, hg, dg, rows * 4);
    cuda_download(g_ctx, hs, ds, rows * sizeof *hs);
    uint32_t bad = 0, bad_stats = 0, bad_draw = 0, decided = 0, from_row = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const float *row = h + (size_t)r * n;
        int32_t *ci = hi + (size_t)r * CUDA_TOPK_MAX;
        float *cv = hv + (size_t)r * CUDA_TOPK_MAX;
        double total;
        float rest;
        const int32_t g = nucleus_ref(row, n, hp[r].temperature, ri, rv, &total, &rest);
        bool same = g == hg[r];
        for (uint32_t j = 0; j < k && same; j++)
            same = ri[j] == ci[j] && rv[j] == cv[j];
        if (!same && bad++ < 6)
            printf("  nucleus vocab %u row %u: candidates or greedy differ\n", n, r);
        const bool finite = rv[0] != INFINITY && rv[0] != -INFINITY;
        const double bound = ldexp(total, -51) * ((double)n + 4096);
        if (finite && (hs[r].rest != rest || !(fabs(hs[r].total - total) <= bound)) && bad_stats++ < 6)
            printf("  nucleus vocab %u row %u: total %.17g vs %.17g (bound %.3g), rest %.9g vs %.9g\n", n, r,
                   hs[r].total, total, bound, (double)hs[r].rest, (double)rest);
        struct sample_params p;
        sample_params_default(&p);
        p.temperature = hp[r].temperature;
        if (r % 3 != 1)
            p.top_p = r % 3 ? 0.95f : 0.6f;
        if (r % 3 != 0)
            p.min_p = r % 3 == 1 ? 0.1f : 0.02f;
        p.seed = rng_u64();
        struct sampler a, b;
        CHECK(sampler_init(&a, n, &p, err, sizeof err) == 0 && sampler_init(&b, n, &p, err, sizeof err) == 0);
        CHECK(sampler_nucleus_candidates(&b));
        const int32_t want = sampler_sample(&a, &w, row, NULL);
        cuda_download(g_ctx, z, dl + (size_t)r * n, (size_t)n * 4); /* the row's z, left by the kernel */
        uint32_t zbad = 0;
        for (uint32_t i = 0; i < n; i++)
            zbad += z[i] != topk_ref_clean(row[i]) / hp[r].temperature; /* (−0 == +0) */
        if (zbad && bad_stats++ < 6)
            printf("  nucleus vocab %u row %u: %u z differ from l / T\n", n, r, zbad);
        int32_t got = sampler_sample_nucleus(&b, ci, cv, k, hs[r].total, hs[r].rest, hg[r]);
        if (got == SAMPLER_NEED_ROW) {
            got = sampler_sample_z(&b, &w, z, hg[r]);
            from_row++;
        } else {
            decided++;
        }
        if ((got != want || memcmp(a.rng, b.rng, sizeof a.rng) != 0) && bad_draw++ < 6)
            printf("  nucleus vocab %u row %u: draw %d, %d from the row\n", n, r, got, want);
        sampler_free(&a);
        sampler_free(&b);
    }
    printf("nucleus vocab %6u: %u rows, %u decided by the candidates, %u by the row; %u candidate, %u total/rest, "
           "%u draw mismatches\n", n, rows, decided, from_row, bad, bad_stats, bad_draw);
    CHECK_MSG(bad == 0 && bad_stats == 0 && bad_draw == 0, "nucleus vocab %u: %u candidates, %u stats, %u draws differ",
              n, bad, bad_stats, bad_draw);
    CHECK_MSG(decided > 0, "nucleus vocab %u: no draw decided by the candidates", n);
    sample_work_free(&w);
    free(z);
    cand_bufs_free(&c);
}

static void test_topk(void)
{
    check_topk(128256, 44);
    check_topk(151936, 22);
    check_topk(262144, 11);
    check_topk(8193, 44);
    check_topk(1025, 44);
    check_topk(17, 22);
    check_nucleus(128256, 48);
    check_nucleus(151936, 24);
    check_nucleus(1025, 48);
    check_nucleus(700, 24);
}

/* ---- timing ------------------------------------------------------------- */

/* A launch over `rows` flat rows of n logits (they overwrite their rows:
 * each run gets a fresh copy first): {median, min} µs of 21 runs after 3. */
typedef void (*rows_launch_fn)(float *logits, uint32_t rows, uint32_t n, const void *params, void *out);

static void time_rows(rows_launch_fn launch, uint32_t n, uint32_t rows, const void *dparams, void *dout, double us[2])
{
    /* the same rows whatever ran before (the checks draw from the generator too): where a row's k-th key
     * ties with others the top-k kernel takes its slower tile-by-tile pass, so the data moves the figure */
    g_rng = KERNEL_RNG_SEED ^ ((uint64_t)n << 20) ^ rows;
    float *h = xmalloc((size_t)rows * n * sizeof(float));
    for (uint32_t r = 0; r < rows; r++)
        fill_row(h + (size_t)r * n, n, 0);
    float *dl = cuda_alloc((size_t)rows * n * sizeof(float)), *dsrc = cuda_alloc((size_t)rows * n * sizeof(float));
    cuda_upload(g_ctx, dsrc, h, (size_t)rows * n * sizeof(float));
    struct cuda_timer *tm = cuda_timer_new();
    double ms[21];
    for (int r = -3; r < 21; r++) {
        cuda_copy_d2d(g_ctx, dl, dsrc, (size_t)rows * n * sizeof(float));
        cuda_timer_start(g_ctx, tm);
        launch(dl, rows, n, dparams, dout);
        cuda_timer_stop(g_ctx, tm);
        if (r >= 0)
            ms[r] = cuda_timer_ms(tm);
    }
    qsort(ms, 21, sizeof *ms, kernel_time_cmp);
    us[0] = ms[10] * 1e3, us[1] = ms[0] * 1e3;
    cuda_timer_free(tm);
    free(h);
    cuda_free(dl);
    cuda_free(dsrc);
}

static void launch_argmax(float *l, uint32_t rows, uint32_t n, const void *params, void *out)
{
    (void)params;
    cuda_argmax_rows(g_ctx, l, rows, n, out);
}

static void bench_argmax(uint32_t n, uint32_t rows)
{
    int32_t *dout = cuda_alloc(rows * sizeof(int32_t));
    double us[2];
    time_rows(launch_argmax, n, rows, NULL, dout, us);
    printf("| %u | %u | %.1f | %.1f |\n", n, rows, us[0], us[1]);
    cuda_free(dout);
}

static void launch_draw(float *l, uint32_t rows, uint32_t n, const void *params, void *out)
{
    cuda_draw_rows(g_ctx, l, rows, n, params, out);
}

static void bench_draw(uint32_t n, uint32_t rows)
{
    struct cuda_draw_params *hp = xmalloc(rows * sizeof *hp), *dp = cuda_alloc(rows * sizeof *dp);
    for (uint32_t r = 0; r < rows; r++)
        hp[r] = (struct cuda_draw_params){1.0f, 1, (double)(r + 0.5) / rows};
    cuda_upload(g_ctx, dp, hp, rows * sizeof *hp);
    int32_t *dout = cuda_alloc((size_t)rows * 2 * sizeof(int32_t));
    double us[2];
    time_rows(launch_draw, n, rows, dp, dout, us);
    printf("| %u | %u | %.1f | %.1f |\n", n, rows, us[0], us[1]);
    free(hp);
    cuda_free(dp);
    cuda_free(dout);
}

struct topk_out {
    int32_t *idx, *greedy;
    float *val;
    struct cuda_topk_stats *stats;
};

static void launch_topk(float *l, uint32_t rows, uint32_t n, const void *params, void *out)
{
    const struct topk_out *o = out;
    cuda_topk_rows(g_ctx, l, rows, n, params, o->idx, o->val, o->greedy, o->stats);
}

static void bench_topk(uint32_t n, uint32_t rows, uint32_t k, bool stats)
{
    struct cuda_topk_params *hp = xmalloc(rows * sizeof *hp), *dp = cuda_alloc(rows * sizeof *hp);
    for (uint32_t r = 0; r < rows; r++)
        hp[r] = (struct cuda_topk_params){0.8f, k, stats};
    cuda_upload(g_ctx, dp, hp, rows * sizeof *hp);
    struct topk_out o = {cuda_alloc((size_t)rows * CUDA_TOPK_MAX * 4), cuda_alloc((size_t)rows * 4),
                         cuda_alloc((size_t)rows * CUDA_TOPK_MAX * 4),
                         cuda_alloc(rows * sizeof(struct cuda_topk_stats))};
    double us[2];
    time_rows(launch_topk, n, rows, dp, &o, us);
    printf("| %u | %u | %u%s | %.1f | %.1f |\n", n, rows, k, stats ? " (nucleus)" : "", us[0], us[1]);
    free(hp);
    cuda_free(dp), cuda_free(o.idx), cuda_free(o.greedy), cuda_free(o.val), cuda_free(o.stats);
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    g_ctx = kernel_ctx_open();
    RUN(test_argmax);
    RUN(test_draw);
    RUN(test_topk);
    if (!quick) {
        printf("\n## Greedy pick on the device (cuda_argmax_rows, one block a row)\n\n"
               "| vocab | rows | median us | min us |\n|---|---|---|---|\n");
        bench_argmax(128256, 1);
        bench_argmax(128256, 64);
        bench_argmax(151936, 64);
        printf("\n## Temperature draw on the device (cuda_draw_rows, one block a row; u spread over [0, 1))\n\n"
               "| vocab | rows | median us | min us |\n|---|---|---|---|\n");
        bench_draw(128256, 1);
        bench_draw(128256, 8);
        bench_draw(128256, 64);
        bench_draw(151936, 64);
        bench_draw(49152, 64);
        printf("\n## Top-k candidates on the device (cuda_topk_rows, one block a row)\n\n"
               "| vocab | rows | k | median us | min us |\n|---|---|---|---|---|\n");
        bench_topk(128256, 1, 40, false);
        bench_topk(128256, 64, 40, false);
        bench_topk(128256, 1, 1000, false);
        bench_topk(151936, 64, 50, false);
        bench_topk(128256, 1, CUDA_TOPK_MAX, true);
        bench_topk(128256, 64, CUDA_TOPK_MAX, true);
    }
    cuda_ctx_free(g_ctx);
    return test_summary();
}
