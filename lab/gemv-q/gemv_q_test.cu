/* lab/gemv-q/gemv_q_test.cu — a standalone prototype of the batch-1 decode GEMV for GGUF Q4_K, Q6_K and Q8_0 weights
 * as a weight stream: one CTA an SM (or two), persistent over a contiguous range of the matrix, a producer warp
 * bulk-copying (TMA) that range through a shared-memory ring without ever waiting on activations, consumer warps
 * running the product's own block decoders and dp4a dot products on it. Every variant is checked against a
 * double-precision CPU reference, then timed against the product's kernels (cuda_gemv, linked from
 * build/libmemra_backend_cuda.a) at the Llama-3-8B shapes, in one run. Not part of the build; written in sessions
 * without a GPU (lab/README.md), not yet run.
 *
 *   y[r] = Σ_i dequant(W)[r, i] · x[i]      W (rows, n) Q4_K / Q6_K / Q8_0 as stored in the GGUF file, x f32, prepared
 *                                            by cuda_gemv_prep_x (three signed byte planes, gemv_internal.cuh)
 *
 * Why (issue 5): the product reaches 84-85 % of 4.3 TB/s on lm_head but 22-64 % on the 2-66 MB matrices of a
 * layer (H200, 2026-12-05, kernel_gemv's table). Its GEMVs run short-lived blocks (4 warps, each owning 2-4 rows
 * with a 2-stage ring of ~9 KB, or 16-row mma tiles): a block asks for its whole share at once, waits a DRAM
 * latency, computes and exits, and the next wave of blocks pays the latency again; gate/up (896 blocks, 4-5 an SM)
 * runs 1.4-1.7 waves, so the last one streams on part of the chip. Here each SM streams one contiguous range from
 * start to end through a ring of 55-210 KB (at 4.3 TB/s an SM must keep ~33 KB in flight a µs of latency), the
 * ranges are even to one stage, so the latency is paid once a launch and there is no tail wave. What is left is
 * the launch's fixed part (the first bytes' latency, the last stage's compute). The early-trigger variants go at
 * that too: their CTA takes at most half an SM's shared memory and registers and triggers its dependents at its
 * top, so the next GEMV's CTA becomes resident beside it and fills its own ring (weights are constant: the
 * producer never waits on the previous kernel) while this one still streams — a chain of GEMVs then keeps DRAM
 * busy across launch boundaries. lab/persist/persist.cu (twentieth run) streamed at 83 % this way.
 *
 * The kernel (kernel_gemv_stream<Q, NC, MINB, XS>): NC consumer warps and one producer warp a CTA.
 * - Work: the rows in groups of R = 4; a group's K in kc chunks of cb superblocks; a stage = one (group, chunk) =
 *   R row pieces (kc = 1: R whole consecutive rows, one contiguous range, one bulk copy; else R copies of cb · BS
 *   bytes, each the 16-byte-aligned range around it). The stages in order (group-major) are split evenly among
 *   the CTAs: CTA c takes [c·S/G, (c+1)·S/G) — with kc = 1 a contiguous byte range of the matrix.
 * - Producer (one lane): stage j of the CTA into ring slot j % nslot once the slot's previous stage is released.
 * - Consumers: stage j goes to warp j % NC (nslot is a multiple of NC, so a slot always has the same consumer and
 *   its mbarrier parities cannot be confused). After the PDL wait the consumers copy the prepared x into shared
 *   memory (XS; else it is read through L1 like the product does); each warp then runs, a stage at a time, the
 *   lanes of the product's staged kernel (lane l: 32-element segment l % 8 of superblocks l / 8, +4, ...) with the
 *   product's decoders (gemv_quant_types.cuh get<true>) and exact integer dot (dot_qx) on R rows, releases the
 *   slot, sums each row over the warp (xor shuffles) and writes y (kc = 1) or the chunk's partial (kc > 1).
 * - kc > 1: after the last stage a row group's partials are summed in chunk order; a group whose chunks lie in
 *   two or more CTAs (a split K over CTAs) is finished by the CTA arriving last at the group's counter (an
 *   integer atomic; partials through global memory, fences around), in the same chunk order: no float atomics,
 *   and a row's bits depend only on cb — not on the grid, the CTA split or timing (checked across variants).
 *
 * Numerics: every operation on a row's segment is the product's (q_step, gemv_quant.cu); with kc = 1 the lane
 * order and the warp sum are too, so y has the bits of the product's staged dp4a kernel at ksplit 1 (checked
 * against cuda_gemv_variant(rows a warp 4, ksplit 1)). With kc > 1 each chunk is summed over the warp before the
 * chunks are added: another order, the same f32 error bound (checked against the double reference).
 *
 * Variants (five instantiations a type, three streams and two carried: NC 16 with up to 227 KB; NC 8 within half an
 * SM — 113 KB, 96 registers — with x in shared memory, or through L1 within 80 KB, leaving L1 ≥ 92 KB for x):
 *   big     1 CTA/SM, 16 consumer warps, the largest ring; dependents triggered after the CTA's work
 *   half    1 CTA/SM, 8 consumer warps, ≤ 113 KB: the next kernel's CTA fits beside it; trigger after the work
 *   half-e  the same, dependents triggered at the top: the next GEMV streams its ring while this one runs
 *   two     2 CTAs/SM of this kernel (half's instantiation), trigger after the work
 *   e-cb8   half-e with chunks of 8 superblocks: more, smaller stages, deeper rings, row groups split over warps
 *           and CTAs
 *   e-cb4   half-e with chunks of 4 superblocks
 *   e-xl1   half-e with x through L1 (__ldg) instead of shared memory
 *   carry   half-e's stream scheduled so that a row's sums keep the product's order (stream_carry.cuh: a warp
 *           owns whole row groups and carries their sums over the chunks): the engine's bits, checked bitwise —
 *           Q6_K / Q8_0 the staged dp4a kernel's (ksplit 1, as the engine runs them), Q4_K the tensor-core
 *           GEMV's (gemv_mma.cu) through a dp4a consumer that does its float operations in its order ("mq")
 *   carry16 carry on 16 consumer warps and all of the SM's shared memory
 *   carry-cb8  carry with chunks of 8 superblocks (Q8_0: 64 blocks)
 *   carry-dyn  carry-cb8 with the row groups taken in rounds of NC from a global counter (stream_carry.cuh) instead
 *           of a static split: balanced whatever SMs the CTAs land on (the "place" lines)
 *   carry-dyn2 carry-dyn with two CTAs an SM
 * The chunk, unless the variant fixes it: of 16, 12, 8, 4 superblocks the largest that fits a slot a warp, unless
 * a smaller one gives ≥ 10 % more ring; up to 4 slots a warp. Each variant's "cfg" line says what it ran (grid,
 * cb, kc, slots × KB, shared memory, CTAs an SM that fit), its "place" line where the CTAs of three launches
 * chained with PDL ran (the static split assumes one CTA an SM: "at most 2 a SM" on a 1-CTA/SM variant means an
 * SM streamed two ranges while another idled).
 *
 * Product forms timed beside (x prepared, the GEMV alone): "engine" = cuda_gemv_variant as the engine calls it
 * (ksplit 1; Q4_K on the int8 tensor cores, gemv_mma.cu; Q6_K and Q8_0 the staged dp4a kernel), and the dp4a kernels at rows a warp 1/2/4 ×
 * ksplit 1/4 and (Q6_K) the tensor cores in MEMRA_GEMV_MMA=all mode; "best product" is the fastest of them.
 *
 * Checks (before any timing of a shape): random valid blocks (tests/kernels/kernel_rng.h fill_random), x uniform in
 * [-1, 1) (odd shapes: every 61st element ×300, the activation blocks' scale), outputs poisoned with NaN, against
 * quant_dequantize_row + a double dot: max|Δ| / max|ref| ≤ 1e-4 (kernel_gemv's tolerance) and every output finite;
 * kc = 1: the product's staged dp4a bits; one cb: one set of bits across variants. Odd shapes: 5 rows (most CTAs
 * idle), rows not a multiple of 4, superblock counts not a multiple of the chunk, Q6_K rows not 16-byte aligned,
 * fewer stages than CTAs, groups split over 2-3 CTAs. The 8B shapes are checked on the timed data (their first
 * ≤ 8192 rows repeat through the matrix; the reference covers those).
 * Timing (tests/kernels/kernel_gemv.c's method): L = max(24, copies) launches rotating over copies of the matrix
 * that together exceed 4× the L2, captured as one CUDA graph after a warm-up, replayed 21 times between CUDA
 * events; the median µs a launch. "PDL" tables: consecutive GEMVs launched as the product launches them
 * (programmatic dependent launch); "serial" tables: without it (each waits for the one before to finish).
 * A watchdog thread ends the program (exit 3, "WATCHDOG ... skip=NAME") when a check or a timing does not finish
 * in 10 / 60 s: a barrier protocol error hangs rather than fails. lab/gemv-q-gpu.sh reruns with --skip NAME.
 *
 * Build (here; `make build` first, for the libraries in build):
 *   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Werror all-warnings -Xcompiler -Wall,-Wextra \
 *     -I src -I tests/kernels lab/gemv-q/gemv_q_test.cu build/libmemra_backend_cuda.a build/libmemra_quant.a \
 *     build/libmemra_model.a build/libmemra_format.a build/libmemra_core.a /usr/lib/x86_64-linux-gnu/libjansson.a \
 *     -lcublas -lcublasLt -lpthread -ldl -lrt -o gpu/gemv_q_test
 *   (--resource-usage: 95-96 registers, no spills, 1152 B of static shared memory, every instantiation)
 * Run (the GPU): gpu/gemv_q_test [--quick] [--skip NAME,NAME] [--reps N]   (--quick: checks only; ~1 min in all)
 *   — or lab/gemv-q-gpu.sh with carry ["gpu/gemv_q_test"].
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/gemv_quant_types.cuh"
#include "backend/cuda/tile_copy.cuh"

/* fill_random (valid random blocks) and, through it, quant_dequantize_row: C headers; core/log.h's _Noreturn is
 * C only */
