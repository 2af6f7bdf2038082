/* backend/cuda/attn_prefill.cu — prefill attention over the paged KV cache on
 * the tensor cores (declared in attn.h): flash attention with mma.sync.
 *
 * One CTA of 4 warps per (tile of 64 query rows of a span, query head, span);
 * warp w owns rows 16w .. 16w + 15. The q fragments (pre-scaled by
 * scale·log2(e), rounded to bf16) stay in registers. The CTA walks the key
 * tiles of 64 positions from the window's start to its last row's position:
 * each tile's K and V (key, dim) are read from the paged f32 cache with
 * 16-byte loads (a warp reads whole rows), rounded to bf16 into shared memory
 * (rows padded by 8 bf16 so the fragment reads hit 32 distinct banks; V's
 * B fragments come transposed through ldmatrix .trans); S = Q·Kᵀ
 * (m16n8k16, f32 accumulation), causal / window / padding mask, online
 * softmax in f32 base 2 (row max over the quad by shuffles, sums kept per
 * thread until the end), P rounded to bf16 in registers becomes the A operand
 * of O += P·V. Rows of the tile past the span's end are computed on zero q and
 * not written.
 *
 * Numerics: q, K, P and V are bf16 (8-bit mantissa), everything else f32; see
 * tests/kernels/kernel_attn.c for the tolerance against an f64 reference.
 * head_dim 64 and 128 (the register budget of the q and O fragments).
 */
#include <cuda_bf16.h>
#include <math.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/cuda_common.cuh"

namespace {

constexpr int BM = 64, BN = 64, NT = 128;
constexpr float LOG2E = 1.4426950408889634f;

static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); /* .x = lo in the low half */
    return *reinterpret_cast<uint32_t *>(&v);
}

static __device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Four 8x8 b16 matrices from shared memory, transposed: lane l gives the
 * address of row l % 8 of matrix l / 8 (16-byte aligned); register i receives
 * matrix i's elements (row 2·(l % 4), 2·(l % 4) + 1; column l / 4). */
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __nv_bfloat16 *p)
{
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory"); /* reads what the CTA's plain stores wrote before __syncthreads */
}

template <int HD>
__global__ void __launch_bounds__(NT)
    kernel_attn_prefill(const float *__restrict__ q, float *__restrict__ att,
                        const cuda_attn_span *__restrict__ spans, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                        uint32_t window)
{
    constexpr int KP = HD + 8;
    __shared__ __align__(16) __nv_bfloat16 sK[BN * KP]; /* (key, dim) */
    __shared__ __align__(16) __nv_bfloat16 sV[BN * KP]; /* (key, dim) */

    const cuda_attn_span sp = spans[blockIdx.z];
    const uint32_t tile = blockIdx.x;
    if (tile * BM >= sp.n)
        return;
    const uint32_t h = blockIdx.y, kvh = h / (d.n_heads / d.n_kv_heads);
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const uint32_t q_dim = d.n_heads * HD, kv_dim = d.n_kv_heads * HD;
    const uint32_t nrows = min((uint32_t)BM, sp.n - tile * BM);
    const uint32_t ra = warp * 16 + g, rb = ra + 8; /* this thread's two rows in the tile */
    const bool va = ra < nrows, vb = rb < nrows;
    const uint32_t pa = sp.pos0 + tile * BM + ra, pb = pa + 8;
    const uint32_t pf = sp.pos0 + tile * BM, pl = pf + nrows - 1; /* first and last row positions */

    uint32_t qf[HD / 16][4];
    {
        const float *qa = q + (uint64_t)(sp.q0 + tile * BM + ra) * q_dim + (uint64_t)h * HD;
        const float *qb = qa + 8 * (uint64_t)q_dim;
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            const int c = kk * 16 + 2 * tq;
            float2 a0 = va ? *reinterpret_cast<const float2 *>(qa + c) : make_float2(0.f, 0.f);
            float2 a2 = va ? *reinterpret_cast<const float2 *>(qa + c + 8) : make_float2(0.f, 0.f);
            float2 b0 = vb ? *reinterpret_cast<const float2 *>(qb + c) : make_float2(0.f, 0.f);
            float2 b2 = vb ? *reinterpret_cast<const float2 *>(qb + c + 8) : make_float2(0.f, 0.f);
            qf[kk][0] = pack_bf16(a0.x * scale2, a0.y * scale2);
            qf[kk][1] = pack_bf16(b0.x * scale2, b0.y * scale2);
            qf[kk][2] = pack_bf16(a2.x * scale2, a2.y * scale2);
            qf[kk][3] = pack_bf16(b2.x * scale2, b2.y * scale2);
        }
    }

    float o[HD / 8][4];
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++)
        o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
    float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

    const uint32_t *tab = kv.tables + (uint64_t)sp.table * kv.table_stride;
    const uint32_t k_lo = window > 0 && pf + 1 > window ? pf + 1 - window : 0;
    for (uint32_t kt = k_lo / BN * BN; kt <= pl; kt += BN) {
        __syncthreads(); /* the previous tile's fragments are read */
        for (uint32_t i = threadIdx.x; i < BN * HD / 4; i += NT) {
            const uint32_t key = i / (HD / 4), c4 = i % (HD / 4) * 4, kp = kt + key;
            float4 kf = make_float4(0.f, 0.f, 0.f, 0.f), vf = kf;
            if (kp <= pl) {
                const uint64_t row = (uint64_t)tab[kp / CUDA_ATTN_BLOCK] * CUDA_ATTN_BLOCK + kp % CUDA_ATTN_BLOCK;
                const uint64_t off = row * kv_dim + (uint64_t)kvh * HD + c4;
                uint4 ku = ldg_stream16(kv.k + off), vu = ldg_stream16(kv.v + off);
                kf = make_float4(__uint_as_float(ku.x), __uint_as_float(ku.y), __uint_as_float(ku.z),
                                 __uint_as_float(ku.w));
                vf = make_float4(__uint_as_float(vu.x), __uint_as_float(vu.y), __uint_as_float(vu.z),
                                 __uint_as_float(vu.w));
            }
            *reinterpret_cast<uint2 *>(sK + key * KP + c4) = make_uint2(pack_bf16(kf.x, kf.y), pack_bf16(kf.z, kf.w));
            *reinterpret_cast<uint2 *>(sV + key * KP + c4) = make_uint2(pack_bf16(vf.x, vf.y), pack_bf16(vf.z, vf.w));
        }
        __syncthreads();

        float s[BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++) {
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++) {
                const __nv_bfloat16 *kr = sK + (nt * 8 + g) * KP + kk * 16 + 2 * tq;
                mma_bf16(s[nt], qf[kk], *reinterpret_cast<const uint32_t *>(kr),
                         *reinterpret_cast<const uint32_t *>(kr + 8));
            }
        }
        float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const uint32_t key = kt + nt * 8 + 2 * tq + (e & 1);
                const bool rowa = e < 2;
                const uint32_t qp = rowa ? pa : pb;
                const bool ok = (rowa ? va : vb) && key <= qp && (window == 0 || key + window > qp);
                if (!ok)
                    s[nt][e] = -INFINITY;
                if (rowa)
                    mx_a = fmaxf(mx_a, s[nt][e]);
                else
                    mx_b = fmaxf(mx_b, s[nt][e]);
            }
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, off));
            mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, off));
        }
        const float mn_a = fmaxf(m_a, mx_a), mn_b = fmaxf(m_b, mx_b);
        const float base_a = mn_a == -INFINITY ? 0.0f : mn_a, base_b = mn_b == -INFINITY ? 0.0f : mn_b;
        const float corr_a = exp2f(m_a - base_a), corr_b = exp2f(m_b - base_b);
        m_a = mn_a;
        m_b = mn_b;
        float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++) {
            s[nt][0] = exp2f(s[nt][0] - base_a);
            s[nt][1] = exp2f(s[nt][1] - base_a);
            s[nt][2] = exp2f(s[nt][2] - base_b);
            s[nt][3] = exp2f(s[nt][3] - base_b);
            sum_a += s[nt][0] + s[nt][1];
            sum_b += s[nt][2] + s[nt][3];
        }
        l_a = l_a * corr_a + sum_a;
        l_b = l_b * corr_b + sum_b;
