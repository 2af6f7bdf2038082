/* backend/cuda/fwd.cu — the non-GEMV kernels of the forward pass (cuda_fwd.h):
 * float32 matmul, attention prologue (bias, q/k norm, RoPE, KV append),
 * attention over a sequence's paged KV (causal, sliding window, GQA), gated activation,
 * residual add, and the device probe.
 *
 * Simple, correct first versions (issue 5 part 1): the attention kernel is one
 * thread block of 4 warps per (token, head); each warp walks every 4th visible
 * position with an online softmax (running max, running sum, f32 accumulator of
 * head_dim/32 values per lane) and the 4 partial states are merged at the end.
 * It serves decode and prefill alike (prefill is T blocks of causal lengths).
 * No tiling over keys shared between heads, no tensor cores yet.
 */
#include <math.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_fwd.h"
#include "backend/cuda/gemv_internal.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

static __device__ __forceinline__ float kv_get(const void *row, bool bf16, uint64_t i)
{
    return bf16 ? __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(row)[i])
                : reinterpret_cast<const float *>(row)[i];
}

constexpr uint32_t MAX_GRID_Y = 65535;
constexpr int ATT_WARPS = 4;
constexpr int ATT_J = CUDA_FWD_MAX_HEAD_DIM / 32; /* head elements per lane */

/* G: grouped (gemv_group, gemv_internal.cuh): blockIdx.y is a work slot
 * naming the matrix and its rows of x and y; a row's bits as ungrouped. */
template <bool G>
__global__ void __launch_bounds__(256) kernel_matmul_f32(const float *__restrict__ w, uint32_t rows, uint32_t n,
                                                         const float *__restrict__ x, uint32_t T,
                                                         float *__restrict__ y, float scale, gemv_group grp)
{
    pdl_enter();
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t r = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
    if (r >= rows)
        return;
    uint32_t t0 = blockIdx.y, tstep = gridDim.y, xr[CUDA_GEMV_MAX_BATCH] = {};
    if constexpr (G) {
        if (!gemv_group_slot(grp, w, y, rows, T, xr))
            return;
        t0 = 0, tstep = 1;
    }
    const float *wr = w + (uint64_t)r * n;
    for (uint32_t t = t0; t < T; t += tstep) {
        const float *xt = x + (uint64_t)(G ? xr[t] : t) * n;
        float acc = 0.0f;
        for (uint32_t i = lane; i < n; i += 32)
            acc = fmaf(wr[i], xt[i], acc);
        acc = warp_sum(acc);
        if (lane == 0)
            y[(uint64_t)t * rows + r] = scale * acc;
    }
}

/* A block per TPB tokens and group of 8 heads (the q heads, then the k heads),
 * a warp per head: bias, per-head RMSNorm, RoPE (cos/sin of the positions
 * taken once a block into shared memory, and the KV cache rows' addresses,
 * before the PDL wait: positions and block tables are uploaded before the
 * step); the warp of a k head also writes that head's k and v (v plus its
 * bias) into the KV cache. A warp loads its head's values of all TPB tokens
 * before it works on the first (lane l: elements l + 32·j, in registers), so
 * a long prefill (TPB 4) keeps four rows' loads in flight where one token a
 * block waited on each (4096 tokens of the 8B shape: 105.6 → 78.4 µs, with k
 * and v no longer written back; H200, 2026-12-04); rotation
 * pairs go through the warp's shared row. Only q is written (from q_in, in
 * place or from the decode step's q|k|v rows): k and v are read (their
 * results live in the cache). Every element sees the same float operations
 * whatever the grid, TPB and q_in. */
