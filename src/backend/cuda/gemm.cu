/* backend/cuda/gemm.cu — prefill GEMMs on the tensor cores through cuBLASLt:
 *
 *   y (T, rows) f32 = scale · x (T, n) f32 · Wᵀ,   W (rows, n) as stored on the device
 *
 * for spans of many tokens (the decode GEMVs of gemv*.cu read the weights once
 * per 8 tokens; a GEMM reads them once per span and runs at the matrix rate).
 *
 * Layout: W (rows, n) row-major is, to column-major cuBLASLt, an (n, rows)
 * matrix with leading dimension n; x (T, n) row-major is (n, T) with ld n;
 * y (T, rows) row-major is (rows, T) with ld rows. So D = op(A)·B with
 * A = W, transa = T ("TN", the tensor cores' native layout), m = rows,
 * n = T, k = n.
 *
 * Activations are f32 in the backend (cuda_ops.h says why), the tensor cores
 * take 16-bit inputs. Two modes (enum cuda_gemm_mode):
 *  - FAST: x rounded once to bf16 (f16 for F16 weights: saturated at ±65504),
 *    one GEMM. f32 weights: TF32 (CUBLAS_COMPUTE_32F_FAST_TF32).
 *  - XBF16: x is bf16-valued already (BACKEND_ACT_BF16: the backend rounded
 *    it), so x_hi = x and x_lo = 0: one GEMM for BF16 and FP8 weights, the
 *    weights exact as in EXACT (GGUF: w_hi·x + w_lo·x, two GEMMs; F16 weights
 *    split their x into f16 parts as in EXACT: bf16's range exceeds f16's).
 *    The same values as EXACT on that x.
 *  - EXACT: x = x_hi + x_lo, both bf16 (or f16), x_lo = x − x_hi exactly, so
 *    x is kept to ~16 significant bits: two GEMMs accumulated in f32 (beta 1).
 *    x_lo is stored right after x_hi, so a short span (T ≤ GEMM_STACK_T, and
 *    2·T·rows ≤ GEMM_STACK_FLOATS) takes one GEMM of 2T columns instead —
 *    the weight read once, not twice: it bounds a short span's time — into a
 *    scratch, and y = y_hi + y_lo after it (kernel_add_halves).
 *    f32 weights: plain f32 GEMM (CUBLAS_COMPUTE_32F, no TF32).
 * Weights: BF16 and F16 are read as stored. FP8 E4M3 is widened to bf16 into a
 * scratch (exact: 3 mantissa bits), its per-tensor scale goes into alpha. The
 * GGUF block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) are
 * dequantized (decoders of gemv_quant_types.cuh, f32 values as the CPU
 * computes them, no contracted FMA) into a bf16 scratch, one matrix at a time,
 * then multiplied. bf16 holds 8 significant bits and a dequantized value up to
 * ~21, so in EXACT mode the weight is split too (w_hi + w_lo) and a third GEMM
 * adds w_lo · x_hi (w_lo · x_lo, ~2^-16 relative, is dropped).
 *
 * Determinism and batch invariance: the algorithm for a GEMM is chosen by the
 * cuBLASLt heuristic once per (types, m, n, k, alignments) and cached, with a
 * fixed workspace; the alignments asked for are derived from the shape only
 * (the weight, the x scratch and y's base are 256-byte aligned; a span's y
 * starts at a multiple of rows floats). Only algorithms without a split K are
 * taken (asked of the heuristic by its reduction-scheme mask; where it offers
 * none — a tiny fixture's 128×256 weight did — the first of its others that
 * cuBLASLt accepts with the split removed):
 * then every output element is one K loop of the same products in the same
 * order whatever the tile or the number of columns T — so a span's rows come
 * out the same alone or inside a GEMM over several spans (measured on the H200
 * over tiles 15-402: lab/gemm-fixed-algo, twenty-third run; kernel_gemm checks
 * it), and the backend runs a step's consecutive GEMM spans as one GEMM. A GEMM
 * of up to GEMM_TIMED_N columns times the no-split candidates (three runs
 * each) when its plan is made and keeps the fastest (plan_time_pick,
 * MEMRA_GEMM_PICK): the heuristic's first is 2-3× slower at some column
 * counts. The plans, their cache and the timing live in gemm_plan.cu
 * (gemm_plans_run: one cuBLASLt product); this file converts x, dequantizes
 * and keeps weights, and sends the GGUF types with a scale a 32 to gemm_q.cu
 * (MEMRA_GEMM_PROMOTE).
 * cuBLAS is bit-reproducible run to run for a fixed algorithm on one GPU.
 */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemm_plan.h"
#include "backend/cuda/gemm_q.h"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/gemv_quant_types.cuh"
#include "backend/cuda/tile_copy.cuh"

#define GEMM_STACK_T 64u                   /* exact mode: spans up to this take one stacked GEMM */
#define GEMM_STACK_FLOATS ((size_t)16 << 20) /* its (2T, rows) f32 result scratch: 64 MB */

namespace {

/* What the activations are converted to before a GEMM. */
enum xkind { XK_BF16, XK_F16, XK_F32 };

/* ---- activations ----------------------------------------------------------- */

/* hi = round(x) to bf16, lo = round(x − hi) (x − hi is exact in f32). */
__global__ void kernel_x_split_bf16(const float4 *__restrict__ x, uint64_t n4, uint2 *__restrict__ hi,
                                    uint2 *__restrict__ lo)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4; i += (uint64_t)gridDim.x * blockDim.x) {
        gemm_x_store4(hi, lo, i, x[i]); /* tile_copy.cuh: the producers' split too */
    }
}

