/* tests/kernels/kernel_gemm.c — the prefill GEMMs (gemm.cu, cuBLASLt) checked
 * against the CPU reference, then timed on the Llama-3-8B shapes.
 *
 * Checks (exit status 1 if any fails), both modes, every weight type the GEMM
 * takes (BF16, F16, F8_E4M3 with a tensor scale, F32, Q8_0, Q4_0, Q4_1, Q4_K,
 * Q5_K, Q6_K, IQ4_XS, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K), fresh random inputs each time (weights: random valid
 * blocks as in kernel_gemv.c; x uniform in [-1, 1)), output NaN-poisoned first,
 * against quant_dequantize_row + a double-precision dot. Metric max|Δ| /
 * max|ref| over the output, every output finite. Shapes: 256×4096 at T = 64,
 * 300 × an odd length (not a multiple of 256 / 4096 where the format allows)
 * at T = 17, 96×1024 at T = 130. Tolerances (from the rounding each mode
 * makes, with margin ×3–5 over the expected max):
 *   FAST  bf16 x (2^-9 relative a value), bf16 dequantized weight: 5e-3;
 *         f16 x (F16 weights, 2^-12): 1e-3; TF32 (F32 weights, 2^-11 both): 3e-3
 *   EXACT x hi+lo (2^-17), weight hi+lo for GGUF: 2e-5; f32: 1e-5
 *   XBF16 (x bf16-valued, the backend's bf16 activations: x is rounded here
 *         first and the reference takes the rounded x): as EXACT
 * A weight kept dequantized (cuda_gemm_keep, every FP8 / GGUF case): the GEMM
 * reading the copy gives the dequantizing call's bits, with another weight
 * passed as w and in the scratch (so the copy is what is read).
 * Where cuda_gemm_accum_takes, the same GEMM adding into a random y (CUDA_GEMM_ACCUM) gives fl(y + the product)
 * bit for bit (the RMSNorm's residual add of the plain GEMM's output); where cuda_gemm_y_bf16_takes, the GEMM writing
 * a bf16 y (CUDA_GEMM_Y_BF16) gives the f32 y rounded, each element within one bf16 step (check_y16).
 * Batch invariance: the same 40 tokens computed alone, as rows 23..62 of a
 * larger buffer (x and y at an offset, as a span inside a batch) and inside
 * one GEMM over the buffer's 80 rows give bit-identical outputs, for BF16,
 * Q4_K and F32 in every mode.
 * MEMRA_GEMM_PROMOTE (gemm_q.cu, cuda_gemm_promote) in the exact and xbf16
 * modes: every GGUF type at shapes it takes and at shapes it leaves to the
 * cuBLASLt path, against the same reference and tolerance; its kept packed
 * copy; Q8_0's and Q4_K's batch invariance; the producers' claimed parts.
 * The timing adds the weights' kept copies (the backend's default) and the
 * promoted GEMM beside the two- and three-product ones.
 *
 * Timing (CUDA events, warm-up then the median of 9): the whole call as the
 * backend makes it (x conversion + dequantization + GEMM) and its parts, on
 * the 8B shapes at T = 512 and 4096, in TFLOP/s (2·rows·n·T / time) and % of
 * 790 TFLOP/s; the crossover of the decode GEMV (⌈T/8⌉ launches of 8 tokens)
 * against the GEMM at small T, which sets the backend's span threshold.
 *
 * Usage: kernel_gemm [--quick | --promoted]   (--quick: checks only; --promoted: the checks, then the promoted
 * GEMM's timing only)
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

#define KERNEL_RNG_SEED 0xD1B54A32D192ED03ull
#include "kernel_rng.h"
#include "kernel_ref.h"
#define KERNEL_NAME "kernel_gemm"
#include "kernel_util.h"
#include "kernel_time.h"

#define PEAK_TFLOPS 790.0

static struct cuda_ctx *g_ctx;

static const enum dtype types[] = {DTYPE_BF16, DTYPE_F16,  DTYPE_F8_E4M3, DTYPE_F32,    DTYPE_Q8_0, DTYPE_Q4_0,
                                   DTYPE_Q4_1, DTYPE_Q4_K, DTYPE_Q5_K,    DTYPE_Q6_K,   DTYPE_IQ4_XS, DTYPE_Q5_0,
                                   DTYPE_Q5_1, DTYPE_IQ4_NL, DTYPE_Q2_K,  DTYPE_Q3_K};
#define NTYPES (sizeof types / sizeof types[0])

static double tolerance(enum cuda_gemm_mode mode, enum dtype t)
{
    if (mode != CUDA_GEMM_FAST)
        return t == DTYPE_F32 ? 1e-5 : 2e-5;
    return t == DTYPE_F16 ? 1e-3 : t == DTYPE_F32 ? 3e-3 : 5e-3;
}

static const char *mode_name(enum cuda_gemm_mode m)
{
    return m == CUDA_GEMM_EXACT ? "exact" : m == CUDA_GEMM_XBF16 ? "xbf16" : "fast";
}

/* x uniform in [-1, 1), rounded to bf16 for XBF16 (what that mode is given) */
static float rand_x(enum cuda_gemm_mode mode)
{
    const float v = rng_unit();
    return mode == CUDA_GEMM_XBF16 ? quant_bf16_to_f32(quant_f32_to_bf16(v)) : v;
}

/* ---- correctness ----------------------------------------------------------- */

static double g_worst[5][NTYPES]; /* per mode (3, 4: exact, xbf16 promoted) and type, for the table */
static int g_accum_checked;        /* check_gemm's cases that added into y (cuda_gemm_accum_takes) */
static int g_y16_checked;          /* check_gemm's cases that wrote a bf16 y (cuda_gemm_y_bf16_takes) */
static uint64_t g_y16_moved;       /* their elements one bf16 step from the f32 y's rounding */

/* The GEMM writing y as bf16 (CUDA_GEMM_Y_BF16) into dy (poisoned with bf16 NaNs first) against y, the same
 * GEMM's f32 output, rounded to nearest even: each element that value, or — where cuBLASLt's plan for a bf16 D
 * runs another kernel whose f32 sum differs by an ulp at a rounding tie's edge — one bf16 step from it (counted:
 * g_y16_moved; the backend's GLU reads either as a bf16 activation, within kernel_forward's GPU-vs-CPU bound). */
