/* backend/cuda/gemv_internal.cuh — shared between gemv.cu (the C entry points)
 * and the per-family GEMV files (gemv_plain.cu, gemv_quant.cu): the launch
 * functions of each family and the launch-shape heuristic.
 */
#ifndef MEMRA_BACKEND_CUDA_GEMV_INTERNAL_CUH
#define MEMRA_BACKEND_CUDA_GEMV_INTERNAL_CUH

#include "backend/cuda/cuda_common.cuh"

/* Rows per thread block for a batch-1 GEMV: the largest of 4, 2, 1 that still
 * gives ≥ 4 blocks per SM (so every SM has work and the tail is short). */
static inline int gemv_pick_rows_per_block(uint64_t rows, int sms)
{
    if (rows / 4 >= (uint64_t)sms * 4)
        return 4;
    if (rows / 2 >= (uint64_t)sms * 4)
        return 2;
    return 1;
}

/* rpb: rows per block (0 = heuristic). staged (quant only): -1 auto, 0 read
 * blocks straight from global memory, 1 stage rows through shared memory. */
void gemv_plain_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                       const float *x, uint32_t nb, float *y, float scale, int rpb);
void gemv_quant_launch(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                       const float *x, uint32_t nb, float *y, float scale, int rpb, int staged);
bool gemv_quant_has(enum dtype t);

#endif
