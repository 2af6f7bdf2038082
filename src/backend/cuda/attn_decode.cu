/* backend/cuda/attn_decode.cu — decode attention over the paged KV cache:
 * split-K flash-decoding (declared in attn.h).
 *
 * kernel_attn_decode: one CTA of 4 warps per (kv head, group of ≤ 8 query
 * heads sharing it, split s, query row t). Split s takes the chunks of 32
 * positions c ≡ s (mod 32) that overlap the row's visible range [p0, p]
 * (launches of < 8 rows, head_dim ≤ 128: the next chunks' K/V are in flight
 * while this one is computed — copied into a 3-stage ring in shared memory by
 * cp.async for head dims ≤ 128 and % 4 == 0 (dec_issue_round), else one chunk
 * ahead in a second register set — the same float operations, so the same
 * bits; with more rows the extra registers cost more occupancy than they
 * save latency); the grid never depends on the lengths (CTAs with nothing to do write an empty
 * partial and exit), so a captured CUDA graph stays valid as sequences grow.
 * Inside a chunk warp w takes positions 8w .. 8w + 7 (their loads issued
 * together when head_dim ≤ 128); a position's K and V row
 * slice (head_dim floats) is read by LPP lanes with 16-byte loads (LPP = 16
 * for head_dim ≤ 64, else 32; float2 loads when head_dim % 4 != 0), once for
 * all the query heads of the group: each lane keeps those heads' q slices,
 * online-softmax states (max m, sum l, f32 accumulator) in registers. The
 * states of the lanes' position slots, then of the 4 warps, are merged in a
 * fixed order and the CTA writes one partial (m, l, acc[head_dim]) per query
 * head into the scratch.
 *
 * kernel_attn_combine: one CTA per (query head, row): the 32 partials merged in
 * split order (with prep, the merged row also written in the quantized GEMVs'
 * prepared form: the decode step's o-projection then needs no prep kernel).
 * Every float operation of a row depends only on its position, its q and its
 * KV — not on T or the other rows — so a sequence's result is bit-identical
 * alone or in any batch.
 *
 * kernel_attn_decode_rows (launches of ≥ ctx->attn_rows_min rows): one CTA per
 * (kv head group, row) runs that row's splits one after the other — each the
 * same device functions (dec_*) as the split kernel's CTA for it — and merges
 * them with the same attn_combine_row: the same bits, fewer CTAs. In every
 * kernel a round's 32 dots (8 positions × 4 heads at head_dim 128) are
 * reduced together by one transposed butterfly (dec_dots_transposed).
 *
 * Scores are kept in base 2: q is multiplied by scale·log2(e) on load and
 * exp2f replaces expf (same result within f32 rounding).
 */
#include <math.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/attn_combine.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int NW = 4;                              /* warps per CTA */
constexpr uint32_t NS = CUDA_ATTN_SPLITS;          /* splits */
constexpr uint32_t CH = CUDA_ATTN_CHUNK;           /* positions of a chunk */
constexpr int PW = (int)CH / NW;                   /* positions of a chunk per warp (8) */
constexpr float LOG2E = 1.4426950408889634f;
static_assert(CH % (NW * 2) == 0, "chunk must split evenly over the warps");

/* VEC elements of a K/V row slice, element e of base: f32 (BF false) by a
 * 16-byte streaming load (read once) or an 8-byte one; bf16 by an 8- or
 * 4-byte load, kept as the raw words in o[0 .. VEC/2) and widened (exactly)
 * only where used: slice_at. A conversion right after the load would make the
 * lane wait for each load before issuing the next (the loads sit in
 * branches): the first version did, and ran a Q4_K_M token at depth 4096
 * 12 % slower than f32 KV. */
static __device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
static __device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }
template <int VEC, bool BF>
static __device__ __forceinline__ void load_slice(const char *base, uint64_t e, float (&o)[VEC])
{
    if constexpr (BF) {
        const char *p = base + 2 * e;
        if constexpr (VEC == 4) {
            const uint2 u = ldg_stream8(p);
            o[0] = __uint_as_float(u.x), o[1] = __uint_as_float(u.y);
        } else {
            o[0] = __uint_as_float(__ldg(reinterpret_cast<const unsigned int *>(p)));
        }
    } else {
        const char *p = base + 4 * e;
        if constexpr (VEC == 4) {
            uint4 u = ldg_stream16(p);
            o[0] = __uint_as_float(u.x);
            o[1] = __uint_as_float(u.y);
            o[2] = __uint_as_float(u.z);
            o[3] = __uint_as_float(u.w);
        } else {
            float2 f = __ldg(reinterpret_cast<const float2 *>(p));
            o[0] = f.x;
            o[1] = f.y;
        }
    }
}

/* Element e of a slice load_slice<VEC, BF> filled. */
template <int VEC, bool BF>
static __device__ __forceinline__ float slice_at(const float (&o)[VEC], int e)
{
    if constexpr (BF) {
        const uint32_t w = __float_as_uint(o[e >> 1]);
        return e & 1 ? bf16_hi(w) : bf16_lo(w);
    } else {
        return o[e];
    }
}

/* exp2f(m - M) that is 0 (not NaN) for an empty state m = -inf. */
static __device__ __forceinline__ float weight_of(float m, float M)
{
    return m == -INFINITY ? 0.0f : exp2f(m - M);
}

/* What a CTA's threads share about its (kv head, query row): where the keys
 * and values are, the visible range [p0, p], and the thread's place. */
struct dec_row {
    const char *kb, *vb;    /* K and V (f32 or bf16 elements; the kv head's column at element kvh·hd) */
    const uint32_t *tab;    /* the row's block table */
    uint32_t kv_dim, hd, hoff, p0, p; /* hoff: the kv head's first element in a row */
    uint32_t warp, sub, li; /* warp; position slot of the lane (lane / LPP); lane within the slot */
};

