/* core/cpu_simd.h — which SIMD level the CPU kernels run at, and the macro
 * that compiles one kernel body once per level.
 *
 * The CPU backend is the exact reference: its dequantization (quant/dequant.c,
 * with the AVX2 forms of quant/dequant_avx2.c), its fused quantized dots
 * (quant/dot.c) and its f32 dots (backend/cpu/cpu_dot.c) do the same IEEE
 * operations in the same order at every level — lane-wise adds and multiplies, never contracted — so
 * every level gives the same bits; the wider ones are only faster. The level is
 * the widest the CPU has (AVX-512 F+BW, AVX2, else the x86-64 / other baseline),
 * capped by MEMRA_CPU_SIMD=base|avx2|avx512 — what the tests use to run every
 * level on one machine (tests/unit/test_backend_cpu_dot.c, test_quant_dot.c,
 * tests/py/test_quant_reference.py).
 */
#ifndef MEMRA_CORE_CPU_SIMD_H
#define MEMRA_CORE_CPU_SIMD_H

enum cpu_simd { CPU_SIMD_BASE = 0, CPU_SIMD_AVX2 = 1, CPU_SIMD_AVX512 = 2 };

/* The level in use: decided at the first call (a bad MEMRA_CPU_SIMD value is
 * reported once and ignored), then constant. */
enum cpu_simd cpu_simd_level(void);
const char *cpu_simd_name(enum cpu_simd s);

/* CPU_SIMD_DISPATCH(ret, name, (params), (args)) defines `ret name(params)`
 * running `name##_body(args)` — a static always-inline function — compiled for
 * each level (the body is inlined into three copies with their own target
 * attribute) and picked by cpu_simd_level(). CPU_SIMD_DISPATCH_VOID for void;
 * the _2 forms take a separate body for the base level (for code whose wide
 * form would be lowered badly to SSE2). */
#if defined(__x86_64__) || defined(__i386__)
#define CPU_SIMD_TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))
#define CPU_SIMD_TARGET_AVX2 __attribute__((target("avx2")))
#define CPU_SIMD_DISPATCH_(ret, name, params, args, RET, WIDE, BASE)                           \
    CPU_SIMD_TARGET_AVX512 static ret name##_avx512 params { RET WIDE args; }                 \
    CPU_SIMD_TARGET_AVX2 static ret name##_avx2 params { RET WIDE args; }                     \
    static ret name##_base params { RET BASE args; }                                          \
    ret name params                                                                           \
    {                                                                                         \
        switch (cpu_simd_level()) {                                                           \
        case CPU_SIMD_AVX512: RET name##_avx512 args; break;                                  \
        case CPU_SIMD_AVX2: RET name##_avx2 args; break;                                      \
        default: RET name##_base args; break;                                                 \
        }                                                                                     \
    }
#else
#define CPU_SIMD_DISPATCH_(ret, name, params, args, RET, WIDE, BASE) \
    ret name params { RET BASE args; }
#endif
#define CPU_SIMD_DISPATCH(ret, name, params, args) \
    CPU_SIMD_DISPATCH_(ret, name, params, args, return, name##_body, name##_body)
#define CPU_SIMD_DISPATCH_VOID(name, params, args) CPU_SIMD_DISPATCH_(void, name, params, args, , name##_body, name##_body)
#define CPU_SIMD_DISPATCH_2(ret, name, params, args, wide, base) \
    CPU_SIMD_DISPATCH_(ret, name, params, args, return, wide, base)
#define CPU_SIMD_DISPATCH_VOID_2(name, params, args, wide, base) \
    CPU_SIMD_DISPATCH_(void, name, params, args, , wide, base)

#endif