constexpr int ROPE_WARPS = 8;
template <int TPB, int J> /* J: head elements a lane, ≥ head_dim / 32 */
__global__ void __launch_bounds__(ROPE_WARPS * 32, TPB > 1 ? 4 : 1)
    kernel_qk_rope_kv(float *q, const float *q_in, uint32_t q_ld, const float *k, const float *v, uint32_t kv_ld,
                      uint32_t T, const uint32_t *tok_pos,
                      const float *bq, const float *bk, const float *bv, const float *q_norm, const float *k_norm,
                      const float *inv_freq, bool neox, float eps, cuda_attn_shape sh, cuda_kv_view kv)
{
    pdl_trigger();
    __shared__ float s_cos[TPB][CUDA_FWD_MAX_HEAD_DIM / 2], s_sin[TPB][CUDA_FWD_MAX_HEAD_DIM / 2];
    __shared__ float s_row[ROPE_WARPS][CUDA_FWD_MAX_HEAD_DIM];
    const uint32_t t0 = blockIdx.x * TPB, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t nt = T - t0 < (uint32_t)TPB ? T - t0 : (uint32_t)TPB; /* this block's tokens */
    const uint32_t hd = sh.head_dim, half = hd / 2;
    const uint32_t q_dim = sh.n_heads * hd, kv_dim = sh.n_kv_heads * hd;
    for (uint32_t e = threadIdx.x; e < nt * half; e += blockDim.x) {
        const uint32_t j = e / half, i = e - j * half;
        rope_cos_sin(tok_pos[t0 + j], inv_freq[i], s_cos[j][i], s_sin[j][i]);
    }
    __syncthreads();
    const uint32_t h = blockIdx.y * ROPE_WARPS + warp;
    const bool isq = h < sh.n_heads;
    const uint32_t off = (isq ? h : h - sh.n_heads) * hd;
    void *kc[TPB] = {}, *vc[TPB] = {}; /* the rows; element off + i */
    const bool bf16 = kv.bf16 != 0;
    if (!isq && h < sh.n_heads + sh.n_kv_heads) /* the cache rows: from the block table, uploaded before the step */
#pragma unroll
        for (int j = 0; j < TPB; j++)
            if ((uint32_t)j < nt) {
                kc[j] = CUDA_KV_ROW(kv.k, kv, t0 + j, tok_pos[t0 + j], kv_dim);
                vc[j] = CUDA_KV_ROW(kv.v, kv, t0 + j, tok_pos[t0 + j], kv_dim);
            }
    pdl_wait();
    if (h >= sh.n_heads + sh.n_kv_heads)
        return;
    const float *bias = isq ? bq : bk;
    const float *nw_ = isq ? q_norm : k_norm;
    float val[TPB][J];
#pragma unroll
    for (int j = 0; j < TPB; j++) {
        const float *p = isq ? q_in + (uint64_t)(t0 + j) * q_ld + off : k + (uint64_t)(t0 + j) * kv_ld + off;
#pragma unroll
        for (int r = 0; r < J; r++) {
            const uint32_t i = lane + 32 * r;
            val[j][r] = (uint32_t)j < nt && i < hd ? p[i] : 0.0f;
        }
    }
    if (!isq) /* v: its bias, then into the cache (independent of the rest) */
#pragma unroll
        for (int j = 0; j < TPB; j++)
            if ((uint32_t)j < nt) {
                const float *vt = v + (uint64_t)(t0 + j) * kv_ld + off;
                for (uint32_t i = lane; i < hd; i += 32) {
                    float vv = vt[i];
                    if (bv)
                        vv += bv[off + i];
                    kv_put(vc[j], bf16, off + i, vv);
                }
            }
    float *row = s_row[warp];
#pragma unroll
    for (int j = 0; j < TPB; j++) {
        if ((uint32_t)j >= nt)
            break;
        float ss = 0.0f;
#pragma unroll
        for (int r = 0; r < J; r++) {
            const uint32_t i = lane + 32 * r;
            if (i < hd) {
                if (bias)
                    val[j][r] += bias[off + i];
                ss = fmaf(val[j][r], val[j][r], ss);
            }
        }
        if (nw_) {
            ss = warp_sum(ss);
            const float inv = 1.0f / sqrtf(ss / (float)hd + eps);
#pragma unroll
            for (int r = 0; r < J; r++) {
                const uint32_t i = lane + 32 * r;
                if (i < hd)
                    val[j][r] = nw_[i] * (val[j][r] * inv);
            }
        }
#pragma unroll
        for (int r = 0; r < J; r++)
            if (lane + 32 * r < hd)
                row[lane + 32 * r] = val[j][r];
        __syncwarp();
        float *pq = q + (uint64_t)(t0 + j) * q_dim + off;
        for (uint32_t i = lane; i < half; i += 32) {
            const float c = s_cos[j][i], sn = s_sin[j][i];
            const uint32_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
            const float x0 = row[i0], x1 = row[i1];
            float y0, y1;
            rope_rotate(x0, x1, c, sn, y0, y1);
            if (isq) {
                pq[i0] = y0;
                pq[i1] = y1;
            } else {
                kv_put(kc[j], bf16, off + i0, y0);
                kv_put(kc[j], bf16, off + i1, y1);
            }
        }
        __syncwarp(); /* the row is the next token's */
    }
}

