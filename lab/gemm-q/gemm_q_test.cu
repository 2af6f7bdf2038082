/* lab/gemm-q/gemm_q_test.cu — a standalone prototype of the GGUF prefill GEMM on the block-quantized values: one
 * bf16 wgmma product a pair with the blocks' scales applied per 32 K ("promotion"), against cuBLAS's one-product
 * (the BF16 ceiling) and two-product (today's GGUF path under bf16 activations) GEMMs of the same shape. Not part
 * of the build; written in the thirty-fourth session without a GPU (lab/README.md), not yet run.
 *
 *   y (T, rows) f32 = Σ_kb s[r][kb] · Σ_{k in kb} q[r][k] · x[t][k]      kb = 32 consecutive k
 *
 * Why: a GGUF weight's value s·q (Q8_0: s = d, f16, q int8; Q4_K: s = d·sc, q 0..15) needs up to 18 significant
 * bits, so gemm.cu multiplies its bf16 high and low parts (two GEMMs under bf16 activations, three with f32): the
 * 8B model's pp4096 stops at 17.1 k tok/s (19.2 k at ubatch 4096) against BF16's 32.5 k (36.4 k), the issue's goal
 * 30 k. The integer q is exact in bf16, so one product of q by x (bf16 activations) gives each 32-element block's
 * exact-to-f32 partial sum; the scale goes on when the block is done. That is DeepGEMM's per-block promotion,
 * here every 2 wgmma k16 steps against its every 4 fp8 k32 steps — the same ratio of promotion work to tensor
 * work, which DeepGEMM runs at ~75 % of the fp8 peak. The floor: 2·rows·K·T FLOPs at ~790 TFLOP/s (the H200's
 * measured bf16 rate); the bar to beat is the two-product GEMM (~380 TFLOP/s of useful work); the goal needs ≥ 600.
 *
 * Operands (made by tile_a / tile_b below from row-major inputs; in the product the prefill GEMM's kept copy
 * — cuda_gemm_keep — and the x producers would write these layouts directly):
 *   A (weights): tiles of 128 rows × 64 k, 17408 bytes each, tile (rt, kt) at (rt·KT + kt)·17408: the q values as
 *     bf16 in the wgmma 128-byte swizzle (row r at r·128, its 16-byte piece c at (c ^ r % 8)·16: wgmma.cuh's swz),
 *     then 1 KB of f32 scales s[r][2] (the tile's two 32-blocks). One bulk copy a stage.
 *   B (activations, bf16): tiles of BN (128 or 192) tokens × 64 k, BN·128 bytes, tile (tt, kt) at (tt·KT + kt)·BN·128,
 *     the same swizzle; tokens past T zero.
 * Kernel: a CTA = 128 weight rows × BN tokens, 384 threads: warpgroups 0 and 1 compute (warpgroup w: rows
 * 64w .. 64w + 63, warp i of it rows 16i .. 16i + 15; setmaxnreg 232), warpgroup 2's first lane issues the bulk
 * copies into a ring of NS stages (full / empty mbarriers; setmaxnreg 40), never waiting on the products. A
 * warpgroup's 32-block: 2 wgmma m64nBNk16 into a partial accumulator p (the first with scale-d 0: p = A·B), wait,
 * then acc += s[row] · p (BN / 2 FFMA a thread, two scales: rows g and g + 8 of its warp); meanwhile the other
 * warpgroup's products keep the tensor cores busy (DeepGEMM's arrangement). A second partial accumulator, so that
 * a warpgroup's next block runs while it promotes, was tried here: an accumulator in flight across the loop's back
 * edge makes ptxas serialize every wgmma (C7514). The y stores go straight from the accumulators (a warp's store
 * covers four tokens' 8 consecutive rows: whole 32-byte sectors).
 *
 * The tile is bounded by registers (an accumulator and a partial a thread: 128 × 192 at most, against cuBLAS's
 * 256 × 128 with one), so each MAC needs ~1.35× cuBLAS's bytes from L2. --cluster 2: two CTAs of one row tile
 * and neighbouring token tiles form a cluster, and each CTA's producer multicasts half of the A tile into both
 * (each consumer warp releases a stage in both CTAs: an empty barrier counts the cluster's 16 warps), which brings
 * a MAC's L2 bytes to about cuBLAS's.
 *
 * --mins: Q4_K's (and Q5_K's, Q4_1's) form w = s·q − mn a 32-block (s = d·sc, mn = dmin·m, q 0..15): the A tile
 * carries a second KB (the mins) and the B tile each token's Σx of its two 32-blocks (made with the tile: in the
 * product by the x producers), and the promotion subtracts mn · Σx: 2 FFMA an accumulator instead of 1, plus a
 * float2 load a token pair — whether that still hides behind the other warpgroup's products is the question.
 * (Q6_K's scale a 16 would need a promotion every wgmma: it stays on the two-product path.)
 *
 * Check: sampled outputs against a double-precision sum of the same values, |Δ| ≤ 1e-5 · Σ|x·w| (f32 sums of
 * exact products); cuBLAS's two-product result is measured against the same reference (its error, for the note).
 * Timing: CUDA events around each launch after a warm-up, median of 20.
 *
 * Build (here): nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I src lab/gemm-q/gemm_q_test.cu \
 *                 -lcublas -o gpu/gemm_q_test
 * Run (the GPU): gemm_q_test [--t T] [--ns 4|5|6] [--bn 128|192] [--cluster 1|2] [--raster 0|1] [--mins]
 *                             [--check-only] [--diag worst|unit-scales|probe]
 *   --raster 0: consecutive CTAs walk the token tiles of one row tile; 1: the row tiles of one token tile.
 *   --diag: isolates a failed check (DIAG_WORST, DIAG_UNIT, DIAG_PROBE below).
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "backend/cuda/tile_copy.cuh"
#include "backend/cuda/wgmma.cuh"

namespace {

constexpr uint32_t BM = 128, BK = 64, QB = 32; /* rows and k a CTA tile (its tokens: BN); k a scale block */
constexpr uint32_t A_BYTES = BM * BK * 2, S_BYTES = BM * (BK / QB) * 4;
/* Bytes of a stage's parts. A: the q tile, its scales, with MINS its mins (each 1 KB: 1024-aligned in all); B: the
 * x tile, with MINS the 32-blocks' sums Σx [2][BN] after it (BG bytes copied, BR held: the next stage aligned). */
