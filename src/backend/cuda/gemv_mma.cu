/* backend/cuda/gemv_mma.cu — the Q4_K and Q6_K decode GEMVs on the int8
 * tensor cores: mma.sync of the weights' 4- or 6-bit values (u8) by the
 * prepared activations' byte digits (s8), exact 32-bit sums.
 *
 *   y[b][r] = Σ_i dequant(W)[r, i] · x[b][i],   W in Q4_K or Q6_K, batch b ≤ 8
 *
 * Why: the dp4a kernels (gemv_quant.cu) decode a block for each vector's
 * three byte planes with three dp4a a 4 elements; the mma multiplies 16 rows
 * × 32 (Q4_K) or 16 (Q6_K: a scale per 16) elements by the three planes of up
 * to 2 vectors (8 with 3 n-tiles) in one instruction, and the sub-block scales
 * go onto the exact integer sums (one IMAD a sum). A lone vector's Q6_K takes
 * 32 elements an mma too, each 16-element group's sum in its own column
 * (mk_q6k<true>: the same integers, so the same bits as the k16 tiles a batch
 * runs; alone 4 % faster than k16 on gate/up, still slower than the dp4a
 * kernel on lm_head: 150.9 vs 118.9 µs, H200, 2026-12-02). Measured for Q4_K (H200,
 * bench/RESULTS.md 2026-12-01 eleventh run): alone about as fast as the staged
 * dp4a kernel at batch 1 (lm_head 128256×4096 80.6 µs = 85 % of 4.3 TB/s vs
 * 81.7; gate+up 23.1 vs 24.0) and 1.3-2× faster at batches 2-8 (gate/up batch
 * 8: 34.9 vs 70.1 µs); Q4_K_M tg128 384 vs 390 tok/s, tg64x8 1175 vs 777.
 * Floors: 144 (Q4_K) / 210 (Q6_K) bytes a 256 elements at 4.3 TB/s: 14336×4096
 * = 33.0 / 48.2 MB → 7.7 / 11.2 µs.
 *
 * Loads. A warp streams its 16 rows' superblock pairs (288 / 420 bytes a
 * row, copied as the 16-byte-aligned range around them) through a ring of NS
 * stages in shared memory with cp.async; the whole ring is asked for before
 * the PDL wait (the weights are constant), which is what made it as fast as
 * the staged kernel in the model: with one stage less in flight there, tg128
 * was 3 % lower although the kernel alone was faster. Activations are read
 * from L1/L2 (__ldg).
 *
 * Layout. A warp owns a tile of 16 rows and walks its superblock pairs kp,
 * kp + KS, ... (KS warps of the block share the tile: the K split); thread
 * (g, t) = (lane / 4, lane % 4) reads rows g and g + 8. The mma's k order is
 * free (an integer sum does not depend on it), so each thread takes the
 * elements whose bytes lie together (mk_q4k, mk_q6k below) for both A
 * (weights) and B (activations: the same elements of one plane). B's 8
 * columns are (vector, plane) pairs: column c of n-tile nt is vector
 * (8nt + c) / 3, plane (8nt + c) % 3 — NTL n-tiles cover 8·NTL/3 vectors;
 * with bf16 activations (XP = 2: X0 is zero) vector (8nt + c) / 2, plane
 * 1 + (8nt + c) % 2 — 4·NTL vectors (mma_cols).
 * Prepared x (gemv_internal.cuh): X = 65536·X2 + 256·X1 + X0, signed digits,
 * one scale a 128 elements (n % 128 == 0), so a superblock has two halves of
 * one activation scale each.
 *
 * Sums: per half and column an exact integer I (the scales times the mma
 * sums), converted once into F (per plane); the terms that do not involve
 * the quantized values (Q4_K's mins, Q6_K's −32) go into M from the prep's
 * Σx per 16, the group's 4 threads summed at the end. A row's value is then
 * Σ_warps (65536·F2 + 256·F1 + F0 − MFAC·M) in the warps' order: every
 * vector's operations are the same whatever the batch, so a row alone and in
 * a batch have the same bits (kernel_gemv checks). Relative to the dp4a
 * kernels the sums are grouped differently: not the same bits as they (the
 * engine uses one or the other for a matrix, never both).
 *
 * RoPE epilogue (cuda_fwd_gemv_rope_kv, a lone token's q|k[|v]): with rp.q set
 * the outputs go through rope_epi_store (gemv_internal.cuh) instead of y —
 * rows 2i and 2i + 1 are lanes 2i and 2i + 1 of the half warp that holds a
 * 16-row tile's outputs, so one shuffle gives each its rotation partner.
 */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int QK = 256; /* superblock elements */
/* Warps a block: 4, or KS when more warps split a tile's K. */
template <int KS> struct mma_block {
    static constexpr int NW = KS > 4 ? KS : 4;
};
/* Ring stages: 2 (45-55 KB a block, 4-5 blocks an SM; 3 stages, 3 blocks:
 * tg128 374 vs 387 on Q4_K_M, bench/RESULTS.md 2026-12-01 eleventh run), or
 * 4 at batch ≤ 2 for a grid that fits at 2 blocks an SM (down, q, o: 256
 * blocks on 132 SMs), whose SMs have the room: Q4_K_M tg64x2@d512 +1.6 %,
 * tg128@d4096 +0.8 %, tg128 within the spread (twelfth run). The stages
 * change no operation, only how many pairs a warp has in flight. */
