/* backend/cuda/gemv_plain.cu — decode GEMV for the plain float weight types:
 * BF16, F16 (2 bytes an element) and FP8 E4M3 (1 byte, per-tensor scale; or
 * a scale a 128 × 128 block besides, cuda_gemv_bs: plain_f8e4m3_bs).
 *
 *   y[b][r] = scale · Σ_i W[r, i] · x[b][i]      W (rows, n) row-major in device memory
 *
 * Floor: the weights are read once, so time ≥ rows·n·bytes_per_element / 4.3 TB/s
 * (the measured device-to-device copy rate of the H200): 4096×4096 BF16 = 33.6 MB
 * → 7.8 µs; 14336×4096 BF16 → 27.3 µs; 128256×4096 BF16 → 244 µs; FP8 half of that.
 * x (f32, ≤ 8·n·4 bytes) stays in L1/L2 and is not counted.
 *
 * Shape of the kernel: a thread block of 256 threads owns R consecutive rows
 * (R = 1, 2 or 4; the launcher's choice is the measured best, bench/GEMV.md).
 * Each thread walks the rows in 16-byte chunks strided by the block (coalesced:
 * 256 consecutive chunks of a row per step), issues the loads of U chunks × R
 * rows before using any (several 16-byte loads in flight per thread), converts
 * to f32 and accumulates R·batch partial sums in f32; a block-wide sum ends it.
 * Weight loads bypass L1 (ld.global.nc.L1::no_allocate) so that L1 keeps x.
 * Batch > 1 reuses each decoded chunk for every activation vector.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"

namespace {

constexpr int NT = 256; /* threads per block */

struct plain_bf16 {
    static constexpr int EPC = 8; /* elements per 16-byte chunk */
    static constexpr bool BSC = false; /* block scales (plain_f8e4m3_bs) */
    static __device__ __forceinline__ void decode(uint4 v, float (&f)[EPC])
    {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            f[2 * i] = __uint_as_float(w[i] << 16);
            f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
};

struct plain_f16 {
    static constexpr int EPC = 8;
    static constexpr bool BSC = false;
    static __device__ __forceinline__ void decode(uint4 v, float (&f)[EPC])
    {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            __half2_raw r;
            r.x = (unsigned short)(w[i] & 0xffffu);
            r.y = (unsigned short)(w[i] >> 16);
            float2 p = __half22float2(__half2(r));
            f[2 * i] = p.x;
            f[2 * i + 1] = p.y;
        }
    }
};

struct plain_f8e4m3 {
    static constexpr int EPC = 16;
    static constexpr bool BSC = false;
    static __device__ __forceinline__ void decode(uint4 v, float (&f)[EPC])
    {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                /* e4m3 pairs convert exactly to f16 pairs in one instruction */
                __half2_raw r = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w[i] >> (16 * h)), __NV_E4M3);
                float2 p = __half22float2(__half2(r));
                f[4 * i + 2 * h] = p.x;
                f[4 * i + 2 * h + 1] = p.y;
            }
        }
    }
};

/* FP8 E4M3 with a scale a 128 × 128 block (model_weight.block_scale, the format of Qwen3's and DeepSeek's FP8
 * checkpoints): the chunk's 16 values as plain_f8e4m3, their dot with x multiplied by the block's scale before it
 * joins the row's sum (a chunk never straddles two column blocks: 128 = 8 chunks). */
struct plain_f8e4m3_bs : plain_f8e4m3 {
    static constexpr bool BSC = true;
};

/* G (grouped, gemv_group in gemv_internal.cuh): blockIdx.y is a work slot,
 * which names the matrix (expert), the ≤ NB consecutive rows of y it writes
 * and x's rows it reads; the slots are written by an earlier kernel, so they are read after
 * the wait (no weight load ahead of it). A row's bits are the same as in the
 * ungrouped kernel: its sum never depends on its neighbours. */
