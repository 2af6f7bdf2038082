/* backend/cuda/mmv.cu — the batched decode GEMV on the tensor cores, for BF16
 * weights: y[t][r] = scale · Σ_i W[r, i] · x[t][i] for 1..64 tokens t, W read
 * once for all of them.
 *
 * Why: the CUDA-core GEMV (gemv_plain.cu) pays one FMA per weight per token,
 * so 8 tokens already cost ~3× one token and 64 sequences could only run as 8
 * such groups (bench/RESULTS.md, 2026-11-30). Here the products run on mma.sync
 * (m16n8k16, f32 accumulation), which is nearly free next to the weight read.
 *
 * Exactness: x (f32) is split into bf16 hi = rn(x) and lo = rn(x − hi), which
 * carry x to ~2^-17 relative; W·hi and W·lo are two accumulator columns of the
 * same mma, each an f32 sum of exact bf16×bf16 products, added at the end
 * (the numerics of gemm.cu's exact mode).
 *
 * Batch invariance: each output (r, t) is computed by the same sequence of
 * mma instructions whatever the batch is — an mma's column of D depends only
 * on its column of B, the k order is fixed (slice s of the S slices, its
 * chunks in order, two k16 steps a chunk), S is a function of (rows, n) only,
 * and the S slice sums are added in slice order by one block. So a token's
 * result is the same bits alone, in a batch of 64, or in the general path
 * (kernel_mmv checks it).
 *
 * Layout trick: the dot product does not care which k goes to which fragment
 * slot as long as W and x agree, so a lane takes 8 consecutive k (16 bytes of
 * a weight row) per 32-wide chunk and feeds them to the slots it owns in the
 * chunk's two mmas, and x's columns are laid out the same way (column 2t hi,
 * 2t+1 lo of token t), so every fragment is one 16-byte load.
 *
 * Floor: rows·n·2 bytes / 4.3 TB/s (4096×4096: 7.8 µs; 128256×4096: 244 µs).
 * The products: 2·rows·n·2T FLOP on mma.sync — 64 tokens on an 8B model are
 * ~2 TFLOP a step, ~3 ms at the ~650 TFLOP/s mma.sync reaches, under the
 * weight read's 3.7 ms. Measured (H200, bench/RESULTS.md): 87-100 % of the
 * floor at T = 1..8 on the large shapes, ~25-30 % at T = 64 (the x fragments'
 * shared-memory reads and the per-step barriers, not the weight stream, bound
 * it there; wgmma with x in shared memory as its B operand is the next step).
 *
 * Shape: a block of NW warps owns BR rows and one K slice; the grid is (row
 * blocks, S). The weight slice streams through a 3-stage cp.async pipeline
 * (BR rows × KU·64 contiguous bytes a stage: each warp copy instruction moves
 * whole runs of a row), and the warps read their fragments from shared
 * memory. The warps split the row tiles and the token columns between them.
 * x is either read by each warp from global memory and split on the fly, or
 * (XS) loaded once per block and stage, split into a shared bf16 buffer, and
 * read from there. g_variants lists the launch shapes the sweep tries;
 * mmv_pick the ones the launcher uses (all give the same bits). With S > 1
 * every block writes its slice's sums to a scratch and the last block of a
 * row block to finish (a counter per row block, reset by that block, so
 * graphs can replay the kernel) adds them in slice order.
 */
#include <cuda_bf16.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int MMV_CHUNK = 32; /* k per chunk: two m16n8k16 steps */
constexpr int MMV_MIN_ROWS = 32; /* the smallest block: counters are sized for it */
constexpr int MMV_NS = 3;     /* pipeline stages */

__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Byte offset in a stage of the 16-byte piece p (0..15: chunk p/4, lane
 * quarter p%4) of row r; odd rows swap the two halves of each chunk pair so
 * that the 8 lanes of a shared-memory phase (rows 2i, 2i+1) hit distinct banks. */
