/* backend/cpu/cpu_dot.c — the f32 dot products every CPU matmul and attention
 * score is made of: one dot, and four rows against one vector at once.
 *
 * The summation order is part of the CPU backend's contract (cpu_ops.c: batch
 * invariance; the GPU's comparisons are against these bits): element i goes to
 * lane i mod 16, each lane adds its products in order (one rounding for the
 * multiply, one for the add — never a fused multiply-add, -ffp-contract=off),
 * then the 16 lanes fold pairwise (8, 4, 2, 1). cpu_dot4_f32 follows that order
 * for each of its four rows, so it gives exactly cpu_dot_f32's four results; it
 * is faster because one dot's lane sums form two dependent add chains (latency
 * bound: ~3 cycles per 16 products), while four rows make eight independent
 * chains and share each load of the vector.
 *
 * The 16 lanes are two GCC vectors of 8 floats (one register each with AVX2 or
 * AVX-512) at the wide levels and four of 4 at the baseline (SSE2, NEON); each
 * function is compiled for every level and picked by cpu_simd_level()
 * (core/cpu_simd.h), and every level computes the same lane-wise IEEE
 * operations, so the same bits (tests/unit/test_backend_cpu_dot.c runs each
 * level against a scalar model). A one-token matmul on a GGUF type mostly runs
 * src/quant's fused dots instead (cpu_ops.c), which keep this order too.
 */
#include "backend/cpu/cpu_internal.h"
#include "core/cpu_simd.h"

#include <string.h>

#define DOT_LANES 16
#define DOT_BODY static inline __attribute__((always_inline))
/* 8 floats: one AVX register, two SSE2 / NEON ones; 16 lanes are a low and a
 * high half (a 16-float vector would be lowered badly without AVX-512). */
typedef float dot_v8 __attribute__((vector_size(8 * sizeof(float))));
typedef float dot_v4 __attribute__((vector_size(4 * sizeof(float))));

/* v = 8 floats from p (unaligned); a macro, since passing a 32-byte vector by
 * value would change the ABI between the levels (-Wpsabi). */
#define DOT_LOAD(v, p) memcpy(&(v), (p), sizeof(dot_v8))

/* The tail (n mod 16 elements, lane i mod 16) on the lanes lo | hi, then the
 * pairwise fold: acc[l] += acc[l + s] for l < s, s = 8, 4, 2, 1 — the first two
 * levels as vector adds of the halves, which are those same lane-wise additions. */
DOT_BODY float dot_finish(const dot_v8 *lo, const dot_v8 *hi, const float *a, const float *b, uint64_t i,
                          uint64_t n) /* vectors by address: by value would change the ABI between levels */
{
    dot_v8 lo8 = *lo, hi8 = *hi;
    if (i < n) {
        float acc[DOT_LANES];
        memcpy(acc, &lo8, sizeof lo8);
        memcpy(acc + 8, &hi8, sizeof hi8);
        for (; i < n; i++)
            acc[i % DOT_LANES] += a[i] * b[i];
        memcpy(&lo8, acc, sizeof lo8);
        memcpy(&hi8, acc + 8, sizeof hi8);
    }
    lo8 += hi8;
    float h[8];
    memcpy(h, &lo8, sizeof h);
    dot_v4 lo4, hi4;
    memcpy(&lo4, h, sizeof lo4);
    memcpy(&hi4, h + 4, sizeof hi4);
    lo4 += hi4;
    float q[4];
    memcpy(q, &lo4, sizeof q);
    return (q[0] + q[2]) + (q[1] + q[3]);
}

DOT_BODY float cpu_dot_f32_body(const float *a, const float *b, uint64_t n)
{
    dot_v8 lo = {0}, hi = {0};
    uint64_t i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES) {
        dot_v8 a0, a1, b0, b1;
        DOT_LOAD(a0, a + i);
        DOT_LOAD(a1, a + i + 8);
        DOT_LOAD(b0, b + i);
        DOT_LOAD(b1, b + i + 8);
        lo += a0 * b0;
        hi += a1 * b1;
    }
    return dot_finish(&lo, &hi, a, b, i, n);
}

