/* backend/cuda/attn_prefill.cu — prefill attention over the paged KV cache on
 * the tensor cores (declared in attn.h): flash attention with mma.sync, and
 * cuda_attn_prefill, which hands the fast mode's unsplit spans on a bf16
 * cache at head_dim 128 to attn_prefill_wg.cu's wgmma kernel (the same bits;
 * attn_prefill.cuh) — both take their online softmax from flash_softmax.cuh.
 *
 * One CTA of BM / 16 warps per (tile of a span's tokens, group of hg query
 * heads sharing one kv head, span, key split): the tile's BM rows are BM / hg
 * tokens × hg heads (launches with split spans: hg = the largest divisor of
 * the GQA group ≤ 16, so every K/V tile is read and converted once for all of
 * them; else hg = 1); warp w owns rows 16w .. 16w + 15. BM is 128 for a launch
 * of unsplit spans longer than 64 tokens with hg = 1 (each K/V tile read once
 * for twice the rows), else 64 (MEMRA_ATTN_PREFILL_BM=64: always); a row's
 * operations do not depend on BM (kernel_attn: the same digests). K's
 * fragments come by ldmatrix (four 32-bit reads an instruction), and the
 * causal / window mask is applied only to key tiles that cross some row's
 * limit (H200, 4096 tokens, bf16 cache: exact 1.27 → 0.96-0.98 ms a layer,
 * bf16 0.90 → 0.70; twenty-fifth run). The q fragments (pre-scaled
 * by scale·log2(e), rounded to bf16 — in exact mode as bf16 high + low parts)
 * stay in registers. The CTA walks the key tiles of 64 positions from the
 * window's start to its last row's position (within its split's range): each
 * tile's K and V (key, dim) go into shared memory (rows padded by 8 bf16 so
 * the fragment reads hit 32 distinct banks; V's B fragments come transposed
 * through ldmatrix .trans). From an f32 cache they are read with 16-byte
 * loads (a warp reads whole rows) and rounded to bf16 (exact: high and low
 * parts); a bf16 cache's (the default) are copied as stored by cp.async in two
 * stages, the next tile's copies in flight while this one is used, and have
 * no low parts (exact mode's hi·lo products with them would add exact zeros:
 * left out, the same bits; H200, one 4096-token span, 8B shape: exact 2.27 →
 * 1.28 ms a layer, bf16 1.31 → 0.90). The CTAs of a span's last tiles (the
 * most keys) are scheduled first. S = Q·Kᵀ (m16n8k16, f32 accumulation),
 * causal / window / padding mask, online softmax in f32 base 2 (row max over
 * the quad by shuffles, sums kept per thread until the end), P rounded to
 * bf16 (exact: split) in registers becomes the A operand of O += P·V. Exact
 * mode takes every product as lo·hi + hi·lo + hi·hi (the lo·lo term, ~2^-16
 * of the product, dropped).
 * Rows of the tile past the span's end are computed on zero q and not
 * written.
 *
 * Split spans (splits > 1) cut the key tiles 0 .. last into `splits` equal
 * ranges; a CTA writes its rows' partials (m, l, unnormalized O) and
 * kernel_attn_prefill_combine merges them with attn_combine_row, the decode
 * kernel's merge. A row's float operations depend only on its span (its
 * position, its split ranges), never on the rest of the launch.
 *
 * Numerics: see tests/kernels/kernel_attn.c for the tolerances against an
 * f64 reference. head_dim 64 and 128 (the register budget of the q and O
 * fragments).
 */
#include <cuda_bf16.h>
#include <math.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/attn_combine.cuh"
#include "backend/cuda/attn_prefill.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_softmax.cuh"
#include "backend/cuda/mma_bf16.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int BN = 64; /* keys a tile; a CTA's query rows BM (64 or 128) are a template argument, NT = 2·BM threads */
constexpr int LOADS = 8; /* tile load: float4s of K and of V a thread has in flight */
constexpr float LOG2E = 1.4426950408889634f;

/* Shared memory a CTA takes: K and V tiles of BN keys × HD dims (rows padded
 * by 8), each as 1 or 2 bf16 parts, in 1 or 2 stages. */