template <int KU> __device__ __forceinline__ uint32_t stage_off(uint32_t r, uint32_t p)
{
    return r * (KU * 64) + ((p ^ ((r & 1) << 2)) * 16);
}

/* A block of NW warps owns BR rows; the warps form WM (row groups of MT
 * tiles of 16) × WN (column groups of NTW tiles of 8 = 4 tokens: hi, lo of
 * each); stages of KU chunks (KU·64 contiguous bytes of each row). XS: x is
 * staged too — each step the block loads the next stage's x into registers,
 * splits it once into a shared (2·MAXT columns) bf16 buffer, and the warps
 * read their column fragments there (past ~16 tokens, reading x from L1/L2
 * per warp costs more than the weights). Same mma sequence either way. */
template <int BR, int NW, int MT, int NTW, int KU, bool XS>
__global__ void __launch_bounds__(NW * 32) kernel_mmv(const uint8_t *__restrict__ w, uint32_t rows, uint32_t n,
                                                      const float *__restrict__ x, uint32_t T, uint32_t S,
                                                      uint32_t cps, float *__restrict__ part,
                                                      unsigned *__restrict__ cnt, float *__restrict__ y, float scale)
{
    pdl_enter();
    constexpr int WM = BR / 16 / MT, WN = NW / WM, STAGE = BR * KU * 64;
    constexpr int MAXT = WN * NTW * 4;                             /* tokens a block covers */
    constexpr int XN4 = MAXT * KU * 8;                             /* XS: float4s of x a stage */
    constexpr int XF4 = XS ? (XN4 + NW * 32 - 1) / (NW * 32) : 1;  /* of them a thread */
    static_assert(NW % WM == 0 && KU >= 2, "mmv: warp grid");
    extern __shared__ __align__(128) uint8_t smem[];
    uint8_t *xbf = smem + MMV_NS * STAGE; /* XS: 2 buffers of (KU, 2·MAXT, 32) bf16 */
    const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const uint32_t g = lane >> 2, q = lane & 3;
    const uint32_t wm = warp % WM, wn = warp / WM;
    const uint32_t r0 = blockIdx.x * BR;
    const uint32_t s = blockIdx.y, nchunks = n / MMV_CHUNK;
    const uint32_t c0 = min(nchunks, s * cps), c1 = min(nchunks, c0 + cps);
    const uint32_t nsteps = (c1 - c0 + KU - 1) / KU;
    const uint64_t row_bytes = (uint64_t)n * 2;

    /* this thread's copies: pieces p = j·128 + tid of a stage, row p/16, piece p%16 */
    auto issue = [&](uint32_t step) {
        if (step < nsteps) {
            const uint32_t cs = c0 + step * KU;
            const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem + (step % MMV_NS) * STAGE);
#pragma unroll
            for (int j = 0; j < (STAGE / 16 + NW * 32 - 1) / (NW * 32); j++) {
                const uint32_t p = j * NW * 32 + tid, r = p / (KU * 4), pr = p % (KU * 4);
                if (p < STAGE / 16 && cs + pr / 4 < c1)
                    cp_async16(base + stage_off<KU>(r, pr),
                               w + (uint64_t)min(r0 + r, rows - 1) * row_bytes + (uint64_t)cs * 64 + pr * 16);
            }
        }
        cp_async_commit(); /* empty groups keep the count */
    };
    /* XS: float4 j of this thread = token t, chunk u, elements 4·k4.. of the step's x */
    float4 xv[XF4];
    auto x_load = [&](uint32_t step) {
#pragma unroll
        for (int j = 0; j < XF4; j++) {
            const uint32_t i4 = j * NW * 32 + tid, t = i4 / (KU * 8), u = i4 / 8 % KU, k4 = i4 % 8;
            const uint32_t c = c0 + step * KU + u;
            xv[j] = i4 < XN4 && t < T && c < c1 ? __ldg(reinterpret_cast<const float4 *>(x + (uint64_t)t * n + c * 32 + k4 * 4))
                                    : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    };
    auto x_split = [&](uint32_t step) {
        uint8_t *xb = xbf + (step & 1) * (KU * 2 * MAXT * 64);
#pragma unroll
        for (int j = 0; j < XF4; j++) {
            const uint32_t i4 = j * NW * 32 + tid, t = i4 / (KU * 8), u = i4 / 8 % KU, k4 = i4 % 8;
            if (i4 >= XN4)
                break;
            const float4 v = xv[j];
            const uint2 hi = make_uint2(split_pair(v.x, v.y, false), split_pair(v.z, v.w, false));
            const uint2 lo = make_uint2(split_pair(v.x, v.y, true), split_pair(v.z, v.w, true));
            *reinterpret_cast<uint2 *>(xb + (u * 2 * MAXT + 2 * t) * 64 + k4 * 8) = hi;
            *reinterpret_cast<uint2 *>(xb + (u * 2 * MAXT + 2 * t + 1) * 64 + k4 * 8) = lo;
        }
    };

    /* !XS: the activations this lane feeds: column nt·8 + g of the (2T) hi/lo columns = token (nt·8 + g)/2 */
    const float *xr[NTW];
#pragma unroll
    for (int i = 0; i < NTW; i++) {
        const uint32_t t = ((wn * NTW + i) * 8 + g) / 2;
        xr[i] = t < T ? x + (uint64_t)t * n + q * 8 : nullptr;
    }
    const bool lo = g & 1;
    /* column tiles of this warp holding tokens (uniform per warp) */
    const int ntw_live = (int)min((uint32_t)NTW, (T + 3) / 4 > wn * NTW ? (T + 3) / 4 - wn * NTW : 0u);

    float acc[MT][NTW][4];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int i = 0; i < NTW; i++)