/* y[i] = d[i] + d[half + i]: the stacked GEMM's x_hi and x_lo products summed. */
__global__ void kernel_add_halves(const float *__restrict__ d, uint64_t half, float *__restrict__ y)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < half; i += (uint64_t)gridDim.x * blockDim.x)
        y[i] = d[i] + d[half + i];
}

static __device__ __forceinline__ float sat_f16(float v) { return fminf(fmaxf(v, -65504.0f), 65504.0f); }

/* The same in f16, saturating at ±65504 (F16 weights). */
__global__ void kernel_x_split_f16(const float4 *__restrict__ x, uint64_t n4, uint2 *__restrict__ hi,
                                   uint2 *__restrict__ lo)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4; i += (uint64_t)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        const float s[4] = {sat_f16(v.x), sat_f16(v.y), sat_f16(v.z), sat_f16(v.w)};
        const __half2 h01 = __floats2half2_rn(s[0], s[1]), h23 = __floats2half2_rn(s[2], s[3]);
        hi[i] = make_uint2(*reinterpret_cast<const uint32_t *>(&h01), *reinterpret_cast<const uint32_t *>(&h23));
        if (lo) {
            const float2 f01 = __half22float2(h01), f23 = __half22float2(h23);
            const __half2 l01 = __floats2half2_rn(__fsub_rn(s[0], f01.x), __fsub_rn(s[1], f01.y));
            const __half2 l23 = __floats2half2_rn(__fsub_rn(s[2], f23.x), __fsub_rn(s[3], f23.y));
            lo[i] = make_uint2(*reinterpret_cast<const uint32_t *>(&l01), *reinterpret_cast<const uint32_t *>(&l23));
        }
    }
}

/* ---- weights ----------------------------------------------------------------- */

static __device__ __forceinline__ uint32_t pack_bf16(float a, float b)
{
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t *>(&h);
}

/* One thread per 32-element segment (row r, segment j of n/32): decode with
 * the GEMV's block decoder, value = d·q + m with one rounding each (no FMA,
 * as the CPU's dequantization), then hi = bf16(value), lo = bf16(value − hi).
 * Output (rows, n) bf16 row-major. A block's 256 segments are one contiguous
 * 16 KB of each output: a thread's 64 bytes go through shared memory (16-byte
 * pieces swizzled so a quarter-warp's stores hit 8 different bank groups) and
 * the block writes the range out in consecutive 16-byte pieces — stored
 * straight from each thread (64 bytes apart) the kernel ran at ~1.3 TB/s. */
constexpr int DQ_THREADS = 256;

template <class Q>
__global__ void __launch_bounds__(DQ_THREADS) kernel_dequant_q(const uint8_t *__restrict__ w, uint64_t row_bytes,
                                                               uint64_t rows, uint64_t n, uint4 *__restrict__ hi,
                                                               uint4 *__restrict__ lo)
{
    constexpr int S = Q::QK / 32;
    __shared__ uint4 sh[2][DQ_THREADS * 4];
    const uint64_t segs = n / 32, total = rows * segs, t0 = blockIdx.x * (uint64_t)DQ_THREADS;
    const uint64_t t = t0 + threadIdx.x;
    const uint32_t sw = (threadIdx.x >> 1) & 3u;
    if (t < total) {
        const uint64_t r = t / segs, j = t % segs;
        const uint8_t *blk = w + r * row_bytes + (j / S) * Q::BS;
        const typename Q::lane_t L = Q::lane((int)(j % S));
        uint32_t q[8];
        float d[2], m[2];
        Q::get(blk, L, q, d, m);
        float v[32];
#pragma unroll
        for (int e = 0; e < 32; e++) {
            const uint32_t byte = (q[e / 4] >> (8 * (e % 4))) & 0xFFu;
            const float qf = Q::QSIGNED ? (float)(int8_t)byte : (float)byte;
            const float p = __fmul_rn(d[e / 16], qf);
            v[e] = Q::HAS_M ? __fadd_rn(p, m[e / 16]) : p;
        }
#pragma unroll
        for (int s = 0; s < 4; s++) { /* 8 elements a 16-byte piece */
            uint32_t h[4], l[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float a = v[8 * s + 2 * i], b = v[8 * s + 2 * i + 1];
                h[i] = pack_bf16(a, b);
                const __nv_bfloat162 hb = *reinterpret_cast<const __nv_bfloat162 *>(&h[i]);
                const float2 hf = __bfloat1622float2(hb);
                l[i] = pack_bf16(__fsub_rn(a, hf.x), __fsub_rn(b, hf.y));
            }
            const uint32_t at = threadIdx.x * 4 + ((uint32_t)s ^ sw);
            sh[0][at] = make_uint4(h[0], h[1], h[2], h[3]);
            sh[1][at] = make_uint4(l[0], l[1], l[2], l[3]);
        }
    }
    __syncthreads();
    const uint64_t nv = total - t0 < DQ_THREADS ? total - t0 : DQ_THREADS; /* segments of this block */
    for (uint32_t i = threadIdx.x; i < nv * 4; i += DQ_THREADS) {
        const uint32_t st = i >> 2, at = st * 4 + ((i & 3u) ^ ((st >> 1) & 3u));
        hi[t0 * 4 + i] = sh[0][at];
        if (lo)
            lo[t0 * 4 + i] = sh[1][at];
    }
}

