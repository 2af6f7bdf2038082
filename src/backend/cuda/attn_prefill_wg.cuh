/* backend/cuda/attn_prefill_wg.cuh — the tiles and steps both wgmma prefill attention kernels take
 * (attn_prefill_wg.cu: every thread copies K and V by cp.async; attn_prefill_ws.cu: a producer warp copies them
 * by TMA): the swizzled Q, K and V tile layout, the two wgmma products (S = Q·Kᵀ, O += P·V), the mask, the
 * online-softmax step and P's packing, Q's load and O's store. Kept in one place so that the two kernels do the
 * same operations on a tile (their bits differ only where their tiles' sizes do). sm_90a device code only.
 */
#ifndef MEMRA_BACKEND_CUDA_ATTN_PREFILL_WG_CUH
#define MEMRA_BACKEND_CUDA_ATTN_PREFILL_WG_CUH

#include <cuda_bf16.h>
#include <math.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_softmax.cuh"
#include "backend/cuda/mma_bf16.cuh"
#include "backend/cuda/wgmma.cuh"

namespace {

constexpr uint32_t HD = 128;
constexpr uint32_t QCB = 64 * 128;   /* bytes between a warpgroup's Q tile's column blocks (64 rows × 128 B) */
constexpr uint32_t QTILE = 2 * QCB;  /* bytes of a warpgroup's Q tile */
/* A K or V tile of BN keys (64 or 128): two column blocks of BN rows × 128 B, KCB bytes apart. */
template <uint32_t BN> __host__ __device__ constexpr uint32_t kv_cb() { return BN * 128; }
template <uint32_t BN> __host__ __device__ constexpr uint32_t kv_tile() { return 2 * kv_cb<BN>(); }

/* Byte offset of 16-byte piece p (0..15) of row r in a tile whose column blocks are CBB bytes apart: column block
 * p / 8, swizzled within it. */
template <uint32_t CBB> __device__ __forceinline__ uint32_t tile_off(uint32_t r, uint32_t p)
{
    return (p >> 3) * CBB + swz(r, p & 7);
}

/* d (64 × 64 f32: 32 a thread) += A (64 × 16) · B (16 × 64), both K-major in shared memory. */
__device__ __forceinline__ void wg_s(float (&d)[32], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
                 "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, "
                 "%29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
                 : "l"(da), "l"(db));
}

/* d (64 × 128 f32: 64 a thread) += A (64 × 16 from registers: the m16n8k16 A fragment of each warp's 16 rows)
 * · B (16 × 128 in shared memory, N contiguous: transpose-B). */
