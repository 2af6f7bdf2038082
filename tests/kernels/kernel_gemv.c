/* tests/kernels/kernel_gemv.c — the decode GEMV kernels (and RMSNorm, SwiGLU)
 * checked against the CPU reference, then timed on the Llama-3-8B decode shapes.
 *
 * Checks (exit status 1 if any fails): for every type, fresh random inputs each
 * time — weights of random valid blocks (all bits random except the f16 scale
 * fields, which get finite values; plain floats with finite exponents; FP8 with
 * the NaN codes avoided), x uniform in [-1, 1) — the GPU result, written into a
 * NaN-poisoned output, against quant_dequantize_row + a double-precision dot
 * (quant/quant.h, bit-exact with gguf-py). Tolerance: max|Δ| / max|ref| ≤ 1e-4
 * (f32 accumulation of ≤ 14336 products in a different order than the
 * reference; for the quantized types also the 24-bit integer activations, ≤
 * ~2^-24 of each 128- or 32-element block's max |x|), and every output
 * written and finite. The quantized types again with bf16 activations ("x16": the prepared x in 16
 * bits, the dp4a kernels' X16 form, the tensor-core GEMV on its two planes), tolerance 1e-3 (TOL_X16).
 * Covered: every launch shape (1, 2, 4 rows a block or warp), rows of 4096 and
 * 14336 and an odd length (not a multiple of 4096 columns; for Q8_0, Q4_0,
 * Q6_K, IQ4_XS not a multiple of 16 bytes either), batches 1..8, and the
 * quantized types' shared-activation path (cuda_gemv_prep_x + flag).
 *
 * Timing: CUDA events around graph replays of many back-to-back launches that
 * rotate over enough weight copies to make the working set ≥ 4× the L2, after a
 * warm-up; the median over repetitions of the per-launch time. Bytes counted:
 * the weight matrix (x and y are ≤ 0.1 % of it). The cuBLAS bf16 GEMV
 * (cublasGemmEx, batch 1) is timed the same way on the same shapes in the same
 * run. The table is printed last.
 *
 * The tensor-core GEMV (gemv_mma.cu, what the engine runs for Q4_K and Q6_K):
 * check_alone, every K split, batches 1..8 with activation outliers; each
 * vector of a batch must have the bits it has alone; check_grid, its two
 * grids (a block a tile group, the resident blocks looping) the same bits. The same for the dp4a
 * kernels at the engine's K splits (1, 4: MEMRA_GEMV_KSPLIT), every type.
 * check_rope_epis: a lone token's q|k[|v] GEMV with RoPE and the KV write in its epilogue (cuda_fwd_gemv_rope_kv)
 * bit-identical to the GEMV then the RoPE kernel, f32 and bf16 activations and caches.
 *
 * Usage: kernel_gemv [--quick]   (--quick: checks only, no timing)
 *        kernel_gemv --profile      one lm_head-shaped GEMV (x prepared) per
 *                                   type, nothing else: for ncu
 *        kernel_gemv --mma [x16]    checks, then Q4_K / Q6_K: the tensor-core GEMV
 *                                   (each K split) vs the staged dp4a kernel
 *                                   (x16: with bf16 activations' 16-bit x)
 *        kernel_gemv --ks           checks, then the dp4a types at the engine's
 *                                   K splits 1 and 4, batches 1, 2, 4, 8
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_decode.h"
#include "backend/cuda/cuda_fwd.h"
#include "backend/cuda/cuda_ops.h"
#include "core/log.h"
#include "quant/quant.h"
#include "test.h"

#define KERNEL_RNG_SEED 0x9E3779B97F4A7C15ull
#include "kernel_rng.h"
#include "kernel_ref.h"
#include "kernel_time.h"

#define BW_REF_GBS 4300.0 /* measured H200 device-to-device copy rate, GB/s */
#define TOL 1e-4
/* With bf16 activations (cuda_ctx_set_act_bf16) the quantized types' prepared x is 16-bit (gemv_internal.cuh: ≤ 2^-16
 * of a block's max |x| off; the x16 pass's 350 checks ≤ 2.5e-4 of max|ref| on an H100, check_alone's ×300 outliers
 * the largest): the x16 checks' bound. */
#define TOL_X16 1e-3

static struct cuda_ctx *g_ctx;
static double g_tol = TOL; /* the quantized checks' bound: TOL, or TOL_X16 in the x16 pass */

/* ---- correctness ----------------------------------------------------------- */

static bool is_quant_block(enum dtype t) { return dtype_info(t)->block_size > 1; }

/* y (nvec vectors of `rows`) against the reference: quant_dequantize_row of
 * each row of w dotted with x in double, times scale. The largest |ref| and
 * |y − ref| over the finite outputs into *maxref / *maxdiff, the outputs that
 * are not finite added to *bad. */
static void check_gemv(enum dtype t, uint64_t rows, uint64_t n, uint32_t batch, int rpb, int ks, bool prepared)
{
    const uint64_t rb = row_bytes_of(t, n);
    uint8_t *w = malloc(rows * rb);
    float *x = malloc(sizeof(float) * n * batch), *y = malloc(sizeof(float) * rows * batch);
    MEMRA_ASSERT(w && x && y);
    fill_random(t, w, rows * rb);
    for (uint64_t i = 0; i < n * batch; i++)
        x[i] = rng_unit();
    const float scale = t == DTYPE_F8_E4M3 ? 0.5f + fabsf(rng_unit()) : 1.0f;

    void *dw = cuda_alloc(rows * rb);
    float *dx = cuda_alloc(sizeof(float) * n * batch), *dy = cuda_alloc(sizeof(float) * rows * batch);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, dx, x, sizeof(float) * n * batch);
    cuda_fill_nan_f32(g_ctx, dy, rows * batch);
    if (prepared) /* the shared-activation path: prep once, GEMV with the flag */
        cuda_gemv_prep_x(g_ctx, dx, n, batch);
    cuda_gemv_variant(g_ctx, t, dw, rows, n, dx, batch, dy, scale, rpb, ks, prepared ? CUDA_GEMV_X_PREPARED : 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y, dy, sizeof(float) * rows * batch);
    /* ksplit 1 (asked, or any batch > 1) runs the staged kernel: the same bits
     * as the register kernel it replaces */
    int same = -1;
    if (is_quant_block(t) && (ks == 1 || batch > 1)) {
        float *y2 = malloc(sizeof(float) * rows * batch);
        MEMRA_ASSERT(y2);
        cuda_fill_nan_f32(g_ctx, dy, rows * batch);
        cuda_ctx_set_gemv_staged(g_ctx, false);
        cuda_gemv_variant(g_ctx, t, dw, rows, n, dx, batch, dy, scale, rpb, ks,
                          prepared ? CUDA_GEMV_X_PREPARED : 0);
        cuda_ctx_set_gemv_staged(g_ctx, true);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, y2, dy, sizeof(float) * rows * batch);
        same = memcmp(y, y2, sizeof(float) * rows * batch) == 0;
        free(y2);
    }

    double maxref, maxdiff;
    int bad = 0;
    kernel_ref_compare(t, w, NULL, rows, n, x, batch, scale, y, &maxref, &maxdiff, &bad);
    const double rel = maxref > 0 ? maxdiff / maxref : maxdiff;
    char label[128];
    snprintf(label, sizeof label, "%s %" PRIu64 "x%" PRIu64 " batch %u rpb %d ks %d%s", dtype_name(t), rows, n, batch,
             rpb, ks, prepared ? " prepared" : "");
    CHECK_MSG(bad == 0 && rel <= g_tol, "%s: %d outputs not finite, max|d|/max|ref| = %.3g (tol %.0e)", label, bad, rel,
              g_tol);
    CHECK_MSG(same != 0, "%s: staged and register kernels give different bits", label);
    printf("check %-36s rel err %.2e%s%s\n", label, rel, same == 1 ? "  staged = register bits" : "",
           bad || rel > g_tol || same == 0 ? "  FAIL" : "");
    cuda_free(dw);
    cuda_free(dx);
    cuda_free(dy);
    free(w), free(x), free(y);
}

/* FP8 E4M3 with 128 × 128 block scales (cuda_gemv_bs): against the expanded values (e4m3 · s rounded once,
 * then · scale: backend_cuda.c's expand_rows) and a double dot, the check_gemv tolerance; every batch size's
 * rows the bits of the same rows alone (the kernel's shape depends on the batch only through its column count, a
 * row's sum order not at all: batch 1 and 8 compared). Shapes with partial row and column blocks too. */