template <int BN, bool MINS> struct lay {
    static constexpr uint32_t AS = A_BYTES + S_BYTES * (MINS ? 2 : 1);
    static constexpr uint32_t B = BN * BK * 2, BG = B + (MINS ? 2 * BN * 4 : 0), BR = (BG + 1023) / 1024 * 1024;
    static constexpr uint32_t STAGE = AS + BR;
};
constexpr int NT = 384; /* warpgroups 0, 1 compute; warpgroup 2's first warp copies (setmaxnreg: 232 / 40) */

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        cudaError_t e_ = (call);                                                                               \
        if (e_ != cudaSuccess) {                                                                               \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                         \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)
#define CHECK_BLAS(call)                                                                                       \
    do {                                                                                                       \
        cublasStatus_t s_ = (call);                                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                     \
            fprintf(stderr, "%s:%d: cublas status %d\n", __FILE__, __LINE__, (int)s_);                          \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

template <int NS, int BN, bool MINS> constexpr uint32_t smem_bytes() { return NS * lay<BN, MINS>::STAGE + 1024 + 2 * NS * 8; }

/* d (64 × BN f32: BN / 2 a thread) = A · B (ACC 0) or += A · B (ACC 1), both K-major bf16 in shared memory. */
#define GQ_R96                                                                                                    \
    WG_R64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                  \
           "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
template <int ACC> __device__ __forceinline__ void wg_mn(float (&d)[64], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WG_R64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WG_D64
                 : "l"(da), "l"(db), "n"(ACC));
}
template <int ACC> __device__ __forceinline__ void wg_mn(float (&d)[96], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {" GQ_R96 "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
                 : WG_D64, WG_D8(64), WG_D8(72), WG_D8(80), WG_D8(88)
                 : "l"(da), "l"(db), "n"(ACC));
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

/* bytes global → shared on bar, no cache hint (A tiles serve every token tile, B tiles every row tile). */
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* The same bytes multicast to the shared memory (same offsets, same barrier) of the cluster's CTAs in mask. */
__device__ __forceinline__ void bulk_g2s_mc(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar, uint16_t mask)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, "
                 "[%3], %4;" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "h"(mask)
                 : "memory");
}

/* An arrival on the barrier at the same offset in the cluster's CTA of rank peer. */
__device__ __forceinline__ void mbar_arrive_peer(uint32_t bar, uint32_t peer)
{
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(peer));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

/* mbar_wait with cluster-scope acquire: the empty barriers of a cluster also take the peer's (release.cluster)
 * arrivals. */
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

__device__ __forceinline__ void cluster_sync_all()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* Issue one 32-block of this warpgroup: k16 steps at k 32h and 32h + 16 of the stage's tiles. */
template <int ACC0, int NA>
__device__ __forceinline__ void issue_block(float (&p)[NA], uint32_t a, uint32_t b, uint32_t h)
{
    wgmma_fence();
    wg_mn<ACC0>(p, smem_desc(a + h * 64), smem_desc(b + h * 64));
    wg_mn<1>(p, smem_desc(a + h * 64 + 32), smem_desc(b + h * 64 + 32));
    wgmma_commit();
}

/* acc += s · p (− m · Σx with MINS): accumulator 4j + e is row g (e < 2: s0, nm0 = −m) or g + 8 (s1, nm1), token
 * 8j + 2c + (e & 1), whose two Σx are sx[4j + c]. */
template <bool MINS, int NA>
__device__ __forceinline__ void promote(float (&acc)[NA], const float (&p)[NA], float s0, float s1, float nm0,
                                        float nm1, const float2 *sx, uint32_t c)
{
#pragma unroll
    for (int j = 0; j < NA / 4; j++) {
        float a0 = acc[4 * j + 0], a1 = acc[4 * j + 1], a2 = acc[4 * j + 2], a3 = acc[4 * j + 3];
        if constexpr (MINS) {
            const float2 v = sx[4 * j + c];
            a0 = fmaf(nm0, v.x, a0), a1 = fmaf(nm0, v.y, a1), a2 = fmaf(nm1, v.x, a2), a3 = fmaf(nm1, v.y, a3);
        }
        acc[4 * j + 0] = fmaf(s0, p[4 * j + 0], a0);
        acc[4 * j + 1] = fmaf(s0, p[4 * j + 1], a1);
        acc[4 * j + 2] = fmaf(s1, p[4 * j + 2], a2);
        acc[4 * j + 3] = fmaf(s1, p[4 * j + 3], a3);
    }
}

