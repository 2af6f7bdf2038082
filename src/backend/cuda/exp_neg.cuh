/* backend/cuda/exp_neg.cuh — sample/sample_internal.h's exp_neg on the
 * device, operation for operation (every product and sum rounded on its own:
 * __fmul_rn / __fadd_rn, no fused multiply-add, as the host code is compiled
 * with -ffp-contract=off), so that a sampling weight e^(z − zmax) has the
 * host's bits. Used by the temperature draw (sample.cu) and the nucleus
 * statistics of the top-k kernel (topk.cu). */
#ifndef MEMRA_BACKEND_CUDA_EXP_NEG_CUH
#define MEMRA_BACKEND_CUDA_EXP_NEG_CUH

#include <stdint.h>

static __device__ __forceinline__ float sample_exp_neg(float x)
{
    const uint32_t xb = __float_as_uint(x);
    const uint32_t under = (uint32_t) - (int32_t)(xb > 0xC2AE0000u);
    const float xc = __uint_as_float((xb & ~under) | (0xC2AE0000u & under));
    const float t = __fadd_rn(__fmul_rn(xc, 1.44269504f), 12582912.0f);
    const float kf = __fsub_rn(t, 12582912.0f);
    const float r = __fsub_rn(__fsub_rn(xc, __fmul_rn(kf, 0.693145752f)), __fmul_rn(kf, 1.42860677e-6f));
    float pl = 1.0f / 720;
    pl = __fadd_rn(__fmul_rn(pl, r), 1.0f / 120);
    pl = __fadd_rn(__fmul_rn(pl, r), 1.0f / 24);
    pl = __fadd_rn(__fmul_rn(pl, r), 1.0f / 6);
    pl = __fadd_rn(__fmul_rn(pl, r), 0.5f);
    pl = __fadd_rn(__fmul_rn(pl, r), 1.0f);
    pl = __fadd_rn(__fmul_rn(pl, r), 1.0f);
    const float scale = __uint_as_float((__float_as_uint(t) - 0x4B400000u + 127u) << 23);
    return __uint_as_float(__float_as_uint(__fmul_rn(pl, scale)) & ~under);
}

#endif
