/* engine/sched.c — the engine thread and its continuous-batching step; see sched.h.
 *
 * State: jobs arrive on `incoming` (mutex s->mu); the engine thread alone owns
 * `waiting` (FIFO, not yet in a slot) and the per-slot table `slots[]` (the job
 * in each slot, and the tokens its KV holds for prefix reuse). Per-step scratch
 * (the batch, logits) is allocated once at start.
 */
#include "engine/sched.h"

#include "core/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum job_state { JOB_WAITING, JOB_PREFILL, JOB_DECODE, JOB_DONE };

struct sched_job {
    pthread_mutex_t mu;
    int refs;                 /* engine + submitter; guarded by mu */
    atomic_bool cancel;
    struct sched_job *next;   /* incoming / waiting list link */

    /* immutable after submit */
    int32_t *prompt;          /* (n_prompt) */
    uint32_t n_prompt;
    uint32_t max_tokens;      /* 0: until the context is full */
    bool want_logprobs;
    uint64_t submit_ns;       /* CLOCK_MONOTONIC at submit */

    /* engine thread only */
    enum job_state state;
    uint32_t slot;
    uint32_t n_past;          /* tokens in the slot's KV */
    uint32_t n_gen;
    int32_t last;             /* the token to feed next (DECODE) */
    struct sampler sampler;
    struct detok_stream detok;
    struct stop_matcher stops;
    char *piece;              /* (piece_cap) detokenizer output scratch */
    size_t piece_cap;

    /* shared, guarded by mu */
    struct sched_output out;
    void (*notify)(void *arg);
    void *notify_arg;
};

struct slot {
    struct sched_job *job;    /* NULL: free */
    int32_t *hist;            /* (max_ctx) tokens whose KV the slot holds */
    uint32_t *blocks;         /* (ceil(max_ctx / 16)) its block table: the linear region of slot i */
    uint32_t n_hist;
};

struct sched {
    struct backend *b;
    const struct tokenizer *tok;
    struct sched_config cfg;
    uint32_t n_slots, max_ctx, vocab;
    int32_t eog[SAMPLE_MAX_STOP_TOKENS]; /* end-of-generation tokens */
    uint32_t n_eog;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    bool idle;                /* the engine thread waits for work; guarded by mu */
    struct sched_job *incoming, *incoming_tail; /* guarded by mu */

    struct sched_job *waiting, *waiting_tail;   /* engine thread */
    struct slot *slots;                         /* (n_slots) */
    uint32_t *tables;                           /* (n_slots, ceil(max_ctx / 16)) the slots' block tables */
    struct backend_seq *seqs;                   /* (n_slots) batch scratch */
    struct sched_job **seq_job;                 /* (n_slots) job of seqs[i] */
    float *logits;                              /* (n_slots, vocab) */
    struct sample_work work;                    /* the sampler's scratch (engine thread) */

    _Atomic uint32_t st_running, st_waiting;
    _Atomic uint64_t st_steps, st_generated, st_prefilled;
    _Atomic uint64_t st_progress_ns;
};

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---- output (job mutex held by the caller) ---- */

static int out_append_text(struct sched_output *o, const char *s, size_t n)
{
    if (!n)
        return 0;
    if (o->text_len + n + 1 > o->text_cap) {
        size_t cap = o->text_cap ? o->text_cap : 256;
        while (cap < o->text_len + n + 1)
            cap *= 2;
        char *t = realloc(o->text, cap);
        if (!t)
            return -1;
        o->text = t;
        o->text_cap = cap;
    }
    memcpy(o->text + o->text_len, s, n);
    o->text_len += n;
    o->text[o->text_len] = '\0';
    return 0;
}

static int out_append_token(struct sched_output *o, const struct sample_result *r)
{
    if (o->n_tokens == o->tokens_cap) {
        uint32_t cap = o->tokens_cap ? o->tokens_cap * 2 : 16;
        struct sample_result *t = realloc(o->tokens, cap * sizeof(*t));
        if (!t)
            return -1;
        o->tokens = t;
        o->tokens_cap = cap;
    }
    o->tokens[o->n_tokens++] = *r;
    return 0;
}