/* The computing warpgroups' part of kernel_gemm_q: the ring's stages into acc, then y. */
template <int NS, int BN, bool MINS, int CL>
__device__ __forceinline__ void consume(const uint8_t *sp, uint32_t base, uint32_t bars, float *__restrict__ y,
                                        uint32_t rows, uint32_t T, uint32_t KT, uint32_t rt, uint32_t tt,
                                        uint32_t crank)
{
    using L = lay<BN, MINS>;
    constexpr uint32_t STAGE = L::STAGE;
    constexpr int NA = BN / 2; /* accumulators a thread */
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const uint32_t wg = warp / 4, wi = warp % 4, g = lane / 4, c = lane % 4;
    const uint32_t r0 = wg * 64 + wi * 16 + g; /* this thread's rows in the tile: r0, r0 + 8 */
    float acc[NA], p[NA];
#pragma unroll
    for (int i = 0; i < NA; i++)
        acc[i] = 0.0f, p[i] = 0.0f;
    /* each stage: both 32-blocks, each 2 wgmma into p (the first with scale-d 0), then acc += s · p once they are
     * done; the other warpgroup's products keep the tensor cores busy meanwhile (an accumulator in flight across
     * the loop's back edge makes ptxas serialize every wgmma: C7514) */
    for (uint32_t kt = 0; kt < KT; kt++) {
        const uint32_t s = kt % NS;
        mbar_wait(bars + 8 * s, (kt / NS) & 1);
        const uint32_t a = base + s * STAGE + wg * (A_BYTES / 2), b = base + s * STAGE + L::AS;
        const float *sc = reinterpret_cast<const float *>(sp + s * STAGE + A_BYTES), *mn = sc + 2 * BM;
        const float2 *sx = reinterpret_cast<const float2 *>(sp + s * STAGE + L::AS + L::B);
#pragma unroll
        for (uint32_t h = 0; h < 2; h++) {
            issue_block<0>(p, a, b, h);
            const float s0 = sc[r0 * 2 + h], s1 = sc[(r0 + 8) * 2 + h];
            const float nm0 = MINS ? -mn[r0 * 2 + h] : 0.0f, nm1 = MINS ? -mn[(r0 + 8) * 2 + h] : 0.0f;
            wgmma_wait<0>();
            reg_fence(p);
            promote<MINS>(acc, p, s0, s1, nm0, nm1, sx + h * (BN / 2), c);
        }
        __syncwarp();
        if (lane == 0) {
            mbar_arrive(bars + 8 * (NS + s));
            for (uint32_t k = 1; k < CL; k++)
                mbar_arrive_peer(bars + 8 * (NS + s), (crank + k) % CL);
        }
    }

    /* acc[4j + e]: row r0 (e < 2) or r0 + 8, token 8j + 2c + (e & 1) */
    const uint64_t row = (uint64_t)rt * BM + r0;
#pragma unroll
    for (int j = 0; j < NA / 4; j++) {
        const uint32_t t = tt * BN + 8 * j + 2 * c;
        if (t < T) {
            y[(uint64_t)t * rows + row] = acc[4 * j + 0];
            y[(uint64_t)t * rows + row + 8] = acc[4 * j + 2];
        }
        if (t + 1 < T) {
            y[(uint64_t)(t + 1) * rows + row] = acc[4 * j + 1];
            y[(uint64_t)(t + 1) * rows + row + 8] = acc[4 * j + 3];
        }
    }
}

template <int NS, int BN, bool MINS, int CL>
__global__ void __launch_bounds__(NT, 1) kernel_gemm_q(const uint8_t *__restrict__ at, const uint8_t *__restrict__ bt,
                                                       float *__restrict__ y, uint32_t rows, uint32_t T, uint32_t KT,
                                                       uint32_t RT, uint32_t TT, int raster)
{
    using L = lay<BN, MINS>;
    constexpr uint32_t STAGE = L::STAGE;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_u32(smem_raw), base = (raw + 1023) & ~1023u;
    uint8_t *const sp = smem_raw + (base - raw); /* the same bytes, generic */
    const uint32_t bars = base + NS * STAGE;     /* full[NS], then empty[NS] */
    /* CL CTAs of consecutive blockIdx.x form a cluster: one row tile, CL consecutive token tiles (TT % CL == 0) */
    const uint32_t cid = blockIdx.x / CL, crank = blockIdx.x % CL, TTC = TT / CL;
    const uint32_t rt = raster == 0 ? cid / TTC : cid % RT, tt = (raster == 0 ? cid % TTC : cid / RT) * CL + crank;
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int i = 0; i < NS; i++) {
            mbar_init(bars + 8 * i, 1);
            mbar_init(bars + 8 * (NS + i), 8 * CL); /* lane 0 of each computing warp of the cluster */
        }
        mbar_init_fence();
    }
    if constexpr (CL > 1) {
        __syncwarp(); /* warp 0 converged again after thread 0's inits: the barrier is .aligned */
        cluster_sync_all(); /* every CTA's barriers exist before a multicast or a remote arrival reaches them */
    }
    else
        __syncthreads();

    if (warp >= 8) { /* the producer: one lane issues every stage's copies */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (warp == 8 && lane == 0) {
            const uint8_t *a = at + (uint64_t)rt * KT * L::AS, *b = bt + (uint64_t)tt * KT * L::BG;
            constexpr uint32_t AH = L::AS / CL; /* this CTA's share of the A tile, multicast to the cluster */
            for (uint32_t kt = 0; kt < KT; kt++) {
                const uint32_t s = kt % NS;
                if (kt >= NS) { /* stage s released by every CTA it is written into */
                    if constexpr (CL > 1)
                        mbar_wait_cluster(bars + 8 * (NS + s), ((kt / NS) - 1) & 1);
                    else
                        mbar_wait(bars + 8 * (NS + s), ((kt / NS) - 1) & 1);
                }
                mbar_expect(bars + 8 * s, L::AS + L::BG);
                if constexpr (CL == 1)
                    bulk_g2s(base + s * STAGE, a + (uint64_t)kt * L::AS, L::AS, bars + 8 * s);
                else
                    bulk_g2s_mc(base + s * STAGE + crank * AH, a + (uint64_t)kt * L::AS + crank * AH, AH, bars + 8 * s,
                                (uint16_t)((1u << CL) - 1));
                bulk_g2s(base + s * STAGE + L::AS, b + (uint64_t)kt * L::BG, L::BG, bars + 8 * s);
            }
        }
    } else {
        consume<NS, BN, MINS, CL>(sp, base, bars, y, rows, T, KT, rt, tt, crank);
    }
    if constexpr (CL > 1) {
        __syncwarp();
        cluster_sync_all(); /* no CTA leaves while a peer may still arrive on its barriers */
    }
}

