/* backend/cuda/embed.cu — the token-embedding gather on the device
 * (cuda_decode.h): one thread block per batch token reads the token id from
 * device memory and decodes that row of the embedding table into x.
 *
 * Why on the device: the decode step then needs only the token ids from the
 * host (4 bytes a token instead of 4·dim), and the gather can sit inside the
 * step's CUDA graph. Size: dim elements a token (16 KB at dim 4096), one
 * pass, so a simple element-per-thread decode is enough; each element is
 * decoded by the CPU's formula (src/quant/quant_internal.h quant_block_*)
 * with the multiplications and additions rounded separately (__fmul_rn /
 * __fadd_rn: no FMA contraction), which makes the result bit-identical to
 * model_embed_row. */
#include <cuda_fp16.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_decode.h"

namespace {

__device__ __forceinline__ float ld_half(const uint8_t *p)
{
    return __half2float(__ushort_as_half((unsigned short)(p[0] | p[1] << 8)));
}

/* Q4_K / Q5_K packed 6-bit scale and min of sub-block j (quant_k_scale_min). */
__device__ __forceinline__ void k_scale_min(const uint8_t *s, int j, int &sc, int &mn)
{
    if (j < 4) {
        sc = s[j] & 63;
        mn = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Element e of a row (row: its bytes). */
template <enum dtype T> __device__ __forceinline__ float decode(const uint8_t *row, uint32_t e);

template <> __device__ __forceinline__ float decode<DTYPE_F32>(const uint8_t *row, uint32_t e)
{
    return reinterpret_cast<const float *>(row)[e];
}
template <> __device__ __forceinline__ float decode<DTYPE_BF16>(const uint8_t *row, uint32_t e)
{
    return __uint_as_float((uint32_t)reinterpret_cast<const uint16_t *>(row)[e] << 16);
}
template <> __device__ __forceinline__ float decode<DTYPE_F16>(const uint8_t *row, uint32_t e)
{
    return ld_half(row + 2 * e);
}
template <> __device__ __forceinline__ float decode<DTYPE_Q8_0>(const uint8_t *row, uint32_t e)
{
    const uint8_t *b = row + (e / 32) * 34;
    return __fmul_rn((float)(int8_t)b[2 + e % 32], ld_half(b));
}
template <> __device__ __forceinline__ float decode<DTYPE_Q4_0>(const uint8_t *row, uint32_t e)
{
    const uint8_t *b = row + (e / 32) * 18;
    const uint32_t i = e % 32;
    const int q = i < 16 ? (b[2 + i] & 15) : (b[2 + i - 16] >> 4);
    return __fmul_rn(ld_half(b), (float)(q - 8));
}
template <> __device__ __forceinline__ float decode<DTYPE_Q4_1>(const uint8_t *row, uint32_t e)
{
    const uint8_t *b = row + (e / 32) * 20;
    const uint32_t i = e % 32;
    const int q = i < 16 ? (b[4 + i] & 15) : (b[4 + i - 16] >> 4);
    return __fadd_rn(__fmul_rn(ld_half(b), (float)q), ld_half(b + 2));
}
/* Q4_K: sub-block 2c takes the low nibbles of qs[32c..], 2c+1 the high ones. */
template <> __device__ __forceinline__ float decode<DTYPE_Q4_K>(const uint8_t *row, uint32_t e)
{
    const uint8_t *b = row + (e / 256) * 144;
    const uint32_t j = e % 256, c = j / 64, hi = (j % 64) / 32, i = j % 32;
    int sc, mn;
    k_scale_min(b + 4, (int)(2 * c + hi), sc, mn);
    const int q = (b[16 + 32 * c + i] >> (4 * hi)) & 15;
    const float d = __fmul_rn(ld_half(b), (float)sc), dm = __fmul_rn(ld_half(b + 2), (float)mn);
    return __fsub_rn(__fmul_rn(d, (float)q), dm);
}
template <> __device__ __forceinline__ float decode<DTYPE_Q5_K>(const uint8_t *row, uint32_t e)
{
    const uint8_t *b = row + (e / 256) * 176;
    const uint32_t j = e % 256, c = j / 64, hi = (j % 64) / 32, i = j % 32, sub = 2 * c + hi;
    int sc, mn;
    k_scale_min(b + 4, (int)sub, sc, mn);
    const int q = ((b[48 + 32 * c + i] >> (4 * hi)) & 15) | ((b[16 + i] >> sub) & 1) << 4;
    const float d = __fmul_rn(ld_half(b), (float)sc), dm = __fmul_rn(ld_half(b + 2), (float)mn);
    return __fsub_rn(__fmul_rn(d, (float)q), dm);
}
/* Q6_K: e = 128h + 32k + 16g + i (quant_block_q6_k). */
template <> __device__ __forceinline__ float decode<DTYPE_Q6_K>(const uint8_t *row, uint32_t e)
{
    const uint8_t *b = row + (e / 256) * 210;
    const uint32_t j = e % 256, h = j / 128, k = (j % 128) / 32, g = (j % 32) / 16, i = j % 16;
    const float dl = __fmul_rn(ld_half(b + 208), (float)(int8_t)b[192 + h * 8 + k * 2 + g]);
    const uint8_t l = b[h * 64 + (k & 1) * 32 + g * 16 + i], hh = b[128 + h * 32 + g * 16 + i];
    const int v = (int)(((l >> (4 * (k >> 1))) & 15) | ((hh >> (2 * k)) & 3) << 4) - 32;
    return __fmul_rn(dl, (float)v);
}

template <enum dtype T>
__global__ void __launch_bounds__(256) kernel_embed(const uint8_t *__restrict__ table, uint64_t row_bytes,
                                                    uint32_t dim, const int32_t *__restrict__ tokens, float scale,
                                                    float *__restrict__ x)
{
    pdl_enter();
    const uint8_t *row = table + (uint64_t)(uint32_t)tokens[blockIdx.x] * row_bytes;
    float *out = x + (uint64_t)blockIdx.x * dim;
    for (uint32_t e = threadIdx.x; e < dim; e += blockDim.x) {
        const float v = decode<T>(row, e);
        out[e] = scale != 1.0f ? __fmul_rn(v, scale) : v;
    }
}

} // namespace

extern "C" bool cuda_embed_supported(enum dtype t, uint64_t dim)
{
    if (dim == 0 || dim > (1u << 24))
        return false;
    switch (t) {
    case DTYPE_F32:
    case DTYPE_BF16:
    case DTYPE_F16:
        return true;
    case DTYPE_Q8_0:
    case DTYPE_Q4_0:
    case DTYPE_Q4_1:
        return dim % 32 == 0;
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        return dim % 256 == 0;
    default:
        return false;
    }
}

extern "C" void cuda_embed_gather(struct cuda_ctx *ctx, enum dtype t, const void *table, uint64_t row_bytes,
                                  uint32_t dim, const int32_t *tokens, uint32_t T, float scale, float *x)
{
    if (!cuda_embed_supported(t, dim))
        CUDA_FAIL("embed_gather: %s rows of %u not supported", dtype_name(t), dim);
    if (T == 0)
        return;
    const uint8_t *w = static_cast<const uint8_t *>(table);
    switch (t) {
#define EMBED_CASE(D)                                                                                              \
    case D:                                                                                                        \
        cuda_launch(ctx, kernel_embed<D>, T, 256, 0, w, row_bytes, dim, tokens, scale, x);                          \
        break;
        EMBED_CASE(DTYPE_F32)
        EMBED_CASE(DTYPE_BF16)
        EMBED_CASE(DTYPE_F16)
        EMBED_CASE(DTYPE_Q8_0)
        EMBED_CASE(DTYPE_Q4_0)
        EMBED_CASE(DTYPE_Q4_1)
        EMBED_CASE(DTYPE_Q4_K)
        EMBED_CASE(DTYPE_Q5_K)
        EMBED_CASE(DTYPE_Q6_K)
#undef EMBED_CASE
    default:
        break;
    }
    CUDA_CHECK_LAUNCH();
}