#pragma unroll
            for (int k = 0; k < 4; k++)
                acc[m][i][k] = 0.0f;

#pragma unroll
    for (int i = 0; i < MMV_NS - 1; i++)
        issue(i);
    if constexpr (XS)
        x_load(0);
    for (uint32_t step = 0; step < nsteps; step++) {
        cp_async_wait<MMV_NS - 2>();
        if constexpr (XS) {
            x_split(step);
            __syncthreads();
            if (step + 1 < nsteps)
                x_load(step + 1);
        } else {
            __syncthreads();
        }
        issue(step + MMV_NS - 1);
        const uint8_t *buf = smem + (step % MMV_NS) * STAGE;
        const uint8_t *xb = xbf + (step & 1) * (KU * 2 * MAXT * 64);
#pragma unroll
        for (int u = 0; u < KU; u++) {
            const uint32_t c = c0 + step * KU + u;
            if (c >= c1)
                break;
            uint4 b[NTW];
#pragma unroll
            for (int i = 0; i < NTW; i++) {
                if constexpr (XS) {
                    b[i] = *reinterpret_cast<const uint4 *>(xb + (u * 2 * MAXT + (wn * NTW + i) * 8 + g) * 64 + q * 16);
                } else if (xr[i]) {
                    const float4 v0 = __ldg(reinterpret_cast<const float4 *>(xr[i] + (uint64_t)c * 32));
                    const float4 v1 = __ldg(reinterpret_cast<const float4 *>(xr[i] + (uint64_t)c * 32 + 4));
                    b[i] = make_uint4(split_pair(v0.x, v0.y, lo), split_pair(v0.z, v0.w, lo),
                                      split_pair(v1.x, v1.y, lo), split_pair(v1.z, v1.w, lo));
                } else {
                    b[i] = make_uint4(0, 0, 0, 0);
                }
            }
#pragma unroll
            for (int m = 0; m < MT; m++) {
                const uint32_t r = (wm * MT + m) * 16 + g;
                const uint4 a0 = *reinterpret_cast<const uint4 *>(buf + stage_off<KU>(r, u * 4 + q));
                const uint4 a1 = *reinterpret_cast<const uint4 *>(buf + stage_off<KU>(r + 8, u * 4 + q));
#pragma unroll
                for (int i = 0; i < NTW; i++) {
                    if (i >= ntw_live)
                        break;
                    mma_bf16(acc[m][i], a0.x, a1.x, a0.y, a1.y, b[i].x, b[i].y);
                    mma_bf16(acc[m][i], a0.z, a1.z, a0.w, a1.w, b[i].z, b[i].w);
                }
            }
        }
    }
    cp_async_wait<0>();

    /* D: this lane holds rows g, g+8 × columns 2q (hi), 2q+1 (lo) of each tile = token tile·4 + q */
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int i = 0; i < NTW; i++) {
            const uint32_t t = (wn * NTW + i) * 4 + q;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t r = r0 + (wm * MT + m) * 16 + g + 8 * h;
                if (t >= T || r >= rows)
                    continue;
                const float v = acc[m][i][2 * h] + acc[m][i][2 * h + 1];
                if (S == 1)
                    y[(uint64_t)t * rows + r] = scale * v;
                else
                    part[((uint64_t)s * T + t) * rows + r] = v;
            }
        }
    if (S == 1)
        return;

    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (tid == 0)
        last = atomicAdd(&cnt[blockIdx.x], 1u) == S - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    const uint32_t nr = min((uint32_t)BR, rows - r0);
    for (uint32_t i = tid; i < nr * T; i += blockDim.x) {
        const uint32_t t = i / nr, r = r0 + i % nr;
        float v = 0.0f;
        for (uint32_t k = 0; k < S; k++)
            v += __ldcg(part + ((uint64_t)k * T + t) * rows + r);
        y[(uint64_t)t * rows + r] = scale * v;
    }
    if (tid == 0)
        cnt[blockIdx.x] = 0;
}