/* A lone token's v row (no bias) into the KV cache at its position: cuda_fwd_qk_rope_kv's v store. */
__global__ void kernel_v_cache(const float *v, const uint32_t *tok_pos, cuda_kv_view kv, uint32_t kv_dim)
{
    pdl_enter();
    void *row = CUDA_KV_ROW(kv.v, kv, 0, tok_pos[0], kv_dim);
    for (uint32_t i = threadIdx.x; i < kv_dim; i += blockDim.x)
        kv_put(row, kv.bf16 != 0, i, v[i]);
}

__global__ void __launch_bounds__(ATT_WARPS * 32) kernel_attention(const float *__restrict__ q, float *__restrict__ att,
                                                                   uint32_t T, const uint32_t *__restrict__ tok_pos,
                                                                   cuda_attn_shape sh, cuda_kv_view kv, float scale,
                                                                   uint32_t window)
{
    pdl_enter();
    __shared__ float s_m[ATT_WARPS], s_l[ATT_WARPS];
    __shared__ float s_acc[ATT_WARPS][CUDA_FWD_MAX_HEAD_DIM];
    const uint32_t h = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t hd = sh.head_dim, q_dim = sh.n_heads * hd, kv_dim = sh.n_kv_heads * hd;
    const uint32_t kvh = h / (sh.n_heads / sh.n_kv_heads);
    for (uint32_t t = blockIdx.y; t < T; t += gridDim.y) {
        const uint32_t p = tok_pos[t];
        const uint32_t p0 = window > 0 && p + 1 > window ? p + 1 - window : 0;
        const float *qh = q + (uint64_t)t * q_dim + (uint64_t)h * hd;
        const uint64_t hoff = (uint64_t)kvh * hd;
        float qv[ATT_J], acc[ATT_J];
#pragma unroll
        for (int j = 0; j < ATT_J; j++) {
            const uint32_t i = lane + 32 * j;
            qv[j] = i < hd ? qh[i] : 0.0f;
            acc[j] = 0.0f;
        }
        float m = -INFINITY, l = 0.0f;
        for (uint32_t s = p0 + warp; s <= p; s += ATT_WARPS) {
            const void *kr = CUDA_KV_ROW(kv.k, kv, t, s, kv_dim);
            float d = 0.0f;
#pragma unroll
            for (int j = 0; j < ATT_J; j++) {
                const uint32_t i = lane + 32 * j;
                if (i < hd)
                    d = fmaf(qv[j], kv_get(kr, kv.bf16 != 0, hoff + i), d);
            }
            d = warp_sum(d) * scale;
            const float mn = fmaxf(m, d);
            const float corr = expf(m - mn), e = expf(d - mn);
            l = l * corr + e;
            const void *vr = CUDA_KV_ROW(kv.v, kv, t, s, kv_dim);
#pragma unroll
            for (int j = 0; j < ATT_J; j++) {
                const uint32_t i = lane + 32 * j;
                if (i < hd)
                    acc[j] = fmaf(e, kv_get(vr, kv.bf16 != 0, hoff + i), acc[j] * corr);
            }
            m = mn;
        }
        if (lane == 0) {
            s_m[warp] = m;
            s_l[warp] = l;
        }
#pragma unroll
        for (int j = 0; j < ATT_J; j++) {
            const uint32_t i = lane + 32 * j;
            if (i < hd)
                s_acc[warp][i] = acc[j];
        }
        __syncthreads();
        float M = s_m[0];
        for (int w = 1; w < ATT_WARPS; w++)
            M = fmaxf(M, s_m[w]);
        float f[ATT_WARPS], L = 0.0f;
        for (int w = 0; w < ATT_WARPS; w++) {
            f[w] = s_l[w] > 0.0f ? expf(s_m[w] - M) : 0.0f;
            L += s_l[w] * f[w];
        }
        const float invL = 1.0f / L;
        float *out = att + (uint64_t)t * q_dim + (uint64_t)h * hd;
        for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) {
            float o = 0.0f;
            for (int w = 0; w < ATT_WARPS; w++)
                o += s_acc[w][i] * f[w];
            out[i] = o * invL;
        }
        __syncthreads();
    }
}

