/* backend/cuda/gemv_internal.cuh — shared between gemv.cu (the C entry points)
 * and the per-family GEMV files (gemv_plain.cu, gemv_quant.cu): the launch
 * functions of each family and the launch-shape heuristic.
 */
#ifndef MEMRA_BACKEND_CUDA_GEMV_INTERNAL_CUH
#define MEMRA_BACKEND_CUDA_GEMV_INTERNAL_CUH

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_fwd.h"

/* Rows per thread block (plain kernels) for a batch-1 GEMV. */
static inline int gemv_pick_rows_per_block(uint64_t rows, int sms)
{
    /* measured (bench/GEMV.md): 4 for 4096..6144 rows, 2 for fewer or more */
    return rows >= (uint64_t)sms * 16 && rows <= (uint64_t)sms * 64 ? 4 : 2;
}

/* Launch shape of the quantized kernels, from the sweep over R ∈ {1,2,4} ×
 * ksplit ∈ {1,4} on the Llama-3-8B decode shapes (bench/GEMV.md, H200): the
 * rule costs < 1 % of the per-shape best summed over all shapes and types.
 * Rows per warp R: 4 (each activation load serves 4 rows) unless that leaves
 * fewer than ~16 warps per SM (k/v, 1024 rows: R = 2). */
static inline int gemv_pick_rows_per_warp(uint64_t rows, int sms)
{
    return rows < (uint64_t)sms * 16 ? 2 : 4;
}

/* The same for the staged kernel (ksplit 1): also 2 for long rows (n ≥
 * 8192: down), where the smaller stages let more warps an SM keep their
 * rings full. H200 tg128, one call: Q4_K_M 367-369 → 380-381, Q8_0 328-330 →
 * 334-335 tok/s; 2 for every shape (or all but lm_head) was slower (Q8_0
 * 322-324, Q4_K_M 377-380). bench/RESULTS.md, 2026-12-01 ninth run. */
static inline int gemv_pick_rows_staged(uint64_t rows, uint64_t n, int sms)
{
    return n >= 8192 ? 2 : gemv_pick_rows_per_warp(rows, sms);
}

/* Warps sharing one row group: 4 (shorter work units, more waves, a shorter
 * tail) when there are few rows (≤ ~40 per SM: q/o, k/v) or long ones (down,
 * n = 14336); 1 (no shared-memory sum) for many rows of 4096 (qkv, gate/up,
 * lm_head). */
static inline int gemv_pick_ksplit(uint64_t rows, uint64_t n, int sms)
{
    return rows < (uint64_t)sms * 40 || n >= 8192 ? 4 : 1;
}

/* Grouped GEMVs (mixture-of-experts, moe.cu): several matrices of one shape
 * stacked w_stride bytes apart, and a work list `slots` made on the device:
 * slots[0] the number of slots, then per slot {matrix, first row, rows ≤ the
 * kernel's batch}; slot s multiplies rows [first, first + rows) of x by that
 * matrix into the same rows of y — or, with xrow, x's rows xrow[first + i]
 * (the tokens of an expert's rows, read where they are: no gather). The
 * launch covers max_slots (blockIdx.y), the ones past slots[0] return at
 * once; max_rows bounds the rows of any slot (1 lets a one-token step take
 * the batch-1 kernel). */
struct gemv_group {
    const uint32_t *slots;
    const uint32_t *xrow; /* NULL: x's rows are y's */
    uint64_t w_stride;
    uint32_t max_slots, max_rows;
    uint64_t bs_stride; /* FP8 with block scales (gemv_plain_launch_grouped_bs): floats from one matrix's scale
                         * table to the next (last: the positional initializers before it stay as they are) */
};

/* The prologue of a grouped kernel (after pdl_wait): moves w to the slot's
 * matrix and y to its first row, sets the slot's row count and x row of each
 * of its NB batch entries (entries past the count: row 0, never written);
 * false past the last slot. Ungrouped kernels keep xr[b] = b (folded). */