#define _Noreturn [[noreturn]]
extern "C" {
#define KERNEL_RNG_SEED 0x6E6D76715F746573ull
#include "kernel_rng.h"
}
#undef _Noreturn

namespace {

/* ---- the streamed kernel (device) ---------------------------------------------------------------------------- */

constexpr uint32_t QK = 256;                    /* a superblock (stream_mq.cuh); the stream itself takes any Q::QK */
constexpr uint32_t R = 4;                       /* rows a stage; each x load serves all of them */
constexpr uint32_t NSLOT_MAX = 64;              /* ring slots (their mbarriers are static shared memory) */
constexpr uint32_t KC_MAX = 16;                 /* chunks a row at most */

struct sv_args {
    const uint8_t *w;  /* (rows, n) blocks, row r at r · rb; 16 readable bytes past the end (cuda_alloc) */
    uint64_t rb;       /* bytes a row */
    uint32_t rows, n, nblk;
    const uint8_t *xq; /* x prepared by cuda_gemv_prep_x: xq_stride(n) bytes (gemv_internal.cuh) */
    float *y;          /* (rows) */
    uint32_t cb, kc;   /* superblocks a chunk (a stage's K, a multiple of 4), chunks a row (≤ KC_MAX) */
    uint32_t nst;      /* stages: ceil(rows / R) groups × kc */
    uint32_t nslot, slot_bytes, pitch; /* ring slots (a multiple of the consumer warps), bytes a slot, a row
                                        * piece's pitch in a slot (kc > 1) */
    uint32_t x_off, part_off;          /* dynamic shared memory: x (XS), the stages' partial sums (kc > 1) */
    float *gpart;      /* (nst, R): partials of row groups split between CTAs */
    uint32_t *gcnt;    /* (groups): arrivals at a split group; every launch leaves them 0 */
    int early;         /* trigger the dependents at the top, else after the CTA's work */
    uint32_t *smid;    /* placement probe: each CTA's SM (grid), or NULL */
    uint32_t *dyn;     /* carry-dyn: the launch's pair of group counters (stream_carry.cuh), else NULL */
};

/* The CTAs' even split of the stages: CTA c takes [stage_begin(c), stage_begin(c + 1)); stage_owner inverts it. */
__host__ __device__ uint32_t stage_begin(uint32_t c, uint32_t nst, uint32_t G)
{
    return (uint32_t)((uint64_t)c * nst / G);
}
__device__ uint32_t stage_owner(uint32_t s, uint32_t nst, uint32_t G)
{
    return (uint32_t)(((uint64_t)(s + 1) * G - 1) / nst);
}

template <int NC> __device__ __forceinline__ void bar_consumers()
{
    asm volatile("bar.sync 1, %0;" ::"n"(NC * 32) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

/* Where row r of group g's chunk (first superblock b0) starts in its slot: kc = 1 the group's rows lie as in
 * memory after the misalignment of the group's start; else each row piece at its pitch, after its own. */
__device__ __forceinline__ uint32_t sv_row_offset(const sv_args &a, uint32_t g, uint32_t r, uint32_t b0, uint32_t bs)
{
    if (a.kc == 1)
        return r * (uint32_t)a.rb + (uint32_t)(reinterpret_cast<uintptr_t>(a.w + (uint64_t)g * R * a.rb) & 15);
    const uint8_t *src = a.w + ((uint64_t)g * R + r) * a.rb + (uint64_t)b0 * bs;
    return r * a.pitch + (uint32_t)(reinterpret_cast<uintptr_t>(src) & 15);
}

/* The 16-byte-aligned range around [src, src + len): its start in lo, its bytes returned. */
__device__ __forceinline__ uint32_t sv_range(const uint8_t *src, uint64_t len, uintptr_t &lo)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(src);
    lo = a & ~(uintptr_t)15;
    return (uint32_t)(((a + len + 15) & ~(uintptr_t)15) - lo);
}

/* Stage s of the matrix into the slot at dst, counted on bar: one copy (kc = 1) or one a row piece. */
template <class Q> __device__ void sv_issue_stage(const sv_args &a, uint32_t s, uint32_t dst, uint32_t bar, uint64_t pol)
{
    const uint32_t g = s / a.kc, c = s % a.kc, nr = min(R, a.rows - g * R);
    const uint32_t b0 = c * a.cb, nbk = min(a.cb, a.nblk - b0);
    uintptr_t lo[R];
    uint32_t len[R], total = 0;
    if (a.kc == 1) {
        len[0] = sv_range(a.w + (uint64_t)g * R * a.rb, nr * a.rb, lo[0]);
        total = len[0];
    } else {
#pragma unroll
        for (uint32_t r = 0; r < R; r++)
            if (r < nr) {
                len[r] = sv_range(a.w + ((uint64_t)g * R + r) * a.rb + (uint64_t)b0 * Q::BS, (uint64_t)nbk * Q::BS,
                                  lo[r]);
                total += len[r];
            }
    }
    mbar_expect(bar, total);
    const uint32_t pieces = a.kc == 1 ? 1 : nr;
#pragma unroll
    for (uint32_t r = 0; r < R; r++)
        if (r < pieces)
            bulk_copy_g2s(dst + r * a.pitch, reinterpret_cast<const void *>(lo[r]), len[r], bar, pol);
}

/* The producer lane: the CTA's nloc stages in order, each into slot j % nslot once its last stage is released. */
template <class Q>
__device__ void sv_produce(const sv_args &a, uint32_t s0, uint32_t nloc, uint32_t ring_s, uint32_t full_s,
                           uint32_t empty_s)
{
    const uint64_t pol = l2_evict_first_policy();
    for (uint32_t j = 0; j < nloc; j++) {
        const uint32_t slot = j % a.nslot, lap = j / a.nslot;
        if (lap > 0)
            mbar_wait(empty_s + 8 * slot, (lap - 1) & 1);
        sv_issue_stage<Q>(a, s0 + j, ring_s + slot * a.slot_bytes, full_s + 8 * slot, pol);
    }
}

/* One warp step of a lane on R rows: the product's q_step (gemv_quant.cu, batch 1), operation for operation,
 * with x from shared memory (XS) or through L1. */
template <class Q, bool XS>
__device__ __forceinline__ void sv_dot_step(const uint32_t (&q)[R][8], const float (&d)[R][2], const float (&m)[R][2],
                                            const uint8_t *x, uint32_t n, uint32_t e, float (&acc)[R])
{
    uint32_t x0[8], x1[8], x2[8];
    ld_a16<8, XS>(x + e, x0);
    ld_a16<8, XS>(x + n + e, x1);
    ld_a16<8, XS>(x + 2 * (uint64_t)n + e, x2);
    const float sx = ldq<XS>(reinterpret_cast<const float *>(x + 3 * (uint64_t)n) + e / 32);
    const float2 xs = ldq<XS>(reinterpret_cast<const float2 *>(x + xq_sum_off(n)) + e / 32); /* Σx of each 16 */
#pragma unroll
    for (uint32_t r = 0; r < R; r++) {
        float v = acc[r];
        if constexpr (Q::TWO_SCALES) {
            const float lo = dot_qx<Q::QSIGNED, 4>(q[r], x0, x1, x2);
            const float hi = dot_qx<Q::QSIGNED, 4>(q[r] + 4, x0 + 4, x1 + 4, x2 + 4);
            v = fmaf(sx, fmaf(d[r][0], lo, d[r][1] * hi), v);
            if constexpr (Q::HAS_M)
                v = fmaf(m[r][0], xs.x, fmaf(m[r][1], xs.y, v));
        } else {
            v = fmaf(d[r][0] * sx, dot_qx<Q::QSIGNED, 8>(q[r], x0, x1, x2), v);
            if constexpr (Q::HAS_M)
                v = fmaf(m[r][0], xs.x + xs.y, v);
        }
        acc[r] = v;
    }
}

/* A lane's sums of stage s (in the slot at st) for the R rows of its group, over the chunk's blocks, added to acc
 * (the carried stream, stream_carry.cuh, adds a row's chunks in one chain). */
template <class Q, bool XS>
__device__ void sv_stage_acc(const sv_args &a, uint32_t s, const uint8_t *st, const uint8_t *x, uint32_t lane,
                             const typename Q::lane_t &L, float (&acc)[R])
{
    const uint32_t g = s / a.kc, b0 = s % a.kc * a.cb, nbk = min(a.cb, a.nblk - b0);
    const uint8_t *rp[R];
#pragma unroll
    for (uint32_t r = 0; r < R; r++) {
        rp[r] = st + sv_row_offset(a, g, r, b0, Q::BS);
    }
    constexpr uint32_t S = Q::QK / 32, BPS = 32 / S; /* lanes: S segments of 32 a block, BPS blocks a step */
    const uint32_t e0 = b0 * Q::QK + 32 * (lane % S);
    /* two steps a trip (the next step's loads beside this one's dp4a) within the 96 registers a thread that 5
     * warps a sub-partition leave; with x through L1 (more address registers) that spilled: one */
#pragma unroll(XS ? 2 : 1)
    for (uint32_t b = lane / S; b < nbk; b += BPS) {
        uint32_t q[R][8];
        float d[R][2], m[R][2];
#pragma unroll
        for (uint32_t r = 0; r < R; r++)
            Q::template get<true>(rp[r] + b * Q::BS, L, q[r], d[r], m[r]);
        sv_dot_step<Q, XS>(q, d, m, x, a.n, e0 + b * Q::QK, acc);
    }
}

/* The same from zero: a stage's own sums. */
template <class Q, bool XS>
__device__ __forceinline__ void sv_stage_dot(const sv_args &a, uint32_t s, const uint8_t *st, const uint8_t *x,
                                             uint32_t lane, const typename Q::lane_t &L, float (&acc)[R])
{
#pragma unroll
    for (uint32_t r = 0; r < R; r++)
        acc[r] = 0.0f;
    sv_stage_acc<Q, XS>(a, s, st, x, lane, L, acc);
}

/* The warp's sums of local stage j (global s): y directly (kc = 1), else its partials. */
__device__ __forceinline__ void sv_stage_store(const sv_args &a, uint32_t s, uint32_t j, float (&acc)[R], float *part,
                                               uint32_t lane)
{
#pragma unroll
    for (uint32_t r = 0; r < R; r++)
        acc[r] = warp_sum(acc[r]);
    if (lane != 0)
        return;
#pragma unroll
    for (uint32_t r = 0; r < R; r++) {
        if (a.kc > 1)
            part[j * R + r] = acc[r];
        else if (s * R + r < a.rows)
            a.y[s * R + r] = acc[r];
    }
}

/* The prepared x into shared memory (the consumers' threads, after the PDL wait). */
template <int NC> __device__ void sv_load_x(const sv_args &a, uint8_t *xs)
{
    const uint4 *src = reinterpret_cast<const uint4 *>(a.xq);
    uint4 *dst = reinterpret_cast<uint4 *>(xs);
    const uint32_t cnt = (uint32_t)(xq_stride(a.n) / 16);
#pragma unroll 4
    for (uint32_t i = threadIdx.x; i < cnt; i += NC * 32)
        dst[i] = __ldcg(src + i);
}

/* The consumers' x: the prepared vector copied into shared memory (XS; all consumer threads, then their barrier),
 * else read where it is, through L1. */
template <int NC, bool XS> __device__ __forceinline__ const uint8_t *sv_x(const sv_args &a, uint8_t *sm)
{
    if constexpr (!XS)
        return a.xq;
    sv_load_x<NC>(a, sm + a.x_off);
    bar_consumers<NC>();
    return sm + a.x_off;
}

/* Groups g0 (and g1 when n2 = 2) are shared with other CTAs, whose partials of them are (or will be) in gpart
 * with this CTA's: each CTA counts itself in; the last sums the group's chunks in order into y and resets the
 * counter. Called by all consumer threads. */
template <int NC> __device__ void sv_split_finish(const sv_args &a, uint32_t g0, uint32_t g1, uint32_t n2)
{
    __shared__ uint32_t last[2];
    __threadfence();
    bar_consumers<NC>();
    const uint32_t t = threadIdx.x;
    if (t < n2) { /* the CTAs holding a stage of the group: one first stage each (CTAs without stages hold none) */
        const uint32_t g = t ? g1 : g0, f = g * a.kc;
        uint32_t want = 0;
        for (uint32_t s = f; s < f + a.kc; s++)
            want += s == f || stage_begin(stage_owner(s, a.nst, gridDim.x), a.nst, gridDim.x) == s;
        last[t] = atomicAdd(a.gcnt + g, 1u) == want - 1;
    }
    bar_consumers<NC>();
    if (t >= n2 * R || !last[t / R])
        return;
    __threadfence();
    const uint32_t g = t / R ? g1 : g0, r = t % R, row = g * R + r;
    const float *p = a.gpart + (uint64_t)g * a.kc * R + r;
    float v[KC_MAX];
#pragma unroll
    for (uint32_t c = 0; c < KC_MAX; c++)
        v[c] = c < a.kc ? __ldcg(p + c * R) : 0.0f;
    float sum = v[0];
#pragma unroll
    for (uint32_t c = 1; c < KC_MAX; c++)
        if (c < a.kc)
            sum += v[c];
    if (row < a.rows)
        a.y[row] = sum;
    if (r == 0)
        atomicExch(a.gcnt + g, 0u);
}

/* kc > 1, after the CTA's last stage: every group wholly in [s0, s1) summed (chunk order) into y; the partials of
 * a group shared with a neighbour into gpart, then sv_split_finish. Called by all consumer threads. */
template <int NC> __device__ void sv_combine(const sv_args &a, uint32_t s0, uint32_t s1, const float *part)
{
    const uint32_t kc = a.kc, glo = s0 / kc, ghi = (s1 - 1) / kc;
    for (uint32_t i = threadIdx.x; i < (ghi - glo + 1) * R; i += NC * 32) {
        const uint32_t g = glo + i / R, r = i % R, f = g * kc, row = g * R + r;
        if (f >= s0 && f + kc <= s1) {
            if (row < a.rows) {
                float v = part[(f - s0) * R + r];
                for (uint32_t c = 1; c < kc; c++)
                    v += part[(f + c - s0) * R + r];
                a.y[row] = v;
            }
        } else {
            for (uint32_t s = max(f, s0); s < min(f + kc, s1); s++)
                a.gpart[(uint64_t)s * R + r] = part[(s - s0) * R + r];
        }
    }
    const bool lo_split = glo * kc < s0, hi_split = (ghi + 1) * kc > s1;
    if (lo_split && hi_split && glo != ghi)
        sv_split_finish<NC>(a, glo, ghi, 2);
    else if (lo_split || hi_split)
        sv_split_finish<NC>(a, lo_split ? glo : ghi, 0, 1);
}

/* The consumer warps: x, then stage j = warp, warp + NC, ... of the CTA's [s0, s1), then (kc > 1) the sums. */
template <class Q, int NC, bool XS>
__device__ void sv_consume(const sv_args &a, uint32_t s0, uint32_t s1, uint8_t *sm, uint32_t full_s,
                           uint32_t empty_s)
{
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, nloc = s1 - s0;
    if (nloc == 0)
        return;
    const uint8_t *x = sv_x<NC, XS>(a, sm);
    float *part = reinterpret_cast<float *>(sm + a.part_off);
    const typename Q::lane_t L = Q::lane((int)(lane % (Q::QK / 32)));
    for (uint32_t j = warp; j < nloc; j += NC) {
        const uint32_t slot = j % a.nslot;
        mbar_wait(full_s + 8 * slot, (j / a.nslot) & 1);
        float acc[R];
        sv_stage_dot<Q, XS>(a, s0 + j, sm + slot * a.slot_bytes, x, lane, L, acc);
        __syncwarp(); /* every lane is done with the slot */
        if (lane == 0)
            mbar_arrive(empty_s + 8 * slot);
        sv_stage_store(a, s0 + j, j, acc, part, lane);
    }
    if (a.kc > 1) {
        bar_consumers<NC>();
        sv_combine<NC>(a, s0, s1, part);
    }
}

/* Every CTA's start (both stream kernels): the slots' full / empty barriers, the placement probe, then the early
 * trigger of the dependents (a.early). */
__device__ __forceinline__ void sv_prologue(const sv_args &a, uint32_t full_s, uint32_t empty_s)
{
    if (threadIdx.x == 0) {
        for (uint32_t i = 0; i < a.nslot; i++) {
            mbar_init(full_s + 8 * i, 1);
            mbar_init(empty_s + 8 * i, 1);
        }
        mbar_init_fence();
    }
    if (a.smid && threadIdx.x == 0) {
        uint32_t id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        a.smid[blockIdx.x] = id;
    }
    __syncthreads();
    if (a.early)
        pdl_trigger();
}

/* NC consumer warps + 1 producer warp; MINB CTAs an SM for the register bound; XS: x in shared memory. Dynamic
 * shared memory: the ring (nslot × slot_bytes), x (XS), the partials (kc > 1). */
template <class Q, int NC, int MINB, bool XS>
__global__ void __launch_bounds__((NC + 1) * 32, MINB) kernel_gemv_stream(const sv_args a)
{
    extern __shared__ __align__(128) uint8_t sm[];
    __shared__ __align__(8) uint64_t bars[2 * NSLOT_MAX]; /* full[slot], then empty[slot] */
    const uint32_t s0 = stage_begin(blockIdx.x, a.nst, gridDim.x), s1 = stage_begin(blockIdx.x + 1, a.nst, gridDim.x);
    const uint32_t full_s = smem_u32(bars), empty_s = full_s + 8 * NSLOT_MAX;
    sv_prologue(a, full_s, empty_s);
    if (threadIdx.x / 32 == NC) { /* the producer touches weights only: no PDL wait */
        if (threadIdx.x % 32 == 0)
            sv_produce<Q>(a, s0, s1 - s0, smem_u32(sm), full_s, empty_s);
        return;
    }
    pdl_wait();
    sv_consume<Q, NC, XS>(a, s0, s1, sm, full_s, empty_s);
    if (!a.early)
        pdl_trigger();
}

#include "stream_carry.cuh" /* kernel_gemv_carry: the stream in the product's order (its bits; Q4_K: mq) */

/* ---- host: the variants and their launch plans ---------------------------------------------------------------- */

#define CK(call) CUDA_CHECK(call)

enum kind { K_BIG, K_HALF, K_HALF_L1, K_C16, K_C8, NKIND }; /* K_C*: kernel_gemv_carry (stream_carry.cuh) */
bool is_carry(int kind) { return kind == K_C16 || kind == K_C8; }
typedef void (*sv_kernel)(const sv_args);

struct kern_info {
    const char *what;
    int nc;
    bool xs;
    sv_kernel fn;
    cudaFuncAttributes fa;
};

struct type_info {
    enum dtype t;
    const char *name;
    uint32_t qk, bs; /* elements and bytes a block */
    kern_info k[NKIND];
};

/* A type's five instantiations (in enum kind's order): its three streams, then its two carried forms with
 * consumer C (cc_mq for Q4_K: the tensor-core GEMV's order; cc_dp4a otherwise); block size and bytes from Q. */
template <class Q, class C> type_info type_row(enum dtype t, const char *name)
{
    constexpr bool mq = std::is_same<C, cc_mq>::value;
    return {t, name, (uint32_t)Q::QK, (uint32_t)Q::BS,
            {{"NC 16, 1 CTA/SM, x in smem", 16, true, kernel_gemv_stream<Q, 16, 1, true>, {}},
             {"NC 8, 2 CTAs/SM fit, x in smem", 8, true, kernel_gemv_stream<Q, 8, 2, true>, {}},
             {"NC 8, 2 CTAs/SM fit, x via L1", 8, false, kernel_gemv_stream<Q, 8, 2, false>, {}},
             {mq ? "carry mq: NC 16, 1 CTA/SM, x in smem" : "carry: NC 16, 1 CTA/SM, x in smem", 16, true,
              kernel_gemv_carry<C, 16, 1, true>, {}},
             {mq ? "carry mq: NC 8, 2 CTAs/SM fit, x in smem" : "carry: NC 8, 2 CTAs/SM fit, x in smem", 8, true,
              kernel_gemv_carry<C, 8, 2, true>, {}}}};
}

constexpr int NTYPE = 3;
type_info g_types[NTYPE] = {
    type_row<qt_q4_k, cc_mq>(DTYPE_Q4_K, "Q4_K"),
    type_row<qt_q6_k, cc_dp4a<qt_q6_k>>(DTYPE_Q6_K, "Q6_K"),
    /* Q8_0: blocks of 32, a lane a block, 32 blocks a step, as the product's staged kernel */
    type_row<qt_q8_0, cc_dp4a<qt_q8_0>>(DTYPE_Q8_0, "Q8_0"),
};

struct variant {
    const char *name;
    int kind, cps; /* instantiation; CTAs an SM in the grid */
    uint32_t cb;   /* superblocks a chunk; 0: the chunk (≤ 16) that gives the largest ring */
    bool early;    /* trigger the dependents at the top */
    bool dyn;      /* carry: rounds of groups from a global counter instead of a static split */
};

const variant g_variants[] = {
    {"big", K_BIG, 1, 0, false, false},      {"half", K_HALF, 1, 0, false, false},
    {"half-e", K_HALF, 1, 0, true, false},   {"two", K_HALF, 2, 0, false, false},
    {"e-cb8", K_HALF, 1, 8, true, false},    {"e-cb4", K_HALF, 1, 4, true, false},
    {"e-xl1", K_HALF_L1, 1, 0, true, false},
    /* the product's order (stream_carry.cuh; Q4_K: the tensor-core GEMV's), NC 8 within half an SM, NC 16 on all
     * of it, chunks of 8 superblocks (Q8_0: 64 blocks) */
    {"carry", K_C8, 1, 0, true, false},      {"carry16", K_C16, 1, 0, true, false},
    {"carry-cb8", K_C8, 1, 8, true, false},
    /* carry with the groups taken in rounds from a counter (placement-proof), and with it two CTAs an SM */
    {"carry-dyn", K_C8, 1, 8, true, true}, {"carry-dyn2", K_C8, 2, 8, true, true},
};
constexpr int NVAR = sizeof g_variants / sizeof g_variants[0];
constexpr uint32_t L1_KEEP = 32 * 1024; /* x through L1: each of the two CTAs leaves this much of the SM to L1 */

struct dev_info {
    int sms, optin, per_sm, reserved; /* SMs; shared memory bytes: a block at most, an SM, reserved a block */
};

struct plan {
    bool ok, dyn; /* dyn: the variant takes its groups from a counter pair (sv_launch picks it) */
    sv_args a;
    uint32_t grid, threads, smem, depth;
    int fit; /* CTAs an SM that fit (occupancy) */
};

struct scratch {
    float *gpart;
    uint32_t *gcnt;
    uint64_t gpart_n, gcnt_n;
};

uint32_t round16(uint64_t v) { return (uint32_t)((v + 15) & ~(uint64_t)15); }

/* Shared memory a CTA of this kind may take, less the kernel's static part: the opt-in maximum (big); half an SM
 * less the per-block reserve (two CTAs fit: this kernel's and the next one's); with x through L1, 32 KB less. */
uint32_t smem_budget(int kind, const kern_info &k, const dev_info &dv)
{
    const int total = kind == K_BIG || kind == K_C16
                          ? dv.optin
                          : dv.per_sm / 2 - dv.reserved - (kind == K_HALF_L1 ? (int)L1_KEEP : 0);
    return (uint32_t)(total - (int)k.fa.sharedSizeBytes);
}

/* Ring and layout for chunks of cb superblocks; p.ok false when not one slot a warp fits. */
plan plan_for_cb(const type_info &ti, const variant &v, const dev_info &dv, uint64_t rows, uint64_t n, uint32_t cb)
{
    const kern_info &k = ti.k[v.kind];
    plan p = {};
    const uint32_t nblk = (uint32_t)(n / ti.qk), G = (uint32_t)dv.sms * v.cps, groups = (uint32_t)((rows + R - 1) / R);
    const uint64_t rb = (uint64_t)nblk * ti.bs;
    const uint32_t budget = smem_budget(v.kind, k, dv), xb = k.xs ? (uint32_t)xq_stride(n) : 0;
    const uint32_t kc = (nblk + cb - 1) / cb, pitch = kc == 1 ? 0 : round16((uint64_t)cb * ti.bs) + 32;
    const uint32_t slot = kc == 1 ? round16(R * rb) + 32 : R * pitch;
    /* carry: whole groups a CTA (no partials), chunks of whole warp steps (a lane's blocks continue) */
    const bool carry = is_carry(v.kind);
    const uint32_t part = kc == 1 || carry ? 0 : round16(((uint64_t)groups * kc + G - 1) / G * R * 4);
    const uint32_t depth = std::min(4u, (budget > xb + part ? budget - xb - part : 0) / (k.nc * slot));
    if (depth < 1 || kc > KC_MAX || (carry && kc > 1 && cb % (32 / (ti.qk / 32)) != 0))
        return p;
    sv_args &a = p.a;
    a.rb = rb, a.rows = (uint32_t)rows, a.n = (uint32_t)n, a.nblk = nblk;
    a.cb = cb, a.kc = kc, a.nst = carry ? groups : groups * kc;
    a.nslot = k.nc * depth, a.slot_bytes = slot, a.pitch = pitch;
    a.x_off = a.nslot * slot, a.part_off = a.x_off + xb;
    a.early = v.early;
    a.dyn = nullptr; /* set at each launch (sv_launch) for the dyn variants */
    p.dyn = v.dyn;
    p.grid = G, p.threads = (uint32_t)(k.nc + 1) * 32, p.smem = a.part_off + part, p.depth = depth;
    p.ok = true;
    return p;
}

bool g_no_device; /* --plans: the plans printed from the H200's limits, no device touched */

/* The launch plan of variant v on a (rows, n) matrix: the variant's chunk, or (cb 0) of the chunks of 16, 12, ...
 * superblocks (at most KC_MAX a row) the largest that fits at least one slot a warp, unless a smaller one gives
 * ≥ 10 % more ring; up to 4 slots a warp. */
plan make_plan(const type_info &ti, const variant &v, const dev_info &dv, const scratch &sc, uint64_t rows,
               uint64_t n, const uint8_t *xq, float *y)
{
    /* cb in blocks, in steps of a warp step's blocks u (4 superblocks; 32 blocks of 32); a variant's cb is in
     * superblocks (× u / 4) */
    const uint32_t u = 32 / (ti.qk / 32), nblk = (uint32_t)(n / ti.qk), cb_min = std::max(1u, (nblk + KC_MAX - 1) / KC_MAX);
    plan best = {};
    uint64_t best_ring = 0;
    for (uint32_t cb = std::min(v.cb ? v.cb * u / 4 : 4 * u, nblk); cb >= cb_min; cb = (cb - 1) / u * u) {
        const plan p = plan_for_cb(ti, v, dv, rows, n, std::max(cb, cb_min));
        const uint64_t ring = p.ok ? (uint64_t)p.a.nslot * p.a.slot_bytes : 0;
        if (ring * 10 > best_ring * 11)
            best = p, best_ring = ring;
        if (v.cb || cb <= u)
            break;
    }
    if (!best.ok || (uint64_t)best.a.nst * R > sc.gpart_n || best.a.nst / best.a.kc > sc.gcnt_n)
        return plan{};
    best.a.xq = xq, best.a.y = y, best.a.gpart = sc.gpart, best.a.gcnt = sc.gcnt;
    if (!g_no_device)
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&best.fit, ti.k[v.kind].fn, (int)best.threads, best.smem));
    return best;
}

