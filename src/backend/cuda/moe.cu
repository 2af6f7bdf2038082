/* backend/cuda/moe.cu — the mixture-of-experts FFN on the device (Qwen3-MoE);
 * cuda_ops.h states the contract; src/backend/cpu/cpu_moe.c and model_moe_route
 * (model/model.h) are the reference.
 *
 * One FFN of T tokens, k experts each (P = T·k pairs), five to seven launches, no host
 * sync (the decode step's graph holds it):
 * 1. kernel_moe_route: each token's routing by a warp (softmax, top-k by
 *    repeated arg-max with ties to the lower index, renormalisation: the
 *    CPU's float operations but for the softmax's sum order), then in one
 *    block (the same one for ≤ 16 tokens, else kernel_moe_sort after it) a
 *    counting sort of the pairs by expert: pos (pair → row in expert order),
 *    src (row → token) and the work list of slots (expert, first row, ≤ 8
 *    rows) the grouped GEMVs run (gemv_group, gemv_internal.cuh). Rows of one
 *    expert land in any order (shared-memory atomics): a row's result never
 *    depends on its place, so the bits do not either.
 * 2. gate|up: the grouped GEMV of the weight's type, each row reading its
 *    token's x in place (gemv_group.xrow = src; quantized types: the T rows
 *    of x prepared first, or by the caller's RMSNorm), into h (expert order).
 * 3. SiLU(gate)·up (norm.cu's swiglu; with the down GEMV's preparation when
 *    its type is quantized).
 * 4. down: the grouped GEMV into ys (expert order).
 * 5. kernel_moe_combine: y[t] = Σ_k w[t,k]·ys[pos[t,k]], k ascending, each
 *    product and sum rounded on its own as the CPU's loop does.
 * cuda_moe_ffn_gemm, for a long prefill span: the same routing, then the
 * slots come down (one sync), the tokens' rows are gathered in expert order
 * and each expert runs the prefill GEMM (gemm.cu) over its rows — the
 * experts read once, on the tensor cores, a span's bits a function of the
 * span alone (its own routing decides the GEMMs' shapes).
 * Floor, one decode token of Qwen3-30B-A3B in BF16: 8 experts × 3 × 2048 × 768
 * × 2 bytes = 75.5 MB a layer → 17.6 µs at 4.3 TB/s.
 */
#include <math.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"

struct cuda_moe_scratch {
    uint32_t max_tokens, max_pairs;
    float *xs;       /* (max_pairs, dim) the pairs' token rows in expert order (the GEMM path) */
    uint32_t *h_slots; /* host copy of slots (the GEMM path) */
    float *h;        /* (max_pairs, 2·ffn) gate | up */
    float *a;        /* (max_pairs, ffn) silu(gate)·up */
    float *ys;       /* (max_pairs, dim) expert outputs, expert order */
    uint32_t *topk;  /* (max_pairs) expert of pair t·k + j */
    float *topw;     /* (max_pairs) its weight */
    uint32_t *pos;   /* (max_pairs) pair → its row in expert order */
    uint32_t *src;   /* (max_pairs) row → token */
    uint32_t *slots; /* 1 + 3·moe_max_slots(max_pairs): count, then {expert, first, rows} */
};

