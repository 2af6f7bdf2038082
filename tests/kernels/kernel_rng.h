/* tests/kernels/kernel_rng.h — the random inputs the GPU kernel tests share:
 * one xorshift64 stream per test program (each defines KERNEL_RNG_SEED before
 * including this, so its inputs stay the ones its figures were measured on),
 * uniform floats in [-1, 1) and a little-endian u16 store for building
 * quantized blocks byte by byte. Header-only: each kernel_*.c is its own
 * program. */
#ifndef MEMRA_TESTS_KERNEL_RNG_H
#define MEMRA_TESTS_KERNEL_RNG_H

#include <stdint.h>

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

#endif
