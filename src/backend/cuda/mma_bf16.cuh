/* backend/cuda/mma_bf16.cuh — the bf16 tensor-core pieces the attention kernels
 * share (attn_prefill.cu, attn_decode_tc.cu): packing two floats into a bf16x2
 * register, an f32 pair's split into bf16 high and low parts (the "exact"
 * numerics: hi + lo carries 16 of f32's 24 mantissa bits, and hi·hi + hi·lo +
 * lo·hi products in f32 reproduce an f32 product to ~2^-16 relative), the
 * mma.sync shapes m16n8k16 and m16n8k8 with f32 accumulators, and ldmatrix.
 * Register layouts are PTX's (lane l: g = l / 4, c = l % 4); the callers
 * document which element each register holds.
 */
#ifndef MEMRA_BACKEND_CUDA_MMA_BF16_CUH
#define MEMRA_BACKEND_CUDA_MMA_BF16_CUH

#include <cuda_bf16.h>
#include <stdint.h>

/* (lo, hi) rounded to bf16, lo in the low half (the element of the lower index). */
static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); /* .x = lo in the low half */
    return *reinterpret_cast<uint32_t *>(&v);
}

/* bf16 high parts of (x, y) packed, and the bf16 rounding of what they miss. */
static __device__ __forceinline__ void split_bf16(float x, float y, uint32_t &hi, uint32_t &lo)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    const float2 f = __bfloat1622float2(h);
    hi = *reinterpret_cast<uint32_t *>(&h);
    lo = pack_bf16(x - f.x, y - f.y);
}

/* c += a·b, m16n8k16: a (16×16 row-major) in 4 registers, b (16×8 column) in 2. */
static __device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* c += a·b, m16n8k8: a (16×8 row-major) in 2 registers — the layout of an
 * m16n8 accumulator's columns, so a tile of scores feeds it directly — b (8×8
 * column) in 1. */
static __device__ __forceinline__ void mma_bf16_k8(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(b));
}

/* Four 8x8 b16 matrices from shared memory (address a), lane l giving the
 * address of row l % 8 of matrix l / 8 (16-byte aligned); register i receives
 * matrix i's (row l / 4; columns 2·(l % 4), 2·(l % 4) + 1). The .trans form
 * gives (rows 2·(l % 4), 2·(l % 4) + 1; column l / 4). */
static __device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t a)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}
/* Two matrices: lanes 0..15 give the addresses (row l % 8 of matrix l / 8). */
static __device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t a)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(a) : "memory");
}
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t a)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

#endif
