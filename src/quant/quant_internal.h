/* quant/quant_internal.h — block dequantizers shared by dequant.c and dot.c.
 *
 * Each quant_block_<type>(block, out) expands one block into its block_size
 * floats with exactly the float operations, in the same order, that gguf-py's
 * dequantize_blocks uses (one rounding per numpy operation, no fused
 * multiply-add: this library is built with -ffp-contract=off), which is what
 * makes the result bit-exact. dot.c calls the same functions into a small stack
 * buffer, so the fused dot product sees the very same weights as
 * quant_dequantize_row.
 *
 * Layout of every block (bytes, little-endian), as in gguf-py quants.py:
 *   Q4_0  (32 el, 18 B): f16 d | u8 qs[16]       x = d·(q−8); el i<16: qs[i]&15, i≥16: qs[i−16]>>4
 *   Q4_1  (32, 20): f16 d | f16 m | qs[16]        x = d·q + m
 *   Q5_0  (32, 22): f16 d | u32 qh | qs[16]       q = nibble | bit i of qh << 4; x = d·(q−16)
 *   Q5_1  (32, 24): f16 d | f16 m | u32 qh | qs[16]   x = d·q + m
 *   Q8_0  (32, 34): f16 d | i8 qs[32]             x = q·d
 *   IQ4_NL(32, 18): f16 d | qs[16]                x = d·kvalues[nibble]
 *   Q2_K (256, 84): u8 scales[16] | qs[64] | f16 d | f16 dmin
 *   Q3_K (256,110): hmask[32] | qs[64] | scales[12] | f16 d
 *   Q4_K (256,144): f16 d | f16 dmin | scales[12] | qs[128]
 *   Q5_K (256,176): f16 d | f16 dmin | scales[12] | qh[32] | qs[128]
 *   Q6_K (256,210): ql[128] | qh[64] | i8 scales[16] | f16 d
 *   IQ4_XS(256,136): f16 d | u16 scales_h | scales_l[4] | qs[128]
 * The comments on the functions below spell out the bit positions.
 */
#ifndef MEMRA_QUANT_INTERNAL_H
#define MEMRA_QUANT_INTERNAL_H

#include <stdint.h>
#include <math.h>
#include <string.h>

#include "quant/quant.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "quant: the model formats are little-endian and so is this code (memcpy'd loads)"
#endif

/* Forced inlining for the block expanders and what they call: they are
 * inlined into quant_dequantize_row's SIMD clones (dequant.c) and the fused
 * dots (dot.c), where gcc's size limits would otherwise leave calls to the
 * baseline (SSE2) copies. */
#define QUANT_INLINE static inline __attribute__((always_inline))

#define QUANT_QK 32   /* elements of a Q*_0 / Q*_1 / IQ4_NL block */
#define QUANT_QK_K 256 /* elements of a K / IQ4_XS super-block */

/* The small float formats → f32 without branches and without ever feeding a
 * subnormal f32 to the FPU (a subnormal operand costs a ~100-cycle microcode
 * assist on x86): normal inputs are rebiased with an integer add on the bits;
 * subnormal inputs m·2^(1−bias−mbits) are made as the normal number
 * 2^(1−bias)·(1 + m/2^mbits) minus 2^(1−bias), which is exact; inf/NaN are
 * patched with integer selects. Every lane computes every case and a mask picks
 * one, so gcc vectorises loops over these. */
static inline float quant_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t quant_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline uint32_t quant_mask(int cond)
{
    return (uint32_t) - (int32_t)(cond != 0);
}

/* IEEE binary16 → f32, exact; NaN payloads kept (as numpy). */
QUANT_INLINE float quant_f16_to_f32_inline(uint16_t h)
{
    const uint32_t mag = (uint32_t)(h & 0x7fffu) << 13; /* exponent at f32's place, bias 15 */
    const uint32_t e = h & 0x7c00u;
    const uint32_t normal = mag + (112u << 23);
    const uint32_t sub = quant_f32_bits(quant_bits_f32(mag + (113u << 23)) - 0x1p-14f);
    const uint32_t special = 0x7f800000u | mag;
    const uint32_t is_sub = quant_mask(e == 0), is_special = quant_mask(e == 0x7c00u);
    const uint32_t bits = (normal & ~(is_sub | is_special)) | (sub & is_sub) | (special & is_special);
    return quant_bits_f32(bits | (uint32_t)(h & 0x8000u) << 16);
}

