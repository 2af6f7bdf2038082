/* backend/cpu/threadpool.h — a fixed pool of worker threads for the CPU forward.
 *
 * threadpool_run splits [0, n) into n_threads contiguous ranges and runs
 * fn(ctx, begin, end, thread) on each, the calling thread taking range 0, and
 * returns when all are done. The split depends only on n and the thread count,
 * never on timing, so results are reproducible. Workers spin briefly after a
 * job (decode issues hundreds of small jobs per token) and then sleep on a
 * condition variable, so an idle pool costs no CPU.
 */
#ifndef MEMRA_BACKEND_CPU_THREADPOOL_H
#define MEMRA_BACKEND_CPU_THREADPOOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*threadpool_fn)(void *ctx, uint32_t begin, uint32_t end, uint32_t thread);

struct threadpool {
    uint32_t n_threads;        /* including the caller */
    pthread_t *threads;        /* (n_threads - 1) workers */
    pthread_mutex_t mu;
    pthread_cond_t wake;       /* workers wait for a new generation */
    pthread_cond_t done;       /* the caller waits for pending == 0 */
    atomic_uint generation;    /* bumped per job */
    atomic_uint pending;       /* workers still running the current job */
    atomic_bool stop;
    /* the current job */
    threadpool_fn fn;
    void *ctx;
    uint32_t n;
};

/* n_threads 0: all online cores. 0, or -1 with the reason in err. */
int threadpool_init(struct threadpool *p, uint32_t n_threads, char *err, size_t errlen);
void threadpool_run(struct threadpool *p, uint32_t n, threadpool_fn fn, void *ctx);
void threadpool_free(struct threadpool *p);

/* The range of thread t when [0, n) is split over k threads. */
static inline void threadpool_range(uint32_t n, uint32_t k, uint32_t t, uint32_t *begin, uint32_t *end)
{
    *begin = (uint32_t)((uint64_t)n * t / k);
    *end = (uint32_t)((uint64_t)n * (t + 1) / k);
}

#endif