#pragma unroll
        for (int nt = 0; nt < HD / 8; nt++) {
            o[nt][0] *= corr_a;
            o[nt][1] *= corr_a;
            o[nt][2] *= corr_b;
            o[nt][3] *= corr_b;
        }
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            const uint32_t a[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                                   pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                   pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
            /* lane l addresses row l % 8 of 8x8 matrix l / 8: keys kk·16 + (m & 1)·8 + r,
             * dims (nt + (m >> 1))·8 ..; transposed, they are the B fragments of nt, nt + 1 */
            const uint32_t mrow = kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7), mcol = (lane >> 4) * 8;
#pragma unroll
            for (int nt = 0; nt < HD / 8; nt += 2) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, sV + mrow * KP + nt * 8 + mcol);
                mma_bf16(o[nt], a, b[0], b[1]);
                mma_bf16(o[nt + 1], a, b[2], b[3]);
            }
        }
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        l_a += __shfl_xor_sync(0xffffffffu, l_a, off);
        l_b += __shfl_xor_sync(0xffffffffu, l_b, off);
    }
    const float ia = 1.0f / l_a, ib = 1.0f / l_b;
    float *oa = att + (uint64_t)(sp.q0 + tile * BM + ra) * q_dim + (uint64_t)h * HD;
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++) {
        const int c = nt * 8 + 2 * tq;
        if (va)
            *reinterpret_cast<float2 *>(oa + c) = make_float2(o[nt][0] * ia, o[nt][1] * ia);
        if (vb)
            *reinterpret_cast<float2 *>(oa + 8 * (uint64_t)q_dim + c) = make_float2(o[nt][2] * ib, o[nt][3] * ib);
    }
}

} // namespace

extern "C" bool cuda_attn_prefill_supported(struct cuda_attn_dims d)
{
    return (d.head_dim == 64 || d.head_dim == 128) && d.n_kv_heads > 0 && d.n_heads % d.n_kv_heads == 0;
}

extern "C" void cuda_attn_prefill(struct cuda_ctx *ctx, const float *q, float *att,
                                  const struct cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n,
                                  struct cuda_attn_dims d, struct cuda_attn_kv kv, float scale, uint32_t window)
{
    if (!cuda_attn_prefill_supported(d))
        CUDA_FAIL("cuda_attn_prefill: unsupported shape (heads %u, kv heads %u, head_dim %u)", d.n_heads,
                  d.n_kv_heads, d.head_dim);
    if (n_spans == 0 || max_n == 0)
        return;
    if (n_spans > 65535 || d.n_heads > 65535)
        CUDA_FAIL("cuda_attn_prefill: %u spans, %u heads (at most 65535)", n_spans, d.n_heads);
    const dim3 grid((max_n + BM - 1) / BM, d.n_heads, n_spans);
    const float scale2 = scale * LOG2E;
    if (d.head_dim == 64)
        kernel_attn_prefill<64><<<grid, NT, 0, ctx->stream>>>(q, att, spans, d, kv, scale2, window);
    else
        kernel_attn_prefill<128><<<grid, NT, 0, ctx->stream>>>(q, att, spans, d, kv, scale2, window);
    CUDA_CHECK_LAUNCH();
}
