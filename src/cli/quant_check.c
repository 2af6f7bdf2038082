/* cli/quant_check.c — memra-quant-check: the bridge between the quant library
 * and the Python reference tests, plus its speed figure.
 *
 *   memra-quant-check TYPE IN.bin OUT.bin   dequantize IN (whole blocks of TYPE)
 *                                           into OUT as little-endian float32
 *   memra-quant-check --to F16|BF16 IN OUT  convert float32 IN to f16 / bf16 (RNE)
 *   memra-quant-check --bench TYPE [ROWS N] GB/s of weights streamed by
 *                                           quant_matvec_f32 (and by
 *                                           quant_dequantize_row), one core,
 *                                           4096×4096; thread CPU time, best run
 *
 * TYPE is a dtype name as core/dtype.c spells it (Q4_K, BF16, F8_E4M3, ...).
 * tests/py/test_quant_reference.py drives the first two forms.
 */
#include "core/checked.h"
#include "core/mapped_file.h"
#include "core/dtype.h"
#include "quant/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int type_by_name(const char *name, enum dtype *out)
{
    for (int t = 0; t < DTYPE_COUNT; t++) {
        if (strcmp(dtype_name((enum dtype)t), name) == 0) {
            *out = (enum dtype)t;
            return 0;
        }
    }
    fprintf(stderr, "memra-quant-check: unknown type %s\n", name);
    return -1;
}

