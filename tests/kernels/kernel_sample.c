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
 * off must be left alone. Then the time of a draw launch (1 and 64 rows of
 * Llama-3's vocabulary; the running sum is one dependent chain a row).
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
#include "sample/sample.h"
#include "test.h"

#define KERNEL_RNG_SEED 0x5a3b1e77c0ffee11ull
#include "kernel_rng.h"
#define KERNEL_NAME "kernel_sample"
#include "kernel_util.h"
#include "kernel_time.h"

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

/* ---- timing ------------------------------------------------------------- */

static void bench_draw(uint32_t n, uint32_t rows)
{
    float *h = xmalloc((size_t)rows * n * sizeof(float));
    for (uint32_t r = 0; r < rows; r++)
        fill_row(h + (size_t)r * n, n, 0);
    float *dl = cuda_alloc((size_t)rows * n * sizeof(float)), *dsrc = cuda_alloc((size_t)rows * n * sizeof(float));
    cuda_upload(g_ctx, dsrc, h, (size_t)rows * n * sizeof(float));
    struct cuda_draw_params *hp = xmalloc(rows * sizeof *hp), *dp = cuda_alloc(rows * sizeof *dp);
    for (uint32_t r = 0; r < rows; r++)
        hp[r] = (struct cuda_draw_params){1.0f, 1, (double)(r + 0.5) / rows};
    cuda_upload(g_ctx, dp, hp, rows * sizeof *hp);
    int32_t *dout = cuda_alloc((size_t)rows * 2 * sizeof(int32_t));
    struct cuda_timer *tm = cuda_timer_new();
    double ms[21];
    for (int r = -3; r < 21; r++) {
        cuda_copy_d2d(g_ctx, dl, dsrc, (size_t)rows * n * sizeof(float)); /* the draw overwrites its rows */
        cuda_timer_start(g_ctx, tm);
        cuda_draw_rows(g_ctx, dl, rows, n, dp, dout);
        cuda_timer_stop(g_ctx, tm);
        if (r >= 0)
            ms[r] = cuda_timer_ms(tm);
    }
    qsort(ms, 21, sizeof *ms, kernel_time_cmp);
    printf("| %u | %u | %.1f | %.1f |\n", n, rows, ms[10] * 1e3, ms[0] * 1e3);
    cuda_timer_free(tm);
    free(h);
    free(hp);
    cuda_free(dl);
    cuda_free(dsrc);
    cuda_free(dp);
    cuda_free(dout);
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    g_ctx = kernel_ctx_open();
    RUN(test_draw);
    if (!quick) {
        printf("\n## Temperature draw on the device (cuda_draw_rows, one block a row; u spread over [0, 1))\n\n"
               "| vocab | rows | median us | min us |\n|---|---|---|---|\n");
        bench_draw(128256, 1);
        bench_draw(128256, 8);
        bench_draw(128256, 64);
        bench_draw(151936, 64);
        bench_draw(49152, 64);
    }
    cuda_ctx_free(g_ctx);
    return test_summary();
}
