/* backend/cuda/attn_decode_tc.cu — the decode attention on the bf16 tensor
 * cores (attn.h: CUDA_ATTN_DECODE_TC; the default for a bf16 KV cache; head
 * dims 64 and 128, up to 16 query heads a kv head): the flash-decoding of
 * attn_decode.cu — the same grid, splits, chunks of 32 positions, 4 warps a
 * CTA, partials (m, l, acc) merged by the same combine — with each chunk's
 * dot products and weighted sums on mma.sync instead of f32 FMAs. The f32
 * kernels issue ~7.6 instructions for each FMA they need (transposed
 * butterflies, per-position updates; bench/RESULTS.md eighteenth run); here a
 * warp's share of a chunk is a few hundred.
 *
 * A warp takes 8 positions of each chunk (its 8-row share of the ring, copied
 * by the warp itself with cp.async, so only __syncwarp orders it):
 *   S (16 heads × 8 positions) = Q · Kᵀ: mma m16n8k16 over head_dim, the CTA's
 *     query heads in rows 0..ng−1 (the others zero), K from shared memory
 *     (f32: float2 reads, split in registers; bf16: ldmatrix);
 *   online softmax per head over the 8 positions (scores in base 2, as the
 *     f32 kernels: q scaled by scale·log2(e) before it is split);
 *   O (16 heads × head_dim) += P · V: mma m16n8k8, P straight from S's
 *     accumulator registers (their layout is the k8 A operand's); V f32 by
 *     scalar reads, bf16 by ldmatrix.trans. The kernels that keep q in
 *     shared memory compute it transposed, O^T (head dims × heads) += V^T ·
 *     P^T, whose 16 mma rows are all used (tc_pvt): half the mma, the same
 *     bits.
 * Numerics ("exact", as the prefill kernel's exact mode): q, K, P and V each
 * split into bf16 high + low parts; S = (hi·hi sums) + (lo·hi + hi·lo sums),
 * each kept in two accumulators by k-step parity (no chain of dependent mma
 * longer than 8); O += lo·hi, hi·lo, hi·hi in that order; lo·lo (~2^-32
 * relative) dropped: ≤ 4e-6 of the largest output off against f64
 * (kernel_attn), against ~1e-7 for the f32 kernels (cuda_attn_decode_set_one:
 * q and P in their high parts only, one product a pair against a bf16
 * cache). A bf16 KV cache has no
 * low parts (its values are bf16): its hi·lo products are left out, which
 * adds nothing (x + 0 = x), so a bf16 cache gives the bits of an f32 cache
 * holding the same values, as in the f32 kernels. With ≤ 8 heads a kv head
 * the accumulators' rows 8..15 (zero) are not kept (tc_mma16 / tc_mma8).
 *
 * Batch invariance: every decode launch of a model takes this path or none
 * (attn_decode.cu: the choice is the context's and the KV type's, the shape
 * the model's), and its two forms run one device function a chunk and one a
 * split's end:
 *   split form (launches of < attn_rows_min rows): one CTA a (kv head or,
 *     for short rows, query head; split; row), partials to the scratch, the
 *     combine kernel merges them;
 *   rows form: one CTA a (kv head, row) runs the row's splits in turn, its
 *     ring copying ahead across split boundaries, and merges them itself,
 *     its heads at once, one warp a head (attn_out_heads_warps: the combine
 *     kernel's float operations, so the same bits; 8 % faster than one head
 *     after the other by the whole CTA at 32-64 rows, twentieth run).
 * A head's row of the mma depends only on its own q (an mma's output row is
 * its A row times B), so one query head a CTA gives the bits of the group's
 * CTA. kernel_attn runs every decode check in this mode too.
 *
 * Speed (H200, bench/RESULTS.md nineteenth run; µs a launch incl. combine,
 * f32 kernels → this): bf16 KV one row at depth 4096 15.7 → 8.8, 64 rows at
 * 640 117.6 → 94.9, 16 rows at 640 36.9 → 41.5; f32 KV 15.3 → 14.1, 121 →
 * 140, 39.1 → 50.2 (splitting f32 K and V costs more than the FMAs it saves
 * at batches, hence the default only for bf16).
 *
 * Shared memory: MEMRA_ATTN_TC_STAGES stages of the chunk's K and V rows,
 * padded so the fragment reads are free of bank conflicts; a split's warp
 * merge reuses the stage it has just computed (nothing is copied into it
 * until the next pair is issued, after the merge's last barrier). With a
 * bf16 cache the rows form and split launches of ≥ 8 rows may also keep q's
 * hi/lo parts there instead of in registers (tc_q; attn.h's cuda_attn_tc_q):
 * at head_dim 128 the rows form 126 registers instead of 186, 4 CTAs an SM
 * instead of 2 — taken when a launch's CTAs do not fit in one wave of the
 * register kernel (64 rows × 640 of the 8B shape: 87.6 → 73.4 µs,
 * tg32x64@d512 +3.3 %) — and the split kernel of ≥ 8 rows 128 registers
 * without spills, 4 CTAs an SM, instead of 168 with 76 bytes of spills, 3
 * (8 rows × 512: 17.6 → 13.5 µs, 16 × 640 35.4 → 27.2; tg32x16@d512 +4.4 %);
 * both measured in the twenty-sixth run; their P·V transposed (tc_pvt) takes
 * them to 106-108 registers and 68.8 / 13.0 / 26.2 µs (twenty-seventh).
 */
#include "backend/cuda/attn_decode.cuh"
#include "backend/cuda/mma_bf16.cuh"

