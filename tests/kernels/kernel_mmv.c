/* tests/kernels/kernel_mmv.c — the tensor-core batched decode GEMV (mmv.cu)
 * checked against a double-precision reference and for batch invariance, then
 * timed on the Llama-3-8B decode shapes beside the CUDA-core GEMV.
 *
 * Checks (exit status 1 if any fails), fresh random inputs each time (BF16
 * weights with finite exponents, x uniform in [-1, 1), outputs NaN-poisoned):
 * - accuracy: max|Δ| / max|ref| ≤ 2e-5 against Σ w·x in double (x is carried
 *   as bf16 hi + lo, ~2^-17 of each element, then f32 sums), every output
 *   written and finite; rows not a multiple of 16 or 64, n of one chunk, of
 *   4096 and 14336, batches 1..64 (every launch shape: 1, 4, 5, 8, 9, 16, 17,
 *   32, 33, 64), K slices that do not divide the chunks evenly;
 * - batch invariance: each token of a batch of T gives the same bits as the
 *   token alone (T = 1) and as in a batch of 64 where it sits elsewhere;
 * - joined weights: k | v and gate | up (the 8B shapes) as one launch give
 *   each row the bits of its member's own launch (cuda_mmv_rows_join);
 * - bf16-valued x (cuda_ctx_set_act_bf16, the backend's bf16 activations): the
 *   wgmma kernel's one A row a token gives the bits of its split rows, for
 *   the launcher's shape and every launch shape taking T (mmv_wg.cu);
 * - A rows written by x's producer (cuda_rmsnorm_in_split, cuda_fwd_glu_rows_
 *   split, then cuda_mmv_next): the producer's output and the GEMV's are the
 *   bits of the producer alone then cuda_mmv, in both activation modes, with
 *   the scratch holding another x's rows before (so the rows are the
 *   producer's);
 * - the decode step's k|v GEMV on the side stream beside q's (narrowed): the
 *   bits of the two in turn;
 * - q|k|v as one launch: each member alone with the joined shape's K slices
 *   (cuda_mmv_sliced) gives the bits of its rows in the joined launch;
 * - gate|up with the activation in its epilogue (cuda_mmv_glu): down's GEMV
 *   on the A rows it leaves gives the bits of gate|up, the activation and
 *   down apart, silu and gelu-tanh, both activation modes; a shape it cannot
 *   take (K slices) is declined.
 *
 * Timing: CUDA events around graph replays of launches rotating over enough
 * weight copies to make the working set ≥ 4× the L2, after a warm-up; median
 * of 15 replays; bytes counted = the weight matrix; % of the 4.3 TB/s floor.
 * Last, the 8B gate|up with its activation: apart (the GEMV, then the
 * activation writing down's A rows) against fused (cuda_mmv_glu).
 * Both kernels are checked: mmv.cu (mma.sync) and mmv_wg.cu (wgmma; n % 64).
 * Usage: kernel_mmv [--quick]   (--quick: checks only)
 *        kernel_mmv --one ROWS N T VARIANT   (5 launches of the wgmma kernel, for ncu)
 *        kernel_mmv --sweep ROWS N T   (µs of every wgmma launch shape and K slices 1-8 for one
 *                                       weight shape and batch, f32 and bf16-valued x)
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_fwd.h"
#include "backend/cuda/cuda_ops.h"
#include "core/log.h"
#include "quant/quant.h"
#include "test.h"

#define KERNEL_RNG_SEED 0x5DEECE66Dull
#include "kernel_rng.h"
#include "kernel_time.h"

#define BW_REF_GBS 4300.0
#define TOL 2e-5

static struct cuda_ctx *g_ctx;
static bool g_wg; /* which kernel the checks run: mmv_wg.cu (wgmma) or mmv.cu (mma.sync) */

static void mmv_variant(const void *dw, uint64_t rows, uint64_t n, const float *dx, uint32_t T, float *dy, int v)
{
    if (g_wg)
        cuda_mmv_wg_variant(g_ctx, dw, rows, n, dx, T, dy, 1.0f, v);
    else
        cuda_mmv_variant(g_ctx, DTYPE_BF16, dw, rows, n, dx, T, dy, 1.0f, v);
}

/* y (T, rows) on the device for W (rows, n) and x (T, n) already there. */
static void run_mmv(const void *dw, uint64_t rows, uint64_t n, const float *dx, uint32_t T, float *dy, float *y)
{
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    mmv_variant(dw, rows, n, dx, T, dy, -1);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y, dy, sizeof(float) * rows * T);
}

/* Every launch shape of the kernel under test (g_wg) that takes T tokens —
 * per × its max_t: 2 when the wgmma kernel takes one A row a token — run on
 * dx into dy (poisoned first) and brought into buf, against y bit for bit:
 * how many differ; *n_run how many ran. */
static int variants_differ(const void *dw, uint64_t rows, uint64_t n, const float *dx, uint32_t T, float *dy,
                           const float *y, float *buf, uint32_t per, int *n_run)
{
    uint32_t max_t[64];
    const int nv = g_wg ? cuda_mmv_wg_variants(max_t) : cuda_mmv_variants(max_t);
    int diff = 0, ran = 0;
    for (int v = 0; v < nv; v++) {
        if (T > per * max_t[v])
            continue;
        cuda_fill_nan_f32(g_ctx, dy, rows * T);
        mmv_variant(dw, rows, n, dx, T, dy, v);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, buf, dy, sizeof(float) * rows * T);
        diff += memcmp(buf, y, 4 * rows * T) != 0;
        ran++;
    }
    *n_run = ran;
    return diff;
}

