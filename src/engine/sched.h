/* engine/sched.h — continuous batching: one engine thread that owns a backend and
 * the paged KV pool (engine/kv_pool.h), and runs every generation request on it.
 *
 * The server (any thread) submits a job — a tokenized prompt, sampling params,
 * max_tokens, stop strings, its prefix-cache namespace (model alias, tenant,
 * cache_salt) and lane (interactive or batch) — and gets a handle. The engine
 * thread, each step:
 *   1. drops cancelled jobs (their blocks go back to the pool at once),
 *   2. admits waiting jobs, interactive lane first, FIFO within a lane, while a
 *      sequence is free: attach the longest cached prefix of the prompt (full
 *      blocks of the same namespace; at least one prompt token is always
 *      recomputed so the job gets logits, copying the shared block it writes),
 *      then reserve blocks for the rest of the prompt,
 *   3. reserves each decoding job's next position (oldest first),
 *   4. builds ONE batch: a decode token for every job past its prompt, then
 *      prefill chunks, oldest admission first, within a token budget per step
 *      (max_batch_tokens), so a long prompt is prefilled over several steps
 *      while the other sequences keep decoding; a prompt is cut only at
 *      multiples of (max_batch_tokens − max_seqs) positions and a chunk that
 *      does not fit waits for the next step, so its spans — and on the CUDA
 *      backend its bits — do not depend on what else runs,
 *   5. runs backend forward, commits the new KV to the pool (newly full blocks
 *      join the prefix tree), samples the jobs whose prompt is complete, turns
 *      tokens into text (streaming detokenizer, then the stop-string matcher)
 *      and appends text, tokens and logprobs to each job's output, then calls
 *      the job's notify callback (at most once per job per step).
 *
 * KV exhausted (the pool cannot give the blocks a step needs):
 *   - a new interactive job first preempts running batch-lane jobs, newest
 *     first; if that is not enough it ends at once with SCHED_FINISH_REFUSED
 *     (the server answers 503 + Retry-After); a batch job, or a job that was
 *     preempted, waits (FIFO: it holds back its lane's queue);
 *   - a running job that needs a block for its next token preempts the newest
 *     batch-lane job, or, when none runs, the newest job (possibly itself):
 *     a running job never fails for lack of blocks.
 *   A preempted job's blocks are released and it goes back to the head of its
 *   lane's queue; when re-admitted it recomputes its prompt and the tokens it
 *   already generated (its prefix mostly comes back from the cache) and carries
 *   on sampling where it stopped: no text is emitted twice, and its sampler,
 *   detokenizer and stop matcher keep their state.
 * sched_max_ctx is min(the backend's context, the pool's positions), so a job
 * alone always fits.
 *
 * Prefix reuse changes speed, not results: the backend guarantees a sequence's
 * logits depend only on its tokens and the KV values it reads (backend.h), as
 * far as its numerics do not depend on how a prompt is chunked.
 *
 * Finish: "stop" when the sampler picks an end-of-generation token (EOS,
 * end-of-turn; the token adds no text) or a stop string matches (the text ends
 * before it); "length" at max_tokens or when the context is full. Tokens are
 * counted in n_generated either way.
 *
 * Threads and ownership: a job is shared by the engine and the submitter and
 * freed when both released it (the engine releases when it finishes the job,
 * the submitter with sched_job_release). Output is guarded by the job's mutex;
 * notify runs on the engine thread with that mutex held, so it must only wake
 * the submitter (e.g. libevent's event_active), never call back into sched.
 */
#ifndef MEMRA_ENGINE_SCHED_H
#define MEMRA_ENGINE_SCHED_H

#include "engine/backend.h"
#include "sample/sample.h"
#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sched;
struct sched_job;

struct sched_config {
    uint32_t max_batch_tokens; /* token budget per step, ≤ the backend's; 0: the backend's */
    bool prefix_reuse;         /* attach cached KV prefixes (the pool is paged either way) */
};

enum sched_finish {
    SCHED_RUNNING,
    SCHED_FINISH_STOP,
    SCHED_FINISH_LENGTH,
    SCHED_FINISH_CANCELLED, /* sched_job_cancel, or the engine shut down */
    SCHED_FINISH_ERROR,     /* the backend failed; output.error says why */
    SCHED_FINISH_REFUSED,   /* an interactive job found the KV pool full and nothing to preempt */
};

enum sched_lane {
    SCHED_LANE_INTERACTIVE, /* admitted first; may preempt batch work; refused when KV is full */
    SCHED_LANE_BATCH,       /* admitted after interactive work; preempted first; waits when KV is full */
};

