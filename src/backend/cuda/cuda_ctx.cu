/* backend/cuda/cuda_ctx.cu — the device context: device selection, properties,
 * the stream every launcher uses, device memory, copies and event timers.
 *
 * One context per device per process; the engine thread owns it (no locking).
 * cudaMalloc'd memory is 256-byte aligned, which the GEMV kernels' 16-byte
 * loads rely on.
 */
#include <math.h>
#include <string.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/cuda_common.cuh"
#include "core/checked.h"

extern "C" bool cuda_env_on_off(const char *name, bool *on, char *err, size_t errlen)
{
    const char *v = getenv(name);
    *on = !(v && strcmp(v, "off") == 0);
    if (v && *v && strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s=%s: expected on or off", name, v);
        return false;
    }
    return true;
}

extern "C" bool cuda_env_pick(const char *name, const char *const *choices, int n, int *out, char *err, size_t errlen)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return true;
    for (int i = 0; i < n; i++)
        if (strcmp(v, choices[i]) == 0) {
            *out = i;
            return true;
        }
    if (err && errlen) {
        int k = snprintf(err, errlen, "%s=%s: expected ", name, v);
        for (int i = 0; i < n && k >= 0 && (size_t)k < errlen; i++)
            k += snprintf(err + k, errlen - (size_t)k, "%s%s", choices[i], i + 2 < n ? ", " : i + 1 < n ? " or " : "");
    }
    return false;
}

