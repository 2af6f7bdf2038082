/* backend/cuda/gemv_mma.cu — the Q4_K decode GEMV on the int8 tensor cores:
 * mma.sync m16n8k32, the weights' 4-bit values (u8) times the prepared
 * activations' byte digits (s8), exact 32-bit sums.
 *
 *   y[b][r] = Σ_i dequant(W)[r, i] · x[b][i],   W in Q4_K, batch b ≤ 8
 *
 * Why: the dp4a kernels (gemv_quant.cu) decode a block for each vector's
 * three byte planes with three dp4a a 4 elements; the mma multiplies 16 rows
 * × 32 elements by the three planes of up to 2 vectors (8 with 3 n-tiles) in
 * one instruction, and the 6-bit sub-block scales go onto the exact integer
 * sums (one IMAD a sum). Measured (H200, bench/RESULTS.md 2026-12-01 eleventh
 * run): alone about as fast as the staged dp4a kernel at batch 1 (lm_head
 * 128256×4096 79.6 µs = 86 % of 4.3 TB/s vs 82.0; gate+up 23.1 vs 24.0), and
 * 1.3-2× faster at batches 2-8 (gate/up batch 8: 34.9 vs 70.1 µs); Q4_K_M
 * tg128 387 vs 390 tok/s, tg64x8 1175 vs 776. Floor: 144 B / 256 elements →
 * 14336×4096 = 33.0 MB → 7.7 µs at 4.3 TB/s.
 *
 * Loads. A warp streams its 16 rows' superblock pairs (288 bytes a row) through
 * a ring of NS stages in shared memory with cp.async (16 bytes a lane, 9 a
 * lane a stage); the whole ring is asked for before the PDL wait (the weights
 * are constant), which is what made it as fast as the staged kernel in the
 * model: with one stage less in flight there, tg128 was 3 % lower although
 * the kernel alone was faster. Activations are read from L1/L2 (__ldg).
 *
 * Layout. A warp owns a tile of 16 rows and walks its superblocks (256
 * elements, 144 bytes) kp, kp + KS, ... (KS warps of the block share the
 * tile: the K split); thread (g, t) = (lane / 4, lane % 4) reads rows g and
 * g + 8. The mma's k order is free (an integer sum does not depend on it), so
 * thread t takes elements 8t .. 8t+7 of each 32-element sub-block for both A
 * (weights: qs bytes 32c + 8t .. of chunk c, low nibbles sub-block 2c, high
 * nibbles — used in place, 16·q — sub-block 2c + 1) and B (activations: the
 * same 8 bytes of one plane). B's 8 columns are (vector, plane) pairs: column
 * c of n-tile nt is vector (8nt + c) / 3, plane (8nt + c) % 3 — NTL n-tiles
 * cover 8·NTL/3 vectors. Prepared x (gemv_internal.cuh): X = 65536·X2 +
 * 256·X1 + X0, signed digits, one scale a 128 elements (n % 128 == 0), so a
 * superblock has two halves of one activation scale each.
 *
 * Per half and column the integer I = Σ_sub sc_j · S_j (S_j the mma's sum of
 * sub-block j; lower-nibble sums times 16 so both kinds add up; |I| < 2^28)
 * is converted once: F += (d/16 · s_x) · I, per plane. The mins: thread t
 * adds dmin · (m_2t·Σx_2t + m_2t+1·Σx_2t+1) (the prep's Σx per 16), the
 * group's 4 threads summed at the end. A row's value is then
 * Σ_warps (65536·F2 + 256·F1 + F0 − M) in the warps' order: every vector's
 * operations are the same whatever the batch, so a row alone and in a batch
 * have the same bits (kernel_gemv checks). Relative to the dp4a kernels the
 * sums are grouped differently: not the same bits as they (the engine uses
 * one or the other for a matrix, never both).
 */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int QK = 256, BS = 144, NW = 4; /* Q4_K superblock; warps a block */
/* A warp's ring: NS stages of a pair of superblocks (288 bytes a row: rows
 * of a 4096 or 14336 multiple are 32-byte aligned, so a pair is whole L2
 * sectors) of its 16 rows, a row every RS bytes (288 + 64: the 8-byte qs reads
 * of rows g = 0..3 fall in distinct banks). */
constexpr uint32_t PAIR = 2 * BS, RS = PAIR + 64, STG = 16 * RS;
/* 2 stages: 45 KB a block, 5 blocks an SM (3 stages, 3 blocks: tg128 374 vs
 * 387 on Q4_K_M, bench/RESULTS.md 2026-12-01 eleventh run) */
constexpr int NS = 2;
constexpr uint32_t SMEM = NW * NS * STG;

/* NTL n-tiles of 8 columns serve this many vectors (3 planes each). */
template <int NTL> struct mma_cols {
    static constexpr int NB = 8 * NTL / 3;
};

