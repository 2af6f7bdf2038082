/* backend/cuda/gemv_quant.cu — decode GEMV reading GGUF block-quantized weights
 * as stored in the model file: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, IQ4_XS.
 *
 *   y[b][r] = Σ_i dequant(W)[r, i] · x[b][i]      (f32 activations, f32 result)
 *
 * Floor: rows · n / QK · BS bytes over 4.3 TB/s (the measured copy rate): for
 * 14336×4096 that is 33.0 MB Q4_K (144 B / 256 el) → 7.7 µs, 62.4 MB Q8_0 →
 * 14.5 µs, 48.2 MB Q6_K → 11.2 µs. Activations stay in L1/L2, not counted.
 *
 * Two kernels a GEMV:
 * 1. kernel_gemv_prep_x turns x into 24-bit integers X in three byte planes
 *    with one f32 scale per 128 (or 32) elements, plus Σx per 16 (for the
 *    types whose values carry an offset or a min). This is what lets the dot
 *    product run on dp4a (gemv_quant_types.cuh) at ~1 instruction an element:
 *    with byte→float conversions the 4-bit kernels were bound by instruction
 *    issue at ~30 % of bandwidth (bench/GEMV.md). X's rounding (≤ 2^-24 of the
 *    block's max |x|) is below f32 accumulation error. One prep serves every
 *    GEMV that reads the same x (q/k/v, gate/up): cuda_gemv_prep_x + flag.
 * 2. kernel_gemv_q: one warp owns R consecutive rows and walks them whole
 *    (no shared memory, no block barrier, one warp-shuffle sum per row at
 *    the end). Lane l always decodes 32-element segment l % S (S = QK/32) of
 *    blocks l / S, l / S + 32/S, ...: its activation planes are loaded once
 *    per step and serve the R rows (and each decoded segment serves every
 *    vector of a batch). Loads go straight to registers through the read-only
 *    path; the R rows' loads of a step are independent, so several loads are
 *    in flight per lane, 32·R·QK/32·BS/… ≈ 1 KB of weights per warp step.
 *    A lone vector's first step of weights is asked for before the PDL wait
 *    (the whole row at n = 4096 and K split 4): its DRAM latency overlaps the
 *    kernel before's end — Q8_0 tg128 +4.9 %, at depth 4096 +4.9 % (f32
 *    activations; bf16 +3.4 / +3.7 %), Q4_K_M level (its Q6_K v and downs);
 *    H100, random 8B, bench/RESULTS.md sixtieth run. (Tried in an early
 *    session together with the trigger at the kernel's top, it had lost.)
 *    Its staged form, kernel_gemv_qs (below; the default for ksplit 1,
 *    ctx->gemv_staged), runs the same lanes and arithmetic on weights
 *    bulk-copied into shared memory several steps ahead.
 * kernel_gemv_q's RoPE epilogue (cuda_fwd_gemv_rope_kv with rp.dp4a, one
 * vector, R ≥ 2): lane 0, which holds the R sums, stores them through
 * rope_epi_store in pairs (R and row0 even). Not the staged kernel.
 */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/gemv_quant_types.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int NT = 128; /* threads per block: 4 independent warps */

/* One thread per 4 activations (gemv_prep_x4); n % 32 == 0 keeps every 8-lane
 * group inside one vector. */
__global__ void __launch_bounds__(256) kernel_gemv_prep_x(const float *__restrict__ x, uint32_t n, uint32_t nb,
                                                          uint8_t *__restrict__ xq, bool x16)
{
    pdl_enter();
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; /* float4 index over the batch */
    const bool valid = t < (uint64_t)n / 4 * nb;
    const uint64_t e = valid ? 4 * t : 0;
    const float4 v = valid ? __ldg(reinterpret_cast<const float4 *>(x) + t) : make_float4(0, 0, 0, 0);
    gemv_prep_x4(v, valid, threadIdx.x & 31, xq, n, (uint32_t)(e / n), (uint32_t)(e % n), x16);
}