static void check_gemv_bs(uint64_t rows, uint64_t n, uint32_t batch)
{
    uint8_t *w;
    float *bs;
    const uint64_t nbs = fill_random_fp8_block(rows, n, &w, &bs);
    float *x = malloc(4 * n * batch), *y = malloc(4 * rows * batch), *y1 = malloc(4 * rows * batch);
    MEMRA_ASSERT(x && y && y1);
    for (uint64_t i = 0; i < n * batch; i++)
        x[i] = rng_unit();
    const float scale = 0.5f + fabsf(rng_unit());
    void *dw = cuda_alloc(rows * n);
    float *dbs = cuda_alloc(4 * nbs), *dx = cuda_alloc(4 * n * batch), *dy = cuda_alloc(4 * rows * batch);
    cuda_upload(g_ctx, dw, w, rows * n);
    cuda_upload(g_ctx, dbs, bs, 4 * nbs);
    cuda_upload(g_ctx, dx, x, 4 * n * batch);
    cuda_fill_nan_f32(g_ctx, dy, rows * batch);
    cuda_gemv_bs(g_ctx, dw, dbs, rows, n, dx, batch, dy, scale);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y, dy, 4 * rows * batch);
    bool same = true; /* each vector alone: the batch's bits */
    for (uint32_t b = 0; b < batch && batch > 1; b++) {
        cuda_fill_nan_f32(g_ctx, dy, rows);
        cuda_gemv_bs(g_ctx, dw, dbs, rows, n, dx + (uint64_t)b * n, 1, dy, scale);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, y1, dy, 4 * rows);
        same &= memcmp(y1, y + (uint64_t)b * rows, 4 * rows) == 0;
    }
    double maxref, maxdiff;
    int bad = 0;
    kernel_ref_compare(DTYPE_F8_E4M3, w, bs, rows, n, x, batch, scale, y, &maxref, &maxdiff, &bad);
    const double rel = maxref > 0 ? maxdiff / maxref : maxdiff;
    CHECK_MSG(bad == 0 && rel <= TOL, "F8_E4M3 block scales %" PRIu64 "x%" PRIu64 " batch %u: %d not finite, "
              "max|d|/max|ref| %.3g (tol %.0e)", rows, n, batch, bad, rel, TOL);
    CHECK_MSG(same, "F8_E4M3 block scales %" PRIu64 "x%" PRIu64 " batch %u: a vector alone differs from the batch",
              rows, n, batch);
    printf("check F8_E4M3 block scales %5" PRIu64 "x%-5" PRIu64 " batch %u rel err %.2e%s%s\n", rows, n, batch, rel,
           batch > 1 ? (same ? "  alone = batch bits" : "  alone DIFFERS") : "", bad || rel > TOL ? "  FAIL" : "");
    cuda_free(dw), cuda_free(dbs), cuda_free(dx), cuda_free(dy);
    free(w), free(bs), free(x), free(y), free(y1);
}

/* A batch-of-8 case for check_alone / check_grid: random weights of type t
 * (rows × n), 8 vectors x with outliers (every 61st element ×300: the
 * 128-element activation blocks' scale), two host outputs, all uploaded. */
struct batch_case {
    uint8_t *w;     /* (rows, row bytes) */
    float *x;       /* (8, n) */
    float *y, *y1;  /* (8, rows) host outputs */
    void *dw;
    float *dx, *dy; /* device copies; dy (8, rows) */
};

static void batch_case_init(struct batch_case *c, enum dtype t, uint64_t rows, uint64_t n)
{
    const uint32_t NB = CUDA_GEMV_MAX_BATCH;
    const uint64_t rb = row_bytes_of(t, n);
    c->w = malloc(rows * rb);
    c->x = malloc(sizeof(float) * n * NB), c->y = malloc(sizeof(float) * rows * NB);
    c->y1 = malloc(sizeof(float) * rows * NB);
    MEMRA_ASSERT(c->w && c->x && c->y && c->y1);
    fill_random(t, c->w, rows * rb);
    for (uint64_t i = 0; i < n * NB; i++)
        c->x[i] = rng_unit() * (i % 61 == 7 ? 300.0f : 1.0f);
    c->dw = cuda_alloc(rows * rb);
    c->dx = cuda_alloc(sizeof(float) * n * NB), c->dy = cuda_alloc(sizeof(float) * rows * NB);
    cuda_upload(g_ctx, c->dw, c->w, rows * rb);
    cuda_upload(g_ctx, c->dx, c->x, sizeof(float) * n * NB);
}

static void batch_case_free(struct batch_case *c)
{
    cuda_free(c->dw), cuda_free(c->dx), cuda_free(c->dy);
    free(c->w), free(c->x), free(c->y), free(c->y1);
}

/* A batch's rows against the same vectors alone: the tensor-core GEMV (mma:
 * Q4_K, Q6_K, K split ks, 0 = by shape) or the dp4a kernels at ksplit ks (1
 * or 4, the engine's cuda_gemv_engine_ksplit; any quantized type). A batch of
 * 8, then every vector alone and batches of 3 and 5 (the mma's other
 * column-tile counts; the dp4a kernels' batch-of-4 instantiation), which must
 * reproduce the batch's bits; x has outliers (every 61st element ×300: the
 * 128-element activation blocks' scale); error against the double reference
 * as check_gemv's. */
static void check_alone(enum dtype t, uint64_t rows, uint64_t n, bool mma, int ks)
{
    const uint32_t NB = CUDA_GEMV_MAX_BATCH;
    struct batch_case c;
    batch_case_init(&c, t, rows, n);
    cuda_ctx_set_gemv_mma(g_ctx, mma ? CUDA_GEMV_MMA_ALL : CUDA_GEMV_MMA_OFF, mma ? ks : 0);
    cuda_fill_nan_f32(g_ctx, c.dy, rows * NB);
    if (mma)
        cuda_gemv(g_ctx, t, c.dw, rows, n, c.dx, NB, c.dy, 1.0f);
    else
        cuda_gemv_variant(g_ctx, t, c.dw, rows, n, c.dx, NB, c.dy, 1.0f, 0, ks, 0);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, c.y, c.dy, sizeof(float) * rows * NB);
    int differ = 0;
    const uint32_t sub[][2] = {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 1}, {0, 3}, {3, 5}};
    for (size_t k = 0; k < sizeof sub / sizeof sub[0]; k++) {
        const uint32_t b0 = sub[k][0], nb = sub[k][1];
        cuda_fill_nan_f32(g_ctx, c.dy, rows * NB);
        if (mma)
            cuda_gemv(g_ctx, t, c.dw, rows, n, c.dx + (uint64_t)b0 * n, nb, c.dy, 1.0f);
        else
            cuda_gemv_variant(g_ctx, t, c.dw, rows, n, c.dx + (uint64_t)b0 * n, nb, c.dy, 1.0f, 0, ks, 0);
        cuda_ctx_sync(g_ctx);
        cuda_download(g_ctx, c.y1, c.dy, sizeof(float) * rows * nb);
        differ += memcmp(c.y1, c.y + (uint64_t)b0 * rows, sizeof(float) * rows * nb) != 0;
    }
    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_Q4K, 0); /* the default */
    double maxref, maxdiff;
    int bad = 0;
    kernel_ref_compare(t, c.w, NULL, rows, n, c.x, NB, 1.0f, c.y, &maxref, &maxdiff, &bad);
    const double rel = maxref > 0 ? maxdiff / maxref : maxdiff;
    const char *kind = mma ? "mma" : "dp4a";
    CHECK_MSG(bad == 0 && rel <= g_tol && differ == 0,
              "%s %s %" PRIu64 "x%" PRIu64 " ks %d: %d not finite, rel %.3g (tol %.0e), %d sub-batches differ", kind,
              dtype_name(t), rows, n, ks, bad, rel, g_tol, differ);
    printf("check %s %s %" PRIu64 "x%" PRIu64 " ks %d batch 8   rel err %.2e, alone / 3 / 5 %s\n", kind,
           dtype_name(t), rows, n, ks, rel, differ ? "DIFFER" : "same bits");
    batch_case_free(&c);
}

/* cuda_fwd_gemv_rope_kv — a lone token's q|k (v apart: cuda_fwd_v_cache) or q|k|v GEMV with RoPE and the KV write
 * in its epilogue — against that GEMV (cuda_gemv_variant at the same K split) then the RoPE kernel
 * (cuda_fwd_qk_rope_kv): q and both cache pools bit-identical, the pools NaN-poisoned first (the token's rows must
 * be written, every other row left alone). Heads nh / nkv of head_dim hd, n = 4096, position 37 through the table
 * {2, 0, 1} (its third block: pool block 1); x with outliers. mma: the tensor-core GEMV (mode ALL: Q4_K, Q6_K) or
 * the dp4a kernels at K split ks; staged: the staged dp4a kernel at ks 1, which declines (must return false and
 * leave q and the pools untouched). */
