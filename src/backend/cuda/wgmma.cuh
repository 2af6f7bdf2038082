/* backend/cuda/wgmma.cuh — Hopper's warpgroup tensor-core instruction (wgmma) for the kernels that use it
 * (mmv_wg.cu, the batched decode GEMV; attn_prefill_wg.cu / attn_prefill_ws.cu, the prefill attention; gemm_q.cu):
 * the fences and waits around an asynchronous wgmma, the warpgroups' register trade (setmaxnreg), shared-memory
 * matrix descriptors in the 128-byte swizzle, and the m64n128k16 product with both operands in shared memory. Each
 * kernel keeps its other shapes beside it.
 *
 * A swizzled tile row is 128 bytes (64 bf16): 16-byte piece c of row r lies at r·128 + (c ^ r % 8)·16, so eight
 * rows' same piece fall in eight different bank groups (ldmatrix-free reads by the tensor cores and conflict-free
 * cp.async writes). sm_90a only: included by .cu files of src/backend/cuda/ alone.
 */
#ifndef MEMRA_BACKEND_CUDA_WGMMA_CUH
#define MEMRA_BACKEND_CUDA_WGMMA_CUH

#include <stdint.h>

static __device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
static __device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
static __device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* The registers a thread of this warpgroup may hold from here on (setmaxnreg): ptxas sizes a kernel with wgmma in
 * warpgroups, so a producer warpgroup gives its registers to the computing ones (FlashAttention-3's register
 * reallocation; gemm_q.cu, attn_prefill_ws.cu). */
template <uint32_t N> static __device__ __forceinline__ void regs_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <uint32_t N> static __device__ __forceinline__ void regs_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
/* keeps the compiler from moving accumulator reads across the asynchronous wgmma */
static __device__ __forceinline__ void reg_fence(float &v) { asm volatile("" : "+f"(v)::"memory"); }
template <int N> static __device__ __forceinline__ void reg_fence(float (&v)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(v[i])::"memory");
}

/* A shared-memory matrix descriptor in the 128-byte swizzle: start address, leading and stride byte offsets. For a
 * K-major operand the stride is the 1024 bytes between 8-row groups (the leading offset is unused: 16); for an
 * MN-major one (its rows' 64-element blocks contiguous) the leading offset is the stride between 64-column blocks
 * and the stride the 1024 bytes between 8-row groups (attn_prefill_wg.cu's V, checked on the H200). */
static __device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           ((uint64_t)1 << 62);
}
/* A K-major tile's descriptor (8-row groups 1024 bytes apart). */
static __device__ __forceinline__ uint64_t smem_desc(uint32_t addr) { return wgmma_desc(addr, 16, 1024); }

/* Byte offset of the 16-byte piece c (0..7) of row r in a swizzled tile of 128-byte rows. */
static __device__ __forceinline__ uint32_t swz(uint32_t r, uint32_t c) { return r * 128 + ((c ^ (r & 7)) << 4); }

/* The accumulator operands of a wgmma with f32 D: "%0, ..., %63" names the
 * first 64 in the instruction's text, WG_D8(i) binds d[i .. i + 7]. */
#define WG_R64                                                                                                    \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                            \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                            \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WG_D8(i)                                                                                                  \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define WG_D64 WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
/* The same registers written only (a wgmma at scale-d 0, which ignores them): they need no zeroing before it. The
 * compiler may then give the result other registers than the array's last value held (gemm_q.cu's two-tile form,
 * lab/gemmq-pipe2.patch, kept a third 64-register partial so and spilled). */
#define WG_W8(i)                                                                                                  \
    "=f"(d[i]), "=f"(d[i + 1]), "=f"(d[i + 2]), "=f"(d[i + 3]), "=f"(d[i + 4]), "=f"(d[i + 5]), "=f"(d[i + 6]), \
        "=f"(d[i + 7])
#define WG_W64 WG_W8(0), WG_W8(8), WG_W8(16), WG_W8(24), WG_W8(32), WG_W8(40), WG_W8(48), WG_W8(56)

/* D (64×128 f32: this thread's 64) += A (64×16) · B (16×128), bf16 operands in
 * shared memory named by descriptors, both K-major; scale-d = 1 (accumulate). */
static __device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WG_R64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WG_D64
                 : "l"(da), "l"(db));
}

#endif