/* The launch shape's constants: PPW positions a warp takes at once; UNR rounds
 * of PPW positions whose loads are issued together — all 8 of the warp's
 * chunk share when the registers allow (at batch 1 the kernel is bound by
 * load latency, not bandwidth). */
template <int VEC, int NJ, int LPP> struct dec_shape {
    static constexpr int PPW = 32 / LPP;
    static constexpr int UNR = NJ == 1 ? PW / PPW : 1;
    static constexpr bool CHUNK_ROUND = PPW * UNR == PW; /* a chunk is one round */
    static_assert(PW % (PPW * UNR) == 0, "positions per warp");
};

/* A lane's position slot in a round: the position at offset r0 + k (k =
 * u·PPW) of the warp's share of chunk cc; whether the row sees it; its row in the
 * paged KV cache (through the block table). dec_load_round, dec_issue_round
 * and dec_read_round use these, so the three forms cannot disagree. */
static __device__ __forceinline__ uint32_t dec_slot_pos(const dec_row &R, uint32_t cc, int r0, int k)
{
    return cc * CH + R.warp * PW + r0 + k + R.sub;
}
static __device__ __forceinline__ bool dec_visible(const dec_row &R, uint32_t pos)
{
    return pos >= R.p0 && pos <= R.p;
}
static __device__ __forceinline__ uint64_t dec_kv_row(const dec_row &R, uint32_t pos)
{
    return (uint64_t)R.tab[pos / CUDA_ATTN_BLOCK] * CUDA_ATTN_BLOCK + pos % CUDA_ATTN_BLOCK;
}

/* One round: UNR·PPW positions of chunk cc from r0, loads issued together. */
template <int VEC, int NJ, int LPP, bool BF>
static __device__ __forceinline__ void dec_load_round(const dec_row &R, uint32_t cc, int r0,
                                                      float (&kr)[dec_shape<VEC, NJ, LPP>::UNR][NJ][VEC],
                                                      float (&vr)[dec_shape<VEC, NJ, LPP>::UNR][NJ][VEC],
                                                      bool (&ok)[dec_shape<VEC, NJ, LPP>::UNR])
{
    constexpr int PPW = dec_shape<VEC, NJ, LPP>::PPW, UNR = dec_shape<VEC, NJ, LPP>::UNR;
#pragma unroll
    for (int u = 0; u < UNR; u++) {
        const uint32_t pos = dec_slot_pos(R, cc, r0, u * PPW);
        ok[u] = dec_visible(R, pos);
        const uint64_t row = ok[u] ? dec_kv_row(R, pos) : 0;
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            const uint32_t col = (R.li + LPP * j) * VEC;
            if (ok[u] && col < R.hd) {
                load_slice<VEC, BF>(R.kb, row * R.kv_dim + R.hoff + col, kr[u][j]);
                load_slice<VEC, BF>(R.vb, row * R.kv_dim + R.hoff + col, vr[u][j]);
            } else {
#pragma unroll
                for (int e = 0; e < VEC; e++)
                    kr[u][j][e] = vr[u][j][e] = 0.0f;
            }
        }
    }
}

/* The staged form of the prefetching kernel's loads (VEC 4, NJ 1: head dims
 * ≤ 128): each lane copies its own slices of a round's K and V rows into its
 * own slots of a ring of DEC_STAGES stages in shared memory with cp.async,
 * zero-filled where the position is outside [p0, p] or the column past hd
 * (the zeros the register form sets), and reads them back into the round's
 * registers once the stage has landed: DEC_STAGES − 1 chunks in flight while
 * one is computed, with one register set (the register form holds two and
 * one chunk ahead). Only the lane that wrote a slot reads it. The same values
 * reach the same operations: the same bits (kernel_attn's digests were equal).
 * 72 registers instead of 229 (2 CTAs an SM either way at f32: 104 KB of
 * shared memory); one row at depth 4096 17.20 against 17.63 µs, Q4_K_M
 * tg128@d4096 359.6 against 350.5 tok/s (2 stages: 356.8; H200,
 * bench/RESULTS.md fifteenth run). MEMRA_ATTN_STAGED (a compile-time define, 1
 * by default; 0: the register form) selects it. */
#ifndef MEMRA_ATTN_STAGED
#define MEMRA_ATTN_STAGED 1
#endif
constexpr int DEC_STAGES = 3;
/* Whether a kernel_attn_decode instantiation takes the staged form (its launch
 * then gives it dec_ring<LPP, BF>::BYTES of dynamic shared memory). */
template <int VEC, int NJ, int LPP, bool PF>
constexpr bool dec_staged = PF && MEMRA_ATTN_STAGED && VEC == 4 && NJ == 1 && dec_shape<VEC, NJ, LPP>::CHUNK_ROUND;
template <int LPP, bool BF> struct dec_ring {
    static constexpr int SLOT = BF ? 8 : 16; /* bytes of a lane's slice */
    static constexpr int UNR = dec_shape<4, 1, LPP>::UNR;
    static constexpr int STAGE = NW * 2 * UNR * 32 * SLOT;
    static constexpr int BYTES = DEC_STAGES * STAGE;
    /* slot of (warp, K or V, round position u, lane) in the stage at sbase */
    static __device__ __forceinline__ uint32_t at(uint32_t sbase, uint32_t warp, int kv, int u, uint32_t lane)
    {
        return sbase + (((warp * 2 + kv) * UNR + u) * 32 + lane) * SLOT;
    }
};

