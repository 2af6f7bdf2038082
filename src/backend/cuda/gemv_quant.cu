/* backend/cuda/gemv_quant.cu — decode GEMV reading GGUF block-quantized weights
 * as stored in the model file: Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K, IQ4_XS.
 *
 *   y[b][r] = Σ_i dequant(W)[r, i] · x[b][i]      (f32 activations, f32 sums)
 *
 * Floor: rows · n / QK · BS bytes over 4.3 TB/s (the measured copy rate):
 * for 14336×4096 that is 33.0 MB Q4_K (144 B / 256 el) → 7.7 µs, 62.4 MB Q8_0
 * → 14.5 µs, 48.2 MB Q6_K → 11.2 µs; x stays in L1/L2 and is not counted.
 *
 * Shape of the kernel: a block of 256 threads owns R consecutive rows and walks
 * them in tiles of 4096 columns; in each tile thread t decodes segment t % S of
 * quant block t / S (S = QK/16 segments of 16 elements per block) of each of
 * the R rows, so the 16 activations it loads serve R rows (and each decoded
 * segment serves every vector of a batch).
 *
 * Staged (rows whose byte length is a multiple of 16 — every Llama-3 shape):
 * the R row slices of a tile are copied to shared memory with 16-byte cp.async
 * (perfectly coalesced, whatever the block size: 34-byte Q8_0 blocks too), the
 * next tile's copy in flight while this one is decoded (two buffers). Unstaged
 * (other rows): each thread reads its segment straight from global memory with
 * the widest loads the block alignment allows. */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/gemv_quant_types.cuh"