__device__ __forceinline__ void wg_o(float (&d)[64], const uint32_t (&a)[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WG_R64 "}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : WG_D64
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

/* The causal / window mask on the S of key tile kt (this thread's rows at positions p0, p1; full: no key of the
 * tile is past or before the window of any row of the CTA, so nothing to mask). s[4j + e]: row p0 (e < 2) or p1,
 * key kt + 8j + 2c + (e & 1). */
template <uint32_t BN>
__device__ __forceinline__ void wg_mask(float (&s)[BN / 2], uint32_t kt, bool full, uint32_t p0, uint32_t p1,
                                        uint32_t window)
{
    const uint32_t c = threadIdx.x & 3;
    if (!full)
#pragma unroll
        for (int j = 0; j < (int)BN / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const uint32_t key = kt + 8 * j + 2 * c + (e & 1), qp = e < 2 ? p0 : p1;
                if (key > qp || (window > 0 && key + window <= qp))
                    s[4 * j + e] = -INFINITY;
            }
}

/* P (the softmax's s) rounded to bf16 as the A operand of P·V: a[kk] holds keys 16kk .. 16kk + 15 = S's column
 * blocks 2kk, 2kk + 1 (the accumulator and A-fragment layouts agree). */
template <uint32_t BN> __device__ __forceinline__ void wg_pack(const float (&s)[BN / 2], uint32_t (&a)[BN / 16][4])
{
#pragma unroll
    for (int kk = 0; kk < (int)BN / 16; kk++) {
        a[kk][0] = pack_bf16(s[8 * kk], s[8 * kk + 1]);
        a[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
        a[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
        a[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
    }
}

/* One warpgroup's online-softmax step on the S of key tile kt: mask, running max m and sum l, O rescaled, P
 * packed as P·V's A operand. */
template <uint32_t BN>
__device__ __forceinline__ void wg_softmax(float (&s)[BN / 2], float (&o)[64], uint32_t (&a)[BN / 16][4], float &m0,
                                           float &m1, float &l0, float &l1, uint32_t kt, bool full, uint32_t p0,
                                           uint32_t p1, uint32_t window)
{
    float c0, c1;
    wg_mask<BN>(s, kt, full, p0, p1, window);
    flash_softmax_stats(*reinterpret_cast<float(*)[BN / 8][4]>(&s), m0, m1, l0, l1, c0, c1);
    flash_softmax_rescale(*reinterpret_cast<float(*)[16][4]>(&o), c0, c1);
    wg_pack<BN>(s, a);
}

/* S = Q·Kᵀ of one key tile issued (not awaited): 8 k16 steps over the two column blocks, m64n64k16 (BN 64) or
 * m64n128k16 (BN 128: the same k16 sums an element, twice the keys an instruction). */
template <uint32_t BN> __device__ __forceinline__ void wg_qk(float (&s)[BN / 2], uint32_t sQ, uint32_t sK)
{
#pragma unroll
    for (int i = 0; i < (int)BN / 2; i++)
        s[i] = 0.0f;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (int)HD / 16; kk++) {
        const uint32_t oq = (kk >> 2) * QCB + (kk & 3) * 32, ok = (kk >> 2) * kv_cb<BN>() + (kk & 3) * 32;
        if constexpr (BN == 64)
            wg_s(s, smem_desc(sQ + oq), smem_desc(sK + ok));
        else
            wgmma_m64n128k16(s, smem_desc(sQ + oq), smem_desc(sK + ok));
    }
    wgmma_commit();
}

/* O += P·V of one key tile issued (not awaited): keys 16kk ..: two 8-row groups of the V tile a step. */
template <uint32_t BN>
__device__ __forceinline__ void wg_pv(float (&o)[64], const uint32_t (&a)[BN / 16][4], uint32_t sV)
{
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (int)BN / 16; kk++)
        wg_o(o, a[kk], wgmma_desc(sV + kk * 2048, kv_cb<BN>(), 1024));
    wgmma_commit();
}

/* Query rows r0 .. r0 + nrows − 1 of the CTA (those of tokens past ntok zero) scaled, rounded to bf16 and stored
 * in their warpgroup's Q tile (row r: tile r / 64 from gbase, a generic address), thread t of nt writing pieces
 * t, t + nt, ... */
__device__ __forceinline__ void wg_load_q(uint8_t *gbase, const float *__restrict__ q, const cuda_attn_span &sp,
                                          uint32_t t0, uint32_t r0, uint32_t nrows, uint32_t ntok, uint32_t h,
                                          uint32_t q_dim, float scale2, uint32_t t, uint32_t nt)
{
    for (uint32_t i = t; i < nrows * 16; i += nt) {
        const uint32_t r = r0 + i / 16, p = i % 16;
        uint4 u = make_uint4(0u, 0u, 0u, 0u);
        if (r < ntok) {
            const float4 *src = reinterpret_cast<const float4 *>(q + (uint64_t)(sp.q0 + t0 + r) * q_dim +
                                                                 (uint64_t)h * HD + p * 8);
            const float4 a = __ldg(src), b = __ldg(src + 1);
            u = make_uint4(pack_bf16(a.x * scale2, a.y * scale2), pack_bf16(a.z * scale2, a.w * scale2),
                           pack_bf16(b.x * scale2, b.y * scale2), pack_bf16(b.z * scale2, b.w * scale2));
        }
        *reinterpret_cast<uint4 *>(gbase + (r / 64) * QTILE + tile_off<QCB>(r % 64, p)) = u;
    }
}

/* A CTA's place (grid: query-row tiles of BM, query heads, spans): its span, its tokens t0 .. t0 + ntok − 1 of it
 * (the span's last tiles on the first CTAs: they have the most keys), its query and kv heads, the first and last
 * token positions; live false for a CTA with nothing to do (a split span, or past the span's tiles). */
struct wg_cta {
    cuda_attn_span sp;
    uint32_t t0, ntok, h, kvh, pf, pl;
    bool live;
};
template <uint32_t BM> __device__ __forceinline__ wg_cta wg_cta_of(const cuda_attn_span *__restrict__ spans,
                                                                   cuda_attn_dims d)
{
    wg_cta w;
    w.sp = spans[blockIdx.z];
    const uint32_t nt_span = (w.sp.n + BM - 1) / BM;
    w.live = w.sp.splits <= 1 && blockIdx.x < nt_span;
    w.t0 = (nt_span - 1 - blockIdx.x) * BM, w.ntok = min(BM, w.sp.n - w.t0);
    w.h = blockIdx.y, w.kvh = w.h / (d.n_heads / d.n_kv_heads);
    w.pf = w.sp.pos0 + w.t0, w.pl = w.pf + w.ntok - 1;
    return w;
}

/* O / l of this thread's rows row0, row1 of the CTA (those before ntok) into att — or, with att16, into att16 as
 * bf16 rounded to nearest (cuda_attn_prefill_bf16: the bits cuda_fwd_round_bf16 makes of att's values). o[4j + e]:
 * row row0 (e < 2) or row1, dim 8j + 2c + (e & 1) (c = lane % 4). l holds this thread's share of a row's sum: the
 * quad's added first. */
__device__ __forceinline__ void wg_store_o(const float (&o)[64], float l0, float l1, float *__restrict__ att,
                                           uint16_t *__restrict__ att16, const cuda_attn_span &sp, uint32_t t0,
                                           uint32_t row0, uint32_t row1, uint32_t ntok, uint32_t h, uint32_t q_dim,
                                           uint32_t c)
{
#pragma unroll
    for (int sh = 1; sh <= 2; sh <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, sh);
        l1 += __shfl_xor_sync(0xffffffffu, l1, sh);
    }
    const float i0 = 1.0f / l0, i1 = 1.0f / l1;
    const uint64_t e0 = (uint64_t)(sp.q0 + t0 + row0) * q_dim + (uint64_t)h * HD + 2 * c;
    const uint64_t e1 = (uint64_t)(sp.q0 + t0 + row1) * q_dim + (uint64_t)h * HD + 2 * c;
    const auto rows = [&](auto *out, auto pack) { /* pack: two consecutive outputs of a row as out's pair type */
        using pair_t = decltype(pack(0.0f, 0.0f));
#pragma unroll
        for (int j = 0; j < 16; j++) {
            if (row0 < ntok)
                *reinterpret_cast<pair_t *>(out + e0 + 8 * j) = pack(o[4 * j] * i0, o[4 * j + 1] * i0);
            if (row1 < ntok)
                *reinterpret_cast<pair_t *>(out + e1 + 8 * j) = pack(o[4 * j + 2] * i1, o[4 * j + 3] * i1);
        }
    };
    if (att16)
        rows(att16, [](float a, float b) { return __floats2bfloat162_rn(a, b); });
    else
        rows(att, [](float a, float b) { return make_float2(a, b); });
}

} // namespace

#endif
