/* tests/kernels/kernel_rng.h — the random inputs the GPU kernel tests share:
 * one xorshift64 stream per test program (each defines KERNEL_RNG_SEED before
 * including this, so its inputs stay the ones its figures were measured on),
 * uniform floats in [-1, 1), a little-endian u16 store, and random valid
 * weight data of any type the kernels read (fill_random: finite 16-bit
 * floats, FP8 without NaN codes, GGUF blocks with small finite f16 scales).
 * Header-only: each kernel_*.c is its own program. */
#ifndef MEMRA_TESTS_KERNEL_RNG_H
#define MEMRA_TESTS_KERNEL_RNG_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/log.h"
#include "quant/quant.h"

#ifndef KERNEL_RNG_SEED
#error "define KERNEL_RNG_SEED before including kernel_rng.h"
#endif

static uint64_t g_rng = KERNEL_RNG_SEED;

static inline uint64_t rng_u64(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static inline float rng_unit(void) /* [-1, 1) */
{
    return (float)((double)(rng_u64() >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static inline void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* A random finite f16 scale of magnitude 2^-7 .. 2^-6, random sign. */
static inline uint16_t rng_scale_f16(void)
{
    float v = (0.5f + 0.5f * fabsf(rng_unit())) * 0x1p-6f;
    return quant_f32_to_f16(rng_u64() & 1 ? -v : v);
}

/* Offsets of the f16 fields inside one GGUF block of t (-1 ends the list). */
static inline const int *f16_fields(enum dtype t)
{
    static const int d0[] = {0, -1}, d02[] = {0, 2, -1}, d208[] = {208, -1}, d80[] = {80, 82, -1}, d108[] = {108, -1};
    switch (t) {
    case DTYPE_Q8_0: case DTYPE_Q4_0: case DTYPE_IQ4_XS: case DTYPE_Q5_0: case DTYPE_IQ4_NL: return d0;
    case DTYPE_Q4_1: case DTYPE_Q4_K: case DTYPE_Q5_K: case DTYPE_Q5_1: return d02;
    case DTYPE_Q6_K: return d208;
    case DTYPE_Q2_K: return d80;
    case DTYPE_Q3_K: return d108;
    default: die("kernel_rng: no f16 fields known for %s", dtype_name(t));
    }
}

/* Fill `bytes` (a whole number of blocks / elements of t) with random valid data. */
static inline void fill_random(enum dtype t, uint8_t *w, size_t bytes)
{
    if (t == DTYPE_F32) {
        for (size_t k = 0; k + 4 <= bytes; k += 4) {
            const float v = rng_unit();
            memcpy(w + k, &v, 4);
        }
        return;
    }
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t r = rng_u64();
        memcpy(w + i, &r, 8);
    }
    for (; i < bytes; i++)
        w[i] = (uint8_t)rng_u64();
    if (t == DTYPE_BF16 || t == DTYPE_F16) { /* keep the exponent small and finite: |v| in [2^-8, 2) */
        for (size_t k = 0; k + 1 < bytes; k += 2) {
            uint16_t v = (uint16_t)(w[k] | w[k + 1] << 8);
            if (t == DTYPE_BF16)
                v = (uint16_t)((v & 0x807Fu) | (uint16_t)(119 + (v >> 7 & 7)) << 7);
            else
                v = (uint16_t)((v & 0x83FFu) | (uint16_t)(7 + (v >> 10 & 7)) << 10);
            put_u16(w + k, v);
        }
    } else if (t == DTYPE_F8_E4M3) {
        for (size_t k = 0; k < bytes; k++)
            if ((w[k] & 0x7F) == 0x7F) /* NaN code */
                w[k] ^= 1;
    } else {
        const int *f = f16_fields(t);
        const size_t bs = dtype_info(t)->type_size;
        for (size_t b = 0; b + bs <= bytes; b += bs)
            for (int k = 0; f[k] >= 0; k++)
                put_u16(w + b + f[k], rng_scale_f16());
    }
}

/* FP8 E4M3 weights with a float32 scale a 128 × 128 block (cuda_gemv_bs, cuda_gemm_run_bs): *w gets rows × n
 * random e4m3 values, *bs the ⌈rows/128⌉ × ⌈n/128⌉ scales in [2^-10, 2^-7), both malloc'd (the caller frees
 * them). Returns the number of scales. */
static inline uint64_t fill_random_fp8_block(uint64_t rows, uint64_t n, uint8_t **w, float **bs)
{
    const uint64_t nbs = (rows + 127) / 128 * ((n + 127) / 128);
    *w = malloc(rows * n);
    *bs = malloc(4 * nbs);
    if (!*w || !*bs)
        die("kernel_rng: out of memory for a %" PRIu64 "x%" PRIu64 " FP8 weight", rows, n);
    fill_random(DTYPE_F8_E4M3, *w, rows * n);
    for (uint64_t i = 0; i < nbs; i++)
        (*bs)[i] = (0.25f + fabsf(rng_unit())) * 0x1p-8f;
    return nbs;
}

/* Bytes of one row of n elements of t (aborts on a shape t cannot hold). */
static inline uint64_t row_bytes_of(enum dtype t, uint64_t n)
{
    uint64_t rb = 0;
    if (dtype_row_bytes(t, n, &rb) != 0)
        die("row bytes of %s n=%" PRIu64, dtype_name(t), n);
    return rb;
}

#endif
