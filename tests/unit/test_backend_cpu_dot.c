/* tests/unit/test_backend_cpu_dot.c — the CPU backend's f32 dots and axpys
 * (src/backend/cpu/cpu_dot.c) bit for bit against a scalar model of the
 * summation order they promise: element i into lane i mod 16, a multiply and an
 * add rounded apart, then the lanes folded pairwise (8, 4, 2, 1); cpu_dot4_f32
 * and cpu_axpy4_f32 equal to four single calls. Fresh random inputs (typical
 * magnitudes, then any finite value with ±0, subnormals and huge ones, then
 * ±inf and NaN), every length 0..80 and a few long ones, unaligned pointers.
 *
 * The functions run at the SIMD level core/cpu_simd.h picks; ctest runs this
 * test again capped by MEMRA_CPU_SIMD=avx2 and =base (CMakeLists.txt), so every
 * level is held to the same bits. Includes the backend's internal header: this
 * is the backend's own test.
 */
#include "backend/cpu/cpu_internal.h"
#include "core/cpu_simd.h"
#include "test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    return test_rand64(&rng_state);
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* mode 0: typical magnitudes; 1: any finite bit pattern, with zeros and
 * subnormals forced in; 2: as 1 with ±inf and NaN sprinkled in */
static float rnd_value(int mode)
{
    if (mode == 0)
        return (float)((double)(rnd() >> 11) * 0x1p-52 - 1.0) * 4.0f;
    const uint64_t r = rnd();
    switch (r % 16) {
    case 0: return (r >> 8) & 1 ? -0.0f : 0.0f;
    case 1: return bits_f32((uint32_t)(r >> 9) & 0x807fffffu); /* subnormal */
    case 2: if (mode == 2) return (r >> 8) & 1 ? -INFINITY : INFINITY; break;
    case 3: if (mode == 2) return bits_f32(0x7fc00000u | ((uint32_t)(r >> 9) & 0x803fffffu)); break;
    default: break;
    }
    uint32_t u = (uint32_t)(r >> 32);
    if ((u & 0x7f800000u) == 0x7f800000u) /* inf / NaN: keep it finite */
        u &= ~0x00800000u;
    /* keep most exponents moderate so that sums are not all inf */
    if (r & 0x10)
        u = (u & 0x807fffffu) | (uint32_t)(100 + (r >> 5) % 56) << 23;
    return bits_f32(u);
}

/* The promised order, as plain scalar code. */
static float ref_dot(const float *a, const float *b, uint64_t n)
{
    float acc[16] = {0};
    for (uint64_t i = 0; i < n; i++) {
        const float p = a[i] * b[i];
        acc[i % 16] = acc[i % 16] + p;
    }
    for (int s = 8; s > 0; s /= 2)
        for (int l = 0; l < s; l++)
            acc[l] = acc[l] + acc[l + s];
    return acc[0];
}

static void ref_axpy(float *y, float a, const float *x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        const float p = a * x[i];
        y[i] = y[i] + p;
    }
}

/* equal bits, or both NaN (a NaN's payload and sign follow the operand order
 * the compiler picked for a commutative add, not the summation order) */
static int same(float x, float y)
{
    return f32_bits(x) == f32_bits(y) || (isnan(x) && isnan(y));
}

#define NMAX 1100
static float g_a[4][NMAX + 1], g_b[NMAX + 1], g_y[NMAX + 1], g_yref[NMAX + 1];

static void fill(int mode, uint64_t n)
{
    for (uint64_t i = 0; i <= n; i++) {
        for (int r = 0; r < 4; r++)
            g_a[r][i] = rnd_value(mode);
        g_b[i] = rnd_value(mode);
        g_y[i] = g_yref[i] = rnd_value(mode);
    }
}

static const uint64_t long_lengths[] = {127, 128, 129, 576, 1000, 1024, 1099};

static void check_length(int mode, uint64_t n, int off)
{
    fill(mode, n + (uint64_t)off);
    const float *a[4] = {g_a[0] + off, g_a[1] + off, g_a[2] + off, g_a[3] + off};
    const float *b = g_b + off;
    float want[4], got[4];
    for (int r = 0; r < 4; r++)
        want[r] = ref_dot(a[r], b, n);
    const float one = cpu_dot_f32(a[1], b, n);
    CHECK_MSG(same(one, want[1]), "dot n=%llu mode %d off %d: %08x vs %08x", (unsigned long long)n, mode, off,
              f32_bits(one), f32_bits(want[1]));
    cpu_dot4_f32(a, b, n, got);
    for (int r = 0; r < 4; r++)
        CHECK_MSG(same(got[r], want[r]), "dot4 row %d n=%llu mode %d off %d: %08x vs %08x", r,
                  (unsigned long long)n, mode, off, f32_bits(got[r]), f32_bits(want[r]));
    /* rows repeated, as the matmul pads its last group */
    const float *rep[4] = {a[2], a[3], a[3], a[3]};
    cpu_dot4_f32(rep, b, n, got);
    CHECK(same(got[0], want[2]) && same(got[1], want[3]) && same(got[3], want[3]));

    const float c[4] = {rnd_value(mode), rnd_value(mode), rnd_value(mode), rnd_value(mode)};
    float *y = g_y + off, *yref = g_yref + off;
    cpu_axpy4_f32(y, c, a, n);
    for (int k = 0; k < 4; k++)
        ref_axpy(yref, c[k], a[k], n);
    int bad = 0;
    for (uint64_t i = 0; i < n; i++)
        bad += !same(y[i], yref[i]);
    CHECK_MSG(bad == 0, "axpy4 n=%llu mode %d off %d: %d elements differ", (unsigned long long)n, mode, off, bad);
    cpu_axpy_f32(y, c[0], b, n);
    ref_axpy(yref, c[0], b, n);
    bad = 0;
    for (uint64_t i = 0; i < n; i++)
        bad += !same(y[i], yref[i]);
    CHECK_MSG(bad == 0, "axpy n=%llu mode %d off %d: %d elements differ", (unsigned long long)n, mode, off, bad);
}

static void test_dots_match_scalar_order(void)
{
    for (int mode = 0; mode < 3; mode++)
        for (int rep = 0; rep < 4; rep++) {
            for (uint64_t n = 0; n <= 80; n++)
                check_length(mode, n, (int)(n % 3));
            for (size_t k = 0; k < sizeof(long_lengths) / sizeof(long_lengths[0]); k++)
                check_length(mode, long_lengths[k], rep & 1);
        }
}

/* the typical case is not vacuous: the 16-lane order differs from a plain
 * left-to-right sum somewhere, so a sequential implementation would fail */
static void test_order_is_observable(void)
{
    int differ = 0;
    for (int rep = 0; rep < 50; rep++) {
        fill(0, 576);
        float seq = 0.0f;
        for (int i = 0; i < 576; i++)
            seq += g_a[0][i] * g_b[i];
        differ += f32_bits(seq) != f32_bits(cpu_dot_f32(g_a[0], g_b, 576));
    }
    CHECK(differ > 0);
}

int main(void)
{
    fprintf(stderr, "cpu_simd level: %s\n", cpu_simd_name(cpu_simd_level()));
    RUN(test_dots_match_scalar_order);
    RUN(test_order_is_observable);
    return test_summary();
}
