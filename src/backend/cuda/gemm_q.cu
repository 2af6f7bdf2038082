/* backend/cuda/gemm_q.cu — the prefill GEMM of the GGUF types with one scale a 32 elements (Q8_0, Q4_0, Q4_1,
 * Q4_K, Q5_K, IQ4_XS) on their quantized values: one bf16 wgmma product a pair, each 32-block's scale applied when
 * its two k16 steps are done ("promotion", DeepGEMM's arrangement), instead of gemm.cu's cuBLASLt products of the
 * dequantized weight's bf16 high and low parts (MEMRA_GEMM_PROMOTE; gemm.cu calls it).
 *
 *   y (T, rows) f32 = scale · ( Σ_kb s[r][kb] · Σ_{k in kb} q[r][k] · x[t][k]  +  Σ_kb m[r][kb] · S[t][kb] )
 *
 * — or bf16 (CUDA_GEMM_Y_BF16): that value rounded once — (the value a 32-block decodes to, gemv_quant_types.cuh:
 * d·q + m, so s = d; Q4_0's d·(q − 8) as q − 8 without a min; S[t][kb] = Σ_{k in kb} x[t][k]). q is an integer of
 * ≤ 8 bits, exact in bf16, and x is bf16-valued (bf16 activations; with f32 activations x = hi + lo, both
 * multiplied into the same partial): each block's partial sum
 * is the tensor cores' f32 sum of exact products — closer to the exact dot than the two-part weight (whose
 * w_lo · x_lo is dropped). The types with a min (Q4_1, Q4_K, Q5_K) add the second sum as a GEMM of K = 3·n/32 on
 * the same kernel: extra k tiles after the weight's own, A holding [m_hi, m_hi, m_lo] and B [S_hi, S_lo, S_hi] a
 * block (bf16 parts of the f32 m and S; the dropped m_lo · S_lo and the parts' residues are ~2^-17 of m·S, as the
 * two-part weight's), at scale 1 — ~9 % more products instead of an FMA a block and accumulator on the CUDA cores.
 * Bits: an output's operations are the same whatever T and its place in the token tiles (K walked in one order,
 * tokens past T zero), so a span's rows are the same alone and inside a GEMM over several spans.
 *
 * Operands, made by the two pack kernels below; KX = n/64 + KE k tiles, KE = ⌈3·(n/32) / 64⌉ with a min, else 0:
 *   A (gemm_q_pack; the kept copy of cuda_gemm_keep, or a scratch per call): tiles of 128 rows × 64 k, tile
 *     (rt, kt) at (rt·KX + kt)·AS: q as bf16 in the wgmma 128-byte swizzle (wgmma.cuh's swz), then the f32 scales
 *     s[128][2] (the tile's two 32-blocks; 1 in the min tiles). AS = 17408 bytes.
 *   B (gemm_q_tile_x, from the bf16 x rows the GEMM's x conversion or the producers made): tiles of 128 tokens ×
 *     64 k per x part (1 or 2: hi, lo), tile (tt, kt) at (tt·KX + kt)·BG, tokens past T zero; the min tiles hold
 *     the S parts in the first x part and zeros in the second. By default (MEMRA_GEMM_X_TILES off) the kernel
 *     reads x's own k tiles straight from x's rows by TMA (the same swizzled tiles) and only the min tiles are
 *     made beforehand (gemm_q_tile_mins): the pass moved x's bytes twice (H100, random 8B with bf16 activations,
 *     pp4096 at --ubatch 4096: Q8_0 +2.5-5.3 %, Q4_K_M +2.2-4.4 %; bench/RESULTS.md, fifty-second run).
 * Kernel: a CTA = 128 rows × 128 tokens, 384 threads. Warpgroups 0 and 1 compute (rows 64w .. 64w + 63;
 * setmaxnreg 232); warpgroup 2's first lane bulk-copies each stage's A and B tiles into a ring of NS stages
 * (full / empty mbarriers; setmaxnreg 40). A warpgroup's 32-block: 2 wgmma m64n128k16 per x part into a partial
 * (the first with scale-d 0), wait, acc += s · partial: its 64 FFMA run while the k tile's other block and the
 * other warpgroup's products keep the tensor cores busy. Calls of ≤ NARROW_T tokens take the narrow form: 64 rows
 * a CTA, one computing warpgroup (setmaxnreg 168), two CTAs an SM — the same operations a row, so the same bits.
 * The floor: 2·rows·K·T FLOPs at ~790 TFLOP/s (the H200's bf16 rate) per x part. First measured as
 * lab/gemm-q/gemm_q_test.cu.
 */
