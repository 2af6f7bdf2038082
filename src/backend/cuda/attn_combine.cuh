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

#include "backend/cuda/cuda_common.cuh"

/* Columns col0, col0 + step, ... < hd of a merged row: each column's split
 * partials below ne loaded together (an empty split's acc, never written, may
 * be loaded among them but is not used; at short depth most of the 32 splits
 * are past ne), then folded in split order with the splits' weights w(i), and
 * scaled by inv. __ldcg: the partials may have been written by this CTA (the
 * per-row decode kernels), so not through the read-only path. */
template <class W>
static __device__ __forceinline__ void attn_combine_cols(const float *__restrict__ acc, size_t acc_stride,
                                                         uint32_t col0, uint32_t step, uint32_t hd, uint32_t ne,
                                                         uint32_t ns, W w, float inv, float *__restrict__ out,
                                                         float *keep, bool rnd)
{
    for (uint32_t col = col0; col < hd; col += step) {
        float a[32];
#pragma unroll
        for (uint32_t i = 0; i < 32; i++)
            a[i] = i < ne ? __ldcg(acc + i * acc_stride + col) : 0.0f;
        float A = 0.0f;
#pragma unroll
        for (uint32_t i = 0; i < 32; i++)
            if (i < ns && w(i) != 0.0f)
                A = fmaf(a[i], w(i), A);
        const float v = act_round(A * inv, rnd);
        out[col] = v;
        if (keep)
            keep[col] = v;
    }
}

/* out[col] = Σ_s w_s·acc_s[col] / Σ_s w_s·l_s over the splits s < ns (ns ≤ 32),
 * w_s = 2^(m_s − max m) (0 for an empty split), summed in split order. Split
 * s's (m, l) are ml[s·ml_stride], ml[s·ml_stride + 1]; its acc starts at
 * acc + s·acc_stride. Called by a whole CTA (blockDim.x ≥ 32); again only
 * after a barrier (its shared memory is reused). keep (shared memory of hd
 * floats, or NULL): a copy of out for the caller, read after a barrier. rnd:
 * out rounded to bf16 (a matmul's input under cuda_ctx_set_act_bf16). */
static __device__ __forceinline__ void attn_combine_row(const float *__restrict__ acc, size_t acc_stride,
                                                        const float *__restrict__ ml, size_t ml_stride, uint32_t ns,
                                                        float *__restrict__ out, uint32_t hd, float *keep = nullptr,
                                                        bool rnd = false)
{
    __shared__ float s_w[32], s_l[32];
    __shared__ float s_inv;
    __shared__ uint32_t s_ne;
    if (threadIdx.x < 32) { /* one split a lane */
        const bool have = threadIdx.x < ns;
        const float mi = have ? __ldcg(ml + threadIdx.x * ml_stride) : -INFINITY;
        const float li = have ? __ldcg(ml + threadIdx.x * ml_stride + 1) : 0.0f;
        float M = mi;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
        const float wi = li > 0.0f ? exp2f(mi - M) : 0.0f;
        s_w[threadIdx.x] = wi;
        s_l[threadIdx.x] = li;
        /* splits from the last one with a weight on add nothing: not loaded */
        const uint32_t used = __ballot_sync(0xffffffffu, wi != 0.0f);
        if (threadIdx.x == 0)
            s_ne = 32 - __clz(used);
        __syncwarp();
        if (threadIdx.x == 0) {
            float L = 0.0f;
            for (uint32_t i = 0; i < ns; i++)
                L = fmaf(s_l[i], s_w[i], L);
            s_inv = 1.0f / L;
        }
    }
    __syncthreads();
    attn_combine_cols(acc, acc_stride, threadIdx.x, blockDim.x, hd, s_ne, ns, [&](uint32_t i) { return s_w[i]; },
                      s_inv, out, keep, rnd);
}

/* attn_combine_row's operations for one row by one warp — the splits' weights
 * a lane each, then columns lane, lane + 32, ... — the same values in the
 * same order (L summed in split order by every lane, each column's splits
 * folded in split order), so the same bits; no shared memory and no barrier,
 * so the warps of a CTA can merge different rows at once. keep: this warp's
 * copy of out (shared memory of hd floats, or NULL), read after __syncwarp. */
static __device__ __forceinline__ void attn_combine_row_warp(const float *__restrict__ acc, size_t acc_stride,
                                                             const float *__restrict__ ml, size_t ml_stride,
                                                             uint32_t ns, float *__restrict__ out, uint32_t hd,
                                                             float *keep = nullptr, bool rnd = false)
{
    const uint32_t lane = threadIdx.x & 31;
    const bool have = lane < ns;
    const float mi = have ? __ldcg(ml + lane * ml_stride) : -INFINITY;
    const float li = have ? __ldcg(ml + lane * ml_stride + 1) : 0.0f;
    float M = mi;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    const float wi = li > 0.0f ? exp2f(mi - M) : 0.0f;
    const uint32_t ne = 32 - __clz(__ballot_sync(0xffffffffu, wi != 0.0f));
    float L = 0.0f;
    for (uint32_t i = 0; i < ns; i++)
        L = fmaf(__shfl_sync(0xffffffffu, li, i), __shfl_sync(0xffffffffu, wi, i), L);
    const float inv = 1.0f / L;
    float w[32];
#pragma unroll
    for (uint32_t i = 0; i < 32; i++)
        w[i] = __shfl_sync(0xffffffffu, wi, i);
    attn_combine_cols(acc, acc_stride, lane, 32, hd, ne, ns, [&](uint32_t i) { return w[i]; }, inv, out, keep, rnd);
}

#endif
