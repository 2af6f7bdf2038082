/* backend/cuda/gemv_internal.cuh — shared between gemv.cu (the C entry points)
 * and the per-family GEMV files (gemv_plain.cu, gemv_quant.cu): the launch
 * functions of each family and the launch-shape heuristic.
 */
#ifndef MEMRA_BACKEND_CUDA_GEMV_INTERNAL_CUH
#define MEMRA_BACKEND_CUDA_GEMV_INTERNAL_CUH

#include "backend/cuda/cuda_common.cuh"

/* Rows per thread block (plain kernels) for a batch-1 GEMV: the largest of
 * 4, 2, 1 that still gives ≥ 4 blocks per SM (every SM busy, a short tail). */
static inline int gemv_pick_rows_per_block(uint64_t rows, int sms)
{
    if (rows / 4 >= (uint64_t)sms * 4)
        return 4;
    if (rows / 2 >= (uint64_t)sms * 4)
        return 2;
    return 1;
}

/* Rows per warp (quantized kernels): R = 4 once that still gives ≥ 8 warps per
 * SM, else 2 at ≥ 8 warps per SM, else 1. More rows a warp share each
 * activation load (less L1 traffic); more warps keep more loads in flight. */
static inline int gemv_pick_rows_per_warp(uint64_t rows, int sms)
{
    if (rows / 4 >= (uint64_t)sms * 8)
        return 4;
    if (rows / 2 >= (uint64_t)sms * 8)
        return 2;
    return 1;
}

/* Warps sharing one row group (quantized kernels): 4 when 1 would leave fewer
 * than ~2 waves of warps (short rows or few of them), else 1. */
static inline int gemv_pick_ksplit(uint64_t rows, uint64_t n, int sms)
{
    (void)n;
    return rows < (uint64_t)sms * 64 ? 4 : 1;
}

/* rpb: rows per block (plain) or per warp (quantized); 0 = heuristic.
 * ks: warps per row group (quantized), 0 = heuristic. */
void gemv_plain_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                       const float *x, uint32_t nb, float *y, float scale, int rpb);
bool gemv_quant_has(enum dtype t);
/* Quantized GEMVs read the activations prepared by gemv_quant_prep_x (in the
 * context's scratch buffer), not x itself. */
void gemv_quant_prep_x(struct cuda_ctx *ctx, const float *x, uint64_t n, uint32_t nb);
void gemv_quant_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, uint32_t nb,
                       float *y, float scale, int rpb, int ks);

#endif