namespace {

constexpr int ROUTE_NT = 512;
constexpr uint32_t SLOT_ROWS = CUDA_GEMV_MAX_BATCH; /* rows a slot: the GEMV kernels' batch */

/* Slots a step of P pairs can need: Σ over the active experts of ⌈n_e / 8⌉ ≤
 * (P + 7·active) / 8, active ≤ min(E, P). */
uint32_t moe_max_slots(uint64_t pairs, uint32_t E)
{
    const uint64_t act = pairs < E ? pairs : E;
    return (uint32_t)((pairs + (SLOT_ROWS - 1) * act) / SLOT_ROWS);
}

/* The better of two (probability, expert) candidates, a from the lower
 * experts: b only when strictly greater (ties to the lower index, as the
 * CPU's scan); an empty candidate (index UINT32_MAX) never wins. */
__device__ __forceinline__ void route_best(float &v, uint32_t &i, float bv, uint32_t bi)
{
    const bool lower = i == UINT32_MAX || (bi != UINT32_MAX && bi < i);
    const float lo_v = lower ? bv : v, hi_v = lower ? v : bv;
    const uint32_t lo_i = lower ? bi : i, hi_i = lower ? i : bi;
    const bool take_hi = hi_i != UINT32_MAX && (lo_i == UINT32_MAX || hi_v > lo_v);
    v = take_hi ? hi_v : lo_v;
    i = take_hi ? hi_i : lo_i;
}

/* Token t's routing by one warp: the softmax of its logits row held in
 * registers (EPL experts a lane: e = 32·j + lane) and written back, then k
 * rounds of a warp arg-max over the experts not yet taken, renormalised when
 * norm; lane k writes pair k's expert and weight. The softmax's sum is a
 * warp's (lane partial sums, then a butterfly), not the CPU's running sum: a
 * probability may differ from the CPU's in its last bit, the choice only at
 * such a near-tie (kernel_moe checks the ids against the CPU's operations). */
template <int EPL>
__device__ __forceinline__ void route_token(float *__restrict__ l, uint32_t E, uint32_t K, bool norm, uint32_t lane,
                                            uint32_t *__restrict__ topk, float *__restrict__ topw)
{
    float p[EPL];
    float mx = -INFINITY, sum = 0.0f;
#pragma unroll
    for (int j = 0; j < EPL; j++) {
        const uint32_t e = 32 * j + lane;
        p[j] = e < E ? l[e] : -INFINITY;
        mx = fmaxf(mx, p[j]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
#pragma unroll
    for (int j = 0; j < EPL; j++)
        if (32 * j + lane < E) {
            p[j] = expf(__fsub_rn(p[j], mx));
            sum = __fadd_rn(sum, p[j]);
        }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, o));
#pragma unroll
    for (int j = 0; j < EPL; j++)
        if (32 * j + lane < E) {
            p[j] = __fdiv_rn(p[j], sum);
            l[32 * j + lane] = p[j];
        }
    uint32_t taken = 0; /* bit j: this lane's expert 32·j + lane */
    float s = 0.0f, wk = 0.0f; /* the weights' sum; lane k keeps pair k's weight */
    uint32_t ik = 0;
    for (uint32_t k = 0; k < K; k++) {
        float bv = -INFINITY;
        uint32_t bi = UINT32_MAX;
#pragma unroll
        for (int j = 0; j < EPL; j++)
            if (32 * j + lane < E && !(taken >> j & 1))
                route_best(bv, bi, p[j], 32 * j + lane);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            route_best(bv, bi, __shfl_xor_sync(0xffffffffu, bv, o), __shfl_xor_sync(0xffffffffu, bi, o));
        bi = __shfl_sync(0xffffffffu, bi, 0); /* lane 0's choice for all (NaN logits order nothing) */
        bi = bi < E ? bi : E - 1;
        bv = __shfl_sync(0xffffffffu, bv, 0);
        if (bi % 32 == lane)
            taken |= 1u << (bi / 32);
        s = __fadd_rn(s, bv); /* the CPU's order: k ascending */
        if (lane == k)
            ik = bi, wk = bv;
    }
    if (lane < K) {
        topk[lane] = ik;
        topw[lane] = norm ? __fdiv_rn(wk, s) : wk;
    }
}

/* Route tokens [warp·…) a warp each; experts ≤ 32·EPL. */
template <int EPL>
__device__ __forceinline__ void route_tokens(float *__restrict__ logits, uint32_t T, uint32_t E, uint32_t K, bool norm,
                                             uint32_t *__restrict__ topk, float *__restrict__ topw)
{
    const uint32_t lane = threadIdx.x & 31, warps = gridDim.x * (ROUTE_NT / 32);
    for (uint32_t t = blockIdx.x * (ROUTE_NT / 32) + (threadIdx.x >> 5); t < T; t += warps)
        route_token<EPL>(logits + (uint64_t)t * E, E, K, norm, lane, topk + (uint64_t)t * K, topw + (uint64_t)t * K);
}

/* One block, after the routing: the counting sort of the P = T·k pairs by
 * expert — pos (pair → row in expert order), src (row → token) — and the
 * slots (≤ SLOT_ROWS consecutive rows of one expert each). */
__device__ __forceinline__ void sort_pairs(const uint32_t *__restrict__ topk, uint32_t P, uint32_t E, uint32_t K,
                                           uint32_t *__restrict__ pos, uint32_t *__restrict__ src,
                                           uint32_t *__restrict__ slots)
{
    __shared__ uint32_t cnt[CUDA_MOE_MAX_EXPERTS], start[CUDA_MOE_MAX_EXPERTS], slot0[CUDA_MOE_MAX_EXPERTS],
        cur[CUDA_MOE_MAX_EXPERTS];
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (uint32_t e = threadIdx.x; e < E; e += ROUTE_NT)
        cnt[e] = 0, cur[e] = 0;
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < P; i += ROUTE_NT)
        atomicAdd(&cnt[topk[i]], 1u);
    __syncthreads();
    if (warp == 0) { /* exclusive scans of the counts and of their slots, 32 experts a round */
        uint32_t s = 0, ns = 0;
        for (uint32_t e0 = 0; e0 < E; e0 += 32) {
            const uint32_t e = e0 + lane, c = e < E ? cnt[e] : 0, cs = (c + SLOT_ROWS - 1) / SLOT_ROWS;
            uint32_t a = c, as = cs;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const uint32_t pa = __shfl_up_sync(0xffffffffu, a, o), ps = __shfl_up_sync(0xffffffffu, as, o);
                if (lane >= (uint32_t)o)
                    a += pa, as += ps;
            }
            if (e < E)
                start[e] = s + a - c, slot0[e] = ns + as - cs;
            s += __shfl_sync(0xffffffffu, a, 31);
            ns += __shfl_sync(0xffffffffu, as, 31);
        }
        if (lane == 0)
            slots[0] = ns;
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < P; i += ROUTE_NT) {
        const uint32_t e = topk[i], j = start[e] + atomicAdd(&cur[e], 1u);
        pos[i] = j;
        src[j] = i / K;
    }
    for (uint32_t e = threadIdx.x; e < E; e += ROUTE_NT)
        for (uint32_t c = 0; c < cnt[e]; c += SLOT_ROWS) {
            uint32_t *sl = slots + 1 + 3 * (slot0[e] + c / SLOT_ROWS);
            sl[0] = e;
            sl[1] = start[e] + c;
            sl[2] = min(SLOT_ROWS, cnt[e] - c);
        }
}

