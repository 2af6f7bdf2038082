/* backend/cuda/attn_prefill_wg.cu — the prefill attention's fast mode on Hopper's warpgroup tensor-core
 * instruction (wgmma), FlashAttention-3's shape, for a bf16 KV cache at head_dim 128 (attn_prefill.h;
 * cuda_attn_prefill picks it, attn_prefill.cu keeps every other case and the split spans).
 *
 * Why: attn_prefill.cu's mma.sync kernel has each of a CTA's warps read the whole K and V tile from shared memory
 * into registers for its own 16 query rows, so shared-memory bandwidth bounds it (~196 TFLOP/s of attention work
 * at 4096 tokens, 8B shape). wgmma reads K and V from shared memory once for a warpgroup's 64 rows, and P (the
 * softmax of S, in registers) is its A operand straight from the S accumulators (the same fragment layout). The
 * standalone prototype (lab/attn-wg/, thirty-second run): 4096 tokens 0.70 → 0.48 ms a layer (284 TFLOP/s).
 *
 * Shape: a CTA = NWG warpgroups (1 or 2: MEMRA_ATTN_PREFILL_BM 64 or 128) of one query head over 64·NWG tokens of
 * one span (warpgroup w: rows 64w .. 64w + 63; warp i of it rows 16i .. 16i + 15); the CTAs of a span's last tiles
 * (the most keys) are scheduled first. q (f32) is pre-scaled by scale·log2(e), rounded to bf16 and stored in
 * a swizzled tile (a row's 128 dims = two column blocks of 64 rows × 128 bytes, wgmma.cuh's swz). The key tiles
 * of 64 positions from the window's start to the CTA's last token go through a cp.async ring of two or three
 * stages (K and V as stored in the paged cache, keys past the last token zero-filled). Per tile:
 *   S (64 × 64 f32) = Q · Kᵀ: 8 wgmma m64n64k16, both K-major in shared memory;
 *   the causal / window mask where some key of the tile is past (or before the window of) some row of the CTA;
 *   online softmax in f32 base 2 (the mma.sync kernel's: row max over the quad, base 0 while a row has seen
 *   no key);
 *   O (64 × 128 f32) += P · V: 4 wgmma m64n128k16, A = P rounded once to bf16 from registers, B = V from shared
 *   memory, dims contiguous (MN-major: the instruction's transpose-B flag; column blocks 8192 bytes apart).
 * Three forms of the loop (MEMRA_ATTN_PREFILL_WG): OVERLAP (the default) issues tile i's P·V with tile i + 1's
 * Q·Kᵀ and runs tile i + 1's mask and statistics while P·V is in flight (FlashAttention-3's intra-warpgroup
 * overlap; 4096 tokens 0.468 ms a layer on the H200), PIPE issues the next Q·Kᵀ before this tile's softmax
 * (0.505), SERIAL awaits each product (0.518).
 * Numerics: the mma.sync kernel's fast mode (q and P rounded once to bf16, f32 accumulation), in another order
 * of the tensor cores' sums: not its bits, within the same tolerance of f64 (kernel_attn). A row's operations
 * depend only on its span: the tiles a CTA sees past a row's keys or before its window add exact zeros, so NWG 1
 * and 2 give the same bits, and so does a span alone or in any batch. Rows past the span's end are computed on
 * zero q and not written. Split spans (cuda_attn_prefill_splits > 1) are left to the mma.sync kernel's partials.
 */
#include <cuda_bf16.h>
#include <math.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/attn_prefill.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_softmax.cuh"
#include "backend/cuda/mma_bf16.cuh"
#include "backend/cuda/tile_copy.cuh"
#include "backend/cuda/wgmma.cuh"