template <int LPP, bool BF>
static __device__ __forceinline__ void dec_issue_round(const dec_row &R, uint32_t cc, uint32_t sbase)
{
    using RG = dec_ring<LPP, BF>;
    constexpr int PPW = dec_shape<4, 1, LPP>::PPW;
    const uint32_t lane = threadIdx.x & 31, col = R.li * 4;
#pragma unroll
    for (int u = 0; u < RG::UNR; u++) {
        const uint32_t pos = dec_slot_pos(R, cc, 0, u * PPW);
        const bool live = dec_visible(R, pos) && col < R.hd;
        const uint64_t row = live ? dec_kv_row(R, pos) : 0;
        const uint64_t e = live ? row * R.kv_dim + R.hoff + col : 0;
        const uint32_t n = live ? RG::SLOT : 0;
        if constexpr (BF) {
            asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(RG::at(sbase, R.warp, 0, u, lane)),
                         "l"(R.kb + 2 * e), "r"(n));
            asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(RG::at(sbase, R.warp, 1, u, lane)),
                         "l"(R.vb + 2 * e), "r"(n));
        } else {
            cp_async16_zfill(RG::at(sbase, R.warp, 0, u, lane), R.kb + 4 * e, n);
            cp_async16_zfill(RG::at(sbase, R.warp, 1, u, lane), R.vb + 4 * e, n);
        }
    }
}

template <int LPP, bool BF>
static __device__ __forceinline__ void dec_read_round(const dec_row &R, uint32_t cc, uint32_t sbase,
                                                      float (&kr)[dec_ring<LPP, BF>::UNR][1][4],
                                                      float (&vr)[dec_ring<LPP, BF>::UNR][1][4],
                                                      bool (&ok)[dec_ring<LPP, BF>::UNR])
{
    using RG = dec_ring<LPP, BF>;
    constexpr int PPW = dec_shape<4, 1, LPP>::PPW;
    const uint32_t lane = threadIdx.x & 31;
#pragma unroll
    for (int u = 0; u < RG::UNR; u++) {
        ok[u] = dec_visible(R, dec_slot_pos(R, cc, 0, u * PPW));
        const uint32_t ka = RG::at(sbase, R.warp, 0, u, lane), va = RG::at(sbase, R.warp, 1, u, lane);
        if constexpr (BF) {
            uint32_t k0, k1, v0, v1;
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(k0), "=r"(k1) : "r"(ka));
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v0), "=r"(v1) : "r"(va));
            kr[u][0][0] = __uint_as_float(k0), kr[u][0][1] = __uint_as_float(k1);
            vr[u][0][0] = __uint_as_float(v0), vr[u][0][1] = __uint_as_float(v1);
            kr[u][0][2] = kr[u][0][3] = vr[u][0][2] = vr[u][0][3] = 0.0f;
        } else {
            uint32_t k[4], v[4];
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(k[0]), "=r"(k[1]), "=r"(k[2]), "=r"(k[3]) : "r"(ka));
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]) : "r"(va));
#pragma unroll
            for (int e = 0; e < 4; e++)
                kr[u][0][e] = __uint_as_float(k[e]), vr[u][0][e] = __uint_as_float(v[e]);
        }
    }
}

/* A round's dots are reduced by one transposed butterfly (dec_dots_transposed)
 * where the shape allows it (UNR positions × GM heads = LPP lanes: the 8B
 * shape's 8 × 4 over 32), else each by its own butterfly: the same additions,
 * so the same bits (kernel_attn's digests). In every decode kernel, H200
 * (bench/RESULTS.md sixteenth run): one row at depth 4096 16.4 against 17.2 µs,
 * 4 rows 57.2 against 60.4, 32 rows at depth 640 73.0 against 76.9; 64 rows
 * (the rows kernel) 121.5 against 137.5. Leaving the rescale out while the
 * maximum stands (exp2f(0) = 1, the same bits too) cost every kernel: the rows
 * kernel 133.0 against 121.5, one row at depth 4096 21.2 against 17.2.
 * MEMRA_ATTN_ROUND_TRANSPOSED=0 (a compile-time define) restores the
 * per-dot butterflies for such measurements. */
#ifndef MEMRA_ATTN_ROUND_TRANSPOSED
#define MEMRA_ATTN_ROUND_TRANSPOSED 1
#endif

/* A round's dots when there are as many as lanes in a position slot (UNR
 * positions × GM heads = LPP: the 8B shape's 8 × 4 over 32 lanes): a[j] holds
 * this lane's partial sum of value j. A transposed butterfly: at the level of
 * lane offset o each lane keeps half of its values, sends the other half and
 * adds the partner's partial of each kept value to its own — own + partner,
 * the very additions of `a += shfl_xor(a, o)` for o = LPP/2 .. 1 on each value
 * (the partner keeps the other half, so it holds the same set above this
 * level). After the last level lane li holds value li; one shuffle each gives
 * every lane every value: the same bits with 2·LPP − 1 shuffles instead of
 * LPP·log2(LPP). */
