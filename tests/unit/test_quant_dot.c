/* test_quant_dot.c — the fused dequantize+dot and the matrix–vector product
 * against dequantize-then-dot: the tolerance stated in quant/quant.h against a
 * double-precision dot of the dequantized row, and the exact summation order
 * (bit for bit) that quant.h promises; matvec rows equal single-row dots;
 * unsupported types and bad row lengths are refused. Dequantization itself is
 * checked bit for bit against gguf-py by tests/py/test_quant_reference.py.
 * ctest runs this again capped by MEMRA_CPU_SIMD=avx2 and =base, so the fused
 * AVX2 forms (src/quant/dequant_avx2.c) and the portable kernels are each held
 * to the same bits. */
#include "quant/quant.h"
#include "test.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng_state = 0x1234567887654321ULL;
static uint64_t rnd(void)
{
    return test_rand64(&rng_state);
}

static float rnd_unit(void) /* [-1, 1) */
{
    return (float)((double)(rnd() >> 11) * 0x1p-52 - 1.0);
}

static const enum dtype computed[] = {
    DTYPE_F32,  DTYPE_F16,  DTYPE_BF16, DTYPE_F8_E4M3, DTYPE_F8_E5M2, DTYPE_Q4_0,
    DTYPE_Q4_1, DTYPE_Q5_0, DTYPE_Q5_1, DTYPE_Q8_0,    DTYPE_IQ4_NL,  DTYPE_Q2_K,
    DTYPE_Q3_K, DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K,    DTYPE_IQ4_XS,
};

/* byte offsets of the f16 scale fields of one block (GGUF layouts) */
static int scale_offsets(enum dtype t, int off[2])
{
    switch (t) {
    case DTYPE_Q4_0: case DTYPE_Q5_0: case DTYPE_Q8_0: case DTYPE_IQ4_NL: case DTYPE_IQ4_XS:
        off[0] = 0; return 1;
    case DTYPE_Q4_1: case DTYPE_Q5_1: case DTYPE_Q4_K: case DTYPE_Q5_K:
        off[0] = 0; off[1] = 2; return 2;
    case DTYPE_Q2_K: off[0] = 80; off[1] = 82; return 2;
    case DTYPE_Q3_K: off[0] = 108; return 1;
    case DTYPE_Q6_K: off[0] = 208; return 1;
    default: return 0;
    }
}

/* rows bytes of random weights of type t: finite values everywhere */
static void fill_weights(enum dtype t, uint8_t *w, uint64_t bytes)
{
    const struct dtype_info *info = dtype_info(t);
    for (uint64_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)(rnd() >> 56);
    if (t == DTYPE_F32) {
        for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
            float v = rnd_unit() * 2;
            memcpy(w + i, &v, 4);
        }
    } else if (t == DTYPE_F16 || t == DTYPE_BF16) {
        for (uint64_t i = 0; i + 2 <= bytes; i += 2) {
            float v = rnd_unit() * 2;
            uint16_t h = t == DTYPE_F16 ? quant_f32_to_f16(v) : quant_f32_to_bf16(v);
            memcpy(w + i, &h, 2);
        }
    } else if (t == DTYPE_F8_E4M3) {
        for (uint64_t i = 0; i < bytes; i++)
            if ((w[i] & 0x7f) == 0x7f)
                w[i] &= 0xfe; /* not NaN */
    } else if (t == DTYPE_F8_E5M2) {
        for (uint64_t i = 0; i < bytes; i++)
            if ((w[i] & 0x7c) == 0x7c)
                w[i] &= 0xfb; /* not inf / NaN */
    } else {
        int off[2];
        int k = scale_offsets(t, off);
        CHECK_MSG(k > 0, "no scale table for %s", dtype_name(t));
        for (uint64_t b = 0; b + info->type_size <= bytes; b += info->type_size)
            for (int j = 0; j < k; j++) {
                uint16_t h = quant_f32_to_f16(rnd_unit() * 0.05f);
                memcpy(w + b + off[j], &h, 2);
            }
    }
}

/* The order quant.h promises: lane l sums the products of elements i ≡ l
 * (mod 16) left to right, then lanes fold pairwise (l += l+8, +4, +2, +1). */
static float lane_order_dot(const float *w, const float *x, uint64_t n)
{
    float acc[16] = {0};
    for (uint64_t i = 0; i < n; i++)
        acc[i % 16] += w[i] * x[i];
    for (int s = 8; s > 0; s /= 2)
        for (int l = 0; l < s; l++)
            acc[l] += acc[l + s];
    return acc[0];
}