static void check_rope_epi(enum dtype t, uint32_t nh, uint32_t nkv, uint32_t hd, bool with_v, bool kv_bf16, bool mma,
                           int ks, bool staged)
{
    const uint64_t n = 4096, qd = (uint64_t)nh * hd, kvd = (uint64_t)nkv * hd, rows = qd + kvd * (with_v ? 2 : 1);
    const uint64_t rb = row_bytes_of(t, n), pool = 3 * CUDA_KV_BLOCK * kvd; /* elements of a pool */
    const uint32_t meta[5] = {37, 0, 2, 0, 1};                              /* pos, table offset, table */
    uint8_t *w = malloc(rows * rb);
    float *x = malloc(4 * n), *vv = malloc(4 * kvd), *inv = malloc(4 * hd / 2);
    MEMRA_ASSERT(w && x && vv && inv);
    fill_random(t, w, rows * rb);
    for (uint64_t i = 0; i < n; i++)
        x[i] = rng_unit() * (i % 61 == 7 ? 300.0f : 1.0f);
    for (uint64_t i = 0; i < kvd; i++)
        vv[i] = rng_unit();
    for (uint32_t i = 0; i < hd / 2; i++)
        inv[i] = powf(500000.0f, -2.0f * (float)i / (float)hd);
    void *dw = cuda_alloc(rows * rb);
    float *dx = cuda_alloc(4 * n), *dy = cuda_alloc(4 * rows), *dq = cuda_alloc(4 * qd), *dv = cuda_alloc(4 * kvd);
    float *dinv = cuda_alloc(4 * hd / 2), *dk = cuda_alloc(4 * pool), *dvp = cuda_alloc(4 * pool);
    uint32_t *dmeta = cuda_alloc(sizeof meta);
    cuda_upload(g_ctx, dw, w, rows * rb), cuda_upload(g_ctx, dx, x, 4 * n), cuda_upload(g_ctx, dv, vv, 4 * kvd);
    cuda_upload(g_ctx, dinv, inv, 4 * hd / 2), cuda_upload(g_ctx, dmeta, meta, sizeof meta);
    const struct cuda_kv_view kv = {.k = dk, .v = dvp, .blocks = dmeta + 2, .tok_table = dmeta + 1, .bf16 = kv_bf16};
    const struct cuda_attn_shape sh = {nh, nkv, hd};
    cuda_ctx_set_gemv_mma(g_ctx, mma ? CUDA_GEMV_MMA_ALL : CUDA_GEMV_MMA_OFF, 0);
    cuda_ctx_set_gemv_staged(g_ctx, staged);
    float *got[2][3];
    bool taken = false;
    for (int epi = 0; epi < 2; epi++) {
        cuda_fill_nan_f32(g_ctx, dq, qd), cuda_fill_nan_f32(g_ctx, dk, pool), cuda_fill_nan_f32(g_ctx, dvp, pool);
        if (epi) {
            const struct cuda_rope_epi rp = {dq, (uint32_t)qd, (uint32_t)kvd, hd, dmeta, dinv, kv, true};
            cuda_gemv_prep_x(g_ctx, dx, n, 1);
            taken = cuda_fwd_gemv_rope_kv(g_ctx, t, dw, rows, n, 1.0f, ks, &rp);
            if (taken && !with_v)
                cuda_fwd_v_cache(g_ctx, dv, dmeta, kv, (uint32_t)kvd);
        } else {
            cuda_gemv_variant(g_ctx, t, dw, rows, n, dx, 1, dy, 1.0f, 0, ks, 0);
            cuda_fwd_qk_rope_kv(g_ctx, dq, dy, (uint32_t)rows, dy + qd, with_v ? dy + qd + kvd : dv, (uint32_t)rows,
                                1, dmeta, NULL, NULL, NULL, NULL, NULL, dinv, false, 1e-6f, sh, kv);
        }
        cuda_ctx_sync(g_ctx);
        got[epi][0] = malloc(4 * qd), got[epi][1] = malloc(4 * pool), got[epi][2] = malloc(4 * pool);
        MEMRA_ASSERT(got[epi][0] && got[epi][1] && got[epi][2]);
        cuda_download(g_ctx, got[epi][0], dq, 4 * qd);
        cuda_download(g_ctx, got[epi][1], dk, 4 * pool);
        cuda_download(g_ctx, got[epi][2], dvp, 4 * pool);
    }
    cuda_ctx_set_gemv_staged(g_ctx, true);
    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_Q4K, 0); /* the defaults */
    bool ok;
    if (staged) { /* declined: nothing written (the poison's bits everywhere) */
        bool untouched = true;
        for (int k = 0; k < 3; k++) {
            const uint64_t cnt = k ? pool : qd;
            for (uint64_t i = 0; i < cnt; i++)
                untouched = untouched && isnan(got[1][k][i]);
        }
        ok = !taken && untouched;
    } else {
        ok = taken && memcmp(got[0][0], got[1][0], 4 * qd) == 0 && memcmp(got[0][1], got[1][1], 4 * pool) == 0 &&
             memcmp(got[0][2], got[1][2], 4 * pool) == 0;
    }
    const char *how = mma ? "mma" : staged ? "staged" : "dp4a";
    CHECK_MSG(ok, "rope epilogue %s %s q|k%s %u/%u hd %u ks %d%s: %s", how, dtype_name(t), with_v ? "|v" : "", nh,
              nkv, hd, ks, kv_bf16 ? " bf16 cache" : "",
              staged ? (taken ? "taken by the staged kernel" : "wrote while declining")
                     : (taken ? "differs from the GEMV + RoPE kernel" : "declined"));
    printf("check rope epilogue %-6s %-5s q|k%s %2u/%u hd %3u ks %d %s cache: %s\n", how, dtype_name(t),
           with_v ? "|v" : "  ", nh, nkv, hd, ks, kv_bf16 ? "bf16" : "f32 ",
           staged ? (ok ? "declined, nothing written" : "WRONG") : ok ? "same bits as GEMV + RoPE" : "DIFFER");
    for (int e = 0; e < 2; e++)
        for (int k = 0; k < 3; k++)
            free(got[e][k]);
    void *dev[] = {dw, dx, dy, dq, dv, dinv, dk, dvp, dmeta};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        cuda_free(dev[i]);
    free(w), free(x), free(vv), free(inv);
}

/* The RoPE epilogue's cases: the 8B shape's q|k (Q4_K_M's, v a Q6_K apart) and q|k|v on the tensor cores and on
 * the dp4a kernels (Q8_0's; 4 rows a warp), a small shape (2 rows a warp), both caches; the staged kernel declines. */
static void check_rope_epis(void)
{
    for (int bf = 0; bf < 2; bf++) {
        check_rope_epi(DTYPE_Q4_K, 32, 8, 128, false, bf, true, 0, false);
        check_rope_epi(DTYPE_Q4_K, 32, 8, 128, true, bf, true, 0, false);
        check_rope_epi(DTYPE_Q6_K, 4, 2, 64, false, bf, true, 4, false);
        check_rope_epi(DTYPE_Q8_0, 32, 8, 128, true, bf, false, 4, false);
        check_rope_epi(DTYPE_Q8_0, 4, 2, 64, false, bf, false, 4, false);
        check_rope_epi(DTYPE_Q5_K, 32, 8, 128, true, bf, false, 1, false);
    }
    check_rope_epi(DTYPE_Q8_0, 32, 8, 128, true, true, false, 1, true);
}

/* The tensor-core GEMV's two grids (cuda_ctx_set_gemv_mma_grid): one block a
 * tile group, or the resident blocks looping over the groups with their rings
 * running on. Batches 1, 3 and 8 in both must give the same bits, and the
 * resident one's batch of 8 the reference's values; shapes with more groups
 * than fit the SMs at once (28672 rows: 1792 groups at K split 4), a partial
 * last group, and 8 warps a tile. */
static void check_grid(enum dtype t, uint64_t rows, uint64_t n, int ks)
{
    const uint32_t NB = CUDA_GEMV_MAX_BATCH;
    struct batch_case c;
    batch_case_init(&c, t, rows, n);
    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_ALL, ks);
    int differ = 0;
    const uint32_t nbs[] = {1, 3, 8};
    for (size_t k = 0; k < sizeof nbs / sizeof nbs[0]; k++) {
        for (int resident = 0; resident < 2; resident++) {
            cuda_ctx_set_gemv_mma_grid(g_ctx, resident ? CUDA_GEMV_MMA_GRID_RESIDENT : CUDA_GEMV_MMA_GRID_TILES);
            cuda_fill_nan_f32(g_ctx, c.dy, rows * NB);
            cuda_gemv(g_ctx, t, c.dw, rows, n, c.dx, nbs[k], c.dy, 1.0f);
            cuda_ctx_sync(g_ctx);
            cuda_download(g_ctx, resident ? c.y1 : c.y, c.dy, sizeof(float) * rows * nbs[k]);
        }
        differ += memcmp(c.y, c.y1, sizeof(float) * rows * nbs[k]) != 0;
    }
    cuda_ctx_set_gemv_mma_grid(g_ctx, CUDA_GEMV_MMA_GRID_AUTO);
    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_Q4K, 0); /* the default */
    double maxref, maxdiff;
    int bad = 0;
    kernel_ref_compare(t, c.w, NULL, rows, n, c.x, NB, 1.0f, c.y1, &maxref, &maxdiff, &bad);
    const double rel = maxref > 0 ? maxdiff / maxref : maxdiff;
    CHECK_MSG(bad == 0 && rel <= g_tol && differ == 0,
              "mma grid %s %" PRIu64 "x%" PRIu64 " ks %d: %d not finite, rel %.3g (tol %.0e), %d batches differ",
              dtype_name(t), rows, n, ks, bad, rel, g_tol, differ);
    printf("check mma grid %s %" PRIu64 "x%" PRIu64 " ks %d   rel err %.2e, resident = tiles %s\n", dtype_name(t),
           rows, n, ks, rel, differ ? "DIFFER" : "same bits");
    batch_case_free(&c);
}

static void check_type(enum dtype t)
{
    const uint64_t qk = dtype_info(t)->block_size;
    /* one full 4096-column tile; multi-tile with a partial last tile; an odd row length */
    const uint64_t n_odd = qk == 1 ? (t == DTYPE_F8_E4M3 ? 4112 : 4104) : qk == 32 ? 4128 : 4352;
    const int rpbs[] = {1, 2, 4};
    for (int k = 0; k < 3; k++)
        for (int ks = 1; ks <= (is_quant_block(t) ? 4 : 1); ks += 3) {
            check_gemv(t, 257, 4096, 1, rpbs[k], ks, false);
            check_gemv(t, 67, 14336, 1, rpbs[k], ks, false);
            check_gemv(t, 13, n_odd, 1, rpbs[k], ks, false);
        }
    if (is_quant_block(t))
        check_gemv(t, 300, 4096, 1, 0, 0, true);
    for (uint32_t b = 2; b <= CUDA_GEMV_MAX_BATCH; b += 3) /* 2, 5, 8 */
        check_gemv(t, 97, 4096, b, 0, 0, false);
    check_gemv(t, 61, 14336, 3, 0, 0, false);
    check_gemv(t, 29, n_odd, 8, 0, 0, is_quant_block(t));
}

