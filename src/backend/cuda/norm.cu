/* backend/cuda/norm.cu — RMSNorm (optionally fused with the residual add) and
 * SwiGLU: the small elementwise steps between the decode GEMVs.
 *
 * Floors (bytes / 4.3 TB/s): rmsnorm reads x (and the residual, written back)
 * and w and writes out: (3 or 5)·4·n bytes a row, 48–80 KB at n = 4096 → 11–19
 * ns; swiglu reads 2n and writes n floats a row, 172 KB at n = 14336 → 40 ns.
 * At decode sizes both are bound by launch and memory latency (~2 µs), not
 * bandwidth: what matters is few dependent round trips and one launch each.
 *
 * rmsnorm: one block of 1024 threads per row; each thread keeps its ≤ 4 float4
 * of the row and of the weights (loaded before the PDL wait) in registers
 * (n ≤ 16384; longer rows, or n % 4 ≠ 0, take a plain two-pass loop), so the
 * row is read once: one round trip, a block sum, the scaled write. swiglu: float4 grid-stride loop, f32 expf.
 * cuda_glu_prep: the same activation over separate gate / up buffers
 * (silu or gelu-tanh, fwd.cu's kernel_glu arithmetic), in place, plus prep.
 * The _prep variants also write their output in the quantized GEMVs' prepared
 * form (gemv_prep_x4, the function cuda_gemv_prep_x uses too): the GEMV that
 * reads it next then needs no prep kernel of its own. Outputs that are a
 * matmul's input (cuda_rmsnorm_in, the _prep variants, the GLUs) are rounded
 * to bf16 first under cuda_ctx_set_act_bf16 (rnd), prepared from the rounded
 * values in 16 bits (rnd is gemv_prep_x4's x16). cuda_rmsnorm_in_split
 * writes its output also as the wgmma batched GEMV's A rows
 * (mmv_split_store4), so no split kernel runs before it;
 * cuda_rmsnorm_in_gemm writes the prefill GEMM's bf16 parts instead of its
 * output, rows ≤ 4096 on 128 threads a row (kernel_rmsnorm_gemm: the same
 * bits as kernel_rmsnorm4, more rows an SM). */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int NT = 1024;
constexpr int KV = 4; /* float4 a thread keeps: rows up to KV·4·NT = 16384 */

__device__ __forceinline__ float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }

/* The vectorised kernels' steps, one definition for both (kernel_rmsnorm_gemm
 * must give kernel_rmsnorm4's bits): float4 j of the row at x (+ the
 * residual's, the sum written back to the residual); Σ v² onto acc in their
 * order; the normalized, scaled (and under rnd rounded) output. */
__device__ __forceinline__ float4 norm_in4(const float *x, float *residual, uint64_t j)
{
    float4 v = reinterpret_cast<const float4 *>(x)[j];
    if (residual) {
        v = add4(v, reinterpret_cast<const float4 *>(residual)[j]);
        reinterpret_cast<float4 *>(residual)[j] = v;
    }
    return v;
}
__device__ __forceinline__ float sumsq4(float4 v, float acc)
{
    return fmaf(v.x, v.x, fmaf(v.y, v.y, fmaf(v.z, v.z, fmaf(v.w, v.w, acc))));
}
__device__ __forceinline__ float4 norm_out4(float4 v, float s, float4 g, bool rnd)
{
    return act_round4(make_float4(v.x * s * g.x, v.y * s * g.y, v.z * s * g.z, v.w * s * g.w), rnd);
}