template <bool EXACT, bool KB> __host__ __device__ constexpr int prefill_np() { return EXACT && !KB ? 2 : 1; }
template <int HD, bool EXACT, bool KB> __host__ __device__ constexpr size_t prefill_smem()
{
    return (size_t)(KB ? 2 : 1) * 2 * prefill_np<EXACT, KB>() * BN * (HD + 8) * sizeof(__nv_bfloat16);
}

/* A bf16 cache's K and V tile of keys kt .. kt + BN − 1 (those past pl
 * zero-filled: a masked key's P is 0, and 0 · V must not meet a stale NaN)
 * into shared memory, 16 bytes a copy, as one cp.async group. */
template <int HD, int NT>
static __device__ __forceinline__ void prefill_issue_bf16(__nv_bfloat16 *sK, __nv_bfloat16 *sV,
                                                          const cuda_attn_kv &kv, const uint32_t *tab, uint32_t kt,
                                                          uint32_t pl, uint32_t kv_dim, uint32_t kvh)
{
    constexpr int KP = HD + 8, C = HD / 8; /* 16-byte pieces a key row */
#pragma unroll
    for (int j = 0; j < BN * C / NT; j++) {
        const uint32_t i = (uint32_t)j * NT + threadIdx.x, key = i / C, c8 = i % C * 8, kp = kt + key;
        const uint16_t *kb = static_cast<const uint16_t *>(kv.k), *vb = static_cast<const uint16_t *>(kv.v);
        uint32_t n = 0;
        if (kp <= pl) {
            const uint64_t row = (uint64_t)tab[kp / CUDA_ATTN_BLOCK] * CUDA_ATTN_BLOCK + kp % CUDA_ATTN_BLOCK;
            const uint64_t off = row * kv_dim + (uint64_t)kvh * HD + c8;
            kb += off;
            vb += off;
            n = 16;
        }
        cp_async16_zfill(smem_u32(sK + key * KP + c8), kb, n);
        cp_async16_zfill(smem_u32(sV + key * KP + c8), vb, n);
    }
    cp_async_commit();
}