static void check_rmsnorm(uint32_t nrows, uint32_t n, bool residual)
{
    const size_t cnt = (size_t)nrows * n;
    float *x = malloc(4 * cnt), *res = malloc(4 * cnt), *w = malloc(4 * (size_t)n), *out = malloc(4 * cnt),
          *res_out = malloc(4 * cnt);
    MEMRA_ASSERT(x && res && w && out && res_out);
    for (size_t i = 0; i < cnt; i++)
        x[i] = 3.0f * rng_unit(), res[i] = rng_unit();
    for (uint32_t i = 0; i < n; i++)
        w[i] = rng_unit();
    float *dx = cuda_alloc(4 * cnt), *dres = cuda_alloc(4 * cnt), *dw = cuda_alloc(4 * (size_t)n),
          *dout = cuda_alloc(4 * cnt);
    cuda_upload(g_ctx, dx, x, 4 * cnt);
    cuda_upload(g_ctx, dres, res, 4 * cnt);
    cuda_upload(g_ctx, dw, w, 4 * (size_t)n);
    cuda_fill_nan_f32(g_ctx, dout, cnt);
    const float eps = 1e-5f;
    cuda_rmsnorm(g_ctx, dx, residual ? dres : NULL, dw, dout, nrows, n, eps);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, out, dout, 4 * cnt);
    cuda_download(g_ctx, res_out, dres, 4 * cnt);
    double maxdiff = 0, maxref = 0, maxres = 0;
    int bad = 0;
    for (uint32_t r = 0; r < nrows; r++) {
        double ss = 0;
        for (uint32_t i = 0; i < n; i++) {
            double v = (double)x[(size_t)r * n + i] + (residual ? (double)res[(size_t)r * n + i] : 0.0);
            ss += v * v;
            if (residual)
                maxres = fmax(maxres, fabs(res_out[(size_t)r * n + i] - (float)v));
        }
        const double inv = 1.0 / sqrt(ss / n + eps);
        for (uint32_t i = 0; i < n; i++) {
            double v = (double)x[(size_t)r * n + i] + (residual ? (double)res[(size_t)r * n + i] : 0.0);
            double ref = v * inv * w[i];
            double got = out[(size_t)r * n + i];
            if (!isfinite(got))
                bad++;
            else
                maxdiff = fmax(maxdiff, fabs(got - ref));
            maxref = fmax(maxref, fabs(ref));
        }
    }
    const double rel = maxdiff / maxref;
    CHECK_MSG(bad == 0 && rel <= TOL && maxres == 0, "rmsnorm %ux%u residual %d: %d bad, rel %.3g, residual err %.3g",
              nrows, n, residual, bad, rel, maxres);
    printf("check rmsnorm %ux%u residual %d              rel err %.2e\n", nrows, n, residual, rel);
    cuda_free(dx), cuda_free(dres), cuda_free(dw), cuda_free(dout);
    free(x), free(res), free(w), free(out), free(res_out);
}

static void check_swiglu(uint32_t rows, uint32_t n)
{
    const size_t cnt = (size_t)rows * n;
    float *gu = malloc(8 * cnt), *out = malloc(4 * cnt);
    MEMRA_ASSERT(gu && out);
    for (size_t i = 0; i < 2 * cnt; i++)
        gu[i] = 8.0f * rng_unit();
    float *dgu = cuda_alloc(8 * cnt), *dout = cuda_alloc(4 * cnt);
    cuda_upload(g_ctx, dgu, gu, 8 * cnt);
    cuda_fill_nan_f32(g_ctx, dout, cnt);
    cuda_swiglu(g_ctx, dgu, dout, rows, n);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, out, dout, 4 * cnt);
    double maxdiff = 0, maxref = 0;
    int bad = 0;
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t i = 0; i < n; i++) {
            double g = gu[(size_t)r * 2 * n + i], u = gu[(size_t)r * 2 * n + n + i];
            double ref = g / (1.0 + exp(-g)) * u, got = out[(size_t)r * n + i];
            if (!isfinite(got))
                bad++;
            else
                maxdiff = fmax(maxdiff, fabs(got - ref));
            maxref = fmax(maxref, fabs(ref));
        }
    const double rel = maxdiff / maxref;
    CHECK_MSG(bad == 0 && rel <= TOL, "swiglu %ux%u: %d bad, rel %.3g", rows, n, bad, rel);
    printf("check swiglu %ux%u                          rel err %.2e\n", rows, n, rel);
    cuda_free(dgu), cuda_free(dout);
    free(gu), free(out);
}

/* A fused producer (rmsnorm_prep / swiglu_prep) followed by a quantized GEMV
 * with CUDA_GEMV_X_PREPARED must give exactly what cuda_gemv on the
 * producer's f32 output gives (same prepared bytes), and match the CPU
 * reference on that output. */
static void check_fused(enum dtype t, bool swiglu, uint32_t nvec, uint32_t n, uint64_t rows)
{
    const uint64_t rb = row_bytes_of(t, n);
    const size_t in_cnt = (size_t)nvec * n * (swiglu ? 2 : 1);
    uint8_t *w = malloc(rows * rb);
    float *in = malloc(4 * in_cnt), *res = malloc(4 * (size_t)nvec * n), *nw = malloc(4 * (size_t)n);
    float *act = malloc(4 * (size_t)nvec * n), *y1 = malloc(4 * rows * nvec), *y2 = malloc(4 * rows * nvec);
    MEMRA_ASSERT(w && in && res && nw && act && y1 && y2);
    fill_random(t, w, rows * rb);
    for (size_t i = 0; i < in_cnt; i++)
        in[i] = 3.0f * rng_unit();
    for (size_t i = 0; i < (size_t)nvec * n; i++)
        res[i] = rng_unit();
    for (uint32_t i = 0; i < n; i++)
        nw[i] = rng_unit();
    void *dw = cuda_alloc(rows * rb);
    float *din = cuda_alloc(4 * in_cnt), *dres = cuda_alloc(4 * (size_t)nvec * n), *dnw = cuda_alloc(4 * (size_t)n);
    float *dact = cuda_alloc(4 * (size_t)nvec * n), *dy = cuda_alloc(4 * rows * nvec);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, din, in, 4 * in_cnt);
    cuda_upload(g_ctx, dres, res, 4 * (size_t)nvec * n);
    cuda_upload(g_ctx, dnw, nw, 4 * (size_t)n);
    cuda_fill_nan_f32(g_ctx, dact, (size_t)nvec * n);
    cuda_fill_nan_f32(g_ctx, dy, rows * nvec);
    if (swiglu)
        cuda_swiglu_prep(g_ctx, din, dact, nvec, n);
    else
        cuda_rmsnorm_prep(g_ctx, din, dres, dnw, dact, nvec, n, 1e-5f);
    cuda_gemv_variant(g_ctx, t, dw, rows, n, dact, nvec, dy, 1.0f, 0, 0, CUDA_GEMV_X_PREPARED);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y1, dy, 4 * rows * nvec);
    cuda_download(g_ctx, act, dact, 4 * (size_t)nvec * n);
    cuda_fill_nan_f32(g_ctx, dy, rows * nvec);
    cuda_gemv(g_ctx, t, dw, rows, n, dact, nvec, dy, 1.0f); /* its own prep of the same f32 output */
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y2, dy, 4 * rows * nvec);
    double maxref, maxdiff;
    int bad = 0;
    kernel_ref_compare(t, w, NULL, rows, n, act, nvec, 1.0f, y1, &maxref, &maxdiff, &bad);
    const double rel = maxdiff / maxref;
    const bool same = memcmp(y1, y2, 4 * rows * nvec) == 0;
    CHECK_MSG(bad == 0 && rel <= TOL && same, "%s_prep + %s %" PRIu64 "x%u batch %u: %d bad, rel %.3g, %s",
              swiglu ? "swiglu" : "rmsnorm", dtype_name(t), rows, n, nvec, bad, rel,
              same ? "same as cuda_gemv" : "DIFFERS from cuda_gemv on the same x");
    printf("check %s_prep + %s %" PRIu64 "x%u batch %u   rel err %.2e, %s\n", swiglu ? "swiglu" : "rmsnorm",
           dtype_name(t), rows, n, nvec, rel, same ? "bit-identical to cuda_gemv" : "DIFFERS");
    cuda_free(dw), cuda_free(din), cuda_free(dres), cuda_free(dnw), cuda_free(dact), cuda_free(dy);
    free(w), free(in), free(res), free(nw), free(act), free(y1), free(y2);
}

/* cuda_glu_prep (the decode path's activation over separate gate / up GEMV
 * outputs, in place) against the CPU formula on random inputs, and the
 * quantized GEMV reading its prepared x with CUDA_GEMV_X_PREPARED against
 * cuda_gemv on the same f32 output (bit-identical) and the f64 reference. */
