/* sample/sample_batch.h — sampling the rows of many sequences at once, spread
 * over a small pool of threads: the engine's step hands over every sequence
 * whose token it must draw from logits (temperature, top-k/p, penalties,
 * logprobs; plain greedy picks come from the backend).
 *
 * Why: one row of a 128 k vocabulary costs ~0.3-1 ms (sampler.c's passes over
 * the logits); 64 sequences sampled one after another on the engine thread
 * would take longer than a GPU decode step of all 64. Each row is independent
 * — its sampler (PRNG, penalty history) belongs to its sequence and each
 * thread has its own scratch — so the results are the same bits as one after
 * another, whatever the thread count.
 */
#ifndef MEMRA_SAMPLE_SAMPLE_BATCH_H
#define MEMRA_SAMPLE_SAMPLE_BATCH_H

#include "core/threadpool.h"
#include "sample/sample.h"

/* The most threads a batch sampler starts (more gain little at 64 rows). */
#define SAMPLE_BATCH_MAX_THREADS 8u

/* One row to sample: sampler_sample(s, ·, logits, out), or with z set
 * sampler_sample_z(s, ·, logits, greedy) (the row is z = l / temperature:
 * a nucleus draw the backend's candidates could not decide). */
struct sample_job {
    struct sampler *s;
    const float *logits; /* (n_vocab) */
    struct sample_result *out;
    bool z;
    int32_t greedy;
};

struct sample_batch {
    struct threadpool pool;   /* n_threads, the caller included */
    struct sample_work *work; /* (pool.n_threads) one scratch a thread */
};

/* n_threads 0: min(online cores, SAMPLE_BATCH_MAX_THREADS). 0, or -1 with
 * the reason in err (nothing to free then). */
int sample_batch_init(struct sample_batch *b, uint32_t n_vocab, uint32_t n_threads, char *err, size_t errlen);
void sample_batch_free(struct sample_batch *b);

/* Sample jobs[0..n); returns when all are done. */
void sample_batch_run(struct sample_batch *b, const struct sample_job *jobs, uint32_t n);

#endif