__global__ void kernel_glu(float *hb, const float *__restrict__ hb2, uint64_t n, bool gelu, bool rnd)
{
    pdl_enter();
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        hb[i] = glu_in(hb[i], hb2[i], gelu, rnd);
}

/* Four elements of a GLU's input: f32, or bf16 (the gate|up GEMMs' CUDA_GEMM_Y_BF16 outputs) widened exactly. */
__device__ __forceinline__ float4 glu_load4(const float4 *__restrict__ p, uint64_t i) { return p[i]; }
__device__ __forceinline__ float4 glu_load4(const uint2 *__restrict__ p, uint64_t i)
{
    const uint2 w = p[i];
    return make_float4(__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u), __uint_as_float(w.y << 16),
                       __uint_as_float(w.y & 0xffff0000u));
}

/* The prefill GEMM's parts hi, lo (lo NULL: none) of act(hb) · hb2, four
 * elements a thread (n4 = n / 4); hb itself is not written: the GEMM reads
 * the parts only (cuda_fwd_glu_gemm). In: float4 (f32 gate and up) or uint2
 * (bf16 ones: cuda_fwd_glu16_gemm, only under bf16 activations, so rounding
 * always — which leaves bf16 values as they are: the f32 form's values). */
template <class In>
__global__ void kernel_glu_gemm4(const In *__restrict__ hb, const In *__restrict__ hb2, uint64_t n4, bool gelu,
                                 bool rnd, uint2 *__restrict__ hi, uint2 *__restrict__ lo)
{
    pdl_enter();
    const bool r = sizeof(In) == sizeof(uint2) || rnd; /* bf16 inputs: bf16 activations (a constant then) */
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4; i += (uint64_t)gridDim.x * blockDim.x) {
        const float4 g = glu_load4(hb, i), u = glu_load4(hb2, i);
        const float4 v = make_float4(glu_in(g.x, u.x, gelu, r), glu_in(g.y, u.y, gelu, r), glu_in(g.z, u.z, gelu, r),
                                     glu_in(g.w, u.w, gelu, r));
        gemm_x_store4(hi, lo, i, v);
    }
}

/* out (T, width) from gu (T, 2·width): each row's gate half, then its up half */
__global__ void kernel_glu_rows(float *__restrict__ out, const float *__restrict__ gu, uint32_t T, uint32_t width,
                                bool gelu, bool rnd)
{
    pdl_enter();
    const uint64_t n = (uint64_t)T * width;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t t = i / width, c = i % width;
        const float *row = gu + t * 2 * width;
        out[i] = glu_in(row[c], row[width + c], gelu, rnd);
    }
}

/* kernel_glu_rows four outputs a thread (width % 4 == 0, 16-byte aligned),
 * the same float operations an element, also written as the wgmma GEMV's A
 * rows (cuda_fwd_glu_rows_split). */
__global__ void kernel_glu_rows4_split(float *__restrict__ out, const float *__restrict__ gu, uint32_t T,
                                       uint32_t width, bool gelu, bool rnd, uint8_t *__restrict__ xs)
{
    pdl_enter();
    const uint32_t w4 = width / 4;
    const uint64_t n4 = (uint64_t)T * w4;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t t = i / w4, c = 4 * (i % w4);
        const float4 g = *reinterpret_cast<const float4 *>(gu + t * 2 * width + c);
        const float4 u = *reinterpret_cast<const float4 *>(gu + t * 2 * width + width + c);
        const float4 o = make_float4(glu_in(g.x, u.x, gelu, rnd), glu_in(g.y, u.y, gelu, rnd),
                                     glu_in(g.z, u.z, gelu, rnd), glu_in(g.w, u.w, gelu, rnd));
        reinterpret_cast<float4 *>(out)[i] = o;
        mmv_split_store4(xs, o, t, c, width, rnd); /* bf16-valued (rnd): one A row a token */
    }
}