namespace attn_dec {

namespace {

/* Ring stages of the split form and of the rows form: 3 (two chunks in
 * flight while one is computed, as the f32 kernels' staged ring); compile-time
 * defines so that other depths can be measured. The split form on a bf16
 * cache at 4 and 6 (a lone row at depth 4096 has 4 chunks a split: all in
 * flight at once) gave the same bits and did not pay: H100, random 8B Q4_K_M,
 * 4 stages, tg128@d4096 +0.2-0.5 % but tg128@d512 −0.3-0.8 %, the kernel alone
 * slower at 512 and 4096 (bench/RESULTS.md, forty-eighth run). */
#ifndef MEMRA_ATTN_TC_STAGES
#define MEMRA_ATTN_TC_STAGES 3
#endif
#ifndef MEMRA_ATTN_TC_ROWS_STAGES
#define MEMRA_ATTN_TC_ROWS_STAGES 3
#endif
/* Either form with q in shared memory (QS, below): 3 stages, 53.8 KB a CTA
 * at head_dim 128 with the swizzled bf16 ring (tc_ring) and the merge's m/l
 * apart, 111 registers a thread: 4 CTAs an SM (2 stages of the padded ring
 * before, 39 KB + 4 KB static; 64 rows × 640 on the H200 53.6 → 50.8 µs, one
 * row at depth 4096 8.7 → 8.2, the same bits; 2026-12-04, bench/RESULTS.md). */
#ifndef MEMRA_ATTN_TC_QS_STAGES
#define MEMRA_ATTN_TC_QS_STAGES 3
#endif

/* One warp's share of a ring stage: its PW (8) positions' K rows, then their
 * V rows. Row strides (bytes): f32 K head_dim + 8 floats (the float2 reads
 * of 16 lanes — rows g = 0..3, columns 2c — hit 32 different banks), f32 V
 * head_dim + 4 (the scalar reads of rows 2c, 2c + 1 at column g: 8c + g);
 * bf16 rows unpadded, their 16-byte pieces swizzled (tc_piece: piece c of
 * row r at c ^ (r % 8)), so the 8 rows of an ldmatrix matrix fall in
 * different banks without the 16 bytes of padding a row (6 % less ring:
 * room for the QS kernels' third stage). */
template <int HD, bool BF> struct tc_ring {
    static constexpr int ES = BF ? 2 : 4;                       /* bytes an element */
    static constexpr int KS = BF ? HD * 2 : HD * 4 + 32;        /* a K row (bf16: swizzled, tc_piece) */
    static constexpr int VS = BF ? HD * 2 : HD * 4 + 16;        /* a V row */
    static constexpr int WARP = PW * (KS + VS);                 /* a warp's share */
    static constexpr int STAGE = NW * WARP;
    static constexpr int PR = HD * ES / 16;                     /* 16-byte pieces a row */
    static constexpr int PER = PW * PR / 32;                    /* pieces of K (and of V) a lane copies */
    static_assert(PW * PR % 32 == 0 && KS % 16 == 0 && VS % 16 == 0, "tc ring shape");
};

/* Where piece c (16 bytes) of ring row r lies: bf16 rows swizzled. */
template <bool BF> static __device__ __forceinline__ uint32_t tc_piece(uint32_t r, uint32_t c)
{
    return BF ? c ^ (r & 7) : c;
}

/* The warp merge's states (dec_merge_warps): the accumulators laid over a
 * ring stage where they fit (EXTRA = 0), else in EXTRA bytes after the ring
 * (bf16 keys with more than 8 heads a kv head); the maxima and sums in ML
 * bytes of their own. A view of pointers, indexed as the arrays were. */
template <int GMX, int HD> struct tc_merge {
    float (*acc)[GMX][HD]; /* [NW] */
    float (*m)[GMX], (*l)[GMX];
    static constexpr int ACC = NW * GMX * HD * 4, ML = 2 * NW * GMX * 4;
};
/* The CTA's shared memory: the ring, EXTRA, and with QS q's two bf16 parts
 * (QPART bytes each: 8·MR heads' rows of QROW bytes, padded so that the
 * ldmatrix rows of a matrix fall in different banks). */
template <int HD, bool BF, int MR, bool ROWS, bool QS> struct tc_smem {
    static constexpr int STG = QS ? MEMRA_ATTN_TC_QS_STAGES : ROWS ? MEMRA_ATTN_TC_ROWS_STAGES : MEMRA_ATTN_TC_STAGES;
    static constexpr int RING = STG * tc_ring<HD, BF>::STAGE;
    static constexpr int MERGE = tc_merge<8 * MR, HD>::ACC, ML = tc_merge<8 * MR, HD>::ML;
    static constexpr int EXTRA = MERGE <= tc_ring<HD, BF>::STAGE ? 0 : MERGE;
    static constexpr int QROW = HD * 2 + 16;
    static constexpr int QPART = 8 * MR * QROW;
    static constexpr int BYTES = RING + EXTRA + ML + (QS ? 2 * QPART : 0);
    /* the rows form's merged heads, kept for the prepared output (attn_out_heads_warps), over the ring at the end */
    static_assert(RING >= NW * CUDA_ATTN_MAX_HEAD_DIM * 4, "tc: the ring holds the merge's keep rows");
};

/* Copies of this warp's 8 positions of chunk cc into its share at wbase
 * (shared address), zero-filled where a position is outside [p0, p]: a lane
 * takes 16-byte pieces lane, lane + 32, ... of the K rows and the same of the
 * V rows (a row's pieces over consecutive lanes: whole sectors). */
template <int HD, bool BF>
static __device__ __forceinline__ void tc_issue(const dec_row &R, uint32_t cc, uint32_t wbase)
{
    using RG = tc_ring<HD, BF>;
    const uint32_t lane = threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < RG::PER; r++) {
        const uint32_t i = lane + 32 * r, p = i / RG::PR, piece = i % RG::PR;
        const uint32_t pos = cc * CH + R.warp * PW + p;
        const bool live = dec_visible(R, pos);
        const uint64_t row = live ? dec_kv_row(R, pos) : 0;
        const uint64_t off = (row * R.kv_dim + R.hoff) * RG::ES + piece * 16;
        const uint32_t n = live ? 16 : 0;
        const uint32_t at = tc_piece<BF>(p, piece) * 16;
        cp_async16_zfill(wbase + p * RG::KS + at, R.kb + off, n);
        cp_async16_zfill(wbase + PW * RG::KS + p * RG::VS + at, R.vb + off, n);
    }
}

/* q's A fragments (m16n8k16, 16 heads × 16 dims a k-step), split hi + lo:
 * x[kk][2r + half] = head g + 8r, dims 16kk + 8·half + 2c, + 1 (lane: g = l/4,
 * c = l%4); MR = 1 keeps rows 0..7 only (the others are zero). */
template <int HD, int MR>
static __device__ __forceinline__ void tc_load_q(const float *__restrict__ q, uint64_t qoff, int ng, float scale2,
                                                 uint32_t (&qh)[HD / 16][2 * MR], uint32_t (&ql)[HD / 16][2 * MR])
{
    const uint32_t lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
#pragma unroll
    for (int r = 0; r < MR; r++) {
        const uint32_t h = g + 8 * r;
        const float *qp = q + qoff + (uint64_t)h * HD;
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
#pragma unroll
            for (int half = 0; half < 2; half++) {
                const uint32_t col = 16 * kk + 8 * half + 2 * c;
                const float x = h < (uint32_t)ng ? qp[col] * scale2 : 0.0f;
                const float y = h < (uint32_t)ng ? qp[col + 1] * scale2 : 0.0f;
                split_bf16(x, y, qh[kk][2 * r + half], ql[kk][2 * r + half]);
            }
    }
}

/* The m16n8k16 A operand of k-step registers x (rows 8..15 zero when MR = 1). */
template <int MR>
static __device__ __forceinline__ void tc_a(const uint32_t (&x)[2 * MR], uint32_t (&a)[4])
{
    a[0] = x[0];
    a[2] = x[1];
    if constexpr (MR == 2) {
        a[1] = x[2];
        a[3] = x[3];
    } else {
        a[1] = a[3] = 0u;
    }
}

/* q of the CTA's heads, scaled by scale2 and split into bf16 hi + lo parts
 * (the same values as tc_load_q), into shared memory at qs: the hi part's
 * 8·MR rows of QROW bytes, then the lo part's (heads ≥ ng zero). Whole CTA;
 * the caller's barrier publishes them. */
template <int HD, int MR, int QROW, int QPART>
static __device__ __forceinline__ void tc_store_q(const float *__restrict__ q, uint64_t qoff, int ng, float scale2,
                                                  char *qs)
{
    for (uint32_t i = threadIdx.x; i < 8 * MR * HD / 2; i += NW * 32) {
        const uint32_t h = i / (HD / 2), col = 2 * (i % (HD / 2));
        const float *qp = q + qoff + (uint64_t)h * HD;
        const float x = h < (uint32_t)ng ? qp[col] * scale2 : 0.0f;
        const float y = h < (uint32_t)ng ? qp[col + 1] * scale2 : 0.0f;
        uint32_t hi, lo;
        split_bf16(x, y, hi, lo);
        *reinterpret_cast<uint32_t *>(qs + h * QROW + col * 2) = hi;
        *reinterpret_cast<uint32_t *>(qs + QPART + h * QROW + col * 2) = lo;
    }
}

/* q's A fragments, from one of two homes with the same values (so the same
 * bits): tc_q<·, false> keeps them in registers for the whole kernel (32 a
 * thread, 64 with MR = 2), tc_q<·, true> in shared memory (tc_store_q), read
 * by ldmatrix at each k-step — fewer registers (the rows form at head_dim
 * 128: 126 against 186), so more CTAs an SM, for a longer dependency chain a
 * chunk (one row alone at depth 4096 8.9 → 11.6 µs; twenty-sixth run).
 * hi(kk, a) / lo(kk, a): the A operand of k-step kk's hi or lo part. */
template <int HD, int MR, bool QS> struct tc_q;
template <int HD, int MR> struct tc_q<HD, MR, false> {
    uint32_t h[HD / 16][2 * MR], l[HD / 16][2 * MR];
    template <int QROW, int QPART>
    __device__ __forceinline__ void load(const float *__restrict__ q, uint64_t qoff, int ng, float scale2, char *)
    {
        tc_load_q<HD, MR>(q, qoff, ng, scale2, h, l);
    }
    __device__ __forceinline__ void hi(int kk, uint32_t (&a)[4]) const { tc_a<MR>(h[kk], a); }
    __device__ __forceinline__ void lo(int kk, uint32_t (&a)[4]) const { tc_a<MR>(l[kk], a); }
};
template <int HD, int MR> struct tc_q<HD, MR, true> {
    uint32_t ha, la; /* this lane's ldmatrix row address in each part for k-step 0 (+ 32 bytes a k-step) */
    template <int QROW, int QPART>
    __device__ __forceinline__ void load(const float *__restrict__ q, uint64_t qoff, int ng, float scale2, char *qs)
    {
        tc_store_q<HD, MR, QROW, QPART>(q, qoff, ng, scale2, qs);
        __syncthreads();
        /* MR = 2: four matrices (rows 0-7 / 8-15 × dims 0-7 / 8-15: a0..a3);
         * MR = 1: two (rows 0-7 × dims 0-7, 8-15: a0, a2; rows 8..15 zero) */
        const uint32_t lane = threadIdx.x & 31;
        const uint32_t off = MR == 2 ? (((lane >> 3) & 1) * 8 + (lane & 7)) * QROW + (lane >> 4) * 16
                                     : (lane & 7) * QROW + ((lane >> 3) & 1) * 16;
        ha = (uint32_t)__cvta_generic_to_shared(qs) + off;
        la = ha + QPART;
    }
    static __device__ __forceinline__ void at(uint32_t qa, int kk, uint32_t (&a)[4])
    {
        if constexpr (MR == 2) {
            ldmatrix_x4(a, qa + kk * 32);
        } else {
            uint32_t r[2];
            ldmatrix_x2(r, qa + kk * 32);
            a[0] = r[0];
            a[2] = r[1];
            a[1] = a[3] = 0u;
        }
    }
    __device__ __forceinline__ void hi(int kk, uint32_t (&a)[4]) const { at(ha, kk, a); }
    __device__ __forceinline__ void lo(int kk, uint32_t (&a)[4]) const { at(la, kk, a); }
};

/* c += a·b on the accumulator rows a CTA uses: MR = 2 all four (rows g and
 * g + 8), MR = 1 rows 0..7 only — a's rows 8..15 are zero there, so the
 * products' rows 8..15 start at 0 and are dropped, which frees the registers
 * of half of every accumulator tile (the same values in rows 0..7). */
template <int MR>
static __device__ __forceinline__ void tc_mma16(float (&c)[2 * MR], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    if constexpr (MR == 2) {
        mma_bf16(c, a, b0, b1);
    } else {
        float d2, d3;
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%10,%10};"
                     : "+f"(c[0]), "+f"(c[1]), "=f"(d2), "=f"(d3)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
    }
}
template <int MR>
static __device__ __forceinline__ void tc_mma8(float (&c)[2 * MR], uint32_t a0, uint32_t a1, uint32_t b)
{
    if constexpr (MR == 2) {
        mma_bf16_k8(c, a0, a1, b);
    } else {
        float d2, d3;
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%7,%7};"
                     : "+f"(c[0]), "+f"(c[1]), "=f"(d2), "=f"(d3)
                     : "r"(a0), "r"(a1), "r"(b), "f"(0.0f));
    }
}

