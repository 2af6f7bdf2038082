/* tests/kernels/kernel_util.h — what the GPU kernel test programs share
 * besides their random inputs (kernel_rng.h) and their timing (kernel_time.h,
 * whose kernel_time_cmp sorts timed runs): an allocation that exits on
 * failure and the opening of the device with its name printed. Header-only:
 * each kernel_*.c is its own program; KERNEL_NAME names it in messages. */
#ifndef MEMRA_TESTS_KERNEL_UTIL_H
#define MEMRA_TESTS_KERNEL_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_ops.h"

#ifndef KERNEL_NAME
#error "define KERNEL_NAME (the program's name) before including kernel_util.h"
#endif

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, KERNEL_NAME ": out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* Device 0, line-buffered stdout, the device's name and SM count printed;
 * exits with status 2 when there is no usable device. */
static inline struct cuda_ctx *kernel_ctx_open(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    char err[256];
    struct cuda_ctx *ctx = cuda_ctx_init(0, err, sizeof err);
    if (!ctx) {
        fprintf(stderr, KERNEL_NAME ": %s\n", err);
        exit(2);
    }
    printf("device: %s, %d SMs\n", cuda_ctx_device_name(ctx), cuda_ctx_sm_count(ctx));
    return ctx;
}

#endif
