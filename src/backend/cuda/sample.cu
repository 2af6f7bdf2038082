/* backend/cuda/sample.cu — sampling on the GPU: the greedy pick of each logit
 * row, so that a decode step of greedy sequences sends token ids to the host
 * instead of vocab-sized rows (64 rows of Llama-3's 128256 logits are 33 MB a
 * step; their ids 256 bytes). The rule is engine/backend.h's
 * backend_logits_argmax, bit for bit: NaN counts as −inf, +inf as FLT_MAX,
 * the lowest index among equal maxima, −1 when every logit is −inf or NaN.
 * Floor: the rows are read once, T·vocab·4 bytes / 4.3 TB/s: 64 × 128256 →
 * 7.6 µs. One block of 1024 threads per row.
 *
 * And the temperature draw (engine/backend.h's backend_draw): sampler_sample's
 * choice for a sampler that draws from the whole vocabulary with temperature
 * alone (sample.h: sampler_plain_temperature), from the row and the
 * sampler's uniform u, bit for bit: the same float and double operations in
 * the same order as sample/sampler.c (its exp_neg with every product and sum
 * rounded on its own, __fmul_rn / __fadd_rn: no fused multiply-add, as the
 * host code is compiled with -ffp-contract=off; the 16-lane double total; the
 * token where the running double sum in token order crosses u·total — found
 * from parallel prefix sums and a proven error margin, walked one by one only
 * when the draw falls within that margin of a boundary). One block a row;
 * its first two passes move 4 floats a load where rows are 16-byte aligned
 * (117 → 82 µs for a row of 128256 on the H200: bench/RESULTS.md).
 * (top-k and nucleus candidates: topk.cu, the host draws from them.)
 */
#include <float.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_decode.h"
#include "backend/cuda/exp_neg.cuh"

namespace {

constexpr int AM_THREADS = 1024;

__global__ void __launch_bounds__(AM_THREADS) kernel_argmax_rows(const float *__restrict__ logits, uint32_t vocab,
                                                                 int32_t *__restrict__ out)
{
    pdl_enter();
    __shared__ float sv[AM_THREADS / 32];
    __shared__ int si[AM_THREADS / 32];
    const float *l = logits + (uint64_t)blockIdx.x * vocab;
    float best = -INFINITY;
    int at = -1;
    /* this thread's indices rise in both loops: the first of equal maxima stays */
    const uint32_t n4 = vocab % 4 == 0 ? vocab / 4 : 0; /* rows 16-byte aligned: 4 floats a load */
#pragma unroll 4
    for (uint32_t i4 = threadIdx.x; i4 < n4; i4 += AM_THREADS) {
        const float4 q = __ldg(reinterpret_cast<const float4 *>(l) + i4);
        greedy_fold(logit_clean(q.x), 4 * i4, best, at);
        greedy_fold(logit_clean(q.y), 4 * i4 + 1, best, at);
        greedy_fold(logit_clean(q.z), 4 * i4 + 2, best, at);
        greedy_fold(logit_clean(q.w), 4 * i4 + 3, best, at);
    }
    for (uint32_t i = 4 * n4 + threadIdx.x; i < vocab; i += AM_THREADS)
        greedy_fold(logit_clean(l[i]), i, best, at);
    am_block_best<AM_THREADS>(best, at, sv, si);
    if (threadIdx.x == 0)
        out[blockIdx.x] = at;
}

constexpr int DR_THREADS = 1024;
constexpr int DR_TILE = 8192; /* floats a shared-memory tile: 32 KB */
constexpr int DR_AHEAD = 8;   /* steps of 32 weights whose loads a warp issues together */

/* The block's copy of l[base, base + n) into tile (n ≤ DR_TILE); barriers
 * before (the last tile consumed) and after (this one in place). */
__device__ __forceinline__ void dr_tile_load(const float *l, uint32_t base, uint32_t n, float *tile)
{
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < n; i += DR_THREADS)
        tile[i] = l[base + i];
    __syncthreads();
}