/* ---- host: context, watchdog, timing -------------------------------------------------------------------------- */

struct cuda_ctx *g_ctx;
int g_reps = 21;
int g_fail = 0;

std::atomic<long long> g_deadline{0}; /* steady-clock ms after which the watchdog ends the program; 0: none */
char g_watch_what[192];

long long now_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/* Arm the watchdog for `sec` seconds: what (printed if it fires) ends with "skip=NAME" for a variant. */
void watch(int sec, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_watch_what, sizeof g_watch_what, fmt, ap);
    va_end(ap);
    g_deadline.store(now_ms() + 1000LL * sec);
}
void watch_off() { g_deadline.store(0); }

void watchdog_loop()
{
    for (;;) {
        usleep(100000);
        const long long d = g_deadline.load();
        if (d != 0 && now_ms() > d) {
            printf("\nWATCHDOG: %s did not finish in time (a hung kernel?): exiting\n", g_watch_what);
            fflush(stdout);
            _exit(3);
        }
    }
}

typedef std::function<void(int copy, bool pdl)> launch_fn;

/* Median µs a launch: L = max(24, copies) launches rotating over the copies, one graph, g_reps replays. */
double time_graph(const launch_fn &f, int ncopies, bool pdl, const char *label)
{
    const int L = std::max(24, ncopies);
    watch(60, "timing %s", label);
    for (int i = 0; i < std::max(4, ncopies); i++) /* warm-up: first-launch setup outside the graph */
        f(i % ncopies, pdl);
    cuda_ctx_sync(g_ctx);
    cuda_graph_begin(g_ctx);
    for (int i = 0; i < L; i++)
        f(i % ncopies, pdl);
    struct cuda_graph *g = cuda_graph_end(g_ctx);
    struct cuda_timer *tm = cuda_timer_new();
    cuda_graph_launch(g_ctx, g);
    std::vector<double> us((size_t)g_reps);
    for (int r = 0; r < g_reps; r++) {
        cuda_timer_start(g_ctx, tm);
        cuda_graph_launch(g_ctx, g);
        cuda_timer_stop(g_ctx, tm);
        us[(size_t)r] = 1000.0 * cuda_timer_ms(tm) / L;
    }
    cuda_ctx_sync(g_ctx);
    cuda_timer_free(tm);
    cuda_graph_free(g);
    watch_off();
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

uint32_t *g_dyn;   /* 8 pairs of group counters (the dyn variants), zero between launches */
uint32_t g_dyn_k;  /* the next launch's pair */

void sv_launch(const plan &p, const kern_info &k, const uint8_t *w, bool pdl, uint32_t *smid = nullptr)
{
    sv_args a = p.a;
    a.w = w, a.smid = smid;
    if (p.dyn) /* consecutive launches on distinct pairs: one let in early never shares a running one's */
        a.dyn = g_dyn + 2 * (g_dyn_k++ % 8);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(p.grid);
    cfg.blockDim = dim3(p.threads);
    cfg.dynamicSmemBytes = p.smem;
    cfg.stream = g_ctx->stream;
    cfg.attrs = at;
    cfg.numAttrs = pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, k.fn, a));
}