namespace {

constexpr uint32_t HD = 128, BN = 64;
constexpr uint32_t TILE = BN * HD * 2; /* bytes of a Q, K or V tile: two column blocks of 64 rows × 128 B */
constexpr uint32_t CB = 64 * 128;      /* bytes between a tile's column blocks */

/* The kernel's forms (enum cuda_attn_prefill_wg's PIPE, SERIAL, OVERLAP) as a template argument */
constexpr int FORM_SERIAL = 0, FORM_PIPE = 1, FORM_OVERLAP = 2;
/* Q tiles, then K and V in 2 (SERIAL) or 3 stages, + the 1024-byte alignment */
template <int NWG, int FORM> constexpr uint32_t wg_smem() { return (NWG + (FORM == FORM_SERIAL ? 4 : 6)) * TILE + 1024; }

/* Byte offset of 16-byte piece p (0..15) of row r in a tile: column block p / 8, swizzled within it. */
__device__ __forceinline__ uint32_t tile_off(uint32_t r, uint32_t p) { return (p >> 3) * CB + swz(r, p & 7); }

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

/* The K and V tile of keys kt .. kt + 63 (those past pl zero-filled: a masked key's P is 0, and 0 · V must not
 * meet a stale NaN) into a stage, as one cp.async group. */
template <uint32_t NT>
__device__ __forceinline__ void wg_issue(uint32_t sK, uint32_t sV, const cuda_attn_kv &kv, const uint32_t *tab,
                                         uint32_t kt, uint32_t pl, uint32_t kv_dim, uint32_t kvh)
{
    const uint16_t *kb = static_cast<const uint16_t *>(kv.k), *vb = static_cast<const uint16_t *>(kv.v);
#pragma unroll
    for (uint32_t j = 0; j < BN * 16 / NT; j++) {
        const uint32_t i = j * NT + threadIdx.x, r = i / 16, p = i % 16, kp = kt + r;
        uint64_t off = 0;
        uint32_t n = 0;
        if (kp <= pl) {
            const uint64_t row = (uint64_t)tab[kp / CUDA_ATTN_BLOCK] * CUDA_ATTN_BLOCK + kp % CUDA_ATTN_BLOCK;
            off = row * kv_dim + (uint64_t)kvh * HD + p * 8;
            n = 16;
        }
        cp_async16_zfill(sK + tile_off(r, p), kb + off, n);
        cp_async16_zfill(sV + tile_off(r, p), vb + off, n);
    }
    cp_async_commit();
}

/* The causal / window mask on the S of key tile kt (this thread's rows at positions p0, p1; full: no key of the
 * tile is past or before the window of any row of the CTA, so nothing to mask). s[4j + e]: row p0 (e < 2) or p1,
 * key kt + 8j + 2c + (e & 1). */
__device__ __forceinline__ void wg_mask(float (&s)[32], uint32_t kt, bool full, uint32_t p0, uint32_t p1,
                                        uint32_t window)
{
    const uint32_t c = threadIdx.x & 3;
    if (!full)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const uint32_t key = kt + 8 * j + 2 * c + (e & 1), qp = e < 2 ? p0 : p1;
                if (key > qp || (window > 0 && key + window <= qp))
                    s[4 * j + e] = -INFINITY;
            }
}

/* P (the softmax's s) rounded to bf16 as the A operand of P·V: a[kk] holds keys 16kk .. 16kk + 15 = S's column
 * blocks 2kk, 2kk + 1 (the accumulator and A-fragment layouts agree). */