void sched_output_free(struct sched_output *o)
{
    free(o->text);
    free(o->tokens);
    memset(o, 0, sizeof(*o));
}

static void job_unref(struct sched_job *j)
{
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left)
        return;
    sched_output_free(&j->out);
    sampler_free(&j->sampler);
    stop_matcher_free(&j->stops);
    free(j->piece);
    free(j->prompt);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* Engine thread: end the job, free its slot, wake the submitter, drop the engine's ref. */
static void job_finish(struct sched *s, struct sched_job *j, enum sched_finish f, const char *why)
{
    if (j->state == JOB_PREFILL || j->state == JOB_DECODE) {
        s->slots[j->slot].job = NULL;
        atomic_fetch_sub(&s->st_running, 1);
    }
    j->state = JOB_DONE;
    pthread_mutex_lock(&j->mu);
    j->out.finish = f;
    if (why)
        snprintf(j->out.error, sizeof(j->out.error), "%s", why);
    j->out.n_generated = j->n_gen;
    if (j->notify)
        j->notify(j->notify_arg);
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
}

/* ---- submit side ---- */

uint32_t sched_max_ctx(const struct sched *s) { return s->max_ctx; }

int sched_submit(struct sched *s, const struct sched_params *p, struct sched_job **out, char *err, size_t errlen)
{
    *out = NULL;
    if (p->n_prompt == 0)
        return err_set(err, errlen, "the prompt is empty (no tokens)");
    if (p->n_prompt >= s->max_ctx)
        return err_set(err, errlen, "the prompt has %u tokens; this server's context is %u tokens, which leaves no "
                       "room to generate", p->n_prompt, s->max_ctx);
    for (uint32_t i = 0; i < p->n_prompt; i++)
        if (p->prompt[i] < 0 || (uint32_t)p->prompt[i] >= s->vocab)
            return err_set(err, errlen, "prompt token id %d is outside the vocabulary (%u)", p->prompt[i], s->vocab);
    struct sched_job *j = calloc(1, sizeof(*j));
    if (!j)
        return err_set(err, errlen, "out of memory");
    struct sample_params sp = p->sample;
    sp.stop_tokens = s->eog;
    sp.n_stop_tokens = s->n_eog;
    if (sampler_init(&j->sampler, s->vocab, &sp, err, errlen)) {
        free(j);
        return -1;
    }
    if (stop_matcher_init(&j->stops, p->stop, p->n_stop, err, errlen)) {
        sampler_free(&j->sampler);
        free(j);
        return -1;
    }
    j->prompt = malloc(p->n_prompt * sizeof(int32_t));
    j->piece_cap = tokenizer_max_piece_len(s->tok) + 16;
    j->piece = malloc(j->piece_cap);
    if (!j->prompt || !j->piece) {
        free(j->prompt);
        free(j->piece);
        sampler_free(&j->sampler);
        stop_matcher_free(&j->stops);
        free(j);
        return err_set(err, errlen, "out of memory");
    }
    memcpy(j->prompt, p->prompt, p->n_prompt * sizeof(int32_t));
    j->n_prompt = p->n_prompt;
    j->max_tokens = p->max_tokens;
    j->want_logprobs = p->sample.logprobs;
    detok_stream_init(&j->detok, s->tok, false);
    pthread_mutex_init(&j->mu, NULL);
    j->refs = 2;
    j->state = JOB_WAITING;
    j->notify = p->notify;
    j->notify_arg = p->notify_arg;
    j->out.n_prompt = p->n_prompt;
    j->submit_ns = now_ns();
    atomic_init(&j->cancel, false);

    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        j->refs = 1;
        job_unref(j);
        return err_set(err, errlen, "the engine is shutting down");
    }
    if (s->incoming_tail)
        s->incoming_tail->next = j;
    else
        s->incoming = j;
    s->incoming_tail = j;
    if (s->idle) /* an idle engine showed no progress because it had nothing to do */
        atomic_store(&s->st_progress_ns, j->submit_ns);
    atomic_fetch_add(&s->st_waiting, 1);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    *out = j;
    return 0;
}