#include <cuda_bf16.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemm_q.h"
#include "backend/cuda/gemv_quant_types.cuh"
#include "backend/cuda/tensor_map.cuh"
#include "backend/cuda/tile_copy.cuh"
#include "backend/cuda/wgmma.cuh"

namespace {

constexpr uint32_t BM = 128, BN = 128, BK = 64, QB = 32; /* rows, tokens and k a CTA tile; k a scale block */
constexpr uint32_t A_BYTES = BM * BK * 2, S_BYTES = BM * (BK / QB) * 4, B_BYTES = BN * BK * 2;
constexpr uint32_t AS = A_BYTES + S_BYTES; /* an A tile: q, then the scales (1 KB, so 1024-aligned) */
constexpr uint32_t MC = 3;                 /* the min GEMM's k columns a 32-block: m_hi·S_hi, m_hi·S_lo, m_lo·S_hi */
/* Calls of up to this many tokens take the narrow form (64-row CTAs, two an SM): at ≤ 128 tokens a 128-row tile
 * gives too few CTAs (the 8B's q / o / down: 32). H100, random 8B, narrow against wide, tok/s: Q8_0 bf16 pp32 / pp64
 * / pp128 +9 / +8 / +11 %, exact +14-24 / +7-24 / +7 %; Q4_K_M bf16 pp32-pp96 +5-6 %, exact pp64 / pp128 +5 %; level
 * at 256, 8-13 % slower at 512 (bench/RESULTS.md, fortieth run). */
constexpr uint32_t NARROW_T = 128;

/* k tiles of the min GEMM (0 without mins) and in all */
__host__ __device__ constexpr uint64_t ext_tiles(uint64_t n, bool mins)
{
    return mins ? (MC * (n / QB) + BK - 1) / BK : 0;
}
__host__ __device__ constexpr uint64_t all_tiles(uint64_t n, bool mins) { return n / BK + ext_tiles(n, mins); }

/* A CTA's form: WG computing warpgroups of 64 rows each (2: the whole 128-row tile, one CTA an SM; 1: the narrow
 * form, half a tile, two CTAs an SM — twice the CTAs for short spans, whose token tiles are few), XP x parts.
 * A stage: the A rows (WG · 8 KB of q, then their scales in a 1 KB slot), B (XP x tiles; BR held so that the next
 * stage stays 1024-aligned). Stages: wide 5 with one x part (33 KB a stage), 4 with two (49 KB); narrow 4 (25 KB)
 * and 2 (41 KB), under half an SM's shared memory. */
template <int XP, int WG> struct lay {
    static constexpr uint32_t AQ = WG * (A_BYTES / 2), AR = AQ + 1024; /* A's q bytes, its part of a stage */
    static constexpr uint32_t BG = XP * B_BYTES, BR = (BG + 1023) / 1024 * 1024;
    static constexpr uint32_t STAGE = AR + BR;
    static constexpr int NS = WG == 2 ? (XP == 1 ? 5 : 4) : (XP == 1 ? 4 : 2);
    static constexpr uint32_t SMEM = NS * STAGE + 1024 + 2 * NS * 8;
    static constexpr int NT = (WG + 1) * 128;
};

/* d (64 × 128 f32: 64 a thread) = A · B (ACC 0: d written only) or += A · B (ACC 1), both K-major bf16 in shared
 * memory. */
template <int ACC> __device__ __forceinline__ void wg_mn(float (&d)[64], uint64_t da, uint64_t db)
{
    if constexpr (ACC == 0)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WG_R64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : WG_W64
                     : "l"(da), "l"(db));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WG_R64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : WG_D64
                     : "l"(da), "l"(db));
}