static int write_all(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

static int cmd_dequantize(const char *tname, const char *in, const char *out)
{
    enum dtype t;
    if (type_by_name(tname, &t) != 0)
        return 1;
    if (!quant_can_compute(t)) {
        fprintf(stderr, "memra-quant-check: type %s is not computed\n", tname);
        return 1;
    }
    const struct dtype_info *info = dtype_info(t);
    struct mapped_file src;
    char err[512];
    if (mapped_file_open(&src, in, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-quant-check: %s\n", err);
        return 1;
    }
    if (src.size % info->type_size != 0) {
        fprintf(stderr, "memra-quant-check: %s: %llu bytes is not whole %s blocks of %u bytes\n", in,
                (unsigned long long)src.size, tname, info->type_size);
        mapped_file_close(&src);
        return 1;
    }
    uint64_t n = src.size / info->type_size * info->block_size;
    float *dst = malloc(n ? n * sizeof(float) : 1);
    int rc = dst && quant_dequantize_row(t, src.data, dst, n) == 0 && write_all(out, dst, n * sizeof(float)) == 0;
    mapped_file_close(&src);
    free(dst);
    return rc ? 0 : 1;
}

static int cmd_convert(const char *tname, const char *in, const char *out)
{
    struct mapped_file src;
    char err[512];
    if (mapped_file_open(&src, in, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-quant-check: %s\n", err);
        return 1;
    }
    size_t n = (size_t)(src.size / 4);
    float *f = malloc(n ? n * 4 : 1);
    uint16_t *h = malloc(n ? n * 2 : 1);
    int rc = 1;
    if (f && h) {
        if (n)
            memcpy(f, src.data, n * 4);
        if (strcmp(tname, "F16") == 0)
            quant_row_f32_to_f16(f, h, n), rc = 0;
        else if (strcmp(tname, "BF16") == 0)
            quant_row_f32_to_bf16(f, h, n), rc = 0;
        else
            fprintf(stderr, "memra-quant-check: --to takes F16 or BF16\n");
        if (rc == 0)
            rc = write_all(out, h, n * 2) == 0 ? 0 : 1;
    }
    mapped_file_close(&src);
    free(f);
    free(h);
    return rc;
}

/* xorshift64*: a reproducible filler for the bench matrix. */
static uint64_t bench_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmd_bench(const char *tname, uint64_t rows, uint64_t n)
{
    enum dtype t;
    if (type_by_name(tname, &t) != 0)
        return 1;
    const struct dtype_info *info = dtype_info(t);
    uint64_t rb;
    if (!quant_can_compute(t) || dtype_row_bytes(t, n, &rb) != 0) {
        fprintf(stderr, "memra-quant-check: cannot bench %s with rows of %llu\n", tname, (unsigned long long)n);
        return 1;
    }
    size_t bytes = (size_t)(rows * rb);
    unsigned char *w = malloc(bytes);
    float *x = malloc(n * sizeof(float)), *y = malloc(rows * sizeof(float));
    if (!w || !x || !y)
        return 1;
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < bytes; i++)
        w[i] = (unsigned char)(bench_rand(&s) >> 56);
    /* finite, moderate values: f16 scale fields and f16/bf16/f32 elements */
    uint16_t f16 = quant_f32_to_f16(0.01f);
    if (t == DTYPE_F32 || t == DTYPE_F16 || t == DTYPE_BF16) {
        for (size_t i = 0; i < bytes / info->type_size; i++) {
            float v = (float)((double)(bench_rand(&s) >> 11) * 0x1p-53 - 0.5);
            if (t == DTYPE_F32)
                memcpy(w + 4 * i, &v, 4);
            else {
                uint16_t h = t == DTYPE_F16 ? quant_f32_to_f16(v) : quant_f32_to_bf16(v);
                memcpy(w + 2 * i, &h, 2);
            }
        }
    } else if (t == DTYPE_F8_E4M3 || t == DTYPE_F8_E5M2) {
        for (size_t i = 0; i < bytes; i++) /* no NaN / inf codes */
            if ((t == DTYPE_F8_E4M3 && (w[i] & 0x7f) == 0x7f) || (t == DTYPE_F8_E5M2 && (w[i] & 0x7c) == 0x7c))
                w[i] &= 0xf3;
    } else if (info->block_size > 1) {
        static const struct { enum dtype t; int off[2]; } scales[] = {
            {DTYPE_Q4_0, {0, -1}}, {DTYPE_Q4_1, {0, 2}}, {DTYPE_Q5_0, {0, -1}}, {DTYPE_Q5_1, {0, 2}},
            {DTYPE_Q8_0, {0, -1}}, {DTYPE_IQ4_NL, {0, -1}}, {DTYPE_Q2_K, {80, 82}}, {DTYPE_Q3_K, {108, -1}},
            {DTYPE_Q4_K, {0, 2}}, {DTYPE_Q5_K, {0, 2}}, {DTYPE_Q6_K, {208, -1}}, {DTYPE_IQ4_XS, {0, -1}},
        };
        for (size_t k = 0; k < sizeof(scales) / sizeof(scales[0]); k++) {
            if (scales[k].t != t)
                continue;
            for (size_t b = 0; b < bytes / info->type_size; b++)
                for (int j = 0; j < 2; j++)
                    if (scales[k].off[j] >= 0)
                        memcpy(w + b * info->type_size + scales[k].off[j], &f16, 2);
        }
    }
    for (uint64_t i = 0; i < n; i++)
        x[i] = (float)((double)(bench_rand(&s) >> 11) * 0x1p-53 - 0.5);

    quant_matvec_f32(t, w, rows, n, x, y); /* warm-up: page in */
    double best = 1e30, total = 0;
    int iters = 0;
    while (total < 1.0 || iters < 5) {
        double t0 = now_s();
        quant_matvec_f32(t, w, rows, n, x, y);
        double dt = now_s() - t0;
        total += dt;
        iters++;
        if (dt < best)
            best = dt;
    }
    /* the same weights through quant_dequantize_row, one row at a time */
    float *row = malloc(n * sizeof(float));
    double best_deq = 1e30, total_deq = 0;
    int iters_deq = 0;
    while (row && (total_deq < 0.5 || iters_deq < 3)) {
        double t0 = now_s();
        for (uint64_t r = 0; r < rows; r++)
            quant_dequantize_row(t, w + r * rb, row, n);
        double dt = now_s() - t0;
        total_deq += dt;
        iters_deq++;
        if (dt < best_deq)
            best_deq = dt;
    }
    free(row);
    double check = 0;
    for (uint64_t r = 0; r < rows; r++)
        check += y[r];
    printf("%-8s %llux%llu %7.2f MB  matvec %7.3f ms %6.2f GB/s %5.2f Gelem/s  dequantize_row %6.2f GB/s"
           "  (CPU time, best of %d; checksum %.6g)\n",
           tname, (unsigned long long)rows, (unsigned long long)n, (double)bytes / 1e6, best * 1e3,
           (double)bytes / best / 1e9, (double)(rows * n) / best / 1e9, (double)bytes / best_deq / 1e9, iters,
           check);
    free(w);
    free(x);
    free(y);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--bench") == 0) {
        uint64_t rows = 4096, n = 4096;
        if (argc >= 5 && (checked_parse_u64(argv[3], 1, 1u << 20, &rows) != 0 ||
                          checked_parse_u64(argv[4], 1, 1u << 20, &n) != 0)) {
            fprintf(stderr, "memra-quant-check: bad bench shape\n");
            return 2;
        }
        return cmd_bench(argv[2], rows, n);
    }
    if (argc == 5 && strcmp(argv[1], "--to") == 0)
        return cmd_convert(argv[2], argv[3], argv[4]);
    if (argc == 4 && argv[1][0] != '-')
        return cmd_dequantize(argv[1], argv[2], argv[3]);
    fprintf(stderr,
            "usage: memra-quant-check TYPE IN.bin OUT.bin\n"
            "       memra-quant-check --to F16|BF16 IN.f32 OUT.bin\n"
            "       memra-quant-check --bench TYPE [ROWS N]\n");
    return 2;
}