/* q (rows, K) int8 row-major, s and with MINS mn (rows, K / 32) f32 → A tiles; one thread a 16-byte piece. */
template <bool MINS>
__global__ void tile_a(const int8_t *__restrict__ q, const float *__restrict__ s, const float *__restrict__ mn,
                       uint32_t rows, uint32_t K, uint8_t *__restrict__ at)
{
    constexpr uint32_t AS = lay<128, MINS>::AS;
    const uint32_t KT = K / BK;
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, pieces = (uint64_t)rows * (K / 8);
    if (i >= pieces)
        return;
    const uint32_t r = (uint32_t)(i / (K / 8)), k8 = (uint32_t)(i % (K / 8)), kt = k8 / 8, pc = k8 % 8;
    const uint32_t rt = r / BM, rr = r % BM;
    uint8_t *tile = at + ((uint64_t)rt * KT + kt) * AS;
    /* q as bf16 (exact: |q| ≤ 256), two a word, one 16-byte store. Not a memcpy of a __nv_bfloat16[8]: nvcc 13.0
     * made that 16 byte stores, each low byte through F2I.U8.F16 (the bf16's bits read as an f16 value, truncated
     * to an integer): 1 became 0x3f01 (0.504), −127 0xc200 (−32) — every check failed by ~5e-2 (H200). */
    const int8_t *qr = q + (uint64_t)r * K + k8 * 8;
    uint32_t w[4];
    for (int e = 0; e < 4; e++) {
        const __nv_bfloat162 h = __floats2bfloat162_rn((float)qr[2 * e], (float)qr[2 * e + 1]);
        w[e] = *reinterpret_cast<const uint32_t *>(&h);
    }
    *reinterpret_cast<uint4 *>(tile + swz(rr, pc)) = make_uint4(w[0], w[1], w[2], w[3]);
    if (pc < BK / QB) {
        const uint64_t kb = (uint64_t)r * (K / QB) + kt * 2 + pc;
        reinterpret_cast<float *>(tile + A_BYTES)[rr * 2 + pc] = s[kb];
        if (MINS)
            reinterpret_cast<float *>(tile + A_BYTES + S_BYTES)[rr * 2 + pc] = mn[kb];
    }
}

/* x (T, K) bf16 row-major → B tiles of BN tokens (those past T zero), with MINS each 32-block's Σx [2][BN] after
 * the tile (f32, in k order); one thread a 16-byte piece of the padded rows (the piece at 0 mod 32 sums its
 * block). */
template <int BN, bool MINS>
__global__ void tile_b(const __nv_bfloat16 *__restrict__ x, uint32_t T, uint32_t K, uint32_t TT,
                       uint8_t *__restrict__ bt)
{
    using L = lay<BN, MINS>;
    const uint32_t KT = K / BK;
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, pieces = (uint64_t)TT * BN * (K / 8);
    if (i >= pieces)
        return;
    const uint32_t t = (uint32_t)(i / (K / 8)), k8 = (uint32_t)(i % (K / 8)), kt = k8 / 8, pc = k8 % 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (t < T)
        v = *reinterpret_cast<const uint4 *>(x + (uint64_t)t * K + k8 * 8);
    uint8_t *tile = bt + ((uint64_t)(t / BN) * KT + kt) * L::BG;
    *reinterpret_cast<uint4 *>(tile + swz(t % BN, pc)) = v;
    if (MINS && pc % 4 == 0) {
        float sum = 0.0f;
        for (int e = 0; e < 32 && t < T; e++)
            sum += __bfloat162float(x[(uint64_t)t * K + k8 * 8 + e]);
        reinterpret_cast<float *>(tile + L::B)[(pc / 4) * BN + t % BN] = sum;
    }
}

/* The dequantized weight as cuBLAS's two-product path holds it: w = s·q (− mn), hi = rn(w), lo = rn(w − hi). */
__global__ void split_w(const int8_t *__restrict__ q, const float *__restrict__ s, const float *__restrict__ mn,
                        uint64_t n, uint32_t K, __nv_bfloat16 *__restrict__ hi, __nv_bfloat16 *__restrict__ lo)
{
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint64_t kb = i / K * (K / QB) + i % K / QB;
    float w = __fmul_rn(s[kb], (float)q[i]);
    if (mn)
        w = __fsub_rn(w, mn[kb]);
    hi[i] = __float2bfloat16(w);
    lo[i] = __float2bfloat16(w - __bfloat162float(hi[i]));
}