/* P·V transposed (bf16 keys, ≤ 8 heads a kv head): O^T (16 head dims × 8
 * heads) += V^T (16 dims × 8 positions) · P^T (8 positions × 8 heads) — an
 * m16n8k8 whose 16 rows are all used, where O (16 heads × 8 dims) += P · V
 * used the 4-8 rows of the group's heads: half the mma a chunk. P^T's B
 * fragment (positions 2c, 2c + 1; head g) is what S's accumulators already
 * hold, V^T's A fragments what the same ldmatrix.trans gives (registers 0/1
 * dims 0-7 / 8-15 of a 16-dim tile). The accumulators, in o[HD/8][2]: tile jt
 * (dims 16jt ..) in o[2jt] (dim 16jt + g; heads 2c, 2c + 1) and o[2jt + 1]
 * (dim 16jt + g + 8; the same heads). The same products summed in the same
 * k8 groups and order: the same bits (kernel_attn's digests). Only the
 * q-in-shared-memory kernels take it (tc_rows_qs, tc_split_qs: 106-108
 * registers instead of 126-128), where it paid on the H200 (twenty-seventh
 * run: 64 rows × 640 73.5 → 68.8 µs, 48 × 640 73.1 → 68.2, 16 × 640 27.4 →
 * 26.2, 8 × 512 13.6 → 13.0, 16 × 4096 85.2 → 81.5; tg32x64@d512 +1.5-2 %);
 * in the register kernels it was slower (the rows form at 32 rows 44.1 →
 * 51.7, the split form of one row at depth 4096 8.81 → 9.13). */