/* K slices of a (rows, n) weight: enough blocks of 64 rows to give every SM
 * ~3 of them, slices of ≥ 4 chunks. A function of the shape only (batch
 * invariance: every variant below uses it). */
uint32_t mmv_slices(uint64_t rows, uint64_t n, int sms)
{
    const uint64_t rb = (rows + 63) / 64, nchunks = n / MMV_CHUNK;
    uint32_t S = 1;
    while (rb * S < (uint64_t)sms * 3 && (uint64_t)S * 2 * 4 <= nchunks)
        S *= 2;
    return S;
}

typedef void (*mmv_fn)(const uint8_t *, uint32_t, uint32_t, const float *, uint32_t, uint32_t, uint32_t, float *,
                       unsigned *, float *, float);

/* The launch shapes: rows a block, warps, row tiles and column tiles a warp,
 * chunks a stage; max_t = the tokens it covers. All compute the same bits. */
struct mmv_variant {
    int br, nw, mt, ntw, ku;
    bool xs;
    uint32_t max_t;
    mmv_fn fn;
};
#define MMV_V(BR, NW, MT, NTW, KU, XS)                                                                           \
    {BR, NW, MT, NTW, KU, XS, (uint32_t)((NW) / ((BR) / 16 / (MT)) * (NTW) * 4), kernel_mmv<BR, NW, MT, NTW, KU, XS>}