template <int NB, class WP, class YP>
static __device__ __forceinline__ bool gemv_group_slot(const gemv_group &g, WP &w, YP &y, uint32_t rows,
                                                       uint32_t &nb, uint32_t (&xr)[NB])
{
    if (blockIdx.y >= __ldg(g.slots))
        return false;
    const uint32_t *s = g.slots + 1 + 3 * blockIdx.y;
    w += (uint64_t)__ldg(s) * g.w_stride / sizeof(*w);
    const uint32_t first = __ldg(s + 1);
    nb = __ldg(s + 2);
    y += (uint64_t)first * rows;
#pragma unroll
    for (int b = 0; b < NB; b++)
        xr[b] = b >= (int)nb ? 0 : g.xrow ? __ldg(g.xrow + first + b) : first + b;
    return true;
}

/* The GEMV's result: y[b][row0 + r] = scale · acc[r·NB + b] for the rows
 * and batch entries that exist (one thread calls it). */
template <int R, int NB>
static __device__ __forceinline__ void gemv_store_rows(float *__restrict__ y, const float (&acc)[R * NB],
                                                       uint32_t rows, uint32_t row0, uint32_t nb, float scale)
{
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int b = 0; b < NB; b++)
            if (row0 + r < rows && b < (int)nb)
                y[(uint64_t)b * rows + row0 + r] = scale * acc[r * NB + b];
}

/* rpb: rows per block (plain) or per warp (quantized); 0 = heuristic.
 * ks: warps per row group (quantized), 0 = heuristic. */
void gemv_plain_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                       const float *x, uint32_t nb, float *y, float scale, int rpb);
/* FP8 E4M3 with 128 × 128 block scales bs ((rows + 127) / 128, (n + 127) / 128), f32 (cuda_gemv_bs). */
void gemv_plain_launch_bs(struct cuda_ctx *ctx, const void *w, const float *bs, uint64_t rows, uint64_t n,
                          const float *x, uint32_t nb, float *y, float scale, int rpb);
bool gemv_quant_has(enum dtype t);
/* Quantized GEMVs read the activations prepared by gemv_quant_prep_x (in the
 * context's scratch buffer), not x itself. */
void gemv_quant_prep_x(struct cuda_ctx *ctx, const float *x, uint64_t n, uint32_t nb);
/* The scratch buffer, grown to hold nb prepared vectors of n, marked as
 * holding them: for kernels that prepare their output in passing (norm.cu). */
uint8_t *gemv_quant_xq_reserve(struct cuda_ctx *ctx, uint64_t n, uint32_t nb);

/* ---- prepared activations: layout and the per-block conversion ------------
 * One vector (n a multiple of 32; every part 16-byte aligned, the stride
 * rounded to 256 bytes):
 *   X0 (n) i8 | X1 (n) i8 | X2 (n) i8 | scale (n/32) f32 | pad | xsum (n/16) f32
 * x_i ≈ scale·X_i, X_i = rint(x_i·XQ_MAX/max|x| of its block) = 65536·X2 +
 * 256·X1 + X0 in three signed byte digits (each in −128..127: XQ_MAX =
 * 0x7F7F7F keeps the top digit in range). The block is 128 elements when
 * n % 128 == 0, else 32; its scale is written for each of its 32-element
 * parts. Signed digits and 128-element blocks serve the int8 tensor-core
 * GEMV (gemv_mma.cu: one operand type for all three planes, one scale a half
 * superblock); the dp4a kernels read any block size. xsum: Σx of each 16
 * elements (f32). Non-finite x give a non-finite scale, hence non-finite y.
 * With bf16 activations (x16: cuda_ctx_set_act_bf16, which every producer and
 * consumer reads) X is rounded to a multiple of 256 — X_i = 256·rint(x_i·
 * XQ_MAX16/max|x|), X0 = 0 — and the dp4a kernels skip that plane (its loads
 * and a third of their dp4a; the tensor-core GEMV takes planes 1 and 2 only,
 * 4 vectors an n-tile): ≤ 2^-16 of the block's max |x| off, 128× below the
 * bf16 rounding the value already carries. H100, random 8B, memra-bench:
 * Q8_0 tg128x8 801 → 1010 tok/s, Q4_K_M tg128x4 / x8 876 → 1067 / 1296 →
 * 1538, a lone token +0.5-1.5 % (bench/RESULTS.md, fifty-fifth run). */