template <class P, int R, int NB, int U, bool G, int NTB>
__global__ void __launch_bounds__(NTB) kernel_gemv_plain(const uint8_t *__restrict__ w, uint64_t row_bytes,
                                                        uint32_t rows, uint32_t nchunks, uint32_t n,
                                                        const float *__restrict__ x, uint32_t nb,
                                                        float *__restrict__ y, float scale, gemv_group grp,
                                                        const float *__restrict__ bs, uint32_t nbc)
{
    constexpr int EPC = P::EPC;
    __shared__ float red[NTB / 32 * R * NB];
    const uint32_t row0 = blockIdx.x * R;
    uint32_t xr[NB]; /* x's row of each batch entry */
#pragma unroll
    for (int b = 0; b < NB; b++)
        xr[b] = b;
    if constexpr (G) {
        pdl_wait();
        if (!gemv_group_slot(grp, w, y, rows, nb, xr))
            return;
        if constexpr (P::BSC) /* the slot's matrix's scale table */
            bs += (uint64_t)__ldg(grp.slots + 1 + 3 * blockIdx.y) * grp.bs_stride;
    }
    const uint8_t *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        wr[r] = w + (uint64_t)min(row0 + r, rows - 1) * row_bytes; /* tail rows re-read the last row */

    float acc[R * NB];
#pragma unroll
    for (int k = 0; k < R * NB; k++)
        acc[k] = 0.0f;

    /* a step's U·R chunks; the first step's are asked for before the wait
     * (PDL: weights are constant), each next one at the end of the step before */
    uint4 v[U][R];
    auto load = [&](uint32_t c0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint32_t c = c0 + u * NTB;
#pragma unroll
            for (int r = 0; r < R; r++)
                v[u][r] = c < nchunks ? ldg_stream16(wr[r] + (uint64_t)c * 16) : make_uint4(0, 0, 0, 0);
        }
    };
    load(threadIdx.x);
    pdl_wait();
    for (uint32_t c0 = threadIdx.x; c0 < nchunks; c0 += NTB * U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint32_t c = c0 + u * NTB;
            if (c >= nchunks)
                break;
            float wf[R][EPC], sb[R];
#pragma unroll
            for (int r = 0; r < R; r++) {
                P::decode(v[u][r], wf[r]);
                if constexpr (P::BSC) /* the block scale of the chunk's 128 × 128 block (tail rows: the last row's) */
                    sb[r] = __ldg(bs + (uint64_t)(min(row0 + r, rows - 1) / 128) * nbc + c / (128 / EPC));
            }
#pragma unroll
            for (int b = 0; b < NB; b++) {
                if (b >= (int)nb)
                    break;
                const float4 *xp = reinterpret_cast<const float4 *>(x + (uint64_t)xr[b] * n + (uint64_t)c * EPC);
                float xv[EPC];
#pragma unroll
                for (int q = 0; q < EPC / 4; q++) {
                    float4 t = __ldg(xp + q);
                    xv[4 * q] = t.x;
                    xv[4 * q + 1] = t.y;
                    xv[4 * q + 2] = t.z;
                    xv[4 * q + 3] = t.w;
                }
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float s = 0.0f;
#pragma unroll
                    for (int i = 0; i < EPC; i++)
                        s = fmaf(wf[r][i], xv[i], s);
                    if constexpr (P::BSC)
                        acc[r * NB + b] = fmaf(s, sb[r], acc[r * NB + b]);
                    else
                        acc[r * NB + b] += s;
                }
            }
        }
        if (c0 + NTB * U < nchunks)
            load(c0 + NTB * U);
    }
    pdl_trigger(); /* the next kernel's blocks may come in as this one's finish */
    block_sum<NTB, R * NB>(acc, red);
    if (threadIdx.x == 0)
        gemv_store_rows<R, NB>(y, acc, rows, row0, nb, scale);
}

template <class P, int R, int NB, bool G = false, int NTB = NT>
void launch_plain(const cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x, uint32_t nb, float *y,
                  float scale, gemv_group grp = {}, const float *bs = nullptr)
{
    constexpr int U = R >= 4 ? 1 : 4 / R;
    const uint64_t row_bytes = n / P::EPC * 16;
    const dim3 grid((uint32_t)((rows + R - 1) / R), G ? grp.max_slots : 1);
    cuda_launch(ctx, kernel_gemv_plain<P, R, NB, U, G, NTB>, grid, NTB, 0, (const uint8_t *)w, row_bytes,
                (uint32_t)rows, (uint32_t)(n / P::EPC), (uint32_t)n, x, nb, y, scale, grp, bs,
                (uint32_t)((n + 127) / 128));
}