static __device__ __forceinline__ void mma_u8s8(const uint32_t (&a)[4], uint2 b, int (&c)[4])
{
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
        : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "r"(0));
}

/* A thread's part of one superblock of its two rows: header (d | dmin,
 * scales[12]) and 8 qs bytes of each of the 4 chunks. */
struct wsb {
    uint4 h[2];
    uint2 q[2][4];
};

/* ... read from the warp's ring stage st (rows g and g + 8). */
static __device__ __forceinline__ void read_w(const uint8_t *st, uint32_t g, uint32_t t, wsb &W)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const uint8_t *p = st + (g + 8 * r) * RS;
        W.h[r] = *reinterpret_cast<const uint4 *>(p);
#pragma unroll
        for (int c = 0; c < 4; c++)
            W.q[r][c] = *reinterpret_cast<const uint2 *>(p + 16 + 32 * c + 8 * t);
    }
}

/* Superblock pair p of the tile's 16 rows into a ring stage: 288 pieces of
 * 16 bytes, 9 a lane, consecutive lanes on consecutive pieces of a row (a
 * warp's copy instruction reads whole sectors of 2-3 rows; one lane a row,
 * 9 pieces each, measured 5-15 % slower); a second superblock past the row's
 * end is not read. Then one commit (also when there is nothing to copy: every
 * lane's group count stays the loop's). Rows past the end re-read the last. */
static __device__ __forceinline__ void issue_w(uint32_t st_s, const uint8_t *w, uint64_t row_bytes, uint32_t row0,
                                               uint32_t rows, uint32_t p, uint32_t nsb, bool any, uint32_t lane)
{
    if (any) {
        const bool both = 2 * p + 1 < nsb;
#pragma unroll
        for (int i = 0; i < 9; i++) {
            const uint32_t c = lane + 32 * i, r = c / 18, part = c % 18;
            if (part < 9 || both)
                cp_async16(st_s + r * RS + 16 * part,
                           w + (uint64_t)min(row0 + r, rows - 1) * row_bytes + (uint64_t)p * PAIR + 16 * part);
        }
    }
    cp_async_commit();
}

/* A thread's activations of one superblock: B fragments (sub-block s,
 * n-tile), the activation scale of each half for its two C columns, and Σx
 * of its two sub-blocks (as 4 sums of 16) for every vector. */
template <int NTL> struct xsb {
    uint2 b[8][NTL];
    float sx[2][NTL][2];
    float4 xs[mma_cols<NTL>::NB];
};

/* Where a thread's activations are: B column g of each n-tile, its C
 * columns' scales, every vector's Σx. Columns past the batch read vector 0
 * (no branch a load): their sums are computed and never stored. */
template <int NTL> struct xsrc {
    const uint8_t *col[NTL];
    const float *sc[NTL][2];
    const float *sum[mma_cols<NTL>::NB];
};