static void check_y16(struct cuda_gemm *g, enum dtype t, const void *dw, uint64_t rows, uint64_t n, const float *dx,
                      uint32_t T, float *dy, const float *y, float scale)
{
    const enum cuda_gemm_mode mode = cuda_gemm_mode_of(g);
    uint16_t *y16 = malloc(2 * rows * T);
    MEMRA_ASSERT(y16);
    memset(y16, 0xff, 2 * rows * T);
    cuda_upload(g_ctx, dy, y16, 2 * rows * T);
    cuda_gemm_run(g, t, dw, rows, n, dx, T, dy, scale, CUDA_GEMM_Y_BF16);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y16, dy, 2 * rows * T);
    uint64_t moved = 0, bad = 0;
    for (uint64_t i = 0; i < rows * T; i++) {
        const uint16_t want = quant_f32_to_bf16(y[i]);
        if (y16[i] == want)
            continue;
        const int d = (int)(y16[i] & 0x7fff) - (int)(want & 0x7fff);
        if ((y16[i] ^ want) & 0x8000 || d > 1 || d < -1 || (y16[i] & 0x7f80) == 0x7f80)
            bad++;
        else
            moved++;
    }
    g_y16_checked++;
    g_y16_moved += moved;
    CHECK_MSG(bad == 0, "%s %s %" PRIu64 "x%" PRIu64 " T=%u: the bf16 y is more than one step from the f32 y's "
              "rounding at %" PRIu64 " elements", mode_name(mode), dtype_name(t), rows, n, T, bad);
    printf("check %-5s %-7s %5" PRIu64 "x%-5" PRIu64 " T=%-4u bf16 y: %" PRIu64 " of %" PRIu64 " one step from the f32 "
           "y rounded%s\n", mode_name(mode), dtype_name(t), rows, n, T, moved, rows * T, bad ? "  FAIL" : "");
    free(y16);
}

static void check_gemm(struct cuda_gemm *g, size_t ti, uint64_t rows, uint64_t n, uint32_t T)
{
    const enum dtype t = types[ti];
    const enum cuda_gemm_mode mode = cuda_gemm_mode_of(g);
    const uint64_t rb = row_bytes_of(t, n);
    uint8_t *w = malloc(rows * rb);
    float *x = malloc(4 * n * T), *y = malloc(4 * rows * T);
    MEMRA_ASSERT(w && x && y);
    fill_random(t, w, rows * rb);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = rand_x(mode);
    const float scale = t == DTYPE_F8_E4M3 ? 0.5f + fabsf(rng_unit()) : 1.0f;
    void *dw = cuda_alloc(rows * rb);
    float *dx = cuda_alloc(4 * n * T), *dy = cuda_alloc(4 * rows * T);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, dx, x, 4 * n * T);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_gemm_run(g, t, dw, rows, n, dx, T, dy, scale, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y, dy, 4 * rows * T);
    double maxref, maxdiff;
    int bad = 0;
    kernel_ref_compare(t, w, NULL, rows, n, x, T, scale, y, &maxref, &maxdiff, &bad);
    const double rel = maxref > 0 ? maxdiff / maxref : maxdiff, tol = tolerance(mode, t);
    const bool promoted = cuda_gemm_promoted(g, t, rows, n);
    const int col = promoted ? 2 + (int)mode : (int)mode;
    g_worst[col][ti] = fmax(g_worst[col][ti], bad ? INFINITY : rel);
    CHECK_MSG(bad == 0 && rel <= tol, "%s%s %s %" PRIu64 "x%" PRIu64 " T=%u: %d not finite, max|d|/max|ref| %.3g (tol %.0e)",
              mode_name(mode), promoted ? " promoted" : "", dtype_name(t), rows, n, T, bad, rel, tol);
    printf("check %-5s%s %-7s %5" PRIu64 "x%-5" PRIu64 " T=%-4u rel err %.2e (tol %.0e)%s\n", mode_name(mode),
           promoted ? " promoted" : "", dtype_name(t), rows, n, T, rel, tol, bad || rel > tol ? "  FAIL" : "");
    if (promoted) { /* x's tiles made by a pass before the GEMM and read by TMA from x's rows: the same bits */
        float *yt = malloc(4 * rows * T);
        MEMRA_ASSERT(yt);
        uint64_t diff = 0;
        const bool was = cuda_gemm_set_x_tiled(g, false);
        for (int tiled = 0; tiled < 2; tiled++) {
            cuda_gemm_set_x_tiled(g, tiled != 0);
            cuda_fill_nan_f32(g_ctx, dy, rows * T);
            cuda_gemm_run(g, t, dw, rows, n, dx, T, dy, scale, 0);
            cuda_ctx_sync(g_ctx);
            cuda_download(g_ctx, yt, dy, 4 * rows * T);
            for (uint64_t i = 0; i < rows * T; i++)
                diff += memcmp(&yt[i], &y[i], 4) != 0;
        }
        cuda_gemm_set_x_tiled(g, was);
        CHECK_MSG(diff == 0, "%s promoted %s %" PRIu64 "x%" PRIu64 " T=%u: x's tiles by TMA and by the tiling pass "
                  "differ at %" PRIu64 " elements", mode_name(mode), dtype_name(t), rows, n, T, diff);
        printf("check %-5s promoted %-7s %5" PRIu64 "x%-5" PRIu64 " T=%-4u x tiles by TMA / by the pass: %s\n",
               mode_name(mode), dtype_name(t), rows, n, T, diff ? "DIFFERENT" : "bit-identical");
        free(yt);
    }
    if (cuda_gemm_accum_takes(g, t, false, rows, n, scale)) { /* y += the product: fl(r + y) for every element */
        float *r = malloc(4 * rows * T), *ya = malloc(4 * rows * T);
        MEMRA_ASSERT(r && ya);
        for (uint64_t i = 0; i < rows * T; i++)
            r[i] = 4.0f * rng_unit();
        cuda_upload(g_ctx, dy, r, 4 * rows * T);
        cuda_gemm_run(g, t, dw, rows, n, dx, T, dy, scale, CUDA_GEMM_ACCUM);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, ya, dy, 4 * rows * T);
        uint64_t diff = 0;
        for (uint64_t i = 0; i < rows * T; i++) {
            const float want = r[i] + y[i];
            diff += memcmp(&want, &ya[i], 4) != 0;
        }
        g_accum_checked++;
        CHECK_MSG(diff == 0, "%s%s %s %" PRIu64 "x%" PRIu64 " T=%u: the GEMM adding into y differs from y + the "
                  "product at %" PRIu64 " elements", mode_name(mode), promoted ? " promoted" : "", dtype_name(t), rows,
                  n, T, diff);
        printf("check %-5s%s %-7s %5" PRIu64 "x%-5" PRIu64 " T=%-4u added into y: %s\n", mode_name(mode),
               promoted ? " promoted" : "", dtype_name(t), rows, n, T, diff ? "DIFFERENT" : "bit-identical");
        free(r), free(ya);
    }
    if (cuda_gemm_y_bf16_takes(g, t, rows, n)) /* y written as bf16: the f32 product rounded once */
        check_y16(g, t, dw, rows, n, dx, T, dy, y, scale);
    const uint64_t kb = cuda_gemm_kept_bytes(mode, promoted, t, rows, n);
    if (kb) { /* the weight kept dequantized: the same bits, read from the copy (w's argument another weight) */
        uint8_t *w2 = malloc(rows * rb);
        float *y2 = malloc(4 * rows * T);
        MEMRA_ASSERT(w2 && y2);
        fill_random(t, w2, rows * rb);
        void *kept = cuda_alloc(kb), *dw2 = cuda_alloc(rows * rb);
        cuda_upload(g_ctx, dw2, w2, rows * rb);
        cuda_gemm_keep(g, t, dw, rows, n, kept);
        cuda_gemm_run(g, t, dw2, rows, n, dx, T, dy, scale, 0); /* the scratch now holds another weight */
        cuda_fill_nan_f32(g_ctx, dy, rows * T);
        cuda_gemm_run_kept(g, t, dw2, kept, rows, n, dx, T, dy, scale, 0);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, y2, dy, 4 * rows * T);
        const bool same = memcmp(y, y2, 4 * rows * T) == 0;
        CHECK_MSG(same, "%s %s %" PRIu64 "x%" PRIu64 " T=%u: the kept copy's GEMM differs from the dequantizing one",
                  mode_name(mode), dtype_name(t), rows, n, T);
        printf("check %-5s %-7s %5" PRIu64 "x%-5" PRIu64 " T=%-4u kept dequantized copy: %s\n", mode_name(mode),
               dtype_name(t), rows, n, T, same ? "bit-identical" : "DIFFERENT");
        cuda_free(kept), cuda_free(dw2);
        free(w2), free(y2);
    }
    cuda_free(dw), cuda_free(dx), cuda_free(dy);
    free(w), free(x), free(y);
}