template <int HD, int BM, bool EXACT, bool GROUPED, bool KB>
__global__ void __launch_bounds__(2 * BM)
    kernel_attn_prefill(const float *__restrict__ q, float *__restrict__ att,
                        const cuda_attn_span *__restrict__ spans, uint32_t max_splits, uint32_t hg_arg, cuda_attn_dims d,
                        cuda_attn_kv kv, float scale2, uint32_t window, float *__restrict__ part_acc,
                        float *__restrict__ part_ml, bool split_only)
{
    /* KB (a bf16 cache): K and V are bf16 already — no low parts (they would
     * be zero: the products they add are exact zeros, so leaving them out
     * gives the f32 path's bits) — and the tiles are copied as stored, the
     * next one in flight while this one is used (two stages). Else K and V are
     * read as f32 into registers and rounded (exact: split) into one stage. */
    constexpr int NT = 2 * BM, KP = HD + 8, TILE = BN * KP, NP = prefill_np<EXACT, KB>(); /* bf16 parts an operand */
    constexpr int ITER = BN * HD / 4 / NT, LB = ITER < LOADS ? ITER : LOADS; /* tile load: float4s a thread */
    static_assert(ITER % LB == 0, "tile load rounds");
    static_assert(BN * HD / 8 % NT == 0, "bf16 tile copies");
    extern __shared__ __align__(16) __nv_bfloat16 smem[];
    __nv_bfloat16 *sK = smem, *sV = smem + NP * TILE; /* (key, dim); part 1 (low) at + TILE; stage 1 at + 2·NP·TILE */

    const cuda_attn_span sp = spans[blockIdx.z / max_splits];
    /* the tile's 64 rows are tt tokens × hg query heads of one kv head: row m
     * is token m / hg, head h0 + m % hg (rows past tt·hg are padding). The
     * last tiles of a span see the most keys: they are scheduled first
     * (blockIdx.x 0 is the last tile), so the short ones fill the end. */
    const uint32_t hg = GROUPED ? hg_arg : 1; /* a constant 1 keeps the one-head CTA's registers down */
    const uint32_t split = blockIdx.z % max_splits, tt = BM / hg, nt_span = (sp.n + tt - 1) / tt;
    const uint32_t tile = nt_span > blockIdx.x ? nt_span - 1 - blockIdx.x : gridDim.x, t0 = tile * tt;
    if (t0 >= sp.n || split >= sp.splits || (split_only && sp.splits <= 1)) /* (split_only: the rest is wgmma's) */
        return;
    const uint32_t h0 = blockIdx.y * hg, kvh = h0 / (d.n_heads / d.n_kv_heads);
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const uint32_t q_dim = d.n_heads * HD, kv_dim = d.n_kv_heads * HD;
    const uint32_t ntok = min(tt, sp.n - t0);
    const uint32_t ra = warp * 16 + g, rb = ra + 8; /* this thread's two rows in the tile */
    const uint32_t ta = t0 + ra / hg, tb = t0 + rb / hg; /* their tokens in the span */
    const uint32_t ha = h0 + ra % hg, hb = h0 + rb % hg; /* and query heads */
    const bool va = ra < tt * hg && ta < t0 + ntok, vb = rb < tt * hg && tb < t0 + ntok;
    const uint32_t pa = sp.pos0 + ta, pb = sp.pos0 + tb;
    const uint32_t pf = sp.pos0 + t0, pl = pf + ntok - 1; /* first and last token positions */

    uint32_t qh[HD / 16][4], ql[EXACT ? HD / 16 : 1][4];
    {
        const float *qa = q + (uint64_t)(sp.q0 + ta) * q_dim + (uint64_t)ha * HD;
        const float *qb = q + (uint64_t)(sp.q0 + tb) * q_dim + (uint64_t)hb * HD;
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            const int c = kk * 16 + 2 * tq;
            float2 v[4] = {va ? *reinterpret_cast<const float2 *>(qa + c) : make_float2(0.f, 0.f),
                           vb ? *reinterpret_cast<const float2 *>(qb + c) : make_float2(0.f, 0.f),
                           va ? *reinterpret_cast<const float2 *>(qa + c + 8) : make_float2(0.f, 0.f),
                           vb ? *reinterpret_cast<const float2 *>(qb + c + 8) : make_float2(0.f, 0.f)};
#pragma unroll
            for (int i = 0; i < 4; i++) {
                if constexpr (EXACT)
                    split_bf16(v[i].x * scale2, v[i].y * scale2, qh[kk][i], ql[kk][i]);
                else
                    qh[kk][i] = pack_bf16(v[i].x * scale2, v[i].y * scale2);
            }
        }
    }

    float o[HD / 8][4];
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++)
        o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
    float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

    const uint32_t *tab = kv.tables + (uint64_t)sp.table * kv.table_stride;
    const uint32_t k_lo = window > 0 && pf + 1 > window ? pf + 1 - window : 0;
    uint32_t kt_first = k_lo / BN, kt_last = pl / BN; /* key tiles, inclusive */
    if (sp.splits > 1) {
        const uint32_t nkt = (sp.pos0 + sp.n - 1) / BN + 1, per = (nkt + sp.splits - 1) / sp.splits;
        kt_first = max(kt_first, split * per);
        kt_last = min(kt_last, split * per + per - 1);
    }
    if constexpr (KB)
        prefill_issue_bf16<HD, NT>(sK, sV, kv, tab, kt_first * BN, pl, kv_dim, kvh);
    for (uint32_t kti = kt_first; kti <= kt_last; kti++) {
        const uint32_t kt = kti * BN;
        __syncthreads(); /* the previous tile's fragments are read */
        if constexpr (KB) {
            const uint32_t st = (kti - kt_first) & 1;
            sK = smem + st * 2 * TILE;
            sV = sK + TILE;
            if (kti < kt_last) /* the next tile into the other stage, then this one's copies awaited */
                prefill_issue_bf16<HD, NT>(smem + (st ^ 1) * 2 * TILE, smem + (st ^ 1) * 2 * TILE + TILE, kv, tab,
                                       kt + BN, pl, kv_dim, kvh);
            else
                cp_async_commit();
            cp_async_wait<1>();
        } else {
            /* an f32 cache: LB float4 of K and of V a thread in flight at once (the
             * tile's load is latency-bound otherwise), then rounded into shared memory */
#pragma unroll
            for (int i0 = 0; i0 < ITER; i0 += LB) {
                uint4 ku[LB], vu[LB];
#pragma unroll
                for (int j = 0; j < LB; j++) {
                    const uint32_t i = (uint32_t)(i0 + j) * NT + threadIdx.x;
                    const uint32_t key = i / (HD / 4), c4 = i % (HD / 4) * 4, kp = kt + key;
                    ku[j] = vu[j] = make_uint4(0u, 0u, 0u, 0u);
                    if (kp <= pl) {
                        const uint64_t row =
                            (uint64_t)tab[kp / CUDA_ATTN_BLOCK] * CUDA_ATTN_BLOCK + kp % CUDA_ATTN_BLOCK;
                        const uint64_t off = row * kv_dim + (uint64_t)kvh * HD + c4;
                        ku[j] = ldg_stream16(static_cast<const float *>(kv.k) + off);
                        vu[j] = ldg_stream16(static_cast<const float *>(kv.v) + off);
                    }
                }
#pragma unroll
                for (int j = 0; j < LB; j++) {
                    const uint32_t i = (uint32_t)(i0 + j) * NT + threadIdx.x;
                    const uint32_t so = i / (HD / 4) * KP + i % (HD / 4) * 4;
                    const float4 kf = make_float4(__uint_as_float(ku[j].x), __uint_as_float(ku[j].y),
                                                  __uint_as_float(ku[j].z), __uint_as_float(ku[j].w));
                    const float4 vf = make_float4(__uint_as_float(vu[j].x), __uint_as_float(vu[j].y),
                                                  __uint_as_float(vu[j].z), __uint_as_float(vu[j].w));
                    if constexpr (EXACT) {
                        uint32_t h0, l0, h1, l1;
                        split_bf16(kf.x, kf.y, h0, l0);
                        split_bf16(kf.z, kf.w, h1, l1);
                        *reinterpret_cast<uint2 *>(sK + so) = make_uint2(h0, h1);
                        *reinterpret_cast<uint2 *>(sK + TILE + so) = make_uint2(l0, l1);
                        split_bf16(vf.x, vf.y, h0, l0);
                        split_bf16(vf.z, vf.w, h1, l1);
                        *reinterpret_cast<uint2 *>(sV + so) = make_uint2(h0, h1);
                        *reinterpret_cast<uint2 *>(sV + TILE + so) = make_uint2(l0, l1);
                    } else {
                        *reinterpret_cast<uint2 *>(sK + so) =
                            make_uint2(pack_bf16(kf.x, kf.y), pack_bf16(kf.z, kf.w));
                        *reinterpret_cast<uint2 *>(sV + so) =
                            make_uint2(pack_bf16(vf.x, vf.y), pack_bf16(vf.z, vf.w));
                    }
                }
            }
        }
        __syncthreads();

        /* S = Q·Kᵀ. K's B fragments by ldmatrix: lane l addresses key row nt·8 + l % 8, dims
         * kp·32 + (l / 8)·8: b0, b1 of dims kk = 2·kp and b0, b1 of kk = 2·kp + 1 (the values
         * of 32-bit reads of the rows, one instruction for four) */
        float s[BN / 8][4];
        const uint32_t k_lane = (lane & 7) * KP + (lane >> 3) * 8;
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++) {
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
            for (int kp = 0; kp < HD / 32; kp++) {
                const __nv_bfloat16 *kr = sK + nt * 8 * KP + kp * 32 + k_lane;
                uint32_t b[4], bl[4];
                ldmatrix_x4(b, (uint32_t)__cvta_generic_to_shared(kr));
                if constexpr (EXACT && !KB)
                    ldmatrix_x4(bl, (uint32_t)__cvta_generic_to_shared(kr + TILE));
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int kk = 2 * kp + h;
                    if constexpr (EXACT) {
                        mma_bf16(s[nt], ql[kk], b[2 * h], b[2 * h + 1]);
                        if constexpr (!KB)
                            mma_bf16(s[nt], qh[kk], bl[2 * h], bl[2 * h + 1]);
                    }
                    mma_bf16(s[nt], qh[kk], b[2 * h], b[2 * h + 1]);
                }
            }
        }
        /* the mask only where some key of the tile is past (or, with a window, before) some row of
         * the CTA: a tile below the diagonal keeps every score (padding rows then see finite scores of
         * a zero q, and are never written) */
        const bool full = kt + BN - 1 <= pf && (window == 0 || kt + window > pl);
        if (!full) {
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
                }
        }
        flash_softmax_step(s, o, m_a, m_b, l_a, l_b);
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t ah[4], al[4];
            if constexpr (EXACT) {
                split_bf16(s[2 * kk][0], s[2 * kk][1], ah[0], al[0]);
                split_bf16(s[2 * kk][2], s[2 * kk][3], ah[1], al[1]);
                split_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1], ah[2], al[2]);
                split_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3], ah[3], al[3]);
            } else {
                ah[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
                ah[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
                ah[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
                ah[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
            }
            /* lane l addresses row l % 8 of 8x8 matrix l / 8: keys kk·16 + (m & 1)·8 + r,
             * dims (nt + (m >> 1))·8 ..; transposed, they are the B fragments of nt, nt + 1 */
            const uint32_t mrow = kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7), mcol = (lane >> 4) * 8;
#pragma unroll
            for (int nt = 0; nt < HD / 8; nt += 2) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, (uint32_t)__cvta_generic_to_shared(sV + mrow * KP + nt * 8 + mcol));
                if constexpr (EXACT && KB) {
                    mma_bf16(o[nt], al, b[0], b[1]);
                    mma_bf16(o[nt + 1], al, b[2], b[3]);
                } else if constexpr (EXACT) {
                    uint32_t bl[4];
                    ldmatrix_x4_trans(bl, (uint32_t)__cvta_generic_to_shared(sV + TILE + mrow * KP + nt * 8 + mcol));
                    mma_bf16(o[nt], al, b[0], b[1]);
                    mma_bf16(o[nt], ah, bl[0], bl[1]);
                    mma_bf16(o[nt + 1], al, b[2], b[3]);
                    mma_bf16(o[nt + 1], ah, bl[2], bl[3]);
                }
                mma_bf16(o[nt], ah, b[0], b[1]);
                mma_bf16(o[nt + 1], ah, b[2], b[3]);
            }
        }
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        l_a += __shfl_xor_sync(0xffffffffu, l_a, off);
        l_b += __shfl_xor_sync(0xffffffffu, l_b, off);
    }
    if (sp.splits > 1) { /* partial of this split: (m, l), O unnormalized */
        const uint64_t ia = (uint64_t)(sp.part0 + ta * sp.splits + split) * d.n_heads + ha;
        const uint64_t ib = (uint64_t)(sp.part0 + tb * sp.splits + split) * d.n_heads + hb;
        float *oa = part_acc + ia * HD, *ob = part_acc + ib * HD;
#pragma unroll
        for (int nt = 0; nt < HD / 8; nt++) {
            const int c = nt * 8 + 2 * tq;
            if (va)
                *reinterpret_cast<float2 *>(oa + c) = make_float2(o[nt][0], o[nt][1]);
            if (vb)
                *reinterpret_cast<float2 *>(ob + c) = make_float2(o[nt][2], o[nt][3]);
        }
        if (tq == 0 && va)
            *reinterpret_cast<float2 *>(part_ml + ia * 2) = make_float2(m_a, l_a);
        if (tq == 0 && vb)
            *reinterpret_cast<float2 *>(part_ml + ib * 2) = make_float2(m_b, l_b);
        return;
    }
    const float ia = 1.0f / l_a, ib = 1.0f / l_b;
    float *oa = att + (uint64_t)(sp.q0 + ta) * q_dim + (uint64_t)ha * HD;
    float *ob = att + (uint64_t)(sp.q0 + tb) * q_dim + (uint64_t)hb * HD;
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++) {
        const int c = nt * 8 + 2 * tq;
        if (va)
            *reinterpret_cast<float2 *>(oa + c) = make_float2(o[nt][0] * ia, o[nt][1] * ia);
        if (vb)
            *reinterpret_cast<float2 *>(ob + c) = make_float2(o[nt][2] * ib, o[nt][3] * ib);
    }
}