/* Rows of n % 4 == 0, n ≤ 16384: one read, values kept in registers. */
template <bool PREP>
__global__ void __launch_bounds__(NT) kernel_rmsnorm4(const float *x, float *residual, const float *__restrict__ w,
                                                      float *out, uint32_t n, float eps, uint8_t *xq, bool rnd,
                                                      uint8_t *xs, uint2 *ghi, uint2 *glo)
{
    pdl_trigger();
    __shared__ float red[NT / 32];
    __shared__ float inv;
    const uint32_t n4 = n / 4;
    const uint64_t base4 = (uint64_t)blockIdx.x * n4;
    float4 g[KV]; /* the weights are constant: loaded before the wait */
#pragma unroll
    for (int k = 0; k < KV; k++) {
        const uint32_t i = threadIdx.x + k * NT;
        g[k] = i < n4 ? __ldg(reinterpret_cast<const float4 *>(w) + i) : make_float4(0, 0, 0, 0);
    }
    pdl_wait();
    float4 v[KV];
    float acc[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < KV; k++) {
        const uint32_t i = threadIdx.x + k * NT;
        v[k] = make_float4(0, 0, 0, 0);
        if (i < n4) {
            v[k] = norm_in4(x, residual, base4 + i);
            acc[0] = sumsq4(v[k], acc[0]);
        }
    }
    block_sum<NT, 1>(acc, red);
    if (threadIdx.x == 0)
        inv = rsqrtf(acc[0] / (float)n + eps);
    __syncthreads();
    const float s = inv;
#pragma unroll
    for (int k = 0; k < KV; k++) {
        const uint32_t i = threadIdx.x + k * NT;
        const bool valid = i < n4;
        float4 o = make_float4(0, 0, 0, 0);
        if (valid) {
            o = norm_out4(v[k], s, g[k], rnd);
            if (!ghi) /* (cuda_rmsnorm_in_gemm: the GEMM reads the parts only) */
                reinterpret_cast<float4 *>(out)[base4 + i] = o;
            if (xs) /* the wgmma GEMV's A rows of out (cuda_rmsnorm_in_split; one a token when bf16-valued) */
                mmv_split_store4(xs, o, blockIdx.x, 4 * (uint64_t)i, n, rnd);
            if (ghi) /* the prefill GEMM's parts of out (cuda_rmsnorm_in_gemm) */
                gemm_x_store4(ghi, glo, base4 + i, o);
        }
        if constexpr (PREP) /* whole warps call it: lanes 8m..8m+7 are one 32-block (n % 32 == 0) */
            gemv_prep_x4(o, valid, threadIdx.x & 31, xq, n, blockIdx.x, 4 * i, rnd);
    }
}

/* cuda_rmsnorm_in_gemm's norm of rows of n ≤ 4·NT (n % 4 == 0): RT threads a
 * row instead of NT, thread t playing kernel_rmsnorm4's threads t + RT·j
 * (j < NT / RT). A warp's butterfly over its j-th partials is the butterfly
 * of kernel_rmsnorm4's warp warp + (RT / 32)·j over the same values (the same
 * lanes hold the same float4), stored in that warp's slot; the slots are then
 * summed as block_sum sums them — so the same bits as kernel_rmsnorm4, with
 * 9 rows an SM in flight instead of 2 (54 registers; a 4096-token prefill's norm was at
 * 67 % of its bytes' floor, 77.6 µs a launch; thirtieth run).
 * Writes the residual back and the GEMM's parts of out, not out. */
constexpr int RT = 128, RJ = NT / RT;
static_assert(NT / 32 == 32 && RT % 32 == 0 && NT % RT == 0, "block_sum's last step reads one slot a lane");
__global__ void __launch_bounds__(RT) kernel_rmsnorm_gemm(const float *x, float *residual, const float *__restrict__ w,
                                                          uint32_t n, float eps, bool rnd, uint2 *__restrict__ ghi,
                                                          uint2 *__restrict__ glo)
{
    pdl_trigger();
    __shared__ float red[NT / 32];
    __shared__ float inv;
    const uint32_t n4 = n / 4, t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const uint64_t base4 = (uint64_t)blockIdx.x * n4;
    pdl_wait();
    float4 v[RJ]; /* (the weights are read at the end, from L2: fewer registers, more rows an SM) */
#pragma unroll
    for (int j = 0; j < RJ; j++) {
        const uint32_t i = t + j * RT;
        v[j] = make_float4(0, 0, 0, 0);
        if (i < n4)
            v[j] = norm_in4(x, residual, base4 + i);
    }
#pragma unroll
    for (int j = 0; j < RJ; j++) { /* kernel_rmsnorm4's thread t + RT·j: its one float4 (n ≤ 4·NT) */
        const uint32_t i = t + j * RT;
        float a = 0.0f;
        if (i < n4)
            a = sumsq4(v[j], a);
        a = warp_sum(a);
        if (lane == 0)
            red[warp + (RT / 32) * j] = a;
    }
    __syncthreads();
    if (warp == 0) { /* block_sum's last step */
        const float a = warp_sum(red[lane]);
        if (lane == 0)
            inv = rsqrtf(a / (float)n + eps);
    }
    __syncthreads();
    const float s = inv;
#pragma unroll
    for (int j = 0; j < RJ; j++) {
        const uint32_t i = t + j * RT;
        if (i < n4) {
            const float4 g = __ldg(reinterpret_cast<const float4 *>(w) + i);
            gemm_x_store4(ghi, glo, base4 + i, norm_out4(v[j], s, g, rnd));
        }
    }
}

