/* quant/dequant_avx2.c — AVX2 forms of the block types a CPU decode spends its
 * time expanding (Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K), 8 floats a register.
 *
 * The compiler vectorises the portable expanders of quant_internal.h only 4
 * floats wide (their loops mix bytes and floats, and a 16-byte vector of bytes
 * sets the width), so a Q4_1 row expanded at ~4 GB/s of weights on one core;
 * these run the same per-element formula — the integer made exactly, converted,
 * then multiplied and added with one rounding each (never a fused multiply-add)
 * — so they give the same bits. tests/py/test_quant_reference.py holds them to
 * gguf-py's bits (they run at the avx2 and avx512 levels, core/cpu_simd.h).
 * Only quant_dequantize_row calls them, after checking the CPU has AVX2.
 */
#include "quant/quant_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

/* 8 bytes (the low 8 of v) → 8 floats, unsigned / signed */
AVX2 static inline __m256 u8_f32(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}

AVX2 static inline __m256 i8_f32(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

/* y[0..16) = a·f(q[0..16)) + c for the 16 byte values of q (elementwise:
 * multiply, then add, rounded apart); signed bytes when sgn. */
AVX2 static inline void put16(float *y, __m128i q, __m256 a, int add, __m256 c, int sgn)
{
    __m256 f0 = sgn ? i8_f32(q) : u8_f32(q);
    __m256 f1 = sgn ? i8_f32(_mm_srli_si128(q, 8)) : u8_f32(_mm_srli_si128(q, 8));
    f0 = _mm256_mul_ps(a, f0);
    f1 = _mm256_mul_ps(a, f1);
    if (add) {
        f0 = _mm256_add_ps(f0, c);
        f1 = _mm256_add_ps(f1, c);
    }
    _mm256_storeu_ps(y, f0);
    _mm256_storeu_ps(y + 8, f1);
}

/* y[0..16) = a·f(q) − c (the K types' min term) */
AVX2 static inline void put16_sub(float *y, __m128i q, __m256 a, __m256 c)
{
    __m256 f0 = _mm256_mul_ps(a, u8_f32(q));
    __m256 f1 = _mm256_mul_ps(a, u8_f32(_mm_srli_si128(q, 8)));
    _mm256_storeu_ps(y, _mm256_sub_ps(f0, c));
    _mm256_storeu_ps(y + 8, _mm256_sub_ps(f1, c));
}

AVX2 void quant_deq_q4_0_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    const __m256 zero = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 18, y += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s));
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 2));
        /* (q & 15) − 8 and (q >> 4) − 8 as signed bytes: exact, −8..7 */
        put16(y, _mm_sub_epi8(_mm_and_si128(q, m4), eight), d, 0, zero, 1);
        put16(y + 16, _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight), d, 0, zero, 1);
    }
}

AVX2 void quant_deq_q4_1_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15);
    for (uint64_t b = 0; b < nb; b++, s += 20, y += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s)), m = _mm256_set1_ps(quant_load_f16(s + 2));
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 4));
        put16(y, _mm_and_si128(q, m4), d, 1, m, 0);
        put16(y + 16, _mm_and_si128(_mm_srli_epi16(q, 4), m4), d, 1, m, 0);
    }
}

/* Q8_0: the reference computes (float)q · d; the product commutes exactly */
AVX2 void quant_deq_q8_0_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m256 zero = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 34, y += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s));
        put16(y, _mm_loadu_si128((const __m128i *)(const void *)(s + 2)), d, 0, zero, 1);
        put16(y + 16, _mm_loadu_si128((const __m128i *)(const void *)(s + 18)), d, 0, zero, 1);
    }
}

/* The scales and mins of sub-blocks 2c and 2c + 1 of a Q4_K / Q5_K block
 * (packed scales at sc), times d and dmin, as quant_block_q4_k computes them */
AVX2 static inline void k_pair_scales(const uint8_t *sc, int c, float d, float dmin, __m256 *d0, __m256 *dm0,
                                      __m256 *d1, __m256 *dm1)
{
    int s0, m0, s1, m1;
    quant_k_scale_min(sc, 2 * c, &s0, &m0);
    quant_k_scale_min(sc, 2 * c + 1, &s1, &m1);
    *d0 = _mm256_set1_ps(d * (float)s0), *dm0 = _mm256_set1_ps(dmin * (float)m0);
    *d1 = _mm256_set1_ps(d * (float)s1), *dm1 = _mm256_set1_ps(dmin * (float)m1);
}