/* One warp step of a lane: its segment (32 elements from e) of R rows,
 * decoded into q, d, m, times each batch entry's prepared x, added to acc.
 * Both kernels below run exactly this, so their results have the same bits.
 * X16: the prepared x is 16-bit (bf16 activations: gemv_internal.cuh), X0 not
 * read. */
template <class Q, int R, int NB, bool X16>
static __device__ __forceinline__ void q_step(const uint32_t (&q)[R][8], const float (&d)[R][2],
                                              const float (&m)[R][2], const uint8_t *__restrict__ xq,
                                              const uint32_t (&xr)[NB], uint32_t nb, uint32_t n, uint64_t xstride,
                                              uint32_t e, float (&acc)[R * NB])
{
#pragma unroll
    for (int b = 0; b < NB; b++) {
        if (b >= (int)nb)
            break;
        const uint8_t *xb = xq + (uint64_t)xr[b] * xstride;
        uint32_t x0[8], x1[8], x2[8];
        if constexpr (X16)
#pragma unroll
            for (int i = 0; i < 8; i++)
                x0[i] = 0u;
        else
            ld_a16<8>(xb + e, x0);
        ld_a16<8>(xb + n + e, x1);
        ld_a16<8>(xb + 2 * (uint64_t)n + e, x2);
        const float *sc = reinterpret_cast<const float *>(xb + 3 * (uint64_t)n);
        const float sx = __ldg(sc + e / 32);
        float2 xs = make_float2(0.0f, 0.0f);
        if constexpr (Q::HAS_M)
            xs = __ldg(reinterpret_cast<const float2 *>(xb + xq_sum_off(n)) + e / 32); /* Σx of each 16 */
#pragma unroll
        for (int r = 0; r < R; r++) {
            float a = acc[r * NB + b];
            if constexpr (Q::TWO_SCALES) {
                const float lo = dot_qx<Q::QSIGNED, 4, X16>(q[r], x0, x1, x2);
                const float hi = dot_qx<Q::QSIGNED, 4, X16>(q[r] + 4, x0 + 4, x1 + 4, x2 + 4);
                a = fmaf(sx, fmaf(d[r][0], lo, d[r][1] * hi), a);
                if constexpr (Q::HAS_M) /* Q3_K has none */
                    a = fmaf(m[r][0], xs.x, fmaf(m[r][1], xs.y, a));
            } else {
                a = fmaf(d[r][0] * sx, dot_qx<Q::QSIGNED, 8, X16>(q[r], x0, x1, x2), a);
                if constexpr (Q::HAS_M)
                    a = fmaf(m[r][0], xs.x + xs.y, a);
            }
            acc[r * NB + b] = a;
        }
    }
}

/* The end of a GEMV: each lane's sums over the warp (and with KS > 1 over the
 * block's warps), written by lane 0 of the (first) warp. */
template <int R, int NB, int KS>
static __device__ __forceinline__ void q_finish(float (&acc)[R * NB], float *__restrict__ y, uint32_t rows,
                                                uint32_t row0, uint32_t nb, float scale, const cuda_rope_epi &rp,
                                                const rope_epi_at &at)
{
    constexpr int W = NT / 32;
    const uint32_t lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < R * NB; k++)
        acc[k] = warp_sum(acc[k]);
    if constexpr (KS > 1) {
        __shared__ float red[W][R * NB];
        if (lane == 0) {
#pragma unroll
            for (int k = 0; k < R * NB; k++)
                red[wi][k] = acc[k];
        }
        __syncthreads();
        if (wi != 0)
            return;
#pragma unroll
        for (int k = 0; k < R * NB; k++) {
            float t = 0.0f;
#pragma unroll
            for (int i = 0; i < W; i++)
                t += red[i][k];
            acc[k] = t;
        }
    }
    if (lane != 0)
        return;
    if constexpr (R % 2 == 0 && NB == 1) {
        if (rp.q) { /* a lone token's q|k[|v] (rows and row0 even): the lane holds rotation pairs */
#pragma unroll
            for (int r = 0; r < R; r += 2)
                if (row0 + r < rows)
                    rope_epi_store(rp, at, row0 + r, scale * acc[r], scale * acc[r + 1], true, true);
            return;
        }
    }
    gemv_store_rows<R, NB>(y, acc, rows, row0, nb, scale);
}

