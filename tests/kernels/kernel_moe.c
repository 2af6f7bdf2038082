/* tests/kernels/kernel_moe.c — the mixture-of-experts FFN on the device
 * (cuda_moe_ffn, moe.cu) against a reference written here after the CPU
 * backend (src/backend/cpu/cpu_moe.c), then timed on Qwen3-30B-A3B's shapes.
 *
 * Checks (exit status 1 if any fails), fresh random inputs each case —
 * experts' weights of random valid blocks of each type (kernel_rng.h), x and
 * the router logits uniform in [-1, 1) (logits ×4, so that the routing is
 * not flat), the output NaN-poisoned:
 * - routing: every token's k expert ids equal the reference's (the same float
 *   operations: softmax, arg-max with ties to the lower index, renormalised
 *   or not), weights within 1e-6 relative;
 * - output: max|Δ| / max|ref| ≤ 1e-4 against double-precision dots of the
 *   dequantized weights (quant_dequantize_row) with the reference's routing —
 *   the GEMVs' own tolerance (cuda_ops.h), twice over;
 * - batch invariance: each token's output row alone (T = 1: the batch-1
 *   kernels) is bit-identical to its row in the batch; and with x prepared
 *   by the caller (CUDA_GEMV_X_PREPARED, quantized gate_up) the same bits;
 * - the GEMM form of a long span (cuda_moe_ffn_gemm, exact mode) against the
 *   same reference, same tolerance, for 8 tokens or more;
 * - with bf16 activations (the x16 pass) the quantized experts again: their
 *   16-bit prepared x, the GLU's output rounded to bf16 in the reference too,
 *   tolerance 2e-3 (TOL_X16).
 * Types: every plain and quantized GEMV type and F32 (the expanded form), as
 * gate/up and down (mixed, as Q4_K_M files mix Q4_K and Q6_K); 4..128
 * experts, 1..8 a token, 1..200 tokens (several slots an expert); FP8 with
 * 128 × 128 block scales (each expert's tables; the reference applies them
 * as the f32 path expands them), partial blocks included.
 *
 * Timing (not with --quick): one FFN layer of Qwen3-30B-A3B (128 experts, 8 a
 * token, hidden 2048, expert size 768) at 1, 8 and 64 tokens, through
 * kernel_time.h's graph of launches rotating over 16 router-logit sets (other
 * experts each launch). Bytes counted: the distinct experts a launch reads
 * (3 matrices each) — its floor over 4.3 TB/s.
 * kernel_moe --profile: three FFNs of each of BF16 and Q4_K/Q6_K at 1 and 8
 * tokens, launched one by one, nothing else (for ncu).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"
#include "core/log.h"
#include "model/model.h"
#include "quant/quant.h"
#include "test.h"

#define KERNEL_NAME "kernel_moe"
#define KERNEL_RNG_SEED 0xB7E151628AED2A6Bull
#include "kernel_rng.h"
#include "kernel_ref.h"
#include "kernel_time.h"
#include "kernel_util.h"

#define BW_REF_GBS 4300.0
#define TOL 1e-4
/* The x16 pass (bf16 activations): the quantized experts' prepared x in 16 bits (gemv_internal.cuh, ≤ 2^-16 of a
 * block's max |x|), and the GLU's output rounded to bf16 on both sides — where the GPU's f32 and the reference's double
 * round an element to neighbouring bf16 values, a 2^-8 step of it. */
#define TOL_X16 2e-3
static bool g_x16; /* the x16 pass: cuda_ctx_set_act_bf16 on, the reference's GLU rounded, TOL_X16 */

static struct cuda_ctx *g_ctx;

/* Bytes of one row of n elements of t, F32 included. */
static uint64_t rb_of(enum dtype t, uint64_t n) { return t == DTYPE_F32 ? n * 4 : row_bytes_of(t, n); }

/* One layer's experts on the host (stacked as on the device) and the device. */
struct experts {
    struct cuda_moe_weights w; /* device pointers */
    uint8_t *h_gu, *h_down;    /* host copies of the stacks */
    float *f_gu, *f_down;      /* dequantized: (E, 2F, dim), (E, dim, F) */
    float *h_gu_bs, *h_down_bs; /* FP8 with block scales: the experts' scale tables, as w's gu_bs / down_bs */
};

