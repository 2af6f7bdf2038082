/* tests/kernels/kernel_forward.c — the CUDA backend's forward pass against the
 * CPU backend (the reference), kernel by kernel and model by model.
 *
 * 1. Kernels of cuda_fwd.h on fresh random inputs, outputs poisoned with NaN
 *    first, against C reference loops written here after the CPU backend
 *    (src/backend/cpu/cpu_ops.c): float32 matmul (max|Δ| / max|ref| ≤ 1e-5:
 *    f32 sums of ≤ 100 products in another order than the double reference),
 *    attention prologue — bias, q/k RMSNorm, RoPE (both styles), KV append —
 *    (≤ 1e-5 of max|ref|: cosf/sinf and the norm's sum order differ), attention
 *    with causal and sliding-window masks over two sequences whose KV blocks
 *    are scattered over a pool (block tables {5, 2, 7} and {1, 6, 3}; KV rows
 *    NaN-poisoned first; ≤ 1e-4 of max|ref|:
 *    online softmax in 4 warps vs the two-pass softmax), gated activation (both
 *    activations) and residual add (≤ 1e-5).
 * 2. Every engine fixture (tests/fixtures/engine/manifest.json) and the default
 *    model (gpu/SmolLM2-135M-Instruct.Q4_1.gguf, else models/): the same
 *    prompts through the CPU and the CUDA backend (16 slots, the same config):
 *    - logits at every prompt position: max|Δ| / (max − min of the CPU
 *      logits of that model) ≤ 1e-3 (the fixtures' metric against
 *      transformers, which is also printed); GPU output buffer NaN-poisoned;
 *    - greedy 64 tokens (prompt 0, decoded one at a time through the KV
 *      cache) identical on CPU and GPU;
 *    - batch independence on the GPU: 16 sequences (the prompts, cut to
 *      different lengths) prefilled in one batch and decoded 8 steps in one
 *      batch give bit-identical logits to each sequence run alone; again with
 *      5 (decode steps of ≤ 8 sequences run the backend's CUDA-graph path);
 *    - rollback: prefilling a sequence again from position 0 over a longer
 *      state gives bit-identical logits to the first prefill;
 *    - paged KV: three sequences A, B, C through scattered block tables in
 *      the pool — B on A's first block read-only, C on A's first two blocks
 *      and a kv_copy of A's partially filled third block, then A's decode and
 *      B's and C's prefills in one batch — on the GPU against the CPU doing the
 *      same (≤ 1e-3 of the CPU logits' range) and against the GPU doing the
 *      same spans through linear tables with the prefixes kv_copy'd (bit-
 *      identical: placement never changes a bit);
 *    - the residual added by the o and down GEMMs themselves (MEMRA_GEMM_ACCUM, the default; it applies under
 *      bf16 activations to BF16 / F32 weights): every prompt's logits bit-identical to a second GPU backend's with
 *      it off (fixtures with an explicit pool); the gate and up GEMMs writing bf16 (MEMRA_GEMM_GU_BF16, the
 *      default; under bf16 activations): within the GPU-vs-CPU bound of a second backend's logits with it off
 *      (the same bits where cuBLASLt's bf16-output kernels sum as the f32 ones: reported);
 *    - chunked prefill: the longest prompt in two chunks (3/5 + 2/5: other
 *      span lengths, so other GEMM shapes) against one shot: logits at every
 *      position within the same 1e-3 of the range, and the 16 greedy tokens
 *      that follow identical.
 *    With bf16 activations (MEMRA_ACT_TYPE=bf16) the bounds are TOL_ACT_BF16, and wherever greedy picks part —
 *    GPU against CPU, a chunked prefill against one shot, a batch's step against the sequence alone — the two
 *    tokens must be a near tie: within TOL_ACT_BF16 of the range on the reference's logits (an f32 difference of
 *    an ulp can round an activation to the neighbouring bf16 value on one path only).
 *    With MEMRA_GEMM_MIN_TOKENS=4 (run-gpu.sh runs it so, in both MEMRA_GEMM
 *    modes) every prompt's prefill takes the GEMM path (prompts of 7–33).
 *    Sequence i of a run "alone" or "in slot i" uses backend_blocks_linear's
 *    table i. The fixtures run with an explicit pool, except the first one and
 *    the default model: kv_blocks 0, i.e. sized from the free device memory
 *    (the table's last column).
 *    The qwen3_moe fixtures run all of it too (the experts on moe.cu's
 *    grouped GEMVs; tests/kernels/kernel_moe.c checks that FFN alone).
 * 3. Deep prefill (check_deep), on a small head_dim-64 model made by
 *    tools/make_test_models.py --tiny (gpu/tiny/hf-bf16) and on the default
 *    model: a 900-token prompt in one
 *    shot and as 800 + 100 (the 100 at depth 800 take the prefill kernel with
 *    their keys split over CTAs), alone and beside another sequence's span:
 *    logits of the last 100 rows within 1e-3 of the CPU's range, greedy 8
 *    tokens the CPU's, the split span's bits independent of the batch.
 * 4. MEMRA_EXTRA_MODELS (comma-separated paths, e.g. the --tiny --tiny-head-dim
 *    128 models of tools/make_test_models.py, whose head of 128 lets the
 *    attention prepare the o-projection's input and whose Q4_K_M mix fuses
 *    q|k beside a Q6_K v): every check of 2. except the transformers
 *    reference.
 * The table is printed last. Run from the repository root (fixture paths);
 * MEMRA_FORWARD_PART (see main) runs a part only; MEMRA_KV_TYPE=bf16 runs 2.-4.
 * with a bf16 KV cache on both backends (run-gpu.sh runs the fixtures so),
 * MEMRA_ACT_TYPE=bf16 with bf16 activations on both (backend.h). The
 * product's default cache is bf16 (backend_open); this program's is f32, the
 * tighter check of the kernels (1e-5 of the logit range against 5e-4).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "backend/cpu/backend_cpu.h"
#include "backend/cuda/attn.h"
#include "backend/cuda/backend_cuda.h"
#include "backend/cuda/cuda_fwd.h"
#include "sample/sample.h"
#include "backend/cuda/cuda_ops.h"
#include "model/model.h"
#include "test.h"

#define KERNEL_RNG_SEED 0x243F6A8885A308D3ull
#include "kernel_rng.h"

#define FX "tests/fixtures/engine/"
#define N_SEQ 16
#define MAX_PROMPTS 8
#define GREEDY_N 64
#define BATCH_STEPS 8

static struct cuda_ctx *g_ctx;
/* The KV type of both backends in the model checks: MEMRA_KV_TYPE (f32 or
 * bf16; both backends then hold the same rounded keys and values) */
static enum backend_kv_type g_kv_type = BACKEND_KV_F32;
/* ... and their matmuls' activations: MEMRA_ACT_TYPE (f32 or bf16: both
 * backends round every matmul's x to bf16) */
static enum backend_act_type g_act_type = BACKEND_ACT_F32;
/* The logit checks' tolerance (max|dlogit| / range, GPU vs CPU and GPU vs
 * itself): 1e-3, or with bf16 activations TOL_ACT_BF16 — an f32 difference of
 * an ulp can round an activation to the neighbouring bf16 value (2^-8
 * relative apart) on one backend and not the other, and that step travels
 * (2026-12-03, H200: ≤ 2.5e-3 over the fixtures and the extra models, most
 * models ~1e-3, some ~1e-7). A greedy divergence must then be a near tie: the
 * GPU's pick within the same tolerance of the CPU's on the CPU's logits. */
#define TOL_ACT_BF16 5e-3
static double tol_logits(void) { return g_act_type == BACKEND_ACT_BF16 ? TOL_ACT_BF16 : 1e-3; }

static float *rand_vec(size_t n, float amp)
{
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = amp * rng_unit();
    return p;
}

static float *to_dev(const float *h, size_t n)
{
    float *d = cuda_alloc(n * 4);
    cuda_upload(g_ctx, d, h, n * 4);
    return d;
}

static float *from_dev(const float *d, size_t n)
{
    float *h = malloc(n * 4);
    cuda_download(g_ctx, h, d, n * 4);
    return h;
}

/* max|got − ref| / max|ref|; a NaN anywhere gives +inf */
static double rel_err(const float *got, const float *ref, size_t n)
{
    double md = 0.0, mr = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        if (!(d == d) || !isfinite(got[i]))
            return INFINITY;
        md = d > md ? d : md;
        mr = fabs(ref[i]) > mr ? fabs(ref[i]) : mr;
    }
    return mr > 0 ? md / mr : md;
}

/* ---- 1. kernels ------------------------------------------------------------ */

static void test_matmul_f32(void)
{
    const uint32_t shapes[][3] = {{37, 100, 5}, {64, 64, 1}, {300, 33, 17}};
    for (size_t s = 0; s < 3; s++) {
        const uint32_t rows = shapes[s][0], n = shapes[s][1], T = shapes[s][2];
        float *w = rand_vec((size_t)rows * n, 1.0f), *x = rand_vec((size_t)T * n, 1.0f);
        float *ref = malloc(sizeof(float) * rows * T);
        for (uint32_t t = 0; t < T; t++)
            for (uint32_t r = 0; r < rows; r++) {
                double a = 0;
                for (uint32_t i = 0; i < n; i++)
                    a += (double)w[(size_t)r * n + i] * x[(size_t)t * n + i];
                ref[(size_t)t * rows + r] = (float)(0.5 * a);
            }
        float *dw = to_dev(w, (size_t)rows * n), *dx = to_dev(x, (size_t)T * n), *dy = cuda_alloc(4 * rows * T);
        cuda_fill_nan_f32(g_ctx, dy, (size_t)rows * T);
        cuda_fwd_matmul_f32(g_ctx, dw, rows, n, dx, T, dy, 0.5f);
        float *got = from_dev(dy, (size_t)rows * T);
        const double e = rel_err(got, ref, (size_t)rows * T);
        CHECK_MSG(e <= 1e-5, "matmul_f32 %ux%u T=%u: %.3g", rows, n, T, e);
        fprintf(stderr, "  matmul_f32 %ux%u T=%u: %.2e\n", rows, n, T, e);
        cuda_free(dw), cuda_free(dx), cuda_free(dy);
        free(w), free(x), free(ref), free(got);
    }
}

static void ref_rmsnorm(float *v, const float *w, uint32_t n, float eps)
{
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++)
        ss += (double)v[i] * v[i];
    const float inv = 1.0f / sqrtf((float)(ss / n) + eps);
    for (uint32_t i = 0; i < n; i++)
        v[i] = w[i] * (v[i] * inv);
}