/* T tokens alone vs the same tokens at rows off.. of a TB-row buffer, run
 * as a T-token GEMM there and as part of one GEMM over all TB rows (the
 * backend's GEMM over a step's consecutive spans: no split K, and for f32
 * weights one algorithm for every n, so the same bits). */
static void check_invariance(struct cuda_gemm *g, enum dtype t, uint64_t rows, uint32_t T, uint32_t off, uint32_t TB)
{
    const uint64_t n = 4096, rb = row_bytes_of(t, n);
    uint8_t *w = malloc(rows * rb);
    float *x = malloc(4 * n * TB), *y1 = malloc(4 * rows * T), *y2 = malloc(4 * rows * T), *y3 = malloc(4 * rows * T);
    MEMRA_ASSERT(w && x && y1 && y2 && y3);
    fill_random(t, w, rows * rb);
    for (uint64_t i = 0; i < n * TB; i++)
        x[i] = rand_x(cuda_gemm_mode_of(g));
    void *dw = cuda_alloc(rows * rb);
    float *dx1 = cuda_alloc(4 * n * T), *dx2 = cuda_alloc(4 * n * TB);
    float *dy1 = cuda_alloc(4 * rows * T), *dy2 = cuda_alloc(4 * rows * TB);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, dx1, x + (uint64_t)off * n, 4 * n * T);
    cuda_upload(g_ctx, dx2, x, 4 * n * TB);
    cuda_fill_nan_f32(g_ctx, dy1, rows * T);
    cuda_fill_nan_f32(g_ctx, dy2, rows * TB);
    cuda_gemm_run(g, t, dw, rows, n, dx1, T, dy1, 1.0f, 0);
    cuda_gemm_run(g, t, dw, rows, n, dx2 + (uint64_t)off * n, T, dy2 + (uint64_t)off * rows, 1.0f, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y1, dy1, 4 * rows * T);
    cuda_download(g_ctx, y2, dy2 + (uint64_t)off * rows, 4 * rows * T);
    cuda_fill_nan_f32(g_ctx, dy2, rows * TB);
    cuda_gemm_run(g, t, dw, rows, n, dx2, TB, dy2, 1.0f, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y3, dy2 + (uint64_t)off * rows, 4 * rows * T);
    const bool same = memcmp(y1, y2, 4 * rows * T) == 0, same_in = memcmp(y1, y3, 4 * rows * T) == 0;
    const char *pr = cuda_gemm_promoted(g, t, rows, n) ? " promoted" : "";
    CHECK_MSG(same, "%s%s %s: a span of %u at row %u differs from the same span alone",
              mode_name(cuda_gemm_mode_of(g)), pr, dtype_name(t), T, off);
    CHECK_MSG(same_in, "%s%s %s: a span of %u's rows inside a GEMM of %u rows differ from the span alone",
              mode_name(cuda_gemm_mode_of(g)), pr, dtype_name(t), T, TB);
    printf("check %-5s%s %-7s span of %3u alone vs at row %3u: %s; inside a GEMM of %3u rows: %s\n",
           mode_name(cuda_gemm_mode_of(g)), pr, dtype_name(t), T, off, same ? "bit-identical" : "DIFFERENT", TB,
           same_in ? "bit-identical" : "DIFFERENT");
    cuda_free(dw), cuda_free(dx1), cuda_free(dx2), cuda_free(dy1), cuda_free(dy2);
    free(w), free(x), free(y1), free(y2), free(y3);
}

/* The kernels that write a GEMM's input and its bf16 parts themselves (cuda_gemm_x_claim: the RMSNorm, the GLU,
 * the bf16 rounding) against the plain kernel then cuda_gemm_run's own split: the same input, the same residual,
 * a GEMM over the claimed parts (CUDA_GEMM_X_PREPARED) bit-identical, with f32 and bf16 activations. Another
 * x's parts are left in the scratch first, so a claim that was not written would show. Q4_K: a GGUF weight's
 * bf16 input too. n 1024 and 4096: the norm's RT-thread kernel (kernel_rmsnorm_gemm) against kernel_rmsnorm4
 * with some and with all of the latter's 32 warps holding values. */