extern "C" struct cuda_ctx *cuda_ctx_init(int device, char *err, size_t errlen)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && device >= CUDA_MAX_DEVICES) {
        if (err && errlen)
            snprintf(err, errlen, "CUDA device %d: memra takes device ids 0..%d", device, CUDA_MAX_DEVICES - 1);
        return NULL;
    }
    if (e != cudaSuccess || device < 0 || device >= count) {
        if (err && errlen)
            snprintf(err, errlen, "CUDA device %d not available (%d devices%s%s)", device, count,
                     e != cudaSuccess ? ": " : "", e != cudaSuccess ? cudaGetErrorString(e) : "");
        return NULL;
    }
    bool pdl, staged;
    if (!cuda_env_on_off("MEMRA_PDL", &pdl, err, errlen) || !cuda_env_on_off("MEMRA_GEMV_STAGED", &staged, err, errlen))
        return NULL;
    /* MEMRA_GEMV_MMA: off / on (unset, empty) / all — CUDA_GEMV_MMA_OFF, _Q4K, _ALL */
    static const char *const mma_modes[] = {"off", "on", "all"};
    int mma = CUDA_GEMV_MMA_Q4K;
    if (!cuda_env_pick("MEMRA_GEMV_MMA", mma_modes, 3, &mma, err, errlen))
        return NULL;
    /* MEMRA_GEMV_MMA_GRID: auto (unset, empty) / tiles / resident, CUDA_GEMV_MMA_GRID_*'s order */
    static const char *const grid_modes[] = {"auto", "tiles", "resident"};
    int mma_grid = 0;
    if (!cuda_env_pick("MEMRA_GEMV_MMA_GRID", grid_modes, 3, &mma_grid, err, errlen))
        return NULL;
    /* MEMRA_GEMV_KSPLIT: the dp4a GEMVs' K split for every batch size — auto (unset, empty: 4, the output head 1),
     * 1 or 4 (every matrix) */
    static const char *const ks_modes[] = {"auto", "1", "4"};
    int ksm = 0;
    if (!cuda_env_pick("MEMRA_GEMV_KSPLIT", ks_modes, 3, &ksm, err, errlen))
        return NULL;
    /* decode attention: one CTA a row from this many rows a launch on (attn_decode.cu) */
    const char *rows = getenv("MEMRA_ATTN_ROWS");
    uint32_t rows_min = CUDA_ATTN_ROWS_AUTO;
    if (rows && *rows && strcmp(rows, "auto") != 0 && checked_parse_u32(rows, 0, 65535, &rows_min) != 0) {
        if (err && errlen)
            snprintf(err, errlen, "MEMRA_ATTN_ROWS=%s: expected auto or 0 (never) .. 65535 rows", rows);
        return NULL;
    }
    /* decode attention: short rows one query head a CTA below this position (attn_decode.cu) */
    const char *hs = getenv("MEMRA_ATTN_HSPLIT");
    uint32_t hsplit = CUDA_ATTN_HSPLIT_AUTO;
    if (hs && *hs && strcmp(hs, "auto") != 0 &&
        (checked_parse_u32(hs, 0, UINT32_MAX, &hsplit) != 0 || hsplit == CUDA_ATTN_HSPLIT_AUTO)) {
        if (err && errlen)
            snprintf(err, errlen, "MEMRA_ATTN_HSPLIT=%s: expected auto or a position (0: never)", hs);
        return NULL;
    }
    /* decode attention: the fewest chunks of 32 positions a split takes (attn_decode.cuh dec_row_splits) */
    const char *sc = getenv("MEMRA_ATTN_SPLIT_CHUNKS");
    uint32_t split_chunks = CUDA_ATTN_SPLIT_CHUNKS_DEFAULT;
    if (sc && *sc && checked_parse_u32(sc, 1, 64, &split_chunks) != 0) {
        if (err && errlen)
            snprintf(err, errlen, "MEMRA_ATTN_SPLIT_CHUNKS=%s: expected 1 .. 64 chunks", sc);
        return NULL;
    }
    /* decode attention on the tensor cores (attn_decode_tc.cu) or the f32 kernels: the names in
     * enum cuda_attn_decode_kernels' order */
    static const char *const attn_modes[] = {"auto", "f32", "tc"};
    int attn_kernels = CUDA_ATTN_DECODE_AUTO;
    if (!cuda_env_pick("MEMRA_ATTN_DECODE", attn_modes, 3, &attn_kernels, err, errlen))
        return NULL;
    /* the tensor-core decode attention's q home, rows form and split launches of >= 8 rows (attn_decode_tc.cu),
     * enum cuda_attn_tc_q's order */
    static const char *const tc_q_modes[] = {"auto", "regs", "smem"};
    int tc_q = CUDA_ATTN_TC_Q_AUTO;
    if (!cuda_env_pick("MEMRA_ATTN_TC_Q", tc_q_modes, 3, &tc_q, err, errlen))
        return NULL;
    /* the tensor-core decode attention's numerics: q and P split (off) or in one bf16 part (on) */
    static const char *const one_modes[] = {"off", "on"};
    int dec_one = 0;
    if (!cuda_env_pick("MEMRA_ATTN_DECODE_ONE", one_modes, 2, &dec_one, err, errlen))
        return NULL;
    /* prefill attention: query rows a CTA for spans that are not split (attn_prefill.cu) */
    static const char *const bm_modes[] = {"128", "64"};
    int bm = 0;
    if (!cuda_env_pick("MEMRA_ATTN_PREFILL_BM", bm_modes, 2, &bm, err, errlen))
        return NULL;
    /* prefill attention's fast mode on a bf16 cache at head_dim 128: the wgmma kernels (attn_prefill_wg.cu,
     * attn_prefill_ws.cu) */
    static const char *const wg_modes[] = {"pipe",       "serial", "off",    "overlap",
                                           "overlap128", "ws128",  "ws128pp"}; /* enum cuda_attn_prefill_wg's order */
    int pwg = CUDA_ATTN_PREFILL_WG_WS128PP; /* the fastest form (bench/RESULTS.md forty-fourth run) */
    if (!cuda_env_pick("MEMRA_ATTN_PREFILL_WG", wg_modes, 7, &pwg, err, errlen))
        return NULL;
    struct cuda_ctx *ctx = (struct cuda_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        CUDA_FAIL("out of host memory");
    ctx->device = device;
    ctx->pdl = pdl;
    ctx->attn_rows_min = rows_min;
    ctx->attn_hsplit = hsplit;
    ctx->attn_split_chunks = split_chunks;
    ctx->attn_prefill_bm = bm == 0 ? 128 : 64;
    ctx->attn_prefill_wg = (enum cuda_attn_prefill_wg)pwg;
    ctx->attn_kernels = (enum cuda_attn_decode_kernels)attn_kernels;
    ctx->attn_tc_q = (enum cuda_attn_tc_q)tc_q;
    ctx->attn_dec_one = dec_one == 1;
    ctx->gemv_staged = staged;
    ctx->gemv_mma = mma, ctx->gemv_mma_grid = mma_grid;
    ctx->gemv_ks = ksm == 0 ? CUDA_GEMV_KS_AUTO : ksm == 1 ? 1 : 4;
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaGetDeviceProperties(&ctx->prop, device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->side, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&ctx->side_fork, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&ctx->side_done, cudaEventDisableTiming));
    return ctx;
}