static void check_glu_split(enum dtype t, bool gelu, uint32_t nvec, uint32_t n, uint64_t rows)
{
    const uint64_t rb = row_bytes_of(t, n);
    const size_t cnt = (size_t)nvec * n;
    uint8_t *w = malloc(rows * rb);
    float *gu = malloc(8 * cnt), *act = malloc(4 * cnt), *y1 = malloc(4 * rows * nvec), *y2 = malloc(4 * rows * nvec);
    MEMRA_ASSERT(w && gu && act && y1 && y2);
    fill_random(t, w, rows * rb);
    for (size_t i = 0; i < 2 * cnt; i++)
        gu[i] = 4.0f * rng_unit();
    void *dw = cuda_alloc(rows * rb);
    float *dgu = cuda_alloc(8 * cnt), *dy = cuda_alloc(4 * rows * nvec);
    cuda_upload(g_ctx, dw, w, rows * rb);
    cuda_upload(g_ctx, dgu, gu, 8 * cnt);
    cuda_fill_nan_f32(g_ctx, dy, rows * nvec);
    cuda_glu_prep(g_ctx, dgu, dgu + cnt, nvec, n, gelu);
    cuda_gemv_variant(g_ctx, t, dw, rows, n, dgu, nvec, dy, 1.0f, 0, 1, CUDA_GEMV_X_PREPARED);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y1, dy, 4 * rows * nvec);
    cuda_download(g_ctx, act, dgu, 4 * cnt);
    cuda_fill_nan_f32(g_ctx, dy, rows * nvec);
    cuda_gemv_variant(g_ctx, t, dw, rows, n, dgu, nvec, dy, 1.0f, 0, 1, 0); /* its own prep of the same x */
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, y2, dy, 4 * rows * nvec);
    double amax = 0, adiff = 0;
    int bad = 0;
    for (size_t i = 0; i < cnt; i++) {
        const double g = gu[i], u = gu[cnt + i];
        const double ref = gelu ? 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * u
                                : g / (1.0 + exp(-g)) * u;
        amax = fmax(amax, fabs(ref));
        if (!isfinite(act[i]))
            bad++;
        else
            adiff = fmax(adiff, fabs(act[i] - ref));
    }
    double maxref, maxdiff;
    kernel_ref_compare(t, w, NULL, rows, n, act, nvec, 1.0f, y1, &maxref, &maxdiff, &bad);
    const double arel = adiff / amax, rel = maxdiff / maxref;
    const bool same = memcmp(y1, y2, 4 * rows * nvec) == 0;
    CHECK_MSG(bad == 0 && arel <= TOL && rel <= TOL && same,
              "glu_prep(%s) + %s %" PRIu64 "x%u batch %u: %d bad, act rel %.3g, gemv rel %.3g, %s",
              gelu ? "gelu" : "silu", dtype_name(t), rows, n, nvec, bad, arel, rel,
              same ? "same as cuda_gemv" : "DIFFERS from cuda_gemv on the same x");
    printf("check glu_prep(%s) + %s %" PRIu64 "x%u batch %u   act rel %.2e, gemv rel %.2e, %s\n",
           gelu ? "gelu" : "silu", dtype_name(t), rows, n, nvec, arel, rel, same ? "bit-identical" : "DIFFERS");
    cuda_free(dw), cuda_free(dgu), cuda_free(dy);
    free(w), free(gu), free(act), free(y1), free(y2);
}

/* cuda_embed_gather against quant_dequantize_row (· scale, as model_embed_row
 * computes it) on a random table and random token ids (first and last row
 * included), output poisoned first: must be bit-identical. */
static void check_embed(enum dtype t, uint32_t vocab, uint32_t dim, uint32_t T, float scale)
{
    const uint64_t rb = row_bytes_of(t, dim);
    uint8_t *w = malloc(vocab * rb);
    int32_t *tok = malloc(4 * (size_t)T);
    float *x = malloc(4 * (size_t)T * dim), *ref = malloc(4 * (size_t)dim);
    MEMRA_ASSERT(w && tok && x && ref);
    fill_random(t, w, vocab * rb);
    for (uint32_t i = 0; i < T; i++)
        tok[i] = i == 0 ? 0 : i == 1 ? (int32_t)vocab - 1 : (int32_t)(rng_u64() % vocab);
    void *dw = cuda_alloc(vocab * rb);
    int32_t *dtok = cuda_alloc(4 * (size_t)T);
    float *dx = cuda_alloc(4 * (size_t)T * dim);
    cuda_upload(g_ctx, dw, w, vocab * rb);
    cuda_upload(g_ctx, dtok, tok, 4 * (size_t)T);
    cuda_fill_nan_f32(g_ctx, dx, (size_t)T * dim);
    cuda_embed_gather(g_ctx, t, dw, rb, dim, dtok, T, scale, dx);
    cuda_ctx_sync(g_ctx);
    cuda_download(g_ctx, x, dx, 4 * (size_t)T * dim);
    uint64_t differ = 0;
    for (uint32_t i = 0; i < T; i++) {
        MEMRA_ASSERT(quant_dequantize_row(t, w + (uint64_t)tok[i] * rb, ref, dim) == 0);
        for (uint32_t c = 0; c < dim; c++) {
            const float r = scale != 1.0f ? ref[c] * scale : ref[c];
            differ += memcmp(&r, &x[(size_t)i * dim + c], 4) != 0;
        }
    }
    CHECK_MSG(differ == 0, "embed %s %ux%u T %u scale %g: %" PRIu64 " elements differ from the CPU", dtype_name(t),
              vocab, dim, T, scale, differ);
    printf("check embed %-6s %ux%u T %u scale %g   %s\n", dtype_name(t), vocab, dim, T, scale,
           differ ? "DIFFERS" : "bit-identical to the CPU");
    cuda_free(dw), cuda_free(dtok), cuda_free(dx);
    free(w), free(tok), free(x), free(ref);
}

/* ---- timing ---------------------------------------------------------------- */

struct bench {
    enum dtype t;
    uint64_t rows, n, bytes; /* bytes: one weight copy */
    int ncopies;
    void **w;   /* ncopies device weight copies */
    float *x;   /* (8, n) */
    uint16_t *xb; /* (n) bf16, cuBLAS */
    float *y;   /* (8, rows) */
    uint32_t batch;
    int rpb, ks;    /* variant; rpb -1: cuBLAS */
    unsigned flags; /* CUDA_GEMV_X_PREPARED: time the GEMV alone */
    float *bs;      /* F8_E4M3: 128 × 128 block scales (cuda_gemv_bs), or NULL */
};

static void bench_launch(struct bench *b, int copy)
{
    if (b->rpb < 0)
        cuda_blas_gemv_bf16(g_ctx, b->w[copy], b->rows, b->n, b->xb, b->y);
    else if (b->bs)
        cuda_gemv_bs(g_ctx, b->w[copy], b->bs, b->rows, b->n, b->x, b->batch, b->y, 1.0f);
    else
        cuda_gemv_variant(g_ctx, b->t, b->w[copy], b->rows, b->n, b->x, b->batch, b->y, 1.0f, b->rpb, b->ks, b->flags);
}


static void bench_launch_i(void *arg, int i)
{
    struct bench *b = arg;
    bench_launch(b, i % b->ncopies);
}

/* Median µs per launch (kernel_time.h): a graph of max(24, copies) launches
 * rotating over the weight copies. */
static double bench_time(struct bench *b)
{
    const int L = b->ncopies > 24 ? b->ncopies : 24;
    return kernel_time_graph(g_ctx, bench_launch_i, b, b->ncopies < 4 ? 4 : b->ncopies, L);
}

static void bench_alloc(struct bench *b, enum dtype t, uint64_t rows, uint64_t n)
{
    memset(b, 0, sizeof *b);
    b->t = t, b->rows = rows, b->n = n, b->batch = 1;
    b->bytes = rows * row_bytes_of(t, n);
    const double need = 4.0 * (double)cuda_ctx_l2_bytes(g_ctx);
    int c = (int)ceil(need / (double)b->bytes);
    b->ncopies = c < 2 ? 2 : c > 256 ? 256 : c;
    b->w = calloc((size_t)b->ncopies, sizeof *b->w);
    /* random valid data: a pattern of up to 64 MiB, tiled (the content only has
     * to be realistic; the cache sees addresses) */
    const size_t pat = b->bytes < (64u << 20) ? b->bytes : (size_t)(64u << 20) / dtype_info(t)->type_size * dtype_info(t)->type_size;
    uint8_t *h = malloc(b->bytes), *p = malloc(pat);
    MEMRA_ASSERT(b->w && h && p);
    fill_random(t, p, pat);
    for (size_t o = 0; o < b->bytes; o += pat)
        memcpy(h + o, p, b->bytes - o < pat ? b->bytes - o : pat);
    for (int i = 0; i < b->ncopies; i++) {
        b->w[i] = cuda_alloc(b->bytes);
        cuda_upload(g_ctx, b->w[i], h, b->bytes);
    }
    float *x = malloc(sizeof(float) * n * CUDA_GEMV_MAX_BATCH);
    uint16_t *xb = malloc(2 * n);
    MEMRA_ASSERT(x && xb);
    for (uint64_t i = 0; i < n * CUDA_GEMV_MAX_BATCH; i++)
        x[i] = rng_unit();
    for (uint64_t i = 0; i < n; i++)
        xb[i] = quant_f32_to_bf16(x[i]);
    b->x = cuda_alloc(sizeof(float) * n * CUDA_GEMV_MAX_BATCH);
    b->xb = cuda_alloc(2 * n);
    b->y = cuda_alloc(sizeof(float) * rows * CUDA_GEMV_MAX_BATCH);
    cuda_upload(g_ctx, b->x, x, sizeof(float) * n * CUDA_GEMV_MAX_BATCH);
    cuda_upload(g_ctx, b->xb, xb, 2 * n);
    free(h), free(p), free(x), free(xb);
}

static void bench_free(struct bench *b)
{
    for (int i = 0; i < b->ncopies; i++)
        cuda_free(b->w[i]);
    free(b->w);
    cuda_free(b->x), cuda_free(b->xb), cuda_free(b->y);
}