template <bool BF, int MR, bool QS> constexpr bool tc_pvt = BF && MR == 1 && QS;
static __device__ __forceinline__ void tc_mma8_t(float &c0, float &c1, float &c2, float &c3, uint32_t a0, uint32_t a1,
                                                 uint32_t b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                 : "r"(a0), "r"(a1), "r"(b));
}

/* This warp's 8 positions of chunk cc (its share at wbase / wp: shared
 * address and generic pointer) into the online-softmax states of the CTA's
 * heads: o[j] the accumulator tile of dims 8j .. 8j + 7 (o[j][0..1]: head g,
 * dims 8j + 2c, + 1; o[j][2..3], when MR = 2: head g + 8), m[r] the running maximum of head
 * g + 8r (the same in the 4 lanes of a row), l[r] this lane's share of its
 * sum (its 2 positions a chunk; the 4 lanes' shares are added at the end). */
template <int HD, bool BF, int MR, bool PV, bool ONE, class Q>
static __device__ __forceinline__ void tc_compute(const dec_row &R, uint32_t cc, uint32_t wbase, const char *wp,
                                                  const Q &qf, float (&o)[HD / 8][2 * MR], float (&m)[MR],
                                                  float (&l)[MR])
{
    using RG = tc_ring<HD, BF>;
    const uint32_t lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    /* S in four accumulators — hi·hi products (sb) and the lo·hi + hi·lo ones
     * (ss), each by k-step parity — so that no chain of dependent mma is
     * longer than 8; s = (sb0 + sb1) + (ss0 + ss1): s[0..1] head g,
     * positions 2c, 2c + 1; s[2..3] (MR = 2) head g + 8 */
    float sb[2][2 * MR] = {}, ss[2][2 * MR] = {};
    if constexpr (BF) {
        /* K rows as B fragments by ldmatrix: matrix i = (k-step kk + i/2, dims + 8·(i%2)) */
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk += 2) {
            uint32_t b[4], a[4];
            ldmatrix_x4(b, wbase + (lane & 7) * RG::KS + tc_piece<BF>(lane & 7, 2 * kk + (lane >> 3)) * 16);
            if constexpr (!ONE) { /* (ONE: q's low parts left out, ss stays 0) */
                qf.lo(kk, a);
                tc_mma16<MR>(ss[0], a, b[0], b[1]);
            }
            qf.hi(kk, a);
            tc_mma16<MR>(sb[0], a, b[0], b[1]);
            if constexpr (!ONE) {
                qf.lo(kk + 1, a);
                tc_mma16<MR>(ss[1], a, b[2], b[3]);
            }
            qf.hi(kk + 1, a);
            tc_mma16<MR>(sb[1], a, b[2], b[3]);
        }
    } else {
        const float *kr = reinterpret_cast<const float *>(wp + g * RG::KS);
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            const float2 k0 = *reinterpret_cast<const float2 *>(kr + 16 * kk + 2 * c);
            const float2 k1 = *reinterpret_cast<const float2 *>(kr + 16 * kk + 8 + 2 * c);
            uint32_t h0, l0, h1, l1, a[4];
            split_bf16(k0.x, k0.y, h0, l0);
            split_bf16(k1.x, k1.y, h1, l1);
            if constexpr (!ONE) {
                qf.lo(kk, a);
                tc_mma16<MR>(ss[kk & 1], a, h0, h1);
            }
            qf.hi(kk, a);
            tc_mma16<MR>(ss[kk & 1], a, l0, l1);
            tc_mma16<MR>(sb[kk & 1], a, h0, h1);
        }
    }
    float s[2 * MR];