/* Fork and join (graph capture records them as a node's two dependents and a
 * node with two dependencies): the side stream waits for what the main one
 * holds so far, then takes the launches until cuda_ctx_side_end (without the
 * PDL attribute: their dependency is an event, not the kernel before them). */
extern "C" void cuda_ctx_side_begin(struct cuda_ctx *ctx)
{
    if (ctx->stream == ctx->side)
        CUDA_FAIL("cuda_ctx_side_begin: the side stream is already current");
    CUDA_CHECK(cudaEventRecord(ctx->side_fork, ctx->stream));
    CUDA_CHECK(cudaStreamWaitEvent(ctx->side, ctx->side_fork, 0));
    ctx->main_stream = ctx->stream;
    ctx->stream = ctx->side;
    ctx->side_pdl = ctx->pdl;
    ctx->pdl = false;
}

extern "C" void cuda_ctx_side_end(struct cuda_ctx *ctx)
{
    if (ctx->stream != ctx->side)
        CUDA_FAIL("cuda_ctx_side_end: no side stream is current");
    CUDA_CHECK(cudaEventRecord(ctx->side_done, ctx->side));
    ctx->stream = ctx->main_stream;
    ctx->pdl = ctx->side_pdl;
}

extern "C" void cuda_ctx_side_join(struct cuda_ctx *ctx)
{
    CUDA_CHECK(cudaStreamWaitEvent(ctx->stream, ctx->side_done, 0));
}

extern "C" void cuda_ctx_free(struct cuda_ctx *ctx)
{
    if (!ctx)
        return;
    CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
    CUDA_CHECK(cudaStreamSynchronize(ctx->side)); /* (joined into the main one, so already done) */
    if (ctx->blas)
        CUBLAS_CHECK(cublasDestroy(ctx->blas));
    if (ctx->blas_ws)
        CUDA_CHECK(cudaFree(ctx->blas_ws));
    void *bufs[] = {ctx->xq, ctx->mmv_part, ctx->mmv_cnt, ctx->mmv_xs, ctx->mmv_xs2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            CUDA_CHECK(cudaFree(bufs[i]));
    CUDA_CHECK(cudaEventDestroy(ctx->side_fork));
    CUDA_CHECK(cudaEventDestroy(ctx->side_done));
    CUDA_CHECK(cudaStreamDestroy(ctx->side));
    CUDA_CHECK(cudaStreamDestroy(ctx->stream));
    free(ctx);
}

extern "C" const char *cuda_ctx_device_name(const struct cuda_ctx *ctx) { return ctx->prop.name; }
extern "C" int cuda_ctx_sm_count(const struct cuda_ctx *ctx) { return ctx->prop.multiProcessorCount; }
extern "C" size_t cuda_ctx_l2_bytes(const struct cuda_ctx *ctx) { return (size_t)ctx->prop.l2CacheSize; }
extern "C" size_t cuda_ctx_mem_bytes(const struct cuda_ctx *ctx) { return ctx->prop.totalGlobalMem; }

extern "C" void cuda_ctx_sync(struct cuda_ctx *ctx) { CUDA_CHECK(cudaStreamSynchronize(ctx->stream)); }

extern "C" void *cuda_alloc(size_t bytes)
{
    void *p = NULL;
    /* 16 bytes of slack past the end: the staged GEMV's bulk copies read
     * whole aligned 16-byte units (gemv_quant.cu) */
    if (bytes > SIZE_MAX - 32)
        CUDA_FAIL("cuda_alloc: %zu bytes", bytes);
    CUDA_CHECK(cudaMalloc(&p, bytes + 16));
    return p;
}

extern "C" void cuda_ctx_set_gemv_staged(struct cuda_ctx *ctx, bool on) { ctx->gemv_staged = on; }

extern "C" void cuda_ctx_set_gemv_mma(struct cuda_ctx *ctx, int mode, int ks)
{
    if ((ks != 0 && ks != 1 && ks != 2 && ks != 4 && ks != 8) || mode < CUDA_GEMV_MMA_OFF || mode > CUDA_GEMV_MMA_ALL)
        CUDA_FAIL("cuda_ctx_set_gemv_mma: mode %d, ks %d (modes 0-2, ks 0, 1, 2, 4, 8)", mode, ks);
    ctx->gemv_mma = mode, ctx->gemv_mma_ks = ks;
}

extern "C" void cuda_ctx_set_gemv_mma_grid(struct cuda_ctx *ctx, int mode)
{
    if (mode < CUDA_GEMV_MMA_GRID_AUTO || mode > CUDA_GEMV_MMA_GRID_RESIDENT)
        CUDA_FAIL("cuda_ctx_set_gemv_mma_grid: mode %d (0-2)", mode);
    ctx->gemv_mma_grid = mode;
}

extern "C" void cuda_free(void *p)
{
    if (p)
        CUDA_CHECK(cudaFree(p));
}

extern "C" void cuda_upload(struct cuda_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx->stream));
    CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
}