template <int NTL> constexpr int ns_max() { return NTL == 1 ? 4 : 2; }

/* NTL n-tiles of 8 columns serve this many vectors of XP planes each: 3 (the
 * 24-bit prepared x), or 2 with bf16 activations (the 16-bit form, X0 = 0:
 * gemv_internal.cuh; its planes 1 and 2 only — twice the vectors an n-tile,
 * so a batch of 3-4 takes one n-tile instead of two, of 5-8 two instead of
 * three). Column c is vector c / XP, plane plane_of<XP>(c). */
template <int NTL, int XP> struct mma_cols {
    static constexpr int NB = 8 * NTL / XP;
};
template <int XP> static __host__ __device__ constexpr uint32_t plane_of(uint32_t c)
{
    return XP == 3 ? c % 3 : 1 + c % 2;
}

/* D = A·B, A 16×32 u8 (a[4]), B 32×8 s8 (b0, b1), D s32. */
static __device__ __forceinline__ void mma_k32(const uint32_t (&a)[4], uint32_t b0, uint32_t b1, int (&c)[4])
{
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
        : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

/* D = A·B, A 16×16 u8 (a0 row g, a1 row g + 8), B 16×8 s8 (b0), D s32. */
static __device__ __forceinline__ void mma_k16(uint32_t a0, uint32_t a1, uint32_t b0, int (&c)[4])
{
    asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};"
        : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
        : "r"(a0), "r"(a1), "r"(b0), "r"(0));
}

static __device__ __forceinline__ uint32_t byte_of(uint32_t w, int k) { return __byte_perm(w, 0u, 0x4440 + k); }
static __device__ __forceinline__ int sbyte_of(uint32_t w, int k) { return (int)(int8_t)(w >> (8 * k)); }
static __device__ __forceinline__ float f16_at(const uint8_t *p)
{
    return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short *>(p)));
}

/* A 32-bit word of shared memory at p, 4-aligned (ODD false) or 2 mod 4. */
template <bool ODD> static __device__ __forceinline__ uint32_t rd32(const uint8_t *p)
{
    if constexpr (!ODD)
        return *reinterpret_cast<const uint32_t *>(p);
    else
        return __funnelshift_r(*reinterpret_cast<const uint32_t *>(p - 2), *reinterpret_cast<const uint32_t *>(p + 2),
                               16);
}

/* A thread's activations of one superblock: B fragments (16 words a
 * superblock and n-tile, in the k-slot order of the format's tiles: load_x),
 * the activation scale of each half (128 elements) for its two C columns, and
 * the sums Σx of the superblock's 16-element groups 4t..4t+3 (one float4) for
 * every vector. */
template <int NTL, int XP> struct xsb {
    uint32_t b[16][NTL];
    float sx[2][NTL][2];
    float4 xs[mma_cols<NTL, XP>::NB];
};

/* Where a thread's activations are: B column g of each n-tile, its C
 * columns' scales, every vector's Σx. Columns past the batch read vector 0
 * (no branch a load): their sums are computed and never stored. */
template <int NTL, int XP> struct xsrc {
    const uint8_t *col[NTL];
    const float *sc[NTL][2];
    const float *sum[mma_cols<NTL, XP>::NB];
};

/* How a format's B fragments hold the activations. XL_K32: element 8t + i of
 * each 32 in k slot 4t + i (i < 4) / 16 + 4t + i − 4 (the Q4_K layout: a
 * thread's 8 bytes of a chunk). XL_K16: element 4t + i of each 16 in slot
 * 4t + i (Q6_K's k16 tiles), word s = group s. XL_HALVES: Q6_K on k32 tiles
 * with the two 16-element groups of a 32 in separate B columns: a column of
 * half u (its g's parity) holds group s in word s when s % 2 == u, zero in
 * the other (b0 = the even group's k slots, b1 = the odd group's), so one
 * k32 mma gives each group's sum in its own C column. */
enum { XL_K32, XL_K16, XL_HALVES };