static void check_mmv(uint64_t rows, uint64_t n, uint32_t T)
{
    const uint64_t rb = 2 * n;
    uint8_t *w = malloc(rows * rb);
    float *x = malloc(sizeof(float) * n * CUDA_MMV_MAX_BATCH), *y = malloc(sizeof(float) * rows * CUDA_MMV_MAX_BATCH);
    float *y1 = malloc(sizeof(float) * rows), *y64 = malloc(sizeof(float) * rows * CUDA_MMV_MAX_BATCH);
    float *row = malloc(sizeof(float) * n), *x64 = malloc(sizeof(float) * n * CUDA_MMV_MAX_BATCH);
    MEMRA_ASSERT(w && x && y && y1 && y64 && row && x64);
    fill_random(DTYPE_BF16, w, rows * rb);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = rng_unit();
    cuda_mmv_reserve(g_ctx, rows, n);
    void *dw = cuda_alloc(rows * rb);
    float *dx = cuda_alloc(sizeof(float) * n * CUDA_MMV_MAX_BATCH), *dy = cuda_alloc(sizeof(float) * rows * CUDA_MMV_MAX_BATCH);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * T);
    run_mmv(dw, rows, n, dx, T, dy, y);

    double maxref = 0, maxdiff = 0;
    int bad = 0;
    for (uint64_t r = 0; r < rows; r++) {
        MEMRA_ASSERT(quant_dequantize_row(DTYPE_BF16, w + r * rb, row, n) == 0);
        for (uint32_t t = 0; t < T; t++) {
            double s = 0;
            for (uint64_t i = 0; i < n; i++)
                s += (double)row[i] * (double)x[t * n + i];
            maxref = fmax(maxref, fabs(s));
            const double got = y[t * rows + r];
            if (!isfinite(got))
                bad++;
            else
                maxdiff = fmax(maxdiff, fabs(got - s));
        }
    }
    const double rel = maxref > 0 ? maxdiff / maxref : maxdiff;

    /* invariance: token t alone, and placed at 63 − t of a batch of 64 filled with other vectors */
    int diff_alone = 0, diff_64 = 0;
    for (uint32_t t = 0; t < T; t++) {
        run_mmv(dw, rows, n, dx + (uint64_t)t * n, 1, dy, y1);
        diff_alone += memcmp(y1, y + (uint64_t)t * rows, 4 * rows) != 0;
    }
    for (uint64_t i = 0; i < n * CUDA_MMV_MAX_BATCH; i++)
        x64[i] = rng_unit();
    for (uint32_t t = 0; t < T; t++)
        memcpy(x64 + (uint64_t)(CUDA_MMV_MAX_BATCH - 1 - t) * n, x + (uint64_t)t * n, 4 * n);
    cuda_upload(g_ctx, dx, x64, sizeof(float) * n * CUDA_MMV_MAX_BATCH);
    run_mmv(dw, rows, n, dx, CUDA_MMV_MAX_BATCH, dy, y64);
    for (uint32_t t = 0; t < T; t++)
        diff_64 += memcmp(y64 + (uint64_t)(CUDA_MMV_MAX_BATCH - 1 - t) * rows, y + (uint64_t)t * rows, 4 * rows) != 0;

    /* every launch shape taking T: the same bits */
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * T);
    int n_var;
    const int diff_var = variants_differ(dw, rows, n, dx, T, dy, y, y64, 1, &n_var);

    char label[96];
    snprintf(label, sizeof label, "%s bf16 %" PRIu64 "x%" PRIu64 " batch %u", g_wg ? "wg" : "sync", rows, n, T);
    CHECK_MSG(diff_var == 0, "%s: %d launch shapes give other bits", label, diff_var);
    CHECK_MSG(bad == 0 && rel <= TOL, "%s: %d outputs not finite, max|d|/max|ref| = %.3g (tol %.0e)", label, bad, rel,
              TOL);
    CHECK_MSG(diff_alone == 0 && diff_64 == 0, "%s: %d tokens differ from alone, %d from batch 64", label, diff_alone,
              diff_64);
    printf("check %-32s rel err %.2e, bits vs alone %s, vs batch 64 %s, launch shapes %s%s\n", label, rel,
           diff_alone ? "DIFFER" : "same", diff_64 ? "DIFFER" : "same", diff_var ? "DIFFER" : "same",
           bad || rel > TOL || diff_alone || diff_64 || diff_var ? "  FAIL" : "");
    cuda_free(dw), cuda_free(dx), cuda_free(dy);
    free(w), free(x), free(y), free(y1), free(y64), free(row), free(x64);
}

/* bf16-valued x: mmv_wg.cu with cuda_ctx_set_act_bf16 (one A row a token) =
 * the split rows' bits (their low rows are zeros), launcher's shape and every
 * variant that takes T under it (twice its split max_t). */
static void check_x_bf16(uint64_t rows, uint64_t n, uint32_t T)
{
    const uint64_t rb = 2 * n;
    uint8_t *w = malloc(rows * rb);
    float *x = malloc(sizeof(float) * n * T), *y = malloc(sizeof(float) * rows * T), *y2 = malloc(sizeof(float) * rows * T);
    MEMRA_ASSERT(w && x && y && y2);
    fill_random(DTYPE_BF16, w, rows * rb);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = quant_bf16_to_f32(quant_f32_to_bf16(rng_unit()));
    cuda_mmv_reserve(g_ctx, rows, n);
    void *dw = cuda_alloc(rows * rb);
    float *dx = cuda_alloc(sizeof(float) * n * T), *dy = cuda_alloc(sizeof(float) * rows * T);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * T);
    run_mmv(dw, rows, n, dx, T, dy, y); /* split rows */
    cuda_ctx_set_act_bf16(g_ctx, true);
    run_mmv(dw, rows, n, dx, T, dy, y2);
    int nvar;
    const int diff = (memcmp(y, y2, 4 * rows * T) != 0) + variants_differ(dw, rows, n, dx, T, dy, y, y2, 2, &nvar);
    cuda_ctx_set_act_bf16(g_ctx, false);
    char label[96];
    snprintf(label, sizeof label, "wg bf16-x %" PRIu64 "x%" PRIu64 " batch %u", rows, n, T);
    CHECK_MSG(diff == 0, "%s: %d of %d launches give other bits than the split rows", label, diff, nvar + 1);
    printf("check %-32s one row a token vs split rows (launcher + %d shapes): %s\n", label, nvar,
           diff ? "DIFFER  FAIL" : "same");
    cuda_free(dw), cuda_free(dx), cuda_free(dy);
    free(w), free(x), free(y), free(y2);
}