static void check_x_producers(struct cuda_gemm *g, enum dtype t, uint64_t n, uint64_t rows)
{
    const uint64_t rb = row_bytes_of(t, n);
    const uint32_t T = 37;
    const uint64_t cnt = (uint64_t)T * n;
    uint8_t *w = malloc(rows * rb);
    float *hx = malloc(4 * cnt), *hr = malloc(4 * cnt), *hn = malloc(4 * n);
    float *y1 = malloc(4 * rows * T), *y2 = malloc(4 * rows * T);
    float *r1 = calloc(cnt, 4), *r2 = calloc(cnt, 4);
    MEMRA_ASSERT(w && hx && hr && hn && y1 && y2 && r1 && r2);
    fill_random(t, w, rows * rb);
    for (uint64_t i = 0; i < cnt; i++) {
        hx[i] = 4.0f * rng_unit() - 2.0f;
        hr[i] = 4.0f * rng_unit() - 2.0f;
    }
    for (uint64_t i = 0; i < n; i++)
        hn[i] = 0.5f + rng_unit();
    void *dw = cuda_alloc(rows * rb);
    float *dr = cuda_alloc(4 * cnt), *dn = cuda_alloc(4 * n), *da = cuda_alloc(4 * cnt);
    float *db = cuda_alloc(4 * cnt), *dy = cuda_alloc(4 * rows * T), *dother = cuda_alloc(4 * cnt);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, dn, hn, 4 * n);
    cuda_upload(g_ctx, dother, hr, 4 * cnt);
    static const char *const what[] = {"RMSNorm (+ residual)", "GLU", "bf16 rounding"};
    for (int act = 0; act < 2; act++) {
        cuda_ctx_set_act_bf16(g_ctx, act == 1);
        for (int k = 0; k < 3; k++) {
            if (k == 2 && act == 0) /* the rounding is made for bf16 activations only */
                continue;
            for (int claim = 0; claim < 2; claim++) {
                float *y = claim ? y2 : y1;
                cuda_upload(g_ctx, da, hx, 4 * cnt);
                cuda_upload(g_ctx, dr, hr, 4 * cnt);
                cuda_gemm_run(g, t, dw, rows, n, dother, T, dy, 1.0f, 0); /* another x's parts in the scratch */
                cuda_fill_nan_f32(g_ctx, dy, rows * T);
                cuda_fill_nan_f32(g_ctx, db, cnt); /* the norm's output: a claimed norm leaves it unwritten */
                float *in = da;
                bool took = true;
                if (k == 0) {
                    in = db;
                    if (claim)
                        took = cuda_rmsnorm_in_gemm(g_ctx, g, t, da, dr, dn, db, T, (uint32_t)n, 1e-5f);
                    else
                        cuda_rmsnorm_in(g_ctx, da, dr, dn, db, T, (uint32_t)n, 1e-5f);
                } else if (k == 1) {
                    if (claim)
                        took = cuda_fwd_glu_gemm(g_ctx, g, t, da, dr, T, (uint32_t)n, false);
                    else
                        cuda_fwd_glu(g_ctx, da, dr, cnt, false);
                } else {
                    if (claim)
                        took = cuda_fwd_round_bf16_gemm(g_ctx, g, t, da, T, (uint32_t)n);
                    else
                        cuda_fwd_round_bf16(g_ctx, da, cnt);
                }
                cuda_gemm_run(g, t, dw, rows, n, in, T, dy, 1.0f, claim ? CUDA_GEMM_X_PREPARED : 0);
                cuda_ctx_sync(g_ctx);
                cuda_download(g_ctx, y, dy, 4 * rows * T);
                if (k == 0) /* the residual written back: the same too */
                    cuda_download(g_ctx, claim ? r2 : r1, dr, 4 * cnt);
                CHECK_MSG(took, "%s %s %s: the producer did not take the GEMM's input", mode_name(cuda_gemm_mode_of(g)),
                          dtype_name(t), what[k]);
            }
            /* the producer writes the parts instead of its f32 output (cuda_gemm_x_claim): the GEMM's output
             * and the residual written back are what must agree */
            const bool same_r = memcmp(r1, r2, 4 * cnt) == 0;
            const bool same_y = memcmp(y1, y2, 4 * rows * T) == 0;
            CHECK_MSG(same_r && same_y, "%s %s n %llu %s (%s activations): the producer's %s differs",
                      mode_name(cuda_gemm_mode_of(g)), dtype_name(t), (unsigned long long)n, what[k],
                      act ? "bf16" : "f32", same_r ? "GEMM output" : "residual");
            printf("check %-5s %-5s n %4llu %s writing the GEMM's parts, %s activations: GEMM and residual %s\n",
                   mode_name(cuda_gemm_mode_of(g)), dtype_name(t), (unsigned long long)n, what[k],
                   act ? "bf16" : "f32", same_r && same_y ? "bit-identical" : "DIFFERENT");
        }
    }
    cuda_ctx_set_act_bf16(g_ctx, false);
    cuda_free(dw), cuda_free(dr), cuda_free(dn), cuda_free(da), cuda_free(db), cuda_free(dy), cuda_free(dother);
    free(w), free(hx), free(hr), free(hn), free(y1), free(y2), free(r1), free(r2);
}

/* FP8 E4M3 with 128 × 128 block scales (cuda_gemm_run_bs): against the expanded values (e4m3 · s rounded
 * once) and a double dot, the tolerance of a GGUF weight in the mode (the value's hi + lo parts; FAST hi only);
 * its kept copy (cuda_gemm_keep_bs) gives the dequantizing call's bits. */
static void check_gemm_bs(struct cuda_gemm *g, uint64_t rows, uint64_t n, uint32_t T)
{
    const enum cuda_gemm_mode mode = cuda_gemm_mode_of(g);
    uint8_t *w;
    float *bs;
    const uint64_t nbs = fill_random_fp8_block(rows, n, &w, &bs);
    float *x = malloc(4 * n * T), *y = malloc(4 * rows * T), *y2 = malloc(4 * rows * T);
    MEMRA_ASSERT(x && y && y2);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = rand_x(mode);
    const float scale = 0.5f + fabsf(rng_unit());
    void *dw = cuda_alloc(rows * n);
    float *dbs = cuda_alloc(4 * nbs), *dx = cuda_alloc(4 * n * T), *dy = cuda_alloc(4 * rows * T);
    cuda_upload(g_ctx, dw, w, rows * n);
    cuda_upload(g_ctx, dbs, bs, 4 * nbs);
    cuda_upload(g_ctx, dx, x, 4 * n * T);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_gemm_run_bs(g, dw, dbs, NULL, rows, n, dx, T, dy, scale, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y, dy, 4 * rows * T);
    double maxref, maxdiff;
    int bad = 0;
    kernel_ref_compare(DTYPE_F8_E4M3, w, bs, rows, n, x, T, scale, y, &maxref, &maxdiff, &bad);
    const double rel = maxref > 0 ? maxdiff / maxref : maxdiff, tol = tolerance(mode, DTYPE_Q8_0);
    CHECK_MSG(bad == 0 && rel <= tol, "%s F8_E4M3 block scales %" PRIu64 "x%" PRIu64 " T=%u: %d not finite, "
              "max|d|/max|ref| %.3g (tol %.0e)", mode_name(mode), rows, n, T, bad, rel, tol);
    void *kept = cuda_alloc(cuda_gemm_kept_bytes_bs(mode, rows, n));
    cuda_gemm_keep_bs(g, dw, dbs, rows, n, kept);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_gemm_run_bs(g, dw, dbs, kept, rows, n, dx, T, dy, scale, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y2, dy, 4 * rows * T);
    const bool same = memcmp(y, y2, 4 * rows * T) == 0;
    CHECK_MSG(same, "%s F8_E4M3 block scales %" PRIu64 "x%" PRIu64 " T=%u: the kept copy's GEMM differs",
              mode_name(mode), rows, n, T);
    printf("check %-5s F8_E4M3 block scales %5" PRIu64 "x%-5" PRIu64 " T=%-4u rel err %.2e (tol %.0e), kept copy %s%s\n",
           mode_name(mode), rows, n, T, rel, tol, same ? "bit-identical" : "DIFFERENT",
           bad || rel > tol || !same ? "  FAIL" : "");
    cuda_free(kept), cuda_free(dw), cuda_free(dbs), cuda_free(dx), cuda_free(dy);
    free(w), free(bs), free(x), free(y), free(y2);
}