/* ---- host: matrices and the reference ------------------------------------------------------------------------ */

struct mat {
    enum dtype t;
    uint64_t rows, n, rb, bytes, prow; /* prow: the first rows, repeated through the whole matrix */
    int ncopies;
    std::vector<uint8_t *> w; /* device copies */
    float *dx, *dy;
    std::vector<float> x;
    std::vector<double> ref; /* (prow) */
};

/* Random valid weights (prow ≤ 8192 distinct rows, tiled on the device), ncopies copies, x (outliers: every
 * 61st element ×300), x prepared in the context, and the double reference of the distinct rows. */
void mat_make(mat &m, enum dtype t, uint64_t rows, uint64_t n, int ncopies, bool outliers)
{
    m.t = t, m.rows = rows, m.n = n, m.rb = row_bytes_of(t, n), m.bytes = rows * m.rb, m.ncopies = ncopies;
    m.prow = std::min<uint64_t>(rows, 8192);
    std::vector<uint8_t> pat(m.prow * m.rb);
    fill_random(t, pat.data(), pat.size());
    m.w.assign((size_t)ncopies, nullptr);
    for (auto &p : m.w)
        p = static_cast<uint8_t *>(cuda_alloc(m.bytes));
    cuda_upload(g_ctx, m.w[0], pat.data(), pat.size());
    for (uint64_t done = pat.size(); done < m.bytes;) { /* tile by doubling */
        const uint64_t c = std::min(done, m.bytes - done);
        CK(cudaMemcpyAsync(m.w[0] + done, m.w[0], c, cudaMemcpyDeviceToDevice, g_ctx->stream));
        done += c;
    }
    for (int i = 1; i < ncopies; i++)
        CK(cudaMemcpyAsync(m.w[(size_t)i], m.w[0], m.bytes, cudaMemcpyDeviceToDevice, g_ctx->stream));
    m.x.resize(n);
    for (uint64_t i = 0; i < n; i++)
        m.x[i] = rng_unit() * (outliers && i % 61 == 7 ? 300.0f : 1.0f);
    m.dx = static_cast<float *>(cuda_alloc(4 * n));
    m.dy = static_cast<float *>(cuda_alloc(4 * rows));
    cuda_upload(g_ctx, m.dx, m.x.data(), 4 * n);
    cuda_gemv_prep_x(g_ctx, m.dx, n, 1);
    cuda_ctx_sync(g_ctx);
    m.ref.assign(m.prow, 0.0);
    const unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (unsigned k = 0; k < nt; k++)
        th.emplace_back([&m, &pat, k, nt]() {
            std::vector<float> row(m.n);
            for (uint64_t r = k; r < m.prow; r += nt) {
                if (quant_dequantize_row(m.t, pat.data() + r * m.rb, row.data(), m.n) != 0)
                    abort();
                double s = 0;
                for (uint64_t i = 0; i < m.n; i++)
                    s += (double)row[i] * (double)m.x[i];
                m.ref[r] = s;
            }
        });
    for (auto &t2 : th)
        t2.join();
}

