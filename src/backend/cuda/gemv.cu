/* backend/cuda/gemv.cu — the C entry points of the GEMV family (cuda_ops.h, and cuda_fwd.h's
 * cuda_fwd_gemv_rope_kv): shape checks and dispatch to the plain-float kernels (gemv_plain.cu) or the
 * block-quantized ones (gemv_quant.cu). */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_internal.cuh"

static bool is_plain(enum dtype t) { return t == DTYPE_BF16 || t == DTYPE_F16 || t == DTYPE_F8_E4M3; }

extern "C" bool cuda_gemv_supported(enum dtype t, uint64_t rows, uint64_t n)
{
    if (rows == 0 || n == 0 || rows > 0xFFFFFFFFull / 4 || n > 0xFFFFFFFFull / 4 || rows * n >= (1ull << 40))
        return false;
    if (t == DTYPE_BF16 || t == DTYPE_F16)
        return n % 8 == 0;
    if (t == DTYPE_F8_E4M3)
        return n % 16 == 0;
    if (gemv_quant_has(t))
        return n % dtype_info(t)->block_size == 0;
    return false;
}

extern "C" void cuda_gemv_prep_x(struct cuda_ctx *ctx, const float *x, uint64_t n, uint32_t batch)
{
    if ((uintptr_t)x % 16 != 0)
        CUDA_FAIL("cuda_gemv_prep_x: x must be 16-byte aligned");
    gemv_quant_prep_x(ctx, x, n, batch);
}

extern "C" void cuda_gemv_variant(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                                  const float *x, uint32_t batch, float *y, float scale, int rpb, int ksplit,
                                  unsigned flags)
{
    if (!cuda_gemv_supported(t, rows, n))
        CUDA_FAIL("cuda_gemv: %s %llu×%llu not supported", dtype_name(t), (unsigned long long)rows,
                  (unsigned long long)n);
    if (batch < 1 || batch > CUDA_GEMV_MAX_BATCH)
        CUDA_FAIL("cuda_gemv: batch %u not in 1..%d", batch, CUDA_GEMV_MAX_BATCH);
    if (((uintptr_t)w | (uintptr_t)x) % 16 != 0)
        CUDA_FAIL("cuda_gemv: w and x must be 16-byte aligned");
    if (is_plain(t)) {
        gemv_plain_launch(ctx, t, w, rows, n, x, batch, y, scale, rpb);
        return;
    }
    if (!(flags & CUDA_GEMV_X_PREPARED))
        gemv_quant_prep_x(ctx, x, n, batch);
    gemv_quant_launch(ctx, t, w, rows, n, batch, y, scale, rpb, ksplit);
}

extern "C" bool cuda_fwd_gemv_rope_kv(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                                      float scale, int ks, const struct cuda_rope_epi *r)
{
    if (!r || !r->q || r->head_dim == 0 || r->head_dim % 2 || r->k_rows == 0 || r->q_rows % r->head_dim ||
        r->k_rows % r->head_dim || (rows != (uint64_t)r->q_rows + r->k_rows && rows != (uint64_t)r->q_rows + 2 * r->k_rows))
        CUDA_FAIL("cuda_fwd_gemv_rope_kv: %llu rows are not q|k[|v] of head_dim %u", (unsigned long long)rows,
                  r ? r->head_dim : 0);
    if (is_plain(t) || !cuda_gemv_supported(t, rows, n) || (uintptr_t)w % 16 != 0)
        return false;
    return gemv_quant_launch(ctx, t, w, rows, n, 1, nullptr, scale, 0, ks, *r);
}

extern "C" void cuda_gemv_bs(struct cuda_ctx *ctx, const void *w, const float *bs, uint64_t rows, uint64_t n,
                             const float *x, uint32_t batch, float *y, float scale)
{
    if (!cuda_gemv_supported(DTYPE_F8_E4M3, rows, n) || !bs)
        CUDA_FAIL("cuda_gemv_bs: F8_E4M3 %llu×%llu not supported, or no block scales", (unsigned long long)rows,
                  (unsigned long long)n);
    if (batch < 1 || batch > CUDA_GEMV_MAX_BATCH)
        CUDA_FAIL("cuda_gemv_bs: batch %u not in 1..%d", batch, CUDA_GEMV_MAX_BATCH);
    if (((uintptr_t)w | (uintptr_t)x) % 16 != 0)
        CUDA_FAIL("cuda_gemv_bs: w and x must be 16-byte aligned");
    gemv_plain_launch_bs(ctx, w, bs, rows, n, x, batch, y, scale, 0);
}

extern "C" void cuda_gemv(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                          const float *x, uint32_t batch, float *y, float scale)
{
    cuda_gemv_variant(ctx, t, w, rows, n, x, batch, y, scale, 0, 0, 0);
}