/* OCP FP8 E4M3 ("fn": no inf; S.1111.111 is NaN) → f32, exact; NaN → the
 * canonical quiet NaN with the sign (ml_dtypes / torch). */
static inline float quant_f8e4m3_to_f32_inline(uint8_t v)
{
    const uint32_t mag = (uint32_t)(v & 0x7fu) << 20; /* bias 7 */
    const uint32_t normal = mag + (120u << 23);
    const uint32_t sub = quant_f32_bits(quant_bits_f32(mag + (121u << 23)) - 0x1p-6f);
    const uint32_t is_sub = quant_mask((v & 0x78u) == 0), is_nan = quant_mask((v & 0x7fu) == 0x7fu);
    const uint32_t bits = (normal & ~(is_sub | is_nan)) | (sub & is_sub) | (0x7fc00000u & is_nan);
    return quant_bits_f32(bits | (uint32_t)(v & 0x80u) << 24);
}

/* OCP FP8 E5M2 (IEEE-like, bias 15) → f32, exact; S.11111.00 is ±inf, other
 * exponent-31 codes NaN → the canonical quiet NaN with the sign (ml_dtypes). */
static inline float quant_f8e5m2_to_f32_inline(uint8_t v)
{
    const uint32_t mag = (uint32_t)(v & 0x7fu) << 21;
    const uint32_t normal = mag + (112u << 23);
    const uint32_t sub = quant_f32_bits(quant_bits_f32(mag + (113u << 23)) - 0x1p-14f);
    const uint32_t is_sub = quant_mask((v & 0x7cu) == 0), is_inf = quant_mask((v & 0x7fu) == 0x7cu),
                   is_nan = quant_mask((v & 0x7fu) > 0x7cu);
    const uint32_t bits = (normal & ~(is_sub | is_inf | is_nan)) | (sub & is_sub) | (0x7f800000u & is_inf) |
                          (0x7fc00000u & is_nan);
    return quant_bits_f32(bits | (uint32_t)(v & 0x80u) << 24);
}

/* FP8 decoding tables (256 exact values each, built by the compiler from the
 * format definitions): one load per element beats the branch-free arithmetic
 * above on SSE2. The _inline functions stay the reference for single values. */
#define QUANT_E4M3_MAG(v)                                                              \
    (((v) & 0x7f) == 0x7f ? NAN                                                        \
     : ((v) & 0x78) == 0  ? (float)((v) & 7) * 0x1p-9f                                 \
                          : (float)(8 + ((v) & 7)) * (float)(1 << (((v) >> 3) & 15)) * 0x1p-10f)
#define QUANT_E5M2_MAG(v)                                                              \
    (((v) & 0x7f) > 0x7c   ? NAN                                                       \
     : ((v) & 0x7f) == 0x7c ? INFINITY                                                 \
     : ((v) & 0x7c) == 0    ? (float)((v) & 3) * 0x1p-16f                              \
                            : (float)(4 + ((v) & 3)) * (float)(1 << (((v) >> 2) & 31)) * 0x1p-17f)
#define QUANT_E4M3(v) ((v) & 0x80 ? -QUANT_E4M3_MAG(v) : QUANT_E4M3_MAG(v))
#define QUANT_E5M2(v) ((v) & 0x80 ? -QUANT_E5M2_MAG(v) : QUANT_E5M2_MAG(v))
#define QUANT_R4(F, b) F(b), F((b) + 1), F((b) + 2), F((b) + 3)
#define QUANT_R16(F, b) QUANT_R4(F, b), QUANT_R4(F, (b) + 4), QUANT_R4(F, (b) + 8), QUANT_R4(F, (b) + 12)
#define QUANT_R64(F, b) QUANT_R16(F, b), QUANT_R16(F, (b) + 16), QUANT_R16(F, (b) + 32), QUANT_R16(F, (b) + 48)
#define QUANT_R256(F) QUANT_R64(F, 0), QUANT_R64(F, 64), QUANT_R64(F, 128), QUANT_R64(F, 192)
static const float quant_e4m3_table[256] = {QUANT_R256(QUANT_E4M3)};
static const float quant_e5m2_table[256] = {QUANT_R256(QUANT_E5M2)};

/* One f16 field (a block's scale): the same value as quant_f16_to_f32_inline,
 * with a branch for the normal numbers every real scale is — about a third of
 * the branch-free form's instructions, which weigh on a 32-element block. */