namespace {

constexpr int NT = 256;              /* threads per block */
constexpr int TILE_COLS = NT * 16;   /* columns per tile: one 16-element segment per thread */

template <class Q> struct tile_of {
    static constexpr int QB = TILE_COLS / Q::QK; /* quant blocks of a row per tile */
    static constexpr int BYTES = QB * Q::BS;      /* a multiple of 16 for every type here */
    static_assert(BYTES % 16 == 0, "tile must be whole 16-byte chunks");
};

template <class Q, int R>
__device__ __forceinline__ void stage_tile(uint8_t *dst, const uint8_t *const (&wr)[R], uint64_t row_bytes,
                                           uint32_t tile)
{
    constexpr int TB = tile_of<Q>::BYTES;
    const uint64_t off = (uint64_t)tile * TB;
    const uint32_t bytes = (uint32_t)min((uint64_t)TB, row_bytes - off); /* row_bytes % 16 == 0 */
#pragma unroll
    for (int r = 0; r < R; r++)
        for (uint32_t c = threadIdx.x; c < bytes / 16; c += NT)
            cp_async16(dst + r * TB + 16 * c, wr[r] + off + 16 * c);
    cp_async_commit();
}

template <class Q, int R, int NB, bool STAGED>
__global__ void __launch_bounds__(NT) kernel_gemv_quant(const uint8_t *__restrict__ w, uint64_t row_bytes,
                                                        uint32_t rows, uint32_t n, const float *__restrict__ x,
                                                        uint32_t nb, float *__restrict__ y, float scale)
{
    constexpr int S = Q::QK / 16;
    constexpr int TB = tile_of<Q>::BYTES;
    extern __shared__ uint4 smem_tiles[]; /* STAGED: [2][R][TB] bytes */
    __shared__ float red[NT / 32 * R * NB];
    uint8_t *tiles = reinterpret_cast<uint8_t *>(smem_tiles);

    const uint32_t row0 = blockIdx.x * R;
    const uint8_t *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        wr[r] = w + (uint64_t)min(row0 + r, rows - 1) * row_bytes; /* tail rows re-read the last row */

    const int seg = threadIdx.x % S, qb = threadIdx.x / S;
    int o0, o1;
    Q::x_off(seg, o0, o1);
    const uint32_t ntiles = (n + TILE_COLS - 1) / TILE_COLS;

    float acc[R * NB];
#pragma unroll
    for (int k = 0; k < R * NB; k++)
        acc[k] = 0.0f;

    if constexpr (STAGED)
        stage_tile<Q, R>(tiles, wr, row_bytes, 0);

    for (uint32_t tile = 0; tile < ntiles; tile++) {
        if constexpr (STAGED) {
            if (tile + 1 < ntiles) {
                stage_tile<Q, R>(tiles + ((tile + 1) & 1) * R * TB, wr, row_bytes, tile + 1);
                cp_async_wait<1>();
            } else {
                cp_async_wait<0>();
            }
            __syncthreads();
        }
        const uint32_t col = tile * TILE_COLS + qb * Q::QK; /* first column of this thread's block */
        if (col < n) {
            const uint8_t *blk[R];
#pragma unroll
            for (int r = 0; r < R; r++)
                blk[r] = STAGED ? tiles + ((tile & 1) * R + r) * TB + qb * Q::BS
                                : wr[r] + (uint64_t)tile * TB + qb * Q::BS;
            if constexpr (NB == 1) {
                /* activations first, then each row decoded and consumed at once */
                const float *xp = x + col;
                float xv[16], xs = 0.0f;
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const float4 a = __ldg(reinterpret_cast<const float4 *>(xp + (h ? o1 : o0)));
                    const float4 c = __ldg(reinterpret_cast<const float4 *>(xp + (h ? o1 : o0) + 4));
                    xv[8 * h + 0] = a.x; xv[8 * h + 1] = a.y; xv[8 * h + 2] = a.z; xv[8 * h + 3] = a.w;
                    xv[8 * h + 4] = c.x; xv[8 * h + 5] = c.y; xv[8 * h + 6] = c.z; xv[8 * h + 7] = c.w;
                }
                if constexpr (Q::HAS_MIN) {
#pragma unroll
                    for (int i = 0; i < 16; i++)
                        xs += xv[i];
                }
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float q[16], d, m;
                    Q::decode(blk[r], seg, q, d, m);
                    float s = 0.0f;
#pragma unroll
                    for (int i = 0; i < 16; i++)
                        s = fmaf(q[i], xv[i], s);
                    acc[r] = fmaf(d, s, acc[r]);
                    if constexpr (Q::HAS_MIN)
                        acc[r] = fmaf(m, xs, acc[r]);
                }
            } else {
                /* batch: decode every row once, then stream the activation vectors */
                float q[R][16], d[R], m[R];
#pragma unroll
                for (int r = 0; r < R; r++)
                    Q::decode(blk[r], seg, q[r], d[r], m[r]);
#pragma unroll
                for (int b = 0; b < NB; b++) {
                    if (b >= (int)nb)
                        break;
                    const float *xp = x + (uint64_t)b * n + col;
                    float xv[16], xs = 0.0f;
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const float4 a = __ldg(reinterpret_cast<const float4 *>(xp + (h ? o1 : o0)));
                        const float4 c = __ldg(reinterpret_cast<const float4 *>(xp + (h ? o1 : o0) + 4));
                        xv[8 * h + 0] = a.x; xv[8 * h + 1] = a.y; xv[8 * h + 2] = a.z; xv[8 * h + 3] = a.w;
                        xv[8 * h + 4] = c.x; xv[8 * h + 5] = c.y; xv[8 * h + 6] = c.z; xv[8 * h + 7] = c.w;
                    }
                    if constexpr (Q::HAS_MIN) {
#pragma unroll
                        for (int i = 0; i < 16; i++)
                            xs += xv[i];
                    }
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        float s = 0.0f;
#pragma unroll
                        for (int i = 0; i < 16; i++)
                            s = fmaf(q[r][i], xv[i], s);
                        float a = fmaf(d[r], s, acc[r * NB + b]);
                        if constexpr (Q::HAS_MIN)
                            a = fmaf(m[r], xs, a);
                        acc[r * NB + b] = a;
                    }
                }
            }
        }
        if constexpr (STAGED)
            __syncthreads(); /* this buffer is refilled two tiles on */
    }
    block_sum<NT, R * NB>(acc, red);
    if (threadIdx.x == 0) {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int b = 0; b < NB; b++)
                if (row0 + r < rows && b < (int)nb)
                    y[(uint64_t)b * rows + row0 + r] = scale * acc[r * NB + b];
    }
}