/* bytes global → shared on bar, no cache hint: an A tile serves every token tile, a B tile every row tile. */
__device__ __forceinline__ void bulk_g2s_keep(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* acc += s · p: accumulator 4j + e is row g (e < 2: s0) or g + 8 (s1). */
__device__ __forceinline__ void promote(float (&acc)[64], const float (&p)[64], float s0, float s1)
{
#pragma unroll
    for (int j = 0; j < 16; j++) {
        acc[4 * j + 0] = fmaf(s0, p[4 * j + 0], acc[4 * j + 0]);
        acc[4 * j + 1] = fmaf(s0, p[4 * j + 1], acc[4 * j + 1]);
        acc[4 * j + 2] = fmaf(s1, p[4 * j + 2], acc[4 * j + 2]);
        acc[4 * j + 3] = fmaf(s1, p[4 * j + 3], acc[4 * j + 3]);
    }
}

/* d = a 32-block's products: 2 wgmma a x part (the first with scale-d 0); da / db: the descriptors of the block's
 * first k16 step of A and of B's first x part (a descriptor's low field is the address / 16: a byte offset o within
 * shared memory is + o / 16). */
template <int XP> __device__ __forceinline__ void issue(float (&d)[64], uint64_t da, uint64_t db)
{
#pragma unroll
    for (int xp = 0; xp < XP; xp++) {
        const uint64_t bx = db + xp * (B_BYTES / 16);
        if (xp == 0)
            wg_mn<0>(d, da, bx);
        else
            wg_mn<1>(d, da, bx);
        wg_mn<1>(d, da + 2, bx + 2);
    }
}

/* A computing warpgroup's k loop (wg: its index). The descriptors are made once and a stage's offset added (the loop
 * issued ~100 address instructions a k tile beside its 128 FFMA, ncu, forty-seventh run; now ~50: the promoted GEMM
 * +2-3 %, Q8_0 pp4096 +3-5 % on an H100; a copy of the loop a warpgroup, wg a constant so that A's descriptor is a
 * uniform value, issued fewer still and ran slower).
 * Wide (WG 2): two partials, one a 32-block of the k tile: both blocks' products issued, the first promoted while
 * the second's run, the stage released once both are read (nothing in flight across the loop's back edge, which
 * makes ptxas serialize every wgmma, C7515; a form that promoted a tile's second block beside the next tile's
 * first was serialized so, and two tiles an iteration, three of four promotions beside products, ran 2 % slower:
 * lab/gemmq-pipe2.patch). Narrow (WG 1): one partial, a block issued, waited for and promoted in turn. The same
 * operations in the same order either way — only their overlap differs (H100, random 8B, two partials against
 * one: Q8_0 pp512 +5 %, Q4_K_M +3 %). */
template <int XP, int WG>
__device__ __forceinline__ void consume(float (&acc)[64], float (&p)[64], float (&q)[WG == 2 ? 64 : 1], uint32_t base,
                                        const uint8_t *sp, uint32_t bars, uint32_t KX, uint32_t wg, uint32_t r0,
                                        uint32_t lane)
{
    using L = lay<XP, WG>;
    constexpr int NS = L::NS;
    constexpr uint32_t STAGE = L::STAGE;
    const uint64_t da0 = smem_desc(base + wg * (A_BYTES / 2)), db0 = smem_desc(base + L::AR);
    const uint8_t *const sc0 = sp + L::AQ + r0 * 8; /* this thread's rows' scales (float2: the two blocks) */
    uint32_t s = 0, ph = 0;                          /* tile kt's stage and its full barrier's parity */
    const auto release = [&]() { /* the stage's products all read: its producer may refill it */
        __syncwarp();
        if (lane == 0)
            mbar_arrive(bars + 8 * (NS + s));
    };
    for (uint32_t kt = 0; kt < KX; kt++) {
        const uint32_t so = s * (STAGE / 16);
        mbar_wait(bars + 8 * s, ph);
        if constexpr (WG == 2) {
            wgmma_fence();
            issue<XP>(p, da0 + so, db0 + so);
            wgmma_commit();
            issue<XP>(q, da0 + so + 4, db0 + so + 4); /* block 1: k 32 .. 63, 64 bytes on */
            wgmma_commit();
            const float2 sr0 = *reinterpret_cast<const float2 *>(sc0 + s * STAGE);
            const float2 sr1 = *reinterpret_cast<const float2 *>(sc0 + s * STAGE + 64);
            wgmma_wait<1>();
            reg_fence(p);
            promote(acc, p, sr0.x, sr1.x);
            wgmma_wait<0>();
            reg_fence(q);
            release();
            promote(acc, q, sr0.y, sr1.y);
        } else {
            const float2 sr0 = *reinterpret_cast<const float2 *>(sc0 + s * STAGE);
            const float2 sr1 = *reinterpret_cast<const float2 *>(sc0 + s * STAGE + 64);
#pragma unroll
            for (uint32_t h = 0; h < 2; h++) {
                wgmma_fence();
                issue<XP>(p, da0 + so + 4 * h, db0 + so + 4 * h);
                wgmma_commit();
                wgmma_wait<0>();
                reg_fence(p);
                promote(acc, p, h == 0 ? sr0.x : sr0.y, h == 0 ? sr1.x : sr1.y);
            }
            release();
        }
        s = s + 1 == NS ? 0 : s + 1;
        ph = s == 0 ? ph ^ 1 : ph;
    }
}

/* The narrow form (WG 1) promotes one partial a 32-block (two, at its two CTAs an SM, would not fit the registers):
 * the same operations in the same order as the wide form's two partials, so the same bits whichever form a call
 * takes (gemm_q_run's choice by T; kernel_gemm checks a span's bits across the two). */
template <int XP, int WG>
__global__ void __launch_bounds__(lay<XP, WG>::NT, 3 - WG)
    kernel_gemm_q(const uint8_t *__restrict__ at, const uint8_t *__restrict__ bt, void *__restrict__ yv, bool y16,
                  uint32_t rows, uint32_t T, uint32_t KX, uint32_t TT, float scale, uint32_t KM,
                  const __grid_constant__ CUtensorMap tmx0, const __grid_constant__ CUtensorMap tmx1)
{
    using L = lay<XP, WG>;
    constexpr int NS = L::NS;
    constexpr uint32_t STAGE = L::STAGE;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_u32(smem_raw), base = (raw + 1023) & ~1023u;
    const uint8_t *const sp = smem_raw + (base - raw); /* the same bytes, generic */
    const uint32_t bars = base + NS * STAGE;           /* full[NS], then empty[NS] */
    /* consecutive CTAs: one row tile's (narrow: half tile's) token tiles */
    const uint32_t rh = blockIdx.x / TT, tt = blockIdx.x % TT, rt = WG == 2 ? rh : rh / 2, half = WG == 2 ? 0 : rh % 2;
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int i = 0; i < NS; i++) {
            mbar_init(bars + 8 * i, 1);
            mbar_init(bars + 8 * (NS + i), 4 * WG); /* lane 0 of each computing warp */
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (warp >= 4 * WG) { /* the producer: one lane issues every stage's copies, never waiting on the products */
        regs_dec<40>();
        if (warp == 4 * WG && lane == 0) {
            const uint8_t *a = at + (uint64_t)rt * KX * AS, *b = bt + (uint64_t)tt * (KX - KM) * L::BG;
            constexpr uint32_t SB = WG * 64 * 2 * 4; /* the rows' scales */
            for (uint32_t kt = 0; kt < KX; kt++) {
                const uint32_t s = kt % NS;
                if (kt >= NS)
                    mbar_wait(bars + 8 * (NS + s), ((kt / NS) - 1) & 1);
                mbar_expect(bars + 8 * s, L::AQ + SB + L::BG);
                const uint8_t *ak = a + (uint64_t)kt * AS;
                if constexpr (WG == 2) {
                    bulk_g2s_keep(base + s * STAGE, ak, AS, bars + 8 * s);
                } else {
                    bulk_g2s_keep(base + s * STAGE, ak + half * L::AQ, L::AQ, bars + 8 * s);
                    bulk_g2s_keep(base + s * STAGE + L::AQ, ak + A_BYTES + half * SB, SB, bars + 8 * s);
                }
                if (kt < KM) { /* x's own k tile: a box of each part's rows */
                    tma_load_2d(base + s * STAGE + L::AR, &tmx0, (int32_t)(kt * BK), (int32_t)(tt * BN), bars + 8 * s);
                    if constexpr (XP == 2)
                        tma_load_2d(base + s * STAGE + L::AR + B_BYTES, &tmx1, (int32_t)(kt * BK), (int32_t)(tt * BN),
                                    bars + 8 * s);
                } else {
                    bulk_g2s_keep(base + s * STAGE + L::AR, b + (uint64_t)(kt - KM) * L::BG, L::BG, bars + 8 * s);
                }
            }
        }
        return;
    }

    if constexpr (WG == 2)
        regs_inc<232>();
    else
        regs_inc<168>();
    const uint32_t wg = warp / 4, wi = warp % 4, g = lane / 4;
    const uint32_t r0 = wg * 64 + wi * 16 + g; /* this thread's rows in the CTA's rows: r0, r0 + 8 */
    float acc[64], p[64], q[WG == 2 ? 64 : 1]; /* p, q: written first by a scale-d 0 wgmma (wg_mn<0>) */
#pragma unroll
    for (int i = 0; i < 64; i++)
        acc[i] = 0.0f;
    consume<XP, WG>(acc, p, q, base, sp, bars, KX, wg, r0, lane);

    /* acc[4j + e]: row r0 (e < 2) or r0 + 8, token 8j + 2c + (e & 1); a warp's store covers four tokens' 8
     * consecutive rows (whole 32-byte sectors) */
    const uint64_t row = (uint64_t)rt * BM + half * 64 + r0;
    const uint32_t c = lane % 4;
#pragma unroll
    for (int j = 0; j < 16; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const uint32_t t = tt * BN + 8 * j + 2 * c + (e & 1);
            if (t < T) {
                const uint64_t i = (uint64_t)t * rows + row + (e >> 1) * 8;
                const float v = scale * acc[4 * j + e];
                if (y16) /* CUDA_GEMM_Y_BF16: the f32 value rounded once */
                    reinterpret_cast<__nv_bfloat16 *>(yv)[i] = __float2bfloat16_rn(v);
                else
                    reinterpret_cast<float *>(yv)[i] = v;
            }
        }
    }
}