/* The promoted GEMM's x tiles (made once per conversion of x, gemm.cu's prep_gen) never serve another x: Q8_0
 * after Q4_K on the same x with CUDA_GEMM_X_PREPARED (tiles without Σx after tiles with, and back) gives the bits
 * of a fresh call, and new contents at the same pointer, converted again, give the bits of another buffer holding
 * them. */
static void check_promote_cache(struct cuda_gemm *g)
{
    const uint64_t rows = 256, n = 4096;
    const uint32_t T = 50;
    const enum dtype ts[2] = {DTYPE_Q4_K, DTYPE_Q8_0};
    const char *mode = mode_name(cuda_gemm_mode_of(g));
    void *dw[2];
    for (int i = 0; i < 2; i++) {
        const uint64_t rb = row_bytes_of(ts[i], n);
        uint8_t *w = malloc(rows * rb);
        MEMRA_ASSERT(w);
        fill_random(ts[i], w, rows * rb);
        dw[i] = cuda_alloc(rows * rb);
        cuda_upload(g_ctx, dw[i], w, rows * rb);
        free(w);
        CHECK_MSG(cuda_gemm_promoted(g, ts[i], rows, n), "%s %s %llux%llu: not promoted", mode, dtype_name(ts[i]),
                  (unsigned long long)rows, (unsigned long long)n);
    }
    CHECK_MSG(!cuda_gemm_promoted(g, DTYPE_Q6_K, rows, n) && !cuda_gemm_promoted(g, DTYPE_Q8_0, 300, n) &&
                  !cuda_gemm_promoted(g, DTYPE_Q4_K, rows, 4128) && !cuda_gemm_promoted(g, DTYPE_BF16, rows, n),
              "%s: promoted where it must not be (Q6_K, 300 rows, Q4_K at n 4128, BF16)", mode);
    /* MEMRA_GEMM_PROMOTE's sets: plain the types without a min, auto every type at ≥ 2048 rows */
    const enum cuda_gemm_mode gm = cuda_gemm_mode_of(g);
    CHECK_MSG(cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_AUTO, gm, DTYPE_Q4_K, 2048, n) &&
                  cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_AUTO, gm, DTYPE_Q8_0, 4096, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_AUTO, gm, DTYPE_Q4_K, 1920, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_AUTO, gm, DTYPE_Q8_0, 1024, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_AUTO, gm, DTYPE_Q6_K, 4096, n),
              "%s: MEMRA_GEMM_PROMOTE=auto takes Q4_K / Q8_0 from 2048 rows, not 1920 / 1024 rows nor Q6_K", mode);
    CHECK_MSG(cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_PLAIN, gm, DTYPE_Q8_0, rows, n) &&
                  cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_PLAIN, gm, DTYPE_Q4_0, rows, n) &&
                  cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_PLAIN, gm, DTYPE_IQ4_XS, rows, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_PLAIN, gm, DTYPE_Q4_K, rows, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_PLAIN, gm, DTYPE_Q4_1, rows, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_PLAIN, gm, DTYPE_Q5_K, rows, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_OFF, gm, DTYPE_Q8_0, rows, n) &&
                  !cuda_gemm_promote_takes(CUDA_GEMM_PROMOTE_ALL, CUDA_GEMM_FAST, DTYPE_Q8_0, rows, n),
              "%s: MEMRA_GEMM_PROMOTE's sets: plain takes Q8_0 / Q4_0 / IQ4_XS and not Q4_K / Q4_1 / Q5_K, off and "
              "fast none", mode);
    float *x[2];
    for (int k = 0; k < 2; k++) {
        x[k] = malloc(4 * n * T);
        MEMRA_ASSERT(x[k]);
        for (uint64_t i = 0; i < n * T; i++)
            x[k][i] = rand_x(cuda_gemm_mode_of(g));
    }
    float *dx = cuda_alloc(4 * n * T), *dx2 = cuda_alloc(4 * n * T), *dy = cuda_alloc(4 * rows * T);
    float *y1 = malloc(4 * rows * T), *y2 = malloc(4 * rows * T);
    MEMRA_ASSERT(y1 && y2);
    cuda_upload(g_ctx, dx, x[0], 4 * n * T);
    cuda_upload(g_ctx, dx2, x[1], 4 * n * T);
    for (int first = 0; first < 2; first++) { /* the other type after `first`'s tiles, prepared x reused */
        const int second = 1 - first;
        cuda_gemm_run(g, ts[second], dw[second], rows, n, dx, T, dy, 1.0f, 0); /* fresh */
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, y1, dy, 4 * rows * T);
        cuda_gemm_run(g, ts[first], dw[first], rows, n, dx, T, dy, 1.0f, 0);
        cuda_fill_nan_f32(g_ctx, dy, rows * T);
        cuda_gemm_run(g, ts[second], dw[second], rows, n, dx, T, dy, 1.0f, CUDA_GEMM_X_PREPARED);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, y2, dy, 4 * rows * T);
        const bool same = memcmp(y1, y2, 4 * rows * T) == 0;
        CHECK_MSG(same, "%s promoted: %s after %s on the prepared x differs from a fresh call", mode,
                  dtype_name(ts[second]), dtype_name(ts[first]));
        printf("check %-5s promoted %s after %s, x prepared once: %s\n", mode, dtype_name(ts[second]),
               dtype_name(ts[first]), same ? "bit-identical" : "DIFFERENT");
    }
    /* new contents at dx: the result of dx2 holding them */
    cuda_gemm_run(g, DTYPE_Q4_K, dw[0], rows, n, dx2, T, dy, 1.0f, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y1, dy, 4 * rows * T);
    cuda_gemm_run(g, DTYPE_Q4_K, dw[0], rows, n, dx, T, dy, 1.0f, 0);
    cuda_upload(g_ctx, dx, x[1], 4 * n * T);
    cuda_fill_nan_f32(g_ctx, dy, rows * T);
    cuda_gemm_run(g, DTYPE_Q4_K, dw[0], rows, n, dx, T, dy, 1.0f, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y2, dy, 4 * rows * T);
    const bool same = memcmp(y1, y2, 4 * rows * T) == 0;
    CHECK_MSG(same, "%s promoted: new contents of x at the same address gave stale tiles", mode);
    printf("check %-5s promoted Q4_K, new x at the same address: %s\n", mode, same ? "as another buffer's" : "STALE");
    cuda_free(dw[0]), cuda_free(dw[1]), cuda_free(dx), cuda_free(dx2), cuda_free(dy);
    free(x[0]), free(x[1]), free(y1), free(y2);
}