template <int NTL, int XL, int XP>
static __device__ __forceinline__ void load_x(const xsrc<NTL, XP> &S, uint32_t sb, uint32_t t, uint32_t nb,
                                              xsb<NTL, XP> &X, uint32_t u)
{
#pragma unroll
    for (int nt = 0; nt < NTL; nt++) {
        if constexpr (XL == XL_HALVES) {
            const uint32_t *c = reinterpret_cast<const uint32_t *>(S.col[nt] + sb * QK + 4 * t) + 4 * u;
#pragma unroll
            for (int s = 0; s < 8; s++) {
                const uint32_t v = __ldg(c + 8 * s);
                X.b[2 * s][nt] = u ? 0u : v, X.b[2 * s + 1][nt] = u ? v : 0u;
            }
        } else if constexpr (XL == XL_K32) {
            const uint2 *c = reinterpret_cast<const uint2 *>(S.col[nt] + sb * QK + 8 * t);
#pragma unroll
            for (int s = 0; s < 8; s++) {
                const uint2 v = __ldg(c + 4 * s);
                X.b[2 * s][nt] = v.x, X.b[2 * s + 1][nt] = v.y;
            }
        } else {
            const uint32_t *c = reinterpret_cast<const uint32_t *>(S.col[nt] + sb * QK + 4 * t);
#pragma unroll
            for (int s = 0; s < 16; s++)
                X.b[s][nt] = __ldg(c + 4 * s);
        }
    }
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
        for (int nt = 0; nt < NTL; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                X.sx[h][nt][j] = __ldg(S.sc[nt][j] + sb * 8 + 4 * h);
#pragma unroll
    for (int b = 0; b < mma_cols<NTL, XP>::NB; b++)
        if (b < (int)nb)
            X.xs[b] = __ldg(reinterpret_cast<const float4 *>(S.sum[b] + sb * 16 + 4 * t));
}

/* ---- formats ---------------------------------------------------------------
 * Each: BS bytes a superblock; RS the row stride of a ring stage (a pair of
 * superblocks copied as the 16-byte-aligned range around it, PIECES 16-byte
 * pieces at most; RS puts the 8 rows g of a warp's reads in distinct banks:
 * RS/4 ≡ 24 mod 32 for Q4_K's 8-byte reads, ≡ 12 for Q6_K's words); K32 its
 * tiles' k (32 or 16); MFAC the factor of the thread's M sums in a row's
 * value; compute<ODD>(p0, p1, ...) one superblock of rows g / g + 8 at p0 /
 * p1 in shared memory (ODD: p 2 mod 4, Q6_K's odd superblocks), adding to
 * F[nt][i] (C element i of n-tile nt: row g for i < 2, g + 8 else; column
 * 2t + i % 2) and M[r][b]. */

/* Q4_K: f16 d | f16 dmin | scales[12] | qs[128]; sub-block j: x = d·sc_j·q − dmin·m_j.
 * Per half and column the integer I = Σ_sub sc_j · S_j (S_j the k32 mma's sum
 * of sub-block j; high nibbles used in place, 16·q, lower-nibble sums times
 * 16 so both kinds add up; |I| < 2^28) is converted once: F += (d/16 · s_x) ·
 * I. M: thread t adds dmin · (m_2t·Σx_2t + m_2t+1·Σx_2t+1). */
struct mk_q4k {
    static constexpr uint32_t BS = 144, PIECES = 18, RS = 352;
    static constexpr int XL = XL_K32, CPT = 8; /* B layout; (vector, plane) columns an n-tile */
    static constexpr float MFAC = 1.0f;
    template <bool ODD, int NTL, int XP>
    static __device__ __forceinline__ void compute(const uint8_t *p0, const uint8_t *p1, const xsb<NTL, XP> &X,
                                                   uint32_t t, uint32_t nb, float (&F)[NTL][4],
                                                   float (&M)[2][mma_cols<NTL, XP>::NB])
    {
        static_assert(!ODD, "Q4_K superblocks are 16-byte aligned");
        const uint8_t *p[2] = {p0, p1};
        float d[2], dmin[2];
        uint32_t scw[2][2], mw[2]; /* packed 6-bit scales of sub-blocks 0-3 / 4-7; the thread's two mins */
        uint2 q[2][4];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const uint4 h = *reinterpret_cast<const uint4 *>(p[r]);
#pragma unroll
            for (int c = 0; c < 4; c++)
                q[r][c] = *reinterpret_cast<const uint2 *>(p[r] + 16 + 32 * c + 8 * t);
            d[r] = __half2float(__ushort_as_half((unsigned short)(h.x & 0xFFFF))) * 0.0625f;
            dmin[r] = __half2float(__ushort_as_half((unsigned short)(h.x >> 16)));
            scw[r][0] = h.y & 0x3F3F3F3Fu;
            scw[r][1] = (h.w & 0x0F0F0F0Fu) | ((h.y >> 2) & 0x30303030u);
            const uint32_t mlo = h.z & 0x3F3F3F3Fu, mhi = ((h.w >> 4) & 0x0F0F0F0Fu) | ((h.z >> 2) & 0x30303030u);
            mw[r] = t < 2 ? mlo : mhi;
        }
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            int ilo[NTL][4], ihi[NTL][4];
#pragma unroll
            for (int nt = 0; nt < NTL; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    ilo[nt][i] = ihi[nt][i] = 0;
#pragma unroll
            for (int cc = 0; cc < 2; cc++) {
                const int c = 2 * hf + cc;
#pragma unroll
                for (int nib = 0; nib < 2; nib++) {
                    const int s = 2 * c + nib;
                    const uint32_t mask = nib ? 0xF0F0F0F0u : 0x0F0F0F0Fu;
                    const uint32_t a[4] = {q[0][c].x & mask, q[1][c].x & mask, q[0][c].y & mask, q[1][c].y & mask};
                    const int sc0 = (int)byte_of(scw[0][hf], s & 3), sc1 = (int)byte_of(scw[1][hf], s & 3);
#pragma unroll
                    for (int nt = 0; nt < NTL; nt++) {
                        int cr[4];
                        mma_k32(a, X.b[2 * s][nt], X.b[2 * s + 1][nt], cr);
                        int(&acc)[4] = nib ? ihi[nt] : ilo[nt];
                        acc[0] += sc0 * cr[0];
                        acc[1] += sc0 * cr[1];
                        acc[2] += sc1 * cr[2];
                        acc[3] += sc1 * cr[3];
                    }
                }
            }
#pragma unroll
            for (int nt = 0; nt < NTL; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    F[nt][i] =
                        fmaf(d[i >> 1] * X.sx[hf][nt][i & 1], (float)(ilo[nt][i] * 16 + ihi[nt][i]), F[nt][i]);
        }
        const int msh = 16 * (int)(t & 1);
#pragma unroll
        for (int b = 0; b < mma_cols<NTL, XP>::NB; b++) {
            if (b >= (int)nb)
                break;
            const float s0 = X.xs[b].x + X.xs[b].y, s1 = X.xs[b].z + X.xs[b].w;
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const float m0 = (float)byte_of(mw[r], msh / 8), m1 = (float)byte_of(mw[r], msh / 8 + 1);
                M[r][b] = fmaf(dmin[r], fmaf(m1, s1, m0 * s0), M[r][b]);
            }
        }
    }
};