/* The 128 × 128 block scales of a (rows, n) matrix applied to its dequantized rows (the f32 path's expand_rows). */
static void apply_blocks(float *m, const float *bs, uint64_t rows, uint64_t n)
{
    for (uint64_t r = 0; r < rows; r++)
        kernel_ref_scale_row(m + r * n, bs, r, n);
}

static void fill_type(enum dtype t, uint8_t *p, uint64_t bytes)
{
    if (t == DTYPE_F32) {
        for (uint64_t i = 0; i < bytes / 4; i++)
            ((float *)p)[i] = rng_unit() * 0.1f;
    } else {
        fill_random(t, p, bytes);
    }
}

static void dequant_rows(enum dtype t, const uint8_t *src, uint64_t rows, uint64_t n, float scale, float *dst)
{
    const uint64_t rb = rb_of(t, n);
    for (uint64_t r = 0; r < rows; r++) {
        if (t == DTYPE_F32)
            memcpy(dst + r * n, src + r * rb, n * 4);
        else
            MEMRA_ASSERT(quant_dequantize_row(t, src + r * rb, dst + r * n, n) == 0);
        for (uint64_t i = 0; i < n; i++)
            dst[r * n + i] *= scale;
    }
}

static void experts_init(struct experts *X, enum dtype gt, enum dtype dt, uint32_t E, uint32_t K, uint32_t dim,
                         uint32_t F, bool norm, bool host_ref, bool blocks)
{
    memset(X, 0, sizeof(*X));
    struct cuda_moe_weights *w = &X->w;
    *w = (struct cuda_moe_weights){.n_experts = E, .k = K, .dim = dim, .ffn = F, .norm_topk = norm,
                                   .gu_type = gt, .down_type = dt,
                                   .gu_scale = gt == DTYPE_F8_E4M3 ? 0.75f : 1.0f,
                                   .down_scale = dt == DTYPE_F8_E4M3 ? 1.25f : 1.0f};
    const uint64_t gub = 2 * (uint64_t)F * rb_of(gt, dim), db = (uint64_t)dim * rb_of(dt, F);
    w->gu_stride = (gub + 255) & ~(uint64_t)255;
    w->down_stride = (db + 255) & ~(uint64_t)255;
    X->h_gu = xmalloc(w->gu_stride * E);
    X->h_down = xmalloc(w->down_stride * E);
    memset(X->h_gu, 0, w->gu_stride * E);
    memset(X->h_down, 0, w->down_stride * E);
    for (uint32_t e = 0; e < E; e++) {
        fill_type(gt, X->h_gu + e * w->gu_stride, gub);
        fill_type(dt, X->h_down + e * w->down_stride, db);
    }
    void *dgu = cuda_alloc(w->gu_stride * E), *ddown = cuda_alloc(w->down_stride * E);
    cuda_upload(g_ctx, dgu, X->h_gu, w->gu_stride * E);
    cuda_upload(g_ctx, ddown, X->h_down, w->down_stride * E);
    w->gate_up = dgu, w->down = ddown;
    if (blocks) { /* FP8 with block scales (gt = dt = F8_E4M3, F % 128 == 0): tables per expert, gate's then up's */
        MEMRA_ASSERT(gt == DTYPE_F8_E4M3 && dt == DTYPE_F8_E4M3 && F % 128 == 0);
        w->gu_bs_stride = 2 * (uint64_t)F / 128 * ((dim + 127) / 128);
        w->down_bs_stride = ((uint64_t)dim + 127) / 128 * ((F + 127) / 128);
        X->h_gu_bs = xmalloc(sizeof(float) * E * w->gu_bs_stride);
        X->h_down_bs = xmalloc(sizeof(float) * E * w->down_bs_stride);
        for (uint64_t i = 0; i < E * w->gu_bs_stride; i++)
            X->h_gu_bs[i] = (0.25f + fabsf(rng_unit())) * 0x1p-4f;
        for (uint64_t i = 0; i < E * w->down_bs_stride; i++)
            X->h_down_bs[i] = (0.25f + fabsf(rng_unit())) * 0x1p-4f;
        float *gbs = cuda_alloc(sizeof(float) * E * w->gu_bs_stride);
        float *dbs = cuda_alloc(sizeof(float) * E * w->down_bs_stride);
        cuda_upload(g_ctx, gbs, X->h_gu_bs, sizeof(float) * E * w->gu_bs_stride);
        cuda_upload(g_ctx, dbs, X->h_down_bs, sizeof(float) * E * w->down_bs_stride);
        w->gu_bs = gbs, w->down_bs = dbs;
    }
    if (host_ref) {
        X->f_gu = xmalloc(sizeof(float) * E * 2 * F * dim);
        X->f_down = xmalloc(sizeof(float) * E * dim * F);
        for (uint32_t e = 0; e < E; e++) {
            dequant_rows(gt, X->h_gu + e * w->gu_stride, 2 * (uint64_t)F, dim, w->gu_scale,
                         X->f_gu + (uint64_t)e * 2 * F * dim);
            dequant_rows(dt, X->h_down + e * w->down_stride, dim, F, w->down_scale, X->f_down + (uint64_t)e * dim * F);
            if (blocks) {
                apply_blocks(X->f_gu + (uint64_t)e * 2 * F * dim, X->h_gu_bs + e * w->gu_bs_stride, 2 * (uint64_t)F,
                             dim);
                apply_blocks(X->f_down + (uint64_t)e * dim * F, X->h_down_bs + e * w->down_bs_stride, dim, F);
            }
        }
    }
}

