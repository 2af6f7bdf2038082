/* core/threadpool.c — see threadpool.h. A job is published by bumping
 * `generation` under the mutex; each worker runs its range and decrements
 * `pending`; the last one signals `done`. */
#include "core/threadpool.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

/* p->spin_ns: how long a worker keeps polling for the next job before it
 * sleeps, and how long the caller polls for the end of a job. Polling yields
 * the core (sched_yield), so on an oversubscribed machine the thread doing
 * real work still gets it. */
#define SPIN_CHECK 64 /* polls between clock reads */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Poll until (*v != value) == differ, or stop is set, or the spin window
 * ends; returns the last value seen. */
static unsigned spin_on(atomic_uint *v, unsigned value, bool differ, const atomic_bool *stop, uint64_t spin_ns)
{
    const uint64_t t0 = now_ns();
    for (unsigned i = 1;; i++) {
        unsigned cur = atomic_load_explicit(v, memory_order_acquire);
        if ((cur != value) == differ || (stop && atomic_load_explicit(stop, memory_order_relaxed)))
            return cur;
        if (i % SPIN_CHECK == 0) {
            if (now_ns() - t0 > spin_ns)
                return cur;
            sched_yield();
        } else {
            cpu_relax();
        }
    }
}

struct worker_arg {
    struct threadpool *p;
    uint32_t index;
};

static void run_range(struct threadpool *p, uint32_t t)
{
    uint32_t b, e;
    threadpool_range(p->n, p->n_threads, t, &b, &e);
    if (b < e)
        p->fn(p->ctx, b, e, t);
}

static void *worker_main(void *arg)
{
    struct worker_arg *wa = arg;
    struct threadpool *p = wa->p;
    const uint32_t t = wa->index;
    free(wa);
    unsigned seen = 0;
    for (;;) {
        unsigned g = spin_on(&p->generation, seen, true, &p->stop, p->spin_ns);
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = g;
        run_range(p, t);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

int threadpool_init(struct threadpool *p, uint32_t n_threads, uint64_t spin_ns, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->spin_ns = spin_ns;
    if (n_threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (uint32_t)n : 1;
    }
    if (n_threads > 1024)
        n_threads = 1024;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = calloc(n_threads, sizeof(pthread_t));
    if (!p->threads)
        return err_set(err, errlen, "threadpool: out of memory");
    for (uint32_t t = 1; t < n_threads; t++) {
        struct worker_arg *wa = malloc(sizeof(*wa));
        if (wa) {
            wa->p = p;
            wa->index = t;
        }
        if (!wa || pthread_create(&p->threads[t - 1], NULL, worker_main, wa) != 0) {
            free(wa);
            p->n_threads = t; /* threads 1..t-1 exist */
            threadpool_free(p);
            return err_set(err, errlen, "threadpool: cannot start thread %u", t);
        }
    }
    return 0;
}

void threadpool_run(struct threadpool *p, uint32_t n, threadpool_fn fn, void *ctx)
{
    if (p->n_threads <= 1 || n <= 1) {
        if (n > 0)
            fn(ctx, 0, n, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store(&p->pending, p->n_threads - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_range(p, 0);
    if (spin_on(&p->pending, 0, false, NULL, p->spin_ns) == 0)
        return;
    {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) != 0)
            pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

void threadpool_free(struct threadpool *p)
{
    if (!p->threads)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t t = 1; t < p->n_threads; t++)
        pthread_join(p->threads[t - 1], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    memset(p, 0, sizeof(*p));
}