/* The two e4m3 values of word's low 16 bits, as floats (exact). */
static __device__ __forceinline__ float2 f8x2_float(uint32_t word)
{
    __nv_fp8_e4m3 e0, e1;
    e0.__x = (__nv_fp8_storage_t)(word & 0xFF);
    e1.__x = (__nv_fp8_storage_t)((word >> 8) & 0xFF);
    return make_float2(float(e0), float(e1));
}

/* FP8 E4M3 → bf16, exact (every e4m3 value is a bf16 value); 8 a thread. */
__global__ void kernel_dequant_f8(const uint2 *__restrict__ w, uint64_t n8, uint4 *__restrict__ out)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n8; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint2 v = w[i];
        const uint32_t b[2] = {v.x, v.y};
        uint32_t o[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float2 e = f8x2_float(b[k / 2] >> (16 * (k % 2)));
            o[k] = pack_bf16(e.x, e.y);
        }
        out[i] = make_uint4(o[0], o[1], o[2], o[3]);
    }
}

/* FP8 E4M3 with 128 × 128 block scales → bf16 hi (+ lo): value = e4m3 · s rounded once (backend_cuda.c's expand_rows),
 * hi = bf16(value), lo = bf16(value − hi); 8 a thread (n % 8 == 0: a thread's 8 never straddle a row or a block). */
__global__ void kernel_dequant_f8bs(const uint2 *__restrict__ w, const float *__restrict__ bs, uint64_t rows,
                                    uint64_t n, uint4 *__restrict__ hi, uint4 *__restrict__ lo)
{
    const uint64_t n8 = rows * n / 8, nbc = (n + 127) / 128;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n8; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t r = 8 * i / n, c = 8 * i % n;
        const float s = bs[(r / 128) * nbc + c / 128];
        const uint2 v = w[i];
        const uint32_t b[2] = {v.x, v.y};
        uint32_t h[4], l[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float2 e = f8x2_float(b[k / 2] >> (16 * (k % 2)));
            const float a0 = __fmul_rn(e.x, s), a1 = __fmul_rn(e.y, s);
            h[k] = pack_bf16(a0, a1);
            const float2 hf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&h[k]));
            l[k] = pack_bf16(__fsub_rn(a0, hf.x), __fsub_rn(a1, hf.y));
        }
        hi[i] = make_uint4(h[0], h[1], h[2], h[3]);
        if (lo)
            lo[i] = make_uint4(l[0], l[1], l[2], l[3]);
    }
}

enum xkind xkind_of(enum dtype t)
{
    return t == DTYPE_F16 ? XK_F16 : t == DTYPE_F32 ? XK_F32 : XK_BF16;
}

unsigned grid_for(uint64_t items, unsigned threads)
{
    const uint64_t b = (items + threads - 1) / threads;
    return (unsigned)(b < 8192 ? (b ? b : 1) : 8192);
}

} // namespace

struct cuda_gemm {
    struct cuda_ctx *ctx;
    enum cuda_gemm_mode mode;
    struct gemm_plans *pl;   /* the cuBLASLt plans (gemm_plan.cu) */
    uint64_t max_x, max_w;   /* elements the scratches hold */
    uint16_t *xhi, *xlo;     /* (T, n) bf16/f16 of the current x; xlo when x_has_lo, = xhi + T·n (contiguous) */
    float *ystack;           /* EXACT/XBF16: GEMM_STACK_FLOATS, the stacked GEMM's (2T, rows) */
    uint16_t *whi, *wlo;     /* (rows, n) bf16 dequantized weight; wlo EXACT/XBF16 only */
    struct {                 /* what xhi/xlo hold (cuda_gemm_prep_x) */
        const float *x;
        uint64_t n;
        uint32_t T;
        int kind; /* enum xkind, -1 none */
    } prep;
    uint32_t prep_gen;       /* +1 at every conversion or claim of x: what xt was tiled from */
    enum cuda_gemm_promote promote; /* which GGUF types with a scale a 32 run gemm_q.cu (cuda_gemm_promote) */
    uint8_t *wq;             /* promote: a weight's packed form when it is not kept (max_w elements) */
    uint8_t *xt;             /* promote: x's tiles (only the mins' unless x_tiled), xt_cap bytes */
    uint64_t xt_cap;
    bool x_tiled;            /* promote: every x tile made by gemm_q_tile_x (MEMRA_GEMM_X_TILES=on), else x's own
                              * tiles read from its rows by TMA and only the mins' made */
    struct {                 /* what xt holds */
        uint32_t gen;
        int parts;           /* 0: nothing */
        bool mins, tiled;
    } xt_of;
};