static void run_checks(void)
{
    for (int mode = 0; mode < 3; mode++) {
        struct cuda_gemm *g = cuda_gemm_init(g_ctx, (enum cuda_gemm_mode)mode, 130 * 4352, 300 * 4352);
        for (size_t k = 0; k < NTYPES; k++) {
            const enum dtype t = types[k];
            const uint64_t qk = dtype_info(t)->block_size;
            const uint64_t n_odd = qk == 1 ? 4104 : qk == 32 ? 4128 : 4352;
            test_current = dtype_name(t);
            test_cases++;
            check_gemm(g, k, 256, 4096, 64);
            check_gemm(g, k, 300, n_odd, 17);
            check_gemm(g, k, 96, 1024, 130);
        }
        test_current = "fp8 block scales";
        test_cases++;
        check_gemm_bs(g, 256, 4096, 64);
        check_gemm_bs(g, 300, 4112, 17); /* partial row and column blocks */
        check_gemm_bs(g, 96, 1024, 130);
        test_current = "invariance";
        test_cases++;
        check_invariance(g, DTYPE_BF16, 300, 40, 23, 80);
        check_invariance(g, DTYPE_Q4_K, 300, 40, 23, 80);
        check_invariance(g, DTYPE_F32, 300, 40, 23, 80);
        check_invariance(g, DTYPE_F32, 300, 9, 100, 420); /* spans far apart in length: the f32 algorithm fixed */
        check_invariance(g, DTYPE_F32, 300, 33, 7, 130);
        test_current = "x producers";
        test_cases++;
        check_x_producers(g, DTYPE_BF16, 1024, 96);
        check_x_producers(g, DTYPE_BF16, 4096, 96); /* the norm's every warp slot (kernel_rmsnorm_gemm) */
        check_x_producers(g, DTYPE_Q4_K, 1024, 96);
        cuda_gemm_free(g);
    }
    /* MEMRA_GEMM_PROMOTE (gemm_q.cu): the types with a scale a 32 at shapes it takes — 256 × 4096 at 64 tokens,
     * 384 × 2048 at 200 (a partial token tile), 128 × 14336 at 7, 128 × 256 at 33 (fewer k tiles than stages) —
     * and those it leaves to the cuBLASLt path (300 rows, 96 rows, Q6_K); the kept packed copy; which weights
     * take it; x's tiles across weights with and without mins and across new contents of one buffer; a span's
     * bits alone, at an offset and inside a larger GEMM (of the same form and of the other: spans of ≤ 128 tokens
     * take gemm_q.cu's narrow form); the producers' claimed parts. */
    for (int mode = 1; mode < 3; mode++) {
        struct cuda_gemm *g = cuda_gemm_init(g_ctx, (enum cuda_gemm_mode)mode, 200 * 14336, 384 * 14336);
        cuda_gemm_promote(g, 14336, CUDA_GEMM_PROMOTE_ALL);
        for (size_t k = 0; k < NTYPES; k++) {
            const enum dtype t = types[k];
            if (!(t == DTYPE_Q8_0 || t == DTYPE_Q4_0 || t == DTYPE_Q4_1 || t == DTYPE_Q4_K || t == DTYPE_Q5_K ||
                  t == DTYPE_Q6_K || t == DTYPE_IQ4_XS))
                continue;
            test_current = dtype_name(t);
            test_cases++;
            check_gemm(g, k, 256, 4096, 64);
            check_gemm(g, k, 384, 2048, 200);
            check_gemm(g, k, 128, 14336, 7);
            check_gemm(g, k, 128, 256, 33); /* fewer k tiles than ring stages */
            check_gemm(g, k, 300, 4096, 17);
            check_gemm(g, k, 96, 1024, 130);
        }
        test_current = "promoted x tiles";
        test_cases++;
        check_promote_cache(g);
        test_current = "invariance";
        test_cases++;
        check_invariance(g, DTYPE_Q8_0, 256, 40, 23, 80);
        check_invariance(g, DTYPE_Q4_K, 256, 40, 23, 80);
        /* a short span (gemm_q.cu's narrow form, 64-row CTAs) inside a long one (the wide form) */
        check_invariance(g, DTYPE_Q8_0, 256, 40, 23, 300);
        check_invariance(g, DTYPE_Q4_K, 256, 40, 23, 300);
        test_current = "x producers";
        test_cases++;
        check_x_producers(g, DTYPE_Q4_K, 1024, 128);
        cuda_gemm_free(g);
    }
}

/* ---- timing ------------------------------------------------------------------ */

enum what { W_CALL, W_KEPT, W_PREP, W_DEQUANT, W_GEMV };

struct tcase {
    struct cuda_gemm *g;
    enum dtype t;
    uint64_t rows, n;
    uint32_t T;
    void *w[2]; /* two copies: small-T runs must read the weight from memory */
    void *kept; /* the weight's kept copy (cuda_gemm_keep), where its type has one */
    float *x, *y;
};