DOT_BODY void cpu_dot4_f32_body(const float *const a[4], const float *b, uint64_t n, float out[4])
{
    dot_v8 lo0 = {0}, hi0 = {0}, lo1 = {0}, hi1 = {0}, lo2 = {0}, hi2 = {0}, lo3 = {0}, hi3 = {0};
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    uint64_t i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES) {
        dot_v8 xl, xh, w;
        DOT_LOAD(xl, b + i);
        DOT_LOAD(xh, b + i + 8);
        DOT_LOAD(w, a0 + i), lo0 += w * xl;
        DOT_LOAD(w, a0 + i + 8), hi0 += w * xh;
        DOT_LOAD(w, a1 + i), lo1 += w * xl;
        DOT_LOAD(w, a1 + i + 8), hi1 += w * xh;
        DOT_LOAD(w, a2 + i), lo2 += w * xl;
        DOT_LOAD(w, a2 + i + 8), hi2 += w * xh;
        DOT_LOAD(w, a3 + i), lo3 += w * xl;
        DOT_LOAD(w, a3 + i + 8), hi3 += w * xh;
    }
    out[0] = dot_finish(&lo0, &hi0, a0, b, i, n);
    out[1] = dot_finish(&lo1, &hi1, a1, b, i, n);
    out[2] = dot_finish(&lo2, &hi2, a2, b, i, n);
    out[3] = dot_finish(&lo3, &hi3, a3, b, i, n);
}

DOT_BODY void cpu_axpy4_f32_body(float *y, const float a[4], const float *const x[4], uint64_t n)
{
    const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        dot_v8 o, v;
        DOT_LOAD(o, y + i);
        DOT_LOAD(v, x[0] + i), o += a0 * v;
        DOT_LOAD(v, x[1] + i), o += a1 * v;
        DOT_LOAD(v, x[2] + i), o += a2 * v;
        DOT_LOAD(v, x[3] + i), o += a3 * v;
        memcpy(y + i, &o, sizeof o);
    }
    for (; i < n; i++) {
        float o = y[i];
        o += a0 * x[0][i];
        o += a1 * x[1][i];
        o += a2 * x[2][i];
        o += a3 * x[3][i];
        y[i] = o;
    }
}

/* y[i] += a·x[i]. */
DOT_BODY void cpu_axpy_f32_body(float *y, float a, const float *x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* The base level (SSE2, NEON): the same sums on four 4-float vectors, which
 * stay in 128-bit registers (8-float vectors would be lowered to memory). */
DOT_BODY float dot_base(const float *a, const float *b, uint64_t n)
{
    dot_v4 q0 = {0}, q1 = {0}, q2 = {0}, q3 = {0}, u, v;
    uint64_t i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES) {
        memcpy(&u, a + i, sizeof u), memcpy(&v, b + i, sizeof v), q0 += u * v;
        memcpy(&u, a + i + 4, sizeof u), memcpy(&v, b + i + 4, sizeof v), q1 += u * v;
        memcpy(&u, a + i + 8, sizeof u), memcpy(&v, b + i + 8, sizeof v), q2 += u * v;
        memcpy(&u, a + i + 12, sizeof u), memcpy(&v, b + i + 12, sizeof v), q3 += u * v;
    }
    float acc[DOT_LANES];
    memcpy(acc, &q0, sizeof q0);
    memcpy(acc + 4, &q1, sizeof q1);
    memcpy(acc + 8, &q2, sizeof q2);
    memcpy(acc + 12, &q3, sizeof q3);
    for (; i < n; i++)
        acc[i % DOT_LANES] += a[i] * b[i];
    for (int s = DOT_LANES / 2; s > 0; s /= 2)
        for (int l = 0; l < s; l++)
            acc[l] += acc[l + s];
    return acc[0];
}

DOT_BODY void dot4_base(const float *const a[4], const float *b, uint64_t n, float out[4])
{
    for (int r = 0; r < 4; r++)
        out[r] = dot_base(a[r], b, n);
}

DOT_BODY void axpy4_base(float *y, const float a[4], const float *const x[4], uint64_t n)
{
    for (int k = 0; k < 4; k++)
        cpu_axpy_f32_body(y, a[k], x[k], n);
}

CPU_SIMD_DISPATCH_2(float, cpu_dot_f32, (const float *a, const float *b, uint64_t n), (a, b, n), cpu_dot_f32_body,
                    dot_base)
CPU_SIMD_DISPATCH_VOID_2(cpu_dot4_f32, (const float *const a[4], const float *b, uint64_t n, float out[4]),
                         (a, b, n, out), cpu_dot4_f32_body, dot4_base)
CPU_SIMD_DISPATCH_VOID(cpu_axpy_f32, (float *y, float a, const float *x, uint64_t n), (y, a, x, n))
CPU_SIMD_DISPATCH_VOID_2(cpu_axpy4_f32, (float *y, const float a[4], const float *const x[4], uint64_t n),
                         (y, a, x, n), cpu_axpy4_f32_body, axpy4_base)