static void ref_rope(float *v, uint32_t hd, uint32_t pos, const float *inv_freq, bool neox)
{
    const uint32_t half = hd / 2;
    for (uint32_t i = 0; i < half; i++) {
        const float a = (float)pos * inv_freq[i];
        const float c = cosf(a), s = sinf(a);
        const uint32_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float x0 = v[i0], x1 = v[i1];
        v[i0] = x0 * c - x1 * s;
        v[i1] = x1 * c + x0 * s;
    }
}

struct att_case {
    uint32_t n_heads, n_kv_heads, hd;
    bool neox, bias, norm;
    uint32_t window;
    bool kv_one; /* k and v rows of one (T, 2·kv_dim) buffer, k | v (the decode step's fused k|v launch) */
};

/* Tokens: sequence 0 positions 0..2, then sequence 1 positions 0..32, all in
 * one call; their KV blocks scattered over a pool of 8 (cuda_fwd.h layout). */
static void run_att_case(const struct att_case *tc)
{
    const uint32_t n_slots = 2, max_ctx = 40, T = 36, pool = 8, nb = 3;
    const uint32_t tables[2][3] = {{5, 2, 7}, {1, 6, 3}};
    const uint32_t hd = tc->hd, qd = tc->n_heads * hd, kvd = tc->n_kv_heads * hd;
    const float eps = 1e-6f, scale = 1.0f / sqrtf((float)hd);
    uint32_t pos[36], slot[36];
    for (uint32_t t = 0; t < T; t++) {
        slot[t] = t < 3 ? 0 : 1;
        pos[t] = t < 3 ? t : t - 3;
    }
    float *q = rand_vec((size_t)T * qd, 2.0f), *k = rand_vec((size_t)T * kvd, 2.0f);
    float *v = rand_vec((size_t)T * kvd, 1.0f);
    float *bq = tc->bias ? rand_vec(qd, 0.5f) : NULL, *bk = tc->bias ? rand_vec(kvd, 0.5f) : NULL;
    float *bv = tc->bias ? rand_vec(kvd, 0.5f) : NULL;
    float *qn = tc->norm ? rand_vec(hd, 1.0f) : NULL, *kn = tc->norm ? rand_vec(hd, 1.0f) : NULL;
    float *inv_freq = malloc(sizeof(float) * hd / 2);
    for (uint32_t i = 0; i < hd / 2; i++)
        inv_freq[i] = powf(10000.0f, -2.0f * (float)i / (float)hd);

    /* device run */
    float *dq = to_dev(q, (size_t)T * qd), *dk, *dv, *dkv = NULL;
    uint32_t kv_ld = kvd;
    if (tc->kv_one) { /* row t: k then v, 2·kvd floats a row */
        float *hkv = malloc(sizeof(float) * T * 2 * kvd);
        for (uint32_t t = 0; t < T; t++) {
            memcpy(hkv + (size_t)t * 2 * kvd, k + (size_t)t * kvd, kvd * 4);
            memcpy(hkv + (size_t)t * 2 * kvd + kvd, v + (size_t)t * kvd, kvd * 4);
        }
        dkv = to_dev(hkv, (size_t)T * 2 * kvd);
        free(hkv);
        dk = dkv, dv = dkv + kvd, kv_ld = 2 * kvd;
    } else {
        dk = to_dev(k, (size_t)T * kvd), dv = to_dev(v, (size_t)T * kvd);
    }
    float *dbq = bq ? to_dev(bq, qd) : NULL, *dbk = bk ? to_dev(bk, kvd) : NULL, *dbv = bv ? to_dev(bv, kvd) : NULL;
    float *dqn = qn ? to_dev(qn, hd) : NULL, *dkn = kn ? to_dev(kn, hd) : NULL, *dif = to_dev(inv_freq, hd / 2);
    /* meta: positions (T), table offsets (T), the two tables concatenated */
    uint32_t toff[36];
    for (uint32_t t = 0; t < T; t++)
        toff[t] = slot[t] * nb;
    uint32_t *dmeta = cuda_alloc(4 * (2 * T + n_slots * nb));
    cuda_upload(g_ctx, dmeta, pos, 4 * T);
    cuda_upload(g_ctx, dmeta + T, toff, 4 * T);
    cuda_upload(g_ctx, dmeta + 2 * T, tables, 4 * n_slots * nb);
    const size_t pool_n = (size_t)pool * CUDA_KV_BLOCK * kvd, kv_n = (size_t)n_slots * 2 * max_ctx * kvd;
    float *dkp = cuda_alloc(pool_n * 4), *dvp = cuda_alloc(pool_n * 4), *datt = cuda_alloc((size_t)T * qd * 4);
    cuda_fill_nan_f32(g_ctx, dkp, pool_n);
    cuda_fill_nan_f32(g_ctx, dvp, pool_n);
    cuda_fill_nan_f32(g_ctx, datt, (size_t)T * qd);
    const struct cuda_attn_shape sh = {tc->n_heads, tc->n_kv_heads, hd};
    const struct cuda_kv_view kv = {.k = dkp, .v = dvp, .blocks = dmeta + 2 * T, .tok_table = dmeta + T, .bf16 = 0};
    cuda_fwd_qk_rope_kv(g_ctx, dq, dq, qd, dk, dv, kv_ld, T, dmeta, dbq, dbk, dbv, dqn, dkn, dif, tc->neox, eps, sh,
                        kv);
    cuda_fwd_attention(g_ctx, dq, datt, T, dmeta, sh, kv, scale, tc->window);
    float *gq = from_dev(dq, (size_t)T * qd), *gatt = from_dev(datt, (size_t)T * qd);
    float *gkp = from_dev(dkp, pool_n), *gvp = from_dev(dvp, pool_n);
    /* the GPU's rows gathered through the tables into the reference's (slot, kind, pos) layout */
    float *gkv = malloc(kv_n * 4);
    for (uint32_t sl = 0; sl < n_slots; sl++)
        for (uint32_t p = 0; p < max_ctx; p++) {
            const size_t src = ((size_t)tables[sl][p / CUDA_KV_BLOCK] * CUDA_KV_BLOCK + p % CUDA_KV_BLOCK) * kvd;
            memcpy(gkv + ((size_t)sl * 2 * max_ctx + p) * kvd, gkp + src, kvd * 4);
            memcpy(gkv + (((size_t)sl * 2 + 1) * max_ctx + p) * kvd, gvp + src, kvd * 4);
        }

    /* reference */
    float *rkv = calloc(kv_n, sizeof(float)), *gkv_w = calloc(kv_n, sizeof(float));
    float *ratt = calloc((size_t)T * qd, sizeof(float)), *sc = malloc(sizeof(float) * max_ctx);
    for (uint32_t t = 0; t < T; t++) {
        float *qt = q + (size_t)t * qd, *kt = k + (size_t)t * kvd, *vt = v + (size_t)t * kvd;
        if (tc->bias) {
            for (uint32_t i = 0; i < qd; i++)
                qt[i] += bq[i];
            for (uint32_t i = 0; i < kvd; i++)
                kt[i] += bk[i], vt[i] += bv[i];
        }
        for (uint32_t h = 0; h < tc->n_heads; h++) {
            if (qn)
                ref_rmsnorm(qt + h * hd, qn, hd, eps);
            ref_rope(qt + h * hd, hd, pos[t], inv_freq, tc->neox);
        }
        for (uint32_t h = 0; h < tc->n_kv_heads; h++) {
            if (kn)
                ref_rmsnorm(kt + h * hd, kn, hd, eps);
            ref_rope(kt + h * hd, hd, pos[t], inv_freq, tc->neox);
        }
        const size_t kr = ((size_t)slot[t] * 2 * max_ctx + pos[t]) * kvd, vr = kr + (size_t)max_ctx * kvd;
        memcpy(rkv + kr, kt, kvd * 4);
        memcpy(rkv + vr, vt, kvd * 4);
        memcpy(gkv_w + kr, gkv + kr, kvd * 4); /* only the rows written are compared */
        memcpy(gkv_w + vr, gkv + vr, kvd * 4);
    }
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t h = 0; h < tc->n_heads; h++) {
            const uint32_t p = pos[t], kvh = h / (tc->n_heads / tc->n_kv_heads);
            const uint32_t p0 = tc->window && p + 1 > tc->window ? p + 1 - tc->window : 0;
            const float *qh = q + (size_t)t * qd + h * hd;
            float mx = -INFINITY;
            for (uint32_t s = p0; s <= p; s++) {
                const float *kr = rkv + ((size_t)slot[t] * 2 * max_ctx + s) * kvd + kvh * hd;
                double d = 0;
                for (uint32_t i = 0; i < hd; i++)
                    d += (double)qh[i] * kr[i];
                sc[s - p0] = (float)d * scale;
                mx = sc[s - p0] > mx ? sc[s - p0] : mx;
            }
            double sum = 0;
            for (uint32_t s = 0; s <= p - p0; s++)
                sum += sc[s] = expf(sc[s] - mx);
            float *o = ratt + (size_t)t * qd + h * hd;
            for (uint32_t s = p0; s <= p; s++) {
                const float *vr = rkv + (((size_t)slot[t] * 2 + 1) * max_ctx + s) * kvd + kvh * hd;
                for (uint32_t i = 0; i < hd; i++)
                    o[i] += (float)(sc[s - p0] / sum) * vr[i];
            }
        }
    const double eq = rel_err(gq, q, (size_t)T * qd), ek = rel_err(gkv_w, rkv, kv_n);
    const double ea = rel_err(gatt, ratt, (size_t)T * qd);
    CHECK_MSG(eq <= 1e-5 && ek <= 1e-5, "qk_rope_kv heads %u/%u hd %u: q %.3g kv %.3g", tc->n_heads, tc->n_kv_heads,
              hd, eq, ek);
    CHECK_MSG(ea <= 1e-4, "attention heads %u/%u hd %u window %u: %.3g", tc->n_heads, tc->n_kv_heads, hd,
              tc->window, ea);
    fprintf(stderr, "  heads %u/%u hd %3u %s%s%s%s window %2u: q %.2e kv %.2e att %.2e\n", tc->n_heads,
            tc->n_kv_heads, hd, tc->neox ? "neox" : "norm", tc->bias ? " bias" : "", tc->norm ? " qknorm" : "",
            tc->kv_one ? " k|v rows" : "", tc->window, eq, ek, ea);
    void *dev[] = {dq, dkv ? (void *)dkv : dk, dkv ? NULL : dv, dbq, dbk, dbv, dqn, dkn, dif, dmeta, dkp, dvp, datt};
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        cuda_free(dev[i]);
    void *host[] = {q, k, v, bq, bk, bv, qn, kn, inv_freq, gq, gkv, gkp, gvp, gatt, rkv, gkv_w, ratt, sc};
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        free(host[i]);
}