void mat_free(mat &m)
{
    for (auto p : m.w)
        cuda_free(p);
    cuda_free(m.dx);
    cuda_free(m.dy);
    m.w.clear();
}

/* One launch on copy 0 into a NaN-poisoned y, under the watchdog; y downloaded. */
void run_once(const mat &m, const launch_fn &f, std::vector<float> &y, const char *label)
{
    cuda_fill_nan_f32(g_ctx, m.dy, m.rows);
    watch(10, "check %s", label);
    f(0, false);
    cuda_ctx_sync(g_ctx);
    watch_off();
    y.resize(m.rows);
    cuda_download(g_ctx, y.data(), m.dy, 4 * m.rows);
}

/* max|y − ref| / max|ref| over the finite outputs (row r against ref[r % prow]); non-finite ones counted in bad. */
double rel_err(const mat &m, const std::vector<float> &y, int &bad)
{
    double md = 0, mr = 0;
    bad = 0;
    for (uint64_t r = 0; r < m.rows; r++) {
        const double ref = m.ref[r % m.prow];
        mr = std::max(mr, fabs(ref));
        if (!std::isfinite(y[r]))
            bad++;
        else
            md = std::max(md, fabs((double)y[r] - ref));
    }
    return mr > 0 ? md / mr : md;
}