void sched_job_take(struct sched_job *j, struct sched_output *dst)
{
    pthread_mutex_lock(&j->mu);
    struct sched_output *o = &j->out;
    /* swap the buffers: dst gets the new output, the job gets dst's emptied buffers */
    char *t = dst->text;
    size_t tcap = dst->text_cap;
    struct sample_result *r = dst->tokens;
    uint32_t rcap = dst->tokens_cap;
    *dst = *o;
    o->text = t;
    o->text_cap = tcap;
    o->text_len = 0;
    o->tokens = r;
    o->tokens_cap = rcap;
    o->n_tokens = 0;
    pthread_mutex_unlock(&j->mu);
}

void sched_job_cancel(struct sched_job *j) { atomic_store(&j->cancel, true); }

void sched_job_release(struct sched_job *j)
{
    if (!j)
        return;
    atomic_store(&j->cancel, true);
    pthread_mutex_lock(&j->mu);
    j->notify = NULL;
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
}

void sched_get_stats(const struct sched *s, struct sched_stats *out)
{
    out->running = atomic_load(&((struct sched *)s)->st_running);
    out->waiting = atomic_load(&((struct sched *)s)->st_waiting);
    out->n_slots = s->n_slots;
    out->steps = atomic_load(&((struct sched *)s)->st_steps);
    out->tokens_generated = atomic_load(&((struct sched *)s)->st_generated);
    out->tokens_prefilled = atomic_load(&((struct sched *)s)->st_prefilled);
    out->progress_ns = atomic_load(&((struct sched *)s)->st_progress_ns);
}

/* ---- engine thread ---- */

/* Admit j into the free slot whose KV shares the longest prefix with its prompt. */
static void job_admit(struct sched *s, struct sched_job *j)
{
    uint32_t best = UINT32_MAX, best_lcp = 0;
    for (uint32_t i = 0; i < s->n_slots; i++) {
        if (s->slots[i].job)
            continue;
        uint32_t lcp = 0;
        if (s->cfg.prefix_reuse) {
            const struct slot *sl = &s->slots[i];
            uint32_t lim = sl->n_hist < j->n_prompt ? sl->n_hist : j->n_prompt;
            while (lcp < lim && sl->hist[lcp] == j->prompt[lcp])
                lcp++;
        }
        if (best == UINT32_MAX || lcp > best_lcp) {
            best = i;
            best_lcp = lcp;
        }
    }
    MEMRA_ASSERT(best != UINT32_MAX);
    if (best_lcp >= j->n_prompt)
        best_lcp = j->n_prompt - 1; /* recompute the last prompt token to get its logits */
    struct slot *sl = &s->slots[best];
    sl->job = j;
    sl->n_hist = best_lcp;
    j->slot = best;
    j->n_past = best_lcp;
    j->state = JOB_PREFILL;
    sampler_add_prompt(&j->sampler, j->prompt, j->n_prompt);
    pthread_mutex_lock(&j->mu);
    j->out.n_cached = best_lcp;
    j->out.admitted = true;
    uint64_t now = now_ns();
    j->out.queue_ns = now > j->submit_ns ? now - j->submit_ns : 0;
    pthread_mutex_unlock(&j->mu);
    atomic_fetch_sub(&s->st_waiting, 1);
    atomic_fetch_add(&s->st_running, 1);
}

/* Run text through the stop matcher into the output; true when a stop string matched. */
static bool emit_text(struct sched_job *j, const char *piece, size_t n)
{
    const char *vis;
    size_t vis_len;
    int m = stop_matcher_feed(&j->stops, piece, n, &vis, &vis_len);
    if (vis_len && out_append_text(&j->out, vis, vis_len))
        log_error("sched: out of memory appending output text");
    return m == 1;
}