static void check_dot(enum dtype t, uint64_t n)
{
    uint64_t rb;
    CHECK_EQ_INT(dtype_row_bytes(t, n, &rb), 0);
    uint8_t *w = malloc(rb + 1);
    float *deq = malloc(n * sizeof(float)), *x = malloc(n * sizeof(float));
    fill_weights(t, w, rb);
    for (uint64_t i = 0; i < n; i++)
        x[i] = rnd_unit();
    CHECK_EQ_INT(quant_dequantize_row(t, w, deq, n), 0);
    const float got = quant_dot_row_f32(t, w, x, n);
    double exact = 0, mag = 0;
    for (uint64_t i = 0; i < n; i++) {
        exact += (double)deq[i] * (double)x[i];
        mag += fabs((double)deq[i] * (double)x[i]);
    }
    const double tol = ((double)n / 16 + 5) * 0x1p-24 * mag + (double)n * 0x1p-149;
    CHECK_MSG(fabs((double)got - exact) <= tol, "%s n=%llu: dot %.9g vs %.9g (tol %.3g)", dtype_name(t),
              (unsigned long long)n, got, exact, tol);
    const float ordered = lane_order_dot(deq, x, n);
    CHECK_MSG(memcmp(&got, &ordered, 4) == 0, "%s n=%llu: dot %.9g vs lane order %.9g", dtype_name(t),
              (unsigned long long)n, got, ordered);
    /* an odd start address gives the same answer */
    memmove(w + 1, w, rb);
    const float shifted = quant_dot_row_f32(t, w + 1, x, n);
    CHECK(memcmp(&got, &shifted, 4) == 0);
    free(w);
    free(deq);
    free(x);
}

static void test_dot_matches_dequantize(void)
{
    for (size_t k = 0; k < sizeof(computed) / sizeof(computed[0]); k++) {
        const enum dtype t = computed[k];
        CHECK(quant_can_compute(t));
        const uint64_t bs = dtype_info(t)->block_size;
        const uint64_t sizes[] = {bs, 3 * bs, bs == 1 ? 17 : 5 * bs, bs == 1 ? 4099 : 4096 / bs * bs,
                                  bs == 1 ? 16384 + 7 : 16384};
        for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++)
            check_dot(t, sizes[j]);
    }
}

static void test_matvec_equals_rows(void)
{
    for (size_t k = 0; k < sizeof(computed) / sizeof(computed[0]); k++) {
        const enum dtype t = computed[k];
        const uint64_t n = dtype_info(t)->block_size == 1 ? 200 : 512, rows = 37;
        uint64_t rb;
        CHECK_EQ_INT(dtype_row_bytes(t, n, &rb), 0);
        uint8_t *w = malloc(rows * rb);
        float *x = malloc(n * sizeof(float)), y[37];
        fill_weights(t, w, rows * rb);
        for (uint64_t i = 0; i < n; i++)
            x[i] = rnd_unit();
        quant_matvec_f32(t, w, rows, n, x, y);
        int same = 0;
        for (uint64_t r = 0; r < rows; r++) {
            float d = quant_dot_row_f32(t, w + r * rb, x, n);
            same += memcmp(&d, &y[r], 4) == 0;
        }
        CHECK_MSG(same == (int)rows, "%s: %d of %d rows equal", dtype_name(t), same, (int)rows);
        free(w);
        free(x);
    }
}

static void test_refusals(void)
{
    uint8_t buf[1024] = {0};
    float out[256];
    const enum dtype not_computed[] = {DTYPE_Q8_1, DTYPE_Q8_K, DTYPE_IQ2_XXS, DTYPE_IQ1_S, DTYPE_I32,
                                       DTYPE_F64, DTYPE_MXFP4, DTYPE_TQ2_0, DTYPE_BOOL};
    for (size_t k = 0; k < sizeof(not_computed) / sizeof(not_computed[0]); k++) {
        CHECK(!quant_can_compute(not_computed[k]));
        out[0] = 42;
        CHECK_EQ_INT(quant_dequantize_row(not_computed[k], buf, out, dtype_info(not_computed[k])->block_size), -1);
        CHECK(out[0] == 42); /* untouched */
    }
    /* rows that are not whole blocks */
    CHECK_EQ_INT(quant_dequantize_row(DTYPE_Q4_0, buf, out, 33), -1);
    CHECK_EQ_INT(quant_dequantize_row(DTYPE_Q4_K, buf, out, 100), -1);
    CHECK_EQ_INT(quant_dequantize_row(DTYPE_IQ4_XS, buf, out, 32), -1);
    CHECK_EQ_INT(quant_dequantize_row(DTYPE_Q4_K, buf, out, 0), 0);
    CHECK_EQ_INT(quant_dequantize_row(DTYPE_F16, buf, out, 3), 0);
    CHECK_EQ_INT(quant_dequantize_row(DTYPE_COUNT, buf, out, 1), -1);
}