/* KS = 1: each of the block's 4 warps owns its own R rows and walks them whole.
 * KS = 4: the 4 warps share R rows, warp i taking blocks i·BPS.. of every 4·BPS
 * (a quarter of each row): 4× more, 4× shorter work units, so the grid has
 * more waves and a shorter tail, at the price of one shared-memory sum. */
/* G: grouped (gemv_group in gemv_internal.cuh), blockIdx.y a work slot: the
 * slot's matrix, its rows of y and of the prepared x; a row's bits are those
 * of the ungrouped kernel of the same KS. */
template <class Q, bool X16, int R, int NB, int KS, bool G>
__global__ void __launch_bounds__(NT, 4) kernel_gemv_q(const uint8_t *__restrict__ w, uint64_t row_bytes,
                                                       uint32_t rows, uint32_t n, const uint8_t *__restrict__ xq,
                                                       uint32_t nb, float *__restrict__ y, float scale, gemv_group grp,
                                                       cuda_rope_epi rp)
{
    constexpr int S = Q::QK / 32;   /* 32-element segments per block */
    constexpr int BPS = 32 / S;     /* blocks per warp step */
    constexpr int W = NT / 32;
    static_assert(KS == 1 || KS == W, "KS: 1 or all warps of the block");
    /* a lone vector's first step of weights is asked for before the PDL wait (PW; the weights are constant), a
     * batch's or a group's kernel waits here (a group's work list is the routing kernel's output) */
    constexpr bool PW = NB == 1 && !G;
    const rope_epi_at at = rope_epi_where(rp);
    if constexpr (!PW)
        pdl_wait();
    uint32_t xr[NB]; /* the prepared x's row of each batch entry */
#pragma unroll
    for (int b = 0; b < NB; b++)
        xr[b] = b;
    if constexpr (G) {
        if (!gemv_group_slot(grp, w, y, rows, nb, xr))
            return;
    }
    const uint32_t lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
    const uint32_t row0 = KS == 1 ? (blockIdx.x * W + wi) * R : blockIdx.x * R;
    if (row0 >= rows)
        return; /* with KS = W the whole block leaves together */
    const uint32_t kstart = (KS == 1 ? 0 : wi * BPS) + lane / S, kstep = BPS * KS;
    const int seg = (int)(lane % S);
    const typename Q::lane_t L = Q::lane(seg);
    const uint8_t *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++) /* tail rows re-read the last row */
        wr[r] = w + (uint64_t)min(row0 + r, rows - 1) * row_bytes + (uint64_t)kstart * Q::BS;
    const uint64_t xstride = xq_stride(n);
    const uint32_t nblk = n / Q::QK;

    float acc[R * NB];
#pragma unroll
    for (int k = 0; k < R * NB; k++)
        acc[k] = 0.0f;

    uint32_t blk = kstart;
    if constexpr (PW) { /* the first step: its weights in flight while the kernel before ends; the same operations */
        uint32_t q[R][8];
        float d[R][2], m[R][2];
        const bool has = blk < nblk;
        if (has)
#pragma unroll
            for (int r = 0; r < R; r++) {
                Q::get(wr[r], L, q[r], d[r], m[r]);
                wr[r] += kstep * Q::BS;
            }
        pdl_wait(); /* (the next kernel is let in after the loop) */
        if (has)
            q_step<Q, R, NB, X16>(q, d, m, xq, xr, nb, n, xstride, blk * Q::QK + 32 * seg, acc);
        blk += kstep;
    }