/* One level of it: lane offset O, values kept H (a[0 .. H) afterwards). */
template <int O, int H, int N>
static __device__ __forceinline__ void dec_dots_level(float (&a)[N], uint32_t li)
{
    if constexpr (O > 0) {
        const bool up = (li & (uint32_t)O) != 0;
#pragma unroll
        for (int i = 0; i < H; i++) {
            const float send = up ? a[i] : a[H + i], keep = up ? a[H + i] : a[i];
            a[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
        }
        dec_dots_level<O / 2, H / 2>(a, li);
    }
}

template <int LPP, int N>
static __device__ __forceinline__ void dec_dots_transposed(float (&a)[N], float (&dot)[N])
{
    static_assert(N == LPP, "one value a lane");
    dec_dots_level<LPP / 2, LPP / 2>(a, threadIdx.x & (LPP - 1));
#pragma unroll
    for (int j = 0; j < LPP; j++)
        dot[j] = __shfl_sync(0xffffffffu, a[0], j, LPP);
}

/* The online-softmax update of every query head of the CTA by one round. */
template <int VEC, int NJ, int LPP, int GM, bool BF>
static __device__ __forceinline__ void dec_compute_round(const float (&qr)[GM][NJ][VEC],
                                                         const float (&kr)[dec_shape<VEC, NJ, LPP>::UNR][NJ][VEC],
                                                         const float (&vr)[dec_shape<VEC, NJ, LPP>::UNR][NJ][VEC],
                                                         const bool (&ok)[dec_shape<VEC, NJ, LPP>::UNR],
                                                         float (&acc)[GM][NJ][VEC], float (&m)[GM], float (&l)[GM])
{
    constexpr int UNR = dec_shape<VEC, NJ, LPP>::UNR;
    constexpr bool TR = MEMRA_ATTN_ROUND_TRANSPOSED && UNR * GM == LPP;
    /* position u's update of head g by its dot d */
    auto update = [&](int u, int g, float d) {
        const float mn = fmaxf(m[g], d), corr = exp2f(m[g] - mn), w = exp2f(d - mn);
        l[g] = fmaf(l[g], corr, w);
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int e = 0; e < VEC; e++)
                acc[g][j][e] = fmaf(w, slice_at<VEC, BF>(vr[u][j], e), acc[g][j][e] * corr);
        m[g] = mn;
    };
    /* this lane's partial dot of position u and head g */
    auto partial = [&](int u, int g) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int e = 0; e < VEC; e++)
                s = fmaf(qr[g][j][e], slice_at<VEC, BF>(kr[u][j], e), s);
        return s;
    };
    if constexpr (TR) { /* every dot of the round first, then the updates in order */
        float a[UNR * GM], dot[UNR * GM];
#pragma unroll
        for (int u = 0; u < UNR; u++)
#pragma unroll
            for (int g = 0; g < GM; g++)
                a[u * GM + g] = partial(u, g);
        dec_dots_transposed<LPP>(a, dot);
#pragma unroll
        for (int u = 0; u < UNR; u++)
            if (ok[u])
#pragma unroll
                for (int g = 0; g < GM; g++)
                    update(u, g, dot[u * GM + g]);
    } else { /* a position at a time: its dots, then its updates */
#pragma unroll
        for (int u = 0; u < UNR; u++) {
            float dot[GM];
#pragma unroll
            for (int g = 0; g < GM; g++) {
                float a = partial(u, g);
#pragma unroll
                for (int o = LPP / 2; o > 0; o >>= 1)
                    a += __shfl_xor_sync(0xffffffffu, a, o);
                dot[g] = a;
            }
            if (ok[u])
#pragma unroll
                for (int g = 0; g < GM; g++)
                    update(u, g, dot[g]);
        }
    }
}

template <int VEC, int NJ, int GM>
static __device__ __forceinline__ void dec_state_init(float (&acc)[GM][NJ][VEC], float (&m)[GM], float (&l)[GM])
{
#pragma unroll
    for (int g = 0; g < GM; g++) {
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int e = 0; e < VEC; e++)
                acc[g][j][e] = 0.0f;
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }
}

/* The shared memory of the split merge. */
template <int GM> struct dec_smem {
    float acc[NW][GM][CUDA_ATTN_MAX_HEAD_DIM];
    float m[NW][GM], l[NW][GM];
};

/* A split's end: the position slots of each warp (lanes li + LPP·k), then the
 * 4 warps, merged in a fixed order into one partial (m, l, acc[hd]) per query
 * head, written at part_acc/part_ml index part0 + g·NS. Called by the whole
 * CTA; ends with a barrier, so the shared memory may be used again. */
template <int VEC, int NJ, int LPP, int GM>
static __device__ __forceinline__ void dec_split_write(const dec_row &R, float (&acc)[GM][NJ][VEC], float (&m)[GM],
                                                       float (&l)[GM], int ng, dec_smem<GM> &sm,
                                                       float *__restrict__ part_acc, float *__restrict__ part_ml,
                                                       uint64_t part0)
{
#pragma unroll
    for (int o = LPP; o < 32; o <<= 1) {
#pragma unroll
        for (int g = 0; g < GM; g++) {
            const float mo = __shfl_xor_sync(0xffffffffu, m[g], o), lo = __shfl_xor_sync(0xffffffffu, l[g], o);
            const float M = fmaxf(m[g], mo), a = weight_of(m[g], M), b = weight_of(mo, M);
            l[g] = l[g] * a + lo * b;
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    const float ao = __shfl_xor_sync(0xffffffffu, acc[g][j][e], o);
                    acc[g][j][e] = acc[g][j][e] * a + ao * b;
                }
            m[g] = M;
        }
    }
    if (R.sub == 0) {
#pragma unroll
        for (int g = 0; g < GM; g++) {
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    const uint32_t col = (R.li + LPP * j) * VEC + e;
                    if (col < R.hd)
                        sm.acc[R.warp][g][col] = acc[g][j][e];
                }
            if (R.li == 0) {
                sm.m[R.warp][g] = m[g];
                sm.l[R.warp][g] = l[g];
            }
        }
    }
    __syncthreads();
    /* merge the warps, in warp order; one partial per query head */
    const uint32_t hd = R.hd;
    for (uint32_t i = threadIdx.x; i < (uint32_t)ng * hd; i += NW * 32) {
        const uint32_t g = i / hd, col = i % hd;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < NW; w++)
            M = fmaxf(M, sm.m[w][g]);
        float L = 0.0f, A = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; w++) {
            const float a = weight_of(sm.m[w][g], M);
            L = fmaf(sm.l[w][g], a, L);
            A = fmaf(sm.acc[w][g][col], a, A);
        }
        const uint64_t pi = part0 + (uint64_t)g * NS;
        part_acc[pi * hd + col] = A;
        if (col == 0) {
            part_ml[pi * 2] = M;
            part_ml[pi * 2 + 1] = L;
        }
    }
    __syncthreads();
}