/* One CTA per (query head, row, span) of the split spans: the row's partials
 * merged in split order. */
__global__ void __launch_bounds__(128)
    kernel_attn_prefill_combine(const cuda_attn_span *__restrict__ spans, const float *__restrict__ part_acc,
                                const float *__restrict__ part_ml, float *__restrict__ att, uint32_t n_heads,
                                uint32_t hd)
{
    const cuda_attn_span sp = spans[blockIdx.z];
    const uint32_t h = blockIdx.x, r = blockIdx.y;
    if (sp.splits <= 1 || r >= sp.n)
        return;
    const uint64_t pi = (uint64_t)(sp.part0 + r * sp.splits) * n_heads + h;
    attn_combine_row(part_acc + pi * hd, (size_t)n_heads * hd, part_ml + pi * 2, (size_t)n_heads * 2, sp.splits,
                     att + ((uint64_t)(sp.q0 + r) * n_heads + h) * hd, hd);
}

template <int HD, int BM, bool EXACT, bool GROUPED, bool KB>
static void launch_one(const cuda_ctx *ctx, dim3 grid, const float *q, float *att, const cuda_attn_span *spans,
                       uint32_t max_splits, uint32_t hg, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                       uint32_t window, float *pa, float *pm, bool so)
{
    constexpr size_t smem = prefill_smem<HD, EXACT, KB>();
    static uint32_t opted; /* devices the attribute is set on */
    if (cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel_attn_prefill<HD, BM, EXACT, GROUPED, KB>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel_attn_prefill<HD, BM, EXACT, GROUPED, KB><<<grid, 2 * BM, smem, ctx->stream>>>(
        q, att, spans, max_splits, hg, d, kv, scale2, window, pa, pm, so);
}

template <int HD, int BM, bool EXACT, bool GROUPED>
static void launch_kv(const cuda_ctx *ctx, dim3 grid, const float *q, float *att, const cuda_attn_span *spans,
                      uint32_t max_splits, uint32_t hg, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                      uint32_t window, float *pa, float *pm, bool so)
{
    if (kv.bf16)
        launch_one<HD, BM, EXACT, GROUPED, true>(ctx, grid, q, att, spans, max_splits, hg, d, kv, scale2, window, pa,
                                                 pm, so);
    else
        launch_one<HD, BM, EXACT, GROUPED, false>(ctx, grid, q, att, spans, max_splits, hg, d, kv, scale2, window, pa,
                                                  pm, so);
}

/* hg > 1 (split spans) and bm 128 exclude each other (cuda_attn_prefill) */
template <int HD, bool EXACT>
void launch_prefill(const cuda_ctx *ctx, dim3 grid, uint32_t bm, const float *q, float *att,
                    const cuda_attn_span *spans, uint32_t max_splits, uint32_t hg, cuda_attn_dims d, cuda_attn_kv kv,
                    float scale2, uint32_t window, float *pa, float *pm, bool so)
{
    if (hg > 1)
        launch_kv<HD, 64, EXACT, true>(ctx, grid, q, att, spans, max_splits, hg, d, kv, scale2, window, pa, pm, so);
    else if (bm == 128)
        launch_kv<HD, 128, EXACT, false>(ctx, grid, q, att, spans, max_splits, 1, d, kv, scale2, window, pa, pm, so);
    else
        launch_kv<HD, 64, EXACT, false>(ctx, grid, q, att, spans, max_splits, 1, d, kv, scale2, window, pa, pm, so);
}

} // namespace