static const struct shape {
    const char *name;
    uint64_t rows, n;
    bool engine; /* one of a decode step's launches (o, fused q|k|v, fused gate|up, down, lm_head): bench_ks' sum */
} shapes[] = {
    {"q/o", 4096, 4096, true},       {"k/v", 1024, 4096, false},     {"qkv", 6144, 4096, true},
    {"gate/up", 14336, 4096, false}, {"gate+up", 28672, 4096, true}, {"down", 4096, 14336, true},
    {"lm_head", 128256, 4096, true},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static const enum dtype types[] = {DTYPE_BF16, DTYPE_F16,  DTYPE_Q8_0, DTYPE_Q4_K,   DTYPE_Q6_K,
                                   DTYPE_Q4_0, DTYPE_Q4_1,  DTYPE_Q5_K, DTYPE_IQ4_XS, DTYPE_F8_E4M3,
                                   DTYPE_Q5_0, DTYPE_Q5_1,  DTYPE_IQ4_NL, DTYPE_Q2_K, DTYPE_Q3_K};
#define NTYPES (sizeof types / sizeof types[0])

static double pct(double gbs) { return 100.0 * gbs / BW_REF_GBS; }

static void bench_copy(void)
{
    const size_t bytes = (size_t)1 << 30;
    void *a = cuda_alloc(bytes), *b = cuda_alloc(bytes);
    cuda_fill_nan_f32(g_ctx, a, bytes / 4);
    struct cuda_timer *tm = cuda_timer_new();
    double us[11];
    for (int r = 0; r < 12; r++) {
        cuda_timer_start(g_ctx, tm);
        cuda_copy_d2d(g_ctx, b, a, bytes);
        cuda_timer_stop(g_ctx, tm);
        double t = 1000.0 * cuda_timer_ms(tm);
        if (r > 0)
            us[r - 1] = t; /* first one is the warm-up */
    }
    qsort(us, 11, sizeof us[0], kernel_time_cmp);
    printf("d2d copy 1 GiB: %.1f us median, %.0f GB/s (read + write)\n", us[5], 2.0 * bytes / us[5] / 1e3);
    cuda_timer_free(tm);
    cuda_free(a), cuda_free(b);
}

/* Q4_K and Q6_K, x prepared: the tensor-core GEMV at each K split (0 = the
 * rule) vs the staged dp4a kernel at the engine's launch shape; then batches.
 * x16: with bf16 activations (x prepared in 16 bits: the two-plane forms). */
static void bench_mma(bool x16)
{
    cuda_ctx_set_act_bf16(g_ctx, x16);
    const enum dtype mt[] = {DTYPE_Q4_K, DTYPE_Q6_K};
    cuda_ctx_set_gemv_mma_grid(g_ctx, CUDA_GEMV_MMA_GRID_TILES); /* the mma columns one block a group; then resident */
    printf("\n## Quantized GEMV: int8 tensor cores (gemv_mma.cu) vs the staged dp4a kernel, x prepared, us (same run)\n\n"
           "| type | shape | MB | staged | mma rule | mma ks1 | mma ks2 | mma ks4 | mma ks8 | ratio staged/rule "
           "| %%BW rule | rule, resident grid | %%BW |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof mt / sizeof mt[0]; k++)
        for (size_t s = 0; s < NSHAPES; s++) {
            struct bench b;
            bench_alloc(&b, mt[k], shapes[s].rows, shapes[s].n);
            cuda_gemv_prep_x(g_ctx, b.x, b.n, 1);
            b.flags = CUDA_GEMV_X_PREPARED, b.rpb = 0, b.ks = 1;
            cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_OFF, 0);
            const double st = bench_time(&b);
            double m[5];
            for (int i = 0; i < 5; i++) {
                cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_ALL, i == 0 ? 0 : 1 << (i - 1));
                m[i] = bench_time(&b);
            }
            cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_ALL, 0);
            cuda_ctx_set_gemv_mma_grid(g_ctx, CUDA_GEMV_MMA_GRID_RESIDENT);
            const double mr = bench_time(&b);
            cuda_ctx_set_gemv_mma_grid(g_ctx, CUDA_GEMV_MMA_GRID_TILES);
            printf("| %s | %s | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.2f | %.1f |\n",
                   dtype_name(mt[k]), shapes[s].name, b.bytes / 1e6, st, m[0], m[1], m[2], m[3], m[4], st / m[0],
                   pct(b.bytes / m[0] / 1e3), mr, pct(b.bytes / mr / 1e3));
            if (s == 3) {
                for (uint32_t nb = 2; nb <= 8; nb *= 2) {
                    cuda_gemv_prep_x(g_ctx, b.x, b.n, nb);
                    b.batch = nb;
                    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_OFF, 0);
                    const double st2 = bench_time(&b);
                    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_ALL, 0);
                    const double mm = bench_time(&b);
                    cuda_ctx_set_gemv_mma_grid(g_ctx, CUDA_GEMV_MMA_GRID_RESIDENT);
                    const double mr2 = bench_time(&b);
                    cuda_ctx_set_gemv_mma_grid(g_ctx, CUDA_GEMV_MMA_GRID_TILES);
                    printf("| %s | gate/up batch %u | %.1f | %.2f | %.2f | | | | | %.2f | | %.2f | |\n",
                           dtype_name(mt[k]), nb, b.bytes / 1e6, st2, mm, st2 / mm, mr2);
                }
            }
            fflush(stdout);
            bench_free(&b);
        }
    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_Q4K, 0); /* the defaults */
    cuda_ctx_set_gemv_mma_grid(g_ctx, CUDA_GEMV_MMA_GRID_AUTO);
    cuda_ctx_set_act_bf16(g_ctx, false);
}

/* The dp4a types at the engine's K splits (MEMRA_GEMV_KSPLIT 1 / 4: the same
 * split at every batch size), x prepared: µs a launch (%BW of the weight
 * bytes) at batches 1, 2, 4, 8, ks1 / ks4, and for Q4_K / Q6_K the tensor-core
 * kernel beside (what MEMRA_GEMV_MMA would run instead); then each type's sum
 * over one layer's launches (q|k|v, o, gate|up, down) and lm_head. */
