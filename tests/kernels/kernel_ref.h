/* tests/kernels/kernel_ref.h — the double-precision reference the GEMV and GEMM checks compare against: each row
 * of a weight dequantized by the CPU (quant_dequantize_row, bit-exact with gguf-py), with bs set its 128 × 128
 * block scales applied as the f32 path expands them (e4m3 · s rounded once), dotted with each vector in double and
 * multiplied by the tensor scale. Header-only, after kernel_rng.h (row_bytes_of). */
#ifndef MEMRA_TESTS_KERNEL_REF_H
#define MEMRA_TESTS_KERNEL_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/dtype.h"
#include "core/log.h"
#include "quant/quant.h"

/* Row r of an (rows, n) matrix, dequantized, times its 128 × 128 block scales bs ((rows + 127) / 128 block rows of
 * (n + 127) / 128 f32): the f32 path's expansion (e4m3 · s rounded once). */
static inline void kernel_ref_scale_row(float *row, const float *bs, uint64_t r, uint64_t n)
{
    const uint64_t nbc = (n + 127) / 128;
    for (uint64_t i = 0; i < n; i++)
        row[i] *= bs[(r / 128) * nbc + i / 128];
}

/* Over rows × nvec outputs y (nvec, rows): the largest |ref| and |y − ref| of the finite outputs, and how many
 * are not finite (added to *bad). */
static inline void kernel_ref_compare(enum dtype t, const uint8_t *w, const float *bs, uint64_t rows, uint64_t n,
                                      const float *x, uint32_t nvec, float scale, const float *y, double *maxref,
                                      double *maxdiff, int *bad)
{
    const uint64_t rb = row_bytes_of(t, n);
    float *row = malloc(sizeof(float) * n);
    MEMRA_ASSERT(row);
    *maxref = 0, *maxdiff = 0;
    for (uint64_t r = 0; r < rows; r++) {
        MEMRA_ASSERT(quant_dequantize_row(t, w + r * rb, row, n) == 0);
        if (bs)
            kernel_ref_scale_row(row, bs, r, n);
        for (uint32_t b = 0; b < nvec; b++) {
            double s = 0;
            for (uint64_t i = 0; i < n; i++)
                s += (double)row[i] * (double)x[b * n + i];
            s *= scale;
            *maxref = fmax(*maxref, fabs(s));
            const double got = y[b * rows + r];
            if (!isfinite(got))
                (*bad)++;
            else
                *maxdiff = fmax(*maxdiff, fabs(got - s));
        }
    }
    free(row);
}

#endif