static void experts_free(struct experts *X)
{
    cuda_free((void *)X->w.gate_up);
    cuda_free((void *)X->w.down);
    if (X->w.gu_bs)
        cuda_free((void *)X->w.gu_bs), cuda_free((void *)X->w.down_bs);
    free(X->h_gu_bs);
    free(X->h_down_bs);
    free(X->h_gu);
    free(X->h_down);
    free(X->f_gu);
    free(X->f_down);
}

/* The routing rule (model_moe_route, what the CPU backend runs) on a copy of the logits. */
static void route_ref(const float *logits_in, uint32_t E, uint32_t K, bool norm, uint32_t *idx, float *w)
{
    float *l = xmalloc(sizeof(float) * E);
    memcpy(l, logits_in, sizeof(float) * E);
    const struct model_config c = {.n_experts = E, .n_experts_used = K, .moe_norm_topk = norm};
    model_moe_route(&c, l, idx, w);
    free(l);
}

/* y (dim) = Σ_k w_k · down_e(silu(gate_e x) · up_e x) in double over the dequantized weights. */
static void ffn_ref(const struct experts *X, const float *x, const uint32_t *idx, const float *wk, double *y)
{
    const struct cuda_moe_weights *w = &X->w;
    const uint32_t dim = w->dim, F = w->ffn;
    double *a = xmalloc(sizeof(double) * F);
    for (uint32_t i = 0; i < dim; i++)
        y[i] = 0.0;
    for (uint32_t k = 0; k < w->k; k++) {
        const float *gu = X->f_gu + (uint64_t)idx[k] * 2 * F * dim, *dn = X->f_down + (uint64_t)idx[k] * dim * F;
        for (uint32_t f = 0; f < F; f++) {
            double g = 0.0, u = 0.0;
            for (uint32_t i = 0; i < dim; i++) {
                g += (double)gu[(uint64_t)f * dim + i] * x[i];
                u += (double)gu[(uint64_t)(F + f) * dim + i] * x[i];
            }
            a[f] = g / (1.0 + exp(-g)) * u;
            if (g_x16) /* the GLU's output is the down GEMV's input: rounded under bf16 activations */
                a[f] = quant_bf16_to_f32(quant_f32_to_bf16((float)a[f]));
        }
        for (uint32_t i = 0; i < dim; i++) {
            double s = 0.0;
            for (uint32_t f = 0; f < F; f++)
                s += (double)dn[(uint64_t)i * F + f] * a[f];
            y[i] += wk[k] * s;
        }
    }
    free(a);
}