/* SORT (one block, the step's tokens ≤ its warps: decode): route, then sort.
 * Else (many blocks) route only; kernel_moe_sort follows. */
template <int EPL, bool SORT>
__global__ void __launch_bounds__(ROUTE_NT) kernel_moe_route(float *__restrict__ logits, uint32_t T, uint32_t E,
                                                             uint32_t K, bool norm, uint32_t *__restrict__ topk,
                                                             float *__restrict__ topw, uint32_t *__restrict__ pos,
                                                             uint32_t *__restrict__ src, uint32_t *__restrict__ slots)
{
    pdl_enter();
    route_tokens<EPL>(logits, T, E, K, norm, topk, topw);
    if constexpr (SORT) {
        __syncthreads(); /* the block's topk writes, seen by the whole block */
        sort_pairs(topk, T * K, E, K, pos, src, slots);
    }
}

__global__ void __launch_bounds__(ROUTE_NT) kernel_moe_sort(const uint32_t *__restrict__ topk, uint32_t P, uint32_t E,
                                                            uint32_t K, uint32_t *__restrict__ pos,
                                                            uint32_t *__restrict__ src, uint32_t *__restrict__ slots)
{
    pdl_enter();
    sort_pairs(topk, P, E, K, pos, src, slots);
}

template <int EPL>
void launch_route(struct cuda_ctx *ctx, float *logits, uint32_t T, const struct cuda_moe_weights *w,
                  struct cuda_moe_scratch *s)
{
    constexpr uint32_t WPB = ROUTE_NT / 32;
    if (T <= WPB) {
        cuda_launch(ctx, kernel_moe_route<EPL, true>, 1, ROUTE_NT, 0, logits, T, w->n_experts, w->k, w->norm_topk,
                    s->topk, s->topw, s->pos, s->src, s->slots);
        return;
    }
    const uint32_t blocks = (T + WPB - 1) / WPB;
    cuda_launch(ctx, kernel_moe_route<EPL, false>, blocks < 1024 ? blocks : 1024, ROUTE_NT, 0, logits, T,
                w->n_experts, w->k, w->norm_topk, s->topk, s->topw, s->pos, s->src, s->slots);
    cuda_launch(ctx, kernel_moe_sort, 1, ROUTE_NT, 0, (const uint32_t *)s->topk, T * w->k, w->n_experts, w->k,
                s->pos, s->src, s->slots);
}

