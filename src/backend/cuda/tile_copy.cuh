/* backend/cuda/tile_copy.cuh — what the tensor-core GEMV kernels (mmv.cu,
 * mmv_wg.cu) share: the cp.async wrappers that stream tiles into shared
 * memory, and the split of f32 activations into bf16 hi + lo parts that keeps
 * their products exact to ~2^-17 (the numerics of gemm.cu's exact mode).
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

/* Two floats → their bf16 hi parts (lo = false) or the bf16 of what hi
 * leaves (lo = true), packed low element first. */
static __device__ __forceinline__ uint32_t split_pair(float a, float b, bool lo)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    if (lo)
        h = __floats2bfloat162_rn(a - __low2float(h), b - __high2float(h));
    return *reinterpret_cast<uint32_t *>(&h);
}

#endif
