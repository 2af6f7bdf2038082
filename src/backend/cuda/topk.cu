/* backend/cuda/topk.cu — the top-k candidates of a logit row on the device,
 * for samplers with top-k (sample.h: sampler_topk_candidates) and, with
 * k = 1024 and the statistics of step 6, for nucleus samplers (top-p /
 * min-p without top-k: sampler_nucleus_candidates): the k tokens
 * by (z desc, id asc), z = l / T with l the logit cleaned as sampler.c does
 * (NaN → −inf, +inf → FLT_MAX), each with its z, and the greedy rule's token
 * over l. The host replays sampler.c's draw from them
 * (sampler_sample_candidates): the same token and PRNG as sampling the whole
 * row, with k·8 bytes a row crossing instead of vocab·4.
 *
 * One block of 1024 threads a row, exact selection by radix:
 * 1. one pass over the row: the greedy pick, z = l / T (IEEE division, as the
 *    host's), and z's order-preserving key (−0 counted as +0: they compare
 *    equal) written over the row (scratch), with a histogram of its top byte;
 * 2. three more byte passes over the keys narrow the k-th largest key τ;
 * 3. a pass keeps every key ≥ τ when exactly the needed number equal τ (the
 *    usual case); else, a tile at a time in token order, every key > τ and
 *    the first keys = τ (equal z) until k are kept;
 * 4. a bitonic sort of the ≤ 1024 kept by (z desc, id asc) in shared memory,
 *    over the power of two above k;
 * 5. the candidates (ids and z) out;
 * 6. for a nucleus row (params.stats), one more pass over the keys: the
 *    weights w = e^(z − zmax) by the sampler's exp_neg (exp_neg.cuh), their
 *    total (per-thread double sums, then the block's in a fixed order: each
 *    term rounded once, as sampler_sample_nucleus asks) and `rest`, the
 *    largest w among the keys ≤ the last candidate's; z is written back over
 *    the keys, for the rare draw the host must make from the row.
 * Histograms count with warp-aggregated shared atomics (lanes of one bin
 * add once; a histogram of each warp's own was measured 2 % slower: the
 * passes are bound by their loads, not by the atomics). A thread reads 4
 * consecutive keys a load where the rows are 16-byte aligned (vocab % 4 ==
 * 0): four loads in flight a thread carry 16 keys, not 4 — 147.5 → 124.5 µs
 * for top-40 of 128256 (bench/RESULTS.md, tenth run). Floor: four reads of
 * the row (from L2) and one write — ~2.5 MB a 128256 row, a few µs on one SM
 * at full L2 rate; rows run in parallel.
 */
#include <float.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_decode.h"
#include "backend/cuda/exp_neg.cuh"