#pragma unroll
    for (int i = 0; i < 2 * MR; i++)
        s[i] = (sb[0][i] + sb[1][i]) + (ss[0][i] + ss[1][i]);
    /* online softmax over the warp's 8 positions, a head a row */
    const uint32_t pos0 = cc * CH + R.warp * PW + 2 * c;
    const bool v0 = dec_visible(R, pos0), v1 = dec_visible(R, pos0 + 1);
    uint32_t ph[2] = {0u, 0u}, pl[2] = {0u, 0u};
#pragma unroll
    for (int r = 0; r < MR; r++) {
        const float x0 = v0 ? s[2 * r] : -INFINITY, x1 = v1 ? s[2 * r + 1] : -INFINITY;
        float mx = fmaxf(x0, x1);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mn = fmaxf(m[r], mx), base = mn == -INFINITY ? 0.0f : mn;
        const float corr = exp2f(m[r] - base), p0 = exp2f(x0 - base), p1 = exp2f(x1 - base);
        l[r] = fmaf(l[r], corr, p0 + p1);
        m[r] = mn;
        if constexpr (PV) { /* this lane's columns: heads 2c, 2c + 1 (rows g of lanes 8c, 8c + 4) */
            const float ca = __shfl_sync(0xffffffffu, corr, 8 * c), cb = __shfl_sync(0xffffffffu, corr, 8 * c + 4);
#pragma unroll
            for (int j = 0; j < HD / 8; j++) {
                o[j][0] *= ca;
                o[j][1] *= cb;
            }
        } else {
#pragma unroll
            for (int j = 0; j < HD / 8; j++) {
                o[j][2 * r] *= corr;
                o[j][2 * r + 1] *= corr;
            }
        }
        split_bf16(p0, p1, ph[r], pl[r]);
    }
    /* O += P · V, P as the k8 A operand (rows g, g + 8; positions 2c, 2c + 1);
     * PV: O^T += V^T · P^T, P^T's B fragment ph[0] / pl[0], the same V fragments
     * as V^T's A fragments */
    if constexpr (BF) {
#pragma unroll
        for (int j0 = 0; j0 < HD / 8; j0 += 4) {
            uint32_t v[4];
            ldmatrix_x4_trans(v, wbase + PW * RG::KS + (lane & 7) * RG::VS + tc_piece<BF>(lane & 7, j0 + (lane >> 3)) * 16);
            if constexpr (PV) {
#pragma unroll
                for (int t = 0; t < 2; t++) {
                    const int j = j0 + 2 * t; /* tile jt = j / 2: o[j], o[j + 1] */
                    if constexpr (!ONE) /* (ONE: P's low parts left out) */
                        tc_mma8_t(o[j][0], o[j][1], o[j + 1][0], o[j + 1][1], v[2 * t], v[2 * t + 1], pl[0]);
                    tc_mma8_t(o[j][0], o[j][1], o[j + 1][0], o[j + 1][1], v[2 * t], v[2 * t + 1], ph[0]);
                }
            } else {
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    if constexpr (!ONE)
                        tc_mma8<MR>(o[j0 + i], pl[0], pl[1], v[i]);
                    tc_mma8<MR>(o[j0 + i], ph[0], ph[1], v[i]);
                }
            }
        }
    } else {
        const float *v0r = reinterpret_cast<const float *>(wp + PW * RG::KS + 2 * c * RG::VS);
        const float *v1r = reinterpret_cast<const float *>(wp + PW * RG::KS + (2 * c + 1) * RG::VS);
#pragma unroll
        for (int j = 0; j < HD / 8; j++) {
            uint32_t bh, bl;
            split_bf16(v0r[8 * j + g], v1r[8 * j + g], bh, bl);
            if constexpr (!ONE)
                tc_mma8<MR>(o[j], pl[0], pl[1], bh);
            tc_mma8<MR>(o[j], ph[0], ph[1], bl);
            tc_mma8<MR>(o[j], ph[0], ph[1], bh);
        }
    }
}