/* dot / matvec treat a bad row as a programming error: they abort */
static void test_dot_aborts_on_bad_rows(void)
{
    const struct { enum dtype t; uint64_t n; } bad[] = {{DTYPE_Q4_0, 33}, {DTYPE_Q6_K, 128}, {DTYPE_Q8_1, 32}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            static uint8_t buf[4096];
            static float x[4096];
            const struct rlimit no_core = {0, 0};
            setrlimit(RLIMIT_CORE, &no_core); /* the abort is expected: no core file */
            if (!freopen("/dev/null", "w", stderr))
                _exit(2);
            quant_dot_row_f32(bad[k].t, buf, x, bad[k].n);
            _exit(0); /* not reached when the precondition is enforced */
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK_MSG(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "%s n=%llu was accepted",
                  dtype_name(bad[k].t), (unsigned long long)bad[k].n);
    }
}

/* format facts (IEEE 754 binary16, bfloat16, OCP FP8) on a few values; the
 * exhaustive check against numpy / ml_dtypes is in tests/py */
static void test_scalar_conversions(void)
{
    CHECK(quant_f16_to_f32(0x3c00) == 1.0f);
    CHECK(quant_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(quant_f16_to_f32(0x0001) == 0x1p-24f);
    CHECK(quant_f16_to_f32(0x0400) == 0x1p-14f);
    CHECK(quant_f16_to_f32(0xfc00) == -INFINITY);
    CHECK(isnan(quant_f16_to_f32(0x7e00)));
    CHECK(signbit(quant_f16_to_f32(0x8000)) && quant_f16_to_f32(0x8000) == 0);
    CHECK_EQ_INT(quant_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);          /* tie → even */
    CHECK_EQ_INT(quant_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);      /* tie → even (up) */
    CHECK_EQ_INT(quant_f32_to_f16(65520.0f), 0x7c00);                 /* rounds to inf */
    CHECK_EQ_INT(quant_f32_to_f16(65519.0f), 0x7bff);
    CHECK_EQ_INT(quant_f32_to_f16(0x1p-25f), 0x0000);                 /* tie → even (0) */
    CHECK_EQ_INT(quant_f32_to_f16(0x1p-25f * 1.5f), 0x0001);
    CHECK(quant_bf16_to_f32(0x3f80) == 1.0f);
    CHECK_EQ_INT(quant_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);          /* tie → even */
    CHECK_EQ_INT(quant_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    CHECK_EQ_INT(quant_f32_to_bf16(-INFINITY), 0xff80);
    CHECK_EQ_INT(quant_f32_to_bf16(NAN) & 0x7fc0, 0x7fc0);
    CHECK(quant_f8e4m3_to_f32(0x7e) == 448.0f);
    CHECK(quant_f8e4m3_to_f32(0x01) == 0x1p-9f);
    CHECK(quant_f8e4m3_to_f32(0x38) == 1.0f);
    CHECK(quant_f8e4m3_to_f32(0xb8) == -1.0f);
    CHECK(isnan(quant_f8e4m3_to_f32(0x7f)) && isnan(quant_f8e4m3_to_f32(0xff)));
    CHECK(quant_f8e4m3_to_f32(0x78) == 256.0f); /* exponent 15 is a number in e4m3fn */
    CHECK(quant_f8e5m2_to_f32(0x7b) == 57344.0f);
    CHECK(quant_f8e5m2_to_f32(0x3c) == 1.0f);
    CHECK(quant_f8e5m2_to_f32(0x01) == 0x1p-16f);
    CHECK(quant_f8e5m2_to_f32(0x7c) == INFINITY && quant_f8e5m2_to_f32(0xfc) == -INFINITY);
    CHECK(isnan(quant_f8e5m2_to_f32(0x7d)));
    /* row conversions agree with the scalar ones */
    float src[5] = {1.0f, -2.5f, 0x1p-20f, 70000.0f, 3.14159f};
    uint16_t h[5], b[5];
    quant_row_f32_to_f16(src, h, 5);
    quant_row_f32_to_bf16(src, b, 5);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(h[i], quant_f32_to_f16(src[i]));
        CHECK_EQ_INT(b[i], quant_f32_to_bf16(src[i]));
    }
}

int main(void)
{
    RUN(test_scalar_conversions);
    RUN(test_dot_matches_dequantize);
    RUN(test_matvec_equals_rows);
    RUN(test_refusals);
    RUN(test_dot_aborts_on_bad_rows);
    return test_summary();
}
