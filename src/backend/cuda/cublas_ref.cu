/* backend/cuda/cublas_ref.cu — cuBLAS calls: the bf16 GEMV the benchmark uses
 * as its baseline (and the place prefill GEMMs will go).
 *
 * W (rows, n) row-major is, to column-major cuBLAS, an (n, rows) matrix with
 * leading dimension n; y = W·x is then op(A) = Aᵀ: cublasGemmEx(T, N, m = rows,
 * n = 1, k = n). bf16 inputs, f32 output, f32 compute (CUBLAS_COMPUTE_32F). */
#include "backend/cuda/cuda_common.cuh"

extern "C" void cuda_blas_gemv_bf16(struct cuda_ctx *ctx, const uint16_t *w, uint64_t rows, uint64_t n,
                                    const uint16_t *x, float *y)
{
    if (!ctx->blas) {
        CUBLAS_CHECK(cublasCreate(&ctx->blas));
        CUBLAS_CHECK(cublasSetStream(ctx->blas, ctx->stream));
        /* a workspace of our own: cuBLAS then allocates nothing while a graph
         * is being captured */
        const size_t ws_bytes = 32u << 20;
        CUDA_CHECK(cudaMalloc(&ctx->blas_ws, ws_bytes));
        CUBLAS_CHECK(cublasSetWorkspace(ctx->blas, ctx->blas_ws, ws_bytes));
    }
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(ctx->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, 1, (int)n, &alpha, w, CUDA_R_16BF,
                              (int)n, x, CUDA_R_16BF, (int)n, &beta, y, CUDA_R_32F, (int)rows, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
}