/* This lane's weights of DR_AHEAD steps of 32 from b8 (0 past w1), loads issued together. */
__device__ __forceinline__ void dr_load_ahead(const float *l, uint32_t b8, uint32_t w1, uint32_t lane,
                                              float (&wv)[DR_AHEAD])
{
#pragma unroll
    for (int k = 0; k < DR_AHEAD; k++) {
        const uint32_t j = b8 + 32 * k + lane;
        wv[k] = j < w1 ? l[j] : 0.0f;
    }
}

/* One block a row; rows whose params are off are left alone. The row is
 * overwritten (z, then the weights). out[r] = {token, u used}. */
__global__ void __launch_bounds__(DR_THREADS) kernel_draw_rows(float *__restrict__ logits, uint32_t vocab,
                                                               const cuda_draw_params *__restrict__ params,
                                                               int2 *__restrict__ out)
{
    pdl_enter();
    const cuda_draw_params P = params[blockIdx.x];
    if (!P.on)
        return;
    __shared__ float tile[DR_TILE];
    __shared__ float sv[DR_THREADS / 32], sz[DR_THREADS / 32];
    __shared__ int si[DR_THREADS / 32];
    __shared__ double sacc[16];
    __shared__ double swsum[DR_THREADS / 32];
    __shared__ float s_zmax;
    __shared__ double s_u;
    __shared__ int s_done, s_cross, s_tok;
    float *l = logits + (uint64_t)blockIdx.x * vocab;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    /* z = l / temperature (l cleaned as the sampler does), its max, and the
     * greedy pick of l for the case of an infinite max */
    float zmax = -INFINITY, best = -INFINITY;
    int at = -1;
    /* (this thread's indices rise in both loops: the first of equal maxima stays) */
    const uint32_t n4 = vocab % 4 == 0 ? vocab / 4 : 0; /* rows 16-byte aligned: 4 floats a load */
    /* logit v of token i: its z (returned), folded into zmax and the greedy pick */
    auto first = [&](float v, uint32_t i) {
        v = logit_clean(v);
        greedy_fold(v, i, best, at);
        const float z = __fdiv_rn(v, P.temperature);
        zmax = fmaxf(zmax, z);
        return z;
    };
#pragma unroll 2
    for (uint32_t i4 = threadIdx.x; i4 < n4; i4 += DR_THREADS) {
        float4 q = reinterpret_cast<const float4 *>(l)[i4];
        q.x = first(q.x, 4 * i4), q.y = first(q.y, 4 * i4 + 1), q.z = first(q.z, 4 * i4 + 2);
        q.w = first(q.w, 4 * i4 + 3);
        reinterpret_cast<float4 *>(l)[i4] = q;
    }
#pragma unroll 4
    for (uint32_t i = 4 * n4 + threadIdx.x; i < vocab; i += DR_THREADS)
        l[i] = first(l[i], i);
    am_warp_best(best, at);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        zmax = fmaxf(zmax, __shfl_xor_sync(0xffffffffu, zmax, o));
    if (lane == 0)
        sv[warp] = best, si[warp] = at, sz[warp] = zmax;
    __syncthreads();
    if (warp == 0) {
        best = sv[lane], at = si[lane], zmax = sz[lane];
        am_warp_best(best, at);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            zmax = fmaxf(zmax, __shfl_xor_sync(0xffffffffu, zmax, o));
        if (lane == 0) {
            s_zmax = zmax;
            if (zmax == INFINITY || zmax == -INFINITY) /* the sampler's greedy case: u not used */
                out[blockIdx.x] = make_int2(at, 0);
        }
    }
    __syncthreads();
    zmax = s_zmax;
    if (zmax == INFINITY || zmax == -INFINITY)
        return;

    /* the weights, in place */
#pragma unroll 2
    for (uint32_t i4 = threadIdx.x; i4 < n4; i4 += DR_THREADS) {
        float4 q = reinterpret_cast<const float4 *>(l)[i4];
        q.x = sample_exp_neg(__fsub_rn(q.x, zmax)), q.y = sample_exp_neg(__fsub_rn(q.y, zmax));
        q.z = sample_exp_neg(__fsub_rn(q.z, zmax)), q.w = sample_exp_neg(__fsub_rn(q.w, zmax));
        reinterpret_cast<float4 *>(l)[i4] = q;
    }
#pragma unroll 4
    for (uint32_t i = 4 * n4 + threadIdx.x; i < vocab; i += DR_THREADS)
        l[i] = sample_exp_neg(__fsub_rn(l[i], zmax));
    __syncthreads(); /* the block's writes before its reads of other threads' weights */

    /* The draw is the first token j (in id order) at which C_j, the running
     * double sum of the weights summed one after the other, exceeds u = U·T
     * (U the sampler's uniform, T its 16-lane total; the last token with a
     * weight if none does). T and C are dependent chains of ~vocab / 16 and
     * ~vocab double adds, ~30 ns each on one thread, so they are not walked:
     * A, the same prefix sums taken by warps over contiguous ranges (32
     * weights a step, shuffle sums) plus a block scan of the ranges, finds
     * the crossing j_a with u ≈ U·A_total. Every one of C, T, A is a sum of ≤ vocab non-negative
     * terms rounded ≤ vocab times at 2^-53 relative, so all lie within
     * (vocab + …)·2^-53 of the exact sums; M below is 8× the sum of those
     * bounds. C never decreases (adding w ≥ 0), so when A before j_a is
     * ≤ u − M and A at j_a is > u + M, C_j ≤ U·T for every j < j_a and C at
     * j_a > U·T: j_a is the sampler's token. A draw within M of a boundary
     * (~1e-9 of the mass; also U·A_total ≥ A_total, where no crossing is
     * found) takes the sampler's own walk: T, then C. */
    /* each warp a contiguous range of the row, 32 weights a step (one load,
     * a 5-level shuffle sum added to the warp's running sum) */
    constexpr uint32_t NWARP = DR_THREADS / 32;
    const uint32_t per_w = ((vocab + 31) / 32 + NWARP - 1) / NWARP * 32;
    const uint32_t w0 = min(vocab, warp * per_w), w1 = min(vocab, w0 + per_w);
    double wsum = 0.0;
    for (uint32_t b8 = w0; b8 < w1; b8 += 32 * DR_AHEAD) {
        float wv[DR_AHEAD];
        dr_load_ahead(l, b8, w1, lane, wv);
#pragma unroll
        for (int k = 0; k < DR_AHEAD; k++) {
            double x = (double)wv[k];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                x = __dadd_rn(x, __shfl_xor_sync(0xffffffffu, x, o));
            wsum = __dadd_rn(wsum, x);
        }
    }
    if (lane == 0)
        swsum[warp] = wsum;
    __syncthreads();
    if (warp == 0) { /* inclusive scan of the warp sums */
        double ws = swsum[lane];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const double v = __shfl_up_sync(0xffffffffu, ws, o);
            if (lane >= o)
                ws = __dadd_rn(ws, v);
        }
        swsum[lane] = ws;
        if (lane == 0) {
            s_cross = NWARP; /* no warp's range crosses u (yet) */
            s_tok = -3;      /* undecided: walk */
        }
    }
    __syncthreads();
    const double excl = warp ? swsum[warp - 1] : 0.0, atotal = swsum[NWARP - 1];
    const double M = ldexp(atotal, -50) * (double)(vocab + 4096);
    double u = __dmul_rn(P.u, atotal);
    if (lane == 0 && __dadd_rn(excl, wsum) > u)
        atomicMin(&s_cross, (int)warp);
    __syncthreads();
    if (s_cross == (int)warp) { /* the crossing warp walks its range again, 32 prefix sums a step */
        double run = excl;
        bool found = false;
        for (uint32_t b8 = w0; b8 < w1 && !found; b8 += 32 * DR_AHEAD) {
            float wv[DR_AHEAD];
            dr_load_ahead(l, b8, w1, lane, wv);
#pragma unroll
            for (int k = 0; k < DR_AHEAD; k++) {
                const uint32_t j = b8 + 32 * k + lane;
                double sc = (double)wv[k]; /* inclusive scan over the lanes */
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    const double v = __shfl_up_sync(0xffffffffu, sc, o);
                    if (lane >= o)
                        sc = __dadd_rn(sc, v);
                }
                double ex = __shfl_up_sync(0xffffffffu, sc, 1);
                if (lane == 0)
                    ex = 0.0;
                const double prev = __dadd_rn(run, ex), at = __dadd_rn(run, sc);
                const unsigned crossed = __ballot_sync(0xffffffffu, at > u);
                if (crossed) {
                    const int f = __ffs(crossed) - 1;
                    if (lane == f && prev <= u - M && at > u + M)
                        s_tok = (int)j;
                    found = true;
                    break;
                }
                run = __dadd_rn(run, __shfl_sync(0xffffffffu, sc, 31));
            }
        }
    }
    __syncthreads();
    if (s_tok != -3 && !(P.on & CUDA_DRAW_WALK)) {
        if (threadIdx.x == 0)
            out[blockIdx.x] = make_int2(s_tok, 1);
        return;
    }

    /* the rare walk, the sampler's own: T over 16 lanes, lane k the weights
     * i ≡ k (mod 16) in order, then the lanes in order (sum_exp); then C
     * (thread 0). The block brings the weights in as shared-memory tiles. */
    double acc = 0.0;
    for (uint32_t base = 0; base < vocab; base += DR_TILE) {
        const uint32_t n = min((uint32_t)DR_TILE, vocab - base);
        dr_tile_load(l, base, n, tile);
        if (threadIdx.x < 16)
            for (uint32_t i = threadIdx.x; i < n; i += 16) /* base % 16 == 0: lane of base + i is i % 16 */
                acc = __dadd_rn(acc, (double)tile[i]);
    }
    if (threadIdx.x < 16)
        sacc[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0;
        for (int k = 0; k < 16; k++)
            total = __dadd_rn(total, sacc[k]);
        s_u = __dmul_rn(P.u, total);
    }
    __syncthreads();
    u = s_u;
    double cum = 0.0;
    int last = 0, tok = -2;
    if (threadIdx.x == 0)
        s_done = 0;
    for (uint32_t base = 0; base < vocab; base += DR_TILE) {
        const uint32_t n = min((uint32_t)DR_TILE, vocab - base);
        dr_tile_load(l, base, n, tile);
        if (s_done)
            break;
        if (threadIdx.x == 0) {
            for (uint32_t i = 0; i < n && tok < 0; i += 8) {
                float w[8];
#pragma unroll
                for (int k = 0; k < 8; k++)
                    w[k] = i + k < n ? tile[i + k] : 0.0f;
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    if (w[k] <= 0.0f)
                        continue;
                    cum = __dadd_rn(cum, (double)w[k]);
                    last = (int)(base + i + k);
                    if (cum > u) {
                        tok = last;
                        break;
                    }
                }
            }
            if (tok >= 0)
                s_done = 1;
        }
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = make_int2(tok >= 0 ? tok : last, 1);
}

} // namespace

extern "C" void cuda_draw_rows(struct cuda_ctx *ctx, float *logits, uint32_t rows, uint32_t vocab,
                               const struct cuda_draw_params *params, int32_t *out)
{
    if (rows == 0)
        return;
    cuda_launch(ctx, kernel_draw_rows, rows, DR_THREADS, 0, logits, vocab, params, reinterpret_cast<int2 *>(out));
}

extern "C" void cuda_argmax_rows(struct cuda_ctx *ctx, const float *logits, uint32_t rows, uint32_t vocab,
                                 int32_t *out)
{
    if (rows == 0)
        return;
    cuda_launch(ctx, kernel_argmax_rows, rows, AM_THREADS, 0, logits, vocab, out);
}