/* xs[j] = x[src[j]]: a block a row, float4 copies (dim % 4 == 0). */
__global__ void __launch_bounds__(128) kernel_moe_gather(const float *__restrict__ x, const uint32_t *__restrict__ src,
                                                         uint32_t dim, float *__restrict__ xs)
{
    pdl_enter();
    const float4 *a = reinterpret_cast<const float4 *>(x + (uint64_t)src[blockIdx.x] * dim);
    float4 *d = reinterpret_cast<float4 *>(xs + (uint64_t)blockIdx.x * dim);
    for (uint32_t i = threadIdx.x; i < dim / 4; i += blockDim.x)
        d[i] = a[i];
}

/* y[t][i] = Σ_k topw[t,k] · ys[pos[t,k]][i] in rank order (cpu_moe's loop). */
__global__ void __launch_bounds__(256) kernel_moe_combine(const float *__restrict__ ys, const uint32_t *__restrict__ pos,
                                                          const float *__restrict__ topw, uint32_t K, uint32_t dim,
                                                          float *__restrict__ y)
{
    pdl_enter();
    const uint64_t t = blockIdx.x;
    for (uint32_t i = blockIdx.y * blockDim.x + threadIdx.x; i < dim; i += gridDim.y * blockDim.x) {
        float acc = 0.0f;
        for (uint32_t k = 0; k < K; k++)
            acc = __fadd_rn(acc, __fmul_rn(topw[t * K + k], ys[(uint64_t)pos[t * K + k] * dim + i]));
        y[t * dim + i] = acc;
    }
}

bool is_plain(enum dtype t) { return t == DTYPE_BF16 || t == DTYPE_F16 || t == DTYPE_F8_E4M3; }

bool type_ok(enum dtype t, uint64_t rows, uint64_t n)
{
    return t == DTYPE_F32 ? n % 4 == 0 : cuda_gemv_supported(t, rows, n);
}

/* y (rows of the slots, rows) = the slots' matrices · x's rows (g.xrow); a
 * quantized type reads x's nx rows prepared, here unless prepared is set. */