__global__ void kernel_add(float *x, const float *__restrict__ y, uint64_t n)
{
    pdl_enter();
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        x[i] += y[i];
}

/* x[i] = bf16(x[i]) (nearest even), as quant_f32_to_bf16 on the CPU */
__global__ void kernel_round_bf16(float *x, uint64_t n)
{
    pdl_enter();
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = act_round(x[i], true);
}

/* The prefill GEMM's parts hi, lo (lo NULL: none) of bf16(x), four elements a
 * thread; x itself is not written (cuda_fwd_round_bf16_gemm). */
__global__ void kernel_round_gemm4(const float4 *__restrict__ x, uint64_t n4, uint2 *__restrict__ hi,
                                   uint2 *__restrict__ lo)
{
    pdl_enter();
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4; i += (uint64_t)gridDim.x * blockDim.x) {
        gemm_x_store4(hi, lo, i, act_round4(x[i], true));
    }
}

unsigned grid_1d(uint64_t n)
{
    const uint64_t b = (n + 255) / 256;
    return (unsigned)(b < 8192 ? (b ? b : 1) : 8192);
}

} // namespace

extern "C" bool cuda_fwd_device_usable(void)
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
        return false;
    }
    return count > 0;
}

extern "C" void cuda_fwd_reserve_gemv_scratch(struct cuda_ctx *ctx, uint64_t n_max)
{
    n_max = (n_max + 31) / 32 * 32;
    gemv_quant_xq_reserve(ctx, n_max, CUDA_GEMV_MAX_BATCH);
}

extern "C" void cuda_fwd_matmul_f32(struct cuda_ctx *ctx, const float *w, uint32_t rows, uint32_t n, const float *x,
                                    uint32_t T, float *y, float scale)
{
    if (T == 0)
        return;
    const dim3 grid((rows + 7) / 8, T < MAX_GRID_Y ? T : MAX_GRID_Y);
    cuda_launch(ctx, kernel_matmul_f32<false>, grid, 256, 0, w, rows, n, x, T, y, scale, gemv_group{});
}

void fwd_matmul_f32_grouped(struct cuda_ctx *ctx, const float *w, uint32_t rows, uint32_t n, const float *x, float *y,
                            float scale, const gemv_group &grp)
{
    const dim3 grid((rows + 7) / 8, grp.max_slots);
    cuda_launch(ctx, kernel_matmul_f32<true>, grid, 256, 0, w, rows, n, x, 0u, y, scale, grp);
}

extern "C" void cuda_fwd_qk_rope_kv(struct cuda_ctx *ctx, float *q, const float *q_in, uint32_t q_ld, const float *k,
                                    const float *v, uint32_t kv_ld, uint32_t T, const uint32_t *tok_pos,
                                    const float *bq, const float *bk, const float *bv, const float *q_norm,
                                    const float *k_norm, const float *inv_freq, bool neox, float eps,
                                    struct cuda_attn_shape sh, struct cuda_kv_view kv)
{
    if (sh.head_dim == 0 || sh.head_dim % 2 || sh.head_dim > CUDA_FWD_MAX_HEAD_DIM || sh.n_kv_heads == 0 ||
        sh.n_heads % sh.n_kv_heads)
        CUDA_FAIL("qk_rope_kv: head_dim %u, heads %u / %u not supported", sh.head_dim, sh.n_heads, sh.n_kv_heads);
    if (kv_ld < sh.n_kv_heads * sh.head_dim)
        CUDA_FAIL("qk_rope_kv: k/v row stride %u below the row's %u", kv_ld, sh.n_kv_heads * sh.head_dim);
    const uint64_t q_dim = (uint64_t)sh.n_heads * sh.head_dim;
    const bool apart = q_in + T * (uint64_t)q_ld <= q || q + T * q_dim <= q_in; /* else in place only */
    if (q_ld < q_dim || (q_in != q && !apart) || (q_in == q && q_ld != q_dim))
        CUDA_FAIL("qk_rope_kv: q_in (row stride %u) must be q (stride %llu) or lie apart from it", q_ld,
                  (unsigned long long)q_dim);
    if (T == 0)
        return;
    const uint32_t hy = (sh.n_heads + sh.n_kv_heads + ROPE_WARPS - 1) / ROPE_WARPS;
    constexpr int JM = CUDA_FWD_MAX_HEAD_DIM / 32;
    if (T >= CUDA_FWD_ROPE_MANY_TOKENS && sh.head_dim <= 128) /* a prefill: four tokens a block (the same bits; 64
                                                                  registers, 4 blocks an SM) */
        cuda_launch(ctx, kernel_qk_rope_kv<4, 4>, dim3((T + 3) / 4, hy), ROPE_WARPS * 32, 0, q, q_in, q_ld, k, v,
                    kv_ld, T, tok_pos, bq, bk, bv, q_norm, k_norm, inv_freq, neox, eps, sh, kv);
    else /* (head dims above 128 too: four tokens' values would spill) */
        cuda_launch(ctx, kernel_qk_rope_kv<1, JM>, dim3(T, hy), ROPE_WARPS * 32, 0, q, q_in, q_ld, k, v, kv_ld, T,
                    tok_pos, bq, bk, bv, q_norm, k_norm, inv_freq, neox, eps, sh, kv);
}

