/* backend/cuda/attn_decode.cuh — the decode attention's device pieces (namespace
 * attn_dec), shared by the files of its kernels: attn_decode.cu (the split
 * kernel, the combine, the launchers and the C API of attn.h) and
 * attn_decode_rows.cu (the rows kernel). How the kernels work is described at
 * the top of attn_decode.cu. Everything here is a constant, a plain struct or
 * a forceinline device function: both kernels compute a split's partial with
 * these same operations, which is what gives them the same bits.
 */
#ifndef MEMRA_BACKEND_CUDA_ATTN_DECODE_CUH
#define MEMRA_BACKEND_CUDA_ATTN_DECODE_CUH

#include <math.h>
#include "backend/cuda/attn.h"
#include "backend/cuda/attn_combine.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace attn_dec {

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
    uint32_t ns;            /* the splits the row's chunks are dealt over (dec_row_splits), ≤ NS */
};

/* The splits a row's chunks cmin .. clast are dealt over: chunk c goes to
 * split c mod ns (splits ns .. NS − 1 stay empty). sc (the context's
 * attn_split_chunks; MEMRA_ATTN_SPLIT_CHUNKS) is the fewest chunks a split
 * takes where the row has them: ns = ceil(chunks / sc), at most NS; sc ≤ 1
 * keeps all NS (one chunk a split below 32 chunks). A function of the row's
 * own positions, so a row's bits do not depend on its batch; fewer splits
 * mean fewer partials to merge (each split's end merges the CTA's warps and
 * writes a partial) at the cost of fewer CTAs in the split form. */
static __device__ __forceinline__ uint32_t dec_row_splits(uint32_t p0, uint32_t p, uint32_t sc)
{
    if (sc <= 1)
        return NS;
    const uint32_t chunks = p / CH - p0 / CH + 1, ns = (chunks + sc - 1) / sc;
    return ns < NS ? ns : NS;
}

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

/* The 4 warps' states in shared memory (sm.m[w][g], sm.l[w][g],
 * sm.acc[w][g][col]) merged in warp order into one partial (m, l, acc[hd]) per
 * query head g < ng, written at part_acc/part_ml index part0 + g·NS. Called by
 * the whole CTA after the barrier that published the states; ends with a
 * barrier. Every decode kernel's split ends here (dec_split_write and the
 * tensor-core kernels), so the merge's operations are one piece of code. */
template <class SM>
static __device__ __forceinline__ void dec_merge_warps(const SM &sm, int ng, uint32_t hd,
                                                       float *__restrict__ part_acc, float *__restrict__ part_ml,
                                                       uint64_t part0)
{
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
    dec_merge_warps(sm, ng, R.hd, part_acc, part_ml, part0);
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
                                                     uint32_t sc, uint32_t &h0, int &ng)
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
    R.ns = dec_row_splits(R.p0, R.p, sc);
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

/* The first chunk of split s overlapping [cmin·CH, …] for a row dealt over
 * ns splits: s, s + ns, … (past every chunk: s ≥ ns) */
static __device__ __forceinline__ uint32_t dec_first_chunk(uint32_t s, uint32_t cmin, uint32_t ns)
{
    if (s >= ns)
        return UINT32_MAX;
    return cmin > s ? s + (cmin - s + ns - 1) / ns * ns : s;
}

/* The (split, chunk) pair computed after (s, c) for a row whose chunks run
 * cmin .. clast over ns splits: the split's next chunk, else (ROWS: a CTA
 * that runs all the row's splits in turn) the next non-empty split's first.
 * False after the last. */
template <bool ROWS>
static __device__ __forceinline__ bool dec_next_pair(uint32_t &s, uint32_t &c, uint32_t cmin, uint32_t clast,
                                                     uint32_t ns)
{
    if (c + ns <= clast) {
        c += ns;
        return true;
    }
    if constexpr (ROWS) {
        for (s++; s < ns; s++) {
            c = dec_first_chunk(s, cmin, ns);
            if (c <= clast)
                return true;
        }
    }
    return false;
}

/* The row's first non-empty split and its first chunk (chunk clast's split is
 * never empty). */
static __device__ __forceinline__ void dec_first_pair(uint32_t &s, uint32_t &c, uint32_t cmin, uint32_t clast,
                                                      uint32_t ns)
{
    s = 0;
    c = dec_first_chunk(0, cmin, ns);
    while (c > clast)
        c = dec_first_chunk(++s, cmin, ns);
}

/* The partial the combine skips (m = −inf, l = 0), written for heads g < ng
 * of split s at pm index part0 + g·NS + s: every empty split of the row
 * (ALL: a CTA that runs all of them; whole CTA) or this CTA's one split. */