static void launch(struct tcase *c, enum what wh, int copy)
{
    switch (wh) {
    case W_CALL: cuda_gemm_run(c->g, c->t, c->w[copy], c->rows, c->n, c->x, c->T, c->y, 1.0f, 0); break;
    case W_KEPT: cuda_gemm_run_kept(c->g, c->t, c->w[copy], c->kept, c->rows, c->n, c->x, c->T, c->y, 1.0f, 0); break;
    case W_PREP: cuda_gemm_prep_x(c->g, c->t, c->x, c->n, c->T); break;
    case W_DEQUANT: cuda_gemm_dequant(c->g, c->t, c->w[copy], c->rows, c->n); break;
    case W_GEMV: /* the backend's decode path for T tokens: chunks of 8, ksplit 1 for the block types */
        for (uint32_t t0 = 0; t0 < c->T; t0 += CUDA_GEMV_MAX_BATCH) {
            const uint32_t nb = c->T - t0 < CUDA_GEMV_MAX_BATCH ? c->T - t0 : CUDA_GEMV_MAX_BATCH;
            const bool q = dtype_info(c->t)->block_size > 1;
            cuda_gemv_variant(g_ctx, c->t, c->w[copy], c->rows, c->n, c->x + (uint64_t)t0 * c->n, nb,
                              c->y + (uint64_t)t0 * c->rows, 1.0f, 0, q ? 1 : 0, 0);
        }
        break;
    }
}

/* Median ms of one launch (9 timed after 2 warm-ups). */
static double time_ms(struct tcase *c, enum what wh)
{
    struct cuda_timer *tm = cuda_timer_new();
    launch(c, wh, 0);
    launch(c, wh, 1);
    double ms[9];
    for (int r = 0; r < 9; r++) {
        cuda_timer_start(g_ctx, tm);
        launch(c, wh, r & 1);
        cuda_timer_stop(g_ctx, tm);
        ms[r] = cuda_timer_ms(tm);
    }
    cuda_timer_free(tm);
    qsort(ms, 9, sizeof ms[0], kernel_time_cmp);
    return ms[4];
}

static void tcase_init(struct tcase *c, struct cuda_gemm *g, enum dtype t, uint64_t rows, uint64_t n, uint32_t T)
{
    memset(c, 0, sizeof *c);
    c->g = g, c->t = t, c->rows = rows, c->n = n, c->T = T;
    const uint64_t bytes = rows * row_bytes_of(t, n);
    const size_t pat = bytes < (16u << 20) ? bytes : (size_t)(16u << 20) / dtype_info(t)->type_size * dtype_info(t)->type_size;
    uint8_t *h = malloc(bytes), *p = malloc(pat);
    MEMRA_ASSERT(h && p);
    fill_random(t, p, pat);
    for (uint64_t o = 0; o < bytes; o += pat)
        memcpy(h + o, p, bytes - o < pat ? bytes - o : pat);
    for (int i = 0; i < 2; i++) {
        c->w[i] = cuda_alloc(bytes);
        cuda_upload(g_ctx, c->w[i], h, bytes);
    }
    free(h), free(p);
    float *x = malloc(4 * n * T);
    MEMRA_ASSERT(x);
    for (uint64_t i = 0; i < n * T; i++)
        x[i] = rng_unit();
    c->x = cuda_alloc(4 * n * T);
    c->y = cuda_alloc(4 * rows * T);
    cuda_upload(g_ctx, c->x, x, 4 * n * T);
    free(x);
    const uint64_t kb = cuda_gemm_kept_bytes(cuda_gemm_mode_of(g), cuda_gemm_promoted(g, t, rows, n), t, rows, n);
    if (kb) {
        c->kept = cuda_alloc(kb);
        cuda_gemm_keep(g, t, c->w[0], rows, n, c->kept);
    }
}

static void tcase_free(struct tcase *c)
{
    cuda_free(c->w[0]), cuda_free(c->w[1]), cuda_free(c->x), cuda_free(c->y);
    if (c->kept)
        cuda_free(c->kept);
}