extern "C" void cuda_fwd_v_cache(struct cuda_ctx *ctx, const float *v, const uint32_t *tok_pos,
                                 struct cuda_kv_view kv, uint32_t kv_dim)
{
    cuda_launch(ctx, kernel_v_cache, dim3(1), 256, 0, v, tok_pos, kv, kv_dim);
}

extern "C" void cuda_fwd_attention(struct cuda_ctx *ctx, const float *q, float *att, uint32_t T,
                                   const uint32_t *tok_pos, struct cuda_attn_shape sh,
                                   struct cuda_kv_view kv, float scale, uint32_t window)
{
    if (sh.head_dim == 0 || sh.head_dim > CUDA_FWD_MAX_HEAD_DIM || sh.n_kv_heads == 0 || sh.n_heads % sh.n_kv_heads)
        CUDA_FAIL("attention: head_dim %u, heads %u / %u not supported", sh.head_dim, sh.n_heads, sh.n_kv_heads);
    if (T == 0)
        return;
    const dim3 grid(sh.n_heads, T < MAX_GRID_Y ? T : MAX_GRID_Y);
    cuda_launch(ctx, kernel_attention, grid, ATT_WARPS * 32, 0, q, att, T, tok_pos, sh, kv, scale, window);
}

extern "C" void cuda_fwd_glu(struct cuda_ctx *ctx, float *hb, const float *hb2, uint64_t n, bool gelu)
{
    if (n == 0)
        return;
    cuda_launch(ctx, kernel_glu, grid_1d(n), 256, 0, hb, hb2, n, gelu, ctx->act_bf16); /* a matmul's input */
}

extern "C" bool cuda_fwd_glu_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, float *hb, const float *hb2,
                                  uint32_t T, uint32_t width, bool gelu)
{
    const uint64_t n = (uint64_t)T * width;
    if (n == 0)
        return false;
    uint16_t *lo = nullptr, *hi = (uintptr_t)hb2 % 16 ? nullptr : cuda_gemm_x_claim(g, t, hb, width, T, &lo);
    if (!hi) {
        cuda_fwd_glu(ctx, hb, hb2, n, gelu);
        return false;
    }
    cuda_launch(ctx, kernel_glu_gemm4<float4>, grid_1d(n / 4), 256, 0, reinterpret_cast<const float4 *>(hb),
                reinterpret_cast<const float4 *>(hb2), n / 4, gelu, ctx->act_bf16, reinterpret_cast<uint2 *>(hi),
                reinterpret_cast<uint2 *>(lo));
    return true;
}