static void check_moe(enum dtype gt, enum dtype dt, uint32_t E, uint32_t K, uint32_t dim, uint32_t F, uint32_t T,
                      bool norm, bool blocks)
{
    struct experts X;
    experts_init(&X, gt, dt, E, K, dim, F, norm, true, blocks);
    cuda_ctx_set_act_bf16(g_ctx, g_x16);
    const double tol = g_x16 ? TOL_X16 : TOL;
    struct cuda_moe_scratch *s = cuda_moe_scratch_init(g_ctx, &X.w, T);
    float *x = xmalloc(sizeof(float) * T * dim), *lg = xmalloc(sizeof(float) * T * E);
    for (uint64_t i = 0; i < (uint64_t)T * dim; i++)
        x[i] = rng_unit();
    for (uint64_t i = 0; i < (uint64_t)T * E; i++)
        lg[i] = 4.0f * rng_unit();
    float *dx = cuda_alloc(sizeof(float) * T * dim), *dy = cuda_alloc(sizeof(float) * T * dim);
    float *dl = cuda_alloc(sizeof(float) * T * E);
    cuda_upload(g_ctx, dx, x, sizeof(float) * T * dim);
    cuda_upload(g_ctx, dl, lg, sizeof(float) * T * E);
    cuda_fill_nan_f32(g_ctx, dy, (size_t)T * dim);
    cuda_moe_ffn(g_ctx, &X.w, s, dl, dx, T, dy, 0);
    float *y = xmalloc(sizeof(float) * T * dim), *gw = xmalloc(sizeof(float) * T * K);
    uint32_t *gi = xmalloc(sizeof(uint32_t) * T * K);
    cuda_download(g_ctx, y, dy, sizeof(float) * T * dim);
    cuda_download(g_ctx, gi, cuda_moe_topk_ids(s), sizeof(uint32_t) * T * K);
    cuda_download(g_ctx, gw, cuda_moe_topk_weights(s), sizeof(float) * T * K);

    uint32_t idx[CUDA_MOE_MAX_K], bad_ids = 0;
    float wk[CUDA_MOE_MAX_K];
    double *ref = xmalloc(sizeof(double) * dim), max_ref = 0.0, max_d = 0.0, max_wd = 0.0;
    bool finite = true;
    for (uint32_t t = 0; t < T; t++) {
        route_ref(lg + (uint64_t)t * E, E, K, norm, idx, wk);
        for (uint32_t k = 0; k < K; k++) {
            bad_ids += gi[t * K + k] != idx[k];
            const double d = fabs((double)gw[t * K + k] - wk[k]) / (fabs(wk[k]) + 1e-30);
            max_wd = d > max_wd ? d : max_wd;
        }
        ffn_ref(&X, x + (uint64_t)t * dim, idx, wk, ref);
        for (uint32_t i = 0; i < dim; i++) {
            const float g = y[(uint64_t)t * dim + i];
            finite = finite && isfinite(g);
            max_ref = fabs(ref[i]) > max_ref ? fabs(ref[i]) : max_ref;
            const double d = fabs(g - ref[i]);
            max_d = d > max_d ? d : max_d;
        }
    }
    const double rel = max_d / (max_ref > 0 ? max_ref : 1.0);
    /* each token alone: the same bits as in the batch */
    uint32_t bad_rows = 0;
    for (uint32_t t = 0; t < T && T > 1; t += (T > 16 ? 7 : 1)) {
        cuda_upload(g_ctx, dl, lg + (uint64_t)t * E, sizeof(float) * E);
        cuda_fill_nan_f32(g_ctx, dy, dim);
        cuda_moe_ffn(g_ctx, &X.w, s, dl, dx + (uint64_t)t * dim, 1, dy, 0);
        float *y1 = xmalloc(sizeof(float) * dim);
        cuda_download(g_ctx, y1, dy, sizeof(float) * dim);
        bad_rows += memcmp(y1, y + (uint64_t)t * dim, sizeof(float) * dim) != 0;
        free(y1);
    }
    /* a quantized gate_up reading x prepared by the caller (the decode step's
     * RMSNorm does it): the same bits */
    if (gt != DTYPE_F32 && gt != DTYPE_BF16 && gt != DTYPE_F16 && gt != DTYPE_F8_E4M3) {
        cuda_upload(g_ctx, dl, lg, sizeof(float) * T * E);
        cuda_fill_nan_f32(g_ctx, dy, (size_t)T * dim);
        cuda_gemv_prep_x(g_ctx, dx, dim, T);
        cuda_moe_ffn(g_ctx, &X.w, s, dl, dx, T, dy, CUDA_GEMV_X_PREPARED);
        float *y2 = xmalloc(sizeof(float) * T * dim);
        cuda_download(g_ctx, y2, dy, sizeof(float) * T * dim);
        bad_rows += memcmp(y2, y, sizeof(float) * T * dim) != 0;
        free(y2);
    }
    /* the GEMM form (a long prefill span's): the same reference, exact mode */
    double rel_g = 0.0;
    if (T >= 8 && !g_x16 && cuda_moe_gemm_supported(&X.w)) {
        const uint64_t wide = dim > F ? dim : F;
        const uint64_t mw1 = cuda_gemm_scratch_w_elems(gt, 2 * (uint64_t)F, dim),
                       mw2 = cuda_gemm_scratch_w_elems(dt, dim, F);
        struct cuda_gemm *gm = cuda_gemm_init(g_ctx, CUDA_GEMM_EXACT, (uint64_t)T * wide, mw1 > mw2 ? mw1 : mw2);
        cuda_upload(g_ctx, dl, lg, sizeof(float) * T * E);
        cuda_fill_nan_f32(g_ctx, dy, (size_t)T * dim);
        cuda_moe_ffn_gemm(g_ctx, gm, &X.w, s, dl, dx, T, dy);
        float *y3 = xmalloc(sizeof(float) * T * dim);
        cuda_download(g_ctx, y3, dy, sizeof(float) * T * dim);
        double md = 0.0;
        bool fin = true;
        for (uint32_t t = 0; t < T; t++) {
            route_ref(lg + (uint64_t)t * E, E, K, norm, idx, wk);
            ffn_ref(&X, x + (uint64_t)t * dim, idx, wk, ref);
            for (uint32_t i = 0; i < dim; i++) {
                const float g = y3[(uint64_t)t * dim + i];
                fin = fin && isfinite(g);
                md = fabs(g - ref[i]) > md ? fabs(g - ref[i]) : md;
            }
        }
        rel_g = fin ? md / (max_ref > 0 ? max_ref : 1.0) : INFINITY;
        free(y3);
        cuda_gemm_free(gm);
    }
    CHECK_MSG(rel_g <= tol, "moe GEMM %s/%s E=%u K=%u T=%u: max|d|/max|ref| %.2e", dtype_name(gt), dtype_name(dt), E,
              K, T, rel_g);
    CHECK_MSG(bad_ids == 0 && max_wd <= 1e-6 && finite && rel <= tol && bad_rows == 0,
              "moe %s/%s%s E=%u K=%u dim=%u F=%u T=%u norm=%d: %u expert ids differ, weights %.2e, finite %d, "
              "max|d|/max|ref| %.2e, %u rows alone / prepared differ",
              dtype_name(gt), dtype_name(dt), g_x16 ? " x16" : "", E, K, dim, F, T, norm, bad_ids, max_wd, finite, rel,
              bad_rows);
    printf("moe %-7s / %-7s%s%s E=%3u K=%u dim=%u F=%u T=%3u: rel %.2e (GEMM form %.2e), routing %s, alone %s\n",
           dtype_name(gt), dtype_name(dt), blocks ? " block scales" : "", g_x16 ? " x16" : "", E, K, dim, F, T, rel,
           rel_g,
           bad_ids ? "DIFFERS" : "same", bad_rows ? "DIFFERS" : "same bits");
    free(x), free(lg), free(y), free(gw), free(gi), free(ref);
    cuda_free(dx), cuda_free(dy), cuda_free(dl);
    cuda_moe_scratch_free(s);
    experts_free(&X);
    cuda_ctx_set_act_bf16(g_ctx, false);
}