/* Two weights stored one after the other (ra then rb rows: k | v) through
 * cuda_mmv as one launch give the bits of their own launches (the second with
 * cuda_mmv_next, reusing the first's split of x), where cuda_mmv_rows_join
 * says so (on the H200 it does for the 8B k|v) — the decode step's k|v
 * (cuda_decode_step.c). */
static void check_join(uint64_t ra, uint64_t rb, uint64_t n, uint32_t T)
{
    const uint64_t rows = ra + rb, bytes = rows * n * 2;
    uint8_t *w = malloc(bytes);
    float *x = malloc(sizeof(float) * n * T), *y = malloc(sizeof(float) * rows * T);
    float *ya = malloc(sizeof(float) * ra * T), *yb = malloc(sizeof(float) * rb * T);
    MEMRA_ASSERT(w && x && y && ya && yb);
    fill_random(DTYPE_BF16, w, bytes);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = rng_unit();
    cuda_mmv_set_kernel(g_ctx, g_wg ? CUDA_MMV_WG : CUDA_MMV_SYNC);
    cuda_mmv_reserve(g_ctx, rows, n);
    cuda_mmv_reserve(g_ctx, ra, n);
    cuda_mmv_reserve(g_ctx, rb, n);
    const bool join = cuda_mmv_rows_join(g_ctx, DTYPE_BF16, ra, rb, n);
    uint8_t *dw = cuda_alloc(bytes);
    float *dx = cuda_alloc(sizeof(float) * n * T), *dy = cuda_alloc(sizeof(float) * rows * T);
    float *dya = cuda_alloc(sizeof(float) * ra * T), *dyb = cuda_alloc(sizeof(float) * rb * T);
    cuda_upload(g_ctx, dw, w, bytes);
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * T);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_fill_nan_f32(g_ctx, dya, ra * T);
    cuda_fill_nan_f32(g_ctx, dyb, rb * T);
    cuda_mmv(g_ctx, DTYPE_BF16, dw, ra, n, dx, T, dya, 1.0f);
    cuda_mmv_next(g_ctx, DTYPE_BF16, dw + ra * n * 2, rb, n, dx, T, dyb, 1.0f);
    cuda_mmv(g_ctx, DTYPE_BF16, dw, rows, n, dx, T, dy, 1.0f);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y, dy, sizeof(float) * rows * T);
    cuda_download(g_ctx, ya, dya, sizeof(float) * ra * T);
    cuda_download(g_ctx, yb, dyb, sizeof(float) * rb * T);
    int diff = 0;
    for (uint32_t t = 0; t < T; t++)
        diff += memcmp(y + t * rows, ya + t * ra, 4 * ra) != 0 || memcmp(y + t * rows + ra, yb + t * rb, 4 * rb) != 0;
    char label[96];
    snprintf(label, sizeof label, "%s join %" PRIu64 "|%" PRIu64 "x%" PRIu64 " batch %u", g_wg ? "wg" : "sync", ra, rb,
             n, T);
    /* a shape the kernel gives other K slices joined (mmv.cu's k|v on the H200, or another SM count): the
     * decode step keeps two launches, so there is nothing to check — reported as skipped, not counted */
    if (join) {
        CHECK_MSG(diff == 0, "%s: %d tokens differ from the two launches", label, diff);
        printf("check %-32s bits vs two launches %s%s\n", label, diff ? "DIFFER" : "same", diff ? "  FAIL" : "");
    } else {
        printf("skip  %-32s not joinable here (other K slices)\n", label);
    }
    cuda_mmv_set_kernel(g_ctx, CUDA_MMV_WG);
    cuda_free(dw), cuda_free(dx), cuda_free(dy), cuda_free(dya), cuda_free(dyb);
    free(w), free(x), free(y), free(ya), free(yb);
}

/* q|k|v as one launch (the decode step's cuda_layer.qkv_join): each member
 * alone with the joined shape's K slices (cuda_mmv_sliced, slices =
 * cuda_mmv_join_slices) has the bits of its rows in the joined launch, for f32
 * and bf16-valued x (one A row a token) and any batch. wgmma kernel only. */
static void check_join_sliced(uint64_t rq, uint64_t rk, uint64_t n, uint32_t T, bool bf16x)
{
    const uint64_t rm[3] = {rq, rk, rk}, rows = rq + 2 * rk, bytes = rows * n * 2;
    uint8_t *w = malloc(bytes);
    float *x = malloc(sizeof(float) * n * T), *y = malloc(sizeof(float) * rows * T);
    float *ym = malloc(sizeof(float) * rq * T);
    MEMRA_ASSERT(w && x && y && ym);
    fill_random(DTYPE_BF16, w, bytes);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = bf16x ? quant_bf16_to_f32(quant_f32_to_bf16(4.0f * rng_unit())) : rng_unit();
    cuda_mmv_set_kernel(g_ctx, CUDA_MMV_WG);
    cuda_ctx_set_act_bf16(g_ctx, bf16x);
    cuda_mmv_reserve(g_ctx, rows, n);
    for (int i = 0; i < 3; i++)
        cuda_mmv_reserve(g_ctx, rm[i], n);
    const uint32_t S = cuda_mmv_join_slices(g_ctx, DTYPE_BF16, rows, n);
    CHECK_MSG(S >= 1 && S <= 8, "join slices of %" PRIu64 "x%" PRIu64 ": %u", rows, n, S);
    uint8_t *dw = cuda_alloc(bytes);
    float *dx = cuda_alloc(sizeof(float) * n * T), *dy = cuda_alloc(sizeof(float) * rows * T);
    float *dm = cuda_alloc(sizeof(float) * rq * T);
    cuda_upload(g_ctx, dw, w, bytes);
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * T);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_mmv_sliced(g_ctx, DTYPE_BF16, dw, rows, n, dx, T, dy, 0.5f, false, S);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y, dy, sizeof(float) * rows * T);
    int diff = 0;
    uint64_t r0 = 0;
    for (int i = 0; i < 3; i++) {
        cuda_fill_nan_f32(g_ctx, dm, rq * T);
        cuda_mmv_sliced(g_ctx, DTYPE_BF16, dw + r0 * n * 2, rm[i], n, dx, T, dm, 0.5f, i > 0, S);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, ym, dm, sizeof(float) * rm[i] * T);
        for (uint32_t t = 0; t < T; t++)
            diff += memcmp(y + t * rows + r0, ym + t * rm[i], 4 * rm[i]) != 0;
        r0 += rm[i];
    }
    char label[96];
    snprintf(label, sizeof label, "wg q|k|v %" PRIu64 "|%" PRIu64 "|%" PRIu64 "x%" PRIu64 " S %u batch %u%s", rq, rk,
             rk, n, S, T, bf16x ? " bf16 x" : "");
    CHECK_MSG(diff == 0, "%s: %d (member, token) rows differ from the joined launch", label, diff);
    printf("check %-44s members alone vs joined %s%s\n", label, diff ? "DIFFER" : "same", diff ? "  FAIL" : "");
    cuda_ctx_set_act_bf16(g_ctx, false);
    cuda_free(dw), cuda_free(dx), cuda_free(dy), cuda_free(dm);
    free(w), free(x), free(y), free(ym);
}

