/* sample/sample_batch.c — see sample_batch.h. The pool sleeps between steps
 * (no polling window: one job a step), and a single row runs on the caller. */
#include "sample/sample_batch.h"

#include "core/log.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sample_batch_init(struct sample_batch *b, uint32_t n_vocab, uint32_t n_threads, char *err, size_t errlen)
{
    memset(b, 0, sizeof(*b));
    if (n_threads == 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (uint32_t)n : 1;
        n_threads = n_threads < SAMPLE_BATCH_MAX_THREADS ? n_threads : SAMPLE_BATCH_MAX_THREADS;
    }
    if (threadpool_init(&b->pool, n_threads, 0, err, errlen) != 0)
        return -1;
    b->work = calloc(b->pool.n_threads, sizeof(*b->work));
    if (!b->work) {
        threadpool_free(&b->pool);
        return err_set(err, errlen, "sample_batch: out of memory");
    }
    for (uint32_t t = 0; t < b->pool.n_threads; t++) {
        if (sample_work_init(&b->work[t], n_vocab, err, errlen) != 0) {
            sample_batch_free(b);
            return -1;
        }
    }
    return 0;
}

void sample_batch_free(struct sample_batch *b)
{
    if (b->work)
        for (uint32_t t = 0; t < b->pool.n_threads; t++)
            sample_work_free(&b->work[t]);
    free(b->work);
    threadpool_free(&b->pool);
    memset(b, 0, sizeof(*b));
}

struct batch_ctx {
    struct sample_batch *b;
    const struct sample_job *jobs;
};

static void batch_task(void *ctx, uint32_t begin, uint32_t end, uint32_t thread)
{
    const struct batch_ctx *c = ctx;
    for (uint32_t i = begin; i < end; i++) {
        const struct sample_job *j = &c->jobs[i];
        if (j->z)
            *j->out = (struct sample_result){.token = sampler_sample_z(j->s, &c->b->work[thread], j->logits,
                                                                       j->greedy)};
        else
            sampler_sample(j->s, &c->b->work[thread], j->logits, j->out);
    }
}

void sample_batch_run(struct sample_batch *b, const struct sample_job *jobs, uint32_t n)
{
    struct batch_ctx c = {b, jobs};
    threadpool_run(&b->pool, n, batch_task, &c);
}