namespace {

constexpr int TK_THREADS = 1024;
constexpr int TK_WARPS = TK_THREADS / 32;
constexpr int TK_U = 4; /* steps of a pass whose loads are issued together */

/* Order-preserving key of a float: larger value → larger key. */
__device__ __forceinline__ uint32_t tk_key(float z)
{
    const uint32_t b = __float_as_uint(z == 0.0f ? 0.0f : z);
    return b & 0x80000000u ? ~b : b | 0x80000000u;
}

/* The float of a key (a zero comes back +0). */
__device__ __forceinline__ float tk_unkey(uint32_t key)
{
    return __uint_as_float(key & 0x80000000u ? key & 0x7fffffffu : ~key);
}

/* Element j (< TK_U·V) of this thread's share of the TK_THREADS·TK_U·V
 * elements from i0: V consecutive elements a load (V = 4: one 16-byte load
 * a step, rows 16-byte aligned), TK_U loads issued together. */
template <int V> __device__ __forceinline__ uint32_t tk_elem(uint32_t i0, int j)
{
    return i0 + ((j / V) * TK_THREADS + threadIdx.x) * V + j % V;
}

/* This thread's keys from i0 (0 past the row: below every key). */
template <int V>
__device__ __forceinline__ void tk_load(const uint32_t *keys, uint32_t vocab, uint32_t i0, uint32_t (&kv)[TK_U * V])
{
#pragma unroll
    for (int u = 0; u < TK_U; u++) {
        const uint32_t b = tk_elem<V>(i0, u * V);
        if constexpr (V == 4) {
            if (b + 4 <= vocab) {
                const uint4 q = __ldcg(reinterpret_cast<const uint4 *>(keys + b));
                kv[4 * u] = q.x, kv[4 * u + 1] = q.y, kv[4 * u + 2] = q.z, kv[4 * u + 3] = q.w;
                continue;
            }
        }
#pragma unroll
        for (int c = 0; c < V; c++)
            kv[u * V + c] = b + c < vocab ? __ldcg(keys + b + c) : 0;
    }
}

/* This thread's values back to where tk_load took them from. */
template <int V>
__device__ __forceinline__ void tk_store(uint32_t *keys, uint32_t vocab, uint32_t i0, const uint32_t (&kv)[TK_U * V])
{
#pragma unroll
    for (int u = 0; u < TK_U; u++) {
        const uint32_t b = tk_elem<V>(i0, u * V);
        if constexpr (V == 4) {
            if (b + 4 <= vocab) {
                *reinterpret_cast<uint4 *>(keys + b) = make_uint4(kv[4 * u], kv[4 * u + 1], kv[4 * u + 2], kv[4 * u + 3]);
                continue;
            }
        }
#pragma unroll
        for (int c = 0; c < V; c++)
            if (b + c < vocab)
                keys[b + c] = kv[u * V + c];
    }
}

/* hist[bin] += 1 for the lanes with `on`, one atomic per distinct bin. */
__device__ __forceinline__ void tk_count(uint32_t *hist, uint32_t bin, bool on, uint32_t lane)
{
    const uint32_t peers = __match_any_sync(0xffffffffu, on ? bin : 0xffffffffu);
    if (on && lane == (uint32_t)(__ffs(peers) - 1))
        atomicAdd(&hist[bin], (uint32_t)__popc(peers));
}

/* Given the 256-bin histogram of this byte, the bin holding the need-th
 * largest key (counting from the top bin down), and need minus the keys in
 * the bins above it. Called by warp 0; the result in every lane. */
__device__ __forceinline__ void tk_pick(const uint32_t *hist, uint32_t &need, uint32_t &bin, uint32_t lane)
{
    /* lane l sums bins 255 − 8l .. 248 − 8l (its 8, from the top) */
    uint32_t c[8], s = 0;
#pragma unroll
    for (int j = 0; j < 8; j++)
        s += c[j] = hist[255 - 8 * lane - j];
    uint32_t incl = s; /* inclusive prefix over lanes (from the top) */
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= (uint32_t)o)
            incl += v;
    }
    const uint32_t excl = incl - s;
    const bool mine = excl < need && need <= incl;
    const uint32_t owner = __ffs(__ballot_sync(0xffffffffu, mine)) - 1;
    uint32_t b = 0, left = 0;
    if (mine) {
        uint32_t acc = excl;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (acc + c[j] >= need) {
                b = 255 - 8 * lane - j, left = need - acc;
                break;
            }
            acc += c[j];
        }
    }
    bin = __shfl_sync(0xffffffffu, b, owner);
    need = __shfl_sync(0xffffffffu, left, owner);
}

template <int V>
__global__ void __launch_bounds__(TK_THREADS) kernel_topk_rows(float *__restrict__ logits, uint32_t vocab,
                                                               const struct cuda_topk_params *__restrict__ params,
                                                               int32_t *__restrict__ out_idx,
                                                               float *__restrict__ out_val,
                                                               int32_t *__restrict__ out_greedy,
                                                               struct cuda_topk_stats *__restrict__ out_stats)
{
    __shared__ uint32_t hist[256];
    __shared__ uint32_t s_warp[TK_WARPS];
    __shared__ float s_bv[TK_WARPS];
    __shared__ int s_bi[TK_WARPS];
    __shared__ uint32_t s_key[CUDA_TOPK_MAX], s_n;
    __shared__ int32_t s_id[CUDA_TOPK_MAX];
    pdl_enter();
    const struct cuda_topk_params P = params[blockIdx.x];
    if (P.k == 0)
        return;
    const uint32_t k = min(min(P.k, (uint32_t)CUDA_TOPK_MAX), vocab);
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float *row = logits + (uint64_t)blockIdx.x * vocab;
    uint32_t *keys = reinterpret_cast<uint32_t *>(row);
    for (uint32_t i = threadIdx.x; i < 256; i += TK_THREADS)
        hist[i] = 0;
    if (threadIdx.x == 0)
        s_n = 0;
    __syncthreads();

