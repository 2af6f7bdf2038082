/* quant/dot.c — fused dequantize + dot product, and the matrix–vector product
 * the CPU matmul is built on.
 *
 * Every type runs the same shape of loop: expand one block (or a chunk of 64
 * scalars) into a small stack buffer with the very functions quant_dequantize_row
 * uses, then accumulate w·x into QUANT_LANES independent f32 partial sums
 * (acc[l] takes elements ≡ l mod QUANT_LANES); the partial sums are folded
 * pairwise at the end. The lane loop is a plain fixed-width loop the compiler
 * turns into SIMD without reassociating anything, so the result is the same
 * bit for bit whatever the vector width (SSE2, AVX2, AVX-512), and the error
 * bound stated in quant.h follows from the summation shape: each lane sums
 * n/QUANT_LANES products, then log2(QUANT_LANES) pairwise levels.
 */
#include "core/cpu_simd.h"
#include "core/log.h"
#include "quant/quant_internal.h"

#define QUANT_LANES 16
#define QUANT_CHUNK 64 /* scalars expanded per step for the plain types */

typedef float (*dot_fn)(const uint8_t *row, const float *x, uint64_t n);

/* acc[l] += w[i]·x[i] for i ≡ l (mod QUANT_LANES). The lane loop is fully
 * unrolled so that the compiler keeps acc in vector registers across the whole
 * row (an acc array left in memory costs a store-to-load round trip per block). */
static inline __attribute__((always_inline)) void dot_acc(float *restrict acc, const float *restrict w,
                                                         const float *restrict x, int n)
{
    for (int i = 0; i < n; i += QUANT_LANES) {
#pragma GCC unroll 16
        for (int l = 0; l < QUANT_LANES; l++)
            acc[l] += w[i + l] * x[i + l];
    }
}

static inline float dot_fold(float *acc)
{
    for (int s = QUANT_LANES / 2; s > 0; s /= 2)
        for (int l = 0; l < s; l++)
            acc[l] += acc[l + s];
    return acc[0];
}

/* Plain types: n may be any length; a tail shorter than a lane width is
 * summed into the lanes it maps to, keeping the "element i → lane i mod L" rule. */
#define DEFINE_DOT_PLAIN(name, esize, expand)                                          \
    static float name(const uint8_t *row, const float *x, uint64_t n)                 \
    {                                                                                 \
        float acc[QUANT_LANES] = {0};                                                 \
        float w[QUANT_CHUNK];                                                         \
        uint64_t i = 0;                                                               \
        for (; i + QUANT_CHUNK <= n; i += QUANT_CHUNK) {                              \
            const uint8_t *s = row + i * (esize);                                     \
            for (size_t j = 0; j < QUANT_CHUNK; j++)                                  \
                w[j] = expand;                                                        \
            dot_acc(acc, w, x + i, QUANT_CHUNK);                                      \
        }                                                                             \
        for (; i < n; i++) {                                                          \
            const uint8_t *s = row + (i / QUANT_CHUNK) * QUANT_CHUNK * (esize);       \
            size_t j = i % QUANT_CHUNK;                                               \
            acc[i % QUANT_LANES] += (expand) * x[i];                                  \
        }                                                                             \
        return dot_fold(acc);                                                 \
    }

static inline float load_f32(const uint8_t *p)
{
    float f;
    memcpy(&f, p, 4);
    return f;
}

