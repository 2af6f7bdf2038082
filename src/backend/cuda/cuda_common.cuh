/* backend/cuda/cuda_common.cuh — what every .cu file of the CUDA backend shares:
 * the abort-on-error check macros, the context struct behind the opaque
 * struct cuda_ctx of cuda_ops.h, and small device helpers (16-byte loads that
 * bypass L1, warp/block sums).
 *
 * CUDA_CHECK(call) / CUBLAS_CHECK(call): on failure print
 * "file:line: call: reason" and abort (DESIGN.md §3.2: device errors are fatal).
 * CUDA_CHECK_LAUNCH() after every launch catches bad configurations at once.
 */
#ifndef MEMRA_BACKEND_CUDA_COMMON_CUH
#define MEMRA_BACKEND_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/cuda_ops.h"

/* RoPE's angle for position pos and frequency f (inv_freq[i]) and one rotated pair, the operations pinned (explicit
 * FMAs: nvcc may contract x0·c − x1·s either way) so that the RoPE kernel (fwd.cu) and the GEMVs that rotate a lone
 * token's q and k in their epilogue (cuda_fwd_gemv_rope_kv) give the same bits. */
static __device__ __forceinline__ void rope_cos_sin(uint32_t pos, float f, float &c, float &s)
{
    const float a = (float)pos * f;
    c = cosf(a), s = sinf(a);
}
static __device__ __forceinline__ void rope_rotate(float x0, float x1, float c, float s, float &y0, float &y1)
{
    y0 = fmaf(x0, c, -(x1 * s));
    y1 = fmaf(x1, c, x0 * s);
}
/* Element i of a KV row (cuda_kv_view: f32, or bf16 rounded to nearest even). */
static __device__ __forceinline__ void kv_put(void *row, bool bf16, uint64_t i, float x)
{
    if (bf16)
        reinterpret_cast<__nv_bfloat16 *>(row)[i] = __float2bfloat16_rn(x);
    else
        reinterpret_cast<float *>(row)[i] = x;
}

/* v rounded to bf16 (nearest even) when rnd: a matmul input under
 * cuda_ctx_set_act_bf16 (the CPU's quant_f32_to_bf16 bits). */
static __device__ __forceinline__ float act_round(float v, bool rnd)
{
    return rnd ? __bfloat162float(__float2bfloat16_rn(v)) : v;
}
/* act(g) · u of a gated FFN: silu, or gelu-tanh (gelu); every GLU kernel's and
 * the gate|up GEMV's fused epilogue's (mmv_wg.cu) one expression */
static __device__ __forceinline__ float glu_one(float g, float u, bool gelu)
{
    if (gelu) {
        const float k0 = 0.7978845608028654f, k1 = 0.044715f; /* sqrt(2/pi) */
        return 0.5f * g * (1.0f + tanhf(k0 * (g + k1 * g * g * g))) * u;
    }
    return g / (1.0f + expf(-g)) * u;
}
/* A dense FFN's GLU output, a matmul's input: under bf16 activations (rnd) gate and up rounded to bf16 first —
 * where the prefill GEMMs write them as bf16 (CUDA_GEMM_Y_BF16) that is what they hold, and every other path
 * (the GEMVs' f32 outputs, the fused epilogue) rounds to the same values (the CPU's cpu_glu) — and the result;
 * MoE experts keep f32 gate and up (norm.cu's silu_mul). */
static __device__ __forceinline__ float glu_in(float g, float u, bool gelu, bool rnd)
{
    return act_round(glu_one(act_round(g, rnd), act_round(u, rnd), gelu), rnd);
}
static __device__ __forceinline__ float4 act_round4(float4 v, bool rnd)
{
    return rnd ? make_float4(act_round(v.x, true), act_round(v.y, true), act_round(v.z, true), act_round(v.w, true))
               : v;
}

#define CUDA_CHECK(call)                                                                         \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_), \
                    cudaGetErrorName(e_));                                                       \
            abort();                                                                             \
        }                                                                                        \
    } while (0)