#define XQ_MAX 8355711.0f  /* 0x7F7F7F */
#define XQ_MAX16 32639.0f  /* 0x7F7F: X / 256 under x16 */
__host__ __device__ inline uint64_t xq_sum_off(uint64_t n) { return 3 * n + ((n / 8 + 15) & ~(uint64_t)15); }
__host__ __device__ inline uint64_t xq_stride(uint64_t n) { return (xq_sum_off(n) + n / 4 + 255) & ~(uint64_t)255; }

/* Called by all 32 lanes of a warp; each lane holds 4 consecutive elements
 * v = x[e..e+3] (e % 4 == 0) of vector b, and each group of 8 lanes (lanes
 * 8m..8m+7) one whole 32-block (e of lane 8m a multiple of 32), all valid or
 * all not; when n % 128 == 0 the warp's 32 lanes hold one whole 128-block
 * (every caller walks x in warp-contiguous float4s). Writes those blocks of
 * the prepared vectors. Every producer of prepared activations goes through
 * this one function, so the bytes do not depend on who made them. */
static __device__ __forceinline__ void gemv_prep_x4(float4 v, bool valid, uint32_t lane, uint8_t *xq, uint32_t n,
                                                    uint32_t b, uint32_t e, bool x16)
{
    float mx = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    const int span = n % 128 == 0 ? 16 : 4; /* the lanes of the block: 32 or 8 */
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        if (o <= span)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float s16 = (v.x + v.y) + (v.z + v.w);
#pragma unroll
    for (int o = 2; o > 0; o >>= 1) /* the 4 lanes of the 16 */
        s16 += __shfl_xor_sync(0xffffffffu, s16, o);
    if (!valid)
        return;
    const float top = x16 ? XQ_MAX16 : XQ_MAX, f = mx > 0.0f ? top / mx : 0.0f;
    const int unit = x16 ? 256 : 1;
    const float vv[4] = {v.x, v.y, v.z, v.w};
    uint32_t p0 = 0, p1 = 0, p2 = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int X = unit * max(-(int)top, min((int)top, __float2int_rn(vv[j] * f)));
        const int d0 = (int)(int8_t)(X & 0xFF), r = (X - d0) >> 8; /* signed digits: X = 256·r + d0 */
        const int d1 = (int)(int8_t)(r & 0xFF), d2 = (r - d1) >> 8;
        p0 |= (uint32_t)(d0 & 0xFF) << (8 * j);
        p1 |= (uint32_t)(d1 & 0xFF) << (8 * j);
        p2 |= (uint32_t)(d2 & 0xFF) << (8 * j);
    }
    uint8_t *base = xq + (uint64_t)b * xq_stride(n);
    *reinterpret_cast<uint32_t *>(base + e) = p0;
    *reinterpret_cast<uint32_t *>(base + n + e) = p1;
    *reinterpret_cast<uint32_t *>(base + 2 * (uint64_t)n + e) = p2;
    if ((lane & 7) == 0) /* non-finite x: mx is inf/NaN and the scale carries it into y */
        reinterpret_cast<float *>(base + 3 * (uint64_t)n)[e / 32] = mx > 0.0f ? mx / (x16 ? 256.0f * XQ_MAX16 : XQ_MAX)
                                                                             : 0.0f;
    if ((lane & 3) == 0)
        reinterpret_cast<float *>(base + xq_sum_off(n))[e / 16] = s16;
}

/* Where cuda_rope_epi's stores go: the token's position and its k and v cache rows. Uploaded before the step, so a
 * GEMV reads them before its PDL wait (as the RoPE kernel does): its epilogue then has no dependent loads. */