/* Q6_K: ql[128] | qh[64] | i8 scales[16] | f16 d; x = d·sc·(q − 32), a scale
 * per 16 elements: group G = 8h + 2k + u (half h, quarter k, sixteen u) holds
 * elements 128h + 32k + 16u + l, l < 16, whose 6-bit q is nibble k/2 of
 * ql[64h + 32(k%2) + 16u + l] with bits 2k, 2k+1 of qh[32h + 16u + l] above
 * it; thread t takes l = 4t..4t+3 (one ql and one qh word a group). Per half
 * and (vector, plane) I = Σ_G sc_G · S_G (|I| < 2^28); F += (d · s_x) · I;
 * the −32 as M: thread t adds d · Σ_{G=4t..4t+3} sc_G · Σx_G, a row's value
 * takes −32·M.
 *
 * Two tilings of the same sums. HALVES false: k16 tiles, one mma a group,
 * 8 (vector, plane) columns an n-tile. HALVES true (XL_HALVES): k32 tiles,
 * one mma the groups u = 0, 1 of a (h, k), each group's sum in its own C
 * column (2t: u = 0, 2t + 1: u = 1, both (vector, plane) 4nt + t), so half
 * the mma and IMAD count of k16 at 4 columns an n-tile (one vector at NTL 1).
 * A thread adds its two columns' I (integers) before the conversion, so both
 * give every (row, vector) the same I, the same float operations after it,
 * and the same bits: alone (HALVES) = in a batch (k16), kernel_gemv checks. */
template <bool HALVES> struct mk_q6k {
    static constexpr uint32_t BS = 210, PIECES = 27, RS = 432;
    static constexpr int XL = HALVES ? XL_HALVES : XL_K16, CPT = HALVES ? 4 : 8;
    static constexpr float MFAC = 32.0f;
    template <bool ODD, int NTL, int XP>
    static __device__ __forceinline__ void compute(const uint8_t *p0, const uint8_t *p1, const xsb<NTL, XP> &X,
                                                   uint32_t t, uint32_t nb, float (&F)[NTL][4],
                                                   float (&M)[2][mma_cols<NTL, XP>::NB])
    {
        const uint8_t *p[2] = {p0, p1};
        float d[2];
#pragma unroll
        for (int r = 0; r < 2; r++)
            d[r] = f16_at(p[r] + 208);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            uint32_t lw[2][2][2], hw[2][2], sw[2][2]; /* [row][k % 2][u], [row][u], scales of the half */
#pragma unroll
            for (int r = 0; r < 2; r++) {
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    lw[r][0][u] = rd32<ODD>(p[r] + 64 * h + 16 * u + 4 * t);
                    lw[r][1][u] = rd32<ODD>(p[r] + 64 * h + 32 + 16 * u + 4 * t);
                    hw[r][u] = rd32<ODD>(p[r] + 128 + 32 * h + 16 * u + 4 * t);
                }
                sw[r][0] = rd32<ODD>(p[r] + 192 + 8 * h);
                sw[r][1] = rd32<ODD>(p[r] + 196 + 8 * h);
            }
            int acc[NTL][4];
#pragma unroll
            for (int nt = 0; nt < NTL; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    acc[nt][i] = 0;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                uint32_t a[2][2]; /* [u][row] */
                int sc[2][2];
#pragma unroll
                for (int u = 0; u < 2; u++)
#pragma unroll
                    for (int r = 0; r < 2; r++) {
                        a[u][r] = ((lw[r][k & 1][u] >> (4 * (k >> 1))) & 0x0F0F0F0Fu) |
                                  (((hw[r][u] >> (2 * k)) & 0x03030303u) << 4);
                        sc[u][r] = sbyte_of(sw[r][k >> 1], 2 * (k & 1) + u);
                    }
                const int G = 8 * h + 2 * k;
                if constexpr (HALVES) {
                    const uint32_t af[4] = {a[0][0], a[0][1], a[1][0], a[1][1]};
#pragma unroll
                    for (int nt = 0; nt < NTL; nt++) {
                        int cr[4];
                        mma_k32(af, X.b[G][nt], X.b[G + 1][nt], cr);
                        acc[nt][0] += sc[0][0] * cr[0];
                        acc[nt][1] += sc[1][0] * cr[1];
                        acc[nt][2] += sc[0][1] * cr[2];
                        acc[nt][3] += sc[1][1] * cr[3];
                    }
                } else {
#pragma unroll
                    for (int u = 0; u < 2; u++)
#pragma unroll
                        for (int nt = 0; nt < NTL; nt++) {
                            int cr[4];
                            mma_k16(a[u][0], a[u][1], X.b[G + u][nt], cr);
                            acc[nt][0] += sc[u][0] * cr[0];
                            acc[nt][1] += sc[u][0] * cr[1];
                            acc[nt][2] += sc[u][1] * cr[2];
                            acc[nt][3] += sc[u][1] * cr[3];
                        }
                }
            }
#pragma unroll
            for (int nt = 0; nt < NTL; nt++) {
                if constexpr (HALVES) {
                    /* F[nt][0] / [2]: rows g / g + 8 of (vector, plane) 4nt + t */
                    F[nt][0] = fmaf(d[0] * X.sx[h][nt][0], (float)(acc[nt][0] + acc[nt][1]), F[nt][0]);
                    F[nt][2] = fmaf(d[1] * X.sx[h][nt][0], (float)(acc[nt][2] + acc[nt][3]), F[nt][2]);
                } else {
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        F[nt][i] = fmaf(d[i >> 1] * X.sx[h][nt][i & 1], (float)acc[nt][i], F[nt][i]);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const uint32_t s4 = rd32<ODD>(p[r] + 192 + 4 * t); /* scales of groups 4t..4t+3 */
            const float c0 = (float)sbyte_of(s4, 0), c1 = (float)sbyte_of(s4, 1), c2 = (float)sbyte_of(s4, 2),
                        c3 = (float)sbyte_of(s4, 3);
#pragma unroll
            for (int b = 0; b < mma_cols<NTL, XP>::NB; b++) {
                if (b >= (int)nb)
                    break;
                const float4 v = X.xs[b];
                M[r][b] = fmaf(d[r], fmaf(c3, v.w, fmaf(c2, v.z, fmaf(c1, v.y, c0 * v.x))), M[r][b]);
            }
        }
    }
};