/* Fresh inputs of the producer checks below: BF16 weights (wbytes), x
 * uniform in [-4, 4) (nx), RMSNorm weights in [-0.5, 1.5) (n). */
static void rand_inputs(uint8_t *w, uint64_t wbytes, float *x, uint64_t nx, float *g, uint64_t n)
{
    fill_random(DTYPE_BF16, w, wbytes);
    for (uint64_t i = 0; i < nx; i++)
        x[i] = 4.0f * rng_unit();
    for (uint64_t i = 0; i < n; i++)
        g[i] = 0.5f + rng_unit();
}

/* The wgmma GEMV's A rows written by the kernel making x (the decode step's
 * input RMSNorm and joined-GLU): out and y bit-identical to the producer
 * alone followed by cuda_mmv (which splits out itself). glu: x = the GLU of
 * gu (T, 2n), else the RMSNorm of a random (T, n) with random weights. */
static void check_producer_split(uint64_t rows, uint64_t n, uint32_t T, bool act_bf16, bool glu)
{
    const uint64_t rb = 2 * n, in_n = glu ? 2 * n : n;
    uint8_t *w = malloc(rows * rb);
    float *in = malloc(sizeof(float) * in_n * T), *g = malloc(sizeof(float) * n);
    float *o1 = malloc(sizeof(float) * n * T), *o2 = malloc(sizeof(float) * n * T);
    float *y1 = malloc(sizeof(float) * rows * T), *y2 = malloc(sizeof(float) * rows * T);
    MEMRA_ASSERT(w && in && g && o1 && o2 && y1 && y2);
    rand_inputs(w, rows * rb, in, in_n * T, g, n);
    cuda_ctx_set_act_bf16(g_ctx, act_bf16);
    cuda_mmv_reserve(g_ctx, rows, n);
    void *dw = cuda_alloc(rows * rb);
    float *din = cuda_alloc(sizeof(float) * in_n * T), *dg = cuda_alloc(sizeof(float) * n);
    float *do1 = cuda_alloc(sizeof(float) * n * T), *do2 = cuda_alloc(sizeof(float) * n * T);
    float *dz = cuda_alloc(sizeof(float) * n * T), *dy = cuda_alloc(sizeof(float) * rows * T);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, din, in, sizeof(float) * in_n * T);
    cuda_upload(g_ctx, dg, g, sizeof(float) * n);
    cuda_upload(g_ctx, dz, in, sizeof(float) * n * T); /* another x, for the scratch */
    if (glu)
        cuda_fwd_glu_rows(g_ctx, do1, din, T, (uint32_t)n, false);
    else
        cuda_rmsnorm_in(g_ctx, din, NULL, dg, do1, T, (uint32_t)n, 1e-5f);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_mmv(g_ctx, DTYPE_BF16, dw, rows, n, do1, T, dy, 1.0f);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, o1, do1, sizeof(float) * n * T);
    cuda_download(g_ctx, y1, dy, sizeof(float) * rows * T);
    cuda_mmv(g_ctx, DTYPE_BF16, dw, rows, n, dz, T, dy, 1.0f); /* the scratch now holds dz's rows */
    const bool took = glu ? cuda_fwd_glu_rows_split(g_ctx, do2, din, T, (uint32_t)n, false)
                          : cuda_rmsnorm_in_split(g_ctx, din, NULL, dg, do2, T, (uint32_t)n, 1e-5f);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_mmv_next(g_ctx, DTYPE_BF16, dw, rows, n, do2, T, dy, 1.0f);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, o2, do2, sizeof(float) * n * T);
    cuda_download(g_ctx, y2, dy, sizeof(float) * rows * T);
    cuda_ctx_set_act_bf16(g_ctx, false);
    const bool same = took && memcmp(o1, o2, 4 * n * T) == 0 && memcmp(y1, y2, 4 * rows * T) == 0;
    char label[96];
    snprintf(label, sizeof label, "wg %s-split %s %" PRIu64 "x%" PRIu64 " batch %u", glu ? "glu" : "norm",
             act_bf16 ? "bf16" : "f32", rows, n, T);
    CHECK_MSG(same, "%s: %s", label,
              took ? "other bits than the producer then cuda_mmv" : "the producer wrote no rows");
    printf("check %-40s producer's A rows vs a split launch: %s\n", label, same ? "same" : "DIFFER  FAIL");
    cuda_free(dw), cuda_free(din), cuda_free(dg), cuda_free(do1), cuda_free(do2), cuda_free(dz), cuda_free(dy);
    free(w), free(in), free(g), free(o1), free(o2), free(y1), free(y2);
}

/* The gate|up GEMV with the activation in its epilogue (cuda_mmv_glu: W =
 * [gate; up], 2F rows) then down's GEMV on the A rows it left (cuda_mmv_next),
 * against cuda_mmv into (T, 2F), cuda_fwd_glu_rows_split and cuda_mmv_next:
 * down's outputs bit-identical (every A element meets random weights), with
 * the scratch holding another x's rows before. want: whether cuda_mmv_glu
 * must take the shape (else it must decline and launch nothing). */