__device__ __forceinline__ void wg_pack(const float (&s)[32], uint32_t (&a)[4][4])
{
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        a[kk][0] = pack_bf16(s[8 * kk], s[8 * kk + 1]);
        a[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
        a[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
        a[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
    }
}

/* One warpgroup's online-softmax step on the S of key tile kt: mask, running max m and sum l, O rescaled, P
 * packed as P·V's A operand. */
__device__ __forceinline__ void wg_softmax(float (&s)[32], float (&o)[64], uint32_t (&a)[4][4], float &m0, float &m1,
                                           float &l0, float &l1, uint32_t kt, bool full, uint32_t p0, uint32_t p1,
                                           uint32_t window)
{
    float c0, c1;
    wg_mask(s, kt, full, p0, p1, window);
    flash_softmax_stats(*reinterpret_cast<float(*)[8][4]>(&s), m0, m1, l0, l1, c0, c1);
    flash_softmax_rescale(*reinterpret_cast<float(*)[16][4]>(&o), c0, c1);
    wg_pack(s, a);
}

/* S = Q·Kᵀ of one key tile issued (not awaited): 8 k16 steps over the two column blocks. */
__device__ __forceinline__ void wg_qk(float (&s)[32], uint32_t sQ, uint32_t sK)
{
#pragma unroll
    for (int i = 0; i < 32; i++)
        s[i] = 0.0f;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (int)HD / 16; kk++) {
        const uint32_t off = (kk >> 2) * CB + (kk & 3) * 32;
        wg_s(s, smem_desc(sQ + off), smem_desc(sK + off));
    }
    wgmma_commit();
}

/* O += P·V of one key tile issued (not awaited): keys 16kk ..: two 8-row groups of the V tile a step. */
__device__ __forceinline__ void wg_pv(float (&o)[64], const uint32_t (&a)[4][4], uint32_t sV)
{
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
        wg_o(o, a[kk], wgmma_desc(sV + kk * 2048, CB, 1024));
    wgmma_commit();
}

/* FORM_PIPE: three stages, and the next tile's S = Q·Kᵀ issued before this tile's softmax, so the tensor cores
 * work while the softmax runs. FORM_OVERLAP: FlashAttention-3's intra-warpgroup overlap — tile i's P·V and tile
 * i + 1's Q·Kᵀ issued together, tile i + 1's softmax run while P·V is in flight (P into other registers), O
 * rescaled once P·V is done. Each the same operations on O, l and m in the same order, so the same bits.
 * FORM_SERIAL: two stages, each product awaited before the next step. */
template <int NWG, int FORM>
__global__ void __launch_bounds__(128 * NWG)
    kernel_attn_prefill_wg(const float *__restrict__ q, float *__restrict__ att,
                           const cuda_attn_span *__restrict__ spans, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                           uint32_t window)
{
    constexpr uint32_t NT = 128 * NWG, BM = 64 * NWG, NS = FORM == FORM_SERIAL ? 2 : 3;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_u32(smem_raw), base = (raw + 1023) & ~1023u;
    uint8_t *const gbase = smem_raw + (base - raw);
    const cuda_attn_span sp = spans[blockIdx.z];
    const uint32_t nt_span = (sp.n + BM - 1) / BM;
    if (sp.splits > 1 || blockIdx.x >= nt_span)
        return;
    const uint32_t t0 = (nt_span - 1 - blockIdx.x) * BM, ntok = min(BM, sp.n - t0);
    const uint32_t h = blockIdx.y, kvh = h / (d.n_heads / d.n_kv_heads);
    const uint32_t q_dim = d.n_heads * HD, kv_dim = d.n_kv_heads * HD;
    const uint32_t pf = sp.pos0 + t0, pl = pf + ntok - 1; /* first and last token positions */

    /* Q: the CTA's rows (warpgroup r / 64's tile), scaled and rounded; rows past the span zero */
    for (uint32_t i = threadIdx.x; i < BM * 16; i += NT) {
        const uint32_t r = i / 16, p = i % 16;
        uint4 u = make_uint4(0u, 0u, 0u, 0u);
        if (r < ntok) {
            const float4 *src = reinterpret_cast<const float4 *>(q + (uint64_t)(sp.q0 + t0 + r) * q_dim +
                                                                 (uint64_t)h * HD + p * 8);
            const float4 a = __ldg(src), b = __ldg(src + 1);
            u = make_uint4(pack_bf16(a.x * scale2, a.y * scale2), pack_bf16(a.z * scale2, a.w * scale2),
                           pack_bf16(b.x * scale2, b.y * scale2), pack_bf16(b.z * scale2, b.w * scale2));
        }
        *reinterpret_cast<uint4 *>(gbase + (r / 64) * TILE + tile_off(r % 64, p)) = u;
    }
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2, g = lane >> 2, c = lane & 3;
    const uint32_t sQ = base + wg * TILE, sKV = base + NWG * TILE; /* stage st: K at sKV + 2·st·TILE, V after it */
    const uint32_t row0 = 64 * wg + 16 * (warp & 3) + g, row1 = row0 + 8; /* this thread's two rows in the CTA */
    const uint32_t p0 = pf + row0, p1 = pf + row1;

    const uint32_t *tab = kv.tables + (uint64_t)sp.table * kv.table_stride;
    const uint32_t k_lo = window > 0 && pf + 1 > window ? pf + 1 - window : 0;
    const uint32_t kt_first = k_lo / BN, nkt = pl / BN - kt_first + 1; /* key tiles kt_first .. + nkt − 1 */
    /* tile i (of the CTA's nkt) into its stage, as one cp.async group */
    auto issue = [&](uint32_t i) {
        const uint32_t st = sKV + 2 * (i % NS) * TILE;
        wg_issue<NT>(st, st + TILE, kv, tab, (kt_first + i) * BN, pl, kv_dim, kvh);
    };
    /* the mask only where some key of the tile is past (or, with a window, before) some row of the CTA */
    auto full = [&](uint32_t kt) { return kt + BN - 1 <= pf && (window == 0 || kt + window > pl); };

    float o[64], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f, s[32], c0, c1;
    uint32_t a[4][4];
#pragma unroll
    for (int i = 0; i < 64; i++)
        o[i] = 0.0f;
    issue(0);
    /* PIPE and OVERLAP: the second tile asked for, then S of the first */
    auto first_s = [&]() {
        if (nkt > 1) {
            issue(1);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        fence_proxy_async(); /* this thread's copies (and Q's stores) visible to the tensor cores ... */
        __syncthreads();     /* ... and every thread's */
        wg_qk(s, sQ, sKV);
        wgmma_wait<0>();
        reg_fence(s);
    };
    if constexpr (FORM == FORM_OVERLAP) {
        first_s();
        wg_softmax(s, o, a, m0, m1, l0, l1, kt_first * BN, full(kt_first * BN), p0, p1, window);
        /* tile i < nkt − 1: its P·V beside tile i + 1's Q·Kᵀ, whose softmax runs meanwhile into an */
        for (uint32_t i = 0; i + 1 < nkt; i++) {
            cp_async_wait<0>(); /* tile i + 1 */
            fence_proxy_async();
            __syncthreads(); /* its copies visible; every warpgroup done with tile i − 1 (its stage refilled) */
            if (i + 2 < nkt)
                issue(i + 2);
            wg_qk(s, sQ, sKV + 2 * ((i + 1) % NS) * TILE); /* (s held tile i's P, now in a) */
            wg_pv(o, a, sKV + (2 * (i % NS) + 1) * TILE);
            wgmma_wait<1>(); /* Q·Kᵀ of tile i + 1, committed first, is done; P·V of tile i may run on */
            reg_fence(s);
            const uint32_t kt = (kt_first + i + 1) * BN;
            wg_mask(s, kt, full(kt), p0, p1, window);
            flash_softmax_stats(*reinterpret_cast<float(*)[8][4]>(&s), m0, m1, l0, l1, c0, c1);
            wgmma_wait<0>(); /* P·V of tile i done: O rescaled, a (its P) rewritten with tile i + 1's */
            reg_fence(o);
            flash_softmax_rescale(*reinterpret_cast<float(*)[16][4]>(&o), c0, c1);
            wg_pack(s, a);
        }
        wg_pv(o, a, sKV + (2 * ((nkt - 1) % NS) + 1) * TILE); /* the last tile's */
        wgmma_wait<0>();
        reg_fence(o);
    } else if constexpr (FORM == FORM_PIPE) {
        first_s();
        for (uint32_t i = 0; i < nkt; i++) {
            float sn[32];
            if (i + 1 < nkt) {
                cp_async_wait<0>(); /* tile i + 1 */
                fence_proxy_async();
                __syncthreads(); /* its copies visible; every warpgroup done with tile i − 1 (its stage refilled) */
                if (i + 2 < nkt)
                    issue(i + 2);
                wg_qk(sn, sQ, sKV + 2 * ((i + 1) % NS) * TILE);
            }
            const uint32_t kt = (kt_first + i) * BN;
            wg_softmax(s, o, a, m0, m1, l0, l1, kt, full(kt), p0, p1, window);
            wg_pv(o, a, sKV + (2 * (i % NS) + 1) * TILE);
            wgmma_wait<0>();
            reg_fence(o);
            if (i + 1 < nkt) {
                reg_fence(sn);
#pragma unroll
                for (int j = 0; j < 32; j++)
                    s[j] = sn[j];
            }
        }
    } else {
        for (uint32_t i = 0; i < nkt; i++) {
            if (i + 1 < nkt) { /* the next tile into the other stage (free since the last iteration's barrier) */
                issue(i + 1);
                cp_async_wait<1>();
            } else {
                cp_async_wait<0>();
            }
            fence_proxy_async(); /* this thread's copies (and Q's stores) visible to the tensor cores ... */
            __syncthreads();     /* ... and every thread's */
            const uint32_t sK = sKV + 2 * (i % NS) * TILE, kt = (kt_first + i) * BN;
            wg_qk(s, sQ, sK);
            wgmma_wait<0>();
            reg_fence(s);
            wg_softmax(s, o, a, m0, m1, l0, l1, kt, full(kt), p0, p1, window);
            wg_pv(o, a, sK + TILE);
            wgmma_wait<0>();
            reg_fence(o);
            __syncthreads(); /* this stage is refilled two tiles on */
        }
    }
#pragma unroll
    for (int sh = 1; sh <= 2; sh <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, sh);
        l1 += __shfl_xor_sync(0xffffffffu, l1, sh);
    }
    /* o[4j + e]: row row0 (e < 2) or row1, dim 8j + 2c + (e & 1) */
    const float i0 = 1.0f / l0, i1 = 1.0f / l1;
    float *r0 = att + (uint64_t)(sp.q0 + t0 + row0) * q_dim + (uint64_t)h * HD;
    float *r1 = att + (uint64_t)(sp.q0 + t0 + row1) * q_dim + (uint64_t)h * HD;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        if (row0 < ntok)
            *reinterpret_cast<float2 *>(r0 + 8 * j + 2 * c) = make_float2(o[4 * j] * i0, o[4 * j + 1] * i0);
        if (row1 < ntok)
            *reinterpret_cast<float2 *>(r1 + 8 * j + 2 * c) = make_float2(o[4 * j + 2] * i1, o[4 * j + 3] * i1);
    }
}