/* End of stream without a stop string: release held-back text (job mutex held). */
static bool flush_text(struct sched_job *j)
{
    char tail[8];
    size_t n = detok_stream_flush(&j->detok, tail, sizeof(tail));
    if (n && emit_text(j, tail, n))
        return true;
    const char *vis;
    size_t vis_len;
    stop_matcher_flush(&j->stops, &vis, &vis_len);
    if (vis_len && out_append_text(&j->out, vis, vis_len))
        log_error("sched: out of memory appending output text");
    return false;
}

/* A sampled token: record it, detokenize, check the stop conditions. */
static void job_on_token(struct sched *s, struct sched_job *j, const struct sample_result *r)
{
    int32_t tok = r->token;
    j->n_gen++;
    atomic_fetch_add(&s->st_generated, 1);
    if (tok < 0 || sampler_is_stop_token(&j->sampler, tok)) {
        pthread_mutex_lock(&j->mu);
        flush_text(j);
        pthread_mutex_unlock(&j->mu);
        job_finish(s, j, SCHED_FINISH_STOP, NULL);
        return;
    }
    sampler_accept(&j->sampler, tok);
    size_t n = 0;
    char err[128];
    if (detok_stream_push(&j->detok, tok, j->piece, j->piece_cap, &n, err, sizeof(err))) {
        job_finish(s, j, SCHED_FINISH_ERROR, err);
        return;
    }
    pthread_mutex_lock(&j->mu);
    if (j->want_logprobs && out_append_token(&j->out, r))
        log_error("sched: out of memory appending a token");
    bool stopped = emit_text(j, j->piece, n);
    j->out.n_generated = j->n_gen;
    enum sched_finish f = SCHED_RUNNING;
    if (stopped)
        f = SCHED_FINISH_STOP;
    else if ((j->max_tokens && j->n_gen >= j->max_tokens) || j->n_past >= s->max_ctx)
        f = flush_text(j) ? SCHED_FINISH_STOP : SCHED_FINISH_LENGTH;
    if (f == SCHED_RUNNING && j->notify)
        j->notify(j->notify_arg);
    pthread_mutex_unlock(&j->mu);
    if (f != SCHED_RUNNING) {
        job_finish(s, j, f, NULL);
        return;
    }
    j->last = tok;
    j->state = JOB_DECODE;
}

