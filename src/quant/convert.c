/* quant/convert.c — scalar float conversions: f16, bf16, OCP FP8 ↔ f32.
 *
 * References for bit-exactness (tests/py/test_quant_reference.py checks every
 * 16-bit / 8-bit input exhaustively): numpy's float16 casts, and ml_dtypes
 * (bfloat16, float8_e4m3fn, float8_e5m2), which match PyTorch. NaN outputs:
 * f16→f32 keeps the payload (numpy); f32→f16 truncates it and keeps it
 * non-zero (numpy); f32→bf16 and FP8→f32 give the canonical quiet NaN with the
 * input's sign (ml_dtypes / torch).
 */
#include "quant/quant_internal.h"

float quant_f16_to_f32(uint16_t h)
{
    return quant_f16_to_f32_inline(h);
}

uint16_t quant_f32_to_f16(float f)
{
    const uint32_t u = quant_f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t e = (u >> 23) & 0xffu; /* biased f32 exponent */
    const uint32_t mant = u & 0x7fffffu;
    if (e == 0xff) {
        if (mant == 0)
            return sign | 0x7c00u;
        uint16_t r = (uint16_t)(0x7c00u + (mant >> 13));
        return sign | (r == 0x7c00u ? 0x7c01u : r);
    }
    if (e >= 143) /* ≥ 2^16: beyond the largest half even after rounding */
        return sign | 0x7c00u;
    if (e >= 113) { /* normal half: exponent e − 112 in [1, 30] */
        uint32_t h = (e - 112) << 10 | mant >> 13;
        const uint32_t rem = mant & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
            h++; /* a carry into the exponent is the correct result, up to inf */
        return (uint16_t)(sign | h);
    }
    if (e < 102) /* below 2^-25: rounds to zero */
        return sign;
    /* subnormal half: round(|f| / 2^-24) to nearest even */
    const uint32_t sig = 0x800000u | mant;
    const uint32_t shift = 126 - e; /* 14..24 */
    uint32_t h = sig >> shift;
    const uint32_t rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

float quant_bf16_to_f32(uint16_t h)
{
    return quant_bits_f32((uint32_t)h << 16);
}

uint16_t quant_f32_to_bf16(float f)
{
    const uint32_t u = quant_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float quant_f8e4m3_to_f32(uint8_t v)
{
    return quant_f8e4m3_to_f32_inline(v);
}

float quant_f8e5m2_to_f32(uint8_t v)
{
    return quant_f8e5m2_to_f32_inline(v);
}

void quant_row_f32_to_f16(const float *src, uint16_t *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        dst[i] = quant_f32_to_f16(src[i]);
}

void quant_row_f32_to_bf16(const float *src, uint16_t *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        dst[i] = quant_f32_to_bf16(src[i]);
}