QUANT_INLINE float quant_load_f16(const uint8_t *p)
{
    const uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    const uint32_t e = h & 0x7c00u;
    if (__builtin_expect(e != 0 && e != 0x7c00u, 1))
        return quant_bits_f32((((uint32_t)(h & 0x7fffu) << 13) + (112u << 23)) | (uint32_t)(h & 0x8000u) << 16);
    return quant_f16_to_f32_inline(h);
}

static inline uint32_t quant_load_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* IQ4_NL / IQ4_XS non-linear 4-bit codebook (a fact of the format), as floats
 * (exact) so that a lookup needs no conversion. */
static const float quant_iq4_values_f[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

QUANT_INLINE void quant_block_q4_0(const uint8_t *b, float *restrict y /* (32) */)
{
    const float d = quant_load_f16(b);
    const uint8_t *qs = b + 2;
    for (int i = 0; i < 16; i++)
        y[i] = d * (float)((int)(qs[i] & 15) - 8);
    for (int i = 0; i < 16; i++)
        y[i + 16] = d * (float)((int)(qs[i] >> 4) - 8);
}

QUANT_INLINE void quant_block_q4_1(const uint8_t *b, float *restrict y /* (32) */)
{
    const float d = quant_load_f16(b), m = quant_load_f16(b + 2);
    const uint8_t *qs = b + 4;
    for (int i = 0; i < 16; i++)
        y[i] = d * (float)(qs[i] & 15) + m;
    for (int i = 0; i < 16; i++)
        y[i + 16] = d * (float)(qs[i] >> 4) + m;
}

/* 1 << i, as a table: the high bit of element i of Q5_0 / Q5_1 is tested with
 * the mask quant_bit[i] rather than by shifting qh by i, since SSE2 has no
 * per-lane shifts and gcc then vectorises the loads of this table instead. */
static const uint32_t quant_bit[32] = {
    1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,
    1u << 8,  1u << 9,  1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15,
    1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21, 1u << 22, 1u << 23,
    1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31,
};

QUANT_INLINE void quant_block_q5_0(const uint8_t *b, float *restrict y /* (32) */)
{
    const float d = quant_load_f16(b);
    const uint32_t qh = quant_load_u32(b + 2);
    const uint8_t *qs = b + 6;
    for (int i = 0; i < 16; i++)
        y[i] = d * (float)((int)((qs[i] & 15u) | (uint32_t)((qh & quant_bit[i]) != 0) << 4) - 16);
    for (int i = 0; i < 16; i++)
        y[i + 16] = d * (float)((int)((qs[i] >> 4) | (uint32_t)((qh & quant_bit[i + 16]) != 0) << 4) - 16);
}

QUANT_INLINE void quant_block_q5_1(const uint8_t *b, float *restrict y /* (32) */)
{
    const float d = quant_load_f16(b), m = quant_load_f16(b + 2);
    const uint32_t qh = quant_load_u32(b + 4);
    const uint8_t *qs = b + 8;
    for (int i = 0; i < 16; i++)
        y[i] = d * (float)(int)((qs[i] & 15u) | (uint32_t)((qh & quant_bit[i]) != 0) << 4) + m;
    for (int i = 0; i < 16; i++)
        y[i + 16] = d * (float)(int)((qs[i] >> 4) | (uint32_t)((qh & quant_bit[i + 16]) != 0) << 4) + m;
}

QUANT_INLINE void quant_block_q8_0(const uint8_t *b, float *restrict y /* (32) */)
{
    const float d = quant_load_f16(b);
    const int8_t *qs = (const int8_t *)(b + 2);
    for (int i = 0; i < 32; i++)
        y[i] = (float)qs[i] * d;
}

QUANT_INLINE void quant_block_iq4_nl(const uint8_t *b, float *restrict y /* (32) */)
{
    const float d = quant_load_f16(b);
    const uint8_t *qs = b + 2;
    for (int i = 0; i < 16; i++)
        y[i] = d * quant_iq4_values_f[qs[i] & 15];
    for (int i = 0; i < 16; i++)
        y[i + 16] = d * quant_iq4_values_f[qs[i] >> 4];
}

/* Q2_K: element e = 128h + 32k + i takes bits 2k..2k+1 of qs[32h + i]; its
 * 16-element group e/16 has scale byte s: dl = d·(s & 15), ml = dmin·(s >> 4). */
QUANT_INLINE void quant_block_q2_k(const uint8_t *b, float *restrict y /* (256) */)
{
    const uint8_t *sc = b, *qs = b + 16;
    const float d = quant_load_f16(b + 80), dmin = quant_load_f16(b + 82);
    for (int h = 0; h < 2; h++) {
        for (int k = 0; k < 4; k++) {
            for (int g = 0; g < 2; g++) {
                const uint8_t s = sc[h * 8 + k * 2 + g];
                const float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
                const uint8_t *q = qs + h * 32 + g * 16;
                float *o = y + h * 128 + k * 32 + g * 16;
                for (int i = 0; i < 16; i++)
                    o[i] = dl * (float)((q[i] >> (2 * k)) & 3) - ml;
            }
        }
    }
}

/* Q3_K: 2 low bits as in Q2_K; the high bit of element e is bit e/32 of
 * hmask[e % 32], and q = low − 4 when that bit is 0. The 16 6-bit scales
 * (minus 32): low nibble from scales[s % 8] (>> 4 for s ≥ 8), high 2 bits from
 * scales[8 + s % 4] >> 2·(s / 4). */
QUANT_INLINE void quant_block_q3_k(const uint8_t *b, float *restrict y /* (256) */)
{
    const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
    const float d = quant_load_f16(b + 108);
    for (int h = 0; h < 2; h++) {
        for (int k = 0; k < 4; k++) {
            const int j = h * 4 + k; /* 32-element group: bit of hmask */
            for (int g = 0; g < 2; g++) {
                const int s = h * 8 + k * 2 + g;
                const int lo = (sc[s % 8] >> (4 * (s / 8))) & 15;
                const int hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
                const float dl = d * (float)((lo | hi << 4) - 32);
                const uint8_t *q = qs + h * 32 + g * 16, *m = hm + g * 16;
                float *o = y + h * 128 + k * 32 + g * 16;
                for (int i = 0; i < 16; i++) {
                    int v = (int)((q[i] >> (2 * k)) & 3) - (int)((((m[i] >> j) & 1) ^ 1) << 2);
                    o[i] = dl * (float)v;
                }
            }
        }
    }
}

/* Q4_K / Q5_K 6-bit scales and mins of the 8 sub-blocks, packed in 12 bytes:
 * j < 4: sc = s[j] & 63, mn = s[j+4] & 63;
 * j ≥ 4: sc = (s[j+4] & 15) | (s[j−4] >> 6) << 4, mn = (s[j+4] >> 4) | (s[j] >> 6) << 4. */
QUANT_INLINE void quant_k_scale_min(const uint8_t *s, int j, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Q4_K: sub-block 2c takes the low nibbles of qs[32c..32c+31], 2c+1 the high. */
QUANT_INLINE void quant_block_q4_k(const uint8_t *b, float *restrict y /* (256) */)
{
    const float d = quant_load_f16(b), dmin = quant_load_f16(b + 2);
    const uint8_t *sc = b + 4, *qs = b + 16;
    for (int c = 0; c < 4; c++) {
        int s0, m0, s1, m1;
        quant_k_scale_min(sc, 2 * c, &s0, &m0);
        quant_k_scale_min(sc, 2 * c + 1, &s1, &m1);
        const float d0 = d * (float)s0, dm0 = dmin * (float)m0;
        const float d1 = d * (float)s1, dm1 = dmin * (float)m1;
        const uint8_t *q = qs + 32 * c;
        float *o = y + 64 * c;
        for (int i = 0; i < 32; i++)
            o[i] = d0 * (float)(int)(q[i] & 15) - dm0;
        for (int i = 0; i < 32; i++)
            o[i + 32] = d1 * (float)(int)(q[i] >> 4) - dm1;
    }
}

/* Q5_K: Q4_K's nibbles plus bit j of qh[i] as bit 4 of element i of sub-block j. */
QUANT_INLINE void quant_block_q5_k(const uint8_t *b, float *restrict y /* (256) */)
{
    const float d = quant_load_f16(b), dmin = quant_load_f16(b + 2);
    const uint8_t *sc = b + 4, *qh = b + 16, *qs = b + 48;
    for (int c = 0; c < 4; c++) {
        int s0, m0, s1, m1;
        quant_k_scale_min(sc, 2 * c, &s0, &m0);
        quant_k_scale_min(sc, 2 * c + 1, &s1, &m1);
        const float d0 = d * (float)s0, dm0 = dmin * (float)m0;
        const float d1 = d * (float)s1, dm1 = dmin * (float)m1;
        const uint8_t *q = qs + 32 * c;
        float *o = y + 64 * c;
        for (int i = 0; i < 32; i++)
            o[i] = d0 * (float)(int)((q[i] & 15u) | ((qh[i] >> (2 * c)) & 1u) << 4) - dm0;
        for (int i = 0; i < 32; i++)
            o[i + 32] = d1 * (float)(int)((q[i] >> 4) | ((qh[i] >> (2 * c + 1)) & 1u) << 4) - dm1;
    }
}

/* Q6_K: element e = 128h + 32k + i: low 4 bits from ql[64h + 32(k & 1) + i]
 * (>> 4 when k ≥ 2), high 2 bits from qh[32h + i] >> 2k; q − 32 times
 * d·scales[e / 16]. */
QUANT_INLINE void quant_block_q6_k(const uint8_t *b, float *restrict y /* (256) */)
{
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    const float d = quant_load_f16(b + 208);
    for (int h = 0; h < 2; h++) {
        for (int k = 0; k < 4; k++) {
            for (int g = 0; g < 2; g++) {
                const float dl = d * (float)sc[h * 8 + k * 2 + g];
                const uint8_t *l = ql + h * 64 + (k & 1) * 32 + g * 16, *hh = qh + h * 32 + g * 16;
                float *o = y + h * 128 + k * 32 + g * 16;
                for (int i = 0; i < 16; i++) {
                    int v = (int)(((l[i] >> (4 * (k >> 1))) & 15) | ((hh[i] >> (2 * k)) & 3) << 4) - 32;
                    o[i] = dl * (float)v;
                }
            }
        }
    }
}

/* IQ4_XS: sub-block j has scale ((scales_l[j/2] >> 4(j%2)) & 15 | ((scales_h >> 2j) & 3) << 4) − 32
 * and 16 bytes qs[16j..]: low nibbles are its elements 0..15, high ones 16..31. */
QUANT_INLINE void quant_block_iq4_xs(const uint8_t *b, float *restrict y /* (256) */)
{
    const float d = quant_load_f16(b);
    const uint32_t sh = (uint32_t)b[2] | (uint32_t)b[3] << 8;
    const uint8_t *sl = b + 4, *qs = b + 8;
    for (int j = 0; j < 8; j++) {
        const int ls = (sl[j / 2] >> (4 * (j % 2))) & 15;
        const int hs = (int)((sh >> (2 * j)) & 3);
        const float dl = d * (float)((ls | hs << 4) - 32);
        const uint8_t *q = qs + 16 * j;
        float *o = y + 32 * j;
        for (int i = 0; i < 16; i++)
            o[i] = dl * quant_iq4_values_f[q[i] & 15];
        for (int i = 0; i < 16; i++)
            o[i + 16] = dl * quant_iq4_values_f[q[i] >> 4];
    }
}


#if defined(__x86_64__) || defined(__i386__)
/* dequant_avx2.c: nb whole blocks from s expanded into y, the same bits as the
 * quant_block_* above; to be called only when the CPU has AVX2. */
void quant_deq_q4_0_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q4_1_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q8_0_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q4_k_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q5_k_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q6_k_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_iq4_nl_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q5_0_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q5_1_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q2_k_avx2(const uint8_t *s, float *y, uint64_t nb);
void quant_deq_q3_k_avx2(const uint8_t *s, float *y, uint64_t nb);
/* Σ of nb blocks from s times x, quant.h's summation order (the bits of quant_dot_row_f32) */
float quant_dot_q4_0_avx2(const uint8_t *s, const float *x, uint64_t nb);
float quant_dot_q4_1_avx2(const uint8_t *s, const float *x, uint64_t nb);
float quant_dot_q8_0_avx2(const uint8_t *s, const float *x, uint64_t nb);
float quant_dot_q4_k_avx2(const uint8_t *s, const float *x, uint64_t nb);
float quant_dot_q6_k_avx2(const uint8_t *s, const float *x, uint64_t nb);
float quant_dot_q5_k_avx2(const uint8_t *s, const float *x, uint64_t nb);
float quant_dot_iq4_xs_avx2(const uint8_t *s, const float *x, uint64_t nb);
void quant_deq_iq4_xs_avx2(const uint8_t *s, float *y, uint64_t nb);
#endif

#endif