__device__ __forceinline__ float bf16_value(uint16_t u) { return __uint_as_float((uint32_t)u << 16); }

/* The byte of k column e (0 .. 63) of row r in a swizzled 128 × 64 bf16 tile */
__device__ __forceinline__ uint32_t swz_elem(uint32_t r, uint32_t e) { return swz(r, e / 8) + (e % 8) * 2; }

/* One thread a 32-element segment (row r, segment j): the GEMV's decoder gives q and the block's d, m (value
 * d·q + m); q goes as bf16 into the A tile's swizzled row (4 pieces of 16 bytes), d into the scales; with MINS m's
 * parts into the min tiles' columns 3j .. 3j + 2, and the row's last segment writes those tiles' scales (1) and
 * their padding (0) (SHIFT8: Q4_0's q − 8 and no min). */
template <class Q, bool MINS, bool SHIFT8>
__global__ void kernel_gemm_q_pack(const uint8_t *__restrict__ w, uint64_t row_bytes, uint64_t rows, uint64_t n,
                                   uint8_t *__restrict__ out)
{
    constexpr int S = Q::QK / 32;
    const uint64_t segs = n / 32, t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= rows * segs)
        return;
    const uint64_t r = t / segs, j = t % segs, KT = n / BK, KX = all_tiles(n, MINS);
    const uint8_t *blk = w + r * row_bytes + (j / S) * Q::BS;
    const typename Q::lane_t Ln = Q::lane((int)(j % S));
    uint32_t q[8];
    float d[2], m[2];
    Q::get(blk, Ln, q, d, m);
    uint8_t *const rtile = out + (r / BM) * KX * AS; /* this row's tile row */
    uint8_t *tile = rtile + (j / 2) * AS;
    const uint32_t rr = (uint32_t)(r % BM), h = (uint32_t)(j % 2);