/* Superblock pair p of the tile's 16 rows into a ring stage: the 16-byte-
 * aligned range around it (PIECES pieces at most a row: cuda_alloc's 16 bytes
 * of slack cover the last one); a second superblock past the row's end is
 * not read. 8 lanes a row, 4 rows an instruction (lane: row lane / 8 + 4j,
 * pieces lane % 8 + 8i): each copy instruction reads 128 contiguous bytes of
 * 4 rows, and a lane's addresses are one row pointer a j plus constant
 * offsets: 12 copies a Q4_K pair from ~45 instructions, where 9 copies of
 * consecutive pieces (a lane's row changing with each) took ~170 — a Q4_K
 * pair's loop at one 16-bit vector 798 → 664 instructions, 24-bit 648 → 572,
 * two n-tiles 1249 → 1113 (lab/sass.py). One lane a row was 5-15 % slower
 * on Q4_K (half-sector reads). Then one commit (also when there is nothing
 * to copy: every lane's group count stays the loop's). Rows past the end
 * re-read the last. */
template <class Q>
static __device__ __forceinline__ void issue_w(uint32_t st_s, const uint8_t *w, uint64_t row_bytes, uint32_t row0,
                                               uint32_t rows, uint32_t p, uint32_t nsb, bool any, uint32_t lane)
{
    if (any) {
        const uint32_t start = 2 * Q::BS * p, len = (2 * p + 1 < nsb ? 2 : 1) * Q::BS;
        const uint32_t lo = start & ~15u, pieces = ((start & 15) + len + 15) / 16;
        const uint32_t r = lane >> 3, q = lane & 7;
        const uint8_t *src = w + lo + 16 * q;
        const uint32_t dst = st_s + r * Q::RS + 16 * q;
#pragma unroll
        for (uint32_t j = 0; j < 4; j++) {
            const uint8_t *s = src + (uint64_t)min(row0 + r + 4 * j, rows - 1) * row_bytes;
#pragma unroll
            for (uint32_t i = 0; i < (Q::PIECES + 7) / 8; i++)
                if (q + 8 * i < pieces)
                    cp_async16(dst + 4 * j * Q::RS + 128 * i, s + 128 * i);
        }
    }
    cp_async_commit();
}

/* KS warps share a 16-row tile (K split), NW / KS tiles a block: a group of
 * TPB tiles. The grid is either one block a group or fewer blocks (the
 * resident ones: cuda_ctx_set_gemv_mma_grid's rule) that loop over the groups
 * g = blockIdx.x, + gridDim.x, ...; a warp's ring then runs on across its
 * tiles — the next tile's pairs are in flight while this one computes and
 * sums — instead of each block paying a DRAM latency before its first
 * product. Which block runs a tile changes no operation: a row's value is
 * its KS warps' sums in their order either way (the same bits). */