/* What a job produced since the last sched_job_take. */
struct sched_output {
    char *text;                    /* (text_len) new visible text, UTF-8 */
    size_t text_len, text_cap;
    struct sample_result *tokens;  /* (n_tokens) new generated tokens with logprobs
                                      (only when params.sample.logprobs; end-of-generation
                                      tokens are not listed) */
    uint32_t n_tokens, tokens_cap;
    /* totals, not deltas */
    uint32_t n_prompt;             /* prompt tokens */
    uint32_t n_cached;             /* prompt tokens whose KV was reused (at the first admission) */
    uint32_t n_preempted;          /* times the job lost its KV and was recomputed */
    uint32_t n_generated;          /* tokens generated so far */
    bool admitted;                 /* the job has had a KV sequence (then queue_ns is set) */
    uint64_t queue_ns;             /* submission → first admission, nanoseconds */
    enum sched_finish finish;      /* SCHED_RUNNING until the job ends; then no more output */
    char error[256];
};

struct sched_params {
    const int32_t *prompt;    /* (n_prompt) copied; ≥ 1 token, ids < vocab */
    uint32_t n_prompt;
    struct sample_params sample; /* stop_tokens are replaced by the model's end-of-generation
                                    tokens; logit_bias is copied */
    uint32_t max_tokens;      /* 0: until the context is full */
    const char *const *stop;  /* (n_stop) NUL-terminated stop strings, copied */
    uint32_t n_stop;
    void (*notify)(void *arg); /* new output or finish; engine thread, job mutex held */
    void *notify_arg;
    /* the prefix-cache namespace: KV is shared only between jobs with the same
     * three strings (NULL reads as ""; copied; together < KV_POOL_NS_MAX bytes) */
    const char *cache_model;  /* model alias */
    const char *cache_tenant; /* tenant */
    const char *cache_salt;   /* the request's cache_salt */
    enum sched_lane lane;
};

/* Start the engine thread over backend b (which the caller keeps and frees after
 * sched_stop) and tokenizer tok. 0 or -1 with the reason in err. */
int sched_start(struct sched **out, struct backend *b, const struct tokenizer *tok, const struct sched_config *cfg,
                char *err, size_t errlen);
/* Finish every job with SCHED_FINISH_CANCELLED, stop and join the thread, free. */
void sched_stop(struct sched *s);

/* Positions a sequence may hold (prompt + generated): min(backend context, pool positions). */
uint32_t sched_max_ctx(const struct sched *s);

/* Queue a job. Fails (-1, reason in err, nothing queued) when the prompt is empty
 * or does not leave room for one generated token, a token id is outside the
 * vocabulary, the sampling params are invalid or the namespace is too long. */
int sched_submit(struct sched *s, const struct sched_params *p, struct sched_job **out, char *err, size_t errlen);

/* Move the job's new output into *dst (whose buffers are reused: zero it before
 * the first call, free it with sched_output_free). Totals and finish are copied. */
void sched_job_take(struct sched_job *j, struct sched_output *dst);
/* Whether the job has been admitted into the KV pool, and its finish
 * (SCHED_RUNNING while it runs), without taking its output. */
void sched_job_peek(struct sched_job *j, bool *admitted, enum sched_finish *finish);
/* Ask the engine to stop the job; its KV blocks are released within one step. */
void sched_job_cancel(struct sched_job *j);
/* The submitter's release: no notify calls after it returns. Cancels a job
 * still running. */
void sched_job_release(struct sched_job *j);
void sched_output_free(struct sched_output *o);

/* Counters for /health and metrics (read without locks; approximate).
 * progress_ns (CLOCK_MONOTONIC) is when the engine last showed progress: the
 * end of a step, a wake-up with work, or a job arriving while it idled; an
 * engine with work and an old progress_ns is stalled (server/health.h). */
struct sched_stats {
    uint32_t running, waiting;
    uint32_t n_slots;            /* sequences at once (the backend's max_seqs) */
    uint32_t kv_blocks;          /* blocks in the pool */
    uint32_t kv_used, kv_free, kv_cached; /* referenced / free / cached-evictable blocks (end of last step) */
    uint64_t steps, tokens_generated, tokens_prefilled;
    uint64_t prefix_lookups, prefix_hit_tokens; /* admissions that looked up the cache, tokens found */
    uint64_t kv_evictions, preemptions, refusals;
    uint64_t progress_ns;
};
void sched_get_stats(const struct sched *s, struct sched_stats *out);

#endif