    /* 1: greedy, keys, top byte */
    float gv = -INFINITY; /* the greedy rule's pick: this thread's indices rise, so the first of equal maxima stays */
    int gi = -1;
    for (uint32_t i0 = 0; i0 < vocab; i0 += TK_THREADS * TK_U * V) {
        uint32_t lv[TK_U * V]; /* the logits' bits; the loads of TK_U steps in flight together */
        tk_load<V>(keys, vocab, i0, lv);
#pragma unroll
        for (int j = 0; j < TK_U * V; j++) {
            const uint32_t i = tk_elem<V>(i0, j);
            const bool on = i < vocab;
            uint32_t key = 0;
            if (on) {
                const float l = logit_clean(__uint_as_float(lv[j]));
                greedy_fold(l, i, gv, gi);
                key = tk_key(__fdiv_rn(l, P.temperature));
            }
            lv[j] = key;
            tk_count(hist, key >> 24, on, lane);
        }
        tk_store<V>(keys, vocab, i0, lv); /* the keys over the logits */
    }
    am_block_best<TK_THREADS>(gv, gi, s_bv, s_bi); /* (l desc, id asc); −1 when no l is finite */
    if (threadIdx.x == 0)
        out_greedy[blockIdx.x] = gi;

    /* 2: τ, a byte a pass (the key's bytes from the top); s_eq: the keys equal to τ */
    __shared__ uint32_t s_prefix, s_need, s_eq;
    uint32_t prefix = 0, need = k;
    for (int byte = 3; byte >= 0; byte--) {
        if (byte < 3) {
            __syncthreads(); /* the picks of the pass before are read; the histogram may be cleared */
            for (uint32_t i = threadIdx.x; i < 256; i += TK_THREADS)
                hist[i] = 0;
            __syncthreads();
            const uint32_t hi = 8 * (byte + 1); /* bits above this byte must match the prefix */
            for (uint32_t i0 = 0; i0 < vocab; i0 += TK_THREADS * TK_U * V) {
                uint32_t kv[TK_U * V];
                tk_load<V>(keys, vocab, i0, kv);
#pragma unroll
                for (int j = 0; j < TK_U * V; j++) {
                    const bool on = tk_elem<V>(i0, j) < vocab && (kv[j] >> hi) == prefix;
                    tk_count(hist, (kv[j] >> (8 * byte)) & 0xffu, on, lane);
                }
            }
        }
        __syncthreads();
        if (warp == 0) {
            uint32_t bin;
            tk_pick(hist, need, bin, lane);
            if (lane == 0)
                s_prefix = (prefix << 8) | bin, s_need = need, s_eq = hist[bin];
        }
        __syncthreads();
        prefix = s_prefix, need = s_need;
    }
    const uint32_t tau = prefix; /* the k-th largest key; `need` of the keys equal to it are kept */

    /* 3: keys > τ, and the first `need` keys = τ in token order — all of
     * them when there are no more (the usual case: no ordering needed) */
    if (s_eq == need) {
        for (uint32_t i0 = 0; i0 < vocab; i0 += TK_THREADS * TK_U * V) {
            uint32_t kv[TK_U * V];
            tk_load<V>(keys, vocab, i0, kv);
#pragma unroll
            for (int j = 0; j < TK_U * V; j++)
                if (kv[j] >= tau && tk_elem<V>(i0, j) < vocab) {
                    const uint32_t p = atomicAdd(&s_n, 1u);
                    s_key[p] = kv[j], s_id[p] = (int32_t)tk_elem<V>(i0, j);
                }
        }
    }
    uint32_t ties = 0; /* keys = τ in the tiles before */
    const uint32_t below = (1u << lane) - 1u;
    for (uint32_t i0 = 0; i0 < vocab && s_eq != need; i0 += TK_THREADS) {
        const uint32_t i = i0 + threadIdx.x;
        const uint32_t key = i < vocab ? __ldcg(keys + i) : 0;
        const bool gt = i < vocab && key > tau, eq = i < vocab && key == tau;
        if (gt) {
            const uint32_t p = atomicAdd(&s_n, 1u);
            s_key[p] = key, s_id[p] = (int32_t)i;
        }
        const uint32_t b = __ballot_sync(0xffffffffu, eq);
        if (lane == 0)
            s_warp[warp] = __popc(b);
        __syncthreads();
        uint32_t before = ties, total = 0;
        for (int w = 0; w < TK_WARPS; w++) {
            const uint32_t c = s_warp[w];
            before += w < (int)warp ? c : 0;
            total += c;
        }
        if (eq && before + __popc(b & below) < need) {
            const uint32_t p = atomicAdd(&s_n, 1u);
            s_key[p] = key, s_id[p] = (int32_t)i;
        }
        ties += total;
        __syncthreads(); /* s_warp is rewritten by the next tile */
        if (ties >= need && s_n == k) /* uniform: the rest adds nothing */
            break;
    }