static void test_moe(void)
{
    /* every weight type, as gate/up and as down (K-quants need F % 256) */
    const enum dtype types[][2] = {
        {DTYPE_BF16, DTYPE_BF16}, {DTYPE_F16, DTYPE_F16},   {DTYPE_F8_E4M3, DTYPE_F8_E4M3}, {DTYPE_F32, DTYPE_F32},
        {DTYPE_Q8_0, DTYPE_Q8_0}, {DTYPE_Q4_K, DTYPE_Q6_K}, {DTYPE_Q5_K, DTYPE_Q4_0},       {DTYPE_IQ4_XS, DTYPE_Q4_1},
        {DTYPE_BF16, DTYPE_Q8_0}, {DTYPE_Q6_K, DTYPE_F32},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        check_moe(types[i][0], types[i][1], 16, 4, 512, 256, 1, true, false);
        check_moe(types[i][0], types[i][1], 16, 4, 512, 256, 37, i % 2 == 0, false);
    }
    check_moe(DTYPE_BF16, DTYPE_BF16, 128, 8, 256, 256, 200, true, false); /* Qwen3's 128 / 8, many slots */
    check_moe(DTYPE_Q4_K, DTYPE_Q6_K, 128, 8, 256, 256, 64, true, false);
    check_moe(DTYPE_F16, DTYPE_F16, 4, 2, 64, 32, 9, true, false); /* the fixture's shape */
    check_moe(DTYPE_F32, DTYPE_F32, 4, 1, 64, 32, 5, false, false);
    check_moe(DTYPE_Q8_0, DTYPE_Q8_0, 8, 8, 256, 256, 3, false, false); /* k = every expert */
    /* FP8 with 128 × 128 block scales (Qwen3-30B-A3B-FP8's experts): the grouped GEMVs and the GEMM form */
    check_moe(DTYPE_F8_E4M3, DTYPE_F8_E4M3, 16, 4, 512, 256, 1, true, true);
    /* partial blocks: down's rows and gate / up's columns (544 = 4·128 + 32: the MoE scratch asks multiples of 32) */
    check_moe(DTYPE_F8_E4M3, DTYPE_F8_E4M3, 16, 4, 544, 384, 37, true, true);
    /* bf16 activations: the quantized experts' grouped GEMVs on the 16-bit prepared x (their X16 form), alone,
     * in a batch and on x the caller prepared */
    const enum dtype q16[][2] = {{DTYPE_Q8_0, DTYPE_Q8_0}, {DTYPE_Q4_K, DTYPE_Q6_K}, {DTYPE_Q5_K, DTYPE_Q4_0},
                                 {DTYPE_IQ4_XS, DTYPE_Q4_1}};
    g_x16 = true;
    for (size_t i = 0; i < sizeof(q16) / sizeof(q16[0]); i++) {
        check_moe(q16[i][0], q16[i][1], 16, 4, 512, 256, 1, true, false);
        check_moe(q16[i][0], q16[i][1], 16, 4, 512, 256, 37, i % 2 == 0, false);
    }
    check_moe(DTYPE_Q4_K, DTYPE_Q6_K, 128, 8, 256, 256, 64, true, false);
    g_x16 = false;
}