template <class P>
void dispatch_plain(const cuda_ctx *ctx, int sms, const void *w, uint64_t rows, uint64_t n, const float *x, uint32_t nb,
                    float *y, float scale, int rpb, const float *bs = nullptr)
{
    if (nb > 4) {
        launch_plain<P, 2, 8>(ctx, w, rows, n, x, nb, y, scale, {}, bs);
        return;
    }
    if (nb > 1) {
        launch_plain<P, 2, 4>(ctx, w, rows, n, x, nb, y, scale, {}, bs);
        return;
    }
    if (rpb == 0) /* FP8: a 4096 row is one 16-byte chunk a thread, so R rows = R loads in flight: 4 */
        rpb = P::EPC == 16 ? 4 : gemv_pick_rows_per_block(rows, sms);
    switch (rpb) {
    case 1: launch_plain<P, 1, 1>(ctx, w, rows, n, x, nb, y, scale, {}, bs); break;
    case 2: launch_plain<P, 2, 1>(ctx, w, rows, n, x, nb, y, scale, {}, bs); break;
    case 4: launch_plain<P, 4, 1>(ctx, w, rows, n, x, nb, y, scale, {}, bs); break;
    default: CUDA_FAIL("gemv: rows_per_block %d not in {1,2,4}", rpb);
    }
}

/* Grouped: experts' rows are short (768 .. 4096), so a block takes 8 rows
 * (4 with a batch of 8) to keep several loads in flight a thread, and rows of
 * ≤ 128 chunks take blocks of 128 threads. The block size sets the summation
 * order, so it is a function of the shape alone: a row's bits do not depend
 * on the batch. */
template <class P>
void dispatch_plain_grouped(const cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x, float *y,
                            float scale, const gemv_group &grp, const float *bs = nullptr)
{
    constexpr uint32_t B = CUDA_GEMV_MAX_BATCH;
    const bool one = grp.max_rows == 1, narrow = n / P::EPC <= 128;
    if (one && narrow)
        launch_plain<P, 8, 1, true, 128>(ctx, w, rows, n, x, 1, y, scale, grp, bs);
    else if (one)
        launch_plain<P, 8, 1, true>(ctx, w, rows, n, x, 1, y, scale, grp, bs);
    else if (narrow)
        launch_plain<P, 4, B, true, 128>(ctx, w, rows, n, x, B, y, scale, grp, bs);
    else
        launch_plain<P, 4, B, true>(ctx, w, rows, n, x, B, y, scale, grp, bs);
}

} // namespace

void gemv_plain_launch_grouped(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                               const float *x, float *y, float scale, const gemv_group &grp)
{
    switch (t) {
    case DTYPE_BF16: dispatch_plain_grouped<plain_bf16>(ctx, w, rows, n, x, y, scale, grp); break;
    case DTYPE_F16: dispatch_plain_grouped<plain_f16>(ctx, w, rows, n, x, y, scale, grp); break;
    case DTYPE_F8_E4M3: dispatch_plain_grouped<plain_f8e4m3>(ctx, w, rows, n, x, y, scale, grp); break;
    default: CUDA_FAIL("gemv_plain: type %s has no plain kernel", dtype_name(t));
    }
}

void gemv_plain_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x,
                       uint32_t nb, float *y, float scale, int rpb)
{
    const int sms = ctx->prop.multiProcessorCount;
    switch (t) {
    case DTYPE_BF16: dispatch_plain<plain_bf16>(ctx, sms, w, rows, n, x, nb, y, scale, rpb); break;
    case DTYPE_F16: dispatch_plain<plain_f16>(ctx, sms, w, rows, n, x, nb, y, scale, rpb); break;
    case DTYPE_F8_E4M3: dispatch_plain<plain_f8e4m3>(ctx, sms, w, rows, n, x, nb, y, scale, rpb); break;
    default: CUDA_FAIL("gemv_plain: type %s has no plain kernel", dtype_name(t));
    }
}

void gemv_plain_launch_bs(struct cuda_ctx *ctx, const void *w, const float *bs, uint64_t rows, uint64_t n,
                          const float *x, uint32_t nb, float *y, float scale, int rpb)
{
    dispatch_plain<plain_f8e4m3_bs>(ctx, ctx->prop.multiProcessorCount, w, rows, n, x, nb, y, scale, rpb, bs);
}

void gemv_plain_launch_grouped_bs(struct cuda_ctx *ctx, const void *w, const float *bs, uint64_t rows, uint64_t n,
                                  const float *x, float *y, float scale, const gemv_group &grp)
{
    dispatch_plain_grouped<plain_f8e4m3_bs>(ctx, w, rows, n, x, y, scale, grp, bs);
}