/* ---- host: the product's forms -------------------------------------------------------------------------------- */

struct pform {
    const char *name;
    int rpb, ks; /* cuda_gemv_variant's rows a warp and ksplit (0, 1: the engine's call, cuda_decode_step.c: rows a
                  * warp by shape, ksplit 1 — Q4_K's tensor-core kernel takes its K split by n) */
    bool mma_all; /* MEMRA_GEMV_MMA=all for this launch (Q6_K on the tensor cores) */
};
const pform g_pforms[] = {
    {"engine", 0, 1, false},     {"dp4a R1 ks1", 1, 1, false}, {"dp4a R2 ks1", 2, 1, false},
    {"dp4a R4 ks1", 4, 1, false}, {"dp4a R1 ks4", 1, 4, false}, {"dp4a R2 ks4", 2, 4, false},
    {"dp4a R4 ks4", 4, 4, false}, {"mma all", 0, 0, true},
};
constexpr int NPF = sizeof g_pforms / sizeof g_pforms[0];
constexpr int PF_DP4A_R4 = 3; /* the bits of kc = 1 */
int g_mma_default;

launch_fn prod_fn(const mat &m, const pform &f)
{
    return [&m, f](int copy, bool pdl) {
        const bool saved = g_ctx->pdl;
        g_ctx->pdl = pdl && saved;
        if (f.mma_all)
            cuda_ctx_set_gemv_mma(g_ctx, CUDA_GEMV_MMA_ALL, 0);
        cuda_gemv_variant(g_ctx, m.t, m.w[(size_t)copy], m.rows, m.n, m.dx, 1, m.dy, 1.0f, f.rpb, f.ks,
                          CUDA_GEMV_X_PREPARED);
        if (f.mma_all)
            cuda_ctx_set_gemv_mma(g_ctx, g_mma_default, 0);
        g_ctx->pdl = saved;
    };
}

/* ---- host: one shape ------------------------------------------------------------------------------------------ */

struct shape {
    const char *name;
    uint64_t rows, n;
};
const shape g_shapes[] = {
    {"q/o", 4096, 4096},      {"k/v", 1024, 4096},   {"qkv", 6144, 4096},      {"gate/up", 14336, 4096},
    {"gate+up", 28672, 4096}, {"down", 4096, 14336}, {"lm_head", 128256, 4096},
};
constexpr int NSHAPE = sizeof g_shapes / sizeof g_shapes[0];
const shape g_odd[] = {{"odd", 5, 4096}, {"odd", 37, 4352}, {"odd", 257, 14336}, {"odd", 1031, 4096},
                       {"odd", 300, 2048}, {"odd", 40, 768}}; /* n < 1024: the tensor-core GEMV's K split 1 */

struct result {
    double pdl[NPF + NVAR], serial[1 + NVAR]; /* µs: product forms then variants; engine then variants */
    double mb;
    int best_pf;
};
result g_res[NTYPE][NSHAPE];

dev_info g_dev;
scratch g_sc;
uint32_t *g_smid; /* the placement probe's (3, 2 · SMs) */
std::vector<std::string> g_skip;

bool skipped(const char *name) { return std::find(g_skip.begin(), g_skip.end(), name) != g_skip.end(); }

/* Where the CTAs of three launches chained with PDL ran: the static split assumes one CTA an SM (cps), which a
 * launch whose CTAs start while the one before still holds SMs might not get. Prints, a launch, the SMs used and
 * the most CTAs one SM ran (more than cps: some SM streamed two ranges, another idled). */
void probe_placement(const plan &p, const kern_info &k, const mat &m, const char *label, uint32_t *dsmid)
{
    watch(10, "placement %s", label);
    for (int i = 0; i < 3; i++)
        sv_launch(p, k, m.w[(size_t)(i % m.ncopies)], true, dsmid + (size_t)i * p.grid);
    cuda_ctx_sync(g_ctx);
    watch_off();
    std::vector<uint32_t> ids(3 * (size_t)p.grid);
    cuda_download(g_ctx, ids.data(), dsmid, 4 * ids.size());
    printf("place %-40s", label);
    for (int i = 0; i < 3; i++) {
        std::map<uint32_t, int> per;
        for (uint32_t c = 0; c < p.grid; c++)
            per[ids[(size_t)i * p.grid + c]]++;
        int most = 0;
        for (auto &e : per)
            most = std::max(most, e.second);
        printf(" launch %d: %zu SMs, at most %d a SM;", i + 1, per.size(), most);
    }
    printf("\n");
}