#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(call)                                                                       \
    do {                                                                                         \
        cublasStatus_t s_ = (call);                                                              \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, (int)s_); \
            abort();                                                                             \
        }                                                                                        \
    } while (0)

/* Abort with a message: for launcher preconditions (programming errors). */
#define CUDA_FAIL(...)                                                                           \
    do {                                                                                         \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                          \
        fprintf(stderr, __VA_ARGS__);                                                            \
        fputc('\n', stderr);                                                                     \
        abort();                                                                                 \
    } while (0)

struct cuda_ctx {
    int device;
    cudaDeviceProp prop;
    cudaStream_t stream;
    cublasHandle_t blas; /* created on first use */
    void *blas_ws;       /* its workspace */
    void *xq;            /* quantized-GEMV activations (gemv_quant.cu), grown on demand */
    size_t xq_bytes;
    uint64_t xq_n;       /* what it holds now: n and batch of the last cuda_gemv_prep_x */
    uint32_t xq_batch;
    void *mmv_part;      /* tensor-core GEMV (mmv.cu): per-slice partial sums (S, T, rows) f32 */
    size_t mmv_part_bytes;
    void *mmv_cnt;       /* (mmv_cnt_n) finished slices per row block, 0 between launches */
    size_t mmv_cnt_n;
    enum cuda_mmv_kernel mmv_kernel; /* what cuda_mmv runs: mmv_wg.cu (default) or mmv.cu */
    bool act_bf16;       /* cuda_ctx_set_act_bf16: matmul inputs rounded to bf16 by their producers */
    void *mmv_xs;        /* mmv_wg.cu: x split into bf16 hi/lo rows (2·64, n) */
    void *mmv_xs2;       /* the same size: the rows cuda_mmv_wg_glu writes while it reads mmv_xs (then swapped) */
    size_t mmv_xs_bytes;
    const float *mmv_xs_src; /* what it holds: the split of this x (T, n) */
    uint32_t mmv_xs_t;
    uint64_t mmv_xs_n;
    bool pdl;                /* cuda_launch's PDL attribute (below) */
    cudaStream_t side;       /* cuda_ctx_side_begin: a second stream for a launch beside the main one's */
    cudaStream_t main_stream; /* stream while the side one is current */
    cudaEvent_t side_fork, side_done;
    bool side_pdl;           /* pdl while the side stream is current (its launches go without) */
    bool mmv_narrow;         /* mmv_wg.cu: the launch shares the SMs with a side-stream one (smaller ring) */
    bool gemv_staged;        /* quantized GEMVs with ksplit 1: the staged kernel, else the
                              * register one (gemv_quant.cu; MEMRA_GEMV_STAGED) */
    int gemv_mma;            /* which GEMVs run on the int8 tensor cores: CUDA_GEMV_MMA_* (gemv_mma.cu; MEMRA_GEMV_MMA) */
    int gemv_mma_ks;         /* its K split: 0 = by shape (tests set 1, 2, 4, 8) */
    int gemv_mma_grid;       /* its grid: CUDA_GEMV_MMA_GRID_* (cuda_ctx_set_gemv_mma_grid; MEMRA_GEMV_MMA_GRID) */
    int gemv_ks;             /* the engine's K split for the dp4a GEMVs, every batch size: 1, 4 or
                              * CUDA_GEMV_KS_AUTO (cuda_gemv_engine_ksplit; MEMRA_GEMV_KSPLIT) */
    uint32_t attn_rows_min;  /* decode attention: launches of ≥ this many rows run one CTA a row
                              * (attn_decode.cu; 0 = never; MEMRA_ATTN_ROWS) */
    uint32_t attn_prefill_bm; /* prefill attention: query rows a CTA for unsplit spans, 64 or 128
                               * (attn_prefill.cu; MEMRA_ATTN_PREFILL_BM) */
    enum cuda_attn_prefill_wg attn_prefill_wg; /* prefill attention, fast mode on a bf16 cache at head_dim
                              * 128: the wgmma kernel's form or off (attn_prefill_wg.cu; MEMRA_ATTN_PREFILL_WG) */
    uint32_t attn_split_chunks; /* decode attention: the fewest chunks a split takes where a row has
                              * them (attn_decode.cuh dec_row_splits; 1 = all 32 splits; MEMRA_ATTN_SPLIT_CHUNKS) */
    uint32_t attn_hsplit;    /* decode attention, launches of < 8 rows: rows at positions below this
                              * take one query head a CTA (0 = never; MEMRA_ATTN_HSPLIT) */
    enum cuda_attn_decode_kernels attn_kernels; /* decode attention: f32 kernels or the bf16 tensor
                              * cores (attn_decode_tc.cu; MEMRA_ATTN_DECODE, attn.h) */
    bool attn_dec_one;       /* the tensor-core decode attention: q and P in one bf16 part each, one
                              * product a pair (cuda_attn_decode_set_one) */
    enum cuda_attn_tc_q attn_tc_q; /* the tensor-core decode attention's q (rows form, split launches of
                              * >= 8 rows): registers or shared memory (attn_decode_tc.cu; MEMRA_ATTN_TC_Q, attn.h) */
};