#pragma unroll 2
    for (; blk < nblk; blk += kstep) {
        uint32_t q[R][8];
        float d[R][2], m[R][2];
#pragma unroll
        for (int r = 0; r < R; r++) {
            Q::get(wr[r], L, q[r], d[r], m[r]);
            wr[r] += kstep * Q::BS;
        }
        q_step<Q, R, NB, X16>(q, d, m, xq, xr, nb, n, xstride, blk * Q::QK + 32 * seg, acc);
    }
    pdl_trigger();
    q_finish<R, NB, KS>(acc, y, rows, row0, nb, scale, rp, at);
}

template <class Q, bool X16, int R, int NB, int KS, bool G = false>
void launch_q(const cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb, float *y,
              float scale, gemv_group grp = {}, const cuda_rope_epi &rp = {})
{
    const uint64_t row_bytes = n / Q::QK * Q::BS;
    const uint64_t groups = (rows + R - 1) / R;
    const dim3 grid((uint32_t)(KS == 1 ? (groups + NT / 32 - 1) / (NT / 32) : groups), G ? grp.max_slots : 1);
    cuda_launch(ctx, kernel_gemv_q<Q, X16, R, NB, KS, G>, grid, NT, 0, (const uint8_t *)w, row_bytes, (uint32_t)rows,
                (uint32_t)n, xq, nb, y, scale, grp, rp);
}

/* ---- the staged kernel -----------------------------------------------------
 * The same warps, rows, lanes and summation order as kernel_gemv_q with
 * KS = 1 (so the same bits), but the weights do not travel through registers:
 * lane 0 of each warp copies the warp's R rows of each stage (SPS warp steps
 * of BPS blocks a row, one bulk copy a row) into the warp's own ring of NS
 * stages in shared memory, NS stages ahead, and the lanes decode from there.
 * A warp thus keeps NS·SPS·R·BPS blocks in flight whatever its registers
 * allow (the register kernel: two steps, at 25 % occupancy too few bytes to
 * cover DRAM latency: bench/GEMV.md), and its first NS stages are asked for
 * before pdl_wait — the weights are constant — while the kernel before it
 * still runs. Each row's stage is copied as the 16-byte-aligned range around
 * it (a bulk copy's granularity; up to 15 bytes either side, hence
 * cuda_alloc's 16 bytes of slack past every buffer), and read at the offset
 * that keeps the block type's own alignment. */
template <class Q, int R> struct qstage {
    static constexpr int S = Q::QK / 32, BPS = 32 / S, W = NT / 32;
    static constexpr uint32_t STEP = BPS * Q::BS;                    /* a row's bytes of a warp step */
    /* warp steps a stage: 2 where a step is under 1 KB a row (every type but
     * Q8_0), halving lane 0's copy issue a byte — Q4_K_M tg128 381.5 → 389.5,
     * Q8_0 (1088 B a step) unchanged at 2 (bench/RESULTS.md, ninth run) */
    static constexpr int SPS = STEP < 1024 ? 2 : 1;
    static constexpr uint32_t CH = ((SPS * STEP + 15) & ~15u) + 16; /* a row's stage (SPS steps), with its slack */
    static constexpr uint32_t BYTES = R * CH;                       /* a warp's stage */
    /* as many stages (2..4) as keep 4 blocks an SM within its 227 KB */
    static constexpr int NS_FIT = (int)(55296 / (W * BYTES));
    static constexpr int NS = NS_FIT > 4 ? 4 : NS_FIT < 2 ? 2 : NS_FIT;
    static constexpr uint32_t SMEM = W * NS * BYTES;
};

