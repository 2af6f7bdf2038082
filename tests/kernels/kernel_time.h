/* tests/kernels/kernel_time.h — the timing the GPU kernel programs share: L
 * launches (launch(arg, i) for i < L, each rotating over enough weight copies
 * that the working set exceeds the L2) captured once as a CUDA graph after
 * n_warm launches outside it, the graph replayed KERNEL_TIME_REPS times between
 * CUDA events; the median µs per launch. Header-only, like kernel_rng.h. */
#ifndef MEMRA_TESTS_KERNEL_TIME_H
#define MEMRA_TESTS_KERNEL_TIME_H

#include <stdlib.h>

#include "backend/cuda/cuda_ops.h"

#define KERNEL_TIME_REPS 15

typedef void (*kernel_launch_fn)(void *arg, int i);

static inline int kernel_time_cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double kernel_time_graph(struct cuda_ctx *ctx, kernel_launch_fn launch, void *arg, int n_warm, int L)
{
    for (int i = 0; i < n_warm; i++) /* warm-up: first-call setup, scratch growth, outside the graph */
        launch(arg, i);
    cuda_ctx_sync(ctx);
    cuda_graph_begin(ctx);
    for (int i = 0; i < L; i++)
        launch(arg, i);
    struct cuda_graph *g = cuda_graph_end(ctx);
    struct cuda_timer *tm = cuda_timer_new();
    cuda_graph_launch(ctx, g);
    double us[KERNEL_TIME_REPS];
    for (int r = 0; r < KERNEL_TIME_REPS; r++) {
        cuda_timer_start(ctx, tm);
        cuda_graph_launch(ctx, g);
        cuda_timer_stop(ctx, tm);
        us[r] = 1000.0 * cuda_timer_ms(tm) / L;
    }
    cuda_ctx_sync(ctx);
    cuda_timer_free(tm);
    cuda_graph_free(g);
    qsort(us, KERNEL_TIME_REPS, sizeof us[0], kernel_time_cmp);
    return us[KERNEL_TIME_REPS / 2];
}

#endif