static const struct shape {
    const char *name;
    uint64_t rows, n;
} shapes[] = {
    {"q/o", 4096, 4096}, {"k/v", 1024, 4096}, {"gate/up", 14336, 4096}, {"down", 4096, 14336}, {"lm_head", 128256, 4096},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static double tflops(uint64_t rows, uint64_t n, uint32_t T, double ms) { return 2.0 * rows * n * T / (ms * 1e9); }

/* The crossover: the decode GEMV path (chunks of 8 tokens) against the GEMM at small T, which sets the backend's
 * span threshold. */
static void time_crossover(struct cuda_gemm *gf, struct cuda_gemm *ge)
{
    static const enum dtype xt[] = {DTYPE_BF16, DTYPE_Q8_0, DTYPE_Q4_K, DTYPE_Q6_K};
    static const uint32_t xT[] = {8, 16, 24, 32, 48, 64, 96, 128};
    printf("\n## GEMV (chunks of 8 tokens) vs GEMM at small T, ms; gate/up 14336x4096 and q/o 4096x4096\n\n"
           "| type | shape | T | GEMV | GEMM fast | GEMM exact |\n|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof xt / sizeof xt[0]; k++)
        for (int s = 0; s < 3; s += 2)
            for (size_t i = 0; i < sizeof xT / sizeof xT[0]; i++) {
                struct tcase c;
                tcase_init(&c, gf, xt[k], shapes[s].rows, shapes[s].n, xT[i]);
                const double gv = time_ms(&c, W_GEMV), fast = time_ms(&c, W_CALL);
                c.g = ge;
                const double ex = time_ms(&c, W_CALL);
                printf("| %s | %s | %u | %.4f | %.4f | %.4f |\n", dtype_name(c.t), shapes[s].name, c.T, gv, fast, ex);
                fflush(stdout);
                tcase_free(&c);
            }
}

static void run_timing(bool only_promoted)
{
    const uint64_t max_x = 4096ull * 14336, max_w = 128256ull * 4096;
    struct cuda_gemm *gf = cuda_gemm_init(g_ctx, CUDA_GEMM_FAST, max_x, max_w);
    struct cuda_gemm *ge = cuda_gemm_init(g_ctx, CUDA_GEMM_EXACT, max_x, max_w);
    struct cuda_gemm *gx = cuda_gemm_init(g_ctx, CUDA_GEMM_XBF16, max_x, max_w);
    struct cuda_gemm *gep = cuda_gemm_init(g_ctx, CUDA_GEMM_EXACT, max_x, max_w);
    struct cuda_gemm *gxp = cuda_gemm_init(g_ctx, CUDA_GEMM_XBF16, max_x, max_w);
    cuda_gemm_promote(gep, 14336, CUDA_GEMM_PROMOTE_ALL);
    cuda_gemm_promote(gxp, 14336, CUDA_GEMM_PROMOTE_ALL);
    struct cuda_gemm *by_mode[2][3] = {{gf, ge, gx}, {gf, gep, gxp}};
    static const struct { enum dtype t; enum cuda_gemm_mode mode; bool promote; } cfgs[] = {
        {DTYPE_BF16, CUDA_GEMM_FAST, 0}, {DTYPE_BF16, CUDA_GEMM_EXACT, 0}, {DTYPE_BF16, CUDA_GEMM_XBF16, 0},
        {DTYPE_F16, CUDA_GEMM_FAST, 0},  {DTYPE_F8_E4M3, CUDA_GEMM_FAST, 0}, {DTYPE_Q8_0, CUDA_GEMM_FAST, 0},
        {DTYPE_Q4_K, CUDA_GEMM_FAST, 0}, {DTYPE_Q6_K, CUDA_GEMM_FAST, 0},  {DTYPE_Q4_K, CUDA_GEMM_EXACT, 0},
        {DTYPE_Q4_K, CUDA_GEMM_XBF16, 0}, {DTYPE_Q8_0, CUDA_GEMM_XBF16, 0}, {DTYPE_Q8_0, CUDA_GEMM_XBF16, 1},
        {DTYPE_Q4_K, CUDA_GEMM_XBF16, 1}, {DTYPE_Q4_K, CUDA_GEMM_EXACT, 1},
    };
    const size_t ncfg = sizeof cfgs / sizeof cfgs[0];
    const uint32_t Ts[2] = {512, 4096};
    printf("\n## Prefill GEMM (cuBLASLt), 8B shapes: whole call = x conversion + dequantization + GEMM(s); "
           "TFLOP/s = 2*rows*n*T / time of the whole call; %% of %.0f TFLOP/s\n\n", PEAK_TFLOPS);
    printf("| type | mode | shape | T | call ms | TFLOP/s | %% peak | x prep ms | dequant ms | kept ms | kept TFLOP/s |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    double layer_ms[sizeof cfgs / sizeof cfgs[0]][2] = {{0}}, layer_kept[sizeof cfgs / sizeof cfgs[0]][2] = {{0}};
    for (size_t ci = 0; ci < ncfg; ci++)
        for (size_t s = 0; s < NSHAPES && (cfgs[ci].promote || !only_promoted); s++) {
            struct tcase c; /* one weight upload serves both T */
            tcase_init(&c, by_mode[cfgs[ci].promote][cfgs[ci].mode], cfgs[ci].t, shapes[s].rows, shapes[s].n, Ts[1]);
            for (int ti = 0; ti < 2; ti++) {
                const uint32_t T = c.T = Ts[ti];
                const double call = time_ms(&c, W_CALL), prep = time_ms(&c, W_PREP);
                const bool deq = cuda_gemm_scratch_w_elems(c.t, c.rows, c.n) > 0;
                const double dq = deq ? time_ms(&c, W_DEQUANT) : 0.0;
                const double kept = c.kept ? time_ms(&c, W_KEPT) : call;
                const double tf = tflops(c.rows, c.n, T, call);
                const bool pr = cuda_gemm_promoted(c.g, c.t, c.rows, c.n);
                printf("| %s | %s%s | %s %" PRIu64 "x%" PRIu64 " | %u | %.3f | %.0f | %.1f | %.3f | %s%.3f | %.3f | %.0f |\n",
                       dtype_name(c.t), mode_name(cfgs[ci].mode), pr ? " promoted" : "", shapes[s].name, c.rows,
                       c.n, T, call, tf, 100.0 * tf / PEAK_TFLOPS, prep, deq ? "" : "-", dq, kept,
                       tflops(c.rows, c.n, T, kept));
                fflush(stdout);
                /* one 8B layer: q, o, k, v, gate, up, down */
                const int mult = s == 0 ? 2 : s == 1 ? 2 : s == 2 ? 2 : s == 3 ? 1 : 0;
                layer_ms[ci][ti] += mult * call;
                layer_kept[ci][ti] += mult * kept;
            }
            tcase_free(&c);
        }
    printf("\n## One Llama-3-8B layer of GEMMs (q, k, v, o, gate, up, down: 218 M params), projected pp (GEMMs of "
           "32 layers only, no attention / norms / lm_head; kept: the weights' kept copies, the backend's default)\n\n"
           "| type | mode | T | layer ms | TFLOP/s | tok/s | kept layer ms | kept TFLOP/s | kept tok/s |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    for (size_t ci = 0; ci < ncfg; ci++)
        for (int ti = 0; ti < 2 && (cfgs[ci].promote || !only_promoted); ti++) {
            const double p = 2.0 * 4096 * 4096 + 2.0 * 1024 * 4096 + 3.0 * 14336 * 4096;
            printf("| %s | %s%s | %u | %.3f | %.0f | %.0f | %.3f | %.0f | %.0f |\n", dtype_name(cfgs[ci].t),
                   mode_name(cfgs[ci].mode), cfgs[ci].promote ? " promoted" : "", Ts[ti], layer_ms[ci][ti],
                   2.0 * p * Ts[ti] / (layer_ms[ci][ti] * 1e9), Ts[ti] / (32.0 * layer_ms[ci][ti] / 1e3),
                   layer_kept[ci][ti], 2.0 * p * Ts[ti] / (layer_kept[ci][ti] * 1e9),
                   Ts[ti] / (32.0 * layer_kept[ci][ti] / 1e3));
        }

    if (!only_promoted)
        time_crossover(gf, ge);
    cuda_gemm_free(gf);
    cuda_gemm_free(ge);
    cuda_gemm_free(gx);
    cuda_gemm_free(gep);
    cuda_gemm_free(gxp);
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const bool promoted = argc > 1 && strcmp(argv[1], "--promoted") == 0;
    g_ctx = kernel_ctx_open();
    run_checks();
    /* F32 in every mode, BF16 in fast and xbf16, F16 and the GGUF types in fast add into y */
    CHECK_MSG(g_accum_checked >= 40, "only %d GEMMs added into y (cuda_gemm_accum_takes)", g_accum_checked);
    printf("accumulating GEMMs checked: %d\n", g_accum_checked);
    CHECK_MSG(g_y16_checked >= 20, "only %d GEMMs wrote a bf16 y (cuda_gemm_y_bf16_takes)", g_y16_checked);
    printf("bf16-y GEMMs checked: %d (%" PRIu64 " elements one step from the f32 y rounded)\n", g_y16_checked,
           g_y16_moved);
    printf("\n## GEMM error vs the CPU reference (max|d|/max|ref|, worst of its shapes; xbf16 against the rounded x)\n\n"
           "| type | fast | exact | xbf16 | exact promoted | xbf16 promoted |\n|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < NTYPES; k++)
        printf("| %s | %.2e | %.2e | %.2e | %.2e | %.2e |\n", dtype_name(types[k]), g_worst[0][k], g_worst[1][k],
               g_worst[2][k], g_worst[3][k], g_worst[4][k]);
    if (!quick && !test_failures)
        run_timing(promoted);
    cuda_ctx_free(g_ctx);
    return test_summary();
}