#pragma unroll
    for (int pc = 0; pc < 4; pc++) { /* elements 8pc .. 8pc + 7 of the segment */
        uint32_t v[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float f[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int el = 8 * pc + 2 * i + e;
                const uint32_t byte = (q[el / 4] >> (8 * (el % 4))) & 0xFFu;
                f[e] = SHIFT8 ? (float)((int)byte - 8) : Q::QSIGNED ? (float)(int8_t)byte : (float)byte;
            }
            const __nv_bfloat162 b2 = __floats2bfloat162_rn(f[0], f[1]); /* exact: |q| ≤ 256 */
            v[i] = *reinterpret_cast<const uint32_t *>(&b2);
        }
        *reinterpret_cast<uint4 *>(tile + swz(rr, 4 * h + pc)) = make_uint4(v[0], v[1], v[2], v[3]);
    }
    reinterpret_cast<float *>(tile + A_BYTES)[rr * 2 + h] = d[0];
    if (MINS) {
        uint16_t hi, lo;
        gemm_x_split1(m[0], hi, lo);
        const uint16_t part[MC] = {hi, hi, lo};
        for (uint32_t i = 0; i < MC; i++) {
            const uint64_t e = MC * j + i;
            *reinterpret_cast<uint16_t *>(rtile + (KT + e / BK) * AS + swz_elem(rr, (uint32_t)(e % BK))) = part[i];
        }
        if (j == segs - 1) {
            for (uint64_t e = MC * segs; e < (KX - KT) * BK; e++)
                *reinterpret_cast<uint16_t *>(rtile + (KT + e / BK) * AS + swz_elem(rr, (uint32_t)(e % BK))) = 0;
            for (uint64_t kt = KT; kt < KX; kt++)
                reinterpret_cast<float2 *>(rtile + kt * AS + A_BYTES)[rr] = make_float2(1.0f, 1.0f);
        }
    }
}