extern "C" bool cuda_attn_prefill_supported(struct cuda_attn_dims d)
{
    return (d.head_dim == 64 || d.head_dim == 128) && d.n_kv_heads > 0 && d.n_heads % d.n_kv_heads == 0;
}

extern "C" void cuda_attn_prefill_set_wg(struct cuda_ctx *ctx, enum cuda_attn_prefill_wg mode)
{
    ctx->attn_prefill_wg = mode;
}

extern "C" enum cuda_attn_prefill_wg cuda_attn_prefill_wg_mode(const struct cuda_ctx *ctx)
{
    return ctx->attn_prefill_wg;
}

extern "C" uint32_t cuda_attn_prefill_splits(uint32_t pos0, uint32_t n)
{
    if (n == 0 || n > CUDA_ATTN_PREFILL_SPLIT_ROWS)
        return 1;
    /* ≥ 8 key tiles (512 positions) a split: fewer would spend more on the
     * partials than on the keys */
    const uint64_t nkt = ((uint64_t)pos0 + n - 1) / BN + 1, s = (nkt + 7) / 8;
    return s < 1 ? 1 : s > CUDA_ATTN_PREFILL_MAX_SPLITS ? CUDA_ATTN_PREFILL_MAX_SPLITS : (uint32_t)s;
}