static void check_glu_fused(uint64_t F, uint64_t n, uint64_t down_rows, uint32_t T, bool act_bf16, bool gelu,
                            bool want)
{
    const uint64_t gu_rows = 2 * F;
    uint8_t *wgu = malloc(gu_rows * n * 2), *wdn = malloc(down_rows * F * 2);
    float *x = malloc(sizeof(float) * n * T), *g = malloc(sizeof(float) * n);
    float *y1 = malloc(sizeof(float) * down_rows * T), *y2 = malloc(sizeof(float) * down_rows * T);
    MEMRA_ASSERT(wgu && wdn && x && g && y1 && y2);
    rand_inputs(wgu, gu_rows * n * 2, x, n * T, g, n);
    fill_random(DTYPE_BF16, wdn, down_rows * F * 2);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] *= 0.25f; /* sums of a few units: the activation's curved part */
    cuda_ctx_set_act_bf16(g_ctx, act_bf16);
    cuda_mmv_reserve(g_ctx, gu_rows, n);
    cuda_mmv_reserve(g_ctx, down_rows, F);
    void *dgu = cuda_alloc(gu_rows * n * 2), *ddn = cuda_alloc(down_rows * F * 2);
    float *dx = cuda_alloc(sizeof(float) * n * T), *dz = cuda_alloc(sizeof(float) * n * T);
    float *dgo = cuda_alloc(sizeof(float) * gu_rows * T), *dh = cuda_alloc(sizeof(float) * F * T);
    float *dy = cuda_alloc(sizeof(float) * down_rows * T);
    cuda_upload(g_ctx, dgu, wgu, gu_rows * n * 2);
    cuda_upload(g_ctx, ddn, wdn, down_rows * F * 2);
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * T);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = -x[i];
    cuda_upload(g_ctx, dz, x, sizeof(float) * n * T); /* another x, for the scratch */
    /* the two launches and the activation apart */
    cuda_mmv(g_ctx, DTYPE_BF16, dgu, gu_rows, n, dx, T, dgo, 1.0f);
    const bool split = cuda_fwd_glu_rows_split(g_ctx, dh, dgo, T, (uint32_t)F, gelu);
    cuda_fill_nan_f32(g_ctx, dy, down_rows * T);
    cuda_mmv_next(g_ctx, DTYPE_BF16, ddn, down_rows, F, dh, T, dy, 1.0f);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y1, dy, sizeof(float) * down_rows * T);
    /* fused */
    cuda_mmv(g_ctx, DTYPE_BF16, dgu, gu_rows, n, dz, T, dgo, 1.0f); /* the scratch now holds dz's rows */
    cuda_fill_nan_f32(g_ctx, dh, F * T);
    const bool took = cuda_mmv_glu(g_ctx, DTYPE_BF16, dgu, gu_rows, n, dx, T, dh, 1.0f, gelu, false, 0);
    cuda_fill_nan_f32(g_ctx, dy, down_rows * T);
    if (took)
        cuda_mmv_next(g_ctx, DTYPE_BF16, ddn, down_rows, F, dh, T, dy, 1.0f);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y2, dy, sizeof(float) * down_rows * T);
    cuda_ctx_set_act_bf16(g_ctx, false);
    const bool same = took && split && memcmp(y1, y2, 4 * down_rows * T) == 0;
    char label[96];
    snprintf(label, sizeof label, "wg glu-fused %s%s %" PRIu64 "x%" PRIu64 " down %" PRIu64 " batch %u",
             act_bf16 ? "bf16" : "f32", gelu ? " gelu" : "", gu_rows, n, down_rows, T);
    if (want) {
        CHECK_MSG(same, "%s: %s", label,
                  !took ? "cuda_mmv_glu declined the shape"
                        : !split ? "the activation wrote no A rows apart" : "down's outputs differ from apart");
        printf("check %-48s fused vs apart: %s\n", label, same ? "same" : "DIFFER  FAIL");
    } else {
        CHECK_MSG(!took, "%s: cuda_mmv_glu took a shape it must decline", label);
        printf("check %-48s declined: %s\n", label, took ? "no  FAIL" : "yes");
    }
    cuda_free(dgu), cuda_free(ddn), cuda_free(dx), cuda_free(dz), cuda_free(dgo), cuda_free(dh), cuda_free(dy);
    free(wgu), free(wdn), free(x), free(g), free(y1), free(y2);
}

/* The decode step's q and k|v GEMVs (4096 and 2048 rows of the same x) with
 * k|v on the side stream beside q (cuda_ctx_side_begin, q's launch narrowed)
 * against the two one after the other: bit-identical outputs. */