static inline float load_bf16(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

DEFINE_DOT_PLAIN(dot_f32, 4, load_f32(s + 4 * j))
/* f16 copies the halves out first (a little-endian load) so that the
 * conversion loop vectorises; same element → lane rule as the macro above. */
static float dot_f16(const uint8_t *row, const float *x, uint64_t n)
{
    float acc[QUANT_LANES] = {0};
    float w[QUANT_CHUNK];
    uint16_t h[QUANT_CHUNK];
    uint64_t i = 0;
    for (; i + QUANT_CHUNK <= n; i += QUANT_CHUNK) {
        memcpy(h, row + 2 * i, sizeof(h));
        for (size_t j = 0; j < QUANT_CHUNK; j++)
            w[j] = quant_f16_to_f32_inline(h[j]);
        dot_acc(acc, w, x + i, QUANT_CHUNK);
    }
    for (; i < n; i++)
        acc[i % QUANT_LANES] += quant_load_f16(row + 2 * i) * x[i];
    return dot_fold(acc);
}
DEFINE_DOT_PLAIN(dot_bf16, 2, load_bf16(s + 2 * j))
DEFINE_DOT_PLAIN(dot_f8e4m3, 1, quant_e4m3_table[s[j]])
DEFINE_DOT_PLAIN(dot_f8e5m2, 1, quant_e5m2_table[s[j]])

#define DEFINE_DOT_BLOCKS(name, expand, ts, bs)                                        \
    static float name(const uint8_t *row, const float *x, uint64_t n)                 \
    {                                                                                 \
        float acc[QUANT_LANES] = {0};                                                 \
        float w[bs];                                                                  \
        for (uint64_t b = 0; b < n / (bs); b++) {                                     \
            expand(row + b * (ts), w);                                                \
            dot_acc(acc, w, x + b * (bs), (bs));                                      \
        }                                                                             \
        return dot_fold(acc);                                                         \
    }

DEFINE_DOT_BLOCKS(dot_q4_0, quant_block_q4_0, 18, 32)
DEFINE_DOT_BLOCKS(dot_q4_1, quant_block_q4_1, 20, 32)
DEFINE_DOT_BLOCKS(dot_q5_0, quant_block_q5_0, 22, 32)
DEFINE_DOT_BLOCKS(dot_q5_1, quant_block_q5_1, 24, 32)
DEFINE_DOT_BLOCKS(dot_q8_0, quant_block_q8_0, 34, 32)
DEFINE_DOT_BLOCKS(dot_iq4_nl, quant_block_iq4_nl, 18, 32)
DEFINE_DOT_BLOCKS(dot_q2_k, quant_block_q2_k, 84, 256)
DEFINE_DOT_BLOCKS(dot_q3_k, quant_block_q3_k, 110, 256)
DEFINE_DOT_BLOCKS(dot_q4_k, quant_block_q4_k, 144, 256)
DEFINE_DOT_BLOCKS(dot_q5_k, quant_block_q5_k, 176, 256)
DEFINE_DOT_BLOCKS(dot_q6_k, quant_block_q6_k, 210, 256)
DEFINE_DOT_BLOCKS(dot_iq4_xs, quant_block_iq4_xs, 136, 256)

static dot_fn dot_select(enum dtype t)
{
    switch (t) {
    case DTYPE_F32: return dot_f32;
    case DTYPE_F16: return dot_f16;
    case DTYPE_BF16: return dot_bf16;
    case DTYPE_F8_E4M3: return dot_f8e4m3;
    case DTYPE_F8_E5M2: return dot_f8e5m2;
    case DTYPE_Q4_0: return dot_q4_0;
    case DTYPE_Q4_1: return dot_q4_1;
    case DTYPE_Q5_0: return dot_q5_0;
    case DTYPE_Q5_1: return dot_q5_1;
    case DTYPE_Q8_0: return dot_q8_0;
    case DTYPE_IQ4_NL: return dot_iq4_nl;
    case DTYPE_Q2_K: return dot_q2_k;
    case DTYPE_Q3_K: return dot_q3_k;
    case DTYPE_Q4_K: return dot_q4_k;
    case DTYPE_Q5_K: return dot_q5_k;
    case DTYPE_Q6_K: return dot_q6_k;
    case DTYPE_IQ4_XS: return dot_iq4_xs;
    default: return NULL;
    }
}

#if defined(__x86_64__) || defined(__i386__)
/* The fused AVX2 forms (dequant_avx2.c), the same bits as the kernels above. */
static float dot_q4_0_avx2(const uint8_t *row, const float *x, uint64_t n) { return quant_dot_q4_0_avx2(row, x, n / 32); }
static float dot_q4_1_avx2(const uint8_t *row, const float *x, uint64_t n) { return quant_dot_q4_1_avx2(row, x, n / 32); }
static float dot_q8_0_avx2(const uint8_t *row, const float *x, uint64_t n) { return quant_dot_q8_0_avx2(row, x, n / 32); }
static float dot_q4_k_avx2(const uint8_t *row, const float *x, uint64_t n) { return quant_dot_q4_k_avx2(row, x, n / 256); }
static float dot_q6_k_avx2(const uint8_t *row, const float *x, uint64_t n) { return quant_dot_q6_k_avx2(row, x, n / 256); }
static float dot_q5_k_avx2(const uint8_t *row, const float *x, uint64_t n) { return quant_dot_q5_k_avx2(row, x, n / 256); }
static float dot_iq4_xs_avx2(const uint8_t *row, const float *x, uint64_t n) { return quant_dot_iq4_xs_avx2(row, x, n / 256); }

static dot_fn dot_select_avx2(enum dtype t)
{
    switch (t) {
    case DTYPE_Q4_0: return dot_q4_0_avx2;
    case DTYPE_Q4_1: return dot_q4_1_avx2;
    case DTYPE_Q8_0: return dot_q8_0_avx2;
    case DTYPE_Q4_K: return dot_q4_k_avx2;
    case DTYPE_Q5_K: return dot_q5_k_avx2;
    case DTYPE_Q6_K: return dot_q6_k_avx2;
    case DTYPE_IQ4_XS: return dot_iq4_xs_avx2;
    default: return NULL;
    }
}
#endif

bool quant_dot_fused_fast(enum dtype t)
{
#if defined(__x86_64__) || defined(__i386__)
    return (unsigned)t < DTYPE_COUNT && cpu_simd_level() >= CPU_SIMD_AVX2 && dot_select_avx2(t) != NULL;
#else
    (void)t;
    return false;
#endif
}

/* Checks the preconditions of quant.h and returns the row kernel. */
static dot_fn dot_prepare(enum dtype t, uint64_t n, uint64_t *row_bytes)
{
    MEMRA_ASSERT((unsigned)t < DTYPE_COUNT);
    dot_fn fn = dot_select(t);
#if defined(__x86_64__) || defined(__i386__)
    dot_fn fused = fn && cpu_simd_level() >= CPU_SIMD_AVX2 ? dot_select_avx2(t) : NULL;
    if (fused)
        fn = fused;
#endif
    if (!fn)
        die("quant: type %s is not computed", dtype_name(t));
    if (dtype_row_bytes(t, n, row_bytes) != 0)
        die("quant: row of %llu elements is not a multiple of %s blocks of %u", (unsigned long long)n,
            dtype_name(t), dtype_info(t)->block_size);
    return fn;
}

float quant_dot_row_f32(enum dtype t, const void *row, const float *x, uint64_t n)
{
    uint64_t rb;
    dot_fn fn = dot_prepare(t, n, &rb);
    return fn(row, x, n);
}

void quant_matvec_f32(enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x, float *y)
{
    uint64_t rb;
    dot_fn fn = dot_prepare(t, n, &rb);
    const uint8_t *p = w;
    for (uint64_t r = 0; r < rows; r++)
        y[r] = fn(p + r * rb, x, n);
}