/* The CTA's geometry: kv head, query heads h0 .. h0 + ng − 1, the row's range.
 * hsplit (a grid of one CTA a query head): a row at a position below hsplit
 * takes one head a CTA; a deeper one the usual groups of GM, in the CTA of
 * the group's first head, the others getting ng = 0 (nothing to do). A head's
 * operations do not depend on the heads beside it (the same instantiation,
 * GM fixed), so both give the same bits. */
template <int GM>
static __device__ __forceinline__ dec_row dec_row_of(uint32_t bx, uint32_t t, const uint32_t *__restrict__ tok_pos,
                                                     const uint32_t *__restrict__ tok_table, const cuda_attn_dims &d,
                                                     const cuda_attn_kv &kv, uint32_t window, int LPP, uint32_t hsplit,
                                                     uint32_t &h0, int &ng)
{
    const uint32_t hd = d.head_dim, G = d.n_heads / d.n_kv_heads, n_groups = (G + GM - 1) / GM;
    dec_row R;
    R.p = tok_pos[t];
    uint32_t kvh;
    if (hsplit) {
        kvh = bx / G;
        const uint32_t hq = bx % G;
        h0 = kvh * G + hq;
        ng = R.p < hsplit ? 1 : hq % GM == 0 ? (int)min((uint32_t)GM, G - hq) : 0;
    } else {
        kvh = bx / n_groups;
        const uint32_t hg = bx % n_groups;
        h0 = kvh * G + hg * GM;
        ng = (int)min((uint32_t)GM, G - hg * GM);
    }
    R.p0 = window > 0 && R.p + 1 > window ? R.p + 1 - window : 0;
    R.kv_dim = d.n_kv_heads * hd;
    R.hd = hd;
    R.tab = kv.tables + (uint64_t)tok_table[t] * kv.table_stride;
    R.kb = static_cast<const char *>(kv.k);
    R.vb = static_cast<const char *>(kv.v);
    R.hoff = kvh * hd;
    const uint32_t lane = threadIdx.x & 31;
    R.warp = threadIdx.x >> 5;
    R.sub = lane / LPP;
    R.li = lane % LPP;
    return R;
}

/* The first chunk of split s overlapping [cmin·CH, …]: s, s + NS, … */
static __device__ __forceinline__ uint32_t dec_first_chunk(uint32_t s, uint32_t cmin)
{
    return cmin > s ? s + (cmin - s + NS - 1) / NS * NS : s;
}

template <int VEC, int NJ, int LPP, int GM>
static __device__ __forceinline__ void dec_load_q(const float *__restrict__ q, uint64_t qoff, uint32_t hd, int ng,
                                                  uint32_t li, float scale2, float (&qr)[GM][NJ][VEC])
{
#pragma unroll
    for (int g = 0; g < GM; g++) {
        const float *qh = q + qoff + (uint64_t)g * hd;
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                const uint32_t col = (li + LPP * j) * VEC + e;
                qr[g][j][e] = g < ng && col < hd ? qh[col] * scale2 : 0.0f;
            }
    }
}

/* Where a launch's results go: the splits' partials (pa: (T, n_heads, NS, hd),
 * pm: (T, n_heads, NS, 2)), the merged rows att (T, n_heads·hd), and with xq
 * the merged rows' prepared form for the o-projection's quantized GEMV (n =
 * n_heads·hd elements a vector, vector t = row t). */
struct dec_out {
    float *pa, *pm, *att;
    uint8_t *xq;
    uint32_t n;
};

/* Query head h of row t: its NS partials (from pi) merged into att's row by
 * attn_combine_row and, with o.xq, that row's hd elements prepared by
 * gemv_prep_x4 — whole prep blocks (cuda_attn_decode_prep_supported), so the
 * bytes are those cuda_gemv_prep_x would write from att. Whole CTA (whole
 * warps); ends with a barrier. */