extern "C" struct cuda_gemm *cuda_gemm_init(struct cuda_ctx *ctx, enum cuda_gemm_mode mode, uint64_t max_x,
                                            uint64_t max_w)
{
    struct cuda_gemm *g = (struct cuda_gemm *)calloc(1, sizeof *g);
    if (!g)
        CUDA_FAIL("out of host memory");
    g->ctx = ctx;
    g->mode = mode;
    g->max_x = max_x;
    g->max_w = max_w;
    g->prep.kind = -1;
    const char *xt = getenv("MEMRA_GEMM_X_TILES"); /* on: cuda_gemm_set_x_tiled */
    g->x_tiled = xt && strcmp(xt, "on") == 0;
    g->pl = gemm_plans_init(ctx);
    const bool exact = mode != CUDA_GEMM_FAST; /* XBF16 too: F16 weights split their x (x_has_lo) */
    if (max_x) /* x_lo follows x_hi (prep_x) */
        CUDA_CHECK(cudaMalloc(&g->xhi, (exact ? 4 : 2) * max_x));
    if (exact)
        CUDA_CHECK(cudaMalloc(&g->ystack, GEMM_STACK_FLOATS * sizeof(float)));
    if (max_w) {
        CUDA_CHECK(cudaMalloc(&g->whi, 2 * max_w));
        if (exact)
            CUDA_CHECK(cudaMalloc(&g->wlo, 2 * max_w));
    }
    return g;
}

extern "C" void cuda_gemm_free(struct cuda_gemm *g)
{
    if (!g)
        return;
    CUDA_CHECK(cudaStreamSynchronize(g->ctx->stream));
    gemm_plans_free(g->pl);
    void *bufs[] = {g->xhi, g->ystack, g->whi, g->wlo, g->wq, g->xt};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            CUDA_CHECK(cudaFree(bufs[i]));
    free(g);
}

extern "C" enum cuda_gemm_mode cuda_gemm_mode_of(const struct cuda_gemm *g) { return g->mode; }

extern "C" bool cuda_gemm_set_timed(struct cuda_gemm *g, bool timed)
{
    return gemm_plans_set_timed(g->pl, timed);
}

extern "C" bool cuda_gemm_set_x_tiled(struct cuda_gemm *g, bool tiled)
{
    const bool was = g->x_tiled;
    g->x_tiled = tiled;
    return was;
}

extern "C" bool cuda_gemm_promote_takes(enum cuda_gemm_promote p, enum cuda_gemm_mode mode, enum dtype t,
                                        uint64_t rows, uint64_t n)
{
    if (p == CUDA_GEMM_PROMOTE_OFF || mode == CUDA_GEMM_FAST || !gemm_q_supported(t, rows, n))
        return false;
    return p == CUDA_GEMM_PROMOTE_ALL || (p == CUDA_GEMM_PROMOTE_PLAIN && !gemm_q_has_mins(t)) ||
           (p == CUDA_GEMM_PROMOTE_AUTO && rows >= CUDA_GEMM_PROMOTE_MIN_ROWS);
}

extern "C" bool cuda_gemm_promote_has_mins(enum dtype t) { return gemm_q_has_mins(t); }

extern "C" void cuda_gemm_promote(struct cuda_gemm *g, uint64_t max_n, enum cuda_gemm_promote p)
{
    if (g->promote != CUDA_GEMM_PROMOTE_OFF || p == CUDA_GEMM_PROMOTE_OFF || g->mode == CUDA_GEMM_FAST)
        return;
    /* x's tiles for T·n ≤ max_x, n ≤ max_n; a weight's packed form for rows·n ≤ max_w (with a min's k tiles) */
    const int parts = g->mode == CUDA_GEMM_EXACT ? 2 : 1;
    g->xt_cap = gemm_q_x_cap(g->max_x, max_n, parts);
    if (g->max_x)
        CUDA_CHECK(cudaMalloc(&g->xt, g->xt_cap));
    if (g->max_w)
        CUDA_CHECK(cudaMalloc(&g->wq, gemm_q_packed_cap(g->max_w, max_n) + 256));
    g->promote = p;
}

extern "C" bool cuda_gemm_promoted(const struct cuda_gemm *g, enum dtype t, uint64_t rows, uint64_t n)
{
    return cuda_gemm_promote_takes(g->promote, g->mode, t, rows, n);
}

extern "C" bool cuda_gemm_supported(enum dtype t, uint64_t rows, uint64_t n)
{
    if (rows == 0 || n == 0 || rows > 0x7FFFFFFFull || n > 0x7FFFFFFFull || rows * n >= (1ull << 40))
        return false;
    switch (t) {
    case DTYPE_BF16: case DTYPE_F16: case DTYPE_F8_E4M3: return n % 8 == 0;
    case DTYPE_F32: return n % 4 == 0;
    default: return gemv_quant_has(t) && n % dtype_info(t)->block_size == 0;
    }
}

extern "C" uint64_t cuda_gemm_scratch_w_elems(enum dtype t, uint64_t rows, uint64_t n)
{
    return t == DTYPE_F8_E4M3 || gemv_quant_has(t) ? rows * n : 0;
}

/* Whether x of this kind is split into a high and a low part: EXACT, and
 * XBF16's F16 weights (a bf16 x in f16 parts: 11 bits hold 8 but not bf16's
 * range). XBF16's bf16 x is its own high part. */
static bool x_has_lo(const struct cuda_gemm *g, enum xkind kind)
{
    return g->mode == CUDA_GEMM_EXACT || (g->mode == CUDA_GEMM_XBF16 && kind == XK_F16);
}

/* Whether run_parts makes a weight's GEMM one cuBLASLt product: no low part of x (kind xk) and none of the weight
 * (split_w: a type whose dequantized values the exact modes split, GGUF and block-scaled FP8). */
static bool one_product(const struct cuda_gemm *g, enum xkind xk, bool split_w)
{
    return !x_has_lo(g, xk) && !(g->mode != CUDA_GEMM_FAST && split_w);
}