static void check_side(uint32_t T, bool act_bf16)
{
    const uint64_t n = 4096, rq = 4096, rkv = 2048;
    uint8_t *w = malloc((rq + rkv) * n * 2);
    float *x = malloc(sizeof(float) * n * T), *g = malloc(sizeof(float) * n);
    float *y1 = malloc(sizeof(float) * (rq + rkv) * T), *y2 = malloc(sizeof(float) * (rq + rkv) * T);
    MEMRA_ASSERT(w && x && g && y1 && y2);
    rand_inputs(w, (rq + rkv) * n * 2, x, n * T, g, n);
    cuda_ctx_set_act_bf16(g_ctx, act_bf16);
    cuda_mmv_reserve(g_ctx, rq, n);
    cuda_mmv_reserve(g_ctx, rkv, n);
    uint8_t *dw = cuda_alloc((rq + rkv) * n * 2);
    float *dx = cuda_alloc(sizeof(float) * n * T), *dg = cuda_alloc(sizeof(float) * n);
    float *dxn = cuda_alloc(sizeof(float) * n * T), *dy = cuda_alloc(sizeof(float) * (rq + rkv) * T);
    cuda_upload(g_ctx, dw, w, (rq + rkv) * n * 2);
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * T);
    cuda_upload(g_ctx, dg, g, sizeof(float) * n);
    float *yq = dy, *ykv = dy + rq * T;
    for (int side = 0; side < 2; side++) {
        cuda_fill_nan_f32(g_ctx, dy, (rq + rkv) * T);
        const bool took = cuda_rmsnorm_in_split(g_ctx, dx, NULL, dg, dxn, T, (uint32_t)n, 1e-5f);
        MEMRA_ASSERT(took);
        if (side) {
            cuda_ctx_side_begin(g_ctx);
            cuda_mmv_next(g_ctx, DTYPE_BF16, dw + rq * n * 2, rkv, n, dxn, T, ykv, 1.0f);
            cuda_ctx_side_end(g_ctx);
            cuda_mmv_set_narrow(g_ctx, true);
            cuda_mmv_next(g_ctx, DTYPE_BF16, dw, rq, n, dxn, T, yq, 1.0f);
            cuda_mmv_set_narrow(g_ctx, false);
            cuda_ctx_side_join(g_ctx);
        } else {
            cuda_mmv_next(g_ctx, DTYPE_BF16, dw, rq, n, dxn, T, yq, 1.0f);
            cuda_mmv_next(g_ctx, DTYPE_BF16, dw + rq * n * 2, rkv, n, dxn, T, ykv, 1.0f);
        }
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, side ? y2 : y1, dy, sizeof(float) * (rq + rkv) * T);
    }
    cuda_ctx_set_act_bf16(g_ctx, false);
    bool finite = true;
    for (uint64_t i = 0; i < (rq + rkv) * T; i++)
        finite = finite && isfinite(y1[i]);
    const bool same = finite && memcmp(y1, y2, sizeof(float) * (rq + rkv) * T) == 0;
    char label[96];
    snprintf(label, sizeof label, "wg side q|kv %s batch %u", act_bf16 ? "bf16" : "f32", T);
    CHECK_MSG(same, "%s: %s", label, finite ? "other bits beside than in turn" : "outputs not written");
    printf("check %-40s k|v on the side stream beside q vs in turn: %s\n", label, same ? "same" : "DIFFER  FAIL");
    cuda_free(dw), cuda_free(dx), cuda_free(dg), cuda_free(dxn), cuda_free(dy);
    free(w), free(x), free(g), free(y1), free(y2);
}

/* ---- timing ---------------------------------------------------------------- */

/* Weights for timing: enough copies of one random (rows, n) BF16 matrix to
 * make the working set ≥ 4× the L2, and x (64, n). */
struct timing {
    uint64_t rows, n;
    int nc;
    void **w;
    float *dx, *dy;
    float *dh; /* (64, rows / 2): the activation of a gate|up launch (kinds 4, 5) */
};

static void timing_init(struct timing *tb, uint64_t rows, uint64_t n)
{
    const uint64_t bytes = rows * n * 2;
    tb->rows = rows, tb->n = n;
    tb->nc = (int)ceil(4.0 * (double)cuda_ctx_l2_bytes(g_ctx) / (double)bytes);
    tb->nc = tb->nc < 2 ? 2 : tb->nc;
    tb->w = calloc((size_t)tb->nc, sizeof *tb->w);
    uint8_t *h = malloc(bytes);
    float *x = malloc(4 * n * CUDA_MMV_MAX_BATCH);
    MEMRA_ASSERT(tb->w && h && x);
    fill_random(DTYPE_BF16, h, bytes);
    for (uint64_t i = 0; i < n * CUDA_MMV_MAX_BATCH; i++)
        x[i] = rng_unit();
    for (int i = 0; i < tb->nc; i++) {
        tb->w[i] = cuda_alloc(bytes);
        cuda_upload(g_ctx, tb->w[i], h, bytes);
    }
    tb->dx = cuda_alloc(4 * n * CUDA_MMV_MAX_BATCH);
    tb->dy = cuda_alloc(4 * rows * CUDA_MMV_MAX_BATCH);
    tb->dh = cuda_alloc(4 * (rows / 2 + 1) * CUDA_MMV_MAX_BATCH);
    cuda_upload(g_ctx, tb->dx, x, 4 * n * CUDA_MMV_MAX_BATCH);
    cuda_mmv_reserve(g_ctx, rows, n);
    free(h), free(x);
}

static void timing_free(struct timing *tb)
{
    for (int i = 0; i < tb->nc; i++)
        cuda_free(tb->w[i]);
    cuda_free(tb->dx), cuda_free(tb->dy), cuda_free(tb->dh);
    free(tb->w);
}

struct timed {
    const struct timing *tb;
    int kind; /* 0 mma.sync mmv, 1 wgmma mmv, 2 CUDA-core GEMV (T ≤ 8), 3 wgmma with `variant` K slices,
               * 4 gate|up then the activation as the next GEMV's A rows, 5 the same fused (cuda_mmv_glu) */
    int variant;
    uint32_t T;
};

static void timed_launch(void *arg, int i)
{
    const struct timed *c = arg;
    const struct timing *tb = c->tb;
    if (c->kind == 0)
        cuda_mmv_variant(g_ctx, DTYPE_BF16, tb->w[i % tb->nc], tb->rows, tb->n, tb->dx, c->T, tb->dy, 1.0f,
                         c->variant);
    else if (c->kind == 1)
        cuda_mmv_wg_variant(g_ctx, tb->w[i % tb->nc], tb->rows, tb->n, tb->dx, c->T, tb->dy, 1.0f, c->variant);
    else if (c->kind == 3)
        cuda_mmv_sliced(g_ctx, DTYPE_BF16, tb->w[i % tb->nc], tb->rows, tb->n, tb->dx, c->T, tb->dy, 1.0f, false,
                        (uint32_t)c->variant);
    else if (c->kind == 4) {
        cuda_mmv(g_ctx, DTYPE_BF16, tb->w[i % tb->nc], tb->rows, tb->n, tb->dx, c->T, tb->dy, 1.0f);
        cuda_fwd_glu_rows_split(g_ctx, tb->dh, tb->dy, c->T, (uint32_t)(tb->rows / 2), false);
    } else if (c->kind == 5)
        MEMRA_ASSERT(cuda_mmv_glu(g_ctx, DTYPE_BF16, tb->w[i % tb->nc], tb->rows, tb->n, tb->dx, c->T, tb->dh, 1.0f,
                                  false, false, 0));
    else
        cuda_gemv(g_ctx, DTYPE_BF16, tb->w[i % tb->nc], tb->rows, tb->n, tb->dx, c->T, tb->dy, 1.0f);
}