struct rope_epi_at {
    uint32_t pos;
    void *k, *v;
};
static __device__ __forceinline__ rope_epi_at rope_epi_where(const cuda_rope_epi &rp)
{
    rope_epi_at a = {0, nullptr, nullptr};
    if (rp.q) {
        a.pos = rp.tok_pos[0];
        a.k = CUDA_KV_ROW(rp.kv.k, rp.kv, 0, a.pos, rp.k_rows);
        a.v = CUDA_KV_ROW(rp.kv.v, rp.kv, 0, a.pos, rp.k_rows);
    }
    return a;
}
/* cuda_rope_epi's stores of the rotation pair row0 (even), row0 + 1 of a lone token's q|k[|v], values a and b (v's
 * rows: as they are): the RoPE kernel's operations (rope_cos_sin, rope_rotate). put0 / put1: which of the two this
 * thread writes (a dp4a lane holds both, a tensor-core lane one and its partner's value by a shuffle). */
static __device__ __forceinline__ void rope_epi_store(const cuda_rope_epi &rp, const rope_epi_at &at, uint32_t row0,
                                                      float a, float b, bool put0, bool put1)
{
    float y0 = a, y1 = b;
    void *dst = at.v;
    uint32_t e = row0 - rp.q_rows - rp.k_rows; /* the pair's first element in its q, k or v row */
    if (row0 < rp.q_rows + rp.k_rows) {
        const bool isq = row0 < rp.q_rows;
        e = isq ? row0 : row0 - rp.q_rows;
        float c, s;
        rope_cos_sin(at.pos, __ldg(rp.inv_freq + e % rp.head_dim / 2), c, s);
        rope_rotate(a, b, c, s, y0, y1);
        if (isq) {
            if (put0)
                rp.q[e] = y0;
            if (put1)
                rp.q[e + 1] = y1;
            return;
        }
        dst = at.k;
    }
    if (put0)
        kv_put(dst, rp.kv.bf16 != 0, e, y0);
    if (put1)
        kv_put(dst, rp.kv.bf16 != 0, e + 1, y1);
}

/* The quantized GEMVs (gemv_quant.cu, gemv_mma.cu) on x prepared by gemv_quant_prep_x. With rp.q set (one vector,
 * cuda_fwd_gemv_rope_kv) the kernel stores through rp's epilogue instead of y, or returns false having launched
 * nothing where the shape's kernel cannot (a rotation pair must be in one thread or adjacent lanes). */
bool gemv_quant_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, uint32_t nb,
                       float *y, float scale, int rpb, int ks, const cuda_rope_epi &rp = {});
/* The int8 tensor-core GEMV (gemv_mma.cu): Q4_K, Q6_K (mode
 * CUDA_GEMV_MMA_ALL, n % 2048 == 0), batch ≤ 8, x prepared; ks: warps
 * splitting a row tile's K (1, 2, 4, 8; 0 = the rule). */
bool gemv_mma_has(int mode, enum dtype t, uint64_t n);
void gemv_mma_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                     const uint8_t *xq, uint32_t nb, float *y, float scale, int ks, const cuda_rope_epi &rp = {});
/* The grouped forms (gemv_group above); the quantized one reads x prepared for
 * at least the largest first + rows of its slots (gemv_quant_prep_x). */
void gemv_plain_launch_grouped(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                               const float *x, float *y, float scale, const gemv_group &grp);
/* The same for FP8 E4M3 with 128 × 128 block scales: matrix m's scale table at bs + m · grp.bs_stride. */
void gemv_plain_launch_grouped_bs(struct cuda_ctx *ctx, const void *w, const float *bs, uint64_t rows, uint64_t n,
                                  const float *x, float *y, float scale, const gemv_group &grp);
void fwd_matmul_f32_grouped(struct cuda_ctx *ctx, const float *w, uint32_t rows, uint32_t n, const float *x, float *y,
                            float scale, const gemv_group &grp); /* fwd.cu */
void gemv_quant_launch_grouped(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                               float *y, float scale, const gemv_group &grp);

#endif