template <class Q, int R, int NB, bool STAGED>
void launch_quant(cudaStream_t st, const void *w, uint64_t rows, uint64_t n, const float *x, uint32_t nb, float *y,
                  float scale)
{
    const uint64_t row_bytes = n / Q::QK * Q::BS;
    const uint32_t ntiles = (uint32_t)((n + TILE_COLS - 1) / TILE_COLS);
    const size_t smem = STAGED ? (size_t)(ntiles > 1 ? 2 : 1) * R * tile_of<Q>::BYTES : 0;
    const uint32_t blocks = (uint32_t)((rows + R - 1) / R);
    kernel_gemv_quant<Q, R, NB, STAGED><<<blocks, NT, smem, st>>>((const uint8_t *)w, row_bytes, (uint32_t)rows,
                                                                  (uint32_t)n, x, nb, y, scale);
    CUDA_CHECK_LAUNCH();
}

template <class Q, bool STAGED>
void dispatch_rows(cudaStream_t st, int sms, const void *w, uint64_t rows, uint64_t n, const float *x, uint32_t nb,
                   float *y, float scale, int rpb)
{
    if (nb > 4) {
        launch_quant<Q, 2, 8, STAGED>(st, w, rows, n, x, nb, y, scale);
        return;
    }
    if (nb > 1) {
        launch_quant<Q, 2, 4, STAGED>(st, w, rows, n, x, nb, y, scale);
        return;
    }
    if (rpb == 0)
        rpb = gemv_pick_rows_per_block(rows, sms);
    switch (rpb) {
    case 1: launch_quant<Q, 1, 1, STAGED>(st, w, rows, n, x, nb, y, scale); break;
    case 2: launch_quant<Q, 2, 1, STAGED>(st, w, rows, n, x, nb, y, scale); break;
    case 4: launch_quant<Q, 4, 1, STAGED>(st, w, rows, n, x, nb, y, scale); break;
    default: CUDA_FAIL("gemv: rows_per_block %d not in {1,2,4}", rpb);
    }
}

template <class Q>
void dispatch_quant(cudaStream_t st, int sms, const void *w, uint64_t rows, uint64_t n, const float *x, uint32_t nb,
                    float *y, float scale, int rpb, int staged)
{
    const bool aligned = (n / Q::QK * Q::BS) % 16 == 0;
    if (staged < 0)
        staged = aligned;
    if (staged && !aligned)
        CUDA_FAIL("gemv: staged kernel needs rows of a multiple of 16 bytes (n = %llu)", (unsigned long long)n);
    if (staged)
        dispatch_rows<Q, true>(st, sms, w, rows, n, x, nb, y, scale, rpb);
    else
        dispatch_rows<Q, false>(st, sms, w, rows, n, x, nb, y, scale, rpb);
}

} // namespace

bool gemv_quant_has(enum dtype t)
{
    switch (t) {
    case DTYPE_Q8_0: case DTYPE_Q4_0: case DTYPE_Q4_1: case DTYPE_Q4_K: case DTYPE_Q5_K: case DTYPE_Q6_K:
    case DTYPE_IQ4_XS:
        return true;
    default:
        return false;
    }
}

void gemv_quant_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x,
                       uint32_t nb, float *y, float scale, int rpb, int staged)
{
    const int sms = ctx->prop.multiProcessorCount;
    cudaStream_t st = ctx->stream;
    switch (t) {
    case DTYPE_Q8_0: dispatch_quant<qt_q8_0>(st, sms, w, rows, n, x, nb, y, scale, rpb, staged); break;
    case DTYPE_Q4_0: dispatch_quant<qt_q4_0>(st, sms, w, rows, n, x, nb, y, scale, rpb, staged); break;
    case DTYPE_Q4_1: dispatch_quant<qt_q4_1>(st, sms, w, rows, n, x, nb, y, scale, rpb, staged); break;
    case DTYPE_Q4_K: dispatch_quant<qt_q4_k>(st, sms, w, rows, n, x, nb, y, scale, rpb, staged); break;
    case DTYPE_Q5_K: dispatch_quant<qt_q5_k>(st, sms, w, rows, n, x, nb, y, scale, rpb, staged); break;
    case DTYPE_Q6_K: dispatch_quant<qt_q6_k>(st, sms, w, rows, n, x, nb, y, scale, rpb, staged); break;
    case DTYPE_IQ4_XS: dispatch_quant<qt_iq4_xs>(st, sms, w, rows, n, x, nb, y, scale, rpb, staged); break;
    default: CUDA_FAIL("gemv_quant: type %s has no quantized kernel", dtype_name(t));
    }
}