template <int HD, int MR>
static __device__ __forceinline__ void tc_state_init(float (&o)[HD / 8][2 * MR], float (&m)[MR], float (&l)[MR])
{
#pragma unroll
    for (int j = 0; j < HD / 8; j++)
#pragma unroll
        for (int e = 0; e < 2 * MR; e++)
            o[j][e] = 0.0f;
#pragma unroll
    for (int r = 0; r < MR; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
}

/* A split's end: each warp's states into the merge area laid over the stage
 * at mp and ml (after a barrier: every warp is done reading it), then
 * dec_merge_warps writes the partials of heads h0 .. h0 + ng − 1 at part0 +
 * g·NS. Whole CTA; ends with a barrier. */
template <int HD, int MR, bool PV>
static __device__ __forceinline__ void tc_split_write(const dec_row &R, float (&o)[HD / 8][2 * MR], float (&m)[MR],
                                                      float (&l)[MR], int ng, char *mp, char *ml,
                                                      float *__restrict__ part_acc, float *__restrict__ part_ml,
                                                      uint64_t part0)
{
    using SM = tc_merge<8 * MR, HD>;
    SM sm;
    sm.acc = reinterpret_cast<float (*)[8 * MR][HD]>(mp);
    sm.m = reinterpret_cast<float (*)[8 * MR]>(ml);
    sm.l = sm.m + NW;
    const uint32_t lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    __syncthreads();
#pragma unroll
    for (int r = 0; r < MR; r++) {
        float L = l[r];
        L += __shfl_xor_sync(0xffffffffu, L, 1);
        L += __shfl_xor_sync(0xffffffffu, L, 2);
        const uint32_t h = g + 8 * r;
        if constexpr (PV) { /* o[j]: dim 8j + g (j even: 16·(j/2) + g; odd: + 8), heads 2c, 2c + 1 */
#pragma unroll
            for (int j = 0; j < HD / 8; j++) {
                const uint32_t dim = 16 * (j / 2) + 8 * (j % 2) + g;
                if (2 * c < (uint32_t)ng)
                    sm.acc[R.warp][2 * c][dim] = o[j][0];
                if (2 * c + 1 < (uint32_t)ng)
                    sm.acc[R.warp][2 * c + 1][dim] = o[j][1];
            }
        }
        if (h < (uint32_t)ng) {
            if constexpr (!PV)
#pragma unroll
                for (int j = 0; j < HD / 8; j++)
                    *reinterpret_cast<float2 *>(&sm.acc[R.warp][h][8 * j + 2 * c]) =
                        make_float2(o[j][2 * r], o[j][2 * r + 1]);
            if (c == 0) {
                sm.m[R.warp][h] = m[r];
                sm.l[R.warp][h] = L;
            }
        }
    }
    __syncthreads();
    dec_merge_warps(sm, ng, HD, part_acc, part_ml, part0);
}

/* Both forms (ROWS: one CTA a (kv head, row), grid (n_kv_heads, T); else one
 * a (kv head or query head, split, row), grid (·, NS, T)). The (split, chunk)
 * pairs are computed in order — a split's chunks ascending, splits ascending
 * in the rows form — through a ring of STG stages that copies STG − 1
 * pairs ahead; with kv.settled the first copies go before
 * the PDL wait, except the chunk holding p (this step's RoPE kernel writes
 * it). */
/* MINB: blocks an SM the compiler plans registers for (the same code, so
 * the same bits, whichever): f32 keys 2 (their ring's shared memory allows no
 * more); bf16 keys 1, or 3 for split launches of ≥ 8 rows — asking for 3 or
 * 4 makes it spill (8-264 bytes a thread): at one row of depth 4096 10.4 and
 * 16.4 µs against 8.8, at 64 rows of depth 640 (the rows form) 107 and 110
 * against 95, but at 8 rows of depth 512 17.5 (3) against 19.5 and at 16 of
 * 640 35.1 against 41.5 (H200, bench/RESULTS.md nineteenth run).
 * QS: q in shared memory (tc_q; its barrier is reached by every thread of a
 * CTA that has not returned as a whole above). */
template <int HD, bool BF, int MR, bool ROWS, int MINB, bool QS, bool ONE>
__global__ void __launch_bounds__(NW * 32, MINB)
    kernel_attn_decode_tc(const float *__restrict__ q, const uint32_t *__restrict__ tok_pos,
                          const uint32_t *__restrict__ tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                          uint32_t window, dec_out o, uint32_t hsplit)
{
    pdl_trigger();
    using RG = tc_ring<HD, BF>;
    using SMEM = tc_smem<HD, BF, MR, ROWS, QS>;
    constexpr int STG = SMEM::STG;
    constexpr bool PV = tc_pvt<BF, MR, QS>;
    extern __shared__ __align__(16) char tc_ring_mem[];
    uint32_t h0;
    int ng;
    const uint32_t t = ROWS ? blockIdx.y : blockIdx.z;
    const dec_row R = dec_row_of<8 * MR>(blockIdx.x, t, tok_pos, tok_table, d, kv, window, 32, ROWS ? 0 : hsplit, o.sc, h0, ng);
    if (ng == 0) /* hsplit: a deep row's heads are in their group's first CTA */
        return;
    const uint64_t part0 = ((uint64_t)t * d.n_heads + h0) * NS + (ROWS ? 0 : blockIdx.y);
    const uint32_t cmin = R.p0 / CH, clast = R.p / CH;
    /* the (split, chunk) pairs: the split's chunks ascending, splits ascending
     * in the rows form (dec_next_pair) */
    uint32_t s, c;
    if constexpr (ROWS)
        dec_first_pair(s, c, cmin, clast, R.ns);
    else
        s = blockIdx.y, c = dec_first_chunk(s, cmin, R.ns);
    auto next_pair = [&](uint32_t &ps, uint32_t &pc) { return dec_next_pair<ROWS>(ps, pc, cmin, clast, R.ns); };
    const uint32_t ring = (uint32_t)__cvta_generic_to_shared(tc_ring_mem) + R.warp * RG::WARP;
    char *const ringp = tc_ring_mem + R.warp * RG::WARP;
    uint32_t is = s, ic = c; /* the next pair to copy */
    bool imore = c <= clast;
    int issued = 0;
    if (kv.settled)
        for (; issued < STG - 1 && imore && ic < clast; issued++) {
            tc_issue<HD, BF>(R, ic, ring + issued * RG::STAGE);
            cp_async_commit();
            imore = next_pair(is, ic);
        }
    pdl_wait();
    if constexpr (ROWS) {
        dec_empty_partials<true>(o.pm, part0, ng, cmin, clast, R.ns);
    } else if (c > clast) {
        dec_empty_partials<false>(o.pm, part0, ng, cmin, clast, R.ns);
        return;
    }
    tc_q<HD, MR, QS> qf;
    qf.template load<SMEM::QROW, SMEM::QPART>(q, (uint64_t)t * d.n_heads * HD + (uint64_t)h0 * HD, ng, scale2,
                                              tc_ring_mem + SMEM::RING + SMEM::EXTRA + SMEM::ML);
    float acc[HD / 8][2 * MR], m[MR], l[MR];
    tc_state_init<HD, MR>(acc, m, l);
    for (; issued < STG - 1; issued++) {
        if (imore) {
            tc_issue<HD, BF>(R, ic, ring + issued * RG::STAGE);
            imore = next_pair(is, ic);
        }
        cp_async_commit(); /* empty groups keep the count */
    }
    for (uint32_t i = 0;; i++) {
        if (imore) { /* into the stage read at step i − 1 (its reads and merge are done: __syncwarp / barrier) */
            tc_issue<HD, BF>(R, ic, ring + ((i + STG - 1) % STG) * RG::STAGE);
            imore = next_pair(is, ic);
        }
        cp_async_commit();
        cp_async_wait<STG - 1>(); /* pair i's copies (this lane's) have landed */
        __syncwarp();             /* and every lane's of the warp */
        const uint32_t st = (i % STG) * RG::STAGE;
        tc_compute<HD, BF, MR, PV, ONE>(R, c, ring + st, ringp + st, qf, acc, m, l);
        __syncwarp();
        uint32_t s1 = s, c1 = c;
        const bool more = next_pair(s1, c1);
        if (!more || s1 != s) {
            char *const mp = SMEM::EXTRA ? tc_ring_mem + SMEM::RING : tc_ring_mem + st;
            tc_split_write<HD, MR, PV>(R, acc, m, l, ng, mp, tc_ring_mem + SMEM::RING + SMEM::EXTRA, o.pa, o.pm,
                                       part0 + (ROWS ? s : 0));
            tc_state_init<HD, MR>(acc, m, l);
        }
        if (!more)
            break;
        s = s1, c = c1;
    }
    if constexpr (ROWS) /* the partials of this CTA's heads (written above, read back through L2) */
        attn_out_heads_warps(o, part0, HD, t, h0, ng, reinterpret_cast<float *>(tc_ring_mem)); /* the ring: done */
}

/* The kernel's shared-memory attribute, set once a device; returns its CTAs
 * an SM (asked once a device). */
template <int HD, bool BF, int MR, bool ROWS, int MINB, bool QS, bool ONE = false>
int tc_prepare(const cuda_ctx *ctx, bool *spills = nullptr)
{
    constexpr int bytes = tc_smem<HD, BF, MR, ROWS, QS>::BYTES;
    static uint32_t opted;       /* devices the attribute is set on */
    static int resident[32];     /* CTAs an SM, by device (0: not asked yet) */
    const auto kernel = kernel_attn_decode_tc<HD, BF, MR, ROWS, MINB, QS, ONE>;
    if (cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    int n = __atomic_load_n(&resident[ctx->device & 31], __ATOMIC_RELAXED);
    if (n == 0) {
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, NW * 32, bytes));
        n = n > 0 ? n : 1;
        __atomic_store_n(&resident[ctx->device & 31], n, __ATOMIC_RELAXED);
    }
    if (spills) {
        static int local = -1; /* the kernel's local-memory bytes a thread (spills), once */
        int v = __atomic_load_n(&local, __ATOMIC_RELAXED);
        if (v < 0) {
            cudaFuncAttributes fa;
            CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)kernel));
            v = (int)fa.localSizeBytes;
            __atomic_store_n(&local, v, __ATOMIC_RELAXED);
        }
        *spills = v > 0;
    }
    return n;
}