template <class Q, int NTL, int KS, int NS, int XP>
__global__ void __launch_bounds__(mma_block<KS>::NW * 32, NTL > 1 ? 1 : KS > 4 || NS > 2 ? 2 : 4)
    kernel_gemv_mma(const uint8_t *__restrict__ w, uint64_t row_bytes, uint32_t rows, uint32_t n,
                    const uint8_t *__restrict__ xq, uint32_t nb, float *__restrict__ y, float scale,
                    cuda_rope_epi rp)
{
    constexpr int NW = mma_block<KS>::NW, TPB = NW / KS, NB = mma_cols<NTL, XP>::NB, NC = Q::CPT * NTL;
    constexpr uint32_t RS = Q::RS, STG = 16 * RS;
    static_assert(NW % KS == 0, "KS divides the block's warps");
    /* the warps' rings, then each warp's sums of a tile (F, M: 16·(NC + NB) floats) */
    extern __shared__ __align__(16) uint8_t ring_mem[];
    uint8_t(*ring)[NS][STG] = reinterpret_cast<uint8_t(*)[NS][STG]>(ring_mem);
    float *const sums_mem = reinterpret_cast<float *>(ring_mem + NW * NS * STG);
    const uint32_t lane = threadIdx.x & 31, wi = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const uint32_t kp = wi % KS, tl = wi / KS;
    const uint32_t nsb = n / QK;
    const uint32_t npair = (nsb + 1) / 2;
    const uint32_t ngroups = ((rows + 15) / 16 + TPB - 1) / TPB;
    const uint32_t mygroups = blockIdx.x < ngroups ? (ngroups - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    const uint32_t npw = kp < npair ? (npair - kp + KS - 1) / KS : 0; /* this warp's pairs of a tile */
    auto row0_of = [&](uint32_t gi) { return ((blockIdx.x + gi * gridDim.x) * TPB + tl) * 16; };
    const uint32_t ring_s = smem_u32(&ring[wi][0][0]);
    /* the warp's items in order: tile gi's pairs kp, kp + KS, ..., then tile
     * gi + 1's; the next one to ask for is (ig, ii), into stage slot (past
     * the last: nothing copied, one commit all the same) */
    uint32_t ig = 0, ii = 0;
    auto issue_next = [&](uint32_t slot) {
        const bool in = ig < mygroups && npw > 0;
        const uint32_t r0 = in ? row0_of(ig) : 0u;
        issue_w<Q>(ring_s + slot * STG, w, row_bytes, r0, rows, kp + ii * KS, nsb, in && r0 < rows, lane);
        if (in && ++ii == npw)
            ii = 0, ig++;
    };
    /* weights are constant: the ring's NS stages asked for before the wait
     * (PDL: while the kernel before still runs; with NS − 1 ahead, as a
     * ring usually starts, tg128 on Q4_K_M was 3 % below the staged dp4a
     * kernel's although the kernel alone was faster) */
#pragma unroll
    for (int j = 0; j < NS; j++)
        issue_next(j);
    const rope_epi_at at = rope_epi_where(rp);
    pdl_wait();

    const uint64_t xstride = xq_stride(n);
    /* (vector, plane) j of B column g and of C columns 2t, 2t + 1: j = column
     * with 8 an n-tile, j = 4nt + column / 2 with 4 (XL_HALVES: g's parity
     * is its group half) */
    constexpr bool HV = Q::XL == XL_HALVES;
    xsrc<NTL, XP> S;
#pragma unroll
    for (int nt = 0; nt < NTL; nt++) {
        const uint32_t cb = HV ? 4 * nt + g / 2 : 8 * nt + g; /* B column of this thread */
        S.col[nt] = xq + (cb / XP < nb ? (cb / XP) * xstride : 0) + plane_of<XP>(cb) * (uint64_t)n;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const uint32_t cc = HV ? 4 * nt + t : 8 * nt + 2 * t + j; /* C column */
            S.sc[nt][j] = reinterpret_cast<const float *>(xq + (cc / XP < nb ? (cc / XP) * xstride : 0) + 3 * (uint64_t)n);
        }
    }
#pragma unroll
    for (int b = 0; b < NB; b++)
        S.sum[b] = reinterpret_cast<const float *>(xq + (uint64_t)min((uint32_t)b, nb - 1) * xstride + xq_sum_off(n));

    constexpr bool ODD = Q::BS % 4 != 0; /* a pair's second superblock is 2 mod 4 (Q6_K) */
    /* warp k's sums of a tile: F at [row][column], then M at [row][vector] */
    auto sums = [&](uint32_t k) { return sums_mem + k * (16 * (NC + NB)); };
    uint32_t j = 0; /* items consumed: the stage of the next is j % NS */
    for (uint32_t gi = 0; gi < mygroups; gi++) {
        const uint32_t row0 = row0_of(gi);
        const bool live = row0 < rows; /* a group's last tiles may lie past the end: they only join the barriers */
        float F[NTL][4], M[2][NB];
#pragma unroll
        for (int nt = 0; nt < NTL; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                F[nt][i] = 0.0f;
#pragma unroll
        for (int r = 0; r < 2; r++)
#pragma unroll
            for (int b = 0; b < NB; b++)
                M[r][b] = 0.0f;
        for (uint32_t i = 0; i < npw; i++, j++) {
            const uint32_t p = kp + i * KS; /* the pair in stage j % NS */
            cp_async_wait<NS - 1>();        /* stage j % NS has landed (this lane's copies) */
            __syncwarp();                   /* ... and every lane's */
            if (live) {
#pragma unroll
                for (uint32_t h = 0; h < 2; h++) {
                    const uint32_t sb = 2 * p + h;
                    if (sb >= nsb)
                        break;
                    xsb<NTL, XP> xa;
                    load_x<NTL, Q::XL, XP>(S, sb, t, nb, xa, g & 1);
                    /* the superblock in the stage: the pair's offset in its aligned range, then h superblocks */
                    const uint8_t *p0 = &ring[wi][j % NS][0] + g * RS + ((2 * Q::BS * p) & 15) + h * Q::BS;
                    if (h == 1)
                        Q::template compute<ODD, NTL, XP>(p0, p0 + 8 * RS, xa, t, nb, F, M);
                    else
                        Q::template compute<false, NTL, XP>(p0, p0 + 8 * RS, xa, t, nb, F, M);
                }
            }
            __syncwarp(); /* every lane is done with stage j % NS: refill it */
            issue_next(j % NS);
        }
        if (gi + 1 == mygroups)
            pdl_trigger();

        /* the group's 4 threads' mins, then everything into shared memory */
#pragma unroll
        for (int r = 0; r < 2; r++)
#pragma unroll
            for (int b = 0; b < NB; b++) {
                M[r][b] += __shfl_xor_sync(0xffffffffu, M[r][b], 1);
                M[r][b] += __shfl_xor_sync(0xffffffffu, M[r][b], 2);
            }
        float *mine = sums(wi);
#pragma unroll
        for (int nt = 0; nt < NTL; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                if (!HV || (i & 1) == 0)
                    mine[(g + 8 * (i >> 1)) * NC + (HV ? 4 * nt + t : 8 * nt + 2 * t + (i & 1))] = F[nt][i];
        if (t == 0)
#pragma unroll
            for (int b = 0; b < NB; b++) {
                mine[16 * NC + g * NB + b] = M[0][b];
                mine[16 * NC + (g + 8) * NB + b] = M[1][b];
            }
        __syncthreads();
        /* one output (tile, row, vector) a thread: the KS warps in order */
        const uint32_t grp = blockIdx.x + gi * gridDim.x;
        for (uint32_t o = threadIdx.x; o < (uint32_t)TPB * 16 * nb; o += NW * 32) {
            const uint32_t ot = o / (16 * nb), rr = o % (16 * nb) / nb, b = o % nb;
            const uint32_t row = (grp * TPB + ot) * 16 + rr;
            if (row >= rows)
                continue;
            float v = 0.0f;
#pragma unroll
            for (int k = 0; k < KS; k++) {
                const float *f = sums(ot * KS + k) + rr * NC, *m = sums(ot * KS + k) + 16 * NC + rr * NB;
                /* (XP 2: plane 0 is zero — fmaf(256, f1, 0) is 256·f1 exactly, so the 3-plane formula's value) */
                const float part =
                    XP == 3 ? fmaf(-Q::MFAC, m[b], fmaf(65536.0f, f[3 * b + 2], fmaf(256.0f, f[3 * b + 1], f[3 * b])))
                            : fmaf(-Q::MFAC, m[b], fmaf(65536.0f, f[2 * b + 1], 256.0f * f[2 * b]));
                v = k == 0 ? part : v + part;
            }
            if (rp.q) { /* one vector, rows % 16 == 0: rows 2i, 2i + 1 are lanes 2i, 2i + 1 of a half warp that
                         * comes here whole (a 16-row tile's outputs) */
                const float val = scale * v, other = __shfl_xor_sync(0xFFFFu << (lane & 16), val, 1);
                const bool odd = row & 1;
                rope_epi_store(rp, at, row & ~1u, odd ? other : val, odd ? val : other, !odd, odd);
            } else {
                y[(uint64_t)b * rows + row] = scale * v;
            }
        }
        __syncthreads(); /* the sums are read before the next tile's overwrite them */
    }
    cp_async_wait<0>(); /* (only empty groups are left: past the last item) */
}

template <class Q, int NTL, int KS, int NS, int XP>
void launch_ns(const cuda_ctx *ctx, uint32_t groups, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq,
               uint32_t nb, float *y, float scale, const cuda_rope_epi &rp)
{
    constexpr int NW = mma_block<KS>::NW;
    constexpr uint32_t smem =
        NW * NS * 16 * Q::RS + NW * 16 * (Q::CPT * NTL + mma_cols<NTL, XP>::NB) * sizeof(float);
    static uint32_t opted;                  /* devices this instantiation may use > 48 KB of shared memory on */
    static int resident[CUDA_MAX_DEVICES]; /* its blocks an SM there (0: not asked yet) */
    if (cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute(kernel_gemv_mma<Q, NTL, KS, NS, XP>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    uint32_t grid = groups;
    if (ctx->gemv_mma_grid != CUDA_GEMV_MMA_GRID_TILES) {
        int &per_sm = resident[ctx->device];
        if (per_sm == 0)
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_gemv_mma<Q, NTL, KS, NS, XP>,
                                                                     NW * 32, smem));
        const uint64_t most = (uint64_t)(per_sm > 0 ? per_sm : 1) * (uint64_t)ctx->prop.multiProcessorCount;
        if (groups > most && (ctx->gemv_mma_grid == CUDA_GEMV_MMA_GRID_RESIDENT ||
                              groups <= CUDA_GEMV_MMA_RESIDENT_WAVES * most))
            grid = (uint32_t)most;
    }
    cuda_launch(ctx, kernel_gemv_mma<Q, NTL, KS, NS, XP>, dim3(grid), dim3(NW * 32), smem, (const uint8_t *)w,
                n / QK * Q::BS, (uint32_t)rows, (uint32_t)n, xq, nb, y, scale, rp);
}

template <class Q, int NTL, int KS, int XP>
void launch(const cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb, float *y,
            float scale, const cuda_rope_epi &rp)
{
    constexpr int NW = mma_block<KS>::NW, TPB = NW / KS;
    const uint64_t tiles = (rows + 15) / 16, groups = (tiles + TPB - 1) / TPB;
    if (ns_max<NTL>() > 2 && groups <= 2 * (uint64_t)ctx->prop.multiProcessorCount)
        launch_ns<Q, NTL, KS, ns_max<NTL>(), XP>(ctx, (uint32_t)groups, w, rows, n, xq, nb, y, scale, rp);
    else
        launch_ns<Q, NTL, KS, 2, XP>(ctx, (uint32_t)groups, w, rows, n, xq, nb, y, scale, rp);
}

template <class Q, int NTL, int XP>
void launch_ks(const cuda_ctx *ctx, int ks, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb,
               float *y, float scale, const cuda_rope_epi &rp = {})
{
    switch (ks) {
    case 1: launch<Q, NTL, 1, XP>(ctx, w, rows, n, xq, nb, y, scale, rp); break;
    case 2: launch<Q, NTL, 2, XP>(ctx, w, rows, n, xq, nb, y, scale, rp); break;
    case 4: launch<Q, NTL, 4, XP>(ctx, w, rows, n, xq, nb, y, scale, rp); break;
    case 8: launch<Q, NTL, 8, XP>(ctx, w, rows, n, xq, nb, y, scale, rp); break;
    default: CUDA_FAIL("gemv mma: ksplit %d not in {1,2,4,8}", ks);
    }
}

template <class Q, int XP>
void launch_q(const cuda_ctx *ctx, int ks, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb,
              float *y, float scale, const cuda_rope_epi &rp)
{
    static_assert(mma_cols<2, 2>::NB >= 8, "two n-tiles hold a batch of 16-bit vectors");
    if (nb <= mma_cols<1, XP>::NB) /* (the epilogue's one vector) */
        launch_ks<Q, 1, XP>(ctx, ks, w, rows, n, xq, nb, y, scale, rp);
    else if (XP == 2 || nb <= mma_cols<2, XP>::NB)
        launch_ks<Q, 2, XP>(ctx, ks, w, rows, n, xq, nb, y, scale);
    else if constexpr (XP == 3)
        launch_ks<Q, 3, XP>(ctx, ks, w, rows, n, xq, nb, y, scale);
}

/* Q4_K, or Q6_K on k32 tiles alone (half the mma of k16 at one vector; the same bits) and k16 in a batch, on a
 * prepared x of XP planes. */
template <int XP>
void launch_type(const cuda_ctx *ctx, enum dtype t, int ks, const void *w, uint64_t rows, uint64_t n,
                 const uint8_t *xq, uint32_t nb, float *y, float scale, const cuda_rope_epi &rp)
{
    if (t == DTYPE_Q4_K)
        launch_q<mk_q4k, XP>(ctx, ks, w, rows, n, xq, nb, y, scale, rp);
    else if (nb == 1)
        launch_ks<mk_q6k<true>, 1, XP>(ctx, ks, w, rows, n, xq, nb, y, scale, rp);
    else
        launch_q<mk_q6k<false>, XP>(ctx, ks, w, rows, n, xq, nb, y, scale, rp);
}

} // namespace

/* The K split, from the row length only: it must not depend on the number of
 * rows, since a fused matrix (q|k|v, gate|up, which a lone token runs) and its
 * members (which batches run) must give a row the same bits. 4 warps a tile.
 * Alone, 8 was faster on the short and the long shapes (q/o 5.5 vs 6.2 µs,
 * k/v 3.0 vs 3.8, down 13.0 vs 16.0) and slower on the wide ones (gate+up 28.6
 * vs 23.1, lm_head 120 vs 88); 8 for rows of n ≥ 8192 only (down) moved Q4_K_M
 * tg128 by < 1 % (386.6 vs 384-387) and 8 streams by −1 % (kernel_gemv --mma,
 * memra-bench; H200, bench/RESULTS.md 2026-12-01 eleventh run). */
static int pick_ks(uint64_t n) { return n >= 4 * QK ? 4 : 1; }

/* Q6_K needs rows of a multiple of 16 bytes (n % 2048 == 0: 4096, 14336),
 * which puts every superblock pair's start at 0, 4, 8 or 12 mod 16 and its
 * second superblock at 2 mod 4 (mk_q6k's reads rely on it). */
bool gemv_mma_has(int mode, enum dtype t, uint64_t n)
{
    return (mode >= CUDA_GEMV_MMA_Q4K && t == DTYPE_Q4_K && n % QK == 0) ||
           (mode >= CUDA_GEMV_MMA_ALL && t == DTYPE_Q6_K && n % 2048 == 0);
}

void gemv_mma_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                     const uint8_t *xq, uint32_t nb, float *y, float scale, int ks, const cuda_rope_epi &rp)
{
    if (!gemv_mma_has(CUDA_GEMV_MMA_ALL, t, n) || nb < 1 || nb > 8)
        CUDA_FAIL("gemv mma: %s, n = %llu, batch %u not supported", dtype_name(t), (unsigned long long)n, nb);
    if (rp.q && (nb != 1 || rows % 16 || rp.head_dim % 2))
        CUDA_FAIL("gemv mma: the RoPE epilogue takes one vector and rows %% 16 == 0 (rows %llu, batch %u)",
                  (unsigned long long)rows, nb);
    if (ks == 0)
        ks = pick_ks(n);
    /* the prepared x's planes: 2 with bf16 activations (16-bit, gemv_internal.cuh), else 3 */
    if (ctx->act_bf16)
        launch_type<2>(ctx, t, ks, w, rows, n, xq, nb, y, scale, rp);
    else
        launch_type<3>(ctx, t, ks, w, rows, n, xq, nb, y, scale, rp);
}