extern "C" void cuda_fwd_glu16_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, float *hb,
                                    const uint16_t *g16, const uint16_t *u16, uint32_t T, uint32_t width, bool gelu)
{
    const uint64_t n = (uint64_t)T * width;
    if (n == 0)
        return;
    if (!ctx->act_bf16 || ((uintptr_t)g16 | (uintptr_t)u16) % 8)
        CUDA_FAIL("glu16_gemm: bf16 gate and up need bf16 activations and 8-byte aligned rows");
    uint16_t *lo = nullptr, *hi = cuda_gemm_x_claim(g, t, hb, width, T, &lo);
    if (!hi)
        CUDA_FAIL("glu16_gemm: the down GEMM's x (%u × %u) cannot be claimed (cuda_gemm_x_claim_takes)", T, width);
    cuda_launch(ctx, kernel_glu_gemm4<uint2>, grid_1d(n / 4), 256, 0, reinterpret_cast<const uint2 *>(g16),
                reinterpret_cast<const uint2 *>(u16), n / 4, gelu, true, reinterpret_cast<uint2 *>(hi),
                reinterpret_cast<uint2 *>(lo));
}

extern "C" void cuda_fwd_glu_rows(struct cuda_ctx *ctx, float *out, const float *gu, uint32_t T, uint32_t width,
                                  bool gelu)
{
    if ((uint64_t)T * width == 0)
        return;
    cuda_launch(ctx, kernel_glu_rows, grid_1d((uint64_t)T * width), 256, 0, out, gu, T, width, gelu, ctx->act_bf16);
}

extern "C" bool cuda_fwd_glu_rows_split(struct cuda_ctx *ctx, float *out, const float *gu, uint32_t T,
                                        uint32_t width, bool gelu)
{
    if ((uint64_t)T * width == 0)
        return false;
    uint8_t *xs = width % 4 == 0 && ((uintptr_t)out | (uintptr_t)gu) % 16 == 0
                      ? cuda_mmv_split_claim(ctx, out, T, width)
                      : nullptr;
    if (!xs) {
        cuda_fwd_glu_rows(ctx, out, gu, T, width, gelu);
        return false;
    }
    cuda_launch(ctx, kernel_glu_rows4_split, grid_1d((uint64_t)T * width / 4), 256, 0, out, gu, T, width, gelu,
                ctx->act_bf16, xs);
    return true;
}

extern "C" void cuda_fwd_add(struct cuda_ctx *ctx, float *x, const float *y, uint64_t n)
{
    if (n == 0)
        return;
    cuda_launch(ctx, kernel_add, grid_1d(n), 256, 0, x, y, n);
}

extern "C" void cuda_fwd_round_bf16(struct cuda_ctx *ctx, float *x, uint64_t n)
{
    if (n == 0)
        return;
    cuda_launch(ctx, kernel_round_bf16, grid_1d(n), 256, 0, x, n);
}

extern "C" bool cuda_fwd_round_bf16_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, float *x,
                                         uint32_t T, uint32_t width)
{
    const uint64_t n = (uint64_t)T * width;
    if (n == 0)
        return false;
    uint16_t *lo = nullptr, *hi = cuda_gemm_x_claim(g, t, x, width, T, &lo);
    if (!hi) {
        cuda_fwd_round_bf16(ctx, x, n);
        return false;
    }
    cuda_launch(ctx, kernel_round_gemm4, grid_1d(n / 4), 256, 0, reinterpret_cast<const float4 *>(x), n / 4,
                reinterpret_cast<uint2 *>(hi), reinterpret_cast<uint2 *>(lo));
    return true;
}

extern "C" size_t cuda_fwd_mem_free(void)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return free_b;
}

extern "C" void cuda_fwd_kv_copy(struct cuda_ctx *ctx, void *pool, uint32_t n_layers, uint32_t kv_blocks,
                                 uint32_t kv_dim, uint32_t elem_bytes, uint32_t dst, uint32_t src)
{
    if (dst >= kv_blocks || src >= kv_blocks)
        CUDA_FAIL("kv_copy: block %u -> %u outside the pool of %u", src, dst, kv_blocks);
    if (dst == src)
        return;
    /* one async copy per (layer, kind): 2D copies would need the pitch (a
     * whole kind's blocks, often GBs) under the device's max pitch */
    const size_t block = (size_t)CUDA_KV_BLOCK * kv_dim * elem_bytes; /* bytes */
    for (uint64_t lk = 0; lk < (uint64_t)n_layers * 2; lk++) {
        char *base = (char *)pool + lk * kv_blocks * block;
        CUDA_CHECK(cudaMemcpyAsync(base + (size_t)dst * block, base + (size_t)src * block, block,
                                   cudaMemcpyDeviceToDevice, ctx->stream));
    }
}
