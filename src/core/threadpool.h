/* core/threadpool.h — a fixed pool of worker threads: the CPU backend's
 * forward, and the engine's sampling of a step's sequences (sample_batch.h).
 *
 * threadpool_run splits [0, n) into n_threads contiguous ranges and runs
 * fn(ctx, begin, end, thread) on each, the calling thread taking range 0, and
 * returns when all are done. The split depends only on n and the thread count,
 * never on timing, so results are reproducible. Workers poll for spin_ns
 * after a job (the CPU decode issues hundreds of small jobs per token:
 * THREADPOOL_SPIN_NS) and then sleep on a condition variable, so an idle pool
 * costs no CPU; a pool whose jobs are rare (one a step) passes 0.
 */
#ifndef MEMRA_CORE_THREADPOOL_H
#define MEMRA_CORE_THREADPOOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*threadpool_fn)(void *ctx, uint32_t begin, uint32_t end, uint32_t thread);

struct threadpool {
    uint32_t n_threads;        /* including the caller */
    uint64_t spin_ns;          /* how long an idle thread polls before it sleeps */
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

/* The polling window of the CPU backend's pool: decode issues a job every few
 * tens of microseconds with short serial parts in between. */
#define THREADPOOL_SPIN_NS 300000u

/* n_threads 0: all online cores. 0, or -1 with the reason in err. */
int threadpool_init(struct threadpool *p, uint32_t n_threads, uint64_t spin_ns, char *err, size_t errlen);
void threadpool_run(struct threadpool *p, uint32_t n, threadpool_fn fn, void *ctx);
void threadpool_free(struct threadpool *p);

/* The range of thread t when [0, n) is split over k threads. */
static inline void threadpool_range(uint32_t n, uint32_t k, uint32_t t, uint32_t *begin, uint32_t *end)
{
    *begin = (uint32_t)((uint64_t)n * t / k);
    *end = (uint32_t)((uint64_t)n * (t + 1) / k);
}

#endif