extern "C" bool cuda_gemm_accum_takes(const struct cuda_gemm *g, enum dtype t, bool bs, uint64_t rows, uint64_t n,
                                      float scale)
{
    if (!cuda_gemm_supported(bs ? DTYPE_F8_E4M3 : t, rows, n))
        return false;
    if (!bs && cuda_gemm_promoted(g, t, rows, n)) /* gemm_q.cu's epilogue reading y was slower than the norm's add:
                                                    * Q8_0 / Q4_K_M pp4096 −3 / −2 % (H100, forty-fifth run) */
        return false;
    if (scale != 1.0f) /* cuBLASLt's alpha · acc + beta · y need not round alpha · acc first */
        return false;
    if (t == DTYPE_F32 && !bs)
        return true;
    return one_product(g, bs ? XK_BF16 : xkind_of(t), bs || gemv_quant_has(t)); /* its D = acc + y */
}

extern "C" bool cuda_gemm_y_bf16_takes(const struct cuda_gemm *g, enum dtype t, uint64_t rows, uint64_t n)
{
    if (!cuda_gemm_supported(t, rows, n) || t == DTYPE_F32)
        return false;
    if (cuda_gemm_promoted(g, t, rows, n)) /* its epilogue rounds its one accumulator (x parts and all) */
        return true;
    /* its D rounded once; bf16 inputs (cuBLASLt has no f16 × f16 → bf16) */
    return xkind_of(t) == XK_BF16 && one_product(g, XK_BF16, gemv_quant_has(t));
}

/* Whether the scratch holds the parts of x (n, T) for an input of the kind. */
static bool prep_holds(const struct cuda_gemm *g, enum xkind kind, const float *x, uint64_t n, uint32_t T)
{
    return g->prep.x == x && g->prep.n == n && g->prep.T == T && g->prep.kind == (int)kind;
}

/* The scratch is to hold the parts of x (n, T) of the kind: where
 * the low part goes (none without one), and what prep_holds will match. */
static void prep_mark(struct cuda_gemm *g, enum xkind kind, const float *x, uint64_t n, uint32_t T)
{
    g->prep_gen++;
    g->xlo = x_has_lo(g, kind) ? g->xhi + n * T : NULL;
    g->prep.x = x;
    g->prep.n = n;
    g->prep.T = T;
    g->prep.kind = (int)kind;
}

static void prep_x(struct cuda_gemm *g, enum xkind kind, const float *x, uint64_t n, uint32_t T, bool reuse)
{
    if (kind == XK_F32)
        return;
    if (reuse && prep_holds(g, kind, x, n, T))
        return;
    const uint64_t cnt = n * T;
    if (cnt > g->max_x)
        CUDA_FAIL("cuda_gemm: x of %u×%llu exceeds the scratch (%llu elements)", T, (unsigned long long)n,
                  (unsigned long long)g->max_x);
    if (n % 4 || (uintptr_t)x % 16)
        CUDA_FAIL("cuda_gemm: x must be 16-byte aligned with n %% 4 == 0");
    prep_mark(g, kind, x, n, T);
    uint2 *lo = (uint2 *)g->xlo;
    if (kind == XK_BF16)
        kernel_x_split_bf16<<<grid_for(cnt / 4, 256), 256, 0, g->ctx->stream>>>((const float4 *)x, cnt / 4,
                                                                                 (uint2 *)g->xhi, lo);
    else
        kernel_x_split_f16<<<grid_for(cnt / 4, 256), 256, 0, g->ctx->stream>>>((const float4 *)x, cnt / 4,
                                                                                (uint2 *)g->xhi, lo);
    CUDA_CHECK_LAUNCH();
}

extern "C" bool cuda_gemm_x_claim_takes(const struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n,
                                        uint32_t T)
{
    const uint64_t cnt = n * T;
    return g && xkind_of(t) == XK_BF16 && g->xhi && cnt && cnt <= g->max_x && n % 4 == 0 && (uintptr_t)x % 16 == 0;
}

extern "C" uint16_t *cuda_gemm_x_claim(struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n, uint32_t T,
                                       uint16_t **lo)
{
    const enum xkind kind = xkind_of(t);
    *lo = NULL;
    if (!cuda_gemm_x_claim_takes(g, t, x, n, T))
        return NULL;
    prep_mark(g, kind, x, n, T);
    *lo = g->xlo;
    return g->xhi;
}

extern "C" bool cuda_gemm_x_ready(const struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n, uint32_t T)
{
    return g && prep_holds(g, xkind_of(t), x, n, T);
}

extern "C" void cuda_gemm_prep_x(struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n, uint32_t T)
{
    prep_x(g, xkind_of(t), x, n, T, false);
}

template <class Q>
static void launch_dequant_q(const struct cuda_gemm *g, const void *w, uint64_t rows, uint64_t n, uint16_t *hi,
                             uint16_t *lo)
{
    const uint64_t threads = rows * (n / 32), row_bytes = n / Q::QK * Q::BS;
    const uint64_t blocks = (threads + DQ_THREADS - 1) / DQ_THREADS;
    kernel_dequant_q<Q><<<(unsigned)blocks, DQ_THREADS, 0, g->ctx->stream>>>((const uint8_t *)w, row_bytes, rows,
                                                                              n, (uint4 *)hi, (uint4 *)lo);
    CUDA_CHECK_LAUNCH();
}