static void test_attention(void)
{
    const struct att_case cases[] = {
        {4, 2, 64, false, true, false, 0, false},  /* llama-like (GGUF pair RoPE), qwen2 biases */
        {4, 2, 64, false, true, false, 0, true},   /* the same, k and v rows of one buffer (stride 2·kv_dim) */
        {4, 1, 16, true, false, true, 5, false},   /* qwen3-like q/k norm, sliding window */
        {2, 2, 256, true, false, true, 0, false},  /* gemma-like head_dim 256 */
        {9, 3, 64, false, false, false, 0, false}, /* SmolLM2 shape */
        {6, 2, 48, true, true, true, 7, false},    /* head_dim not a multiple of 32 */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_att_case(&cases[i]);
}

/* cuda_fwd_qk_rope_kv over many tokens (four a block from
 * CUDA_FWD_ROPE_MANY_TOKENS) against the same tokens in two launches below
 * that bound (a block a token; run_att_case checks that path against the
 * reference): q and the cache rows bit-identical, f32 and bf16 caches. With
 * k|v rows (kv_one) also q read from q|k|v rows (the decode step's joined
 * GEMV's output) into another buffer: the same bits as in place. */
static void check_rope_many(uint32_t n_heads, uint32_t n_kv, uint32_t hd, bool neox, bool bias, bool norm,
                            bool kv_one, bool bf16)
{
    const uint32_t T = CUDA_FWD_ROPE_MANY_TOKENS + 45, T1 = T / 2 /* 2093 tokens, 1046 + 1047 */, nblk = (T + CUDA_KV_BLOCK - 1) / CUDA_KV_BLOCK;
    const uint32_t qd = n_heads * hd, kvd = n_kv * hd, kv_ld = kv_one ? 2 * kvd : kvd;
    const struct cuda_attn_shape sh = {n_heads, n_kv, hd};
    float *q = rand_vec((size_t)T * qd, 2.0f), *kv = rand_vec((size_t)T * kv_ld, 2.0f);
    float *bq = bias ? rand_vec(qd, 0.5f) : NULL, *bk = bias ? rand_vec(kvd, 0.5f) : NULL;
    float *bv = bias ? rand_vec(kvd, 0.5f) : NULL;
    float *qn = norm ? rand_vec(hd, 1.0f) : NULL, *kn = norm ? rand_vec(hd, 1.0f) : NULL;
    float *inv_freq = malloc(sizeof(float) * hd / 2);
    for (uint32_t i = 0; i < hd / 2; i++)
        inv_freq[i] = powf(10000.0f, -2.0f * (float)i / (float)hd);
    /* positions (a permutation of 0..T-1: 11 is prime and does not divide T), table offsets (one sequence), its
     * table reversed */
    MEMRA_ASSERT(T % 11 != 0);
    uint32_t *meta = malloc(4 * (2 * T + nblk));
    for (uint32_t t = 0; t < T; t++)
        meta[t] = (uint32_t)((uint64_t)t * 11 % T), meta[T + t] = 0;
    for (uint32_t b = 0; b < nblk; b++)
        meta[2 * T + b] = nblk - 1 - b;
    float *dq = to_dev(q, (size_t)T * qd), *dkv = to_dev(kv, (size_t)T * kv_ld);
    float *dbq = bq ? to_dev(bq, qd) : NULL, *dbk = bk ? to_dev(bk, kvd) : NULL, *dbv = bv ? to_dev(bv, kvd) : NULL;
    float *dqn = qn ? to_dev(qn, hd) : NULL, *dkn = kn ? to_dev(kn, hd) : NULL, *dif = to_dev(inv_freq, hd / 2);
    uint32_t *dmeta = cuda_alloc(4 * (2 * T + nblk));
    cuda_upload(g_ctx, dmeta, meta, 4 * (2 * T + nblk));
    const size_t pool_f = (size_t)nblk * CUDA_KV_BLOCK * kvd; /* floats of a pool (bf16: half used) */
    float *dkp = cuda_alloc(pool_f * 4), *dvp = cuda_alloc(pool_f * 4);
    const float *dk = dkv, *dv = kv_one ? dkv + kvd : NULL;
    float *dv2 = NULL;
    if (!kv_one)
        dv2 = to_dev(kv, (size_t)T * kvd), dv = dv2; /* (the first T·kvd random values again: fine) */
    float *got[3][3] = {{NULL}};
    const uint32_t qkv_ld = qd + 2 * kvd;
    float *dqkv = NULL;
    if (kv_one) { /* row t: q[t] | k[t] | v[t] */
        float *h = malloc(sizeof(float) * T * qkv_ld);
        MEMRA_ASSERT(h);
        for (uint32_t t = 0; t < T; t++) {
            memcpy(h + (size_t)t * qkv_ld, q + (size_t)t * qd, 4 * qd);
            memcpy(h + (size_t)t * qkv_ld + qd, kv + (size_t)t * kv_ld, 4 * 2 * kvd);
        }
        dqkv = to_dev(h, (size_t)T * qkv_ld);
        free(h);
    }
    for (int split = 0; split < (kv_one ? 3 : 2); split++) {
        cuda_upload(g_ctx, dq, q, (size_t)T * qd * 4);
        cuda_fill_nan_f32(g_ctx, dkp, pool_f);
        cuda_fill_nan_f32(g_ctx, dvp, pool_f);
        struct cuda_kv_view v = {.k = dkp, .v = dvp, .blocks = dmeta + 2 * T, .tok_table = dmeta + T, .bf16 = bf16};
        if (split == 0) {
            cuda_fwd_qk_rope_kv(g_ctx, dq, dq, qd, dk, dv, kv_ld, T, dmeta, dbq, dbk, dbv, dqn, dkn, dif, neox, 1e-6f,
                                sh, v);
        } else if (split == 1) {
            cuda_fwd_qk_rope_kv(g_ctx, dq, dq, qd, dk, dv, kv_ld, T1, dmeta, dbq, dbk, dbv, dqn, dkn, dif, neox, 1e-6f,
                                sh, v);
            v.tok_table = dmeta + T + T1;
            float *q1 = dq + (size_t)T1 * qd;
            cuda_fwd_qk_rope_kv(g_ctx, q1, q1, qd, dk + (size_t)T1 * kv_ld, dv + (size_t)T1 * kv_ld, kv_ld, T - T1,
                                dmeta + T1, dbq, dbk, dbv, dqn, dkn, dif, neox, 1e-6f, sh, v);
        } else { /* from q|k|v rows, q into dq (NaN first: every element must be written) */
            cuda_fill_nan_f32(g_ctx, dq, (size_t)T * qd);
            cuda_fwd_qk_rope_kv(g_ctx, dq, dqkv, qkv_ld, dqkv + qd, dqkv + qd + kvd, qkv_ld, T, dmeta, dbq, dbk, dbv,
                                dqn, dkn, dif, neox, 1e-6f, sh, v);
        }
        got[split][0] = from_dev(dq, (size_t)T * qd);
        got[split][1] = from_dev(dkp, pool_f);
        got[split][2] = from_dev(dvp, pool_f);
    }
    bool same = true;
    for (int k = 1; k < (kv_one ? 3 : 2); k++)
        same = same && memcmp(got[0][0], got[k][0], (size_t)T * qd * 4) == 0 &&
               memcmp(got[0][1], got[k][1], pool_f * 4) == 0 && memcmp(got[0][2], got[k][2], pool_f * 4) == 0;
    CHECK_MSG(same, "qk_rope_kv heads %u/%u hd %u%s: %u tokens in one launch differ from two launches%s", n_heads,
              n_kv, hd, bf16 ? " bf16 cache" : "", T, kv_one ? " or from q|k|v rows" : "");
    fprintf(stderr, "  rope of %u tokens in one launch = two launches%s: heads %u/%u hd %3u %s%s%s%s%s: %s\n", T,
            kv_one ? " = from q|k|v rows" : "", n_heads, n_kv, hd, neox ? "neox" : "pairs", bias ? " bias" : "",
            norm ? " qknorm" : "", kv_one ? " k|v rows" : "", bf16 ? " bf16 cache" : " f32 cache",
            same ? "bit-identical" : "DIFFERENT");
    void *dev[] = {dq, dkv, dv2, dqkv, dbq, dbk, dbv, dqn, dkn, dif, dmeta, dkp, dvp};
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        cuda_free(dev[i]);
    void *host[] = {q, kv, bq, bk, bv, qn, kn, inv_freq, meta, got[0][0], got[0][1], got[0][2], got[1][0], got[1][1],
                    got[1][2], got[2][0], got[2][1], got[2][2]};
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        free(host[i]);
}

static void test_rope_many(void)
{
    check_rope_many(32, 8, 128, false, false, false, false, true); /* Llama-3-8B, bf16 cache (the default) */
    check_rope_many(32, 8, 128, true, false, false, true, false);  /* halves, k|v rows, f32 cache */
    check_rope_many(4, 2, 64, false, true, false, false, false);   /* qwen2 biases */
    check_rope_many(4, 1, 16, true, false, true, false, true);     /* qwen3 q/k norm */
    check_rope_many(2, 2, 256, true, false, true, false, true);    /* head_dim 256 (a token a block either way) */
    check_rope_many(6, 2, 48, true, true, true, true, false);      /* head_dim not a multiple of 32 */
}

static void test_glu_add(void)
{
    const uint64_t n = 3 * 1000 + 7;
    for (int gelu = 0; gelu < 2; gelu++) {
        float *g = rand_vec(n, 6.0f), *u = rand_vec(n, 2.0f), *ref = malloc(n * 4);
        for (uint64_t i = 0; i < n; i++) {
            const double x = g[i];
            ref[i] = gelu ? (float)(0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * u[i])
                          : (float)(x / (1.0 + exp(-x)) * u[i]);
        }
        float *dg = to_dev(g, n), *du = to_dev(u, n);
        cuda_fwd_glu(g_ctx, dg, du, n, gelu);
        float *got = from_dev(dg, n);
        const double e = rel_err(got, ref, n);
        CHECK_MSG(e <= 1e-5, "glu %s: %.3g", gelu ? "gelu" : "silu", e);
        /* the rows form (the decode step's joined gate|up): T rows of gate then up, the same bits */
        const uint32_t T = 3, width = 1002;
        float *gu = malloc(sizeof(float) * 2 * T * width);
        for (uint32_t t = 0; t < T; t++) {
            memcpy(gu + (size_t)t * 2 * width, g + (size_t)t * width, 4 * width);
            memcpy(gu + (size_t)t * 2 * width + width, u + (size_t)t * width, 4 * width);
        }
        float *dgu = to_dev(gu, (size_t)2 * T * width), *dout = cuda_alloc(sizeof(float) * T * width);
        cuda_fill_nan_f32(g_ctx, dout, (size_t)T * width);
        cuda_fwd_glu_rows(g_ctx, dout, dgu, T, width, gelu);
        float *got_rows = from_dev(dout, (size_t)T * width);
        const bool rows_same = memcmp(got_rows, got, sizeof(float) * T * width) == 0;
        CHECK_MSG(rows_same, "glu %s rows form: other bits than the two-buffer form", gelu ? "gelu" : "silu");
        fprintf(stderr, "  glu %s: %.2e, rows form %s\n", gelu ? "gelu-tanh" : "silu", e,
                rows_same ? "same bits" : "DIFFERS");
        cuda_free(dgu), cuda_free(dout);
        free(gu), free(got_rows);
        /* add: x += y */
        for (uint64_t i = 0; i < n; i++)
            ref[i] = g[i] + u[i];
        float *dx = to_dev(g, n);
        cuda_fwd_add(g_ctx, dx, du, n);
        free(got);
        got = from_dev(dx, n);
        const double ea = rel_err(got, ref, n);
        CHECK_MSG(ea <= 1e-6, "add: %.3g", ea);
        cuda_free(dg), cuda_free(du), cuda_free(dx);
        free(g), free(u), free(ref), free(got);
    }
}

/* ---- 2. whole models ------------------------------------------------------- */

static json_t *g_manifest;
static int32_t g_prompts[MAX_PROMPTS][64];
static uint32_t g_prompt_len[MAX_PROMPTS], g_n_prompts;

struct row {
    char name[48], dtype[28];
    const char *status;
    double err_cpu, err_ref;
    int greedy_same; /* tokens equal of 64 */
    bool batch_same, rollback_same, paged_same;
    double batch_rel; /* largest accepted batch-vs-alone difference / logit range (0: bit-identical) */
    double err_paged; /* paged run, GPU vs CPU */
    uint32_t kv_blocks; /* the GPU backend's resolved pool */
    double chunk_err; /* chunked vs one-shot prefill, max|dlogit| / range */
    bool chunk_greedy_same;
    double chunk_tie; /* with bf16 activations: where the greedy tokens part, how close a tie (≥ 0), else −1 */
    int batch_ties;   /* with bf16 activations: steps whose batch and alone picks swapped two near-tied tokens */
    int accum_same; /* the prompts' logits with MEMRA_GEMM_ACCUM off: 1 bit-identical, 0 not, -1 not run */
    int gu16_same;  /* the same with MEMRA_GEMM_GU_BF16 off */
    double gu16_err; /* ... its max|dlogit|/range (-1 not run) */
};
static struct row g_rows[40];
static int g_n_rows;

/* (N_SEQ, MAX_TAB) sequence i's linear table (backend_blocks_linear) for the current max_ctx */
#define MAX_TAB (256 / BACKEND_KV_BLOCK)
static uint32_t g_tab[N_SEQ][MAX_TAB];

static void fill_tables(uint32_t max_ctx)
{
    MEMRA_ASSERT(backend_kv_blocks_for(max_ctx) <= MAX_TAB);
    for (uint32_t i = 0; i < N_SEQ; i++)
        backend_blocks_linear(g_tab[i], i, max_ctx);
}

static uint32_t argmax(const float *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static void poison(float *p, size_t n)
{
    memset(p, 0xff, n * sizeof(float)); /* all-ones bits: a NaN */
}

static int fwd(struct backend *b, uint32_t slot, uint32_t pos, const int32_t *toks, uint32_t n, uint32_t n_logits,
               float *logits)
{
    char err[512];
    struct backend_seq s = {g_tab[slot], pos, n, toks, n_logits, logits, NULL, NULL};
    struct backend_batch batch = {1, &s};
    if (logits)
        poison(logits, (size_t)n_logits * b->model->cfg.vocab);
    int rc = b->ops->forward(b, &batch, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "forward (%s): %s\n", b->ops->name, err);
    return rc;
}

static int greedy(struct backend *b, int32_t *out, float *lg)
{
    const uint32_t V = b->model->cfg.vocab;
    int32_t seq[64 + GREEDY_N];
    uint32_t n = g_prompt_len[0];
    memcpy(seq, g_prompts[0], n * sizeof(int32_t));
    if (fwd(b, 0, 0, seq, n, 1, lg) != 0)
        return -1;
    for (uint32_t i = 0; i < GREEDY_N; i++) {
        seq[n] = out[i] = (int32_t)argmax(lg, V);
        if (i + 1 < GREEDY_N && fwd(b, 0, n, &seq[n], 1, 1, lg) != 0)
            return -1;
        n++;
    }
    return 0;
}

/* Where the two greedy runs part (token i: the CPU picked tc[i], the GPU
 * gpu_pick after the same prompt and tokens [0, i)): how far below the CPU's
 * pick the GPU's is on the CPU's logits at that point, over their range (the
 * CPU's bits do not depend on how its prefill is cut; lg: vocab floats). */
/* The logit checks' metric: max |got − want| over want's range (n values; a NaN difference counts as infinite). */
static double logit_err(const float *want, const float *got, size_t n)
{
    float mn = INFINITY, mx = -INFINITY;
    double md = 0;
    for (size_t i = 0; i < n; i++) {
        mn = want[i] < mn ? want[i] : mn;
        mx = want[i] > mx ? want[i] : mx;
        const double d = fabs((double)got[i] - want[i]);
        md = d > md || d != d ? d : md;
    }
    return md / (mx - mn);
}

/* How far below token a's logit token b's lies in lg (vocab V), over lg's range: a near tie where ≤ TOL_ACT_BF16. */
static double tie_gap(const float *lg, uint32_t V, int32_t a, int32_t b)
{
    float mn = lg[0], mx = lg[0];
    for (uint32_t k = 1; k < V; k++)
        mn = fminf(mn, lg[k]), mx = fmaxf(mx, lg[k]);
    return mx > mn ? ((double)lg[a] - lg[b]) / (mx - mn) : 0.0;
}

static double greedy_tie_gap(struct backend *c, const int32_t *tc, uint32_t i, int32_t gpu_pick, float *lg)
{
    const uint32_t V = c->model->cfg.vocab;
    int32_t seq[64 + GREEDY_N];
    const uint32_t n = g_prompt_len[0];
    memcpy(seq, g_prompts[0], n * sizeof(int32_t));
    memcpy(seq + n, tc, i * sizeof(int32_t));
    if (fwd(c, 0, 0, seq, n + i, 1, lg) != 0)
        return INFINITY;
    return tie_gap(lg, V, tc[i], gpu_pick);
}

static struct backend *open_be(const struct backend_ops *ops, const struct model *m, uint32_t max_ctx,
                               uint32_t kv_blocks, char *err, size_t errlen)
{
    struct backend *b = NULL;
    struct backend_config cfg = {.max_seqs = N_SEQ, .max_ctx = max_ctx, .kv_blocks = kv_blocks,
                                 .max_batch_tokens = 1024, .n_threads = 0, .kv_type = g_kv_type,
                                 .act_type = g_act_type};
    if (ops->init(&b, m, &cfg, err, errlen) != 0)
        return NULL;
    if (ops->load_weights(b, err, errlen) != 0) {
        ops->free(b);
        return NULL;
    }
    return b;
}

/* The paged-KV scenario (see the header): A (41 tokens) in chunks 0..21,
 * 21..40 through ta; the copies (dst, src); then one batch: A at 40, B (A's
 * first 16 tokens, then its own) 16..40 through tb, C (A's first 36, then its
 * own) 36..52 through tc. out: (81, vocab) = A's 41 rows, B's 24, C's 16. */
#define PG_ROWS 81u
static int paged_run(struct backend *b, const uint32_t *ta, const uint32_t *tb, const uint32_t *tc,
                     const uint32_t (*copies)[2], uint32_t n_copies, float *out)
{
    const uint32_t V = b->model->cfg.vocab;
    int32_t a[41], bt[40], c[52];
    for (uint32_t i = 0; i < 52; i++) {
        const int32_t own = (int32_t)((11 + 7919u * (i + 1)) % V), other = (int32_t)((5 + 104729u * (i + 3)) % V);
        if (i < 41)
            a[i] = own;
        if (i < 40)
            bt[i] = i < 16 ? own : other;
        c[i] = i < 36 ? own : (int32_t)((other + 1) % V);
    }
    poison(out, (size_t)PG_ROWS * V);
    char err[512];
    struct backend_seq s = {ta, 0, 21, a, 21, out, NULL, NULL};
    struct backend_batch one = {1, &s};
    if (b->ops->forward(b, &one, err, sizeof(err)) != 0)
        goto fail;
    s = (struct backend_seq){ta, 21, 19, a + 21, 19, out + (size_t)21 * V, NULL, NULL};
    if (b->ops->forward(b, &one, err, sizeof(err)) != 0)
        goto fail;
    for (uint32_t i = 0; i < n_copies; i++)
        b->ops->kv_copy(b, copies[i][0], copies[i][1]);
    struct backend_seq three[3] = {{ta, 40, 1, a + 40, 1, out + (size_t)40 * V, NULL, NULL},
                                   {tb, 16, 24, bt + 16, 24, out + (size_t)41 * V, NULL, NULL},
                                   {tc, 36, 16, c + 36, 16, out + (size_t)65 * V, NULL, NULL}};
    struct backend_batch batch = {3, three};
    if (b->ops->forward(b, &batch, err, sizeof(err)) != 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "paged forward (%s): %s\n", b->ops->name, err);
    return -1;
}

/* The paged scenario on c and g through scattered tables, and on g through
 * linear ones (prefixes copied block by block); *err_cpu: GPU vs CPU. */
static bool paged_check(struct backend *c, struct backend *g, double *err_cpu)
{
    const uint32_t V = g->model->cfg.vocab;
    const uint32_t ta[] = {17, 3, 29}, tb[] = {17, 8, 35}, tc[] = {17, 3, 31, 12};
    const uint32_t scat_copies[][2] = {{31, 29}};
    const uint32_t lin_copies[][2] = {{g_tab[1][0], g_tab[0][0]},
                                      {g_tab[2][0], g_tab[0][0]},
                                      {g_tab[2][1], g_tab[0][1]},
                                      {g_tab[2][2], g_tab[0][2]}};
    float *lc = malloc(sizeof(float) * PG_ROWS * V), *lg = malloc(sizeof(float) * PG_ROWS * V);
    float *ll = malloc(sizeof(float) * PG_ROWS * V);
    bool ok = paged_run(c, ta, tb, tc, scat_copies, 1, lc) == 0 && paged_run(g, ta, tb, tc, scat_copies, 1, lg) == 0 &&
              paged_run(g, g_tab[0], g_tab[1], g_tab[2], lin_copies, 4, ll) == 0;
    *err_cpu = ok ? logit_err(lc, lg, (size_t)PG_ROWS * V) : INFINITY;
    const bool same = ok && memcmp(lg, ll, sizeof(float) * PG_ROWS * V) == 0;
    free(lc), free(lg), free(ll);
    return same;
}

/* The largest difference batch_vs_alone accepted, relative to the logit
 * range (0: every step bit-identical). */
static double g_batch_rel;
static int g_batch_ties; /* steps batch_vs_alone accepted as a near tie */
#define BATCH_TOL 1e-5
/* ... with a bf16 KV cache: the two GEMVs' last-bit differences in k and v
 * can round to neighbouring bf16 values (2^-8 apart), so the logits may
 * differ like GPU and CPU do (TOL_LOGITS), still with the same argmax */
#define BATCH_TOL_KV_BF16 1e-3 /* (with bf16 activations TOL_ACT_BF16: the same neighbouring roundings, of x) */

/* n ≤ N_SEQ sequences in one batch (prefill, then BATCH_STEPS decode steps)
 * against each alone in slot 0: bit-identical logits at every step. With
 * n ≤ 8 (64 for BF16 models) the batch's decode steps run the CUDA backend's
 * decode step (a graph of that batch size); alone is the graph of 1. Under
 * MEMRA_DECODE_MMV=auto (the default) a BF16 model's batch runs the
 * tensor-core GEMV and a lone token the CUDA-core one, so there the logits
 * may differ by ≤ BATCH_TOL of their range (BATCH_TOL_KV_BF16 with a bf16
 * KV cache), with the same argmax; with
 * MEMRA_DECODE_MMV=all or off every bit must match. */
static bool batch_vs_alone(struct backend *g, uint32_t n_seq)
{
    const char *mm = getenv("MEMRA_DECODE_MMV");
    const bool exact = mm && (strcmp(mm, "all") == 0 || strcmp(mm, "off") == 0);
    const uint32_t V = g->model->cfg.vocab;
    const uint32_t steps = 1 + BATCH_STEPS;
    int32_t toks[N_SEQ][64 + BATCH_STEPS];
    uint32_t len[N_SEQ];
    float *bl = malloc(sizeof(float) * N_SEQ * V * steps), *al = malloc(sizeof(float) * V);
    struct backend_seq seqs[N_SEQ];
    for (uint32_t s = 0; s < n_seq; s++) {
        const uint32_t p = s % g_n_prompts, cut = s / g_n_prompts;
        len[s] = g_prompt_len[p] > cut + 1 ? g_prompt_len[p] - cut : 1;
        memcpy(toks[s], g_prompts[p], len[s] * sizeof(int32_t));
        seqs[s] = (struct backend_seq){g_tab[s], 0, len[s], toks[s], 1, bl + (size_t)s * V, NULL, NULL};
    }
    char err[512];
    bool same = true;
    for (uint32_t st = 0; st < steps; st++) {
        for (uint32_t s = 0; s < n_seq; s++)
            poison(seqs[s].logits, V);
        struct backend_batch batch = {n_seq, seqs};
        if (g->ops->forward(g, &batch, err, sizeof(err)) != 0) {
            fprintf(stderr, "batch forward: %s\n", err);
            free(bl), free(al);
            return false;
        }
        for (uint32_t s = 0; s < n_seq; s++) {
            const uint32_t n = seqs[s].pos + seqs[s].n_tokens;
            toks[s][n] = (int32_t)argmax(seqs[s].logits, V);
            seqs[s] = (struct backend_seq){g_tab[s], n, 1, &toks[s][n], 1,
                                           bl + ((size_t)(st + 1) * n_seq + s) * V, NULL, NULL};
        }
    }
    for (uint32_t s = 0; s < n_seq && same; s++) {
        for (uint32_t st = 0; st < steps && same; st++) {
            const uint32_t pos = st == 0 ? 0 : len[s] + st - 1, n = st == 0 ? len[s] : 1;
            const float *bv = bl + ((size_t)st * n_seq + s) * V;
            if (fwd(g, 0, pos, toks[s] + pos, n, 1, al) != 0) {
                same = false;
            } else if (memcmp(al, bv, sizeof(float) * V) != 0) {
                float lo = al[0], hi = al[0];
                double d = 0;
                for (uint32_t k = 0; k < V; k++) {
                    lo = fminf(lo, al[k]), hi = fmaxf(hi, al[k]);
                    d = fmax(d, fabs((double)al[k] - bv[k]));
                }
                const double rel = hi > lo ? d / (hi - lo) : d;
                g_batch_rel = fmax(g_batch_rel, rel);
                const double tol = g_act_type == BACKEND_ACT_BF16  ? TOL_ACT_BF16
                                   : g_kv_type == BACKEND_KV_BF16 ? BATCH_TOL_KV_BF16
                                                                  : BATCH_TOL;
                /* with bf16 activations two tokens within TOL_ACT_BF16 of the range may swap — a near tie, as
                 * the greedy checks allow between CPU and GPU (the batch's decode GEMV is not a lone token's) */
                const uint32_t aa = argmax(al, V), ab = argmax(bv, V);
                const double gap = tie_gap(al, V, (int32_t)aa, (int32_t)ab);
                const bool tie = aa != ab && g_act_type == BACKEND_ACT_BF16 && gap <= TOL_ACT_BF16;
                if (tie) {
                    g_batch_ties++;
                    fprintf(stderr, "  batch of %u vs alone: sequence %u step %u picks %u against %u, a near tie "
                            "(%.2e of the range)\n", n_seq, s, st, ab, aa, gap);
                }
                if (exact || !(rel <= tol) || (aa != ab && !tie))
                    same = false;
            }
        }
    }
    free(bl), free(al);
    return same;
}

/* The device's picks: greedy (backend_seq.argmax) for even sequences,
 * temperature draws (backend_seq.draw) for sequences 1 mod 4, top-k
 * candidates (draw.top_k: k 40, 5 with top-p 0.9, 1000 with min-p, the
 * sampler's draw made from them on the host) for 3 mod 8 and nucleus
 * candidates (draw.nucleus: top-p 0.9, min-p 0.05; the row through
 * backend_draw_z when they cannot decide) for 7 mod 8. N_SEQ sequences
 * prefilled, then BATCH_STEPS decode steps, each run twice at the same
 * positions (the KV writes repeat the same values) — once asking for the
 * picks, once for the logit rows — and every pick must equal what the host
 * makes of its row: backend_logits_argmax, or sampler_sample of a sampler
 * seeded as the draw's, whose PRNG must end in the same state (the prefill's
 * picks, on the general path, too). The sequences go on with the greedy
 * token of their row. */
static bool argmax_check(struct backend *g)
{
    const uint32_t V = g->model->cfg.vocab;
    int32_t toks[N_SEQ][64 + BATCH_STEPS], picks[N_SEQ];
    uint32_t len[N_SEQ];
    float *lg = malloc(sizeof(float) * N_SEQ * V);
    struct backend_seq seqs[N_SEQ];
    struct sampler ref[N_SEQ], dev[N_SEQ];
    struct backend_draw draws[N_SEQ];
    uint64_t saved[N_SEQ][4];
    static int32_t cand_idx[N_SEQ][BACKEND_TOPK_MAX];
    static float cand_val[N_SEQ][BACKEND_TOPK_MAX];
    struct sample_work w = {0};
    char err[512];
    bool ok = lg != NULL && sample_work_init(&w, V, err, sizeof err) == 0;
    for (uint32_t s = 0; s < N_SEQ; s++) {
        const uint32_t p = s % g_n_prompts;
        len[s] = g_prompt_len[p];
        memcpy(toks[s], g_prompts[p], len[s] * sizeof(int32_t));
        seqs[s] = (struct backend_seq){g_tab[s], 0, len[s], toks[s], 1, lg + (size_t)s * V, NULL, NULL};
        struct sample_params sp;
        sample_params_default(&sp);
        sp.temperature = s % 3 == 0 ? 0.7f : 1.0f;
        sp.seed = 1000 + s;
        if (s % 8 == 7) { /* nucleus candidates: top-p, min-p */
            sp.top_p = s == 7 ? 0.9f : 1.0f;
            sp.min_p = s == 7 ? 0.0f : 0.05f;
        } else if (s % 4 == 3) { /* top-k candidates */
            const int32_t ks[3] = {40, 5, 1000};
            sp.top_k = ks[(s / 4) % 3] < (int32_t)V ? ks[(s / 4) % 3] : (int32_t)V - 1;
            sp.top_p = (s / 4) % 3 == 1 ? 0.9f : 1.0f;
            sp.min_p = (s / 4) % 3 == 2 ? 0.02f : 0.0f;
        }
        ok = ok && sampler_init(&ref[s], V, &sp, err, sizeof err) == 0 && sampler_init(&dev[s], V, &sp, err, sizeof err) == 0;
    }
    uint32_t n_draws = 0, n_topk = 0, n_nuc = 0, n_nuc_rows = 0;
    int32_t nuc_got[N_SEQ];
    for (uint32_t st = 0; st <= BATCH_STEPS && ok; st++) {
        for (int pass = 0; pass < 2 && ok; pass++) {
            for (uint32_t s = 0; s < N_SEQ; s++) {
                const bool topk = s % 4 == 3 && g->device_topk && (sampler_topk_candidates(&dev[s], BACKEND_TOPK_MAX) ||
                                                                   sampler_nucleus_candidates(&dev[s]));
                const bool nuc = topk && sampler_nucleus_candidates(&dev[s]);
                const bool draw = pass == 0 && s % 2 == 1 && g->device_draw && (s % 4 == 1 || topk);
                seqs[s].argmax = pass == 0 && !draw ? &picks[s] : NULL;
                seqs[s].draw = draw ? &draws[s] : NULL;
                if (draw && topk)
                    draws[s] = (struct backend_draw){.temperature = dev[s].params.temperature, .token = -2,
                                                     .top_k = nuc ? 0 : (uint32_t)dev[s].params.top_k,
                                                     .cand_idx = cand_idx[s], .cand_val = cand_val[s], .nucleus = nuc};
                else if (draw)
                    draws[s] = (struct backend_draw){.temperature = dev[s].params.temperature,
                                                     .u = sampler_draw_begin(&dev[s], saved[s]), .token = -2};
                picks[s] = pass == 0 ? -2 : picks[s];
                poison(seqs[s].logits, V);
            }
            const struct backend_batch batch = {N_SEQ, seqs};
            if (g->ops->forward(g, &batch, err, sizeof(err)) != 0) {
                fprintf(stderr, "argmax forward: %s\n", err);
                ok = false;
            }
            /* a nucleus draw is made before the next forward: the row it may need lives until then */
            for (uint32_t s = 0; s < N_SEQ && ok && pass == 0; s++) {
                if (!seqs[s].draw || !draws[s].nucleus)
                    continue;
                nuc_got[s] = sampler_sample_nucleus(&dev[s], cand_idx[s], cand_val[s], draws[s].n_cand, draws[s].total,
                                                    draws[s].rest, draws[s].token);
                if (nuc_got[s] == SAMPLER_NEED_ROW) {
                    const struct backend_draw *dz = &draws[s];
                    float *zr = seqs[s].logits;
                    backend_draw_z(g, &dz, &zr, 1);
                    nuc_got[s] = sampler_sample_z(&dev[s], &w, seqs[s].logits, draws[s].token);
                    n_nuc_rows++;
                }
            }
        }
        for (uint32_t s = 0; s < N_SEQ && ok; s++) {
            const int32_t want = backend_logits_argmax(seqs[s].logits, V);
            if (s % 2 == 1 && g->device_draw && (s % 4 == 1 || g->device_topk)) {
                const int32_t want_d = sampler_sample(&ref[s], &w, seqs[s].logits, NULL);
                int32_t got;
                if (draws[s].nucleus) {
                    got = nuc_got[s];
                    n_nuc++;
                } else if (draws[s].top_k) {
                    got = sampler_sample_candidates(&dev[s], cand_idx[s], cand_val[s], draws[s].top_k, draws[s].token);
                    n_topk++;
                } else {
                    sampler_draw_end(&dev[s], saved[s], draws[s].used);
                    got = draws[s].token;
                    n_draws++;
                }
                if (got != want_d || memcmp(ref[s].rng, dev[s].rng, sizeof ref[s].rng) != 0) {
                    fprintf(stderr, "%s: step %u sequence %u: device %d, sampler %d%s\n",
                            draws[s].nucleus ? "nucleus" : draws[s].top_k ? "top-k" : "draw", st, s, got, want_d,
                            memcmp(ref[s].rng, dev[s].rng, sizeof ref[s].rng) ? " (PRNG states differ)" : "");
                    ok = false;
                }
            } else if (picks[s] != want) {
                fprintf(stderr, "argmax: step %u sequence %u: device pick %d, row's argmax %d\n", st, s, picks[s],
                        want);
                ok = false;
            }
            const uint32_t n = seqs[s].pos + seqs[s].n_tokens;
            toks[s][n] = want;
            seqs[s] = (struct backend_seq){g_tab[s], n, 1, &toks[s][n], 1, lg + (size_t)s * V, NULL, NULL};
        }
    }
    if ((g->device_draw && n_draws == 0) || (g->device_topk && (n_topk == 0 || n_nuc == 0)))
        ok = false;
    if (g->device_topk)
        printf("    device draws: %u temperature, %u top-k, %u nucleus (%u of them from the row)\n", n_draws, n_topk,
               n_nuc, n_nuc_rows);
    for (uint32_t s = 0; s < N_SEQ; s++) {
        sampler_free(&ref[s]);
        sampler_free(&dev[s]);
    }
    sample_work_free(&w);
    free(lg);
    return ok;
}

#define CHUNK_GREEDY_N 16

/* Prefill prompt p in slot 0 (one shot when split is 0, else [0, split) then
 * the rest), logits of every position into lg, then CHUNK_GREEDY_N greedy
 * tokens decoded one at a time into out (steps, unless NULL: each pick's
 * logits, CHUNK_GREEDY_N × vocab). */
static int prefill_then_greedy(struct backend *b, uint32_t p, uint32_t split, float *lg, int32_t *out, float *steps)
{
    const uint32_t V = b->model->cfg.vocab, L = g_prompt_len[p];
    int32_t seq[64 + CHUNK_GREEDY_N];
    memcpy(seq, g_prompts[p], L * sizeof(int32_t));
    if (split == 0 ? fwd(b, 0, 0, seq, L, L, lg) != 0
                   : fwd(b, 0, 0, seq, split, split, lg) != 0 ||
                         fwd(b, 0, split, seq + split, L - split, L - split, lg + (size_t)split * V) != 0)
        return -1;
    float *cur = malloc(sizeof(float) * V);
    memcpy(cur, lg + (size_t)(L - 1) * V, sizeof(float) * V);
    int rc = 0;
    for (uint32_t i = 0, n = L; i < CHUNK_GREEDY_N && rc == 0; i++, n++) {
        if (steps)
            memcpy(steps + (size_t)i * V, cur, sizeof(float) * V);
        seq[n] = out[i] = (int32_t)argmax(cur, V);
        if (i + 1 < CHUNK_GREEDY_N)
            rc = fwd(b, 0, n, &seq[n], 1, 1, cur);
    }
    free(cur);
    return rc;
}

static void check_chunked(struct backend *g, struct row *R)
{
    const uint32_t V = g->model->cfg.vocab;
    uint32_t p = 0;
    for (uint32_t i = 1; i < g_n_prompts; i++)
        p = g_prompt_len[i] > g_prompt_len[p] ? i : p;
    const uint32_t L = g_prompt_len[p], split = L * 3 / 5 ? L * 3 / 5 : 1;
    float *one = malloc(sizeof(float) * L * V), *chk = malloc(sizeof(float) * L * V);
    float *steps = malloc(sizeof(float) * CHUNK_GREEDY_N * V);
    int32_t t1[CHUNK_GREEDY_N], t2[CHUNK_GREEDY_N];
    R->chunk_err = INFINITY;
    R->chunk_greedy_same = false;
    R->chunk_tie = -1;
    if (L >= 2 && prefill_then_greedy(g, p, 0, one, t1, steps) == 0 &&
        prefill_then_greedy(g, p, split, chk, t2, NULL) == 0) {
        R->chunk_err = logit_err(one, chk, (size_t)L * V);
        R->chunk_greedy_same = memcmp(t1, t2, sizeof t1) == 0;
        uint32_t i = 0;
        while (i < CHUNK_GREEDY_N && t1[i] == t2[i])
            i++;
        if (i < CHUNK_GREEDY_N && g_act_type == BACKEND_ACT_BF16) { /* how near a tie the parting is, one shot's */
            R->chunk_tie = tie_gap(steps + (size_t)i * V, V, t1[i], t2[i]);
            fprintf(stderr, "  %s: greedy after the chunked prefill parts at token %u, a tie %.2e of the range apart\n",
                    R->name, i, R->chunk_tie);
        }
    }
    CHECK_MSG(R->chunk_err <= tol_logits(), "%s: chunked prefill (%u + %u) vs one shot: max|dlogit|/range %.3g", R->name,
              split, L - split, R->chunk_err);
    /* with bf16 activations a parting at a near tie is allowed, as between CPU and GPU (the chunks' GEMM shapes and
     * roundings are not one shot's) */
    CHECK_MSG(R->chunk_greedy_same || (R->chunk_tie >= 0 && R->chunk_tie <= TOL_ACT_BF16),
              "%s: greedy after a chunked prefill differs from after one shot", R->name);
    free(one), free(chk), free(steps);
}

/* The prompts' prefill logits lg (total rows) against a second GPU backend's with the setting var off: max|Δ| over
 * the range of lg (INFINITY where it failed), *same whether bit-identical; -1 where not run (a pool sized from the
 * free memory leaves none for it: gpu_auto_pool). MEMRA_GEMM_ACCUM (the o and down GEMMs' output added by the norm
 * after them, not by the GEMM into the residual: cuda_forward.c block_out) must give the same bits;
 * MEMRA_GEMM_GU_BF16 (gate and up written as f32, rounded by the GLU: gu_bf16_ok) the same values wherever
 * cuBLASLt's bf16-output kernel sums as its f32 one (kernel_gemm's check_y16), within tol_logits() always. */
static double off_check(const struct model *m, uint32_t max_ctx, uint32_t pool, const float *lg, size_t total,
                        const char *var, bool *same)
{
    char err[512], *was = getenv(var) ? strdup(getenv(var)) : NULL;
    *same = false;
    setenv(var, "off", 1);
    struct backend *g2 = open_be(&backend_cuda_ops, m, max_ctx, pool, err, sizeof(err));
    if (was)
        setenv(var, was, 1);
    else
        unsetenv(var);
    free(was);
    if (!g2) {
        fprintf(stderr, "off_check %s: cuda backend: %s\n", var, err);
        return INFINITY;
    }
    const uint32_t V = m->cfg.vocab;
    float *l2 = malloc(sizeof(float) * total * V);
    bool ok = l2 != NULL;
    size_t off = 0;
    for (uint32_t p = 0; p < g_n_prompts && ok; p++) {
        ok = fwd(g2, 0, 0, g_prompts[p], g_prompt_len[p], g_prompt_len[p], l2 + off * V) == 0;
        off += g_prompt_len[p];
    }
    const double rel = ok ? logit_err(lg, l2, total * V) : INFINITY;
    *same = ok && memcmp(l2, lg, sizeof(float) * total * V) == 0;
    free(l2);
    g2->ops->free(g2);
    return rel;
}

static void check_model(const char *path, const char *name, const char *dtype, const char *ref_file,
                        uint32_t max_ctx, bool gpu_auto_pool)
{
    char err[512];
    struct row *R = &g_rows[g_n_rows++];
    snprintf(R->name, sizeof(R->name), "%s", name);
    snprintf(R->dtype, sizeof(R->dtype), "%s", dtype);
    R->err_ref = -1;
    struct model m;
    if (model_open(&m, path, err, sizeof(err)) != 0) {
        CHECK_MSG(0, "%s: %s", path, err);
        R->status = "OPEN FAILED";
        return;
    }
    if (max_ctx > m.cfg.max_ctx)
        max_ctx = m.cfg.max_ctx;
    fill_tables(max_ctx);
    const uint32_t pool = N_SEQ * backend_kv_blocks_for(max_ctx); /* ≥ 36: the paged scenario's ids */
    struct backend *g = open_be(&backend_cuda_ops, &m, max_ctx, gpu_auto_pool ? 0 : pool, err, sizeof(err));
    if (!g) {
        CHECK_MSG(0, "%s: cuda backend: %s", path, err);
        R->status = "INIT FAILED";
        model_close(&m);
        return;
    }
    R->kv_blocks = g->cfg.kv_blocks;
    CHECK_MSG(g->cfg.kv_blocks >= pool, "%s: GPU pool of %u blocks", name, g->cfg.kv_blocks);
    struct backend *c = open_be(&backend_cpu_ops, &m, max_ctx, pool, err, sizeof(err));
    CHECK_MSG(c != NULL, "%s: cpu backend: %s", path, err);
    if (!c) {
        g->ops->free(g);
        model_close(&m);
        R->status = "CPU FAILED";
        return;
    }
    const uint32_t V = m.cfg.vocab;
    size_t total = 0;
    for (uint32_t p = 0; p < g_n_prompts; p++)
        total += g_prompt_len[p];
    float *lc = malloc(sizeof(float) * total * V), *lg = malloc(sizeof(float) * total * V);
    float *first = malloc(sizeof(float) * g_prompt_len[0] * V);
    bool ok = true;
    size_t off = 0;
    for (uint32_t p = 0; p < g_n_prompts && ok; p++) {
        ok &= fwd(c, 0, 0, g_prompts[p], g_prompt_len[p], g_prompt_len[p], lc + off * V) == 0;
        ok &= fwd(g, 0, 0, g_prompts[p], g_prompt_len[p], g_prompt_len[p], lg + off * V) == 0;
        off += g_prompt_len[p];
    }
    CHECK_MSG(ok, "%s: forward failed", name);
    R->err_cpu = ok ? logit_err(lc, lg, total * V) : INFINITY;
    CHECK_MSG(R->err_cpu <= tol_logits(), "%s: GPU vs CPU max|dlogit|/range %.3g", name, R->err_cpu);
    R->accum_same = R->gu16_same = -1;
    R->gu16_err = -1;
    if (ok && !gpu_auto_pool) {
        bool same;
        off_check(&m, max_ctx, pool, lg, total, "MEMRA_GEMM_ACCUM", &same);
        R->accum_same = same;
        R->gu16_err = off_check(&m, max_ctx, pool, lg, total, "MEMRA_GEMM_GU_BF16", &same);
        R->gu16_same = same;
    }
    CHECK_MSG(R->accum_same != 0, "%s: the logits differ with MEMRA_GEMM_ACCUM off", name);
    CHECK_MSG(R->gu16_err <= tol_logits(), "%s: with MEMRA_GEMM_GU_BF16 off max|dlogit|/range %.3g", name,
              R->gu16_err);
    if (ref_file) {
        float *want = malloc(sizeof(float) * total * V);
        FILE *f = fopen(ref_file, "rb");
        if (f && fread(want, sizeof(float), total * V, f) == total * V) {
            float rmn = INFINITY, rmx = -INFINITY;
            double rd = 0;
            for (size_t i = 0; i < total * V; i++) {
                rmn = want[i] < rmn ? want[i] : rmn;
                rmx = want[i] > rmx ? want[i] : rmx;
                const double d = fabs((double)lg[i] - want[i]);
                rd = d > rd || d != d ? d : rd;
            }
            R->err_ref = rd / (rmx - rmn);
        }
        if (f)
            fclose(f);
        free(want);
    }
    /* rollback: slot 0 now holds prompt 2 (longest); prompt 0 again from 0 */
    memcpy(first, lg, sizeof(float) * g_prompt_len[0] * V);
    ok &= fwd(g, 0, 0, g_prompts[0], g_prompt_len[0], g_prompt_len[0], lg) == 0;
    R->rollback_same = ok && memcmp(first, lg, sizeof(float) * g_prompt_len[0] * V) == 0;
    CHECK_MSG(R->rollback_same, "%s: re-prefill from 0 differs", name);

    int32_t tc[GREEDY_N], tg[GREEDY_N];
    ok = greedy(c, tc, lc) == 0 && greedy(g, tg, lg) == 0;
    R->greedy_same = 0;
    while (ok && R->greedy_same < GREEDY_N && tc[R->greedy_same] == tg[R->greedy_same])
        R->greedy_same++;
    if (g_act_type == BACKEND_ACT_BF16 && ok && R->greedy_same < GREEDY_N) {
        const double gap = greedy_tie_gap(c, tc, (uint32_t)R->greedy_same, tg[R->greedy_same], lc);
        CHECK_MSG(gap <= TOL_ACT_BF16, "%s: greedy differs from token %d, %.3g of the range from the CPU's pick",
                  name, R->greedy_same, gap);
        fprintf(stderr, "  %s: greedy differs from token %d, a near tie (%.2e of the range)\n", name, R->greedy_same,
                gap);
    } else {
        CHECK_MSG(R->greedy_same == GREEDY_N, "%s: greedy differs from token %d", name, R->greedy_same);
    }

    check_chunked(g, R);

    g_batch_rel = 0, g_batch_ties = 0;
    R->batch_same = batch_vs_alone(g, N_SEQ) && batch_vs_alone(g, 5);
    R->batch_rel = g_batch_rel, R->batch_ties = g_batch_ties;
    CHECK_MSG(argmax_check(g), "%s: the device's picks (greedy, temperature draws) differ from the host's", name);
    CHECK_MSG(R->batch_same, "%s: a batch of 16 or of 5 differs from alone", name);
    if (max_ctx >= 64) {
        R->paged_same = paged_check(c, g, &R->err_paged);
        CHECK_MSG(R->paged_same, "%s: GPU scattered vs linear tables differ", name);
        CHECK_MSG(R->err_paged <= tol_logits(), "%s: paged GPU vs CPU max|dlogit|/range %.3g", name, R->err_paged);
    } else {
        R->err_paged = -1;
    }
    R->status = "ok";
    fprintf(stderr, "  %-26s GPU vs CPU %.2e  greedy %d/64  batch16 %s  rollback %s  paged %s (%.2e)  pool %u  "
            "chunked %.2e%s  accum %s  gu16 %s (%.2e)\n", name, R->err_cpu, R->greedy_same,
            R->batch_same ? "same" : "DIFF", R->rollback_same ? "same" : "DIFF", R->paged_same ? "same" : "DIFF",
            R->err_paged, R->kv_blocks, R->chunk_err, R->chunk_greedy_same ? "" : " GREEDY DIFF",
            R->accum_same < 0 ? "-" : R->accum_same ? "same" : "DIFF",
            R->gu16_same < 0 ? "-" : R->gu16_same ? "same" : "moved", R->gu16_err);
    free(lc), free(lg), free(first);
    c->ops->free(c);
    g->ops->free(g);
    model_close(&m);
}

static int load_manifest(void)
{
    json_error_t je;
    g_manifest = json_load_file(FX "manifest.json", 0, &je);
    if (!g_manifest)
        return -1;
    json_t *prompts = json_object_get(g_manifest, "prompts");
    for (size_t p = 0; p < json_array_size(prompts) && p < MAX_PROMPTS; p++) {
        json_t *a = json_array_get(prompts, p);
        for (size_t i = 0; i < json_array_size(a) && i < 64; i++)
            g_prompts[p][i] = (int32_t)json_integer_value(json_array_get(a, i));
        g_prompt_len[p] = (uint32_t)(json_array_size(a) < 64 ? json_array_size(a) : 64);
        g_n_prompts++;
    }
    return g_n_prompts > 0 ? 0 : -1;
}

static void test_fixture_models(void)
{
    CHECK(load_manifest() == 0);
    json_t *models = json_object_get(g_manifest, "models");
    CHECK(json_array_size(models) >= 20);
    for (size_t i = 0; i < json_array_size(models); i++) {
        json_t *e = json_array_get(models, i);
        const char *rel = json_string_value(json_object_get(e, "path"));
        json_t *ref = json_object_get(json_object_get(g_manifest, "refs"),
                                      json_string_value(json_object_get(e, "ref")));
        char path[512], rpath[512];
        snprintf(path, sizeof(path), FX "%s", rel);
        snprintf(rpath, sizeof(rpath), FX "%s", json_string_value(json_object_get(ref, "file")));
        check_model(path, rel, json_string_value(json_object_get(e, "dtype")), rpath, 128, i == 0);
    }
}

/* Deep prefill on the default model (head_dim 64: the tensor-core prefill
 * kernel): a DEEP_LEN-token prompt (fixture prompts repeated) through the CPU
 * once, and through the GPU (a) in one shot (no key split: > 128 rows), (b)
 * as DEEP_SPLIT tokens then the last DEEP_LEN − DEEP_SPLIT (a short span at
 * depth: its keys split over CTAs, cuda_attn_prefill_splits), (c) the same
 * chunks with a second sequence's 300-token span (not split) in the same
 * forward. The logits of the last rows: (a) and (b) within 1e-3 of the CPU
 * logits' range, (c) bit-identical to (b); the greedy tokens after (a), (b)
 * equal the CPU's. */
#define DEEP_LEN 900u
#define DEEP_SPLIT 800u
#define DEEP_CTX 1024u
#define DEEP_GREEDY 8

static int deep_run(struct backend *b, const int32_t *toks, uint32_t split, bool with_other, float *lg,
                    int32_t *greedy_out)
{
    const uint32_t V = b->model->cfg.vocab, tail = DEEP_LEN - DEEP_SPLIT;
    static uint32_t tab[2][DEEP_CTX / BACKEND_KV_BLOCK];
    backend_blocks_linear(tab[0], 0, DEEP_CTX);
    backend_blocks_linear(tab[1], 1, DEEP_CTX);
    int32_t seq[DEEP_LEN + DEEP_GREEDY];
    memcpy(seq, toks, DEEP_LEN * sizeof(int32_t));
    char err[512];
    float *other = malloc(sizeof(float) * V);
    int rc = 0;
    if (split > 0) {
        struct backend_seq s0 = {tab[0], 0, split, seq, 0, lg, NULL, NULL};
        const struct backend_batch b0 = {1, &s0};
        rc = b->ops->forward(b, &b0, err, sizeof(err));
    }
    if (rc == 0) {
        poison(lg, (size_t)tail * V);
        struct backend_seq ss[2] = {{tab[0], split, DEEP_LEN - split, seq + split, tail, lg, NULL, NULL},
                                    {tab[1], 0, 300, toks + 17, 1, other, NULL, NULL}};
        const struct backend_batch bb = {with_other ? 2 : 1, ss};
        rc = b->ops->forward(b, &bb, err, sizeof(err));
    }
    float *cur = malloc(sizeof(float) * V);
    if (rc == 0)
        memcpy(cur, lg + (size_t)(tail - 1) * V, sizeof(float) * V);
    for (uint32_t i = 0, n = DEEP_LEN; rc == 0 && greedy_out && i < DEEP_GREEDY; i++, n++) {
        seq[n] = greedy_out[i] = (int32_t)argmax(cur, V);
        struct backend_seq s1 = {tab[0], n, 1, &seq[n], 1, cur, NULL, NULL};
        const struct backend_batch b1 = {1, &s1};
        if (i + 1 < DEEP_GREEDY)
            rc = b->ops->forward(b, &b1, err, sizeof(err));
    }
    if (rc != 0)
        fprintf(stderr, "deep prefill (%s): %s\n", b->ops->name, err);
    free(cur);
    free(other);
    return rc;
}

static void check_deep(const char *path)
{
    char err[512];
    struct model m;
    if (model_open(&m, path, err, sizeof(err)) != 0) {
        CHECK_MSG(0, "%s: %s", path, err);
        return;
    }
    struct backend_config cfg = {.max_seqs = 2, .max_ctx = DEEP_CTX, .kv_blocks = 2 * DEEP_CTX / BACKEND_KV_BLOCK,
                                 .max_batch_tokens = 1024, .n_threads = 0, .kv_type = g_kv_type,
                                 .act_type = g_act_type};
    struct backend *c = NULL, *g = NULL;
    const bool opened = backend_cpu_ops.init(&c, &m, &cfg, err, sizeof(err)) == 0 &&
                        c->ops->load_weights(c, err, sizeof(err)) == 0 &&
                        backend_cuda_ops.init(&g, &m, &cfg, err, sizeof(err)) == 0 &&
                        g->ops->load_weights(g, err, sizeof(err)) == 0;
    CHECK_MSG(opened, "deep prefill: %s", err);
    const uint32_t V = m.cfg.vocab, tail = DEEP_LEN - DEEP_SPLIT;
    int32_t toks[DEEP_LEN];
    for (uint32_t i = 0; i < DEEP_LEN; i++) { /* the fixture prompts, over and over */
        const uint32_t p = (i / 64) % g_n_prompts;
        toks[i] = g_prompts[p][i % g_prompt_len[p]] % (int32_t)V;
    }
    float *lc = malloc(sizeof(float) * tail * V), *la = malloc(sizeof(float) * tail * V);
    float *lb = malloc(sizeof(float) * tail * V), *lx = malloc(sizeof(float) * tail * V);
    int32_t tc[DEEP_GREEDY], ta[DEEP_GREEDY], tb[DEEP_GREEDY];
    const bool ok = opened && deep_run(c, toks, 0, false, lc, tc) == 0 && deep_run(g, toks, 0, false, la, ta) == 0 &&
                    deep_run(g, toks, DEEP_SPLIT, false, lb, tb) == 0 &&
                    deep_run(g, toks, DEEP_SPLIT, true, lx, NULL) == 0;
    CHECK_MSG(ok, "deep prefill: forward failed");
    if (ok) {
        const double ea = logit_err(lc, la, (size_t)tail * V), eb = logit_err(lc, lb, (size_t)tail * V);
        printf("deep prefill (%u tokens; %u + %u, the second span split %u ways): GPU vs CPU one shot %.2e, "
               "chunked %.2e; greedy %s / %s\n",
               DEEP_LEN, DEEP_SPLIT, tail, cuda_attn_prefill_splits(DEEP_SPLIT, tail), ea, eb,
               memcmp(tc, ta, sizeof tc) ? "DIFF" : "same", memcmp(tc, tb, sizeof tc) ? "DIFF" : "same");
        CHECK_MSG(ea <= tol_logits(), "deep prefill one shot: GPU vs CPU max|dlogit|/range %.3g", ea);
        CHECK_MSG(eb <= tol_logits(), "deep prefill chunked: GPU vs CPU max|dlogit|/range %.3g", eb);
        CHECK_MSG(memcmp(tc, ta, sizeof tc) == 0 && memcmp(tc, tb, sizeof tc) == 0,
                  "deep prefill: greedy tokens differ from the CPU's");
        CHECK_MSG(memcmp(lb, lx, sizeof(float) * tail * V) == 0,
                  "deep prefill: the split span with another span in the batch differs from alone");
    }
    free(lc), free(la), free(lb), free(lx);
    if (g)
        g->ops->free(g);
    if (c)
        c->ops->free(c);
    model_close(&m);
}

static void test_extra_models(void)
{
    const char *list = getenv("MEMRA_EXTRA_MODELS");
    if (!list || !*list) {
        printf("  MEMRA_EXTRA_MODELS unset: no extra models checked\n");
        return;
    }
    char buf[2048];
    snprintf(buf, sizeof(buf), "%s", list);
    for (char *save = NULL, *path = strtok_r(buf, ",", &save); path; path = strtok_r(NULL, ",", &save)) {
        const char *slash = strrchr(path, '/');
        check_model(path, slash ? slash + 1 : path, "extra", NULL, 128, false);
    }
}

/* The deep check on a small model of head_dim 64 that travels to the GPU
 * machine (the default model is too large to carry): MEMRA_DEEP_MODEL, else
 * gpu/tiny/hf-bf16 (python3 tools/make_test_models.py gpu/tiny --tiny
 * --formats bf16: 2 layers, width 256, 4 heads / 2 kv heads of 64). */
static void test_deep_small(void)
{
    const char *path = getenv("MEMRA_DEEP_MODEL");
    path = path ? path : "gpu/tiny/hf-bf16";
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "deep check model %s not found: make it with python3 tools/make_test_models.py gpu/tiny "
              "--tiny --formats bf16 (or set MEMRA_DEEP_MODEL)", path);
    if (!f)
        return;
    fclose(f);
    check_deep(path);
}

static void test_default_model(void)
{
    const char *cands[] = {"gpu/SmolLM2-135M-Instruct.Q4_1.gguf", "models/SmolLM2-135M-Instruct.Q4_1.gguf"};
    for (size_t i = 0; i < 2; i++) {
        FILE *f = fopen(cands[i], "rb");
        if (!f)
            continue;
        fclose(f);
        check_model(cands[i], "SmolLM2-135M Q4_1", "Q4_1 (GGUF)", NULL, 256, true);
        check_deep(cands[i]);
        return;
    }
    CHECK_MSG(0, "default model not found (gpu/ or models/SmolLM2-135M-Instruct.Q4_1.gguf)");
}

/* MEMRA_FORWARD_PART=fixtures: kernels and fixtures only; =default: the
 * default model only; unset: everything (the default model must be there). */
int main(void)
{
    const char *part = getenv("MEMRA_FORWARD_PART");
    const bool only_default = part && strcmp(part, "default") == 0;
    const bool no_default = part && strcmp(part, "fixtures") == 0;
    char err[256];
    const char *kvt = getenv("MEMRA_KV_TYPE");
    if (kvt && *kvt && backend_kv_type_parse(kvt, &g_kv_type, err, sizeof err) != 0) {
        fprintf(stderr, "kernel_forward: MEMRA_KV_TYPE: %s\n", err);
        return 1;
    }
    const char *act = getenv("MEMRA_ACT_TYPE");
    if (act && *act && backend_act_type_parse(act, &g_act_type, err, sizeof err) != 0) {
        fprintf(stderr, "kernel_forward: MEMRA_ACT_TYPE: %s\n", err);
        return 1;
    }
    g_ctx = cuda_ctx_init(0, err, sizeof(err));
    if (!g_ctx) {
        fprintf(stderr, "kernel_forward: %s\n", err);
        return 1;
    }
    if (!only_default) {
        RUN(test_matmul_f32);
        RUN(test_attention);
        RUN(test_rope_many);
        RUN(test_glu_add);
        RUN(test_fixture_models);
        RUN(test_extra_models);
        RUN(test_deep_small);
    } else {
        CHECK(load_manifest() == 0);
    }
    if (!no_default)
        RUN(test_default_model);

    const char *gm = getenv("MEMRA_GEMM"), *gmin = getenv("MEMRA_GEMM_MIN_TOKENS");
    printf("## forward: CUDA backend vs CPU backend (logits: max|dlogit| / (max-min of the CPU logits), "
           "tolerance %.0e; MEMRA_GEMM=%s MEMRA_GEMM_MIN_TOKENS=%s, KV %s, activations %s)\n\n", tol_logits(),
           gm ? gm : "(default)", gmin ? gmin : "(default)", backend_kv_type_name(g_kv_type),
           backend_act_type_name(g_act_type));
    printf("| model | weights | status | GPU vs CPU | GPU vs transformers | greedy 64 | batch 16, 5 vs 1 | rollback | "
           "paged: scattered vs linear | paged: GPU vs CPU | GPU KV blocks | chunked vs one-shot (greedy 16) |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < g_n_rows; i++) {
        const struct row *r = &g_rows[i];
        if (strcmp(r->status, "ok") != 0) {
            printf("| %s | %s | %s | | | | | | | | | |\n", r->name, r->dtype, r->status);
            continue;
        }
        char ref[32] = "n/a";
        if (r->err_ref >= 0)
            snprintf(ref, sizeof(ref), "%.2e", r->err_ref);
        char pg[32] = "n/a";
        if (r->err_paged >= 0)
            snprintf(pg, sizeof(pg), "%.2e", r->err_paged);
        char bs[48] = "identical", ct[40] = "identical";
        if (r->batch_ties)
            snprintf(bs, sizeof bs, "%.1e, %d near ties", r->batch_rel, r->batch_ties);
        else if (r->batch_rel != 0)
            snprintf(bs, sizeof bs, "%.1e, same argmax", r->batch_rel);
        if (!r->chunk_greedy_same && r->chunk_tie >= 0)
            snprintf(ct, sizeof ct, "greedy parts at a tie %.1e", r->chunk_tie);
        else if (!r->chunk_greedy_same)
            snprintf(ct, sizeof ct, "DIFFERENT");
        printf("| %s | %s | ok | %.2e | %s | %d/64 | %s | %s | %s | %s | %u | %.2e (%s) |\n", r->name, r->dtype,
               r->err_cpu, ref, r->greedy_same, r->batch_same ? bs : "DIFFERENT",
               r->rollback_same ? "identical" : "DIFF",
               r->err_paged >= 0 ? (r->paged_same ? "identical" : "DIFFERENT") : "n/a", pg, r->kv_blocks,
               r->chunk_err, ct);
    }
    fflush(stdout);
    json_decref(g_manifest);
    cuda_ctx_free(g_ctx);
    return test_summary();
}