/* ---- timing ------------------------------------------------------------------ */

#define ROT 16
struct bench_arg {
    struct experts *X;
    struct cuda_moe_scratch *s;
    float *dl[ROT], *dx, *dy;
    uint32_t T;
};

static void bench_launch(void *a, int i)
{
    struct bench_arg *b = a;
    cuda_moe_ffn(g_ctx, &b->X->w, b->s, b->dl[i % ROT], b->dx, b->T, b->dy, 0);
}

static void bench_moe(enum dtype gt, enum dtype dt, uint32_t T)
{
    const uint32_t E = 128, K = 8, dim = 2048, F = 768;
    struct experts X;
    experts_init(&X, gt, dt, E, K, dim, F, true, false, false);
    struct bench_arg b = {.X = &X, .s = cuda_moe_scratch_init(g_ctx, &X.w, T), .T = T};
    float *h = xmalloc(sizeof(float) * T * E > sizeof(float) * T * dim ? sizeof(float) * T * E : sizeof(float) * T * dim);
    double distinct = 0.0; /* mean distinct experts a launch */
    for (int r = 0; r < ROT; r++) {
        for (uint64_t i = 0; i < (uint64_t)T * E; i++)
            h[i] = 4.0f * rng_unit();
        bool used[128] = {0};
        for (uint32_t t = 0; t < T; t++) {
            uint32_t idx[CUDA_MOE_MAX_K];
            float wk[CUDA_MOE_MAX_K];
            route_ref(h + (uint64_t)t * E, E, K, true, idx, wk);
            for (uint32_t k = 0; k < K; k++)
                used[idx[k]] = true;
        }
        for (uint32_t e = 0; e < E; e++)
            distinct += used[e];
        b.dl[r] = cuda_alloc(sizeof(float) * T * E);
        cuda_upload(g_ctx, b.dl[r], h, sizeof(float) * T * E);
    }
    distinct /= ROT;
    for (uint64_t i = 0; i < (uint64_t)T * dim; i++)
        h[i] = rng_unit();
    b.dx = cuda_alloc(sizeof(float) * T * dim);
    b.dy = cuda_alloc(sizeof(float) * T * dim);
    cuda_upload(g_ctx, b.dx, h, sizeof(float) * T * dim);
    const double us = kernel_time_graph(g_ctx, bench_launch, &b, 3, 4 * ROT);
    const double bytes = distinct * (2.0 * F * rb_of(gt, dim) + (double)dim * rb_of(dt, F));
    const double gbs = bytes / (us * 1e3);
    printf("| %s / %s | %u | %.1f | %.1f | %.1f | %.0f | %.1f %% |\n", dtype_name(gt), dtype_name(dt), T, distinct,
           bytes / 1e6, us, gbs, 100.0 * gbs / BW_REF_GBS);
    for (int r = 0; r < ROT; r++)
        cuda_free(b.dl[r]);
    cuda_free(b.dx), cuda_free(b.dy);
    cuda_moe_scratch_free(b.s);
    free(h);
    experts_free(&X);
}