/* w (rows, n) of type t dequantized into hi (bf16) and, for the GGUF types
 * when lo is not NULL, lo (the remainder, bf16). */
static void dequant_to(const struct cuda_gemm *g, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                       uint16_t *hi, uint16_t *lo)
{
    switch (t) {
    case DTYPE_F8_E4M3:
        kernel_dequant_f8<<<grid_for(rows * n / 8, 256), 256, 0, g->ctx->stream>>>((const uint2 *)w, rows * n / 8,
                                                                                    (uint4 *)hi);
        CUDA_CHECK_LAUNCH();
        break;
    case DTYPE_Q8_0: launch_dequant_q<qt_q8_0>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q4_0: launch_dequant_q<qt_q4_0>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q4_1: launch_dequant_q<qt_q4_1>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q4_K: launch_dequant_q<qt_q4_k>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q5_K: launch_dequant_q<qt_q5_k>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q6_K: launch_dequant_q<qt_q6_k>(g, w, rows, n, hi, lo); break;
    case DTYPE_IQ4_XS: launch_dequant_q<qt_iq4_xs>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q5_0: launch_dequant_q<qt_q5_0>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q5_1: launch_dequant_q<qt_q5_1>(g, w, rows, n, hi, lo); break;
    case DTYPE_IQ4_NL: launch_dequant_q<qt_iq4_nl>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q2_K: launch_dequant_q<qt_q2_k>(g, w, rows, n, hi, lo); break;
    case DTYPE_Q3_K: launch_dequant_q<qt_q3_k>(g, w, rows, n, hi, lo); break;
    default: CUDA_FAIL("cuda_gemm_dequant: %s is not dequantized", dtype_name(t));
    }
}