template <int HD, bool BF, int MR, bool ROWS, int MINB, bool QS, bool ONE>
void launch_tc_kernel(const cuda_ctx *ctx, dim3 grid, const float *q, const uint32_t *tok_pos,
                      const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                      const dec_out &o, uint32_t hsplit)
{
    tc_prepare<HD, BF, MR, ROWS, MINB, QS, ONE>(ctx);
    cuda_launch(ctx, kernel_attn_decode_tc<HD, BF, MR, ROWS, MINB, QS, ONE>, grid, NW * 32,
                tc_smem<HD, BF, MR, ROWS, QS>::BYTES, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit);
}

/* The kernel of a launch shape, in the context's numerics (o.one: q and P in
 * one bf16 part; bf16 keys only — the f32-key kernels keep the split). */
template <int HD, bool BF, int MR, bool ROWS, int MINB = BF ? 1 : 2, bool QS = false>
void launch_tc_one(const cuda_ctx *ctx, dim3 grid, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
                   cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o, uint32_t hsplit)
{
    if constexpr (BF)
        if (o.one) {
            launch_tc_kernel<HD, BF, MR, ROWS, MINB, QS, true>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2,
                                                               window, o, hsplit);
            return;
        }
    launch_tc_kernel<HD, BF, MR, ROWS, MINB, QS, false>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o,
                                                        hsplit);
}