/* ---- programmatic dependent launch (PDL) ---------------------------------
 * The kernels of the decode path are launched through cuda_launch, which (when
 * ctx->pdl, MEMRA_PDL) lets a kernel's blocks start while the kernel before it
 * on the stream is still running: they become resident, compute their indices
 * and issue their loads of constant data, then wait. In a decode step of ~400
 * small dependent kernels this hides part of each launch's ramp: +3 % at
 * tg128 on the 8B model (bench/RESULTS.md, 2026-12-01 sixth run). The
 * contract of every kernel launched through cuda_launch:
 *   - pdl_wait() before its first access — read or write — to memory that
 *     another kernel of the stream writes or reads. Only constant data may be
 *     touched before it: weights, and what was uploaded before the step
 *     (positions, block tables); the decode attention also reads keys and
 *     values of earlier steps when its caller says they are settled (attn.h).
 *   - pdl_trigger() once the next kernel may take SM room: it only lets the
 *     next kernel be scheduled (its blocks then wait for this one to finish
 *     and flush); it says nothing about memory. The short kernels trigger at
 *     their top (pdl_enter), the GEMVs after their main loop.
 * A waiting kernel's own predecessor may still be running while it runs its
 * pre-wait part (the chain can run ahead), hence "constant" above. Both calls
 * are no-ops when the kernel was launched without the attribute, so the
 * kernels are the same in every mode and outside graphs, and give the same
 * bits. Tried and dropped (same calls): cp.async.bulk.prefetch.L2 of each
 * block's weight rows before the wait (−9 % to −20 % at tg128), the decode
 * attention's first two chunks instead of one ahead of the wait (no gain). */