static __device__ __forceinline__ void attn_out_head(const dec_out &o, uint64_t pi, uint32_t hd, uint32_t t,
                                                     uint32_t h)
{
    __shared__ __align__(16) float s_keep[CUDA_ATTN_MAX_HEAD_DIM];
    attn_combine_row(o.pa + pi * hd, hd, o.pm + pi * 2, 2, NS, o.att + (uint64_t)t * o.n + (uint64_t)h * hd, hd,
                     o.xq ? s_keep : nullptr);
    __syncthreads();
    if (o.xq) {
        const uint32_t lane = threadIdx.x & 31;
        for (uint32_t i0 = (threadIdx.x >> 5) * 128; i0 < hd; i0 += blockDim.x / 32 * 128) {
            const uint32_t i = i0 + 4 * lane;
            const bool valid = i < hd;
            const float4 v =
                valid ? *reinterpret_cast<const float4 *>(s_keep + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            gemv_prep_x4(v, valid, lane, o.xq, o.n, t, h * hd + i);
        }
        __syncthreads();
    }
}

/* VEC floats a load; NJ loads a lane covers a row slice; LPP lanes a position;
 * GM query heads a CTA at most. Columns of lane li: (li + LPP·j)·VEC + e.
 * One CTA a (kv head group, split, row). */
template <int VEC, int NJ, int LPP, int GM, bool PF, bool BF>
__global__ void __launch_bounds__(NW * 32)
    kernel_attn_decode(const float *__restrict__ q, const uint32_t *__restrict__ tok_pos,
                       const uint32_t *__restrict__ tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                       uint32_t window, dec_out o, uint32_t hsplit)
{
    pdl_trigger();
    float *__restrict__ part_acc = o.pa, *__restrict__ part_ml = o.pm;
    using SH = dec_shape<VEC, NJ, LPP>;
    constexpr int UNR = SH::UNR;
    __shared__ dec_smem<GM> sm;
    uint32_t h0;
    int ng;
    const uint32_t s = blockIdx.y, t = blockIdx.z;
    const dec_row R = dec_row_of<GM>(blockIdx.x, t, tok_pos, tok_table, d, kv, window, LPP, hsplit, h0, ng);
    if (ng == 0) /* hsplit: a deep row's heads are in their group's first CTA */
        return;
    const uint64_t part0 = ((uint64_t)t * d.n_heads + h0) * NS + s; /* + g·NS for head h0 + g */

    /* first chunk of this split overlapping [p0, p] */
    uint32_t c = dec_first_chunk(s, R.p0 / CH);
    const uint32_t clast = R.p / CH;
    /* PDL: when the keys and values of positions before p were written by
     * earlier steps (kv.settled), the prefetching loop issues the first
     * chunk's loads before the wait — unless it holds p, whose row this
     * step's RoPE kernel writes */
    constexpr bool CHUNK_ROUND = PF && SH::CHUNK_ROUND;
    constexpr bool STAGED = dec_staged<VEC, NJ, LPP, PF>;
    extern __shared__ __align__(16) uint8_t dec_ring_mem[]; /* STAGED: dec_ring<LPP, BF>::BYTES */
    const uint32_t ring = (uint32_t)__cvta_generic_to_shared(dec_ring_mem);
    float ka[UNR][NJ][VEC], va[UNR][NJ][VEC];
    bool oka[UNR];
    const bool early = CHUNK_ROUND && kv.settled && c < clast;
    uint32_t issued = 0; /* STAGED: chunks c, c + NS, ... whose copies are issued (one commit group each) */
    if constexpr (STAGED) {
        if (kv.settled)
            for (; issued < DEC_STAGES - 1 && c + issued * NS < clast; issued++) {
                dec_issue_round<LPP, BF>(R, c + issued * NS, ring + issued * dec_ring<LPP, BF>::STAGE);
                cp_async_commit();
            }
    } else if (early) {
        dec_load_round<VEC, NJ, LPP, BF>(R, c, 0, ka, va, oka);
    }
    pdl_wait();
    if (c > clast) {
        if (threadIdx.x < (uint32_t)ng) {
            part_ml[(part0 + threadIdx.x * NS) * 2] = -INFINITY;
            part_ml[(part0 + threadIdx.x * NS) * 2 + 1] = 0.0f;
        }
        return;
    }

    float qr[GM][NJ][VEC], acc[GM][NJ][VEC], m[GM], l[GM];
    dec_load_q<VEC, NJ, LPP, GM>(q, (uint64_t)t * d.n_heads * R.hd + (uint64_t)h0 * R.hd, R.hd, ng, R.li, scale2, qr);
    dec_state_init<VEC, NJ, GM>(acc, m, l);

    if constexpr (STAGED) {
        /* chunk i computed while chunks i + 1 .. i + DEC_STAGES − 1 land; the
         * stage refilled at step i is the one read at step i − 1 */
        using RG = dec_ring<LPP, BF>;
        for (; issued < DEC_STAGES - 1; issued++) {
            if (c + issued * NS <= clast)
                dec_issue_round<LPP, BF>(R, c + issued * NS, ring + issued * RG::STAGE);
            cp_async_commit(); /* empty groups keep the count */
        }
        for (uint32_t i = 0;; i++) {
            const uint32_t ci = c + i * NS, cn = ci + (DEC_STAGES - 1) * NS;
            if (cn <= clast)
                dec_issue_round<LPP, BF>(R, cn, ring + ((i + DEC_STAGES - 1) % DEC_STAGES) * RG::STAGE);
            cp_async_commit();
            cp_async_wait<DEC_STAGES - 1>(); /* chunk ci's copies have landed */
            dec_read_round<LPP, BF>(R, ci, ring + (i % DEC_STAGES) * RG::STAGE, ka, va, oka);
            dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, ka, va, oka, acc, m, l);
            if (ci + NS > clast)
                break;
        }
    } else if constexpr (CHUNK_ROUND) {
        /* the next chunk's loads are issued before this one is computed (two
         * register sets; the same operations in the same order as one chunk
         * at a time) */
        float kn[UNR][NJ][VEC], vn[UNR][NJ][VEC];
        bool okn[UNR];
        if (!early)
            dec_load_round<VEC, NJ, LPP, BF>(R, c, 0, ka, va, oka);
        for (;;) {
            const uint32_t c1 = c + NS, c2 = c + 2 * NS;
            if (c1 <= clast)
                dec_load_round<VEC, NJ, LPP, BF>(R, c1, 0, kn, vn, okn);
            dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, ka, va, oka, acc, m, l);
            if (c1 > clast)
                break;
            if (c2 <= clast)
                dec_load_round<VEC, NJ, LPP, BF>(R, c2, 0, ka, va, oka);
            dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, kn, vn, okn, acc, m, l);
            if (c2 > clast)
                break;
            c = c2;
        }
    } else {
        for (; c <= clast; c += NS)
#pragma unroll
            for (int r0 = 0; r0 < PW; r0 += SH::PPW * UNR) {
                float kr[UNR][NJ][VEC], vr[UNR][NJ][VEC];
                bool ok[UNR];
                dec_load_round<VEC, NJ, LPP, BF>(R, c, r0, kr, vr, ok);
                dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, kr, vr, ok, acc, m, l);
            }
    }
    dec_split_write<VEC, NJ, LPP, GM>(R, acc, m, l, ng, sm, part_acc, part_ml, part0);
}