extern "C" void cuda_download(struct cuda_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
}

extern "C" void cuda_copy_d2d(struct cuda_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx->stream));
}

static __global__ void kernel_fill_nan(float *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __int_as_float(0x7fc00000);
}

extern "C" void cuda_fill_nan_f32(struct cuda_ctx *ctx, float *p, size_t n)
{
    if (!n)
        return;
    unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    kernel_fill_nan<<<blocks, 256, 0, ctx->stream>>>(p, n);
    CUDA_CHECK_LAUNCH();
}

struct cuda_timer {
    cudaEvent_t start, stop;
};

extern "C" struct cuda_timer *cuda_timer_new(void)
{
    struct cuda_timer *t = (struct cuda_timer *)calloc(1, sizeof *t);
    if (!t)
        CUDA_FAIL("out of host memory");
    CUDA_CHECK(cudaEventCreate(&t->start));
    CUDA_CHECK(cudaEventCreate(&t->stop));
    return t;
}

extern "C" void cuda_timer_free(struct cuda_timer *t)
{
    if (!t)
        return;
    CUDA_CHECK(cudaEventDestroy(t->start));
    CUDA_CHECK(cudaEventDestroy(t->stop));
    free(t);
}

extern "C" void cuda_timer_start(struct cuda_ctx *ctx, struct cuda_timer *t)
{
    CUDA_CHECK(cudaEventRecord(t->start, ctx->stream));
}

extern "C" void cuda_timer_stop(struct cuda_ctx *ctx, struct cuda_timer *t)
{
    CUDA_CHECK(cudaEventRecord(t->stop, ctx->stream));
}

extern "C" float cuda_timer_ms(struct cuda_timer *t)
{
    float ms = 0.0f;
    CUDA_CHECK(cudaEventSynchronize(t->stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms, t->start, t->stop));
    return ms;
}

struct cuda_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

extern "C" void cuda_graph_begin(struct cuda_ctx *ctx)
{
    CUDA_CHECK(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
}

extern "C" struct cuda_graph *cuda_graph_end(struct cuda_ctx *ctx)
{
    struct cuda_graph *g = (struct cuda_graph *)calloc(1, sizeof *g);
    if (!g)
        CUDA_FAIL("out of host memory");
    CUDA_CHECK(cudaStreamEndCapture(ctx->stream, &g->graph));
    CUDA_CHECK(cudaGraphInstantiate(&g->exec, g->graph, 0));
    return g;
}

extern "C" void cuda_graph_launch(struct cuda_ctx *ctx, struct cuda_graph *g)
{
    CUDA_CHECK(cudaGraphLaunch(g->exec, ctx->stream));
}

extern "C" void cuda_graph_free(struct cuda_graph *g)
{
    if (!g)
        return;
    CUDA_CHECK(cudaGraphExecDestroy(g->exec));
    CUDA_CHECK(cudaGraphDestroy(g->graph));
    free(g);
}