template <int NTL>
static __device__ __forceinline__ void load_x(const xsrc<NTL> &S, uint32_t sb, uint32_t t, uint32_t nb, xsb<NTL> &X)
{
#pragma unroll
    for (int nt = 0; nt < NTL; nt++) {
        const uint2 *c = reinterpret_cast<const uint2 *>(S.col[nt] + sb * QK + 8 * t);
#pragma unroll
        for (int s = 0; s < 8; s++)
            X.b[s][nt] = __ldg(c + 4 * s);
    }
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
        for (int nt = 0; nt < NTL; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                X.sx[h][nt][j] = __ldg(S.sc[nt][j] + sb * 8 + 4 * h);
#pragma unroll
    for (int b = 0; b < mma_cols<NTL>::NB; b++)
        if (b < (int)nb)
            X.xs[b] = __ldg(reinterpret_cast<const float4 *>(S.sum[b] + sb * 16 + 4 * t));
}

static __device__ __forceinline__ uint32_t byte_of(uint32_t w, int k) { return __byte_perm(w, 0u, 0x4440 + k); }

/* One superblock: F[nt][i] (C element i of n-tile nt: row g for i < 2, g + 8
 * else; column 2t + i % 2) and M[r][b] (the mins, rows g / g + 8). */
template <int NTL>
static __device__ __forceinline__ void compute_sb(const wsb &W, const xsb<NTL> &X, uint32_t t, uint32_t nb,
                                                  float (&F)[NTL][4], float (&M)[2][mma_cols<NTL>::NB])
{
    float d[2], dmin[2];
    uint32_t scw[2][2], mw[2]; /* packed 6-bit scales of sub-blocks 0-3 / 4-7; the thread's two mins */
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const uint4 h = W.h[r];
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
                const uint32_t a[4] = {W.q[0][c].x & mask, W.q[1][c].x & mask, W.q[0][c].y & mask,
                                       W.q[1][c].y & mask};
                const int sc0 = (int)byte_of(scw[0][hf], s & 3), sc1 = (int)byte_of(scw[1][hf], s & 3);
#pragma unroll
                for (int nt = 0; nt < NTL; nt++) {
                    int cr[4];
                    mma_u8s8(a, X.b[s][nt], cr);
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
                F[nt][i] = fmaf(d[i >> 1] * X.sx[hf][nt][i & 1], (float)(ilo[nt][i] * 16 + ihi[nt][i]), F[nt][i]);
    }
    const int msh = 16 * (int)(t & 1);
#pragma unroll
    for (int b = 0; b < mma_cols<NTL>::NB; b++) {
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

/* KS warps share a 16-row tile (K split), NW / KS tiles a block. */
template <int NTL, int KS>
__global__ void __launch_bounds__(NW * 32, NTL > 1 ? 1 : 4) kernel_gemv_q4k_mma(const uint8_t *__restrict__ w, uint64_t row_bytes,
                                                                uint32_t rows, uint32_t n,
                                                                const uint8_t *__restrict__ xq, uint32_t nb,
                                                                float *__restrict__ y, float scale)
{
    constexpr int TPB = NW / KS, NB = mma_cols<NTL>::NB, NC = 8 * NTL;
    static_assert(NW % KS == 0, "KS divides the block's warps");
    /* the warps' rings; after the loop a warp's own ring holds its sums (fs, ms) */
    extern __shared__ __align__(16) uint8_t ring_mem[];
    uint8_t(*ring)[NS][STG] = reinterpret_cast<uint8_t(*)[NS][STG]>(ring_mem);
    static_assert(sizeof(float) * 16 * (NC + NB) <= NS * STG, "sums fit a warp's ring");
    const uint32_t lane = threadIdx.x & 31, wi = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const uint32_t row0 = (blockIdx.x * TPB + wi / KS) * 16, kp = wi % KS;
    const uint32_t nsb = n / QK;
    const bool live = row0 < rows; /* a block's last tiles may lie past the end: they only join the barrier */
    const uint32_t npair = (nsb + 1) / 2;
    const uint32_t nloc = live && kp < npair ? (npair - kp + KS - 1) / KS : 0; /* this warp's pairs */
    const uint32_t ring_s = smem_u32(&ring[wi][0][0]);
    /* weights are constant: the ring's NS stages asked for before the wait
     * (PDL: while the kernel before still runs; with NS − 1 ahead, as a
     * ring usually starts, tg128 on Q4_K_M was 3 % below the staged dp4a
     * kernel's although the kernel alone was faster) */
#pragma unroll
    for (int j = 0; j < NS; j++)
        issue_w(ring_s + j * STG, w, row_bytes, row0, rows, kp + j * KS, nsb, (uint32_t)j < nloc, lane);
    pdl_wait();

    const uint64_t xstride = xq_stride(n);
    xsrc<NTL> S;
#pragma unroll
    for (int nt = 0; nt < NTL; nt++) {
        const uint32_t cb = 8 * nt + g; /* B column of this thread */
        S.col[nt] = xq + (cb / 3 < nb ? (cb / 3) * xstride : 0) + (cb % 3) * (uint64_t)n;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const uint32_t cc = 8 * nt + 2 * t + j; /* C column */
            S.sc[nt][j] = reinterpret_cast<const float *>(xq + (cc / 3 < nb ? (cc / 3) * xstride : 0) + 3 * (uint64_t)n);
        }
    }
#pragma unroll
    for (int b = 0; b < NB; b++)
        S.sum[b] = reinterpret_cast<const float *>(xq + (uint64_t)min((uint32_t)b, nb - 1) * xstride + xq_sum_off(n));

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

    /* superblock k of this warp: pair kp + (k / 2)·KS, half k % 2 */
    auto sb_of = [&](uint32_t k) { return 2 * (kp + (k / 2) * KS) + (k & 1); };
    for (uint32_t j = 0; j < nloc; j++) {
        cp_async_wait<NS - 1>(); /* stage j % NS has landed (this lane's copies) */
        __syncwarp();            /* ... and every lane's */
#pragma unroll
        for (uint32_t h = 0; h < 2; h++) {
            const uint32_t sb = 2 * (kp + j * KS) + h;
            if (sb >= nsb)
                break;
            xsb<NTL> xa;
            load_x<NTL>(S, sb, t, nb, xa);
            wsb W;
            read_w(&ring[wi][j % NS][h * BS], g, t, W);
            compute_sb<NTL>(W, xa, t, nb, F, M);
        }
        __syncwarp(); /* every lane is done with stage j % NS: refill it */
        issue_w(ring_s + j % NS * STG, w, row_bytes, row0, rows, kp + (j + NS) * KS, nsb, j + NS < nloc, lane);
    }
    cp_async_wait<0>();
    __syncwarp();
    pdl_trigger();

    /* the group's 4 threads' mins, then everything into shared memory */
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int b = 0; b < NB; b++) {
            M[r][b] += __shfl_xor_sync(0xffffffffu, M[r][b], 1);
            M[r][b] += __shfl_xor_sync(0xffffffffu, M[r][b], 2);
        }
    /* warp k's sums in its own ring: F at [row][column], then M at [row][vector] */
    auto sums = [&](uint32_t k) { return reinterpret_cast<float *>(&ring[k][0][0]); };
    float *mine = sums(wi);
#pragma unroll
    for (int nt = 0; nt < NTL; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            mine[(g + 8 * (i >> 1)) * NC + 8 * nt + 2 * t + (i & 1)] = F[nt][i];
    if (t == 0)
#pragma unroll
        for (int b = 0; b < NB; b++) {
            mine[16 * NC + g * NB + b] = M[0][b];
            mine[16 * NC + (g + 8) * NB + b] = M[1][b];
        }
    __syncthreads();
    /* one output (tile, row, vector) a thread: the KS warps in order */
    for (uint32_t o = threadIdx.x; o < (uint32_t)TPB * 16 * nb; o += NW * 32) {
        const uint32_t tl = o / (16 * nb), rr = o % (16 * nb) / nb, b = o % nb;
        const uint32_t row = (blockIdx.x * TPB + tl) * 16 + rr;
        if (row >= rows)
            continue;
        float v = 0.0f;
#pragma unroll
        for (int k = 0; k < KS; k++) {
            const float *f = sums(tl * KS + k) + rr * NC, *m = sums(tl * KS + k) + 16 * NC + rr * NB;
            const float part = fmaf(65536.0f, f[3 * b + 2], fmaf(256.0f, f[3 * b + 1], f[3 * b])) - m[b];
            v = k == 0 ? part : v + part;
        }
        y[(uint64_t)b * rows + row] = scale * v;
    }
}

template <int NTL, int KS>
void launch(const cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb, float *y,
            float scale)
{
    static uint32_t opted; /* devices this instantiation may use > 48 KB of shared memory on */
    if (!(opted & (1u << ctx->device))) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel_gemv_q4k_mma<NTL, KS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)SMEM));
        opted |= 1u << ctx->device;
    }
    const uint64_t tiles = (rows + 15) / 16;
    constexpr int TPB = NW / KS;
    cuda_launch(ctx, kernel_gemv_q4k_mma<NTL, KS>, dim3((uint32_t)((tiles + TPB - 1) / TPB)), dim3(NW * 32), SMEM,
                (const uint8_t *)w, n / QK * BS, (uint32_t)rows, (uint32_t)n, xq, nb, y, scale);
}

