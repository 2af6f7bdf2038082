/* backend/cuda/tile_copy.cuh — copies into shared memory for the kernels that
 * stage their weights there: the cp.async wrappers of the tensor-core GEMVs
 * (mmv.cu, mmv_wg.cu), the bulk copies (TMA, one instruction a contiguous
 * range) and mbarrier waits of the staged quantized GEMV (gemv_quant.cu), and
 * the split of f32 activations into bf16 hi + lo parts that keeps their
 * products exact to ~2^-17 (the numerics of gemm.cu's exact mode), and the
 * batched GEMV's A rows made of that split.
 */
#ifndef MEMRA_BACKEND_CUDA_TILE_COPY_CUH
#define MEMRA_BACKEND_CUDA_TILE_COPY_CUH

#include <cuda_bf16.h>
#include <stdint.h>

/* 16 bytes global → shared, asynchronous, bypassing L1. */
static __device__ __forceinline__ void cp_async16(uint32_t smem, const void *g)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(g));
}
/* The same with only `bytes` (0 or 16) read, the rest of the 16 zero-filled. */
static __device__ __forceinline__ void cp_async16_zfill(uint32_t smem, const void *g, uint32_t bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(g), "r"(bytes));
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
/* Waits until at most N of this thread's committed groups are still in flight. */
template <int N> static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

/* ---- bulk copies completing on an mbarrier (sm_90) ------------------------
 * A barrier of one arrival: the issuing thread announces the bytes
 * (mbar_expect) and issues the copies; the phase completes when all bytes
 * landed; waiters spin on the phase's parity. */
static __device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
/* After the inits, before the async proxy (the copies) uses the barriers. */
static __device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
}
static __device__ __forceinline__ void mbar_expect(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/* One arrival (no bytes): a consumer releasing a stage to its producer. */
static __device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
/* bytes (a multiple of 16; src, dst 16-byte aligned) global → shared,
 * counted on bar; evict-first in L2 (weights are read once a GEMV). */
static __device__ __forceinline__ void bulk_copy_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar,
                                                     uint64_t policy)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, "
                 "[%3], %4;" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "l"(policy)
                 : "memory");
}
static __device__ __forceinline__ uint64_t l2_evict_first_policy()
{
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}

/* Two floats → their bf16 hi parts (lo = false) or the bf16 of what hi
 * leaves (lo = true), packed low element first. */
static __device__ __forceinline__ uint32_t split_pair(float a, float b, bool lo)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    if (lo)
        h = __floats2bfloat162_rn(a - __low2float(h), b - __high2float(h));
    return *reinterpret_cast<uint32_t *>(&h);
}

/* The prefill GEMM's parts of x (gemm.cu): hi = bf16(x) (nearest even), lo =
 * bf16(x − hi) (x − hi is exact in f32). kernel_x_split_bf16 and the kernels
 * that write a GEMM's input themselves (cuda_gemm_x_claim) make them here, so
 * both give the same bits. */
static __device__ __forceinline__ void gemm_x_split1(float v, uint16_t &hi, uint16_t &lo)
{
    const __nv_bfloat16 h = __float2bfloat16_rn(v);
    const __nv_bfloat16 l = __float2bfloat16_rn(__fsub_rn(v, __bfloat162float(h)));
    hi = *reinterpret_cast<const uint16_t *>(&h);
    lo = *reinterpret_cast<const uint16_t *>(&l);
}
static __device__ __forceinline__ void gemm_x_split4(float4 v, uint2 &hi, uint2 &lo)
{
    uint16_t h[4], l[4];
    gemm_x_split1(v.x, h[0], l[0]);
    gemm_x_split1(v.y, h[1], l[1]);
    gemm_x_split1(v.z, h[2], l[2]);
    gemm_x_split1(v.w, h[3], l[3]);
    hi = make_uint2(h[0] | (uint32_t)h[1] << 16, h[2] | (uint32_t)h[3] << 16);
    lo = make_uint2(l[0] | (uint32_t)l[1] << 16, l[2] | (uint32_t)l[3] << 16);
}
/* Element i (4 floats) of the parts: hi[i], and lo[i] when the mode has a low part (lo not NULL). */
static __device__ __forceinline__ void gemm_x_store4(uint2 *hi, uint2 *lo, uint64_t i, float4 v)
{
    uint2 h, l;
    gemm_x_split4(v, h, l);
    hi[i] = h;
    if (lo)
        lo[i] = l;
}

/* The wgmma batched GEMV's A rows (mmv_wg.cu) of x (T, n) at (t, k .. k + 3):
 * with ho (x bf16-valued) row t of a (T, n) bf16 matrix, else the hi parts
 * at row 2t and the lo parts at row 2t + 1 of a (2T, n) one. Written by
 * kernel_mmv_wg_split, or by the kernel that makes x (cuda_mmv_split_claim). */
static __device__ __forceinline__ void mmv_split_store4(uint8_t *xs, float4 v, uint64_t t, uint64_t k, uint64_t n,
                                                        bool ho)
{
    *reinterpret_cast<uint2 *>(xs + ((ho ? 1 : 2) * t * n + k) * 2) =
        make_uint2(split_pair(v.x, v.y, false), split_pair(v.z, v.w, false));
    if (!ho)
        *reinterpret_cast<uint2 *>(xs + ((2 * t + 1) * n + k) * 2) =
            make_uint2(split_pair(v.x, v.y, true), split_pair(v.z, v.w, true));
}
/* The same for two elements (t, k .. k + 1; k even): the gate|up GEMV's fused GLU epilogue (mmv_wg.cu). */
static __device__ __forceinline__ void mmv_split_store2(uint8_t *xs, float a, float b, uint64_t t, uint64_t k,
                                                        uint64_t n, bool ho)
{
    *reinterpret_cast<uint32_t *>(xs + ((ho ? 1 : 2) * t * n + k) * 2) = split_pair(a, b, false);
    if (!ho)
        *reinterpret_cast<uint32_t *>(xs + ((2 * t + 1) * n + k) * 2) = split_pair(a, b, true);
}

#endif