/* Any n: two passes, the second re-reading the row from L1/L2. */
__global__ void __launch_bounds__(NT) kernel_rmsnorm(const float *x, float *residual, const float *__restrict__ w,
                                                     float *out, uint32_t n, float eps, bool rnd)
{
    pdl_enter();
    __shared__ float red[NT / 32];
    __shared__ float inv;
    const uint64_t base = (uint64_t)blockIdx.x * n;
    float acc[1] = {0.0f};
    for (uint32_t i = threadIdx.x; i < n; i += NT) {
        float v = x[base + i];
        if (residual) {
            v += residual[base + i];
            residual[base + i] = v;
        }
        acc[0] = fmaf(v, v, acc[0]);
    }
    block_sum<NT, 1>(acc, red);
    if (threadIdx.x == 0)
        inv = rsqrtf(acc[0] / (float)n + eps);
    __syncthreads();
    const float s = inv;
    const float *src = residual ? residual : x;
    for (uint32_t i = threadIdx.x; i < n; i += NT)
        out[base + i] = act_round(src[base + i] * s * w[i], rnd);
}

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

/* n % 4 == 0: one thread per 4 outputs; the grid stride is a multiple of 32
 * lanes, so 8-lane groups are whole 32-blocks of one row when n % 32 == 0. */
template <bool PREP>
__global__ void kernel_swiglu4(const float *__restrict__ gu, float *__restrict__ out, uint32_t rows, uint32_t n,
                               uint8_t *xq, bool rnd)
{
    pdl_enter();
    const uint32_t n4 = n / 4;
    const uint64_t total4 = (uint64_t)rows * n4;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t k0 = (uint64_t)blockIdx.x * blockDim.x; k0 < total4; k0 += stride) {
        const uint64_t k = k0 + threadIdx.x;
        const bool valid = k < total4;
        const uint64_t r = valid ? k / n4 : 0, i4 = valid ? k % n4 : 0;
        float4 o = make_float4(0, 0, 0, 0);
        if (valid) {
            const float4 g = __ldg(reinterpret_cast<const float4 *>(gu) + r * 2 * n4 + i4);
            const float4 u = __ldg(reinterpret_cast<const float4 *>(gu) + r * 2 * n4 + n4 + i4);
            o = act_round4(make_float4(silu_mul(g.x, u.x), silu_mul(g.y, u.y), silu_mul(g.z, u.z), silu_mul(g.w, u.w)),
                           rnd);
            reinterpret_cast<float4 *>(out)[k] = o;
        }
        if constexpr (PREP)
            gemv_prep_x4(o, valid, threadIdx.x & 31, xq, n, (uint32_t)r, (uint32_t)(4 * i4), rnd);
    }
}

/* Gate and up in separate (rows, n) buffers (the decode path's two GEMV
 * outputs), the result written over the gate in place: out[k] = act(g[k]) ·
 * u[k], act silu or gelu-tanh by fwd.cu's kernel_glu's glu_in (gate and up
 * rounded first under bf16 activations), then the GEMV preparation of the
 * row. n % 32 == 0. */