extern "C" size_t cuda_attn_prefill_scratch_floats(uint32_t part_cap, struct cuda_attn_dims d)
{
    return (size_t)part_cap * d.n_heads * (d.head_dim + 2);
}

/* all_split: the caller's promise that every span has splits > 1 (no wgmma launch) */
static void attn_prefill(struct cuda_ctx *ctx, const float *q, float *att, uint16_t *att16,
                         const struct cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n, uint32_t max_splits,
                         struct cuda_attn_dims d, struct cuda_attn_kv kv, float scale, uint32_t window, bool exact,
                         float *scratch, uint32_t part_cap, bool all_split)
{
    if (!cuda_attn_prefill_supported(d))
        CUDA_FAIL("cuda_attn_prefill: unsupported shape (heads %u, kv heads %u, head_dim %u)", d.n_heads,
                  d.n_kv_heads, d.head_dim);
    if (n_spans == 0 || max_n == 0)
        return;
    if (max_splits == 0 || max_splits > CUDA_ATTN_PREFILL_MAX_SPLITS || (max_splits > 1 && !scratch))
        CUDA_FAIL("cuda_attn_prefill: %u key splits (1..%u, > 1 needs scratch)", max_splits,
                  CUDA_ATTN_PREFILL_MAX_SPLITS);
    if ((uint64_t)n_spans * max_splits > 65535 || d.n_heads > 65535)
        CUDA_FAIL("cuda_attn_prefill: %u spans × %u splits, %u heads (at most 65535)", n_spans, max_splits,
                  d.n_heads);
    /* query heads a CTA. A launch with split spans (short, deep: bound by the
     * K/V tile loads) groups the largest divisor of the GQA group ≤ 16, so one
     * tile load serves them all (H200, 8B shape, 32 rows at depth 6000: 0.115
     * → 0.087 ms); long spans keep one head a CTA (grouped they ran 15 % slower:
     * more registers, spills). A row's bits do not depend on hg: the tiles a
     * row sees beyond its own keys add exact zeros. */
    const float scale2 = scale * LOG2E;
    /* the fast mode on a bf16 cache at head_dim 128: the unsplit spans on wgmma, the split ones (if any) below */
    const bool wg = attn_prefill_wg_takes(ctx, d, kv, exact);
    if (wg && !all_split) {
        attn_prefill_wg(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window);
        CUDA_CHECK_LAUNCH();
        if (max_splits == 1)
            return;
    }
    const uint32_t G = d.n_heads / d.n_kv_heads;
    uint32_t hg = 1;
    for (uint32_t c = 1; max_splits > 1 && c <= 16 && c <= G; c++)
        hg = G % c == 0 ? c : hg;
    /* query rows a CTA: 128 (8 warps: each K/V tile read once for twice the rows) for launches
     * whose spans are not split and are longer than 64 tokens, when ctx->attn_prefill_bm says so;
     * else 64. A row's float operations are the same either way: the tiles a row sees past its
     * own keys (or before its window) add exact zeros. */
    const uint32_t bm = hg == 1 && max_splits == 1 && max_n > 64 && ctx->attn_prefill_bm == 128 ? 128 : 64;
    const uint32_t tt = bm / hg;
    const dim3 grid((max_n + tt - 1) / tt, d.n_heads / hg, n_spans * max_splits);
    float *pa = scratch, *pm = scratch ? scratch + (size_t)part_cap * d.n_heads * d.head_dim : NULL;
    if (d.head_dim == 64)
        exact ? launch_prefill<64, true>(ctx, grid, bm, q, att, spans, max_splits, hg, d, kv, scale2, window, pa, pm,
                                         wg)
              : launch_prefill<64, false>(ctx, grid, bm, q, att, spans, max_splits, hg, d, kv, scale2, window, pa, pm,
                                          wg);
    else
        exact ? launch_prefill<128, true>(ctx, grid, bm, q, att, spans, max_splits, hg, d, kv, scale2, window, pa, pm,
                                          wg)
              : launch_prefill<128, false>(ctx, grid, bm, q, att, spans, max_splits, hg, d, kv, scale2, window, pa,
                                           pm, wg);
    CUDA_CHECK_LAUNCH();
    if (max_splits > 1) {
        const uint32_t rows = max_n < CUDA_ATTN_PREFILL_SPLIT_ROWS ? max_n : CUDA_ATTN_PREFILL_SPLIT_ROWS;
        kernel_attn_prefill_combine<<<dim3(d.n_heads, rows, n_spans), 128, 0, ctx->stream>>>(spans, pa, pm, att,
                                                                                            d.n_heads, d.head_dim);
        CUDA_CHECK_LAUNCH();
    }
}