/* Checks the product's engine form and dp4a R4 ks1 (the harness's sanity, and the kc = 1 bits) and every
 * variant on m; fills plans. */
void check_shape(const type_info &ti, const mat &m, const char *sname, plan (&plans)[NVAR])
{
    std::vector<float> ye, yp, y; /* the engine's y (the mq variants' bits), dp4a R4 ks1's (kc = 1's), a variant's */
    char label[160];
    for (int f : {0, PF_DP4A_R4}) {
        snprintf(label, sizeof label, "%s %s %" PRIu64 "x%" PRIu64 " product %s", ti.name, sname, m.rows, m.n,
                 g_pforms[f].name);
        run_once(m, prod_fn(m, g_pforms[f]), f == 0 ? ye : yp, label);
        int bad;
        const double rel = rel_err(m, f == 0 ? ye : yp, bad);
        const bool ok = bad == 0 && rel <= 1e-4;
        g_fail += !ok;
        printf("check %-40s rel %.2e%s\n", label, rel, ok ? "" : "  FAIL");
    }
    std::map<uint32_t, std::vector<float>> by_cb; /* the first variant's y at each cb (the mq ones: one key) */
    for (int v = 0; v < NVAR; v++) {
        const variant &vr = g_variants[v];
        const kern_info &k = ti.k[vr.kind];
        plans[v] = make_plan(ti, vr, g_dev, g_sc, m.rows, m.n, (const uint8_t *)g_ctx->xq, m.dy);
        const plan &p = plans[v];
        snprintf(label, sizeof label, "%s %s %" PRIu64 "x%" PRIu64 " %s", ti.name, sname, m.rows, m.n, vr.name);
        if (skipped(vr.name) || !p.ok) {
            printf("check %-40s %s\n", label, skipped(vr.name) ? "skipped" : "n/a (no plan fits)");
            continue;
        }
        printf("cfg   %-40s grid %u x %u thr, cb %u kc %u, %u stages (%.1f a CTA), %u slots x %.1f KB, smem %.1f KB,"
               " %d CTAs/SM fit\n",
               label, p.grid, p.threads, p.a.cb, p.a.kc, p.a.nst, (double)p.a.nst / p.grid, p.a.nslot,
               p.a.slot_bytes / 1024.0, p.smem / 1024.0, p.fit);
        char wl[200];
        snprintf(wl, sizeof wl, "%s skip=%s", label, vr.name);
        run_once(m, [&p, &k, &m](int c, bool pdl) { sv_launch(p, k, m.w[(size_t)c], pdl); }, y, wl);
        int bad;
        const double rel = rel_err(m, y, bad);
        /* carry: the engine's bits (Q4_K's tensor-core kernel; the other types' ksplit-1 dp4a) */
        const bool carry = is_carry(vr.kind), mq = carry && ti.t == DTYPE_Q4_K;
        const bool same_p = memcmp(y.data(), (carry ? ye : yp).data(), 4 * m.rows) == 0;
        std::vector<float> &first = by_cb[carry ? ~0u : p.a.cb];
        const bool same_cb = first.empty() || memcmp(y.data(), first.data(), 4 * m.rows) == 0;
        if (first.empty())
            first = y;
        if (m.ncopies > 1)
            probe_placement(p, k, m, label, g_smid);
        const bool ok = bad == 0 && rel <= 1e-4 && (p.a.kc > 1 || same_p) && (!carry || same_p) && same_cb;
        g_fail += !ok;
        printf("check %-40s rel %.2e, %d not finite, %s, %s%s\n", label, rel, bad,
               mq ? (same_p ? "= engine (tensor-core) bits" : "DIFFERS from the engine's tensor-core bits")
               : carry ? (same_p ? "= product dp4a bits (carried)" : "DIFFERS from product dp4a bits (carried)")
               : p.a.kc == 1 ? (same_p ? "= product dp4a bits" : "DIFFERS from product dp4a bits")
                             : (same_p ? "= product dp4a bits (kc > 1)" : "own order (kc > 1)"),
               same_cb ? "same bits as the other variants of its cb" : "DIFFERS from another variant of its cb",
               ok ? "" : "  FAIL");
    }
    fflush(stdout);
}

/* Times the product's forms and the variants on m (PDL and serial). */
void time_shape(const type_info &ti, const mat &m, const char *sname, const plan (&plans)[NVAR], result &res)
{
    char label[160];
    res.best_pf = 0;
    for (int f = 0; f < NPF; f++) {
        res.pdl[f] = 0;
        if (g_pforms[f].mma_all && ti.t != DTYPE_Q6_K)
            continue; /* Q4_K's engine form is the tensor-core kernel already */
        snprintf(label, sizeof label, "%s %s product %s", ti.name, sname, g_pforms[f].name);
        res.pdl[f] = time_graph(prod_fn(m, g_pforms[f]), m.ncopies, true, label);
        if (res.pdl[f] < res.pdl[res.best_pf]) /* [0], the engine, is always timed */
            res.best_pf = f;
    }
    snprintf(label, sizeof label, "%s %s product engine serial", ti.name, sname);
    res.serial[0] = time_graph(prod_fn(m, g_pforms[0]), m.ncopies, false, label);
    for (int v = 0; v < NVAR; v++) {
        const variant &vr = g_variants[v];
        const plan &p = plans[v];
        res.pdl[NPF + v] = res.serial[1 + v] = 0;
        if (!p.ok || skipped(vr.name))
            continue;
        const kern_info &k = ti.k[vr.kind];
        launch_fn f = [&p, &k, &m](int c, bool pdl) { sv_launch(p, k, m.w[(size_t)c], pdl); };
        snprintf(label, sizeof label, "%s %s %s skip=%s", ti.name, sname, vr.name, vr.name);
        res.pdl[NPF + v] = time_graph(f, m.ncopies, true, label);
        res.serial[1 + v] = time_graph(f, m.ncopies, false, label);
    }
    printf("time  %s %-8s %6.1f MB: engine %.2f, best product %.2f (%s);", ti.name, sname, res.mb, res.pdl[0],
           res.pdl[res.best_pf], g_pforms[res.best_pf].name);
    for (int v = 0; v < NVAR; v++)
        printf(" %s %.2f", g_variants[v].name, res.pdl[NPF + v]);
    printf(" us\n");
    fflush(stdout);
}

/* ---- host: output --------------------------------------------------------------------------------------------- */

constexpr double BW_GBS = 4300.0; /* the H200's measured device-to-device copy rate */

/* " us (pct %) [note] |", or " - |" for a form not run. */
void cell(double us, double mb, const char *note = nullptr)
{
    if (us <= 0) {
        printf(" - |");
        return;
    }
    printf(" %.2f (%.0f %%)", us, 100.0 * mb * 1e3 / us / BW_GBS);
    if (note)
        printf(" %s", note);
    printf(" |");
}

void print_tables(bool pdl)
{
    for (int ti = 0; ti < NTYPE; ti++) {
        printf("\n## %s, batch 1, x prepared, %s: us a GEMV (%% of %.1f TB/s)\n\n| shape | MB | engine | %s",
               g_types[ti].name, pdl ? "PDL between launches (as the product launches)" : "serial (no PDL)",
               BW_GBS / 1000, pdl ? "best product (form) |" : "");
        for (int v = 0; v < NVAR; v++)
            printf(" %s |", g_variants[v].name);
        printf("\n|---|---|---|%s", pdl ? "---|" : "");
        for (int v = 0; v < NVAR; v++)
            printf("---|");
        printf("\n");
        double mean[1 + NVAR + 1] = {};
        for (int s = 0; s < NSHAPE; s++) {
            const result &r = g_res[ti][s];
            printf("| %s %" PRIu64 "x%" PRIu64 " | %.1f |", g_shapes[s].name, g_shapes[s].rows, g_shapes[s].n, r.mb);
            cell(pdl ? r.pdl[0] : r.serial[0], r.mb);
            if (pdl)
                cell(r.pdl[r.best_pf], r.mb, g_pforms[r.best_pf].name);
            for (int v = 0; v < NVAR; v++)
                cell(pdl ? r.pdl[NPF + v] : r.serial[1 + v], r.mb);
            printf("\n");
            if (s == NSHAPE - 1) /* lm_head stays out of the mean */
                continue;
            const double e = pdl ? r.pdl[0] : r.serial[0];
            mean[0] += e > 0 ? 100.0 * r.mb * 1e3 / e / BW_GBS / (NSHAPE - 1) : 0;
            for (int v = 0; v < NVAR; v++) {
                const double u = pdl ? r.pdl[NPF + v] : r.serial[1 + v];
                mean[1 + v] += u > 0 ? 100.0 * r.mb * 1e3 / u / BW_GBS / (NSHAPE - 1) : 0;
            }
        }
        printf("| mean %%BW of the six shapes below lm_head | | %.1f |%s", mean[0], pdl ? " |" : "");
        for (int v = 0; v < NVAR; v++)
            printf(" %.1f |", mean[1 + v]);
        printf("\n");
    }
}