/* One step: cancellations, admissions, one batch, sampling. Returns false when idle. */
static bool sched_step(struct sched *s)
{
    /* cancellations of running jobs */
    for (uint32_t i = 0; i < s->n_slots; i++) {
        struct sched_job *j = s->slots[i].job;
        if (j && atomic_load(&j->cancel))
            job_finish(s, j, SCHED_FINISH_CANCELLED, NULL);
    }
    /* cancellations of waiting jobs, then admissions (FIFO) */
    struct sched_job **pp = &s->waiting;
    s->waiting_tail = NULL;
    while (*pp) {
        struct sched_job *j = *pp;
        if (atomic_load(&j->cancel)) {
            *pp = j->next;
            atomic_fetch_sub(&s->st_waiting, 1);
            job_finish(s, j, SCHED_FINISH_CANCELLED, NULL);
            continue;
        }
        s->waiting_tail = j;
        pp = &j->next;
    }
    uint32_t n_free = 0;
    for (uint32_t i = 0; i < s->n_slots; i++)
        n_free += s->slots[i].job == NULL;
    while (n_free && s->waiting) {
        struct sched_job *j = s->waiting;
        s->waiting = j->next;
        if (!s->waiting)
            s->waiting_tail = NULL;
        j->next = NULL;
        job_admit(s, j);
        n_free--;
    }

    /* the batch: decode tokens first, then prefill chunks by admission order
     * (slot order stands in for it; the budget bounds how much prefill runs) */
    uint32_t budget = s->cfg.max_batch_tokens, n = 0;
    for (uint32_t i = 0; i < s->n_slots && budget; i++) {
        struct sched_job *j = s->slots[i].job;
        if (!j || j->state != JOB_DECODE)
            continue;
        s->seqs[n] = (struct backend_seq){.blocks = s->slots[i].blocks, .pos = j->n_past, .n_tokens = 1, .tokens = &j->last,
                                          .n_logits = 1, .logits = s->logits + (size_t)n * s->vocab};
        s->seq_job[n++] = j;
        budget--;
    }
    for (uint32_t i = 0; i < s->n_slots && budget; i++) {
        struct sched_job *j = s->slots[i].job;
        if (!j || j->state != JOB_PREFILL)
            continue;
        uint32_t chunk = j->n_prompt - j->n_past;
        if (chunk > budget)
            chunk = budget;
        bool last = j->n_past + chunk == j->n_prompt;
        s->seqs[n] = (struct backend_seq){.blocks = s->slots[i].blocks, .pos = j->n_past, .n_tokens = chunk,
                                          .tokens = j->prompt + j->n_past, .n_logits = last ? 1 : 0,
                                          .logits = last ? s->logits + (size_t)n * s->vocab : NULL};
        s->seq_job[n++] = j;
        budget -= chunk;
    }
    if (n == 0)
        return false;

    char err[256];
    struct backend_batch batch = {.n_seqs = n, .seqs = s->seqs};
    if (backend_forward(s->b, &batch, err, sizeof(err))) {
        log_error("sched: forward failed: %s", err);
        for (uint32_t i = 0; i < n; i++) {
            s->slots[s->seq_job[i]->slot].n_hist = 0;
            job_finish(s, s->seq_job[i], SCHED_FINISH_ERROR, err);
        }
        return true;
    }
    atomic_fetch_add(&s->st_steps, 1);
    atomic_store(&s->st_progress_ns, now_ns());
    for (uint32_t i = 0; i < n; i++) {
        const struct backend_seq *q = &s->seqs[i];
        struct sched_job *j = s->seq_job[i];
        struct slot *sl = &s->slots[j->slot];
        memcpy(sl->hist + q->pos, q->tokens, q->n_tokens * sizeof(int32_t));
        sl->n_hist = q->pos + q->n_tokens;
        j->n_past = sl->n_hist;
        if (j->state == JOB_PREFILL)
            atomic_fetch_add(&s->st_prefilled, q->n_tokens);
        if (!q->n_logits)
            continue;
        struct sample_result r;
        sampler_sample(&j->sampler, &s->work, q->logits, &r);
        job_on_token(s, j, &r);
    }
    return true;
}

static void *sched_thread(void *arg)
{
    struct sched *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        for (;;) {
            if (s->incoming) {
                if (s->waiting_tail)
                    s->waiting_tail->next = s->incoming;
                else
                    s->waiting = s->incoming;
                s->waiting_tail = s->incoming_tail;
                s->incoming = s->incoming_tail = NULL;
            }
            bool busy = s->waiting != NULL;
            for (uint32_t i = 0; i < s->n_slots && !busy; i++)
                busy = s->slots[i].job != NULL;
            if (s->stopping || busy)
                break;
            s->idle = true;
            pthread_cond_wait(&s->cv, &s->mu);
            s->idle = false;
            atomic_store(&s->st_progress_ns, now_ns());
        }
        bool stopping = s->stopping;
        pthread_mutex_unlock(&s->mu);
        if (stopping)
            break;
        sched_step(s);
    }
    /* shut down: every job still here ends as cancelled */
    for (uint32_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].job)
            job_finish(s, s->slots[i].job, SCHED_FINISH_CANCELLED, "the server is shutting down");
    pthread_mutex_lock(&s->mu);
    if (s->incoming) {
        if (s->waiting_tail)
            s->waiting_tail->next = s->incoming;
        else
            s->waiting = s->incoming;
        s->incoming = s->incoming_tail = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    while (s->waiting) {
        struct sched_job *j = s->waiting;
        s->waiting = j->next;
        atomic_fetch_sub(&s->st_waiting, 1);
        job_finish(s, j, SCHED_FINISH_CANCELLED, "the server is shutting down");
    }
    return NULL;
}