    /* 4: bitonic sort of the k kept by (key desc, id asc) over the power of
     * two above k; the empty slots last */
    __syncthreads();
    uint32_t np2 = 2;
    while (np2 < k)
        np2 <<= 1;
    for (uint32_t i = threadIdx.x; i < np2; i += TK_THREADS)
        if (i >= k)
            s_key[i] = 0, s_id[i] = 0x7fffffff;
    __syncthreads();
    for (uint32_t size = 2; size <= np2; size <<= 1)
        for (uint32_t stride = size / 2; stride > 0; stride >>= 1) {
            for (uint32_t i = threadIdx.x; i < np2 / 2; i += TK_THREADS) {
                const uint32_t lo = 2 * stride * (i / stride) + i % stride, hi = lo + stride;
                const bool first_better_wanted = ((lo & size) == 0); /* this run ascending in "better first" */
                const uint32_t ka = s_key[lo], kb = s_key[hi];
                const int32_t ia = s_id[lo], ib = s_id[hi];
                const bool a_better = ka > kb || (ka == kb && ia < ib);
                if (a_better != first_better_wanted) {
                    s_key[lo] = kb, s_key[hi] = ka;
                    s_id[lo] = ib, s_id[hi] = ia;
                }
            }
            __syncthreads();
        }
    /* 5: out; z from its key (a −0 comes back +0: the host's weights e^(z − zmax) are the same) */
    for (uint32_t j = threadIdx.x; j < k; j += TK_THREADS) {
        out_idx[(uint64_t)blockIdx.x * CUDA_TOPK_MAX + j] = s_id[j];
        out_val[(uint64_t)blockIdx.x * CUDA_TOPK_MAX + j] = tk_unkey(s_key[j]);
    }
    if (!P.stats)
        return;

    /* 6: the nucleus statistics, and z back over the keys (with zmax ±inf
     * the weights mean nothing: the sampler takes the greedy pick then) */
    const float zmax = tk_unkey(s_key[0]);
    const uint32_t klast = s_key[k - 1];
    double sum = 0.0;
    float rest = 0.0f;
    for (uint32_t i0 = 0; i0 < vocab; i0 += TK_THREADS * TK_U * V) {
        uint32_t kv[TK_U * V];
        tk_load<V>(keys, vocab, i0, kv);
#pragma unroll
        for (int j = 0; j < TK_U * V; j++) {
            if (tk_elem<V>(i0, j) >= vocab)
                continue;
            const float z = tk_unkey(kv[j]);
            const float w = sample_exp_neg(__fsub_rn(z, zmax));
            sum = __dadd_rn(sum, (double)w);
            if (kv[j] <= klast)
                rest = fmaxf(rest, w);
            kv[j] = __float_as_uint(z);
        }
        tk_store<V>(keys, vocab, i0, kv); /* the row's z, for a draw the host must make */
    }
    __shared__ double s_sum[TK_WARPS];
    __shared__ float s_rest[TK_WARPS];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        sum = __dadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, o));
        rest = fmaxf(rest, __shfl_xor_sync(0xffffffffu, rest, o));
    }
    if (lane == 0)
        s_sum[warp] = sum, s_rest[warp] = rest;
    __syncthreads();
    if (warp == 0) {
        sum = s_sum[lane], rest = s_rest[lane];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            sum = __dadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, o));
            rest = fmaxf(rest, __shfl_xor_sync(0xffffffffu, rest, o));
        }
        if (lane == 0)
            out_stats[blockIdx.x] = cuda_topk_stats{sum, rest, 0u};
    }
}

} // namespace

extern "C" void cuda_topk_rows(struct cuda_ctx *ctx, float *logits, uint32_t rows, uint32_t vocab,
                               const struct cuda_topk_params *params, int32_t *out_idx, float *out_val,
                               int32_t *out_greedy, struct cuda_topk_stats *out_stats)
{
    if (rows == 0)
        return;
    if (vocab % 4 == 0) /* every row 16-byte aligned: 16-byte loads */
        cuda_launch(ctx, kernel_topk_rows<4>, rows, TK_THREADS, 0, logits, vocab, params, out_idx, out_val, out_greedy,
                    out_stats);
    else
        cuda_launch(ctx, kernel_topk_rows<1>, rows, TK_THREADS, 0, logits, vocab, params, out_idx, out_val, out_greedy,
                    out_stats);
}