extern "C" void cuda_attn_prefill(struct cuda_ctx *ctx, const float *q, float *att,
                                  const struct cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n,
                                  uint32_t max_splits, struct cuda_attn_dims d, struct cuda_attn_kv kv, float scale,
                                  uint32_t window, bool exact, float *scratch, uint32_t part_cap)
{
    attn_prefill(ctx, q, att, NULL, spans, n_spans, max_n, max_splits, d, kv, scale, window, exact, scratch, part_cap,
                 false);
}

extern "C" bool cuda_attn_prefill_bf16_takes(const struct cuda_ctx *ctx, struct cuda_attn_dims d,
                                             struct cuda_attn_kv kv, bool exact, uint32_t max_splits)
{
    return max_splits == 1 && cuda_attn_prefill_supported(d) && attn_prefill_wg_takes(ctx, d, kv, exact);
}

extern "C" void cuda_attn_prefill_bf16(struct cuda_ctx *ctx, const float *q, uint16_t *att16,
                                       const struct cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n,
                                       struct cuda_attn_dims d, struct cuda_attn_kv kv, float scale, uint32_t window)
{
    if (!cuda_attn_prefill_bf16_takes(ctx, d, kv, false, 1) || !att16)
        CUDA_FAIL("cuda_attn_prefill_bf16: not the wgmma kernel's launch (heads %u / %u, head_dim %u, bf16 cache %d)",
                  d.n_heads, d.n_kv_heads, d.head_dim, (int)kv.bf16);
    attn_prefill(ctx, q, NULL, att16, spans, n_spans, max_n, 1, d, kv, scale, window, false, NULL, 0, false);
}

extern "C" void cuda_attn_prefill_split(struct cuda_ctx *ctx, const float *q, float *att,
                                        const struct cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n,
                                        uint32_t max_splits, struct cuda_attn_dims d, struct cuda_attn_kv kv,
                                        float scale, uint32_t window, bool exact, float *scratch, uint32_t part_cap)
{
    if (max_splits < 2)
        CUDA_FAIL("cuda_attn_prefill_split: %u key splits (every span of the launch must be split)", max_splits);
    attn_prefill(ctx, q, att, NULL, spans, n_spans, max_n, max_splits, d, kv, scale, window, exact, scratch, part_cap,
                 true);
}