template <bool GELU>
__global__ void kernel_glu_prep(float *g_out, const float *__restrict__ up, uint32_t rows, uint32_t n, uint8_t *xq,
                                bool rnd)
{
    pdl_enter();
    const uint32_t n4 = n / 4;
    const uint64_t total4 = (uint64_t)rows * n4;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t k0 = (uint64_t)blockIdx.x * blockDim.x; k0 < total4; k0 += stride) {
        const uint64_t k = k0 + threadIdx.x;
        const bool valid = k < total4;
        const uint64_t r = valid ? k / n4 : 0, i4 = valid ? k % n4 : 0;
        float4 o = make_float4(0, 0, 0, 0);
        if (valid) {
            const float4 g = reinterpret_cast<const float4 *>(g_out)[k];
            const float4 u = __ldg(reinterpret_cast<const float4 *>(up) + k);
            const float gv[4] = {g.x, g.y, g.z, g.w}, uv[4] = {u.x, u.y, u.z, u.w};
            float ov[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                ov[j] = glu_in(gv[j], uv[j], GELU, rnd);
            o = make_float4(ov[0], ov[1], ov[2], ov[3]);
            reinterpret_cast<float4 *>(g_out)[k] = o;
        }
        gemv_prep_x4(o, valid, threadIdx.x & 31, xq, n, (uint32_t)r, (uint32_t)(4 * i4), rnd);
    }
}

__global__ void kernel_swiglu(const float *__restrict__ gu, float *__restrict__ out, uint32_t rows, uint32_t n, bool rnd)
{
    pdl_enter();
    const uint64_t total = (uint64_t)rows * n;
    for (uint64_t k = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; k < total; k += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t r = k / n, i = k % n;
        out[k] = act_round(silu_mul(gu[r * 2 * n + i], gu[r * 2 * n + n + i]), rnd);
    }
}

/* Whether a norm of rows of n takes kernel_rmsnorm4 (one read, in registers). */
bool rmsnorm_vec(const float *x, const float *residual, const float *w, const float *out, uint32_t n)
{
    return n % 4 == 0 && n <= 4u * KV * NT &&
           (((uintptr_t)x | (uintptr_t)residual | (uintptr_t)w | (uintptr_t)out) % 16) == 0;
}

void launch_rmsnorm(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                    uint32_t nrows, uint32_t n, float eps, uint8_t *xq, bool rnd)
{
    const bool vec = rmsnorm_vec(x, residual, w, out, n);
    if (xq && !vec)
        CUDA_FAIL("rmsnorm_prep: n = %u must be a multiple of 32 and ≤ %d, pointers 16-byte aligned", n, 4 * KV * NT);
    if (xq)
        cuda_launch(ctx, kernel_rmsnorm4<true>, nrows, NT, 0, x, residual, w, out, n, eps, xq, rnd, nullptr, nullptr,
                    nullptr);
    else if (vec)
        cuda_launch(ctx, kernel_rmsnorm4<false>, nrows, NT, 0, x, residual, w, out, n, eps, nullptr, rnd, nullptr,
                    nullptr, nullptr);
    else
        cuda_launch(ctx, kernel_rmsnorm, nrows, NT, 0, x, residual, w, out, n, eps, rnd);
}

void launch_swiglu(struct cuda_ctx *ctx, const float *gu, float *out, uint32_t rows, uint32_t n, uint8_t *xq)
{
    const uint64_t total = (uint64_t)rows * n;
    if (!total)
        return;
    const bool vec = n % 4 == 0 && (((uintptr_t)gu | (uintptr_t)out) % 16) == 0;
    if (xq && !vec)
        CUDA_FAIL("swiglu_prep: n = %u must be a multiple of 32, pointers 16-byte aligned", n);
    constexpr int T = 256;
    const uint64_t items = vec ? total / 4 : total;
    const uint64_t want = (items + T - 1) / T;
    const unsigned blocks = (unsigned)(want < 4096 ? want : 4096);
    const bool rnd = ctx->act_bf16; /* a GLU's output is always a matmul's input */
    if (xq)
        cuda_launch(ctx, kernel_swiglu4<true>, blocks, T, 0, gu, out, rows, n, xq, rnd);
    else if (vec)
        cuda_launch(ctx, kernel_swiglu4<false>, blocks, T, 0, gu, out, rows, n, nullptr, rnd);
    else
        cuda_launch(ctx, kernel_swiglu, blocks, T, 0, gu, out, rows, n, rnd);
}

} // namespace

extern "C" void cuda_rmsnorm(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                             uint32_t nrows, uint32_t n, float eps)
{
    if (!nrows || !n)
        return;
    launch_rmsnorm(ctx, x, residual, w, out, nrows, n, eps, nullptr, false);
}