template <bool ALL>
static __device__ __forceinline__ void dec_empty_partials(float *__restrict__ pm, uint64_t part0, int ng,
                                                          uint32_t cmin, uint32_t clast, uint32_t ns)
{
    if constexpr (ALL) {
        for (uint32_t i = threadIdx.x; i < NS * (uint32_t)ng; i += NW * 32) {
            const uint32_t g = i / NS, s = i % NS;
            if (dec_first_chunk(s, cmin, ns) > clast) {
                pm[(part0 + g * NS + s) * 2] = -INFINITY;
                pm[(part0 + g * NS + s) * 2 + 1] = 0.0f;
            }
        }
    } else if (threadIdx.x < (uint32_t)ng) {
        pm[(part0 + threadIdx.x * NS) * 2] = -INFINITY;
        pm[(part0 + threadIdx.x * NS) * 2 + 1] = 0.0f;
    }
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
    bool rnd; /* att rounded to bf16 (cuda_ctx_set_act_bf16: it is the o-projection's input), xq made from that */
    uint32_t sc; /* the context's attn_split_chunks (dec_row_splits) */
    bool one;    /* the tensor-core kernels: q and P in one bf16 part (cuda_attn_decode_set_one) */
};

/* Head h of row t's merged elements (keep: hd floats in shared memory) into
 * the quantized GEMVs' prepared form, prep blocks of 128 elements from i0 in
 * steps of step, a warp a block. */
static __device__ __forceinline__ void attn_prep_head(const dec_out &o, const float *keep, uint32_t hd, uint32_t t,
                                                      uint32_t h, uint32_t i0, uint32_t step)
{
    const uint32_t lane = threadIdx.x & 31;
    for (; i0 < hd; i0 += step) {
        const uint32_t i = i0 + 4 * lane;
        const bool valid = i < hd;
        const float4 v = valid ? *reinterpret_cast<const float4 *>(keep + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        gemv_prep_x4(v, valid, lane, o.xq, o.n, t, h * hd + i, o.rnd);
    }
}

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
                     o.xq ? s_keep : nullptr, o.rnd);
    __syncthreads();
    if (o.xq) {
        attn_prep_head(o, s_keep, hd, t, h, (threadIdx.x >> 5) * 128, blockDim.x / 32 * 128);
        __syncthreads();
    }
}

/* A launch's rows-form threshold: the context's MEMRA_ATTN_ROWS, or for auto
 * the kernel family's (dflt: CUDA_ATTN_ROWS_MIN_DEFAULT for the f32 kernels,
 * CUDA_ATTN_TC_ROWS_MIN for the tensor-core ones). */
static inline uint32_t dec_rows_min(const cuda_ctx *ctx, uint32_t dflt)
{
    return ctx->attn_rows_min == CUDA_ATTN_ROWS_AUTO ? dflt : ctx->attn_rows_min;
}

/* The head split of a split launch of T rows: one CTA a query head for rows
 * below the bound (its grid then has n_heads columns), 0 when the launch
 * shape never splits or every row is past the bound (kv.pos_min: the
 * kv-head grid, no CTAs that would exit at once). */
static inline uint32_t dec_launch_hsplit(const cuda_ctx *ctx, cuda_attn_dims d, uint32_t T, const cuda_attn_kv &kv)
{
    const uint32_t hsplit = cuda_attn_decode_hsplit_below(ctx, d, T);
    return kv.pos_min >= hsplit ? 0 : hsplit;
}

/* The rows forms' end: the CTA's heads h0 .. h0 + ng − 1 of row t (partials
 * from pi0 + g·NS), head g merged by warp g % NW with attn_combine_row_warp —
 * attn_out_head's bits — and, with o.xq, prepared by the same warp. Whole CTA,
 * after the barrier that published the partials. keep: NW rows of
 * CUDA_ATTN_MAX_HEAD_DIM floats of shared memory the caller no longer uses
 * (the tensor-core kernel's ring: no static array beside its dynamic one). */
static __device__ __forceinline__ void attn_out_heads_warps(const dec_out &o, uint64_t pi0, uint32_t hd, uint32_t t,
                                                            uint32_t h0, int ng, float *keep)
{
    float (*s_keepw)[CUDA_ATTN_MAX_HEAD_DIM] = reinterpret_cast<float (*)[CUDA_ATTN_MAX_HEAD_DIM]>(keep);
    const uint32_t warp = threadIdx.x >> 5;
    for (int g = (int)warp; g < ng; g += NW) {
        const uint64_t pi = pi0 + (uint64_t)g * NS;
        const uint32_t h = h0 + (uint32_t)g;
        attn_combine_row_warp(o.pa + pi * hd, hd, o.pm + pi * 2, 2, NS, o.att + (uint64_t)t * o.n + (uint64_t)h * hd,
                              hd, o.xq ? s_keepw[warp] : nullptr, o.rnd);
        if (o.xq) {
            __syncwarp();
            attn_prep_head(o, s_keepw[warp], hd, t, h, 0, 128);
            __syncwarp();
        }
    }
}

/* The rows kernel's launch (attn_decode_rows.cu; LPP 16 or 32). */
template <int LPP, bool BF>
void launch_rows(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos,
                 const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                 const dec_out &o);

/* The tensor-core kernels' launch (attn_decode_tc.cu), for the shapes
 * tc_supported accepts: true when the rows form ran (it merges its splits). */
bool tc_supported(cuda_attn_dims d);
template <bool BF>
bool launch_tc(const cuda_ctx *ctx, dim3 grid, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
               cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o);

} // namespace attn_dec

#endif