const mmv_variant g_variants[] = {
    MMV_V(64, 4, 1, 1, 4, false),  MMV_V(64, 4, 1, 2, 4, false),  MMV_V(64, 4, 1, 4, 4, false),
    MMV_V(64, 4, 2, 4, 4, false),  MMV_V(64, 4, 4, 4, 4, false),  MMV_V(128, 8, 1, 1, 4, false),
    MMV_V(64, 4, 1, 4, 4, true),   MMV_V(64, 4, 4, 4, 4, true),   MMV_V(128, 8, 2, 8, 4, true),
    MMV_V(128, 8, 4, 4, 4, true),  MMV_V(256, 8, 4, 8, 2, true),  MMV_V(256, 8, 2, 16, 2, true),
    MMV_V(128, 4, 2, 8, 4, true),  MMV_V(128, 8, 1, 2, 4, true),  MMV_V(128, 8, 2, 8, 2, true),
    MMV_V(256, 16, 1, 2, 4, true), MMV_V(128, 8, 1, 2, 2, true),  MMV_V(128, 32, 1, 4, 4, true),
    MMV_V(128, 16, 1, 4, 4, true), MMV_V(64, 16, 1, 4, 4, true),  MMV_V(128, 16, 1, 8, 2, true),
    MMV_V(128, 8, 1, 2, 8, true),  MMV_V(64, 8, 1, 2, 4, true),   MMV_V(128, 16, 1, 2, 4, true),
    MMV_V(128, 16, 1, 8, 4, true), MMV_V(64, 16, 1, 4, 2, true),  MMV_V(64, 32, 1, 2, 2, true),
    MMV_V(128, 32, 1, 4, 2, true), MMV_V(256, 32, 1, 8, 2, true), MMV_V(128, 32, 1, 2, 2, true),
    MMV_V(64, 16, 1, 2, 2, true),  MMV_V(128, 8, 1, 1, 4, true),  MMV_V(256, 16, 1, 1, 4, true),
};
constexpr int MMV_NVARIANTS = sizeof g_variants / sizeof g_variants[0];

/* The launcher's choice per batch size and weight height, from the H200
 * sweep of 2026-11-30 (kernel_mmv with MEMRA_MMV_SWEEP=1): many warps with
 * one row tile each and x staged win at every T; past 32 tokens 256-row
 * blocks of 32 warps (64-row ones for short weights such as k/v, which would
 * leave SMs idle). Any choice gives the same bits. */
int mmv_pick(uint32_t T, uint64_t rows)
{
    if (T == 1)
        return 31;
    if (T <= 16)
        return 23;
    if (T <= 32)
        return rows <= 2048 ? 30 : 18;
    return rows <= 2048 ? 25 : 28;
}

/* Dynamic shared memory of a launch shape: the weight stages, and the two
 * split-x buffers when x is staged. */
int mmv_smem(const mmv_variant &V)
{
    return MMV_NS * V.br * V.ku * 64 + (V.xs ? 2 * V.ku * 2 * (int)V.max_t * 64 : 0);
}

void mmv_launch(struct cuda_ctx *ctx, int v, const void *w, uint32_t rows, uint32_t n, const float *x, uint32_t T,
                uint32_t S, float *y, float scale)
{
    const mmv_variant &V = g_variants[v];
    const int smem = mmv_smem(V);
    const uint32_t nchunks = n / MMV_CHUNK, cps = (nchunks + S - 1) / S;
    const dim3 grid((rows + V.br - 1) / V.br, S);
    cuda_launch(ctx, V.fn, grid, V.nw * 32, smem, (const uint8_t *)w, rows, n, x, T, S, cps, (float *)ctx->mmv_part,
                (unsigned *)ctx->mmv_cnt, y, scale);
}

} // namespace

extern "C" bool cuda_mmv_supported(enum dtype t, uint64_t rows, uint64_t n)
{
    return t == DTYPE_BF16 && rows >= 1 && n >= MMV_CHUNK && n % MMV_CHUNK == 0 && rows < (1ull << 31) &&
           n < (1ull << 24);
}

