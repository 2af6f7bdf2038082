/* engine/sched_internal.h — the scheduler's state, shared by its two files:
 * sched.c (the engine thread and its continuous-batching step) and
 * sched_job.c (a job's output and reference count, and the calls of the
 * submitting threads). Nothing outside src/engine/sched*.c includes it; the
 * public interface is sched.h.
 *
 * Locking: a job's `mu` guards its refs and its shared output; the scheduler's
 * `mu` guards `incoming`, `idle` and `stopping`; everything marked "engine
 * thread" belongs to the engine thread alone.
 */
#ifndef MEMRA_ENGINE_SCHED_INTERNAL_H
#define MEMRA_ENGINE_SCHED_INTERNAL_H

#include "engine/kv_pool.h"
#include "engine/sched.h"
#include "sample/sample_batch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum job_state { JOB_WAITING, JOB_PREFILL, JOB_DECODE, JOB_DONE };

struct sched_job {
    pthread_mutex_t mu;
    int refs;                 /* engine + submitter; guarded by mu */
    atomic_bool cancel;
    struct sched_job *next;   /* incoming / waiting list link */

    /* immutable after submit */
    uint32_t n_prompt;
    uint32_t max_tokens;      /* 0: until the context is full */
    uint32_t cap;             /* toks capacity: prompt + the most it may generate, ≤ max_ctx */
    bool want_logprobs;
    enum sched_lane lane;
    char *ns;                 /* model, tenant and salt, each NUL-terminated, one after the other */
    uint64_t submit_ns;       /* CLOCK_MONOTONIC at submit */

    /* engine thread only */
    enum job_state state;
    int32_t *toks;            /* (cap) the prompt, then the generated tokens */
    uint32_t seq;             /* pool sequence while PREFILL/DECODE */
    uint32_t n_feed;          /* tokens to prefill at this admission (then sample) */
    uint32_t n_past;          /* positions whose KV the sequence holds */
    uint32_t n_gen;
    uint32_t n_preempted;
    bool ever_admitted;
    uint64_t admit_order;     /* larger: admitted later ("newest") */
    struct sampler sampler;
    int32_t argmax_tok;       /* the backend's greedy pick (backend_seq.argmax) when the sampler is plain greedy */
    struct backend_draw draw; /* the backend's temperature draw (backend_seq.draw) ... */
    uint64_t draw_rng[4];     /* ... and the sampler's PRNG state before its u */
    int32_t *cand_idx;        /* (top_k, or BACKEND_TOPK_MAX for a nucleus sampler) the backend's candidates
                                 (draw.top_k / draw.nucleus); NULL when it makes none */
    float *cand_val;
    uint32_t nucleus_skip;    /* nucleus draws left to take the host's way (its last one needed the row) */
    struct detok_stream detok;
    struct stop_matcher stops;
    char *piece;              /* (piece_cap) detokenizer output scratch */
    size_t piece_cap;

    /* shared, guarded by mu */
    struct sched_output out;
    void (*notify)(void *arg);
    void *notify_arg;
};

struct sched {
    struct backend *b;
    const struct tokenizer *tok;
    struct sched_config cfg;
    uint32_t max_seqs, max_ctx, vocab;
    int32_t eog[SAMPLE_MAX_STOP_TOKENS]; /* end-of-generation tokens */
    uint32_t n_eog;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    bool idle;                /* the engine thread waits for work; guarded by mu */
    struct sched_job *incoming, *incoming_tail; /* guarded by mu */

    /* engine thread */
    struct sched_job *waiting[2], *waiting_tail[2]; /* per enum sched_lane, FIFO */
    struct kv_pool *pool;
    struct sched_job **run;                     /* (max_seqs) job of each pool sequence, or NULL */
    uint32_t n_run;
    uint64_t admit_counter;
    struct kv_pool_copy *copies;                /* (kv_pool_max_seq_blocks) one reserve's copy-on-write pairs */
    struct backend_seq *seqs;                   /* (max_seqs) batch scratch */
    struct sched_job **seq_job;                 /* (max_seqs) job of seqs[i] */
    struct sched_job **pf;                      /* (max_seqs) this step's prefilling jobs, oldest admission first */
    uint32_t pf_grain;                          /* prefill chunks end at multiples of this position (sched.c) */
    float *logits;                              /* (max_seqs, vocab) */
    struct sample_batch sb;                     /* samples a step's rows over a few threads */
    struct sample_job *sjobs;                   /* (max_seqs) this step's rows to sample */
    const struct backend_draw **zdraw;          /* (max_seqs) nucleus draws that need their z row */
    float **zrow;                               /* (max_seqs) where each goes (the sequence's logits room) */
    struct sample_result *sres;                 /* (max_seqs) their results, by batch index */

    _Atomic uint32_t st_running, st_waiting, st_kv_used, st_kv_free, st_kv_cached;
    _Atomic uint64_t st_steps, st_generated, st_prefilled, st_lookups, st_hit_tokens, st_evictions;
    _Atomic uint64_t st_preemptions, st_refusals;
    _Atomic uint64_t st_progress_ns;
    /* where the engine thread's time goes (debug log every SCHED_PROFILE_STEPS steps) */
    uint64_t prof_plan_ns, prof_fwd_ns, prof_sample_ns, prof_seqs, prof_steps;
    uint64_t prof_nucleus, prof_nucleus_rows; /* nucleus draws, and those the row decided */
};

/* sched_job.c: CLOCK_MONOTONIC in ns; append to a job's output (its mutex
 * held; -1: out of memory); drop one reference (the last frees the job). */
uint64_t sched_now_ns(void);
int sched_out_append_text(struct sched_output *o, const char *s, size_t n);
int sched_out_append_token(struct sched_output *o, const struct sample_result *r);
void sched_job_unref(struct sched_job *j);

#endif