/* The min tiles' columns of 32-block j of token t (row tr of its token tile, whose tiles start at ttile; the min
 * tiles at tile KT of KX): S = Σx (of hi + lo, f32, in k order) as [S_hi, S_lo, S_hi] in the first x part, zeros
 * in the second; the row's last block writes their padding. Tokens past T: S = 0. */
template <int XP>
__device__ __forceinline__ void tile_mins(const uint16_t *__restrict__ xhi, const uint16_t *__restrict__ xlo,
                                          uint32_t T, uint64_t n, uint32_t t, uint32_t tr, uint64_t j, uint8_t *ttile,
                                          uint64_t KT, uint64_t KX)
{
    constexpr uint32_t BG = lay<XP, 2>::BG;
    const uint64_t segs = n / QB;
    float sum = 0.0f;
    if (t < T) {
        uint4 h[4], l[4]; /* the block's 32 elements of each part */
#pragma unroll
        for (int c = 0; c < 4; c++) {
            h[c] = reinterpret_cast<const uint4 *>(xhi + (uint64_t)t * n + j * QB)[c];
            if (XP == 2)
                l[c] = reinterpret_cast<const uint4 *>(xlo + (uint64_t)t * n + j * QB)[c];
        }
        const uint16_t *hv = reinterpret_cast<const uint16_t *>(h), *lv = reinterpret_cast<const uint16_t *>(l);
#pragma unroll
        for (int e = 0; e < 32; e++) {
            float v = bf16_value(hv[e]);
            if (XP == 2)
                v += bf16_value(lv[e]);
            sum += v;
        }
    }
    uint16_t hi, lo;
    gemm_x_split1(sum, hi, lo);
    const uint16_t part[MC] = {hi, lo, hi};
    for (uint64_t c = MC * j; c < (j == segs - 1 ? (KX - KT) * BK : MC * j + MC); c++) {
        uint8_t *et = ttile + (KT + c / BK) * BG + swz_elem(tr, (uint32_t)(c % BK));
        *reinterpret_cast<uint16_t *>(et) = c < MC * j + MC ? part[c - MC * j] : 0;
        if (XP == 2)
            *reinterpret_cast<uint16_t *>(et + B_BYTES) = 0;
    }
}

/* x's bf16 parts (XP of them, each (T, n) row-major) → B tiles; one thread a 16-byte piece of the padded rows
 * (tokens past T zero), and with MINS the thread at a 32-block's start also its min tiles' columns (tile_mins). */
template <bool MINS, int XP>
__global__ void kernel_gemm_q_tile_x(const uint16_t *__restrict__ xhi, const uint16_t *__restrict__ xlo, uint32_t T,
                                     uint64_t n, uint32_t TT, uint8_t *__restrict__ out)
{
    constexpr uint32_t BG = lay<XP, 2>::BG;
    const uint64_t KT = n / BK, KX = all_tiles(n, MINS), i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)TT * BN * (n / 8))
        return;
    const uint32_t t = (uint32_t)(i / (n / 8)), tr = t % BN;
    const uint64_t k8 = i % (n / 8), kt = k8 / 8; /* k8: the row's 8-element piece */
    const uint32_t pc = (uint32_t)(k8 % 8);
    uint8_t *const ttile = out + (uint64_t)(t / BN) * KX * BG; /* this token's tile row */
    uint8_t *tile = ttile + kt * BG;
#pragma unroll
    for (int xp = 0; xp < XP; xp++) {
        const uint16_t *x = xp == 0 ? xhi : xlo;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (t < T)
            v = *reinterpret_cast<const uint4 *>(x + (uint64_t)t * n + k8 * 8);
        *reinterpret_cast<uint4 *>(tile + xp * B_BYTES + swz(tr, pc)) = v;
    }
    if (MINS && pc % 4 == 0)
        tile_mins<XP>(xhi, xlo, T, n, t, tr, k8 / 4, ttile, KT, KX);
}

/* The min tiles alone (the GEMM reads x's own k tiles from its rows by TMA): a token tile's KE tiles in a row,
 * one thread a (token, 32-block). */