/* Q4_K / Q5_K: sub-block pair c of 64 elements, scales as quant_block_q4_k */
AVX2 void quant_deq_q4_k_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15);
    for (uint64_t b = 0; b < nb; b++, s += 144, y += 256) {
        const float d = quant_load_f16(s), dmin = quant_load_f16(s + 2);
        for (int c = 0; c < 4; c++) {
            __m256 d0, dm0, d1, dm1;
            k_pair_scales(s + 4, c, d, dmin, &d0, &dm0, &d1, &dm1);
            const uint8_t *q = s + 16 + 32 * c;
            float *o = y + 64 * c;
            for (int h = 0; h < 32; h += 16) {
                const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(q + h));
                put16_sub(o + h, _mm_and_si128(v, m4), d0, dm0);
                put16_sub(o + 32 + h, _mm_and_si128(_mm_srli_epi16(v, 4), m4), d1, dm1);
            }
        }
    }
}

AVX2 void quant_deq_q5_k_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), one = _mm_set1_epi8(1);
    for (uint64_t b = 0; b < nb; b++, s += 176, y += 256) {
        const float d = quant_load_f16(s), dmin = quant_load_f16(s + 2);
        const uint8_t *qh = s + 16;
        for (int c = 0; c < 4; c++) {
            __m256 d0, dm0, d1, dm1;
            k_pair_scales(s + 4, c, d, dmin, &d0, &dm0, &d1, &dm1);
            const uint8_t *q = s + 48 + 32 * c;
            float *o = y + 64 * c;
            const __m128i sh0 = _mm_cvtsi32_si128(2 * c), sh1 = _mm_cvtsi32_si128(2 * c + 1);
            for (int h = 0; h < 32; h += 16) {
                const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(q + h));
                const __m128i hb = _mm_loadu_si128((const __m128i *)(const void *)(qh + h));
                /* bit 2c (2c+1) of qh[i] → bit 4: shifting 16-bit lanes right keeps each byte's own
                 * bit after the mask, as no count reaches 8 */
                const __m128i b0 = _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(hb, sh0), one), 4);
                const __m128i b1 = _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(hb, sh1), one), 4);
                put16_sub(o + h, _mm_or_si128(_mm_and_si128(v, m4), b0), d0, dm0);
                put16_sub(o + 32 + h, _mm_or_si128(_mm_and_si128(_mm_srli_epi16(v, 4), m4), b1), d1, dm1);
            }
        }
    }
}

AVX2 void quant_deq_q6_k_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), m2 = _mm_set1_epi8(3), k32 = _mm_set1_epi8(32);
    const __m256 zero = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 210, y += 256) {
        const uint8_t *ql = s, *qh = s + 128;
        const int8_t *sc = (const int8_t *)(const void *)(s + 192);
        const float d = quant_load_f16(s + 208);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++) {
                const __m128i shl = _mm_cvtsi32_si128(4 * (k >> 1)), shh = _mm_cvtsi32_si128(2 * k);
                for (int g = 0; g < 2; g++) {
                    const __m256 dl = _mm256_set1_ps(d * (float)sc[h * 8 + k * 2 + g]);
                    const __m128i l = _mm_loadu_si128((const __m128i *)(const void *)(ql + h * 64 + (k & 1) * 32 + g * 16));
                    const __m128i hh = _mm_loadu_si128((const __m128i *)(const void *)(qh + h * 32 + g * 16));
                    /* low 4 bits | high 2 bits << 4, minus 32: −32..31 as signed bytes */
                    const __m128i lo = _mm_and_si128(_mm_srl_epi16(l, shl), m4);
                    const __m128i hi = _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(hh, shh), m2), 4);
                    put16(y + h * 128 + k * 32 + g * 16, _mm_sub_epi8(_mm_or_si128(lo, hi), k32), dl, 0, zero, 1);
                }
            }
    }
}
/* 16 bits of v (bit i for byte i) → 16 bytes of 16 where the bit is set: Q5's fifth bit */
AVX2 static inline __m128i bit4_bytes(uint32_t v)
{
    const __m128i bm = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    __m128i x = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)(v & 0xffffu)),
                                 _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    x = _mm_cmpeq_epi8(_mm_and_si128(x, bm), bm);
    return _mm_and_si128(x, _mm_set1_epi8(16));
}

