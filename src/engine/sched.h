/* engine/sched.h — continuous batching: one engine thread that owns a backend and
 * runs every generation request on it.
 *
 * The server (any thread) submits a job — a tokenized prompt, sampling params,
 * max_tokens and stop strings — and gets a handle. The engine thread, each step:
 *   1. drops cancelled jobs (their KV slot is free for the next admission),
 *   2. admits waiting jobs (FIFO) into free KV slots,
 *   3. builds ONE batch: a decode token for every job past its prompt, then
 *      prefill chunks of the admitted prompts in admission order, within a token
 *      budget per step (max_batch_tokens), so a long prompt is prefilled over
 *      several steps while the other sequences keep decoding,
 *   4. runs backend forward, samples the jobs whose prompt is complete, turns
 *      tokens into text (streaming detokenizer, then the stop-string matcher) and
 *      appends text, tokens and logprobs to each job's output, then calls the
 *      job's notify callback (at most once per job per step).
 * Jobs join and leave at step granularity; a cancelled job (client gone) frees
 * its slot at the start of the next step.
 *
 * Prefix reuse: each slot remembers the tokens its KV holds. A new job takes
 * the free slot sharing the longest prefix with its prompt and starts its
 * prefill after that prefix (at least one prompt token is always recomputed so
 * the job gets logits); the reused count is reported as cached_tokens. The
 * backend guarantees a sequence's logits depend only on its tokens and KV, so
 * reuse changes speed, not results (as far as the backend's numerics are
 * independent of how a prompt is chunked — see backend.h).
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
    bool prefix_reuse;         /* reuse a free slot's KV prefix */
};

enum sched_finish {
    SCHED_RUNNING,
    SCHED_FINISH_STOP,
    SCHED_FINISH_LENGTH,
    SCHED_FINISH_CANCELLED, /* sched_job_cancel, or the engine shut down */
    SCHED_FINISH_ERROR,     /* the backend failed; output.error says why */
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
    uint32_t n_cached;             /* prompt tokens whose KV was reused */
    uint32_t n_generated;          /* tokens generated so far */
    bool admitted;                 /* the job has had a KV slot (then queue_ns is set) */
    uint64_t queue_ns;             /* submission → admission into a KV slot, nanoseconds */
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
};

/* Start the engine thread over backend b (which the caller keeps and frees after
 * sched_stop) and tokenizer tok. 0 or -1 with the reason in err. */
int sched_start(struct sched **out, struct backend *b, const struct tokenizer *tok, const struct sched_config *cfg,
                char *err, size_t errlen);
/* Finish every job with SCHED_FINISH_CANCELLED, stop and join the thread, free. */
void sched_stop(struct sched *s);

/* Positions a sequence may hold (prompt + generated). */
uint32_t sched_max_ctx(const struct sched *s);

/* Queue a job. Fails (-1, reason in err, nothing queued) when the prompt is empty
 * or does not leave room for one generated token, a token id is outside the
 * vocabulary, or the sampling params are invalid. */
int sched_submit(struct sched *s, const struct sched_params *p, struct sched_job **out, char *err, size_t errlen);

/* Move the job's new output into *dst (whose buffers are reused: zero it before
 * the first call, free it with sched_output_free). Totals and finish are copied. */
void sched_job_take(struct sched_job *j, struct sched_output *dst);
/* Ask the engine to stop the job; its slot is freed within one step. */
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
    uint32_t running, waiting, n_slots;
    uint64_t steps, tokens_generated, tokens_prefilled;
    uint64_t progress_ns;
};
void sched_get_stats(const struct sched *s, struct sched_stats *out);

#endif