template <class Q, bool X16, int R, int NB, bool G>
__global__ void __launch_bounds__(NT, 4) kernel_gemv_qs(const uint8_t *__restrict__ w, uint64_t row_bytes,
                                                        uint32_t rows, uint32_t n, const uint8_t *__restrict__ xq,
                                                        uint32_t nb, float *__restrict__ y, float scale, gemv_group grp)
{
    using St = qstage<Q, R>;
    constexpr int S = St::S, BPS = St::BPS, W = St::W, NS = St::NS, SPS = St::SPS;
    extern __shared__ __align__(16) uint8_t stage_mem[];
    __shared__ __align__(8) uint64_t bars[W][NS];
    uint32_t xr[NB];
#pragma unroll
    for (int b = 0; b < NB; b++)
        xr[b] = b;
    if constexpr (G) {
        pdl_wait(); /* the work list is the routing kernel's output */
        if (!gemv_group_slot(grp, w, y, rows, nb, xr))
            return;
    }
    const uint32_t lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
    const uint32_t row0 = (blockIdx.x * W + wi) * R;
    if (row0 >= rows)
        return;
    const uint32_t nblk = n / Q::QK, nsteps = (nblk + BPS - 1) / BPS, nstages = (nsteps + SPS - 1) / SPS;
    const uint8_t *wrow[R];
#pragma unroll
    for (int r = 0; r < R; r++) /* tail rows re-read the last row */
        wrow[r] = w + (uint64_t)min(row0 + r, rows - 1) * row_bytes;
    uint8_t *const ring = stage_mem + wi * NS * St::BYTES;
    const uint32_t bar_s = smem_u32(&bars[wi][0]);
    constexpr uint32_t SSTEP = SPS * St::STEP, SSTEP_MIS = SSTEP % 16;
    const uint32_t ring_s = smem_u32(ring);
    uint64_t policy = 0;
    if (lane == 0) {
#pragma unroll
        for (int s = 0; s < NS; s++)
            mbar_init(bar_s + 8 * s, 1);
        mbar_init_fence();
        policy = l2_evict_first_policy();
    }
    __syncwarp();
    /* lane 0: stage j's R rows (steps j·SPS ..) into ring slot j % NS.
     * (Measured: one lane a row at once, with R arrivals, was slower —
     * 0.83-0.94× on Q8_0.) */
    auto issue = [&](uint32_t j) {
        const uint32_t cnt = min((uint32_t)(SPS * BPS), nblk - j * SPS * BPS), st = j % NS;
        uintptr_t lo[R], hi[R];
        uint32_t total = 0;
#pragma unroll
        for (int r = 0; r < R; r++) {
            const uintptr_t a = reinterpret_cast<uintptr_t>(wrow[r]) + (uintptr_t)j * SSTEP;
            lo[r] = a & ~(uintptr_t)15, hi[r] = (a + cnt * Q::BS + 15) & ~(uintptr_t)15;
            total += (uint32_t)(hi[r] - lo[r]);
        }
        mbar_expect(bar_s + 8 * st, total);
#pragma unroll
        for (int r = 0; r < R; r++)
            bulk_copy_g2s(ring_s + st * St::BYTES + r * St::CH, reinterpret_cast<const void *>(lo[r]),
                          (uint32_t)(hi[r] - lo[r]), bar_s + 8 * st, policy);
    };
    if (lane == 0)
        for (uint32_t j = 0; j < nstages && j < (uint32_t)NS; j++)
            issue(j);
    if constexpr (!G)
        pdl_wait();
    const int seg = (int)(lane % S);
    const typename Q::lane_t L = Q::lane(seg);
    const uint64_t xstride = xq_stride(n);
    uint32_t off0[R]; /* where row r's stage 0 starts in its slot: its address mod 16 */
#pragma unroll
    for (int r = 0; r < R; r++)
        off0[r] = (uint32_t)reinterpret_cast<uintptr_t>(wrow[r]) & 15;
    const uint8_t *const mine = ring + (lane / S) * Q::BS; /* the lane's block in row 0's slot of stage 0 */
    float acc[R * NB];
#pragma unroll
    for (int k = 0; k < R * NB; k++)
        acc[k] = 0.0f;
    for (uint32_t j = 0; j < nstages; j++) {
        const uint32_t st = j % NS;
        mbar_wait(bar_s + 8 * st, (j / NS) & 1);
#pragma unroll
        for (int s2 = 0; s2 < SPS; s2++) {
            const uint32_t blk = (j * SPS + s2) * BPS + lane / S;
            if (blk < nblk) {
                uint32_t q[R][8];
                float d[R][2], m[R][2];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const uint32_t off = SSTEP_MIS == 0 ? off0[r] : (off0[r] + j * SSTEP_MIS) & 15;
                    Q::template get<true>(mine + st * St::BYTES + r * St::CH + off + s2 * St::STEP, L, q[r], d[r],
                                          m[r]);
                }
                q_step<Q, R, NB, X16>(q, d, m, xq, xr, nb, n, xstride, blk * Q::QK + 32 * seg, acc);
            }
        }
        __syncwarp(); /* every lane is done with stage st before it is refilled */
        if (lane == 0 && j + NS < nstages)
            issue(j + NS);
    }
    pdl_trigger();
    q_finish<R, NB, 1>(acc, y, rows, row0, nb, scale, cuda_rope_epi{}, rope_epi_at{});
}

