/* backend/cuda/gemm_plan.h — the cuBLASLt half of the prefill GEMM (gemm_plan.cu) for gemm.cu: one GEMM on a
 * cached plan whose algorithm has no split K (so a span's rows keep their bits inside a larger GEMM; gemm.cu's
 * header says why), short spans' plans timed among their candidates (MEMRA_GEMM_PICK). Internal to
 * src/backend/cuda (C++ linkage, CUDA types).
 *
 *   D (m = rows, n = T) f32 (or bf16) = alpha · A·B + beta · D,  A (k = n, m) and B (k, T) column-major, "TN"
 *
 * All launches on ctx's stream; the plans, the workspace and the timing scratch belong to the object. */
#ifndef MEMRA_BACKEND_CUDA_GEMM_PLAN_H
#define MEMRA_BACKEND_CUDA_GEMM_PLAN_H

#include <cublasLt.h>
#include <stdbool.h>
#include <stdint.h>

struct cuda_ctx;
struct gemm_plans;

struct gemm_plans *gemm_plans_init(struct cuda_ctx *ctx);
void gemm_plans_free(struct gemm_plans *pl);
/* MEMRA_GEMM_PICK: whether short spans' plans time their candidates (the default) — returns the setting before */
bool gemm_plans_set_timed(struct gemm_plans *pl, bool timed);
/* y = alpha · a·b + beta · y on the plan for (types, rows, n, T, alignments): a 256-byte aligned, b align_b, y the
 * alignment rows·4 bytes keeps (gemm_align_of). */
void gemm_plans_run(struct gemm_plans *pl, cudaDataType_t at, const void *a, cudaDataType_t bt, const void *b,
                    cublasComputeType_t ct, uint64_t rows, uint64_t n, uint32_t T, float *y, float alpha, float beta,
                    uint32_t align_b);
/* The same with D of type yt: CUDA_R_32F (gemm_plans_run) or CUDA_R_16BF — alpha · A·B rounded once to bf16
 * (nearest even) from the f32 accumulator; beta 0 there (a bf16 D read back would round twice). */
void gemm_plans_run_to(struct gemm_plans *pl, cudaDataType_t at, const void *a, cudaDataType_t bt, const void *b,
                       cublasComputeType_t ct, uint64_t rows, uint64_t n, uint32_t T, void *y, cudaDataType_t yt,
                       float alpha, float beta, uint32_t align_b);

/* Largest power of two ≤ 256 dividing bytes (the alignment every offset that is a multiple of `bytes` from a
 * 256-aligned base keeps). */
static inline uint32_t gemm_align_of(uint64_t bytes)
{
    uint32_t a = 256;
    while (a > 1 && bytes % a)
        a >>= 1;
    return a;
}

#endif