void setup_kernels()
{
    printf("\n## kernels (registers a thread, local memory = spills, static shared memory)\n\n"
           "| type | instantiation | threads | regs | local B | static smem B |\n|---|---|---|---|---|---|\n");
    for (auto &ti : g_types)
        for (auto &k : ti.k) {
            CK(cudaFuncGetAttributes(&k.fa, k.fn));
            CK(cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    g_dev.optin - (int)k.fa.sharedSizeBytes));
            /* two CTAs' shared memory (the big one: all of it), the rest L1 */
            const int kind = (int)(&k - ti.k);
            const int two = 2 * ((int)smem_budget(kind, k, g_dev) + (int)k.fa.sharedSizeBytes + g_dev.reserved);
            const int pct = kind == K_BIG || kind == K_C16 ? 100 : std::min(100, (100 * two + g_dev.per_sm - 1) / g_dev.per_sm);
            CK(cudaFuncSetAttribute(k.fn, cudaFuncAttributePreferredSharedMemoryCarveout, pct));
            printf("| %s | %s | %d | %d | %zu | %zu |\n", ti.name, k.what, (k.nc + 1) * 32, k.fa.numRegs,
                   k.fa.localSizeBytes, k.fa.sharedSizeBytes);
        }
}

void parse_skip(const char *s)
{
    std::string cur;
    for (const char *p = s;; p++) {
        if (*p == ',' || *p == 0) {
            if (!cur.empty())
                g_skip.push_back(cur);
            cur.clear();
            if (!*p)
                break;
        } else {
            cur += *p;
        }
    }
}

int copies_for(uint64_t bytes)
{
    const double need = 4.0 * (double)cuda_ctx_l2_bytes(g_ctx);
    return std::max(2, std::min(256, (int)ceil(need / (double)bytes)));
}

/* false (usage printed) on an unknown argument */
bool parse_args(int argc, char **argv, bool &quick)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
            parse_skip(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            g_reps = std::max(3, atoi(argv[++i]));
        else {
            fprintf(stderr, "usage: %s [--quick] [--skip NAME,NAME] [--reps N]\n", argv[0]);
            return false;
        }
    }
    return true;
}

/* The context, the device's limits, the kernels' attributes, the scratch buffers; false without a device. */
bool init_device(bool quick)
{
    char err[256];
    watch(60, "context creation");
    g_ctx = cuda_ctx_init(0, err, sizeof err);
    watch_off();
    if (!g_ctx) {
        fprintf(stderr, "gemv_q_test: %s\n", err);
        return false;
    }
    g_mma_default = g_ctx->gemv_mma;
    CK(cudaDeviceGetAttribute(&g_dev.sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&g_dev.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CK(cudaDeviceGetAttribute(&g_dev.per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    CK(cudaDeviceGetAttribute(&g_dev.reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
    printf("gemv_q_test: %s, %d SMs, L2 %zu MB, shared memory %d KB a block / %d KB an SM (%d reserved a block), "
           "PDL %s, %d replays a timing%s\n",
           cuda_ctx_device_name(g_ctx), g_dev.sms, cuda_ctx_l2_bytes(g_ctx) >> 20, g_dev.optin / 1024,
           g_dev.per_sm / 1024, g_dev.reserved, g_ctx->pdl ? "on" : "off", g_reps, quick ? ", checks only" : "");
    setup_kernels();
    g_sc.gpart_n = 1u << 22, g_sc.gcnt_n = 1u << 17;
    g_sc.gpart = static_cast<float *>(cuda_alloc(4 * g_sc.gpart_n));
    g_sc.gcnt = static_cast<uint32_t *>(cuda_alloc(4 * g_sc.gcnt_n));
    CK(cudaMemset(g_sc.gcnt, 0, 4 * g_sc.gcnt_n));
    g_smid = static_cast<uint32_t *>(cuda_alloc(4 * 3 * 2 * (size_t)g_dev.sms));
    g_dyn = static_cast<uint32_t *>(cuda_alloc(4 * 16));
    CK(cudaMemset(g_dyn, 0, 4 * 16));
    return true;
}

void free_device()
{
    cuda_free(g_sc.gpart);
    cuda_free(g_sc.gcnt);
    cuda_free(g_smid);
    cuda_free(g_dyn);
    cuda_ctx_free(g_ctx);
}

void run_odd_checks()
{
    printf("\n## checks: odd shapes (x with outliers)\n");
    for (auto &ti : g_types)
        for (auto &sh : g_odd) {
            mat m;
            mat_make(m, ti.t, sh.rows, sh.n, 1, true);
            plan plans[NVAR];
            check_shape(ti, m, sh.name, plans);
            mat_free(m);
        }
}

/* Each 8B shape of each type: made, checked, timed (unless quick), freed. */
void run_shapes(bool quick)
{
    printf("\n## the 8B shapes: checks on the timed data%s\n", quick ? "" : ", then timings (us)");
    for (int t = 0; t < NTYPE; t++)
        for (int s = 0; s < NSHAPE; s++) {
            const type_info &ti = g_types[t];
            const shape &sh = g_shapes[s];
            mat m;
            mat_make(m, ti.t, sh.rows, sh.n, copies_for(sh.rows * row_bytes_of(ti.t, sh.n)), false);
            plan plans[NVAR];
            check_shape(ti, m, sh.name, plans);
            g_res[t][s].mb = m.bytes / 1e6;
            if (!quick)
                time_shape(ti, m, sh.name, plans, g_res[t][s]);
            mat_free(m);
        }
}

} // namespace

/* --plans (no device needed): every variant's plan at the odd and 8B shapes from the H200's limits (132 SMs,
 * 227 KB a block, 228 KB an SM, 1 KB reserved a block; static shared memory as ptxas reports it) — a dry run. */
int print_plans()
{
    g_no_device = true;
    g_dev = {132, 232448, 233472, 1024};
    for (auto &ti : g_types)
        for (auto &k : ti.k)
            k.fa.sharedSizeBytes = is_carry((int)(&k - ti.k)) ? 1280 : 1152;
    g_sc.gpart_n = 1u << 22, g_sc.gcnt_n = 1u << 17;
    std::vector<shape> all(g_odd, g_odd + sizeof g_odd / sizeof g_odd[0]);
    all.insert(all.end(), g_shapes, g_shapes + NSHAPE);
    for (auto &ti : g_types)
        for (auto &sh : all)
            for (auto &vr : g_variants) {
                const plan p = make_plan(ti, vr, g_dev, g_sc, sh.rows, sh.n, nullptr, nullptr);
                printf("plan %s %-7s %6" PRIu64 "x%-5" PRIu64 " %-6s", ti.name, sh.name, sh.rows, sh.n, vr.name);
                if (!p.ok) {
                    printf(" n/a\n");
                    continue;
                }
                printf(" grid %u x %u, cb %u kc %u, %u %s (%.1f a CTA), %u slots x %.1f KB (%u a warp), smem %.1f KB\n",
                       p.grid, p.threads, p.a.cb, p.a.kc, p.a.nst, is_carry(vr.kind) ? "groups" : "stages",
                       (double)p.a.nst / p.grid, p.a.nslot, p.a.slot_bytes / 1024.0, p.depth, p.smem / 1024.0);
            }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--plans"))
        return print_plans();
    bool quick = false;
    if (!parse_args(argc, argv, quick))
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    std::thread(watchdog_loop).detach();
    if (!init_device(quick))
        return 2;
    run_odd_checks();
    run_shapes(quick);
    if (!quick) {
        print_tables(true);
        print_tables(false);
    }
    printf("\n%s (%d failed)\n", g_fail ? "CHECKS FAILED" : "all checks passed", g_fail);
    free_device();
    return g_fail ? 1 : 0;
}
