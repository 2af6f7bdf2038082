/* core/cpu_simd.c — the CPU's SIMD level (cpu_simd.h): detected once, capped
 * by MEMRA_CPU_SIMD. */
#include "core/cpu_simd.h"
#include "core/log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *const simd_names[] = {"base", "avx2", "avx512"};

const char *cpu_simd_name(enum cpu_simd s)
{
    return (unsigned)s < sizeof(simd_names) / sizeof(simd_names[0]) ? simd_names[s] : "?";
}

static enum cpu_simd simd_detect(void)
{
    enum cpu_simd have = CPU_SIMD_BASE;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        have = CPU_SIMD_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        have = CPU_SIMD_AVX512;
#endif
    const char *env = getenv("MEMRA_CPU_SIMD");
    if (env && *env) {
        int cap = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(env, simd_names[i]) == 0)
                cap = i;
        if (cap < 0)
            log_warn("MEMRA_CPU_SIMD=%s is not one of base, avx2, avx512: ignored (using %s)", env,
                     simd_names[have]);
        else if ((enum cpu_simd)cap < have)
            have = (enum cpu_simd)cap;
    }
    return have;
}

enum cpu_simd cpu_simd_level(void)
{
    static atomic_int level = -1; /* -1: not decided yet */
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        l = (int)simd_detect(); /* racing first callers decide the same */
        atomic_store_explicit(&level, l, memory_order_relaxed);
    }
    return (enum cpu_simd)l;
}