AVX2 void quant_deq_q5_0_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), k16 = _mm_set1_epi8(16);
    const __m256 zero = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 22, y += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s));
        const uint32_t qh = quant_load_u32(s + 2);
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 6));
        /* ((q & 15) | bit << 4) − 16: −16..15 as signed bytes */
        const __m128i lo = _mm_or_si128(_mm_and_si128(q, m4), bit4_bytes(qh));
        const __m128i hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), m4), bit4_bytes(qh >> 16));
        put16(y, _mm_sub_epi8(lo, k16), d, 0, zero, 1);
        put16(y + 16, _mm_sub_epi8(hi, k16), d, 0, zero, 1);
    }
}

AVX2 void quant_deq_q5_1_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15);
    for (uint64_t b = 0; b < nb; b++, s += 24, y += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s)), m = _mm256_set1_ps(quant_load_f16(s + 2));
        const uint32_t qh = quant_load_u32(s + 4);
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 8));
        put16(y, _mm_or_si128(_mm_and_si128(q, m4), bit4_bytes(qh)), d, 1, m, 0);
        put16(y + 16, _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), m4), bit4_bytes(qh >> 16)), d, 1, m, 0);
    }
}

/* Q2_K: element 128h + 32k + 16g + i is bits 2k..2k+1 of qs[32h + 16g + i] */
AVX2 void quant_deq_q2_k_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m2 = _mm_set1_epi8(3);
    for (uint64_t b = 0; b < nb; b++, s += 84, y += 256) {
        const float d = quant_load_f16(s + 80), dmin = quant_load_f16(s + 82);
        for (int h = 0; h < 2; h++)
            for (int g = 0; g < 2; g++) {
                const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 + h * 32 + g * 16));
                for (int k = 0; k < 4; k++) {
                    const uint8_t sc = s[h * 8 + k * 2 + g];
                    const __m256 dl = _mm256_set1_ps(d * (float)(sc & 15)), ml = _mm256_set1_ps(dmin * (float)(sc >> 4));
                    const __m128i v = _mm_and_si128(_mm_srl_epi16(q, _mm_cvtsi32_si128(2 * k)), m2);
                    put16_sub(y + h * 128 + k * 32 + g * 16, v, dl, ml);
                }
            }
    }
}

/* Q3_K: Q2_K's two bits, minus 4 where bit j = 4h + k of hmask[16g + i] is clear */
AVX2 void quant_deq_q3_k_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m2 = _mm_set1_epi8(3), one = _mm_set1_epi8(1);
    const __m256 zero = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 110, y += 256) {
        const uint8_t *sc = s + 96;
        const float d = quant_load_f16(s + 108);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++) {
                const int j = h * 4 + k;
                for (int g = 0; g < 2; g++) {
                    const int si = h * 8 + k * 2 + g;
                    const int lo = (sc[si % 8] >> (4 * (si / 8))) & 15, hi = (sc[8 + si % 4] >> (2 * (si / 4))) & 3;
                    const __m256 dl = _mm256_set1_ps(d * (float)((lo | hi << 4) - 32));
                    const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 32 + h * 32 + g * 16));
                    const __m128i m = _mm_loadu_si128((const __m128i *)(const void *)(s + g * 16));
                    const __m128i v = _mm_and_si128(_mm_srl_epi16(q, _mm_cvtsi32_si128(2 * k)), m2);
                    const __m128i hb = _mm_and_si128(_mm_srl_epi16(m, _mm_cvtsi32_si128(j)), one);
                    /* −4..3 as signed bytes */
                    put16(y + h * 128 + k * 32 + g * 16, _mm_sub_epi8(v, _mm_slli_epi16(_mm_xor_si128(hb, one), 2)), dl,
                          0, zero, 1);
                }
            }
    }
}