static void bench_ks(void)
{
    const enum dtype kt[] = {DTYPE_Q8_0, DTYPE_Q6_K, DTYPE_Q4_K, DTYPE_Q4_0, DTYPE_Q5_K, DTYPE_IQ4_XS};
    const uint32_t nbs[] = {1, 2, 4, 8};
    printf("\n## dp4a GEMV at K split 1 (staged, the engine's today) and 4 (register), x prepared, us (%%BW)\n\n"
           "| type | shape | MB | batch | ks1 | ks4 | ks1/ks4 | mma (Q4_K, Q6_K) |\n|---|---|---|---|---|---|---|---|\n");
    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_OFF, 0);
    double sum[sizeof kt / sizeof kt[0]][4][2] = {{{0}}};
    for (size_t k = 0; k < sizeof kt / sizeof kt[0]; k++) {
        for (size_t s = 0; s < NSHAPES; s++) {
            struct bench b;
            bench_alloc(&b, kt[k], shapes[s].rows, shapes[s].n);
            b.flags = CUDA_GEMV_X_PREPARED, b.rpb = 0;
            for (size_t i = 0; i < 4; i++) {
                b.batch = nbs[i];
                cuda_gemv_prep_x(g_ctx, b.x, b.n, b.batch);
                double us[2];
                for (int j = 0; j < 2; j++) {
                    b.ks = j ? 4 : 1;
                    us[j] = bench_time(&b);
                    if (shapes[s].engine)
                        sum[k][i][j] += us[j];
                }
                char mm[48] = "-";
                if (kt[k] == DTYPE_Q4_K || kt[k] == DTYPE_Q6_K) { /* the tensor-core kernel, its K split by shape */
                    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_ALL, 0);
                    const double m = bench_time(&b);
                    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_OFF, 0);
                    snprintf(mm, sizeof mm, "%.2f (%.0f %%)", m, pct(b.bytes / m / 1e3));
                }
                printf("| %s | %s | %.1f | %u | %.2f (%.0f %%) | %.2f (%.0f %%) | %.3f | %s |\n", dtype_name(kt[k]),
                       shapes[s].name, b.bytes / 1e6, b.batch, us[0], pct(b.bytes / us[0] / 1e3), us[1],
                       pct(b.bytes / us[1] / 1e3), us[0] / us[1], mm);
            }
            fflush(stdout);
            bench_free(&b);
        }
    }
    printf("\n| type | batch | a layer + lm_head, ks1 us | ks4 us | ks1/ks4 |\n|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof kt / sizeof kt[0]; k++)
        for (size_t i = 0; i < 4; i++)
            printf("| %s | %u | %.2f | %.2f | %.3f |\n", dtype_name(kt[k]), nbs[i], sum[k][i][0], sum[k][i][1],
                   sum[k][i][0] / sum[k][i][1]);
    cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_Q4K, 0); /* the default */
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a CUDA_CHECK abort must not swallow the lines before it */
    char err[256];
    g_ctx = cuda_ctx_init(0, err, sizeof err);
    if (!g_ctx) {
        fprintf(stderr, "kernel_gemv: %s\n", err);
        return 2;
    }
    printf("device: %s, %d SMs, L2 %zu MB, %zu GiB\n", cuda_ctx_device_name(g_ctx), cuda_ctx_sm_count(g_ctx),
           cuda_ctx_l2_bytes(g_ctx) >> 20, cuda_ctx_mem_bytes(g_ctx) >> 30);

    if (argc > 1 && strcmp(argv[1], "--profile") == 0) {
        for (size_t k = 0; k < NTYPES; k++) {
            struct bench b;
            bench_alloc(&b, types[k], 128256, 4096);
            if (is_quant_block(types[k]))
                cuda_gemv_prep_x(g_ctx, b.x, b.n, 1);
            cuda_gemv_variant(g_ctx, b.t, b.w[0], b.rows, b.n, b.x, 1, b.y, 1.0f, 0, 0,
                              is_quant_block(types[k]) ? CUDA_GEMV_X_PREPARED : 0);
            cuda_ctx_sync(g_ctx);
            bench_free(&b);
        }
        /* Q4_K: the tensor-core kernel (above) and the staged one on lm_head and gate+up */
        for (int s = 0; s < 2; s++) {
            struct bench b;
            bench_alloc(&b, DTYPE_Q4_K, s ? 28672 : 128256, 4096);
            cuda_gemv_prep_x(g_ctx, b.x, b.n, 1);
            for (int on = 0; on < 2; on++) {
                if (s == 0 && on)
                    continue; /* lm_head on the tensor cores ran above */
                cuda_ctx_set_gemv_mma(g_ctx, on ? CUDA_GEMV_MMA_Q4K : CUDA_GEMV_MMA_OFF, 0);
                cuda_gemv_variant(g_ctx, b.t, b.w[0], b.rows, b.n, b.x, 1, b.y, 1.0f, 0, 1, CUDA_GEMV_X_PREPARED);
            }
            cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_Q4K, 0);
            cuda_ctx_sync(g_ctx);
            bench_free(&b);
        }
        cuda_ctx_free(g_ctx);
        return 0;
    }

    /* ---- checks */
    for (size_t k = 0; k < NTYPES; k++) {
        test_current = dtype_name(types[k]);
        test_cases++;
        check_type(types[k]);
    }
    test_current = "fp8 block scales";
    test_cases++;
    check_gemv_bs(256, 4096, 1);
    check_gemv_bs(300, 4112, 1); /* partial row and column blocks */
    check_gemv_bs(1024, 14336, 3);
    check_gemv_bs(257, 4096, 8);
    test_current = "mma";
    test_cases++;
    for (int ks = 0; ks <= 8; ks += ks ? ks : 1) { /* 0 (by shape), 1, 2, 4, 8 */
        check_alone(DTYPE_Q4_K, 257, 4096, true, ks);
        check_alone(DTYPE_Q4_K, 35, 14336, true, ks);
        check_alone(DTYPE_Q4_K, 16, 4352, true, ks); /* an odd number of superblocks */
        check_alone(DTYPE_Q6_K, 257, 4096, true, ks);
        check_alone(DTYPE_Q6_K, 35, 14336, true, ks);
        check_alone(DTYPE_Q6_K, 16, 2048, true, ks);
    }
    check_alone(DTYPE_Q4_K, 4099, 4096, true, 0);
    check_alone(DTYPE_Q6_K, 4099, 4096, true, 0);
    check_alone(DTYPE_Q4_K, 8208, 4096, true, 0); /* a grid over 2 blocks an SM: 2 ring stages alone too */
    test_current = "mma grid";
    test_cases++;
    check_grid(DTYPE_Q4_K, 28672, 4096, 0);
    check_grid(DTYPE_Q4_K, 20011, 4096, 2); /* a partial last group of 2 tiles */
    check_grid(DTYPE_Q4_K, 8208, 4352, 8);  /* 8 warps a tile, an odd number of superblocks */
    check_grid(DTYPE_Q4_K, 4096, 14336, 0); /* fewer groups than fit: one each */
    check_grid(DTYPE_Q6_K, 28672, 4096, 0);
    test_current = "dp4a alone = batch";
    test_cases++;
    for (size_t k = 0; k < NTYPES; k++) /* the engine's K splits: a row's bits in any batch */
        if (is_quant_block(types[k]))
            for (int ks = 1; ks <= 4; ks += 3) {
                check_alone(types[k], 97, 4096, false, ks);
                check_alone(types[k], 2200, 4096, false, ks); /* alone 4 rows a warp, a batch 2 */
                check_alone(types[k], 35, 14336, false, ks);
                check_alone(types[k], 13, 4352, false, ks);
            }
    /* bf16 activations: every quantized type's prepared x in 16 bits (gemv_prep_x4's x16), the dp4a kernels'
     * X16 form at both engine K splits, the tensor-core GEMV; a row's bits alone as in a batch there too */
    test_current = "x16";
    test_cases++;
    cuda_ctx_set_act_bf16(g_ctx, true);
    g_tol = TOL_X16;
    for (size_t k = 0; k < NTYPES; k++)
        if (is_quant_block(types[k])) {
            check_type(types[k]);
            for (int ks = 1; ks <= 4; ks += 3) {
                check_alone(types[k], 97, 4096, false, ks);
                check_alone(types[k], 13, 4352, false, ks);
            }
        }
    for (int ks = 0; ks <= 4; ks += 4) { /* the tensor-core GEMV on two planes: 4 vectors an n-tile */
        check_alone(DTYPE_Q4_K, 257, 4096, true, ks);
        check_alone(DTYPE_Q4_K, 16, 4352, true, ks);
        check_alone(DTYPE_Q6_K, 35, 14336, true, ks);
        check_alone(DTYPE_Q6_K, 16, 2048, true, ks);
    }
    check_grid(DTYPE_Q4_K, 20011, 4096, 2);
    test_current = "rope epilogue x16";
    test_cases++;
    check_rope_epis();
    cuda_ctx_set_act_bf16(g_ctx, false);
    g_tol = TOL;
    test_current = "rope epilogue";
    test_cases++;
    check_rope_epis();
    test_current = "rmsnorm/swiglu";
    test_cases++;
    check_rmsnorm(1, 4096, true);
    check_rmsnorm(8, 4096, false);
    check_rmsnorm(3, 5120, true);
    check_rmsnorm(2, 4098, true);  /* n % 4 != 0: the scalar two-pass kernel */
    check_rmsnorm(1, 20480, false); /* n > 16384: likewise */
    check_swiglu(3, 1001);          /* n % 4 != 0: the scalar kernel */
    check_swiglu(1, 14336);
    check_swiglu(8, 14336);
    check_fused(DTYPE_Q4_K, false, 1, 4096, 1024);
    check_fused(DTYPE_Q8_0, false, 3, 4096, 515);
    check_fused(DTYPE_Q6_K, true, 1, 14336, 256);
    check_fused(DTYPE_IQ4_XS, true, 8, 4352, 100);
    test_current = "embed";
    test_cases++;
    {
        const enum dtype et[] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16, DTYPE_Q8_0, DTYPE_Q4_0,
                                 DTYPE_Q4_1, DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K};
        for (size_t k = 0; k < sizeof et / sizeof et[0]; k++) {
            CHECK(cuda_embed_supported(et[k], 2048));
            check_embed(et[k], 997, 2048, 13, k % 2 ? 1.0f : 2.5f);
        }
        CHECK(!cuda_embed_supported(DTYPE_IQ4_XS, 2048) && !cuda_embed_supported(DTYPE_Q4_K, 2080));
    }
    test_current = "glu_prep";
    test_cases++;
    check_glu_split(DTYPE_Q4_K, false, 1, 14336, 512);
    check_glu_split(DTYPE_Q6_K, false, 8, 14336, 300);
    check_glu_split(DTYPE_Q8_0, true, 3, 4096, 257);
    fflush(stdout);
    if (test_failures || quick) {
        cuda_ctx_free(g_ctx);
        return test_summary();
    }
    if (argc > 1 && strcmp(argv[1], "--ks") == 0) {
        bench_ks();
        cuda_ctx_free(g_ctx);
        return test_summary();
    }
    if (argc > 1 && strcmp(argv[1], "--mma") == 0) {
        bench_mma(argc > 2 && strcmp(argv[2], "x16") == 0);
        cuda_ctx_free(g_ctx);
        return test_summary();
    }

    /* ---- timing */
    bench_copy();
    /* our kernels first, cuBLAS last (the table needs both) */
    static double auto_us[NTYPES][NSHAPES], best_us[NTYPES][NSHAPES], mb[NTYPES][NSHAPES];
    static int best_rpb[NTYPES][NSHAPES], best_ks[NTYPES][NSHAPES];
    static double stg_us[NTYPES][NSHAPES][2], reg_us[NTYPES][NSHAPES][2]; /* ksplit 1, R = 2 / 4 */
    double batch_us[NTYPES][4], batch_reg_us[NTYPES][4]; /* staged on / off (quantized types) */
    for (size_t k = 0; k < NTYPES; k++) {
        const enum dtype t = types[k];
        for (size_t s = 0; s < NSHAPES; s++) {
            struct bench b;
            bench_alloc(&b, t, shapes[s].rows, shapes[s].n);
            b.rpb = 0, b.ks = 0, b.flags = 0;
            auto_us[k][s] = bench_time(&b); /* what cuda_gemv costs, activation prep included */
            best_us[k][s] = 1e30, best_rpb[k][s] = 0, best_ks[k][s] = 0;
            mb[k][s] = b.bytes / 1e6;
            if (is_quant_block(t)) { /* the GEMV alone, x prepared once outside the timed graph */
                cuda_gemv_prep_x(g_ctx, b.x, b.n, 1);
                b.flags = CUDA_GEMV_X_PREPARED;
            }
            for (int rpb = 1; rpb <= 4; rpb *= 2)
                for (int ks = 1; ks <= (is_quant_block(t) ? 4 : 1); ks += 3) {
                    b.rpb = rpb, b.ks = ks;
                    double us = bench_time(&b);
                    printf("  %-7s %-8s rows/%s %d ksplit %d: %8.2f us\n", dtype_name(t), shapes[s].name,
                           is_quant_block(t) ? "warp" : "block", rpb, ks, us);
                    if (us < best_us[k][s])
                        best_us[k][s] = us, best_rpb[k][s] = rpb, best_ks[k][s] = ks;
                    if (is_quant_block(t) && ks == 1 && rpb >= 2) { /* staged (above) vs register, same shape */
                        cuda_ctx_set_gemv_staged(g_ctx, false);
                        const double reg = bench_time(&b);
                        cuda_ctx_set_gemv_staged(g_ctx, true);
                        printf("  %-7s %-8s rows/warp %d ksplit 1 register kernel: %8.2f us\n", dtype_name(t),
                               shapes[s].name, rpb, reg);
                        const int i = rpb == 4;
                        stg_us[k][s][i] = us, reg_us[k][s][i] = reg;
                    }
                }
            if (s == 3) { /* gate/up 14336x4096: batches 1, 2, 4, 8 with the launcher's choice, prep included */
                b.flags = 0;
                for (int i = 0; i < 4; i++) {
                    b.rpb = 0, b.ks = 0, b.batch = 1u << i;
                    batch_us[k][i] = bench_time(&b);
                    if (is_quant_block(t)) {
                        cuda_ctx_set_gemv_staged(g_ctx, false);
                        batch_reg_us[k][i] = bench_time(&b);
                        cuda_ctx_set_gemv_staged(g_ctx, true);
                    }
                }
            }
            printf("%-7s %-8s auto %8.2f us  %6.0f GB/s\n", dtype_name(t), shapes[s].name, auto_us[k][s],
                   b.bytes / auto_us[k][s] / 1e3);
            fflush(stdout);
            bench_free(&b);
        }
    }
    double cublas_us[NSHAPES];
    for (size_t s = 0; s < NSHAPES; s++) {
        struct bench b;
        bench_alloc(&b, DTYPE_BF16, shapes[s].rows, shapes[s].n);
        b.rpb = -1;
        cublas_us[s] = bench_time(&b);
        bench_free(&b);
        printf("cuBLAS bf16 %-8s %6" PRIu64 "x%-6" PRIu64 " %8.2f us  %6.0f GB/s\n", shapes[s].name, shapes[s].rows,
               shapes[s].n, cublas_us[s], (double)shapes[s].rows * shapes[s].n * 2 / cublas_us[s] / 1e3);
        fflush(stdout);
    }
    /* FP8 with 128 × 128 block scales (cuda_gemv_bs) beside the tensor-scale kernel, a lone token */
    for (size_t s = 0; s < NSHAPES; s++) {
        struct bench b;
        bench_alloc(&b, DTYPE_F8_E4M3, shapes[s].rows, shapes[s].n);
        const double plain = bench_time(&b);
        const uint64_t nbs = (shapes[s].rows + 127) / 128 * ((shapes[s].n + 127) / 128);
        float *h = malloc(4 * nbs);
        MEMRA_ASSERT(h);
        for (uint64_t i = 0; i < nbs; i++)
            h[i] = 0x1p-8f * (0.5f + fabsf(rng_unit()));
        b.bs = cuda_alloc(4 * nbs);
        cuda_upload(g_ctx, b.bs, h, 4 * nbs);
        free(h);
        const double bsu = bench_time(&b);
        printf("F8_E4M3 %-8s tensor scale %8.2f us %6.0f GB/s, block scales %8.2f us %6.0f GB/s (%.1f %% of the floor)\n",
               shapes[s].name, plain, b.bytes / plain / 1e3, bsu, b.bytes / bsu / 1e3, pct(b.bytes / bsu / 1e3));
        fflush(stdout);
        cuda_free(b.bs);
        bench_free(&b);
    }

    /* rmsnorm / swiglu at decode sizes (activations L2-resident, as in a forward pass) */
    char small[6][160];
    {
        const uint32_t n = 4096, ff = 14336;
        float *x = cuda_alloc(4 * 8 * (size_t)ff * 2), *res = cuda_alloc(4 * 8 * (size_t)n),
              *w = cuda_alloc(4 * (size_t)n), *o = cuda_alloc(4 * 8 * (size_t)ff);
        {
            const size_t cnt = 8 * (size_t)ff * 2;
            float *h = malloc(4 * cnt);
            MEMRA_ASSERT(h);
            for (size_t i = 0; i < cnt; i++)
                h[i] = rng_unit();
            cuda_upload(g_ctx, x, h, 4 * cnt);
            cuda_upload(g_ctx, res, h + 1, 4 * 8 * (size_t)n);
            cuda_upload(g_ctx, w, h + 2, 4 * (size_t)n);
            free(h);
        }
        struct cuda_timer *tm = cuda_timer_new();
        for (int v = 0; v < 6; v++) {
            const uint32_t rows = v & 1 ? 8 : 1;
            for (int i = 0; i < 101; i++) {
                if (i == 1)
                    cuda_graph_begin(g_ctx); /* i = 0: warm-up, outside the graph (the _prep scratch grows there) */
                if (v < 2)
                    cuda_rmsnorm(g_ctx, x, res, w, o, rows, n, 1e-5f);
                else if (v < 4)
                    cuda_swiglu(g_ctx, x, o, rows, ff);
                else if (v == 4)
                    cuda_rmsnorm_prep(g_ctx, x, res, w, o, rows, n, 1e-5f);
                else
                    cuda_swiglu_prep(g_ctx, x, o, rows, ff);
            }
            struct cuda_graph *g = cuda_graph_end(g_ctx);
            cuda_graph_launch(g_ctx, g);
            double us[9];
            for (int r = 0; r < 9; r++) {
                cuda_timer_start(g_ctx, tm);
                cuda_graph_launch(g_ctx, g);
                cuda_timer_stop(g_ctx, tm);
                us[r] = 1000.0 * cuda_timer_ms(tm) / 100;
            }
            qsort(us, 9, sizeof us[0], kernel_time_cmp);
            cuda_graph_free(g);
            static const char *names[6] = {"rmsnorm+residual", "rmsnorm+residual", "swiglu", "swiglu",
                                           "rmsnorm+residual+prep", "swiglu+prep"};
            snprintf(small[v], sizeof small[0], "| %s %ux%u | %.2f |", names[v], rows, v % 4 < 2 && v != 5 ? n : ff,
                     us[4]);
        }
        cuda_timer_free(tm);
        cuda_free(x), cuda_free(res), cuda_free(w), cuda_free(o);
    }

    printf("\n## GEMV, batch 1 (MB = weight matrix; %% of %.1f TB/s; auto = cuda_gemv as the engine calls it, the"
           " activation prep kernel of the quantized types included; best = fastest rows-per-block/warp R of 1/2/4"
           " and (quantized) ksplit 1/4, the GEMV kernel alone; cuBLAS = bf16 cublasGemmEx, same shape, same run; ratio = cuBLAS us / auto us)\n\n",
           BW_REF_GBS / 1000);
    printf("| type    | shape                  |      MB |  auto us |  GB/s |  %%BW  | best us (R,ks) | %%BW   | cuBLAS us | ratio |\n");
    printf("|---------|------------------------|---------|----------|-------|-------|----------------|-------|-----------|-------|\n");
    for (size_t k = 0; k < NTYPES; k++)
        for (size_t s = 0; s < NSHAPES; s++) {
            const double gbs = mb[k][s] * 1e3 / auto_us[k][s], gbs_best = mb[k][s] * 1e3 / best_us[k][s];
            printf("| %-7s | %-8s %6" PRIu64 "x%-6" PRIu64 " | %7.1f | %8.2f | %5.0f | %5.1f | %7.2f (%d,%d)  | %5.1f | %9.2f | %5.2f |\n",
                   dtype_name(types[k]), shapes[s].name, shapes[s].rows, shapes[s].n, mb[k][s], auto_us[k][s], gbs,
                   pct(gbs), best_us[k][s], best_rpb[k][s], best_ks[k][s], pct(gbs_best), cublas_us[s],
                   cublas_us[s] / auto_us[k][s]);
        }
    printf("\n## Quantized GEMV, ksplit 1 (the engine's shape): staged kernel vs register kernel, x prepared, us"
           " (same run; R = rows a warp; %%BW of the staged one at its better R)\n\n"
           "| type | shape | register R=2 | staged R=2 | register R=4 | staged R=4 | best ratio | staged %%BW |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < NTYPES; k++) {
        if (!is_quant_block(types[k]))
            continue;
        for (size_t s = 0; s < NSHAPES; s++) {
            const double rb = fmin(reg_us[k][s][0], reg_us[k][s][1]), sb = fmin(stg_us[k][s][0], stg_us[k][s][1]);
            printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |\n", dtype_name(types[k]), shapes[s].name,
                   reg_us[k][s][0], stg_us[k][s][0], reg_us[k][s][1], stg_us[k][s][1], rb / sb,
                   pct(mb[k][s] * 1e3 / sb));
        }
    }
    printf("\n## Batched GEMV, gate/up 14336x4096, us (launcher's choice, prep included; quantized: staged /"
           " register kernel, same run)\n\n| type | b=1 | b=2 | b=4 | b=8 |\n|---|---|---|---|---|\n");
    for (size_t k = 0; k < NTYPES; k++) {
        printf("| %s |", dtype_name(types[k]));
        for (int i = 0; i < 4; i++)
            if (is_quant_block(types[k]))
                printf(" %.2f / %.2f |", batch_us[k][i], batch_reg_us[k][i]);
            else
                printf(" %.2f |", batch_us[k][i]);
        printf("\n");
    }
    printf("\n## Elementwise (graph of 100 launches, us per launch)\n\n| op | us |\n|---|---|\n");
    for (int v = 0; v < 6; v++)
        printf("%s\n", small[v]);
    cuda_ctx_free(g_ctx);
    return test_summary();
}
