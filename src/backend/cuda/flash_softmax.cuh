/* backend/cuda/flash_softmax.cuh — the online-softmax step both prefill attention kernels take on a key tile's
 * scores (attn_prefill.cu on mma.sync, attn_prefill_wg.cu on wgmma): one function, so that the two kernels keep one
 * order of operations and so one set of bits (kernel_attn asserts the wgmma kernel gives the mma.sync kernel's).
 *
 * Layout: a thread holds two query rows a and b of the tensor cores' accumulator fragments — s[j][0..1] row a and
 * s[j][2..3] row b for key block j (8 keys), o[j][0..1] / o[j][2..3] the same rows' output dims — and the four
 * lanes of a quad share their rows. Scores are in base 2 (q pre-scaled by scale·log2(e)). Device code only.
 */
#ifndef MEMRA_BACKEND_CUDA_FLASH_SOFTMAX_CUH
#define MEMRA_BACKEND_CUDA_FLASH_SOFTMAX_CUH

#include <math.h>

/* 2^x as the SFU's ex2.approx.ftz: exp2f's MUFU.EX2 without the fix-up exp2f wraps around it for x < −126 (a
 * compare, a halving of x before and a squaring after: three more instructions an exponent, half again the softmax's
 * issue slots). The same bits wherever 2^x is a normal float; below 2^−126 (a key 126 binary orders under the row's
 * maximum) 0 instead of a subnormal — a weight that no f32 sum of the tile's weights (≥ 1) can register, and that
 * bf16's P·V operand would carry at ~2^−126 of the output. kernel_attn's prefill digests were exp2f's; BF16 pp4096
 * +1.2 % on the H100 (bench/RESULTS.md, forty-fifth run). */
static __device__ __forceinline__ float flash_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The rows' maxima over the tile (the quad's by shuffles), the new running maxima m (the exponent base 0 while a
 * row has seen no key, so a fully masked tile adds exact zeros), s ← 2^(s − base), this thread's share of the
 * sums l ← l·corr + Σ s, and the factors corr = 2^(m_old − base) by which O must be scaled before this tile's
 * P·V is added (flash_softmax_rescale). */
template <int NB>
static __device__ __forceinline__ void flash_softmax_stats(float (&s)[NB][4], float &m_a, float &m_b, float &l_a,
                                                           float &l_b, float &corr_a, float &corr_b)
{
    float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < NB; nt++) {
        mx_a = fmaxf(mx_a, fmaxf(s[nt][0], s[nt][1]));
        mx_b = fmaxf(mx_b, fmaxf(s[nt][2], s[nt][3]));
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, off));
        mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, off));
    }
    const float mn_a = fmaxf(m_a, mx_a), mn_b = fmaxf(m_b, mx_b);
    const float base_a = mn_a == -INFINITY ? 0.0f : mn_a, base_b = mn_b == -INFINITY ? 0.0f : mn_b;
    corr_a = flash_ex2(m_a - base_a);
    corr_b = flash_ex2(m_b - base_b);
    m_a = mn_a;
    m_b = mn_b;
    float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
    for (int nt = 0; nt < NB; nt++) {
        s[nt][0] = flash_ex2(s[nt][0] - base_a);
        s[nt][1] = flash_ex2(s[nt][1] - base_a);
        s[nt][2] = flash_ex2(s[nt][2] - base_b);
        s[nt][3] = flash_ex2(s[nt][3] - base_b);
        sum_a += s[nt][0] + s[nt][1];
        sum_b += s[nt][2] + s[nt][3];
    }
    l_a = l_a * corr_a + sum_a;
    l_b = l_b * corr_b + sum_b;
}

template <int ND>
static __device__ __forceinline__ void flash_softmax_rescale(float (&o)[ND][4], float corr_a, float corr_b)
{
#pragma unroll
    for (int nt = 0; nt < ND; nt++) {
        o[nt][0] *= corr_a;
        o[nt][1] *= corr_a;
        o[nt][2] *= corr_b;
        o[nt][3] *= corr_b;
    }
}

/* Both: the softmax of a tile and O rescaled, ready for the tile's P·V. */
template <int NB, int ND>
static __device__ __forceinline__ void flash_softmax_step(float (&s)[NB][4], float (&o)[ND][4], float &m_a,
                                                          float &m_b, float &l_a, float &l_b)
{
    float corr_a, corr_b;
    flash_softmax_stats(s, m_a, m_b, l_a, l_b, corr_a, corr_b);
    flash_softmax_rescale(o, corr_a, corr_b);
}

#endif