/* One CTA a (kv head group, row) for launches of many rows: the CTA runs the
 * row's splits one after the other — each split's partial computed by the same
 * operations as kernel_attn_decode's CTA for it — and merges them itself with
 * attn_combine_row: the same bits as the split launch + combine, without its
 * 32 CTAs a row (most of them empty at short depth, 2-4 resident an SM) and
 * without the combine launch. It pays at full batches of short rows (64 rows
 * at depth 640: 138 against 158 µs, H200), not below (32 rows: 128 against
 * 81): the split launch has more CTAs in flight; with the transposed rounds
 * 121.5 µs at 64 rows of depth 640 (bench/RESULTS.md sixteenth run). A variant with the next
 * chunk's loads in flight (two register sets, 228 registers, 2 CTAs an SM)
 * was slower at every batch measured. Head dims ≤ 128, % 4 == 0 (NJ = 1, a
 * chunk one round). */
template <int LPP, int GM, bool BF>
__global__ void __launch_bounds__(NW * 32)
    kernel_attn_decode_rows(const float *__restrict__ q, const uint32_t *__restrict__ tok_pos,
                            const uint32_t *__restrict__ tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                            uint32_t window, dec_out o)
{
    pdl_trigger();
    float *__restrict__ part_acc = o.pa, *__restrict__ part_ml = o.pm;
    constexpr int VEC = 4, NJ = 1;
    using SH = dec_shape<VEC, NJ, LPP>;
    constexpr int UNR = SH::UNR;
    static_assert(SH::CHUNK_ROUND, "kernel_attn_decode_rows: a chunk must be one round");
    __shared__ dec_smem<GM> sm;
    uint32_t h0;
    int ng;
    const uint32_t t = blockIdx.y;
    const dec_row R = dec_row_of<GM>(blockIdx.x, t, tok_pos, tok_table, d, kv, window, LPP, 0, h0, ng);
    const uint64_t part0 = ((uint64_t)t * d.n_heads + h0) * NS;
    const uint32_t cmin = R.p0 / CH, clast = R.p / CH;
    /* the (split, chunk) pairs in the order computed: splits ascending, each
     * split's chunks ascending; next_pair steps to the following one */
    auto next_pair = [&](uint32_t &s, uint32_t &c) -> bool {
        if (c + NS <= clast) {
            c += NS;
            return true;
        }
        for (s++; s < NS; s++) {
            c = dec_first_chunk(s, cmin);
            if (c <= clast)
                return true;
        }
        return false;
    };
    pdl_wait();
    /* empty splits: the partial the combine skips */
    for (uint32_t i = threadIdx.x; i < NS * (uint32_t)ng; i += NW * 32) {
        const uint32_t g = i / NS, s = i % NS;
        if (dec_first_chunk(s, cmin) > clast) {
            part_ml[(part0 + g * NS + s) * 2] = -INFINITY;
            part_ml[(part0 + g * NS + s) * 2 + 1] = 0.0f;
        }
    }
    float qr[GM][NJ][VEC], acc[GM][NJ][VEC], m[GM], l[GM];
    dec_load_q<VEC, NJ, LPP, GM>(q, (uint64_t)t * d.n_heads * R.hd + (uint64_t)h0 * R.hd, R.hd, ng, R.li, scale2, qr);
    dec_state_init<VEC, NJ, GM>(acc, m, l);
    /* the first non-empty split (chunk clast's split is never empty) */
    uint32_t s = 0, c = dec_first_chunk(0, cmin);
    while (c > clast)
        c = dec_first_chunk(++s, cmin);
    for (;;) {
        float kr[UNR][NJ][VEC], vr[UNR][NJ][VEC];
        bool ok[UNR];
        dec_load_round<VEC, NJ, LPP, BF>(R, c, 0, kr, vr, ok);
        dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, kr, vr, ok, acc, m, l);
        uint32_t s1 = s, c1 = c;
        const bool more = next_pair(s1, c1);
        if (!more || s1 != s) {
            dec_split_write<VEC, NJ, LPP, GM>(R, acc, m, l, ng, sm, part_acc, part_ml, part0 + s);
            dec_state_init<VEC, NJ, GM>(acc, m, l);
        }
        if (!more)
            break;
        s = s1, c = c1;
    }
    /* the partials of this CTA's heads (written above, read back through L2) */
    for (int g = 0; g < ng; g++)
        attn_out_head(o, part0 + (uint64_t)g * NS, R.hd, t, h0 + g);
}

/* att[t, h] = Σ_s w_s acc_s / Σ_s w_s l_s, w_s = 2^(m_s − max m), in split
 * order (and its prepared form with o.xq). */
__global__ void __launch_bounds__(128) kernel_attn_combine(dec_out o, uint32_t n_heads, uint32_t hd)
{
    pdl_enter();
    const uint32_t h = blockIdx.x, t = blockIdx.y;
    attn_out_head(o, ((uint64_t)t * n_heads + h) * NS, hd, t, h);
}
static_assert(NS == 32, "attn_combine_row merges at most 32 splits");

/* One instantiation's launch, with the staged ring's dynamic shared memory
 * (the attribute set before its first launch on each device) when it has one. */
template <int VEC, int NJ, int LPP, int GM, bool PF, bool BF>
void launch_one(const cuda_ctx *ctx, dim3 grid, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
                cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o, uint32_t hsplit)
{
    constexpr int smem = dec_staged<VEC, NJ, LPP, PF> ? dec_ring<LPP, BF>::BYTES : 0;
    static uint32_t opted; /* devices the attribute is set on */
    if (smem > 0 && cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel_attn_decode<VEC, NJ, LPP, GM, PF, BF>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cuda_launch(ctx, kernel_attn_decode<VEC, NJ, LPP, GM, PF, BF>, grid, NW * 32, smem, q, tok_pos, tok_table, d, kv,
                scale2, window, o, hsplit);
}

template <int VEC, int NJ, int LPP, bool PF, bool BF>
void launch_pf(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
               cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o, uint32_t hsplit)
{
    switch (gm) {
    case 1: launch_one<VEC, NJ, LPP, 1, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    case 2: launch_one<VEC, NJ, LPP, 2, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    case 4: launch_one<VEC, NJ, LPP, 4, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    default: launch_one<VEC, NJ, LPP, 8, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    }
}

template <int VEC, int NJ, int LPP, bool BF>
void launch_shape(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos,
                  const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                  const dec_out &o)
{
    if (grid.z < 8) { /* few rows: latency-bound, prefetch the next chunk; short rows one head a CTA */
        uint32_t hsplit = cuda_attn_decode_hsplit_below(ctx, d, grid.z);
        if (kv.pos_min >= hsplit) /* every row is deep: the groups' grid */
            hsplit = 0;
        if (hsplit)
            grid.x = d.n_heads; /* one CTA a query head (dec_row_of) */
        launch_pf<VEC, NJ, LPP, true, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit);
    } else {
        launch_pf<VEC, NJ, LPP, false, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o, 0);
    }
}