template <int NTL>
void launch_ks(const cuda_ctx *ctx, int ks, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb,
               float *y, float scale)
{
    switch (ks) {
    case 1: launch<NTL, 1>(ctx, w, rows, n, xq, nb, y, scale); break;
    case 2: launch<NTL, 2>(ctx, w, rows, n, xq, nb, y, scale); break;
    case 4: launch<NTL, 4>(ctx, w, rows, n, xq, nb, y, scale); break;
    default: CUDA_FAIL("gemv q4_k mma: ksplit %d not in {1,2,4}", ks);
    }
}

} // namespace

/* The K split: 4 warps a row tile for every shape. It must not depend on the
 * number of rows: a fused matrix (q|k|v, gate|up, which a lone token runs)
 * and its members (which batches run) must give a row the same bits. Per
 * shape (kernel_gemv --mma, H200) 4 is the best or within the run's noise
 * everywhere but lm_head-sized matrices (128256 rows: 2 was ~5 % faster),
 * which Q4_K_M files keep in Q6_K. */
static int pick_ks(uint64_t n) { return n >= 4 * QK ? 4 : 1; }

bool gemv_mma_has(enum dtype t, uint64_t n) { return t == DTYPE_Q4_K && n % QK == 0; }

void gemv_mma_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                     const uint8_t *xq, uint32_t nb, float *y, float scale, int ks)
{
    if (!gemv_mma_has(t, n) || nb < 1 || nb > 8)
        CUDA_FAIL("gemv mma: %s, n = %llu, batch %u not supported", dtype_name(t), (unsigned long long)n, nb);
    if (ks == 0)
        ks = pick_ks(n);
    if (nb <= mma_cols<1>::NB)
        launch_ks<1>(ctx, ks, w, rows, n, xq, nb, y, scale);
    else if (nb <= mma_cols<2>::NB)
        launch_ks<2>(ctx, ks, w, rows, n, xq, nb, y, scale);
    else
        launch_ks<3>(ctx, ks, w, rows, n, xq, nb, y, scale);
}
