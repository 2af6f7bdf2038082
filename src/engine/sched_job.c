/* engine/sched_job.c — the scheduler's job side: a job's output buffers and
 * reference count, and what the submitting threads call (sched_submit, then
 * take / peek / cancel / release, and the scheduler's stats). The engine
 * thread that runs the jobs is sched.c; their shared state is
 * sched_internal.h.
 */
#include "engine/sched_internal.h"

#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t sched_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---- output (job mutex held by the caller) ---- */

int sched_out_append_text(struct sched_output *o, const char *s, size_t n)
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

int sched_out_append_token(struct sched_output *o, const struct sample_result *r)
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

/* Every buffer a job owns, then the job (not its mutex): the last reference's
 * end, and sched_submit's when an allocation fails after its sampler and stop
 * matcher were made. */
static void job_free(struct sched_job *j)
{
    sched_output_free(&j->out);
    sampler_free(&j->sampler);
    stop_matcher_free(&j->stops);
    free(j->piece);
    free(j->toks);
    free(j->ns);
    free(j->cand_idx);
    free(j->cand_val);
    free(j);
}

void sched_job_unref(struct sched_job *j)
{
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left)
        return;
    pthread_mutex_destroy(&j->mu);
    job_free(j);
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
    const char *nm = p->cache_model ? p->cache_model : "", *nt = p->cache_tenant ? p->cache_tenant : "",
               *ns = p->cache_salt ? p->cache_salt : "";
    size_t lm = strlen(nm), lt = strlen(nt), ls = strlen(ns);
    if (lm + lt + ls + 12 > KV_POOL_NS_MAX)
        return err_set(err, errlen, "the prefix-cache namespace (model, tenant, cache_salt: %zu bytes) is longer "
                       "than %u bytes", lm + lt + ls, KV_POOL_NS_MAX - 12);
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
    uint64_t cap = p->max_tokens ? (uint64_t)p->n_prompt + p->max_tokens : s->max_ctx;
    j->cap = cap < s->max_ctx ? (uint32_t)cap : s->max_ctx;
    j->toks = malloc((size_t)j->cap * sizeof(int32_t));
    j->ns = malloc(lm + lt + ls + 3);
    j->piece_cap = detok_stream_cap(s->tok);
    j->piece = malloc(j->piece_cap);
    if (s->b->device_topk && (sampler_topk_candidates(&j->sampler, BACKEND_TOPK_MAX) ||
                              sampler_nucleus_candidates(&j->sampler))) {
        const size_t k = sampler_topk_candidates(&j->sampler, BACKEND_TOPK_MAX) ? (size_t)sp.top_k
                                                                                 : BACKEND_TOPK_MAX;
        j->cand_idx = malloc(k * sizeof(int32_t));
        j->cand_val = malloc(k * sizeof(float));
    }
    if (!j->toks || !j->piece || !j->ns || (j->cand_idx == NULL) != (j->cand_val == NULL)) {
        job_free(j);
        return err_set(err, errlen, "out of memory");
    }
    memcpy(j->ns, nm, lm + 1);
    memcpy(j->ns + lm + 1, nt, lt + 1);
    memcpy(j->ns + lm + lt + 2, ns, ls + 1);
    memcpy(j->toks, p->prompt, p->n_prompt * sizeof(int32_t));
    j->n_prompt = p->n_prompt;
    j->max_tokens = p->max_tokens;
    j->want_logprobs = p->sample.logprobs;
    j->lane = p->lane == SCHED_LANE_BATCH ? SCHED_LANE_BATCH : SCHED_LANE_INTERACTIVE;
    detok_stream_init(&j->detok, s->tok, false);
    pthread_mutex_init(&j->mu, NULL);
    j->refs = 2;
    j->state = JOB_WAITING;
    j->notify = p->notify;
    j->notify_arg = p->notify_arg;
    j->out.n_prompt = p->n_prompt;
    j->submit_ns = sched_now_ns();
    atomic_init(&j->cancel, false);

    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        j->refs = 1;
        sched_job_unref(j);
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

void sched_job_peek(struct sched_job *j, bool *admitted, enum sched_finish *finish)
{
    pthread_mutex_lock(&j->mu);
    *admitted = j->out.admitted;
    *finish = j->out.finish;
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
    sched_job_unref(j);
}

void sched_get_stats(const struct sched *s, struct sched_stats *out)
{
    struct sched *m = (struct sched *)s; /* atomics only */
    out->running = atomic_load(&m->st_running);
    out->waiting = atomic_load(&m->st_waiting);
    out->n_slots = s->max_seqs;
    out->kv_blocks = s->b->cfg.kv_blocks;
    out->kv_used = atomic_load(&m->st_kv_used);
    out->kv_free = atomic_load(&m->st_kv_free);
    out->kv_cached = atomic_load(&m->st_kv_cached);
    out->steps = atomic_load(&m->st_steps);
    out->tokens_generated = atomic_load(&m->st_generated);
    out->tokens_prefilled = atomic_load(&m->st_prefilled);
    out->prefix_lookups = atomic_load(&m->st_lookups);
    out->prefix_hit_tokens = atomic_load(&m->st_hit_tokens);
    out->kv_evictions = atomic_load(&m->st_evictions);
    out->preemptions = atomic_load(&m->st_preemptions);
    out->refusals = atomic_load(&m->st_refusals);
    out->progress_ns = atomic_load(&m->st_progress_ns);
}