/* --profile: a few FFNs of each kind, launched one by one (no graph), for ncu. */
static void profile_moe(void)
{
    const enum dtype types[][2] = {{DTYPE_BF16, DTYPE_BF16}, {DTYPE_Q4_K, DTYPE_Q6_K}};
    for (int i = 0; i < 2; i++)
        for (uint32_t T = 1; T <= 8; T *= 8) {
            struct experts X;
            experts_init(&X, types[i][0], types[i][1], 128, 8, 2048, 768, true, false, false);
            struct cuda_moe_scratch *s = cuda_moe_scratch_init(g_ctx, &X.w, T);
            float *h = xmalloc(sizeof(float) * T * 2048);
            float *dl = cuda_alloc(sizeof(float) * T * 128), *dx = cuda_alloc(sizeof(float) * T * 2048),
                  *dy = cuda_alloc(sizeof(float) * T * 2048);
            for (uint64_t j = 0; j < (uint64_t)T * 2048; j++)
                h[j] = rng_unit();
            cuda_upload(g_ctx, dx, h, sizeof(float) * T * 2048);
            for (int r = 0; r < 3; r++) {
                for (uint64_t j = 0; j < (uint64_t)T * 128; j++)
                    h[j] = 4.0f * rng_unit();
                cuda_upload(g_ctx, dl, h, sizeof(float) * T * 128);
                cuda_moe_ffn(g_ctx, &X.w, s, dl, dx, T, dy, 0);
            }
            cuda_ctx_sync(g_ctx);
            cuda_free(dl), cuda_free(dx), cuda_free(dy);
            free(h);
            cuda_moe_scratch_free(s);
            experts_free(&X);
        }
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    g_ctx = kernel_ctx_open();
    if (argc > 1 && strcmp(argv[1], "--profile") == 0) {
        profile_moe();
        cuda_ctx_free(g_ctx);
        return 0;
    }
    RUN(test_moe);
    if (!quick) {
        printf("\n## MoE FFN, one layer of Qwen3-30B-A3B (128 experts, 8 a token, 2048 → 768 → 2048), cuda_moe_ffn\n\n"
               "| gate_up / down | tokens | experts read | MB read | us | GB/s | of 4.3 TB/s |\n"
               "|---|---|---|---|---|---|---|\n");
        const enum dtype types[][2] = {{DTYPE_BF16, DTYPE_BF16}, {DTYPE_Q8_0, DTYPE_Q8_0}, {DTYPE_Q4_K, DTYPE_Q6_K}};
        for (int i = 0; i < 3; i++)
            for (uint32_t T = 1; T <= 64; T *= 8)
                bench_moe(types[i][0], types[i][1], T);
    }
    cuda_ctx_free(g_ctx);
    return test_summary();
}