/* One warp a sampled output: the double sum of w·x and Σ|w·x|, w = s·q (− mn). */
__global__ void ref_dot(const int8_t *__restrict__ q, const float *__restrict__ s, const float *__restrict__ mn,
                        const __nv_bfloat16 *__restrict__ x, uint32_t K, const uint32_t *__restrict__ tr, uint32_t n,
                        double *__restrict__ out)
{
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (w >= n)
        return;
    const uint32_t t = tr[2 * w], r = tr[2 * w + 1];
    double sum = 0, abs_sum = 0;
    for (uint32_t k = lane; k < K; k += 32) {
        const uint64_t kb = (uint64_t)r * (K / QB) + k / QB;
        const double wv = (double)s[kb] * (double)q[(uint64_t)r * K + k] - (mn ? (double)mn[kb] : 0.0);
        const double v = wv * (double)__bfloat162float(x[(uint64_t)t * K + k]);
        sum += v, abs_sum += fabs(v);
    }
    for (int o = 16; o > 0; o >>= 1) {
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
        abs_sum += __shfl_xor_sync(0xffffffffu, abs_sum, o);
    }
    if (lane == 0)
        out[2 * w] = sum, out[2 * w + 1] = abs_sum;
}

/* The sampled outputs of both results, side by side. */
__global__ void gather(const float *__restrict__ y, const float *__restrict__ y2, uint32_t rows,
                       const uint32_t *__restrict__ tr, uint32_t n, float *__restrict__ out)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const uint64_t at = (uint64_t)tr[2 * i] * rows + tr[2 * i + 1];
        out[2 * i] = y[at], out[2 * i + 1] = y2[at];
    }
}

/* How many of y's n values are NaN (the poison left where nothing was written). */
__global__ void count_nan(const float *__restrict__ y, uint64_t n, unsigned long long *__restrict__ count)
{
    unsigned long long c = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        c += isnan(y[i]) ? 1 : 0;
    if (c)
        atomicAdd(count, c);
}

uint64_t g_rng = 0x9e3779b97f4a7c15ull;
uint32_t rnd()
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}
float rndf() { return (rnd() & 0xffffff) / 16777216.0f * 2.0f - 1.0f; } /* [-1, 1) */

/* --diag (isolating a failed check; each prints the 8 worst samples): DIAG_WORST the data as they are; DIAG_UNIT
 * every scale 1 and every min 0 (the products alone); DIAG_PROBE one 128 × 64 shape, q[r][k] = probe_q(r) at k =
 * probe_k(r) only, s = 1 (block 0) and 4096 (block 1), x[t][k] = (k + 1) / 64: y names the k, the scale and the q
 * value each row's product met, and the A tile's first rows are printed as stored. */
enum { DIAG_NONE, DIAG_WORST, DIAG_UNIT, DIAG_PROBE };
uint32_t probe_k(uint32_t r) { return (r * 37 + 11) % 64; }
int probe_q(uint32_t r) { return r < 64 ? 1 : (int)(2 * r) - 255; } /* rows 64 ..: −127, −125, .., −1 */

struct opts {
    uint32_t T = 4096;
    int ns = 5, bn = 128, raster = 0, cl = 1, diag = DIAG_NONE;
    bool check_only = false, mins = false;
};

using kern_t = void (*)(const uint8_t *, const uint8_t *, float *, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                        int);
/* the kernel of (ns, bn, mins, cl) and its shared memory: 4, 5 or 6 stages at 128 tokens a tile, 4 or 5 at 192;
 * clusters of 2 at 5 stages (and 4 at 192) */
template <int NS, int BN, int CL> kern_t pick_mins(bool mins, uint32_t *smem)
{
    *smem = mins ? smem_bytes<NS, BN, true>() : smem_bytes<NS, BN, false>();
    return mins ? kernel_gemm_q<NS, BN, true, CL> : kernel_gemm_q<NS, BN, false, CL>;
}
kern_t pick(int ns, int bn, bool mins, int cl, uint32_t *smem)
{
    if (cl == 2)
        return bn == 192 ? (ns == 4 ? pick_mins<4, 192, 2>(mins, smem) : pick_mins<5, 192, 2>(mins, smem))
                         : pick_mins<5, 128, 2>(mins, smem);
    if (bn == 192)
        return ns == 4 ? pick_mins<4, 192, 1>(mins, smem) : pick_mins<5, 192, 1>(mins, smem);
    return ns == 4 ? pick_mins<4, 128, 1>(mins, smem) : ns == 6 ? pick_mins<6, 128, 1>(mins, smem)
                                                             : pick_mins<5, 128, 1>(mins, smem);
}

float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* Times f (one launch or two GEMMs) with events around each of 20 runs after 3 warm-ups: the median in ms. */
template <class F> float time_ms(F f)
{
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        f();
    std::vector<float> ms;
    for (int i = 0; i < 20; i++) {
        CHECK(cudaEventRecord(e0));
        f();
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float m = 0;
        CHECK(cudaEventElapsedTime(&m, e0, e1));
        ms.push_back(m);
    }
    CHECK(cudaGetLastError());
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return median(ms);
}

struct result {
    float ms_q, ms_one, ms_two;
    bool ok;
};