template <int NWG, int FORM>
void launch_wg(const cuda_ctx *ctx, const float *q, float *att, const cuda_attn_span *spans, uint32_t n_spans,
               uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window)
{
    constexpr uint32_t smem = wg_smem<NWG, FORM>();
    static uint32_t opted; /* devices the attribute is set on */
    if (cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel_attn_prefill_wg<NWG, FORM>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((max_n + 64 * NWG - 1) / (64 * NWG), d.n_heads, n_spans);
    kernel_attn_prefill_wg<NWG, FORM><<<grid, 128 * NWG, smem, ctx->stream>>>(q, att, spans, d, kv, scale2, window);
}

template <int FORM>
void launch_pick(const cuda_ctx *ctx, const float *q, float *att, const cuda_attn_span *spans, uint32_t n_spans,
                 uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window)
{
    if (ctx->attn_prefill_bm == 128 && max_n > 64)
        launch_wg<2, FORM>(ctx, q, att, spans, n_spans, max_n, d, kv, scale2, window);
    else
        launch_wg<1, FORM>(ctx, q, att, spans, n_spans, max_n, d, kv, scale2, window);
}

} // namespace

bool attn_prefill_wg_takes(const cuda_ctx *ctx, cuda_attn_dims d, cuda_attn_kv kv, bool exact)
{
    return ctx->attn_prefill_wg != CUDA_ATTN_PREFILL_WG_OFF && !exact && kv.bf16 && d.head_dim == HD;
}

void attn_prefill_wg(const cuda_ctx *ctx, const float *q, float *att, const cuda_attn_span *spans, uint32_t n_spans,
                     uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window)
{
    if (ctx->attn_prefill_wg == CUDA_ATTN_PREFILL_WG_PIPE)
        launch_pick<FORM_PIPE>(ctx, q, att, spans, n_spans, max_n, d, kv, scale2, window);
    else if (ctx->attn_prefill_wg == CUDA_ATTN_PREFILL_WG_OVERLAP)
        launch_pick<FORM_OVERLAP>(ctx, q, att, spans, n_spans, max_n, d, kv, scale2, window);
    else
        launch_pick<FORM_SERIAL>(ctx, q, att, spans, n_spans, max_n, d, kv, scale2, window);
}
