/* backend/cuda/norm.cu — RMSNorm (optionally fused with the residual add) and
 * SwiGLU: the small elementwise steps between the decode GEMVs.
 *
 * Floors (bytes / 4.3 TB/s; at decode sizes both are launch-bound, ~2–3 µs):
 *   rmsnorm: read x (and residual, written back), read w, write out:
 *            (3 or 5)·4·n bytes a row — 4096 wide: 48–80 KB → 11–19 ns;
 *   swiglu:  read 2·n, write n floats a row — 14336 wide: 172 KB → 40 ns.
 * What matters at decode is one launch each instead of several, not bandwidth.
 *
 * rmsnorm: one block of 256 threads per row; pass 1 adds the residual (writing
 * it back) and sums squares in f32, a block sum, pass 2 scales (re-reading the
 * row from L1/L2). swiglu: a grid-stride loop, f32 expf.
 * The _prep variants also write their output in the quantized GEMVs' prepared
 * form (gemv_prep32, the same function cuda_gemv_prep_x uses): the GEMV that
 * reads it next then needs no prep kernel of its own. */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"

namespace {

constexpr int NT = 256;

template <bool PREP>
__global__ void __launch_bounds__(NT) kernel_rmsnorm(const float *x, float *residual, const float *__restrict__ w,
                                                     float *out, uint32_t n, float eps, uint8_t *xq)
{
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
    /* a warp's 32 lanes hold 32 consecutive elements (n % 32 == 0 with PREP) */
    for (uint32_t i = threadIdx.x; i < n; i += NT) {
        const float v = src[base + i] * s * w[i];
        out[base + i] = v;
        if constexpr (PREP)
            gemv_prep32(v, threadIdx.x & 31, xq, n, blockIdx.x, i / 32);
    }
}

template <bool PREP>
__global__ void kernel_swiglu(const float *__restrict__ gu, float *__restrict__ out, uint32_t rows, uint32_t n,
                              uint8_t *xq)
{
    const uint64_t total = (uint64_t)rows * n;
    /* stride a multiple of 32: a warp's lanes hold 32 consecutive elements of one row (n % 32 == 0 with PREP) */
    for (uint64_t k = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; k < total; k += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t r = k / n, i = k % n;
        const float g = gu[r * 2 * n + i], u = gu[r * 2 * n + n + i];
        const float v = g / (1.0f + expf(-g)) * u;
        out[k] = v;
        if constexpr (PREP)
            gemv_prep32(v, threadIdx.x & 31, xq, n, (uint32_t)r, (uint32_t)(i / 32));
    }
}

} // namespace

extern "C" void cuda_rmsnorm(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                             uint32_t nrows, uint32_t n, float eps)
{
    if (!nrows || !n)
        return;
    kernel_rmsnorm<false><<<nrows, NT, 0, ctx->stream>>>(x, residual, w, out, n, eps, nullptr);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_rmsnorm_prep(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                                  uint32_t nrows, uint32_t n, float eps)
{
    uint8_t *xq = gemv_quant_xq_reserve(ctx, n, nrows); /* checks n % 32 and nrows ≤ max batch */
    kernel_rmsnorm<true><<<nrows, NT, 0, ctx->stream>>>(x, residual, w, out, n, eps, xq);
    CUDA_CHECK_LAUNCH();
}

static void launch_swiglu(struct cuda_ctx *ctx, const float *gu, float *out, uint32_t rows, uint32_t n, uint8_t *xq)
{
    const uint64_t total = (uint64_t)rows * n;
    if (!total)
        return;
    const uint64_t want = (total + NT - 1) / NT;
    const unsigned blocks = (unsigned)(want < 4096 ? want : 4096);
    if (xq)
        kernel_swiglu<true><<<blocks, NT, 0, ctx->stream>>>(gu, out, rows, n, xq);
    else
        kernel_swiglu<false><<<blocks, NT, 0, ctx->stream>>>(gu, out, rows, n, nullptr);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_swiglu(struct cuda_ctx *ctx, const float *gu, float *out, uint32_t rows, uint32_t n)
{
    launch_swiglu(ctx, gu, out, rows, n, nullptr);
}

extern "C" void cuda_swiglu_prep(struct cuda_ctx *ctx, const float *gu, float *out, uint32_t rows, uint32_t n)
{
    launch_swiglu(ctx, gu, out, rows, n, gemv_quant_xq_reserve(ctx, n, rows));
}