extern "C" void cuda_rmsnorm_in(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                                uint32_t nrows, uint32_t n, float eps)
{
    if (!nrows || !n)
        return;
    launch_rmsnorm(ctx, x, residual, w, out, nrows, n, eps, nullptr, ctx->act_bf16);
}

extern "C" bool cuda_rmsnorm_in_split(struct cuda_ctx *ctx, const float *x, float *residual, const float *w,
                                      float *out, uint32_t nrows, uint32_t n, float eps)
{
    if (!nrows || !n)
        return false;
    uint8_t *xs = rmsnorm_vec(x, residual, w, out, n) ? cuda_mmv_split_claim(ctx, out, nrows, n) : nullptr;
    if (!xs) {
        launch_rmsnorm(ctx, x, residual, w, out, nrows, n, eps, nullptr, ctx->act_bf16);
        return false;
    }
    cuda_launch(ctx, kernel_rmsnorm4<false>, nrows, NT, 0, x, residual, w, out, n, eps, nullptr, ctx->act_bf16, xs,
                nullptr, nullptr);
    return true;
}

extern "C" bool cuda_rmsnorm_in_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, const float *x,
                                     float *residual, const float *w, float *out, uint32_t nrows, uint32_t n, float eps)
{
    if (!nrows || !n)
        return false;
    uint16_t *lo = nullptr, *hi = rmsnorm_vec(x, residual, w, out, n) ? cuda_gemm_x_claim(g, t, out, n, nrows, &lo)
                                                                        : nullptr;
    if (!hi) {
        launch_rmsnorm(ctx, x, residual, w, out, nrows, n, eps, nullptr, ctx->act_bf16);
        return false;
    }
    if (n <= 4u * NT) /* (the same bits, more rows in flight) */
        cuda_launch(ctx, kernel_rmsnorm_gemm, nrows, RT, 0, x, residual, w, n, eps, ctx->act_bf16,
                    reinterpret_cast<uint2 *>(hi), reinterpret_cast<uint2 *>(lo));
    else
        cuda_launch(ctx, kernel_rmsnorm4<false>, nrows, NT, 0, x, residual, w, out, n, eps, nullptr, ctx->act_bf16,
                    nullptr, reinterpret_cast<uint2 *>(hi), reinterpret_cast<uint2 *>(lo));
    return true;
}

extern "C" void cuda_rmsnorm_prep(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                                  uint32_t nrows, uint32_t n, float eps)
{
    uint8_t *xq = gemv_quant_xq_reserve(ctx, n, nrows); /* checks n % 32 and nrows ≤ max batch */
    launch_rmsnorm(ctx, x, residual, w, out, nrows, n, eps, xq, ctx->act_bf16);
}

extern "C" void cuda_glu_prep(struct cuda_ctx *ctx, float *gate, const float *up, uint32_t rows, uint32_t n,
                              bool gelu)
{
    uint8_t *xq = gemv_quant_xq_reserve(ctx, n, rows); /* checks n % 32 and rows ≤ max batch */
    if (((uintptr_t)gate | (uintptr_t)up) % 16 != 0)
        CUDA_FAIL("glu_prep: pointers must be 16-byte aligned");
    const uint64_t want = ((uint64_t)rows * (n / 4) + 255) / 256;
    const unsigned blocks = (unsigned)(want < 4096 ? want : 4096);
    if (gelu)
        cuda_launch(ctx, kernel_glu_prep<true>, blocks, 256, 0, gate, up, rows, n, xq, ctx->act_bf16);
    else
        cuda_launch(ctx, kernel_glu_prep<false>, blocks, 256, 0, gate, up, rows, n, xq, ctx->act_bf16);
}

extern "C" void cuda_swiglu(struct cuda_ctx *ctx, const float *gu, float *out, uint32_t rows, uint32_t n)
{
    launch_swiglu(ctx, gu, out, rows, n, nullptr);
}

extern "C" void cuda_swiglu_prep(struct cuda_ctx *ctx, const float *gu, float *out, uint32_t rows, uint32_t n)
{
    launch_swiglu(ctx, gu, out, rows, n, gemv_quant_xq_reserve(ctx, n, rows));
}