/* IQ4_NL / IQ4_XS: the codebook's 16 values are small integers, so a byte
 * shuffle looks them up and the float is exact; dl · value as the reference */
AVX2 static inline __m128i iq4_table(void)
{
    return _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}

AVX2 void quant_deq_iq4_nl_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), tab = iq4_table();
    const __m256 zero = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 18, y += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s));
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 2));
        put16(y, _mm_shuffle_epi8(tab, _mm_and_si128(q, m4)), d, 0, zero, 1);
        put16(y + 16, _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(q, 4), m4)), d, 0, zero, 1);
    }
}

/* IQ4_XS sub-block j's scale, d · (6-bit scale − 32), as quant_block_iq4_xs */
AVX2 static inline __m256 iq4xs_scale(const uint8_t *s, uint32_t sh, int j, float d)
{
    const int ls = (s[4 + j / 2] >> (4 * (j % 2))) & 15;
    const int hs = (int)((sh >> (2 * j)) & 3);
    return _mm256_set1_ps(d * (float)((ls | hs << 4) - 32));
}

AVX2 void quant_deq_iq4_xs_avx2(const uint8_t *s, float *y, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), tab = iq4_table();
    const __m256 zero = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 136, y += 256) {
        const float d = quant_load_f16(s);
        const uint32_t sh = (uint32_t)s[2] | (uint32_t)s[3] << 8; /* scales_h */
        for (int j = 0; j < 8; j++) {
            const __m256 dl = iq4xs_scale(s, sh, j, d);
            const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 8 + 16 * j));
            put16(y + 32 * j, _mm_shuffle_epi8(tab, _mm_and_si128(q, m4)), dl, 0, zero, 1);
            put16(y + 32 * j + 16, _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(q, 4), m4)), dl, 0, zero, 1);
        }
    }
}

/* ---- fused dequantize + dot (the decode of one token) --------------------
 * Σ w·x in quant.h's order — element i in lane i mod 16 (elements 0-7 and
 * 16-23 of a block in the low 8 lanes, 8-15 and 24-31 in the high ones), each
 * lane adding w·x in element order, then the pairwise fold — without writing
 * the expanded row: the same bits as quant_dequantize_row and an f32 dot. */
AVX2 static inline void dot_acc4(__m256 *lo, __m256 *hi, __m256 f0, __m256 f1, __m256 f2, __m256 f3, const float *x)
{
    *lo = _mm256_add_ps(*lo, _mm256_mul_ps(f0, _mm256_loadu_ps(x)));
    *hi = _mm256_add_ps(*hi, _mm256_mul_ps(f1, _mm256_loadu_ps(x + 8)));
    *lo = _mm256_add_ps(*lo, _mm256_mul_ps(f2, _mm256_loadu_ps(x + 16)));
    *hi = _mm256_add_ps(*hi, _mm256_mul_ps(f3, _mm256_loadu_ps(x + 24)));
}

/* acc[l] += acc[l + 8], acc[l] += acc[l + 4], then (acc[0] + acc[2]) + (acc[1] + acc[3]) */
AVX2 static inline float dot_fold8(__m256 lo, __m256 hi)
{
    const __m256 s8 = _mm256_add_ps(lo, hi);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    float q[4];
    _mm_storeu_ps(q, s4);
    return (q[0] + q[2]) + (q[1] + q[3]);
}

AVX2 float quant_dot_q4_0_avx2(const uint8_t *s, const float *x, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 18, x += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s));
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 2));
        const __m128i l = _mm_sub_epi8(_mm_and_si128(q, m4), eight);
        const __m128i h = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);
        dot_acc4(&lo, &hi, _mm256_mul_ps(d, i8_f32(l)), _mm256_mul_ps(d, i8_f32(_mm_srli_si128(l, 8))),
                 _mm256_mul_ps(d, i8_f32(h)), _mm256_mul_ps(d, i8_f32(_mm_srli_si128(h, 8))), x);
    }
    return dot_fold8(lo, hi);
}

