/* quant/dequant.c — quant_can_compute and quant_dequantize_row: one row of any
 * computed type expanded to f32, block by block (quant_internal.h holds the
 * block formulas and layouts). The plain types convert element by element with
 * branch-light inline conversions that the compiler vectorises.
 */
#include "core/cpu_simd.h"
#include "quant/quant_internal.h"

bool quant_can_compute(enum dtype t)
{
    switch (t) {
    case DTYPE_F32: case DTYPE_F16: case DTYPE_BF16: case DTYPE_F8_E4M3: case DTYPE_F8_E5M2:
    case DTYPE_Q4_0: case DTYPE_Q4_1: case DTYPE_Q5_0: case DTYPE_Q5_1: case DTYPE_Q8_0:
    case DTYPE_Q2_K: case DTYPE_Q3_K: case DTYPE_Q4_K: case DTYPE_Q5_K: case DTYPE_Q6_K:
    case DTYPE_IQ4_NL: case DTYPE_IQ4_XS:
        return true;
    default:
        return false;
    }
}

/* Run a block expander over nb blocks of ts bytes / bs elements. */
#define DEQ_BLOCKS(fn, ts, bs) \
    do { for (uint64_t b_ = 0; b_ < n / (bs); b_++) fn(s + b_ * (ts), dst + b_ * (bs)); } while (0)

/* Plain types, element by element, in chunks of 16 with restrict pointers:
 * the shape gcc -O2 vectorises (its cheap cost model skips loops that would
 * need a runtime alias check or an unknown trip count). */
#define DEQ_PLAIN(name, esize, expand)                                                 \
    QUANT_INLINE void name(const uint8_t *restrict s, float *restrict dst, uint64_t n)     \
    {                                                                                 \
        uint64_t i = 0;                                                               \
        for (; i + 16 <= n; i += 16)                                                  \
            for (size_t k = 0; k < 16; k++) {                                         \
                const uint8_t *p = s + (i + k) * (esize);                             \
                dst[i + k] = expand;                                                  \
            }                                                                         \
        for (; i < n; i++) {                                                          \
            const uint8_t *p = s + i * (esize);                                       \
            dst[i] = expand;                                                          \
        }                                                                             \
    }

/* f16 / bf16: each half read with its own 2-byte memcpy (a little-endian load
 * the vectoriser turns into vector loads); byte-pair loads defeat it, and
 * copying 16 halves into a local array first made gcc store and reload them
 * through the stack. */
QUANT_INLINE uint16_t deq_u16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

DEQ_PLAIN(deq_f16, 2, quant_f16_to_f32_inline(deq_u16(p)))
DEQ_PLAIN(deq_bf16, 2, quant_bits_f32((uint32_t)deq_u16(p) << 16))
DEQ_PLAIN(deq_f8e4m3, 1, quant_e4m3_table[*p])
DEQ_PLAIN(deq_f8e5m2, 1, quant_e5m2_table[*p])

#if defined(__x86_64__) || defined(__i386__)
/* The AVX2 forms of the hot block types (dequant_avx2.c); 0 when t has none. */
static int deq_avx2(enum dtype t, const uint8_t *s, float *dst, uint64_t n)
{
    switch (t) {
    case DTYPE_Q4_0: quant_deq_q4_0_avx2(s, dst, n / 32); return 1;
    case DTYPE_Q4_1: quant_deq_q4_1_avx2(s, dst, n / 32); return 1;
    case DTYPE_Q8_0: quant_deq_q8_0_avx2(s, dst, n / 32); return 1;
    case DTYPE_Q4_K: quant_deq_q4_k_avx2(s, dst, n / 256); return 1;
    case DTYPE_Q5_K: quant_deq_q5_k_avx2(s, dst, n / 256); return 1;
    case DTYPE_Q6_K: quant_deq_q6_k_avx2(s, dst, n / 256); return 1;
    case DTYPE_IQ4_NL: quant_deq_iq4_nl_avx2(s, dst, n / 32); return 1;
    case DTYPE_Q5_0: quant_deq_q5_0_avx2(s, dst, n / 32); return 1;
    case DTYPE_Q5_1: quant_deq_q5_1_avx2(s, dst, n / 32); return 1;
    case DTYPE_Q2_K: quant_deq_q2_k_avx2(s, dst, n / 256); return 1;
    case DTYPE_Q3_K: quant_deq_q3_k_avx2(s, dst, n / 256); return 1;
    case DTYPE_IQ4_XS: quant_deq_iq4_xs_avx2(s, dst, n / 256); return 1;
    default: return 0;
    }
}
#define DEQ_AVX2(t, s, dst, n) (cpu_simd_level() >= CPU_SIMD_AVX2 && deq_avx2((t), (s), (dst), (n)))
#else
#define DEQ_AVX2(t, s, dst, n) 0
#endif

/* One body, compiled for each SIMD level (core/cpu_simd.h): the block
 * expanders are inlined into each copy, so they run at the CPU's widest
 * vectors; every level does the same IEEE operations (no contraction,
 * CMakeLists.txt), so the same bits. */
static inline __attribute__((always_inline)) int quant_dequantize_row_body(enum dtype t, const void *src,
                                                                          float *dst, uint64_t n)
{
    if ((unsigned)t >= DTYPE_COUNT || !quant_can_compute(t) || n % dtype_info(t)->block_size != 0)
        return -1;
    const uint8_t *s = src;
    if (DEQ_AVX2(t, s, dst, n))
        return 0;
    switch (t) {
    case DTYPE_F32:
        memcpy(dst, s, n * 4);
        break;
    case DTYPE_F16: deq_f16(s, dst, n); break;
    case DTYPE_BF16: deq_bf16(s, dst, n); break;
    case DTYPE_F8_E4M3: deq_f8e4m3(s, dst, n); break;
    case DTYPE_F8_E5M2: deq_f8e5m2(s, dst, n); break;
    case DTYPE_Q4_0: DEQ_BLOCKS(quant_block_q4_0, 18, 32); break;
    case DTYPE_Q4_1: DEQ_BLOCKS(quant_block_q4_1, 20, 32); break;
    case DTYPE_Q5_0: DEQ_BLOCKS(quant_block_q5_0, 22, 32); break;
    case DTYPE_Q5_1: DEQ_BLOCKS(quant_block_q5_1, 24, 32); break;
    case DTYPE_Q8_0: DEQ_BLOCKS(quant_block_q8_0, 34, 32); break;
    case DTYPE_IQ4_NL: DEQ_BLOCKS(quant_block_iq4_nl, 18, 32); break;
    case DTYPE_Q2_K: DEQ_BLOCKS(quant_block_q2_k, 84, 256); break;
    case DTYPE_Q3_K: DEQ_BLOCKS(quant_block_q3_k, 110, 256); break;
    case DTYPE_Q4_K: DEQ_BLOCKS(quant_block_q4_k, 144, 256); break;
    case DTYPE_Q5_K: DEQ_BLOCKS(quant_block_q5_k, 176, 256); break;
    case DTYPE_Q6_K: DEQ_BLOCKS(quant_block_q6_k, 210, 256); break;
    case DTYPE_IQ4_XS: DEQ_BLOCKS(quant_block_iq4_xs, 136, 256); break;
    default:
        return -1;
    }
    return 0;
}

CPU_SIMD_DISPATCH(int, quant_dequantize_row, (enum dtype t, const void *src, float *dst, uint64_t n),
                  (t, src, dst, n))