void grouped(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t stride, uint32_t rows, uint32_t n,
             const float *x, uint32_t nx, float *y, float scale, gemv_group g, bool prepared,
             const float *bs = nullptr, uint64_t bs_stride = 0)
{
    g.w_stride = stride;
    g.bs_stride = bs_stride;
    if (bs) { /* FP8 with block scales */
        gemv_plain_launch_grouped_bs(ctx, w, bs, rows, n, x, y, scale, g);
    } else if (t == DTYPE_F32) {
        fwd_matmul_f32_grouped(ctx, (const float *)w, rows, n, x, y, scale, g);
    } else if (is_plain(t)) {
        gemv_plain_launch_grouped(ctx, t, w, rows, n, x, y, scale, g);
    } else {
        if (!prepared)
            gemv_quant_prep_x(ctx, x, n, nx);
        gemv_quant_launch_grouped(ctx, t, w, rows, n, y, scale, g);
    }
}

/* Route T tokens and sort their pairs (kernel_moe_route, with the lanes' expert count for E). */
void route(struct cuda_ctx *ctx, float *logits, uint32_t T, const struct cuda_moe_weights *w, struct cuda_moe_scratch *s)
{
    if (w->n_experts <= 128)
        launch_route<4>(ctx, logits, T, w, s);
    else if (w->n_experts <= 256)
        launch_route<8>(ctx, logits, T, w, s);
    else
        launch_route<32>(ctx, logits, T, w, s);
}

/* y (T, dim) = each token's k expert outputs (ys) summed in rank order. */
void combine(struct cuda_ctx *ctx, const struct cuda_moe_weights *w, const struct cuda_moe_scratch *s, uint32_t T,
             float *y)
{
    const uint32_t parts = (w->dim + 255) / 256;
    cuda_launch(ctx, kernel_moe_combine, dim3(T, parts < 8 ? parts : 8), 256, 0, (const float *)s->ys,
                (const uint32_t *)s->pos, (const float *)s->topw, w->k, w->dim, y);
}

float *moe_alloc_f(uint64_t a, uint64_t b) { return (float *)cuda_alloc((size_t)(a * b * sizeof(float))); }

} // namespace

extern "C" bool cuda_moe_tokens_ok(uint32_t n_experts, uint32_t k, uint32_t max_tokens)
{
    const uint64_t P = (uint64_t)max_tokens * k;
    return max_tokens > 0 && P <= CUDA_GEMV_MAX_ROWS && moe_max_slots(P, n_experts) <= 65535;
}

extern "C" bool cuda_moe_supported(const struct cuda_moe_weights *w, char *why, size_t whylen)
{
    const char *r = NULL;
    if (w->n_experts == 0 || w->n_experts > CUDA_MOE_MAX_EXPERTS)
        r = "experts: 1..1024";
    else if (w->k == 0 || w->k > CUDA_MOE_MAX_K || w->k > w->n_experts)
        r = "experts a token: 1..16, at most the experts";
    else if (w->dim % 32 || w->ffn % 32 || w->dim == 0 || w->ffn == 0)
        r = "hidden and expert sizes: multiples of 32";
    else if (!type_ok(w->gu_type, 2 * (uint64_t)w->ffn, w->dim) || !type_ok(w->down_type, w->dim, w->ffn))
        r = "expert weight type without a GEMV kernel";
    else if (w->gu_stride % 256 || w->down_stride % 256)
        r = "expert strides: multiples of 256 bytes";
    if (r && why)
        snprintf(why, whylen, "%s", r);
    return r == NULL;
}

