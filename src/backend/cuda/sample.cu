/* backend/cuda/sample.cu — sampling on the GPU: the greedy pick of each logit
 * row, so that a decode step of greedy sequences sends token ids to the host
 * instead of vocab-sized rows (64 rows of Llama-3's 128256 logits are 33 MB a
 * step; their ids 256 bytes). The rule is engine/backend.h's
 * backend_logits_argmax, bit for bit: NaN counts as −inf, +inf as FLT_MAX,
 * the lowest index among equal maxima, −1 when every logit is −inf or NaN.
 * (top-k / top-p with temperature stay on the host for now.)
 *
 * Floor: the rows are read once, T·vocab·4 bytes / 4.3 TB/s: 64 × 128256 →
 * 7.6 µs. One block of 1024 threads per row.
 */
#include <float.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_decode.h"

namespace {

constexpr int AM_THREADS = 1024;

/* a better than b: larger value, or equal and a lower index */
__device__ __forceinline__ bool am_better(float va, int ia, float vb, int ib)
{
    return va > vb || (va == vb && ia < ib);
}

/* The best (value, index) of the warp into every lane; index −1 = nothing seen. */
__device__ __forceinline__ void am_warp_best(float &best, int &at)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, best, o);
        const int oi = __shfl_xor_sync(0xffffffffu, at, o);
        if (oi >= 0 && (at < 0 || am_better(ov, oi, best, at)))
            best = ov, at = oi;
    }
}

__global__ void __launch_bounds__(AM_THREADS) kernel_argmax_rows(const float *__restrict__ logits, uint32_t vocab,
                                                                 int32_t *__restrict__ out)
{
    pdl_enter();
    __shared__ float sv[AM_THREADS / 32];
    __shared__ int si[AM_THREADS / 32];
    const float *l = logits + (uint64_t)blockIdx.x * vocab;
    float best = -INFINITY;
    int at = -1;
    for (uint32_t i = threadIdx.x; i < vocab; i += AM_THREADS) {
        float v = l[i];
        v = isnan(v) ? -INFINITY : v == INFINITY ? FLT_MAX : v;
        if (v > best) { /* this thread's indices rise: the first of equal maxima stays */
            best = v;
            at = (int)i;
        }
    }
    am_warp_best(best, at);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        sv[warp] = best, si[warp] = at;
    __syncthreads();
    if (warp == 0) {
        best = sv[lane], at = si[lane];
        am_warp_best(best, at);
        if (lane == 0)
            out[blockIdx.x] = at;
    }
}

} // namespace

extern "C" void cuda_argmax_rows(struct cuda_ctx *ctx, const float *logits, uint32_t rows, uint32_t vocab,
                                 int32_t *out)
{
    if (rows == 0)
        return;
    cuda_launch(ctx, kernel_argmax_rows, rows, AM_THREADS, 0, logits, vocab, out);
}
