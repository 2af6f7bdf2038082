/* backend/cuda/attn_combine.cuh — the merge of split-K attention partials,
 * shared by the decode kernel (attn_decode.cu) and the split spans of the
 * prefill kernel (attn_prefill.cu), so both fold partials with the same float
 * operations in the same order.
 *
 * A partial of split s is (m_s, l_s, acc_s[hd]): the largest base-2 score m of
 * the split's positions, l = Σ 2^(score − m), acc = Σ 2^(score − m)·V; an empty
 * split has m = −inf, l = 0 (its acc is never read).
 */
#ifndef MEMRA_BACKEND_CUDA_ATTN_COMBINE_CUH
#define MEMRA_BACKEND_CUDA_ATTN_COMBINE_CUH

#include <math.h>
#include <stdint.h>

/* out[col] = Σ_s w_s·acc_s[col] / Σ_s w_s·l_s over the splits s < ns (ns ≤ 32),
 * w_s = 2^(m_s − max m) (0 for an empty split), summed in split order. Split
 * s's (m, l) are ml[s·ml_stride], ml[s·ml_stride + 1]; its acc starts at
 * acc + s·acc_stride. Called by a whole CTA (blockDim.x ≥ 32), once. */
static __device__ __forceinline__ void attn_combine_row(const float *__restrict__ acc, size_t acc_stride,
                                                        const float *__restrict__ ml, size_t ml_stride, uint32_t ns,
                                                        float *__restrict__ out, uint32_t hd)
{
    __shared__ float s_w[32], s_l[32];
    __shared__ float s_inv;
    if (threadIdx.x < 32) { /* one split a lane */
        const bool have = threadIdx.x < ns;
        const float mi = have ? ml[threadIdx.x * ml_stride] : -INFINITY;
        const float li = have ? ml[threadIdx.x * ml_stride + 1] : 0.0f;
        float M = mi;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
        s_w[threadIdx.x] = li > 0.0f ? exp2f(mi - M) : 0.0f;
        s_l[threadIdx.x] = li;
        __syncwarp();
        if (threadIdx.x == 0) {
            float L = 0.0f;
            for (uint32_t i = 0; i < ns; i++)
                L = fmaf(s_l[i], s_w[i], L);
            s_inv = 1.0f / L;
        }
    }
    __syncthreads();
    /* the ns loads of a column are issued together (an empty split's acc,
     * never written, is loaded but not used), then folded in split order */
    for (uint32_t col = threadIdx.x; col < hd; col += blockDim.x) {
        float a[32];
#pragma unroll
        for (uint32_t i = 0; i < 32; i++)
            a[i] = i < ns ? acc[i * acc_stride + col] : 0.0f;
        float A = 0.0f;
#pragma unroll
        for (uint32_t i = 0; i < 32; i++)
            if (i < ns && s_w[i] != 0.0f)
                A = fmaf(a[i], s_w[i], A);
        out[col] = A * s_inv;
    }
}

#endif