int sched_start(struct sched **out, struct backend *b, const struct tokenizer *tok, const struct sched_config *cfg,
                char *err, size_t errlen)
{
    *out = NULL;
    struct sched *s = calloc(1, sizeof(*s));
    if (!s)
        return err_set(err, errlen, "out of memory");
    s->b = b;
    s->tok = tok;
    s->cfg = *cfg;
    s->n_slots = b->cfg.max_seqs;
    s->max_ctx = b->cfg.max_ctx;
    s->vocab = b->model->cfg.vocab;
    if (!s->cfg.max_batch_tokens || s->cfg.max_batch_tokens > b->cfg.max_batch_tokens)
        s->cfg.max_batch_tokens = b->cfg.max_batch_tokens;
    if (s->cfg.max_batch_tokens < s->n_slots) {
        err_set(err, errlen, "max_batch_tokens %u is below the %u slots (one decode token each)",
                s->cfg.max_batch_tokens, s->n_slots);
        free(s);
        return -1;
    }
    if ((uint64_t)s->n_slots * backend_kv_blocks_for(s->max_ctx) > b->cfg.kv_blocks) {
        err_set(err, errlen, "the backend's KV pool of %u blocks is smaller than %u slots of %u positions need",
                b->cfg.kv_blocks, s->n_slots, s->max_ctx);
        free(s);
        return -1;
    }
    if (tokenizer_n_vocab(tok) > s->vocab) {
        err_set(err, errlen, "the tokenizer has %u tokens but the model's vocabulary is %u", tokenizer_n_vocab(tok),
                s->vocab);
        free(s);
        return -1;
    }
    uint32_t nv = tokenizer_n_vocab(tok);
    for (uint32_t t = 0; t < nv && s->n_eog < SAMPLE_MAX_STOP_TOKENS; t++)
        if (tokenizer_is_eog(tok, (int32_t)t))
            s->eog[s->n_eog++] = (int32_t)t;
    if (s->n_eog == 0)
        log_warn("sched: the tokenizer names no end-of-generation token; generation stops at max_tokens only");
    s->slots = calloc(s->n_slots, sizeof(*s->slots));
    s->seqs = calloc(s->n_slots, sizeof(*s->seqs));
    s->seq_job = calloc(s->n_slots, sizeof(*s->seq_job));
    s->logits = malloc((size_t)s->n_slots * s->vocab * sizeof(float));
    const uint32_t nb = backend_kv_blocks_for(s->max_ctx);
    s->tables = malloc((size_t)s->n_slots * nb * sizeof(uint32_t));
    bool ok = s->slots && s->seqs && s->seq_job && s->logits && s->tables;
    for (uint32_t i = 0; ok && i < s->n_slots; i++) {
        ok = (s->slots[i].hist = malloc((size_t)s->max_ctx * sizeof(int32_t))) != NULL;
        s->slots[i].blocks = s->tables + (size_t)i * nb;
        backend_blocks_linear(s->slots[i].blocks, i, s->max_ctx);
    }
    if (!ok)
        goto oom;
    if (sample_work_init(&s->work, s->vocab, err, errlen))
        goto fail;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    atomic_init(&s->st_progress_ns, now_ns());
    if (pthread_create(&s->thread, NULL, sched_thread, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        sample_work_free(&s->work);
        err_set(err, errlen, "cannot start the engine thread");
        goto fail;
    }
    *out = s;
    return 0;
oom:
    err_set(err, errlen, "out of memory for %u slots of %u positions", s->n_slots, s->max_ctx);
fail:
    for (uint32_t i = 0; s->slots && i < s->n_slots; i++)
        free(s->slots[i].hist);
    free(s->slots);
    free(s->tables);
    free(s->seqs);
    free(s->seq_job);
    free(s->logits);
    free(s);
    return -1;
}

void sched_stop(struct sched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    for (uint32_t i = 0; i < s->n_slots; i++)
        free(s->slots[i].hist);
    free(s->slots);
    free(s->tables);
    free(s->seqs);
    free(s->seq_job);
    free(s->logits);
    sample_work_free(&s->work);
    free(s);
}