AVX2 float quant_dot_q4_1_avx2(const uint8_t *s, const float *x, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 20, x += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s)), m = _mm256_set1_ps(quant_load_f16(s + 2));
        const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 4));
        const __m128i l = _mm_and_si128(q, m4), h = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
        dot_acc4(&lo, &hi, _mm256_add_ps(_mm256_mul_ps(d, u8_f32(l)), m),
                 _mm256_add_ps(_mm256_mul_ps(d, u8_f32(_mm_srli_si128(l, 8))), m),
                 _mm256_add_ps(_mm256_mul_ps(d, u8_f32(h)), m),
                 _mm256_add_ps(_mm256_mul_ps(d, u8_f32(_mm_srli_si128(h, 8))), m), x);
    }
    return dot_fold8(lo, hi);
}

AVX2 float quant_dot_q8_0_avx2(const uint8_t *s, const float *x, uint64_t nb)
{
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 34, x += 32) {
        const __m256 d = _mm256_set1_ps(quant_load_f16(s));
        const __m128i q0 = _mm_loadu_si128((const __m128i *)(const void *)(s + 2));
        const __m128i q1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 18));
        dot_acc4(&lo, &hi, _mm256_mul_ps(d, i8_f32(q0)), _mm256_mul_ps(d, i8_f32(_mm_srli_si128(q0, 8))),
                 _mm256_mul_ps(d, i8_f32(q1)), _mm256_mul_ps(d, i8_f32(_mm_srli_si128(q1, 8))), x);
    }
    return dot_fold8(lo, hi);
}
/* Q4_K: a sub-block pair c is 64 consecutive elements, the low nibbles of
 * qs[32c..32c+31] (scale d0, min dm0) then their high nibbles (d1, dm1) */
AVX2 static inline __m256 k_val(__m128i q, __m256 d, __m256 dm)
{
    return _mm256_sub_ps(_mm256_mul_ps(d, u8_f32(q)), dm);
}

/* The 32 elements of a K sub-block, q's 16 + 16 values (q0, q1) with scale d and min dm, into lo / hi */
AVX2 static inline void k_dot32(__m256 *lo, __m256 *hi, __m128i q0, __m128i q1, __m256 d, __m256 dm, const float *x)
{
    dot_acc4(lo, hi, k_val(q0, d, dm), k_val(_mm_srli_si128(q0, 8), d, dm), k_val(q1, d, dm),
             k_val(_mm_srli_si128(q1, 8), d, dm), x);
}

AVX2 float quant_dot_q4_k_avx2(const uint8_t *s, const float *x, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 144, x += 256) {
        const float d = quant_load_f16(s), dmin = quant_load_f16(s + 2);
        for (int c = 0; c < 4; c++) {
            __m256 d0, dm0, d1, dm1;
            k_pair_scales(s + 4, c, d, dmin, &d0, &dm0, &d1, &dm1);
            const __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 + 32 * c));
            const __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 + 32 * c + 16));
            const __m128i l0 = _mm_and_si128(v0, m4), l1 = _mm_and_si128(v1, m4);
            const __m128i h0 = _mm_and_si128(_mm_srli_epi16(v0, 4), m4), h1 = _mm_and_si128(_mm_srli_epi16(v1, 4), m4);
            k_dot32(&lo, &hi, l0, l1, d0, dm0, x + 64 * c);
            k_dot32(&lo, &hi, h0, h1, d1, dm1, x + 64 * c + 32);
        }
    }
    return dot_fold8(lo, hi);
}

/* Q5_K: Q4_K's order, each nibble with its fifth bit from qh (bit 2c / 2c + 1 of qh[i]) */
AVX2 float quant_dot_q5_k_avx2(const uint8_t *s, const float *x, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), one = _mm_set1_epi8(1);
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 176, x += 256) {
        const float d = quant_load_f16(s), dmin = quant_load_f16(s + 2);
        for (int c = 0; c < 4; c++) {
            __m256 d0, dm0, d1, dm1;
            k_pair_scales(s + 4, c, d, dmin, &d0, &dm0, &d1, &dm1);
            const __m128i sh0 = _mm_cvtsi32_si128(2 * c), sh1 = _mm_cvtsi32_si128(2 * c + 1);
            __m128i l[2], h[2];
            for (int k = 0; k < 2; k++) {
                const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + 48 + 32 * c + 16 * k));
                const __m128i hb = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 + 16 * k));
                l[k] = _mm_or_si128(_mm_and_si128(v, m4), _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(hb, sh0), one), 4));
                h[k] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(v, 4), m4),
                                    _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(hb, sh1), one), 4));
            }
            k_dot32(&lo, &hi, l[0], l[1], d0, dm0, x + 64 * c);
            k_dot32(&lo, &hi, h[0], h[1], d1, dm1, x + 64 * c + 32);
        }
    }
    return dot_fold8(lo, hi);
}