static __device__ __forceinline__ void pdl_wait(void) { asm volatile("griddepcontrol.wait;" ::: "memory"); }
static __device__ __forceinline__ void pdl_trigger(void) { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
/* The top of a kernel that touches nothing before its inputs are ready. */
static __device__ __forceinline__ void pdl_enter(void)
{
    pdl_trigger();
    pdl_wait();
}

/* A kernel's attributes (cudaFuncSetAttribute: e.g. more than 48 KB of
 * dynamic shared memory) belong to one device. A launcher keeps a static mask
 * of the devices it has set them on and asks this before each launch: true
 * the first time for `device`, whose bit it sets. The mask is shared by the
 * contexts of all devices, which may launch from their own threads, so the bit
 * is set atomically; a device's own launches come from its context's one
 * thread, so its attribute is set before its first launch. Devices are <
 * CUDA_MAX_DEVICES (cuda_ctx_init refuses others). */
#define CUDA_MAX_DEVICES 32
static inline bool cuda_first_on_device(uint32_t &mask, int device)
{
    const uint32_t bit = 1u << device;
    return (__atomic_fetch_or(&mask, bit, __ATOMIC_RELAXED) & bit) == 0;
}

/* kernel<<<grid, block, smem, ctx->stream>>>(args...), with the PDL attribute
 * when ctx->pdl. */
template <typename... K, typename... A>
static inline void cuda_launch(const struct cuda_ctx *ctx, void (*kernel)(K...), dim3 grid, dim3 block, size_t smem,
                               A... args)
{
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = ctx->stream;
    cfg.attrs = at;
    cfg.numAttrs = ctx->pdl ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

/* ---- device helpers ------------------------------------------------------ */

/* 16-byte streaming load: weights are read once per GEMV, so keep them out of
 * L1 (which holds the activations) — ld.global.nc.L1::no_allocate. */
static __device__ __forceinline__ uint4 ldg_stream16(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
/* The same for 8 bytes (8-aligned). */
static __device__ __forceinline__ uint2 ldg_stream8(const void *p)
{
    uint2 v;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum acc[K] over the whole thread block (blockDim.x = NT, a multiple of 32);
 * the totals land in thread 0's out[K]. `red` is NT/32·K floats of shared memory. */
template <int NT, int K>
static __device__ __forceinline__ void block_sum(float (&acc)[K], float *red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < K; k++) {
        float v = warp_sum(acc[k]);
        if (lane == 0)
            red[warp * K + k] = v;
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            float v = lane < NT / 32 ? red[lane * K + k] : 0.0f;
            acc[k] = warp_sum(v);
        }
    }
}

/* ---- the greedy rule's (value, index) reductions (sample.cu, topk.cu) ---- */

/* a better than b: larger value, or equal and a lower index */
static __device__ __forceinline__ bool am_better(float va, int ia, float vb, int ib)
{
    return va > vb || (va == vb && ia < ib);
}

/* The sampler's cleaned logit (sample/sampler.c): NaN → −inf, +inf → FLT_MAX. */
static __device__ __forceinline__ float logit_clean(float v)
{
    return isnan(v) ? -INFINITY : v == INFINITY ? FLT_MAX : v;
}

/* Cleaned logit l of token i into a thread's running greedy pick (best, at):
 * a thread's i rise, so the first of equal maxima stays. */
static __device__ __forceinline__ void greedy_fold(float l, uint32_t i, float &best, int &at)
{
    if (l > best)
        best = l, at = (int)i;
}

/* The best (value, index) of the warp into every lane; index −1 = nothing seen. */
static __device__ __forceinline__ void am_warp_best(float &best, int &at)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, best, o);
        const int oi = __shfl_xor_sync(0xffffffffu, at, o);
        if (oi >= 0 && (at < 0 || am_better(ov, oi, best, at)))
            best = ov, at = oi;
    }
}

/* The block's best (value, index) into every lane of warp 0; all NT threads
 * (≤ 1024) call it; sv / si: NT / 32 shared slots each. */
template <int NT>
static __device__ __forceinline__ void am_block_best(float &best, int &at, float *sv, int *si)
{
    am_warp_best(best, at);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        sv[warp] = best, si[warp] = at;
    __syncthreads();
    if (warp == 0) {
        best = lane < NT / 32 ? sv[lane] : -INFINITY;
        at = lane < NT / 32 ? si[lane] : -1;
        am_warp_best(best, at);
    }
}

/* mmv_wg.cu's launcher behind cuda_mmv / cuda_mmv_wg_variant (mmv.cu picks
 * the kernel); reuse: x is the same as in the call before on this context,
 * whose split into bf16 hi/lo rows may serve again; slices: the K slices (0:
 * the shape's own, cuda_mmv_wg_slices; else a power of 2 ≤ 8: cuda_mmv_sliced). */
extern "C" void cuda_mmv_wg_launch(struct cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x,
                                   uint32_t T, float *y, float scale, int variant, bool reuse, uint32_t slices);
/* ... and behind cuda_mmv_glu (cuda_ops.h), the gate|up launch with the GLU epilogue */
extern "C" bool cuda_mmv_wg_glu(struct cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x,
                                uint32_t T, const float *out, float scale, bool gelu, bool reuse, uint32_t slices);

#endif