extern "C" void cuda_mmv_reserve(struct cuda_ctx *ctx, uint64_t rows, uint64_t n)
{
    if (!cuda_mmv_supported(DTYPE_BF16, rows, n))
        CUDA_FAIL("cuda_mmv_reserve: %llu×%llu not supported", (unsigned long long)rows, (unsigned long long)n);
    const int sms = ctx->prop.multiProcessorCount;
    const size_t pb = (size_t)mmv_slices(rows, n, sms) * CUDA_MMV_MAX_BATCH * rows * 4;
    const size_t cn = (rows + MMV_MIN_ROWS - 1) / MMV_MIN_ROWS;
    if (pb > ctx->mmv_part_bytes) {
        if (ctx->mmv_part)
            CUDA_CHECK(cudaFree(ctx->mmv_part));
        CUDA_CHECK(cudaMalloc(&ctx->mmv_part, pb));
        ctx->mmv_part_bytes = pb;
    }
    if (!ctx->mmv_cnt) /* the context's first reserve: every launch shape may use its shared memory */
        for (int v = 0; v < MMV_NVARIANTS; v++)
            CUDA_CHECK(cudaFuncSetAttribute((const void *)g_variants[v].fn,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, mmv_smem(g_variants[v])));
    const size_t xb = (size_t)4 * CUDA_MMV_MAX_BATCH * n; /* mmv_wg.cu's split x */
    if (cuda_mmv_wg_supported(rows, n) && xb > ctx->mmv_xs_bytes) {
        if (ctx->mmv_xs)
            CUDA_CHECK(cudaFree(ctx->mmv_xs));
        if (ctx->mmv_xs2)
            CUDA_CHECK(cudaFree(ctx->mmv_xs2));
        CUDA_CHECK(cudaMalloc(&ctx->mmv_xs, xb));
        CUDA_CHECK(cudaMalloc(&ctx->mmv_xs2, xb));
        ctx->mmv_xs_src = NULL;
        ctx->mmv_xs_bytes = xb;
    }
    if (cn > ctx->mmv_cnt_n) {
        if (ctx->mmv_cnt)
            CUDA_CHECK(cudaFree(ctx->mmv_cnt));
        CUDA_CHECK(cudaMalloc(&ctx->mmv_cnt, cn * sizeof(unsigned)));
        CUDA_CHECK(cudaMemset(ctx->mmv_cnt, 0, cn * sizeof(unsigned)));
        ctx->mmv_cnt_n = cn;
    }
}

extern "C" void cuda_mmv_variant(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                                 const float *x, uint32_t T, float *y, float scale, int variant)
{
    if (!cuda_mmv_supported(t, rows, n))
        CUDA_FAIL("cuda_mmv: %s %llu×%llu not supported", dtype_name(t), (unsigned long long)rows,
                  (unsigned long long)n);
    if (T < 1 || T > CUDA_MMV_MAX_BATCH)
        CUDA_FAIL("cuda_mmv: batch %u not in 1..%d", T, CUDA_MMV_MAX_BATCH);
    if (((uintptr_t)w | (uintptr_t)x) % 16 != 0)
        CUDA_FAIL("cuda_mmv: w and x must be 16-byte aligned");
    const int sms = ctx->prop.multiProcessorCount;
    const uint32_t S = mmv_slices(rows, n, sms);
    if ((size_t)S * T * rows * 4 > ctx->mmv_part_bytes && S > 1)
        CUDA_FAIL("cuda_mmv: %llu×%llu not reserved (cuda_mmv_reserve)", (unsigned long long)rows,
                  (unsigned long long)n);
    if (!ctx->mmv_cnt || (S > 1 && (rows + MMV_MIN_ROWS - 1) / MMV_MIN_ROWS > ctx->mmv_cnt_n))
        CUDA_FAIL("cuda_mmv: %llu rows not reserved", (unsigned long long)rows);
    const int v = variant >= 0 ? variant : mmv_pick(T, rows);
    if (v >= MMV_NVARIANTS || T > g_variants[v].max_t)
        CUDA_FAIL("cuda_mmv: variant %d does not take batch %u", v, T);
    mmv_launch(ctx, v, w, (uint32_t)rows, (uint32_t)n, x, T, S, y, scale);
}

extern "C" int cuda_mmv_variants(uint32_t *max_t)
{
    for (int v = 0; v < MMV_NVARIANTS && max_t; v++)
        max_t[v] = g_variants[v].max_t;
    return MMV_NVARIANTS;
}