template <int XP>
__global__ void kernel_gemm_q_tile_mins(const uint16_t *__restrict__ xhi, const uint16_t *__restrict__ xlo,
                                        uint32_t T, uint64_t n, uint32_t TT, uint8_t *__restrict__ out)
{
    constexpr uint32_t BG = lay<XP, 2>::BG;
    const uint64_t segs = n / QB, KE = ext_tiles(n, true), i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)TT * BN * segs)
        return;
    const uint32_t t = (uint32_t)(i / segs);
    tile_mins<XP>(xhi, xlo, T, n, t, t % BN, i % segs, out + (uint64_t)(t / BN) * KE * BG, 0, KE);
}

/* Which pack a type takes: 0 none, 1 scales only, 2 scales and mins, 3 Q4_0's shifted q. */
int pack_kind(enum dtype t)
{
    switch (t) {
    case DTYPE_Q8_0: case DTYPE_IQ4_XS: return 1;
    case DTYPE_Q4_1: case DTYPE_Q4_K: case DTYPE_Q5_K: return 2;
    case DTYPE_Q4_0: return 3;
    default: return 0;
    }
}

template <class Q, bool MINS, bool SHIFT8>
void launch_pack(cudaStream_t st, const void *w, uint64_t rows, uint64_t n, void *out)
{
    const uint64_t threads = rows * (n / 32), row_bytes = n / Q::QK * Q::BS;
    kernel_gemm_q_pack<Q, MINS, SHIFT8><<<(unsigned)((threads + 255) / 256), 256, 0, st>>>(
        (const uint8_t *)w, row_bytes, rows, n, (uint8_t *)out);
    CUDA_CHECK_LAUNCH();
}

template <int XP, int WG>
void launch_gemm(const struct cuda_ctx *ctx, const void *packed, const void *xt, uint64_t rows, uint32_t KX, uint32_t T,
                 void *y, bool y16, float scale, uint32_t KM, const CUtensorMap &tm0, const CUtensorMap &tm1)
{
    using L = lay<XP, WG>;
    static uint32_t opted; /* devices the attribute is set on */
    if (cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel_gemm_q<XP, WG>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L::SMEM));
    const uint32_t TT = (T + BN - 1) / BN;
    kernel_gemm_q<XP, WG><<<(unsigned)(rows / BM * (3 - WG) * TT), L::NT, L::SMEM, ctx->stream>>>(
        (const uint8_t *)packed, (const uint8_t *)xt, y, y16, (uint32_t)rows, T, KX, TT, scale, KM, tm0, tm1);
    CUDA_CHECK_LAUNCH();
}

} // namespace

bool gemm_q_supported(enum dtype t, uint64_t rows, uint64_t n)
{
    return pack_kind(t) != 0 && rows > 0 && rows % BM == 0 && n > 0 && n % BK == 0 &&
           n % dtype_info(t)->block_size == 0 && rows <= 0x7FFFFFFFull && n <= 0x7FFFFFFFull;
}

bool gemm_q_has_mins(enum dtype t) { return pack_kind(t) == 2; }

uint64_t gemm_q_packed_bytes(enum dtype t, uint64_t rows, uint64_t n)
{
    if (!gemm_q_supported(t, rows, n))
        return 0;
    return rows / BM * all_tiles(n, gemm_q_has_mins(t)) * AS;
}

uint64_t gemm_q_x_bytes(uint32_t T, uint64_t n, bool mins, int parts)
{
    const uint64_t TT = (T + BN - 1) / BN;
    return TT * all_tiles(n, mins) * (parts * (uint64_t)B_BYTES);
}

/* The largest over the row lengths n = 64, 128, .. ≤ max_n (the supported ones) of the most the bound allows */
uint64_t gemm_q_packed_cap(uint64_t max_w, uint64_t max_n)
{
    uint64_t cap = 0;
    for (uint64_t n = BK; n <= max_n; n += BK) {
        const uint64_t rows = max_w / n / BM * BM, b = rows / BM * all_tiles(n, true) * AS;
        cap = b > cap ? b : cap;
    }
    return cap;
}

uint64_t gemm_q_x_cap(uint64_t max_x, uint64_t max_n, int parts)
{
    uint64_t cap = 0;
    for (uint64_t n = BK; n <= max_n; n += BK) {
        const uint64_t T = max_x / n, b = gemm_q_x_bytes((uint32_t)(T ? T : 1), n, true, parts);
        cap = b > cap ? b : cap;
    }
    return cap;
}