template <int LPP, bool BF>
void launch_rows(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos,
                 const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                 const dec_out &o)
{
    switch (gm) {
    case 1: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 1, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    case 2: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 2, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    case 4: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 4, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    default: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 8, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    }
}

/* The launch shape by head_dim (the same for f32 and bf16 elements: the same
 * float operations after the load); the rows kernel for launches of ≥
 * attn_rows_min rows. True when that kernel ran (it merges its splits: no
 * combine launch). */
template <bool BF>
bool launch_type(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos,
                 const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                 const dec_out &o)
{
    const uint32_t hd = d.head_dim, T = grid.z;
    if (hd % 4 == 0 && hd <= 128 && ctx->attn_rows_min > 0 && T >= ctx->attn_rows_min) {
        const dim3 rgrid(grid.x, T);
        if (hd <= 64)
            launch_rows<16, BF>(ctx, rgrid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
        else
            launch_rows<32, BF>(ctx, rgrid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
        return true;
    }
    if (hd % 4 == 0 && hd <= 64)
        launch_shape<4, 1, 16, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    else if (hd % 4 == 0 && hd <= 128)
        launch_shape<4, 1, 32, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    else if (hd % 4 == 0)
        launch_shape<4, 2, 32, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    else
        launch_shape<2, 4, 32, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    return false;
}

} // namespace

extern "C" void cuda_attn_decode_set_rows(struct cuda_ctx *ctx, uint32_t rows_min)
{
    ctx->attn_rows_min = rows_min;
}

extern "C" uint32_t cuda_attn_decode_hsplit_below(const struct cuda_ctx *ctx, struct cuda_attn_dims d, uint32_t T)
{
    uint32_t hsplit = T < 8 && d.n_heads > d.n_kv_heads ? ctx->attn_hsplit : 0;
    if (hsplit == CUDA_ATTN_HSPLIT_AUTO) { /* the one-head CTAs with work in one wave of 2 an SM */
        const uint32_t per = 2u * (uint32_t)ctx->prop.multiProcessorCount / (d.n_heads * T);
        hsplit = CH * (per > 1 ? per : 1);
    }
    return hsplit;
}

extern "C" void cuda_attn_decode_set_hsplit(struct cuda_ctx *ctx, uint32_t below)
{
    ctx->attn_hsplit = below;
}

extern "C" size_t cuda_attn_decode_scratch_floats(uint32_t T, struct cuda_attn_dims d)
{
    return (size_t)T * d.n_heads * NS * (d.head_dim + 2);
}

/* A head's elements must be whole blocks of the prepared form (gemv_prep_x4:
 * 128 elements when n % 128 == 0, else 32), so one CTA can prepare them. */
extern "C" bool cuda_attn_decode_prep_supported(struct cuda_attn_dims d)
{
    const uint32_t hd = d.head_dim, n = d.n_heads * hd;
    return hd > 0 && hd % 32 == 0 && hd <= CUDA_ATTN_MAX_HEAD_DIM && (n % 128 != 0 || hd % 128 == 0);
}

extern "C" void cuda_attn_decode(struct cuda_ctx *ctx, const float *q, float *att, uint32_t T,
                                 const uint32_t *tok_pos, const uint32_t *tok_table, struct cuda_attn_dims d,
                                 struct cuda_attn_kv kv, float scale, uint32_t window, float *scratch, bool prep)
{
    const uint32_t hd = d.head_dim;
    if (hd == 0 || hd % 2 || hd > CUDA_ATTN_MAX_HEAD_DIM || d.n_kv_heads == 0 || d.n_heads % d.n_kv_heads)
        CUDA_FAIL("cuda_attn_decode: unsupported shape (heads %u, kv heads %u, head_dim %u)", d.n_heads,
                  d.n_kv_heads, hd);
    if (T == 0)
        return;
    if (T > 65535)
        CUDA_FAIL("cuda_attn_decode: %u rows (at most 65535 a launch)", T);
    const uint32_t G = d.n_heads / d.n_kv_heads;
    const int gm = G <= 1 ? 1 : G <= 2 ? 2 : G <= 4 ? 4 : 8;
    const dim3 grid(d.n_kv_heads * ((G + gm - 1) / gm), NS, T);
    if (prep && !cuda_attn_decode_prep_supported(d))
        CUDA_FAIL("cuda_attn_decode: head_dim %u, %u heads: the output cannot be prepared in passing", hd, d.n_heads);
    const uint32_t n = d.n_heads * hd;
    const dec_out o = {scratch, scratch + (size_t)T * d.n_heads * NS * hd, att,
                       prep ? gemv_quant_xq_reserve(ctx, n, T) : nullptr, n};
    const float scale2 = scale * LOG2E;
    const bool merged = kv.bf16 ? launch_type<true>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o)
                                : launch_type<false>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    CUDA_CHECK_LAUNCH();
    if (merged)
        return;
    cuda_launch(ctx, kernel_attn_combine, dim3(d.n_heads, T), 128, 0, o, d.n_heads, hd);
}