extern "C" void cuda_mmv_set_kernel(struct cuda_ctx *ctx, enum cuda_mmv_kernel k) { ctx->mmv_kernel = k; }

extern "C" void cuda_ctx_set_act_bf16(struct cuda_ctx *ctx, bool on)
{
    ctx->act_bf16 = on;
    ctx->mmv_xs_src = NULL; /* mmv_wg's split rows are laid out for the other mode */
}

/* Whether cuda_mmv takes the wgmma kernel (mmv_wg.cu) for a shape, else mmv.cu. */
static bool mmv_takes_wg(const struct cuda_ctx *ctx, enum dtype t, uint64_t rows, uint64_t n)
{
    return ctx->mmv_kernel == CUDA_MMV_WG && t == DTYPE_BF16 && cuda_mmv_wg_supported(rows, n);
}

extern "C" bool cuda_mmv_takes_split(const struct cuda_ctx *ctx, enum dtype t, uint64_t rows, uint64_t n)
{
    return mmv_takes_wg(ctx, t, rows, n);
}

static void mmv_run(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x,
                    uint32_t T, float *y, float scale, bool same_x, uint32_t slices)
{
    if (mmv_takes_wg(ctx, t, rows, n))
        cuda_mmv_wg_launch(ctx, w, rows, n, x, T, y, scale, -1, same_x, slices);
    else if (slices == 0)
        cuda_mmv_variant(ctx, t, w, rows, n, x, T, y, scale, -1);
    else
        CUDA_FAIL("cuda_mmv: K slices given (%u) for a %llu×%llu weight the wgmma kernel does not take", slices,
                  (unsigned long long)rows, (unsigned long long)n);
}

extern "C" bool cuda_mmv_glu(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                             const float *x, uint32_t T, const float *out, float scale, bool gelu, bool same_x,
                             uint32_t slices)
{
    return mmv_takes_wg(ctx, t, rows, n) && cuda_mmv_wg_glu(ctx, w, rows, n, x, T, out, scale, gelu, same_x, slices);
}

extern "C" void cuda_mmv(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                         const float *x, uint32_t T, float *y, float scale)
{
    mmv_run(ctx, t, w, rows, n, x, T, y, scale, false, 0);
}

extern "C" void cuda_mmv_sliced(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                                const float *x, uint32_t T, float *y, float scale, bool same_x, uint32_t slices)
{
    mmv_run(ctx, t, w, rows, n, x, T, y, scale, same_x, slices);
}

/* The kernel (0: mmv_wg.cu, 1: mmv.cu) and K slices cuda_mmv gives a shape. */
static uint32_t mmv_route(const struct cuda_ctx *ctx, enum dtype t, uint64_t rows, uint64_t n)
{
    const int sms = ctx->prop.multiProcessorCount;
    if (mmv_takes_wg(ctx, t, rows, n))
        return cuda_mmv_wg_slices(rows, n, sms) << 1;
    return mmv_slices(rows, n, sms) << 1 | 1;
}

extern "C" bool cuda_mmv_rows_join(const struct cuda_ctx *ctx, enum dtype t, uint64_t ra, uint64_t rb, uint64_t n)
{
    const uint32_t r = mmv_route(ctx, t, ra, n);
    return cuda_mmv_supported(t, ra + rb, n) && mmv_route(ctx, t, rb, n) == r && mmv_route(ctx, t, ra + rb, n) == r;
}

extern "C" uint32_t cuda_mmv_join_slices(const struct cuda_ctx *ctx, enum dtype t, uint64_t rows, uint64_t n)
{
    return mmv_takes_wg(ctx, t, rows, n) ? cuda_mmv_wg_slices(rows, n, ctx->prop.multiProcessorCount) : 0;
}

extern "C" void cuda_mmv_next(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                              const float *x, uint32_t T, float *y, float scale)
{
    mmv_run(ctx, t, w, rows, n, x, T, y, scale, true, 0);
}