void gemm_q_pack(const struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, void *packed)
{
    if (!gemm_q_supported(t, rows, n))
        CUDA_FAIL("gemm_q_pack: %s %llu×%llu has no promoted form", dtype_name(t), (unsigned long long)rows,
                  (unsigned long long)n);
    switch (t) {
    case DTYPE_Q8_0: launch_pack<qt_q8_0, false, false>(ctx->stream, w, rows, n, packed); break;
    case DTYPE_IQ4_XS: launch_pack<qt_iq4_xs, false, false>(ctx->stream, w, rows, n, packed); break;
    case DTYPE_Q4_0: launch_pack<qt_q4_0, false, true>(ctx->stream, w, rows, n, packed); break;
    case DTYPE_Q4_1: launch_pack<qt_q4_1, true, false>(ctx->stream, w, rows, n, packed); break;
    case DTYPE_Q4_K: launch_pack<qt_q4_k, true, false>(ctx->stream, w, rows, n, packed); break;
    case DTYPE_Q5_K: launch_pack<qt_q5_k, true, false>(ctx->stream, w, rows, n, packed); break;
    default: break;
    }
}

void gemm_q_tile_x(const struct cuda_ctx *ctx, const uint16_t *xhi, const uint16_t *xlo, uint32_t T, uint64_t n,
                   bool mins, void *xt)
{
    const uint32_t TT = (T + BN - 1) / BN;
    const uint64_t threads = (uint64_t)TT * BN * (n / 8);
    const unsigned blocks = (unsigned)((threads + 255) / 256);
    uint8_t *o = (uint8_t *)xt;
    if (xlo)
        (mins ? kernel_gemm_q_tile_x<true, 2> : kernel_gemm_q_tile_x<false, 2>)<<<blocks, 256, 0, ctx->stream>>>(
            xhi, xlo, T, n, TT, o);
    else
        (mins ? kernel_gemm_q_tile_x<true, 1> : kernel_gemm_q_tile_x<false, 1>)<<<blocks, 256, 0, ctx->stream>>>(
            xhi, xlo, T, n, TT, o);
    CUDA_CHECK_LAUNCH();
}

void gemm_q_tile_mins(const struct cuda_ctx *ctx, const uint16_t *xhi, const uint16_t *xlo, uint32_t T, uint64_t n,
                      void *xt)
{
    const uint32_t TT = (T + BN - 1) / BN;
    const uint64_t threads = (uint64_t)TT * BN * (n / QB);
    const unsigned blocks = (unsigned)((threads + 255) / 256);
    (xlo ? kernel_gemm_q_tile_mins<2> : kernel_gemm_q_tile_mins<1>)<<<blocks, 256, 0, ctx->stream>>>(
        xhi, xlo, T, n, TT, (uint8_t *)xt);
    CUDA_CHECK_LAUNCH();
}

void gemm_q_run(const struct cuda_ctx *ctx, enum dtype t, const void *packed, const void *xt, int parts,
                uint64_t rows, uint64_t n, uint32_t T, void *y, bool y16, float scale, const uint16_t *xhi,
                const uint16_t *xlo)
{
    if (!gemm_q_supported(t, rows, n) || (parts != 1 && parts != 2) || T == 0)
        CUDA_FAIL("gemm_q_run: %s %llu×%llu, %d x parts, T %u not supported", dtype_name(t),
                  (unsigned long long)rows, (unsigned long long)n, parts, T);
    const uint32_t KX = (uint32_t)all_tiles(n, gemm_q_has_mins(t));
    /* x's own k tiles from its rows by TMA (xhi given), else every tile from xt */
    alignas(64) CUtensorMap tm0 = {}, tm1 = {};
    uint32_t KM = 0;
    if (xhi) {
        if ((parts == 2) != (xlo != NULL) || (uintptr_t)xhi % 16 || (uintptr_t)xlo % 16)
            CUDA_FAIL("gemm_q_run: x's parts must match parts (%d) and be 16-byte aligned", parts);
        KM = (uint32_t)(n / BK);
        tensor_map_bf16(&tm0, xhi, n, T, BN, "gemm_q_run");
        if (xlo)
            tensor_map_bf16(&tm1, xlo, n, T, BN, "gemm_q_run");
        else
            tm1 = tm0;
    }
    if (T <= NARROW_T)
        (parts == 1 ? launch_gemm<1, 1> : launch_gemm<2, 1>)(ctx, packed, xt, rows, KX, T, y, y16, scale, KM, tm0, tm1);
    else
        (parts == 1 ? launch_gemm<1, 2> : launch_gemm<2, 2>)(ctx, packed, xt, rows, KX, T, y, y16, scale, KM, tm0, tm1);
}