extern "C" struct cuda_moe_scratch *cuda_moe_scratch_init(struct cuda_ctx *ctx, const struct cuda_moe_weights *w,
                                                          uint32_t max_tokens)
{
    char why[128];
    if (!cuda_moe_supported(w, why, sizeof(why)))
        CUDA_FAIL("cuda_moe_scratch_init: %s", why);
    const uint64_t P = (uint64_t)max_tokens * w->k;
    if (!cuda_moe_tokens_ok(w->n_experts, w->k, max_tokens))
        CUDA_FAIL("cuda_moe_scratch_init: %u tokens × %u experts: more rows than a step can take", max_tokens, w->k);
    struct cuda_moe_scratch *s = (struct cuda_moe_scratch *)calloc(1, sizeof(*s));
    if (!s)
        CUDA_FAIL("cuda_moe_scratch_init: out of host memory");
    s->max_tokens = max_tokens;
    s->max_pairs = (uint32_t)P;
    s->xs = moe_alloc_f(P, w->dim);
    s->h_slots = (uint32_t *)malloc((1 + 3 * (size_t)moe_max_slots(P, w->n_experts)) * sizeof(uint32_t));
    if (!s->h_slots)
        CUDA_FAIL("cuda_moe_scratch_init: out of host memory");
    s->h = moe_alloc_f(P, 2 * (uint64_t)w->ffn);
    s->a = moe_alloc_f(P, w->ffn);
    s->ys = moe_alloc_f(P, w->dim);
    s->topk = (uint32_t *)moe_alloc_f(P, 1);
    s->topw = moe_alloc_f(P, 1);
    s->pos = (uint32_t *)moe_alloc_f(P, 1);
    s->src = (uint32_t *)moe_alloc_f(P, 1);
    s->slots = (uint32_t *)moe_alloc_f(1 + 3 * (uint64_t)moe_max_slots(P, w->n_experts), 1);
    cuda_moe_reserve(ctx, w, max_tokens);
    return s;
}

/* The quantized GEMVs' prepared x for every row of a step, now: it may not
 * grow inside the decode step's graph capture. */
extern "C" void cuda_moe_reserve(struct cuda_ctx *ctx, const struct cuda_moe_weights *w, uint32_t max_tokens)
{
    const uint32_t P = max_tokens * w->k;
    if (gemv_quant_has(w->gu_type))
        gemv_quant_xq_reserve(ctx, w->dim, max_tokens);
    if (gemv_quant_has(w->down_type))
        gemv_quant_xq_reserve(ctx, w->ffn, P);
}

extern "C" void cuda_moe_scratch_free(struct cuda_moe_scratch *s)
{
    if (!s)
        return;
    void *p[] = {s->xs, s->h, s->a, s->ys, s->topk, s->topw, s->pos, s->src, s->slots};
    for (void *q : p)
        cuda_free(q);
    free(s->h_slots);
    free(s);
}

extern "C" const uint32_t *cuda_moe_topk_ids(const struct cuda_moe_scratch *s) { return s->topk; }
extern "C" const float *cuda_moe_topk_weights(const struct cuda_moe_scratch *s) { return s->topw; }

extern "C" void cuda_moe_ffn(struct cuda_ctx *ctx, const struct cuda_moe_weights *w, struct cuda_moe_scratch *s,
                             float *logits, const float *x, uint32_t T, float *y, unsigned flags)
{
    if (T == 0)
        return;
    if (T > s->max_tokens)
        CUDA_FAIL("cuda_moe_ffn: %u tokens, scratch for %u", T, s->max_tokens);
    if (((uintptr_t)x | (uintptr_t)y) % 16)
        CUDA_FAIL("cuda_moe_ffn: x and y must be 16-byte aligned");
    const uint32_t E = w->n_experts, K = w->k, P = T * K, F = w->ffn;
    const gemv_group g = {s->slots, NULL, 0, moe_max_slots(P, E), T == 1 ? 1u : SLOT_ROWS, 0};
    gemv_group gx = g; /* gate|up reads each row's token in place */
    gx.xrow = s->src;
    route(ctx, logits, T, w, s);
    grouped(ctx, w->gu_type, w->gate_up, w->gu_stride, 2 * F, w->dim, x, T, s->h, w->gu_scale, gx,
            flags & CUDA_GEMV_X_PREPARED, w->gu_bs, w->gu_bs_stride);
    const bool down_q = gemv_quant_has(w->down_type);
    if (down_q)
        cuda_swiglu_prep(ctx, s->h, s->a, P, F);
    else
        cuda_swiglu(ctx, s->h, s->a, P, F);
    grouped(ctx, w->down_type, w->down, w->down_stride, w->dim, F, s->a, P, s->ys, w->down_scale, g, down_q,
            w->down_bs, w->down_bs_stride);
    combine(ctx, w, s, T, y);
}