template <class Q, bool X16, int R, int NB, bool G = false>
void launch_qs(const cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb, float *y,
               float scale, gemv_group grp = {})
{
    constexpr uint32_t smem = qstage<Q, R>::SMEM;
    static uint32_t opted; /* devices this instantiation may use > 48 KB of shared memory on */
    if (smem > 48 * 1024 && cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute(kernel_gemv_qs<Q, X16, R, NB, G>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
    const uint64_t row_bytes = n / Q::QK * Q::BS;
    const uint64_t groups = (rows + R - 1) / R;
    const dim3 grid((uint32_t)((groups + NT / 32 - 1) / (NT / 32)), G ? grp.max_slots : 1);
    cuda_launch(ctx, kernel_gemv_qs<Q, X16, R, NB, G>, grid, NT, smem, (const uint8_t *)w, row_bytes, (uint32_t)rows,
                (uint32_t)n, xq, nb, y, scale, grp);
}

/* ksplit 1: the staged kernel or the register one (the same bits; the RoPE epilogue: the register one only). */
template <class Q, bool X16, int R, int NB, bool G = false>
void launch_ks1(const cuda_ctx *ctx, bool staged, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq,
                uint32_t nb, float *y, float scale, gemv_group grp = {}, const cuda_rope_epi &rp = {})
{
    if (staged)
        launch_qs<Q, X16, R, NB, G>(ctx, w, rows, n, xq, nb, y, scale, grp);
    else
        launch_q<Q, X16, R, NB, 1, G>(ctx, w, rows, n, xq, nb, y, scale, grp, rp);
}

/* Grouped: ksplit 1 (the order the ungrouped batch kernels use), 4 rows a
 * warp alone (experts' rows are short: more loads in flight a lane), 2 with
 * a batch of 8 (4 spills). */
template <class Q, bool X16>
void dispatch_q_grouped(const cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, float *y,
                        float scale, const gemv_group &grp)
{
    if (grp.max_rows == 1)
        launch_ks1<Q, X16, 4, 1, true>(ctx, ctx->gemv_staged, w, rows, n, xq, 1, y, scale, grp);
    else
        launch_ks1<Q, X16, 2, CUDA_GEMV_MAX_BATCH, true>(ctx, ctx->gemv_staged, w, rows, n, xq, CUDA_GEMV_MAX_BATCH, y,
                                                    scale, grp);
}

/* Returns false, launching nothing, where rp asks for the RoPE epilogue and the shape's kernel cannot take it (a
 * batch, one row a warp, the staged kernel). */
template <class Q, bool X16>
bool dispatch_q(const cuda_ctx *ctx, int sms, const void *w, uint64_t rows, uint64_t n, const uint8_t *xq, uint32_t nb,
                float *y, float scale, int rpw, int ks, const cuda_rope_epi &rp)
{
    const bool st = ctx->gemv_staged;
    if (rp.q && (nb > 1 || !rp.dp4a))
        return false;
    if (nb > 1) { /* 2 rows a warp; ksplit 4 where asked (a row's bits as alone at ksplit 4), else 1 */
        if (ks == 4 && nb > 4)
            launch_q<Q, X16, 2, 8, 4>(ctx, w, rows, n, xq, nb, y, scale);
        else if (ks == 4)
            launch_q<Q, X16, 2, 4, 4>(ctx, w, rows, n, xq, nb, y, scale);
        else if (nb > 4)
            launch_ks1<Q, X16, 2, 8>(ctx, st, w, rows, n, xq, nb, y, scale);
        else
            launch_ks1<Q, X16, 2, 4>(ctx, st, w, rows, n, xq, nb, y, scale);
        return true;
    }
    if (ks == 0)
        ks = gemv_pick_ksplit(rows, n, sms);
    if (rpw == 0)
        rpw = st && ks == 1 ? gemv_pick_rows_staged(rows, n, sms) : gemv_pick_rows_per_warp(rows, sms);
    if (ks != 1 && ks != 4)
        CUDA_FAIL("gemv: ksplit %d not in {1,4}", ks);
    if (rp.q && (rpw < 2 || (st && ks == 1)))
        return false;
    switch (rpw * 8 + ks) {
    case 9: launch_q<Q, X16, 1, 1, 1>(ctx, w, rows, n, xq, nb, y, scale); break;
    case 17: launch_ks1<Q, X16, 2, 1>(ctx, st, w, rows, n, xq, nb, y, scale, {}, rp); break;
    case 33: launch_ks1<Q, X16, 4, 1>(ctx, st, w, rows, n, xq, nb, y, scale, {}, rp); break;
    case 12: launch_q<Q, X16, 1, 1, 4>(ctx, w, rows, n, xq, nb, y, scale); break;
    case 20: launch_q<Q, X16, 2, 1, 4>(ctx, w, rows, n, xq, nb, y, scale, {}, rp); break;
    case 36: launch_q<Q, X16, 4, 1, 4>(ctx, w, rows, n, xq, nb, y, scale, {}, rp); break;
    default: CUDA_FAIL("gemv: rows_per_warp %d not in {1,2,4}", rpw);
    }
    return true;
}

} // namespace

/* The quantized types with a kernel: X(enum dtype, its gemv_quant_types.cuh struct). */
#define QUANT_TYPES(X)                                                                                         \
    X(DTYPE_Q8_0, qt_q8_0) X(DTYPE_Q4_0, qt_q4_0) X(DTYPE_Q4_1, qt_q4_1) X(DTYPE_Q4_K, qt_q4_k)                    \
    X(DTYPE_Q5_K, qt_q5_k) X(DTYPE_Q6_K, qt_q6_k) X(DTYPE_IQ4_XS, qt_iq4_xs) X(DTYPE_Q5_0, qt_q5_0)                \
    X(DTYPE_Q5_1, qt_q5_1) X(DTYPE_IQ4_NL, qt_iq4_nl) X(DTYPE_Q2_K, qt_q2_k) X(DTYPE_Q3_K, qt_q3_k)

bool gemv_quant_has(enum dtype t)
{
    switch (t) {
#define X(T, Q) case T:
        QUANT_TYPES(X)
#undef X
        return true;
    default:
        return false;
    }
}

uint8_t *gemv_quant_xq_reserve(struct cuda_ctx *ctx, uint64_t n, uint32_t nb)
{
    if (n % 32 != 0 || n > 0xFFFFFFFFull || nb < 1 || nb > CUDA_GEMV_MAX_ROWS)
        CUDA_FAIL("gemv_prep_x: n = %llu (must be a multiple of 32), rows %u", (unsigned long long)n, nb);
    const size_t need = (size_t)xq_stride(n) * nb;
    if (need > ctx->xq_bytes) {
        /* grows rarely (first use at the largest n); not allowed inside a graph capture */
        CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
        if (ctx->xq)
            CUDA_CHECK(cudaFree(ctx->xq));
        CUDA_CHECK(cudaMalloc(&ctx->xq, need));
        ctx->xq_bytes = need;
    }
    ctx->xq_n = n, ctx->xq_batch = nb;
    return (uint8_t *)ctx->xq;
}

void gemv_quant_prep_x(struct cuda_ctx *ctx, const float *x, uint64_t n, uint32_t nb)
{
    uint8_t *xq = gemv_quant_xq_reserve(ctx, n, nb);
    const uint64_t threads = n / 4 * nb;
    cuda_launch(ctx, kernel_gemv_prep_x, (unsigned)((threads + 255) / 256), 256, 0, x, (uint32_t)n, nb, xq,
                (bool)ctx->act_bf16);
}

void gemv_quant_launch_grouped(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                               float *y, float scale, const gemv_group &grp)
{
    if (!ctx->xq || ctx->xq_n != n)
        CUDA_FAIL("gemv %s grouped: activations not prepared for n = %llu", dtype_name(t), (unsigned long long)n);
    const uint8_t *xq = (const uint8_t *)ctx->xq;
    switch (t) {
#define X(T, Q)                                                                                                  \
    case T:                                                                                                    \
        if (ctx->act_bf16)                                                                                     \
            dispatch_q_grouped<Q, true>(ctx, w, rows, n, xq, y, scale, grp);                                   \
        else                                                                                                   \
            dispatch_q_grouped<Q, false>(ctx, w, rows, n, xq, y, scale, grp);                                  \
        break;
        QUANT_TYPES(X)
#undef X
    default: CUDA_FAIL("gemv_quant: type %s has no quantized kernel", dtype_name(t));
    }
}

extern "C" int cuda_gemv_engine_ksplit(const struct cuda_ctx *ctx, bool head)
{
    return ctx->gemv_ks == CUDA_GEMV_KS_AUTO ? (head ? 1 : 4) : ctx->gemv_ks;
}

bool gemv_quant_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, uint32_t nb,
                       float *y, float scale, int rpb, int ks, const cuda_rope_epi &rp)
{
    if (!ctx->xq || ctx->xq_n != n || ctx->xq_batch < nb)
        CUDA_FAIL("gemv %s: activations not prepared for n = %llu, batch %u (cuda_gemv_prep_x)", dtype_name(t),
                  (unsigned long long)n, nb);
    const int sms = ctx->prop.multiProcessorCount;
    const uint8_t *xq = (const uint8_t *)ctx->xq;
    /* the tensor-core kernel where the caller leaves the launch shape to us (a
     * given rows-per-warp asks for the dp4a kernels: tests); its K split does
     * not change with the batch, so neither do a row's bits */
    if (rpb == 0 && gemv_mma_has(ctx->gemv_mma, t, n)) {
        if (rp.q && (nb != 1 || rows % 16))
            return false;
        gemv_mma_launch(ctx, t, w, rows, n, xq, nb, y, scale, ctx->gemv_mma_ks, rp);
        return true;
    }
    switch (t) {
#define X(T, Q)                                                                                                  \
    case T:                                                                                                    \
        return ctx->act_bf16 ? dispatch_q<Q, true>(ctx, sms, w, rows, n, xq, nb, y, scale, rpb, ks, rp)        \
                             : dispatch_q<Q, false>(ctx, sms, w, rows, n, xq, nb, y, scale, rpb, ks, rp);
        QUANT_TYPES(X)
#undef X
    default: CUDA_FAIL("gemv_quant: type %s has no quantized kernel", dtype_name(t));
    }
}