result run_shape(cublasHandle_t h, const opts &o, uint32_t rows, uint32_t K)
{
    const uint32_t T = o.T, KT = K / BK, RT = rows / BM, BN = (uint32_t)o.bn, CL = (uint32_t)o.cl;
    const uint32_t TT = ((T + BN - 1) / BN + CL - 1) / CL * CL; /* token tiles, whole clusters (the last zero-padded) */
    const uint64_t nw = (uint64_t)rows * K, nx = (uint64_t)T * K, ny = (uint64_t)T * rows;
    std::vector<int8_t> hq(nw);
    std::vector<float> hs(nw / QB), hm(o.mins ? nw / QB : 0);
    std::vector<__nv_bfloat16> hx(nx);
    if (!o.mins) { /* Q8_0: q in −127..127, an f16 scale d ~ 1/127 of the block's max |w| */
        for (auto &v : hq)
            v = (int8_t)((int)(rnd() % 255) - 127);
        for (auto &v : hs)
            v = __half2float(__float2half(0.02f * (0.5f + 0.5f * fabsf(rndf())) / 127.0f));
    } else { /* Q4_K: q in 0..15, s = d·sc and mn = dmin·m (f16 super-block factors, 6-bit sub-block ones) */
        for (auto &v : hq)
            v = (int8_t)(rnd() % 16);
        for (uint64_t i = 0; i < nw / QB; i++) {
            const float d = __half2float(__float2half(0.02f / 15 / 63 * (0.5f + 0.5f * fabsf(rndf()))));
            const float dmin = __half2float(__float2half(0.01f / 63 * (0.5f + 0.5f * fabsf(rndf()))));
            hs[i] = d * (float)(rnd() % 64), hm[i] = dmin * (float)(rnd() % 64);
        }
    }
    for (auto &v : hx)
        v = __float2bfloat16(rndf());
    if (o.diag == DIAG_UNIT) {
        std::fill(hs.begin(), hs.end(), 1.0f);
        std::fill(hm.begin(), hm.end(), 0.0f);
    } else if (o.diag == DIAG_PROBE) {
        for (uint64_t i = 0; i < nw; i++)
            hq[i] = (int8_t)(i % K == probe_k((uint32_t)(i / K)) ? probe_q((uint32_t)(i / K)) : 0);
        for (uint64_t i = 0; i < nw / QB; i++)
            hs[i] = i % 2 ? 4096.0f : 1.0f;
        std::fill(hm.begin(), hm.end(), 0.0f);
        for (uint64_t i = 0; i < nx; i++)
            hx[i] = __float2bfloat16((float)(i % K + 1) / 64.0f);
    }

    int8_t *q;
    float *s, *mn = nullptr, *y, *y2;
    __nv_bfloat16 *x, *whi, *wlo;
    uint8_t *at, *bt;
    const uint32_t as = o.mins ? lay<128, true>::AS : lay<128, false>::AS;
    const uint32_t bg = BN * BK * 2 + (o.mins ? 2 * BN * 4 : 0);
    CHECK(cudaMalloc(&q, nw));
    CHECK(cudaMalloc(&s, nw / QB * 4));
    if (o.mins)
        CHECK(cudaMalloc(&mn, nw / QB * 4));
    CHECK(cudaMalloc(&x, nx * 2));
    CHECK(cudaMalloc(&at, (uint64_t)RT * KT * as));
    CHECK(cudaMalloc(&bt, (uint64_t)TT * KT * bg));
    CHECK(cudaMalloc(&whi, nw * 2));
    CHECK(cudaMalloc(&wlo, nw * 2));
    CHECK(cudaMalloc(&y, ny * 4));
    CHECK(cudaMalloc(&y2, ny * 4));
    CHECK(cudaMemcpy(q, hq.data(), nw, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(s, hs.data(), nw / QB * 4, cudaMemcpyHostToDevice));
    if (o.mins)
        CHECK(cudaMemcpy(mn, hm.data(), nw / QB * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(x, hx.data(), nx * 2, cudaMemcpyHostToDevice));
    const uint32_t ta_blocks = (uint32_t)((nw / 8 + 255) / 256);
    if (o.mins)
        tile_a<true><<<ta_blocks, 256>>>(q, s, mn, rows, K, at);
    else
        tile_a<false><<<ta_blocks, 256>>>(q, s, mn, rows, K, at);
    const uint32_t tb_blocks = (uint32_t)(((uint64_t)TT * BN * (K / 8) + 255) / 256);
    if (BN == 192)
        (o.mins ? tile_b<192, true> : tile_b<192, false>)<<<tb_blocks, 256>>>(x, T, K, TT, bt);
    else
        (o.mins ? tile_b<128, true> : tile_b<128, false>)<<<tb_blocks, 256>>>(x, T, K, TT, bt);
    split_w<<<(uint32_t)((nw + 255) / 256), 256>>>(q, s, mn, nw, K, whi, wlo);
    CHECK(cudaGetLastError());
    CHECK(cudaMemset(y, 0xff, ny * 4)); /* NaN: every output must be written */

    uint32_t smem = 0;
    const kern_t k = pick(o.ns, o.bn, o.mins, o.cl, &smem);
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CL, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(RT * TT), cfg.blockDim = dim3(NT), cfg.dynamicSmemBytes = smem;
    cfg.attrs = attr, cfg.numAttrs = 1;
    const uint8_t *cat = at, *cbt = bt;
    const int raster = o.raster;
    auto launch = [&]() { CHECK(cudaLaunchKernelEx(&cfg, k, cat, cbt, y, rows, T, KT, RT, TT, raster)); };
    const float one = 1.0f, zero = 0.0f;
    auto gemm = [&](const __nv_bfloat16 *w, float beta) {
        CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)T, (int)K, &one, w, CUDA_R_16BF, (int)K,
                                x, CUDA_R_16BF, (int)K, beta == 0.0f ? &zero : &one, y2, CUDA_R_32F, (int)rows,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    { /* the first launch under a watchdog: a barrier protocol error hangs rather than fails */
        cudaEvent_t done;
        CHECK(cudaEventCreate(&done));
        launch();
        CHECK(cudaEventRecord(done));
        for (int i = 0; cudaEventQuery(done) == cudaErrorNotReady; i++) {
            if (i == 10000) { /* ~10 s */
                printf("check %5u x %5u x %5u: HUNG (the kernel did not finish in 10 s)\n", rows, K, T);
                fflush(stdout);
                _exit(3);
            }
            usleep(1000);
        }
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        cudaEventDestroy(done);
    }
    gemm(whi, 0.0f);
    gemm(wlo, 1.0f);
    CHECK(cudaDeviceSynchronize());

    /* the check: 4096 sampled outputs (the first and last token and row among them), and no NaN left anywhere */
    const uint32_t n = 4096;
    std::vector<uint32_t> tr(2 * n);
    for (uint32_t i = 0; i < n; i++) {
        tr[2 * i] = i == 0 ? 0 : i == 1 ? T - 1 : rnd() % T;
        tr[2 * i + 1] = i == 0 ? 0 : i == 1 ? rows - 1 : rnd() % rows;
    }
    uint32_t *dtr;
    double *dref;
    CHECK(cudaMalloc(&dtr, tr.size() * 4));
    CHECK(cudaMalloc(&dref, 2 * n * 8));
    CHECK(cudaMemcpy(dtr, tr.data(), tr.size() * 4, cudaMemcpyHostToDevice));
    ref_dot<<<(n * 32 + 255) / 256, 256>>>(q, s, mn, x, K, dtr, n, dref);
    CHECK(cudaGetLastError());
    std::vector<double> ref(2 * n);
    float *dg;
    unsigned long long *dnan, nan = 0;
    CHECK(cudaMalloc(&dg, 2 * n * 4));
    CHECK(cudaMalloc(&dnan, 8));
    CHECK(cudaMemset(dnan, 0, 8));
    gather<<<(n + 255) / 256, 256>>>(y, y2, rows, dtr, n, dg);
    count_nan<<<1024, 256>>>(y, ny, dnan);
    CHECK(cudaGetLastError());
    std::vector<float> g(2 * n);
    CHECK(cudaMemcpy(ref.data(), dref, 2 * n * 8, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(g.data(), dg, 2 * n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&nan, dnan, 8, cudaMemcpyDeviceToHost));
    cudaFree(dg), cudaFree(dnan);
    double worst = 0, worst2 = 0;
    for (uint32_t i = 0; i < n; i++) {
        const double a = ref[2 * i + 1] > 0 ? ref[2 * i + 1] : 1.0;
        worst = std::max(worst, fabs((double)g[2 * i] - ref[2 * i]) / a);
        worst2 = std::max(worst2, fabs((double)g[2 * i + 1] - ref[2 * i]) / a);
        if (std::isnan(g[2 * i]))
            worst = INFINITY;
    }
    const bool ok = nan == 0 && worst <= 1e-5;
    printf("check %5u x %5u x %5u: %s  max|d|/sum|xw| %.3e (two-product cuBLAS %.3e), %llu NaN left\n", rows, K, T,
           ok ? "ok" : "FAILED", worst, worst2, (unsigned long long)nan);
    if (o.diag != DIAG_NONE) { /* the 8 worst samples: where they lie in their tiles */
        std::vector<uint32_t> idx(n);
        for (uint32_t i = 0; i < n; i++)
            idx[i] = i;
        auto err = [&](uint32_t i) { return fabs((double)g[2 * i] - ref[2 * i]) / (ref[2 * i + 1] > 0 ? ref[2 * i + 1] : 1.0); };
        std::partial_sort(idx.begin(), idx.begin() + 8, idx.end(), [&](uint32_t a, uint32_t b) { return err(a) > err(b); });
        for (int j = 0; j < 8; j++) {
            const uint32_t i = idx[j], t = tr[2 * i], r = tr[2 * i + 1];
            printf("  diag worst t %u (t %% BN %u) r %u (r %% 128 %u: wg %u warp %u g %u%s)  y %.6e ref %.6e cuBLAS %.6e "
                   "err %.3e\n",
                   t, t % BN, r, r % 128, r % 128 / 64, r % 64 / 16, r % 8, r % 16 >= 8 ? " +8" : "", g[2 * i], ref[2 * i],
                   g[2 * i + 1], err(i));
        }
    }
    if (o.diag == DIAG_PROBE) { /* y[t][r] = s · (k + 1) / 64: the k and the 32-block (scale 1 or 4096) row r met */
        std::vector<float> hy(ny);
        CHECK(cudaMemcpy(hy.data(), y, ny * 4, cudaMemcpyDeviceToHost));
        uint32_t bad = 0, tok = 0;
        for (uint32_t t = 1; t < T; t++)
            for (uint32_t r = 0; r < rows; r++)
                tok += hy[(uint64_t)t * rows + r] != hy[r];
        printf("  probe: %u outputs of tokens 1.. differ from token 0's\n", tok);
        std::vector<uint8_t> ha(lay<128, false>::AS);
        CHECK(cudaMemcpy(ha.data(), at, ha.size(), cudaMemcpyDeviceToHost));
        for (uint32_t r = 0; r < 2; r++) { /* the A tile's row r as stored (q at k probe_k(r): piece k / 8 ^ r % 8) */
            printf("  probe A tile row %u (q %d at k %u):", r, probe_q(r), probe_k(r));
            for (uint32_t b = 0; b < 128; b += 2)
                printf("%s%02x%02x", b % 16 ? "" : " |", ha[r * 128 + b + 1], ha[r * 128 + b]);
            printf("\n");
        }
        printf("  probe scales row 0: %g %g\n", reinterpret_cast<float *>(ha.data() + A_BYTES)[0],
               reinterpret_cast<float *>(ha.data() + A_BYTES)[1]);
        for (uint32_t r = 0; r < rows; r++) {
            const uint32_t kp = probe_k(r), kb = kp / QB;
            const float v = hy[r], want = (kb ? 4096.0f : 1.0f) * (float)probe_q(r) * (float)(kp + 1) / 64.0f;
            const float u = v * 64.0f / (float)probe_q(r), k1 = fabsf(u) >= 4096.0f ? u / 4096.0f : u; /* k + 1 */
            if (v != want || bad < 4 || r < 2)
                printf("  probe r %3u (g %u%s, warp %u, wg %u): q %4d at k %2u (block %u) -> y*64/q %.6g = %s(k %g)  "
                       "y/want %.8g%s\n",
                       r, r % 8, r % 16 >= 8 ? " +8" : "", r % 64 / 16, r / 64, probe_q(r), kp, kb, u,
                       fabsf(u) >= 4096.0f ? "4096 * " : "", k1 - 1, v / want, v == want ? "" : "  WRONG");
            bad += v != want;
        }
        printf("  probe: %u of %u rows wrong\n", bad, rows);
    }

    result res = {0, 0, 0, ok};
    if (!o.check_only) {
        res.ms_q = time_ms(launch);
        res.ms_one = time_ms([&]() { gemm(whi, 0.0f); });
        res.ms_two = time_ms([&]() {
            gemm(whi, 0.0f);
            gemm(wlo, 1.0f);
        });
        const double tf = 2.0 * rows * K * T / 1e9; /* TFLOP / ms */
        printf("time  %5u x %5u x %5u: promoted %.3f ms (%.0f TFLOP/s)  cuBLAS one %.3f (%.0f)  two %.3f (%.0f)  "
               "promoted/two %.2fx\n",
               rows, K, T, res.ms_q, tf / res.ms_q, res.ms_one, tf / res.ms_one, res.ms_two, tf / res.ms_two,
               res.ms_two / res.ms_q);
    }
    cudaFree(q), cudaFree(s), cudaFree(mn), cudaFree(x), cudaFree(at), cudaFree(bt), cudaFree(whi), cudaFree(wlo), cudaFree(y),
        cudaFree(y2), cudaFree(dtr), cudaFree(dref);
    return res;
}

} // namespace

int main(int argc, char **argv)
{
    opts o;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--t") && i + 1 < argc)
            o.T = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ns") && i + 1 < argc)
            o.ns = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cluster") && i + 1 < argc)
            o.cl = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bn") && i + 1 < argc)
            o.bn = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--raster") && i + 1 < argc)
            o.raster = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check-only"))
            o.check_only = true;
        else if (!strcmp(argv[i], "--mins"))
            o.mins = true;
        else if (!strcmp(argv[i], "--diag") && i + 1 < argc && !strcmp(argv[i + 1], "worst"))
            o.diag = DIAG_WORST, i++;
        else if (!strcmp(argv[i], "--diag") && i + 1 < argc && !strcmp(argv[i + 1], "unit-scales"))
            o.diag = DIAG_UNIT, i++;
        else if (!strcmp(argv[i], "--diag") && i + 1 < argc && !strcmp(argv[i + 1], "probe"))
            o.diag = DIAG_PROBE, i++;
        else {
            fprintf(stderr, "usage: %s [--t T] [--ns 4|5|6] [--bn 128|192] [--cluster 1|2] [--raster 0|1] [--mins] [--check-only] [--diag worst|unit-scales|probe]\n", argv[0]);
            return 2;
        }
    }
    if (o.T == 0 || o.T > 65536 || (o.bn != 128 && o.bn != 192) || o.ns < 4 || o.ns > (o.bn == 192 ? 5 : 6) ||
        (o.cl != 1 && o.cl != 2) || (o.cl == 2 && !(o.ns == 5 || (o.ns == 4 && o.bn == 192)))) {
        fprintf(stderr, "--t 1..65536, --bn 128 or 192, --ns 4..6 (4..5 at --bn 192), --cluster 1 or 2 (2: --ns 5, "
                        "or 4 at --bn 192)\n");
        return 2;
    }
    printf("gemm_q_test: T %u, %d stages, %d tokens a tile, clusters of %d, raster %d, %s\n", o.T, o.ns, o.bn, o.cl,
           o.raster, o.mins ? "Q4_K-like (scales and mins)" : "Q8_0-like (scales)");
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    /* the 8B layer's matrices: q|k|v, o, gate|up, down */
    const uint32_t shapes[4][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
    bool ok = true;
    float q_ms = 0, one_ms = 0, two_ms = 0;
    for (auto &sh : shapes) {
        if (o.diag == DIAG_PROBE && sh != shapes[0])
            break;
        const result r = o.diag == DIAG_PROBE ? run_shape(h, o, 128, 64) : run_shape(h, o, sh[0], sh[1]);
        ok &= r.ok;
        q_ms += r.ms_q, one_ms += r.ms_one, two_ms += r.ms_two;
    }
    if (!o.check_only) {
        const double tf = 2.0 * (6144.0 * 4096 + 4096.0 * 4096 + 28672.0 * 4096 + 4096.0 * 14336) * o.T / 1e9;
        printf("layer T %u: promoted %.3f ms (%.0f TFLOP/s)  cuBLAS one %.3f (%.0f)  two %.3f (%.0f)  "
               "promoted/two %.2fx, promoted/one %.2fx\n",
               o.T, q_ms, tf / q_ms, one_ms, tf / one_ms, two_ms, tf / two_ms, two_ms / q_ms, one_ms / q_ms);
    }
    cublasDestroy(h);
    printf("%s\n", ok ? "all checks passed" : "CHECKS FAILED");
    return ok ? 0 : 1;
}