/* Median µs per launch (kernel_time.h); variant −1 = the launcher's choice. */
static double time_gemv(const struct timing *tb, int kind, int variant, uint32_t T)
{
    struct timed c = {tb, kind, variant, T};
    const int L = tb->nc > 24 ? tb->nc : 24;
    return kernel_time_graph(g_ctx, timed_launch, &c, L, L);
}

/* The wgmma kernel's launcher with bf16-valued x (one A row a token). */
static double time_wg_x_bf16(const struct timing *tb, uint32_t T)
{
    cuda_ctx_set_act_bf16(g_ctx, true);
    const double us = time_gemv(tb, 1, -1, T);
    cuda_ctx_set_act_bf16(g_ctx, false);
    return us;
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    char err[256];
    g_ctx = cuda_ctx_init(0, err, sizeof err);
    if (!g_ctx)
        die("%s", err);
    printf("device: %s, %d SMs\n", cuda_ctx_device_name(g_ctx), cuda_ctx_sm_count(g_ctx));
    if (argc == 6 && strcmp(argv[1], "--one") == 0) { /* --one ROWS N T VARIANT: 5 launches, for a profiler */
        struct timing tb;
        timing_init(&tb, strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
        struct timed c = {&tb, 1, atoi(argv[5]), (uint32_t)atoi(argv[4])};
        for (int i = 0; i < 5; i++)
            timed_launch(&c, i);
        cuda_ctx_sync(g_ctx);
        timing_free(&tb);
        cuda_ctx_free(g_ctx);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "--sweep") == 0) { /* --sweep ROWS N T: every launch shape and K slices */
        struct timing tb;
        const uint64_t rows = strtoull(argv[2], NULL, 10), n = strtoull(argv[3], NULL, 10);
        const uint32_t T = (uint32_t)atoi(argv[4]);
        timing_init(&tb, rows, n);
        uint32_t max_t[64];
        const int nv = cuda_mmv_wg_variants(max_t);
        const double fl = (double)rows * n * 2 / BW_REF_GBS / 1e3; /* µs at the floor */
        printf("%" PRIu64 "x%" PRIu64 " batch %u, floor %.2f us; launcher's S %u\n", rows, n, T, fl,
               cuda_mmv_wg_slices(rows, n, cuda_ctx_sm_count(g_ctx)));
        for (int b = 0; b < 2; b++) {
            cuda_ctx_set_act_bf16(g_ctx, b == 1);
            const uint32_t ta = b ? (T + 1) / 2 : T; /* A rows' worth of tokens */
            for (int v = -1; v < nv; v++)
                if (v < 0 || ta <= max_t[v]) {
                    const double us = time_gemv(&tb, 1, v, T);
                    printf("%s variant %2d: %7.2f us (%.1f %% of the floor)\n", b ? "bf16 x" : "f32 x ", v, us,
                           100 * fl / us);
                }
            for (uint32_t S = 1; S <= 8; S *= 2) {
                const double us = time_gemv(&tb, 3, (int)S, T);
                printf("%s slices %u (launcher's variant): %7.2f us (%.1f %%)\n", b ? "bf16 x" : "f32 x ", S, us,
                       100 * fl / us);
            }
        }
        cuda_ctx_set_act_bf16(g_ctx, false);
        timing_free(&tb);
        cuda_ctx_free(g_ctx);
        return 0;
    }
    test_current = "mmv";
    for (int k = 0; k < 2; k++) {
        g_wg = k == 1;
        const uint32_t Ts[] = {1, 4, 5, 8, 9, 16, 17, 32, 33, 64};
        for (size_t j = 0; j < sizeof Ts / sizeof Ts[0]; j++) {
            test_cases++;
            check_mmv(333, 4096, Ts[j]);
        }
        test_cases += 5;
        check_mmv(1000, 14336, 3);
        check_mmv(333, 4160, 9);  /* 65 chunks of 64 (130 of 32) in 16 slices: the last slices short or empty */
        check_mmv(70, 64, 64);
        check_mmv(4096, 1024, 17);
        check_mmv(5, 8192, 2);
        test_cases++;
        check_mmv(4096, 4096, 64); /* q/o at 64 tokens: 144-row tiles, the last block partial (S = 4) */
        test_cases++;
        check_join(1024, 1024, 4096, 3); /* the 8B shape's k|v */
        check_join(1024, 1024, 4096, 17);
        check_join(1024, 1024, 4096, 64);
        check_join(14336, 14336, 4096, 5); /* gate|up */
        check_join(14336, 14336, 4096, 64);
        if (!g_wg) {
            test_cases++;
            check_mmv(70, 32, 64); /* mmv.cu alone takes n % 64 != 0 */
        } else {
            test_cases++;
            const uint32_t Tb[] = {1, 2, 17, 33, 64};
            for (size_t j = 0; j < sizeof Tb / sizeof Tb[0]; j++) {
                check_x_bf16(333, 4096, Tb[j]);
                check_x_bf16(4096, 4096, Tb[j]);
            }
            check_x_bf16(1024, 14336, 64);
            check_x_bf16(2048, 4096, 64);
            test_cases++;
            const uint32_t Tp[] = {2, 17, 64};
            for (size_t j = 0; j < sizeof Tp / sizeof Tp[0]; j++)
                for (int a = 0; a < 2; a++) {
                    check_producer_split(333, 4096, Tp[j], a == 1, false);
                    check_producer_split(1000, 14336, Tp[j], a == 1, true);
                }
            test_cases++;
            const uint32_t Tj[] = {1, 2, 17, 33, 64};
            for (size_t j = 0; j < sizeof Tj / sizeof Tj[0]; j++) {
                check_join_sliced(4096, 1024, 4096, Tj[j], false); /* the 8B shape's q|k|v */
                check_join_sliced(4096, 1024, 4096, Tj[j], true);
            }
            check_join_sliced(333, 96, 4096, 9, false); /* partial tiles */
            check_join_sliced(2048, 256, 2048, 64, true);
            test_cases++;
            const uint32_t Tg[] = {1, 2, 17, 32, 33, 64};
            for (size_t j = 0; j < sizeof Tg / sizeof Tg[0]; j++)
                for (int a = 0; a < 2; a++)
                    check_glu_fused(14336, 4096, 4096, Tg[j], a == 1, false, true); /* the 8B shape */
            check_glu_fused(14336, 4096, 4096, 64, true, true, true); /* gelu-tanh (Gemma) */
            check_glu_fused(14336, 4096, 4096, 9, false, true, true);
            check_glu_fused(4288, 4096, 1000, 64, true, false, true); /* 67 blocks of 64 columns (S = 1) */
            check_glu_fused(4288, 4096, 1000, 5, false, false, true);
            check_glu_fused(2176, 4096, 1000, 17, true, false, false); /* S = 2: declined */
            check_glu_fused(1536, 576, 576, 8, true, false, false);   /* SmolLM2-135M: K slices, declined */
            test_cases++;
            check_side(2, false);
            check_side(32, false);
            check_side(17, true);
            check_side(64, true);
        }
        fflush(stdout);
    }
    if (test_failures || quick) {
        cuda_ctx_free(g_ctx);
        return test_summary();
    }
    static const struct { const char *name; uint64_t rows, n; } shapes[] = {
        {"q/o", 4096, 4096}, {"k/v", 1024, 4096}, {"gate/up", 14336, 4096}, {"down", 4096, 14336},
        {"lm_head", 128256, 4096}, {"k|v", 2048, 4096}, {"q|k|v", 6144, 4096}, {"gate|up", 28672, 4096},
    };
    const bool sweep = getenv("MEMRA_MMV_SWEEP") != NULL;
    uint32_t max_t[64], max_t_wg[64];
    const int nv = cuda_mmv_variants(max_t), nv_wg = cuda_mmv_wg_variants(max_t_wg);
    printf("\n## batched decode GEMV, BF16, µs per launch (GB/s, %% of %.0f GB/s): wgmma (mmv_wg.cu), the same "
           "with bf16-valued x (one A row a token), mma.sync (mmv.cu), CUDA-core GEMV\n\n",
           BW_REF_GBS);
    printf("| shape | T | wg µs | wg GB/s | %% floor | wg bf16-x µs | %% floor | sync µs | sync/wg | gemv µs | gemv/wg |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        struct timing tb;
        timing_init(&tb, shapes[s].rows, shapes[s].n);
        const uint32_t tt[] = {1, 2, 8, 16, 32, 64};
        for (size_t k = 0; k < sizeof tt / sizeof tt[0]; k++) {
            const uint32_t T = tt[k];
            const double uw = time_gemv(&tb, 1, -1, T), us = time_gemv(&tb, 0, -1, T);
            const double ug = T <= 8 ? time_gemv(&tb, 2, -1, T) : 0;
            const double ub = time_wg_x_bf16(&tb, T);
            const double gbs = (double)shapes[s].rows * shapes[s].n * 2 / uw / 1e3;
            const double gbb = (double)shapes[s].rows * shapes[s].n * 2 / ub / 1e3;
            printf("| %s %" PRIu64 "x%" PRIu64 " | %u | %.2f | %.0f | %.1f | %.2f | %.1f | %.2f | %.2f | ",
                   shapes[s].name, shapes[s].rows, shapes[s].n, T, uw, gbs, 100 * gbs / BW_REF_GBS, ub,
                   100 * gbb / BW_REF_GBS, us, us / uw);
            if (ug > 0)
                printf("%.2f | %.2f |\n", ug, ug / uw);
            else
                printf("— | — |\n");
            if (sweep) { /* every launch shape taking T */
                for (int v = 0; v < nv_wg; v++)
                    if (T <= max_t_wg[v]) {
                        const uint32_t S = cuda_mmv_wg_slices(shapes[s].rows, shapes[s].n, cuda_ctx_sm_count(g_ctx));
                        printf("|   wg variant %d (S %u, %d clusters at once) | %u | %.2f | | | | | | | | |\n", v, S,
                               cuda_mmv_wg_max_clusters(g_ctx, v, S), T, time_gemv(&tb, 1, v, T));
                    }
                for (int v = 0; v < nv; v++)
                    if (T <= max_t[v])
                        printf("|   sync variant %d | %u | | | | | | %.2f | | | |\n", v, T, time_gemv(&tb, 0, v, T));
            }
            fflush(stdout);
        }
        timing_free(&tb);
    }
    /* the decode step's gate|up with its activation: apart (the GEMV, then the activation writing down's A rows)
     * against fused (cuda_mmv_glu); both start from x's split rows */
    printf("\n## gate|up 28672x4096 with the activation, µs per launch pair / fused launch (%% of the weight's "
           "floor)\n\n| activations | T | apart µs | %% floor | fused µs | %% floor | apart/fused |\n"
           "|---|---|---|---|---|---|---|\n");
    {
        struct timing tb;
        timing_init(&tb, 28672, 4096);
        cuda_mmv_reserve(g_ctx, 4096, 14336); /* down's: the activation's A rows */
        const double fl = 28672.0 * 4096 * 2 / BW_REF_GBS / 1e3;
        const uint32_t tt[] = {2, 8, 16, 32, 64};
        for (int a = 0; a < 2; a++) {
            cuda_ctx_set_act_bf16(g_ctx, a == 1);
            for (size_t k = 0; k < sizeof tt / sizeof tt[0]; k++) {
                const double ua = time_gemv(&tb, 4, -1, tt[k]), uf = time_gemv(&tb, 5, -1, tt[k]);
                printf("| %s | %u | %.2f | %.1f | %.2f | %.1f | %.2f |\n", a ? "bf16" : "f32", tt[k], ua, 100 * fl / ua,
                       uf, 100 * fl / uf, ua / uf);
            }
        }
        cuda_ctx_set_act_bf16(g_ctx, false);
        timing_free(&tb);
    }
    cuda_ctx_free(g_ctx);
    return test_summary();
}