extern "C" bool cuda_moe_gemm_supported(const struct cuda_moe_weights *w)
{
    return cuda_gemm_supported(w->gu_type, 2 * (uint64_t)w->ffn, w->dim) &&
           cuda_gemm_supported(w->down_type, w->dim, w->ffn);
}

extern "C" void cuda_moe_ffn_gemm(struct cuda_ctx *ctx, struct cuda_gemm *gemm, const struct cuda_moe_weights *w,
                                  struct cuda_moe_scratch *s, float *logits, const float *x, uint32_t T, float *y)
{
    if (T == 0)
        return;
    if (T > s->max_tokens)
        CUDA_FAIL("cuda_moe_ffn_gemm: %u tokens, scratch for %u", T, s->max_tokens);
    const uint32_t E = w->n_experts, K = w->k, P = T * K, F = w->ffn, dim = w->dim;
    route(ctx, logits, T, w, s);
    cuda_launch(ctx, kernel_moe_gather, P, 128, 0, x, (const uint32_t *)s->src, dim, s->xs);
    /* the experts' row ranges: the slots (consecutive, ≤ 8 rows each, an
     * expert's in a row) come down and are merged in place, one an expert */
    uint32_t *r = s->h_slots + 1;
    cuda_download(ctx, s->h_slots, s->slots, (1 + 3 * (size_t)moe_max_slots(P, E)) * sizeof(uint32_t));
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->h_slots[0]; i++) {
        if (n > 0 && r[3 * (n - 1)] == r[3 * i]) {
            r[3 * (n - 1) + 2] += r[3 * i + 2];
        } else {
            memmove(r + 3 * n, r + 3 * i, 3 * sizeof(uint32_t));
            n++;
        }
    }
    /* each expert's row count differs call to call: plans made for them are not worth timing (cuda_gemm_set_timed) */
    const bool timed = cuda_gemm_set_timed(gemm, false);
    for (uint32_t j = 0; j < n; j++) { /* {expert, first row, rows} */
        const uint32_t e = r[3 * j], first = r[3 * j + 1];
        const void *we = (const uint8_t *)w->gate_up + e * w->gu_stride;
        if (w->gu_bs)
            cuda_gemm_run_bs(gemm, we, w->gu_bs + e * w->gu_bs_stride, NULL, 2 * (uint64_t)F, dim,
                             s->xs + (uint64_t)first * dim, r[3 * j + 2], s->h + (uint64_t)first * 2 * F, w->gu_scale,
                             0);
        else
            cuda_gemm_run(gemm, w->gu_type, we, 2 * (uint64_t)F, dim, s->xs + (uint64_t)first * dim, r[3 * j + 2],
                          s->h + (uint64_t)first * 2 * F, w->gu_scale, 0);
    }
    cuda_swiglu(ctx, s->h, s->a, P, F); /* (the GEMM converts its x itself: no preparation) */
    for (uint32_t j = 0; j < n; j++) {
        const uint32_t e = r[3 * j], first = r[3 * j + 1];
        const void *we = (const uint8_t *)w->down + e * w->down_stride;
        if (w->down_bs)
            cuda_gemm_run_bs(gemm, we, w->down_bs + e * w->down_bs_stride, NULL, dim, F, s->a + (uint64_t)first * F,
                             r[3 * j + 2], s->ys + (uint64_t)first * dim, w->down_scale, 0);
        else
            cuda_gemm_run(gemm, w->down_type, we, dim, F, s->a + (uint64_t)first * F, r[3 * j + 2],
                          s->ys + (uint64_t)first * dim, w->down_scale, 0);
    }
    cuda_gemm_set_timed(gemm, timed);
    combine(ctx, w, s, T, y);
}