static void dequant_f8bs(const struct cuda_gemm *g, const void *w, const float *bs, uint64_t rows, uint64_t n,
                         uint16_t *hi, uint16_t *lo)
{
    kernel_dequant_f8bs<<<grid_for(rows * n / 8, 256), 256, 0, g->ctx->stream>>>((const uint2 *)w, bs, rows, n,
                                                                                  (uint4 *)hi, (uint4 *)lo);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_gemm_dequant(struct cuda_gemm *g, enum dtype t, const void *w, uint64_t rows, uint64_t n)
{
    if (rows * n > g->max_w)
        CUDA_FAIL("cuda_gemm: weight %llu×%llu exceeds the dequantization scratch (%llu elements)",
                  (unsigned long long)rows, (unsigned long long)n, (unsigned long long)g->max_w);
    dequant_to(g, t, w, rows, n, g->whi, g->wlo);
}

/* A kept copy: hi (rows·n bf16), then from the next 256-byte boundary lo when
 * the mode keeps the weight's low part (EXACT / XBF16, GGUF types). */
static bool kept_has_lo(enum cuda_gemm_mode mode, enum dtype t) { return mode != CUDA_GEMM_FAST && gemv_quant_has(t); }

static uint64_t kept_lo_offset(uint64_t rows, uint64_t n) { return (rows * n * 2 + 255) / 256 * 256; }

extern "C" uint64_t cuda_gemm_kept_bytes(enum cuda_gemm_mode mode, bool promote, enum dtype t, uint64_t rows,
                                        uint64_t n)
{
    if (promote) /* the weight takes the promoted GEMM (cuda_gemm_promote_takes) */
        return gemm_q_packed_bytes(t, rows, n);
    if (cuda_gemm_scratch_w_elems(t, rows, n) == 0)
        return 0;
    return kept_has_lo(mode, t) ? kept_lo_offset(rows, n) + rows * n * 2 : rows * n * 2;
}

extern "C" void cuda_gemm_keep(struct cuda_gemm *g, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                               void *kept)
{
    const bool promoted = cuda_gemm_promoted(g, t, rows, n);
    if (cuda_gemm_kept_bytes(g->mode, promoted, t, rows, n) == 0 || (uintptr_t)kept % 256)
        CUDA_FAIL("cuda_gemm_keep: %s %llu×%llu has no kept copy, or the buffer is not 256-byte aligned",
                  dtype_name(t), (unsigned long long)rows, (unsigned long long)n);
    if (promoted) { /* the packed form gemm_q_run reads */
        gemm_q_pack(g->ctx, t, w, rows, n, kept);
        return;
    }
    uint8_t *k = (uint8_t *)kept;
    uint16_t *lo = kept_has_lo(g->mode, t) ? (uint16_t *)(k + kept_lo_offset(rows, n)) : NULL;
    dequant_to(g, t, w, rows, n, (uint16_t *)k, lo);
}

extern "C" uint64_t cuda_gemm_kept_bytes_bs(enum cuda_gemm_mode mode, uint64_t rows, uint64_t n)
{
    return mode != CUDA_GEMM_FAST ? kept_lo_offset(rows, n) + rows * n * 2 : rows * n * 2;
}

extern "C" void cuda_gemm_keep_bs(struct cuda_gemm *g, const void *w, const float *bs, uint64_t rows, uint64_t n,
                                  void *kept)
{
    if (!cuda_gemm_supported(DTYPE_F8_E4M3, rows, n) || !bs || (uintptr_t)kept % 256)
        CUDA_FAIL("cuda_gemm_keep_bs: F8_E4M3 %llu×%llu not supported, no block scales, or the buffer is not "
                  "256-byte aligned", (unsigned long long)rows, (unsigned long long)n);
    uint8_t *k = (uint8_t *)kept;
    dequant_f8bs(g, w, bs, rows, n, (uint16_t *)k,
                 g->mode != CUDA_GEMM_FAST ? (uint16_t *)(k + kept_lo_offset(rows, n)) : NULL);
}

/* The GEMMs of x's prepared parts (kind xk) by a weight's bf16 (f16) values a and, unless wlo is NULL, their low
 * part wlo (GGUF, block-scaled FP8): y = scale · (a·x_hi + a·x_lo + wlo·x_hi), x_lo where the mode splits x;
 * y16 (cuda_gemm_y_bf16_takes: one product) y written as bf16. */
static void run_parts(struct cuda_gemm *g, enum xkind xk, const void *a, const void *wlo, uint64_t rows, uint64_t n,
                      uint32_t T, float *y, float scale, bool accum, bool y16)
{
    const cudaDataType_t dt = xk == XK_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const bool xlo = x_has_lo(g, xk);
    if (y16) {
        if (xlo || wlo || accum)
            CUDA_FAIL("cuda_gemm: a bf16 y needs one product (cuda_gemm_y_bf16_takes)");
        gemm_plans_run_to(g->pl, dt, a, dt, g->xhi, CUBLAS_COMPUTE_32F, rows, n, T, y, CUDA_R_16BF, scale, 0.0f, 256);
        return;
    }
    if (xlo && T <= GEMM_STACK_T && 2 * (uint64_t)T * rows <= GEMM_STACK_FLOATS) {
        /* x_hi and x_lo as one B of 2T columns: the weight is read once */
        gemm_plans_run(g->pl, dt, a, dt, g->xhi, CUBLAS_COMPUTE_32F, rows, n, 2 * T, g->ystack, scale, 0.0f, 256);
        const uint64_t half = (uint64_t)T * rows;
        kernel_add_halves<<<grid_for(half, 256), 256, 0, g->ctx->stream>>>(g->ystack, half, y);
        CUDA_CHECK_LAUNCH();
        if (wlo) /* the weight's own low part */
            gemm_plans_run(g->pl, dt, wlo, dt, g->xhi, CUBLAS_COMPUTE_32F, rows, n, T, y, scale, 1.0f, 256);
        return;
    }
    /* accum: one product at scale 1 (the callers asked cuda_gemm_accum_takes): D = acc + y, rounded once */
    gemm_plans_run(g->pl, dt, a, dt, g->xhi, CUBLAS_COMPUTE_32F, rows, n, T, y, scale, accum ? 1.0f : 0.0f, 256);
    if (xlo)
        gemm_plans_run(g->pl, dt, a, dt, g->xlo, CUBLAS_COMPUTE_32F, rows, n, T, y, scale, 1.0f,
                       gemm_align_of((uint64_t)T * n * 2));
    if (wlo) /* the weight's own low part */
        gemm_plans_run(g->pl, dt, wlo, dt, g->xhi, CUBLAS_COMPUTE_32F, rows, n, T, y, scale, 1.0f, 256);
}

/* The promoted GEMM (gemm_q.cu): x's bf16 parts as cuda_gemm_prep_x makes them (or a producer's claim), tiled
 * once for every weight that reads them (the tiles follow the conversion: prep_gen), the weight packed into the
 * scratch unless kept. */
static void run_promoted(struct cuda_gemm *g, enum dtype t, const void *w, const void *kept, uint64_t rows,
                         uint64_t n, const float *x, uint32_t T, float *y, float scale, unsigned flags)
{
    prep_x(g, XK_BF16, x, n, T, (flags & CUDA_GEMM_X_PREPARED) != 0);
    const bool mins = gemm_q_has_mins(t), tiled = g->x_tiled;
    const int parts = g->xlo ? 2 : 1;
    if ((tiled || mins) &&
        (g->xt_of.gen != g->prep_gen || g->xt_of.parts != parts || g->xt_of.mins != mins || g->xt_of.tiled != tiled)) {
        if (gemm_q_x_bytes(T, n, mins, parts) > g->xt_cap)
            CUDA_FAIL("cuda_gemm: x tiles of %u×%llu exceed the scratch (%llu bytes)", T, (unsigned long long)n,
                      (unsigned long long)g->xt_cap);
        if (tiled)
            gemm_q_tile_x(g->ctx, g->xhi, g->xlo, T, n, mins, g->xt);
        else
            gemm_q_tile_mins(g->ctx, g->xhi, g->xlo, T, n, g->xt);
        g->xt_of.gen = g->prep_gen, g->xt_of.parts = parts, g->xt_of.mins = mins, g->xt_of.tiled = tiled;
    }
    const void *a = kept;
    if (!a) {
        if (rows * n > g->max_w || !g->wq)
            CUDA_FAIL("cuda_gemm: weight %llu×%llu exceeds the packing scratch (%llu elements)",
                      (unsigned long long)rows, (unsigned long long)n, (unsigned long long)g->max_w);
        gemm_q_pack(g->ctx, t, w, rows, n, g->wq);
        a = g->wq;
    }
    gemm_q_run(g->ctx, t, a, g->xt, parts, rows, n, T, y, (flags & CUDA_GEMM_Y_BF16) != 0, scale,
               tiled ? NULL : g->xhi, tiled ? NULL : g->xlo);
}

extern "C" void cuda_gemm_run_kept(struct cuda_gemm *g, enum dtype t, const void *w, const void *kept,
                                   uint64_t rows, uint64_t n, const float *x, uint32_t T, float *y, float scale,
                                   unsigned flags)
{
    if (!cuda_gemm_supported(t, rows, n))
        CUDA_FAIL("cuda_gemm: %s %llu×%llu not supported", dtype_name(t), (unsigned long long)rows,
                  (unsigned long long)n);
    if (T == 0)
        return;
    if ((uintptr_t)w % 256 || (uintptr_t)y % 16)
        CUDA_FAIL("cuda_gemm: w must be 256-byte and y 16-byte aligned");
    const bool exact = g->mode != CUDA_GEMM_FAST; /* the weights' values kept whole */
    const bool accum = (flags & CUDA_GEMM_ACCUM) != 0, y16 = (flags & CUDA_GEMM_Y_BF16) != 0;
    if (accum && !cuda_gemm_accum_takes(g, t, false, rows, n, scale))
        CUDA_FAIL("cuda_gemm: %s %llu×%llu cannot add into y (cuda_gemm_accum_takes)", dtype_name(t),
                  (unsigned long long)rows, (unsigned long long)n);
    if (y16 && (accum || !cuda_gemm_y_bf16_takes(g, t, rows, n)))
        CUDA_FAIL("cuda_gemm: %s %llu×%llu cannot write a bf16 y (cuda_gemm_y_bf16_takes)%s", dtype_name(t),
                  (unsigned long long)rows, (unsigned long long)n, accum ? " and add into it" : "");
    if (cuda_gemm_promoted(g, t, rows, n)) {
        run_promoted(g, t, w, kept, rows, n, x, T, y, scale, flags);
        return;
    }
    if (t == DTYPE_F32) { /* TF32 (FAST) or f32 (EXACT), x read as is */
        gemm_plans_run(g->pl, CUDA_R_32F, w, CUDA_R_32F, x, exact ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32,
                       rows, n, T, y, scale, accum ? 1.0f : 0.0f, gemm_align_of(n * 4));
        return;
    }
    const enum xkind xk = xkind_of(t);
    prep_x(g, xk, x, n, T, (flags & CUDA_GEMM_X_PREPARED) != 0);
    const void *a = w, *wlo = g->wlo;
    const bool deq = t != DTYPE_BF16 && t != DTYPE_F16;
    if (deq && kept) { /* cuda_gemm_keep's copy: the values the scratch would get */
        a = kept;
        wlo = (const uint8_t *)kept + kept_lo_offset(rows, n);
    } else if (deq) {
        cuda_gemm_dequant(g, t, w, rows, n);
        a = g->whi;
    }
    run_parts(g, xk, a, exact && gemv_quant_has(t) ? wlo : NULL, rows, n, T, y, scale, accum, y16);
}

extern "C" void cuda_gemm_run_bs(struct cuda_gemm *g, const void *w, const float *bs, const void *kept, uint64_t rows,
                                 uint64_t n, const float *x, uint32_t T, float *y, float scale, unsigned flags)
{
    if (!cuda_gemm_supported(DTYPE_F8_E4M3, rows, n) || !bs)
        CUDA_FAIL("cuda_gemm_run_bs: F8_E4M3 %llu×%llu not supported, or no block scales", (unsigned long long)rows,
                  (unsigned long long)n);
    if (T == 0)
        return;
    if ((uintptr_t)w % 256 || (uintptr_t)y % 16)
        CUDA_FAIL("cuda_gemm: w must be 256-byte and y 16-byte aligned");
    const bool exact = g->mode != CUDA_GEMM_FAST, accum = (flags & CUDA_GEMM_ACCUM) != 0;
    if (flags & CUDA_GEMM_Y_BF16)
        CUDA_FAIL("cuda_gemm_run_bs: no bf16 y (cuda_gemm_y_bf16_takes is for cuda_gemm_run_kept)");
    if (accum && !cuda_gemm_accum_takes(g, DTYPE_F8_E4M3, true, rows, n, scale))
        CUDA_FAIL("cuda_gemm_run_bs: %llu×%llu cannot add into y (cuda_gemm_accum_takes)", (unsigned long long)rows,
                  (unsigned long long)n);
    prep_x(g, XK_BF16, x, n, T, (flags & CUDA_GEMM_X_PREPARED) != 0);
    const void *a = kept, *wlo = NULL;
    if (kept) {
        wlo = exact ? (const uint8_t *)kept + kept_lo_offset(rows, n) : NULL;
    } else {
        if (rows * n > g->max_w)
            CUDA_FAIL("cuda_gemm: weight %llu×%llu exceeds the dequantization scratch (%llu elements)",
                      (unsigned long long)rows, (unsigned long long)n, (unsigned long long)g->max_w);
        dequant_f8bs(g, w, bs, rows, n, g->whi, exact ? g->wlo : NULL);
        a = g->whi;
        wlo = exact ? g->wlo : NULL;
    }
    run_parts(g, XK_BF16, a, wlo, rows, n, T, y, scale, accum, false);
}

extern "C" void cuda_gemm_run(struct cuda_gemm *g, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                              const float *x, uint32_t T, float *y, float scale, unsigned flags)
{
    cuda_gemm_run_kept(g, t, w, NULL, rows, n, x, T, y, scale, flags);
}