/* IQ4_XS: sub-block j is 32 consecutive elements, the codebook values of the
 * low then the high nibbles of qs[16j..16j+15], times its scale */
AVX2 float quant_dot_iq4_xs_avx2(const uint8_t *s, const float *x, uint64_t nb)
{
    const __m128i m4 = _mm_set1_epi8(15), tab = iq4_table();
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 136, x += 256) {
        const float d = quant_load_f16(s);
        const uint32_t sh = (uint32_t)s[2] | (uint32_t)s[3] << 8; /* scales_h */
        for (int j = 0; j < 8; j++) {
            const __m256 dl = iq4xs_scale(s, sh, j, d);
            const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(s + 8 + 16 * j));
            const __m128i l = _mm_shuffle_epi8(tab, _mm_and_si128(q, m4));
            const __m128i h = _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
            dot_acc4(&lo, &hi, _mm256_mul_ps(dl, i8_f32(l)), _mm256_mul_ps(dl, i8_f32(_mm_srli_si128(l, 8))),
                     _mm256_mul_ps(dl, i8_f32(h)), _mm256_mul_ps(dl, i8_f32(_mm_srli_si128(h, 8))), x + 32 * j);
        }
    }
    return dot_fold8(lo, hi);
}

/* Q6_K: for each (h, k) the 32 elements 128h + 32k + [0, 32), two halves of 16 with their own scale */
AVX2 static inline __m128i q6_bytes(const uint8_t *ql, const uint8_t *qh, __m128i shl, __m128i shh)
{
    const __m128i l = _mm_loadu_si128((const __m128i *)(const void *)ql);
    const __m128i hh = _mm_loadu_si128((const __m128i *)(const void *)qh);
    const __m128i lo = _mm_and_si128(_mm_srl_epi16(l, shl), _mm_set1_epi8(15));
    const __m128i hi = _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(hh, shh), _mm_set1_epi8(3)), 4);
    return _mm_sub_epi8(_mm_or_si128(lo, hi), _mm_set1_epi8(32));
}

AVX2 float quant_dot_q6_k_avx2(const uint8_t *s, const float *x, uint64_t nb)
{
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (uint64_t b = 0; b < nb; b++, s += 210, x += 256) {
        const int8_t *sc = (const int8_t *)(const void *)(s + 192);
        const float d = quant_load_f16(s + 208);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++) {
                const __m128i shl = _mm_cvtsi32_si128(4 * (k >> 1)), shh = _mm_cvtsi32_si128(2 * k);
                const uint8_t *ql = s + h * 64 + (k & 1) * 32, *qh = s + 128 + h * 32;
                const __m256 dl0 = _mm256_set1_ps(d * (float)sc[h * 8 + k * 2]);
                const __m256 dl1 = _mm256_set1_ps(d * (float)sc[h * 8 + k * 2 + 1]);
                const __m128i v0 = q6_bytes(ql, qh, shl, shh), v1 = q6_bytes(ql + 16, qh + 16, shl, shh);
                dot_acc4(&lo, &hi, _mm256_mul_ps(dl0, i8_f32(v0)), _mm256_mul_ps(dl0, i8_f32(_mm_srli_si128(v0, 8))),
                         _mm256_mul_ps(dl1, i8_f32(v1)), _mm256_mul_ps(dl1, i8_f32(_mm_srli_si128(v1, 8))),
                         x + h * 128 + k * 32);
            }
    }
    return dot_fold8(lo, hi);
}
#else
typedef int quant_dequant_avx2_empty; /* ISO C: a translation unit is not empty */
#endif