/* Whether a rows-form launch of T rows keeps q in shared memory: the
 * context's choice (MEMRA_ATTN_TC_Q), by default (auto) when its CTAs do not
 * fit in one wave of the register kernel and the shared-memory kernel holds
 * more CTAs an SM — it is slower a CTA (a longer chain a chunk), faster a
 * launch only when more CTAs run at once: 64 rows × 640 (512 CTAs, 264 fit)
 * 73.4 against 87.6 µs, 32 rows (256) 70.1 against 44.0 (H200, twenty-sixth
 * run). bf16 keys only (measured there; the f32-key ring is larger). */
template <int HD, bool BF, int MR>
bool tc_rows_qs(const cuda_ctx *ctx, cuda_attn_dims d, uint32_t T)
{
    static_assert(BF, "q in shared memory: bf16 keys only");
    if (ctx->attn_tc_q == CUDA_ATTN_TC_Q_REGS)
        return false;
    if (ctx->attn_tc_q == CUDA_ATTN_TC_Q_SMEM)
        return true;
    const int regs = tc_prepare<HD, BF, MR, true, 1, false>(ctx), smem = tc_prepare<HD, BF, MR, true, 1, true>(ctx);
    return smem > regs && (uint64_t)d.n_kv_heads * T > (uint64_t)regs * (uint64_t)ctx->prop.multiProcessorCount;
}

/* The same for a split launch of ≥ 8 rows (the kernel compiled for 3 CTAs an
 * SM): by default (auto) q in shared memory when the register kernel spills
 * (head_dim 128: 168 registers and 76 bytes of spills a thread, 3 CTAs an SM,
 * against 106 and none, 4 with the 2-stage ring) and the shared-memory kernel
 * holds at least as many CTAs an SM: 8 rows of depth 512 13.5 against 17.6
 * µs (H200, twenty-sixth run). */
template <int HD, bool BF, int MR>
bool tc_split_qs(const cuda_ctx *ctx)
{
    static_assert(BF, "q in shared memory: bf16 keys only");
    if (ctx->attn_tc_q == CUDA_ATTN_TC_Q_REGS)
        return false;
    if (ctx->attn_tc_q == CUDA_ATTN_TC_Q_SMEM)
        return true;
    bool spills;
    const int regs = tc_prepare<HD, BF, MR, false, 3, false>(ctx, &spills);
    const int smem = tc_prepare<HD, BF, MR, false, 3, true>(ctx);
    return spills && smem >= regs;
}

template <int HD, bool BF, int MR>
bool launch_tc_mr(const cuda_ctx *ctx, dim3 grid, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
                  cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o)
{
    const uint32_t T = grid.z;
    const uint32_t rows_min = dec_rows_min(ctx, CUDA_ATTN_TC_ROWS_MIN);
    if (rows_min > 0 && T >= rows_min) {
        if constexpr (BF)
            if (tc_rows_qs<HD, BF, MR>(ctx, d, T)) {
                launch_tc_one<HD, BF, MR, true, 1, true>(ctx, dim3(d.n_kv_heads, T), q, tok_pos, tok_table, d, kv,
                                                         scale2, window, o, 0);
                return true;
            }
        launch_tc_one<HD, BF, MR, true>(ctx, dim3(d.n_kv_heads, T), q, tok_pos, tok_table, d, kv, scale2, window, o,
                                        0);
        return true;
    }
    const uint32_t hsplit = dec_launch_hsplit(ctx, d, T, kv);
    const dim3 sgrid(hsplit ? d.n_heads : d.n_kv_heads, NS, T);
    if constexpr (BF)
        if (T >= 8) { /* register room for 3 blocks an SM: MINB above */
            if (tc_split_qs<HD, BF, MR>(ctx))
                launch_tc_one<HD, BF, MR, false, 3, true>(ctx, sgrid, q, tok_pos, tok_table, d, kv, scale2, window, o,
                                                          hsplit);
            else
                launch_tc_one<HD, BF, MR, false, 3>(ctx, sgrid, q, tok_pos, tok_table, d, kv, scale2, window, o,
                                                    hsplit);
            return false;
        }
    launch_tc_one<HD, BF, MR, false>(ctx, sgrid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit);
    return false;
}

} // namespace

bool tc_supported(cuda_attn_dims d)
{
    const uint32_t G = d.n_kv_heads ? d.n_heads / d.n_kv_heads : 0;
    return (d.head_dim == 64 || d.head_dim == 128) && G >= 1 && G <= 16;
}

template <bool BF>
bool launch_tc(const cuda_ctx *ctx, dim3 grid, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
               cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o)
{
    const bool mr2 = d.n_heads / d.n_kv_heads > 8;
    if (d.head_dim == 64)
        return mr2 ? launch_tc_mr<64, BF, 2>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o)
                   : launch_tc_mr<64, BF, 1>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o);
    return mr2 ? launch_tc_mr<128, BF, 2>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o)
               : launch_tc_mr<128, BF, 1>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o);
}

template bool launch_tc<false>(const cuda_ctx *, dim3, const float *, const uint32_t *, const uint32_t *,
                               cuda_attn_dims, cuda_attn_kv, float, uint32_t, const dec_out &);
template bool launch_tc<true>(const cuda_ctx *, dim3, const float *, const uint32_t *, const uint32_t *,
                              cuda_attn_dims, cuda_attn_kv, float, uint32_t, const dec_out &);

} // namespace attn_dec
