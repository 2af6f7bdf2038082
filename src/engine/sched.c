/* engine/sched.c — the engine thread and its continuous-batching step; see
 * sched.h. The submitting threads' side (sched_submit, take, peek, cancel,
 * release, stats) is sched_job.c; the state both share is sched_internal.h.
 *
 * State: jobs arrive on `incoming` (mutex s->mu); the engine thread alone owns
 * the per-lane FIFOs `waiting[lane]` (not yet, or no longer, in the pool), the
 * KV pool, and `run[]`: the running job of each pool sequence (a pool sequence
 * id indexes it). Per-step scratch (the batch, logits, copy-on-write pairs) is
 * allocated once at start.
 *
 * A job's `toks` holds its prompt followed by the tokens it generated; the KV of
 * toks[0, n_past) is in its blocks. A preempted job is re-admitted with all of
 * them as its prompt and samples after the last one, exactly as the decode step
 * it lost would have (its sampler, detokenizer and stop matcher kept their
 * state, so nothing is emitted twice).
 *
 * Sampling: after a step's forward, every row drawn from logits (not a plain
 * greedy pick, which comes from the backend) is sampled at once over the
 * batch sampler's threads (sample/sample_batch.h: each row's sampler and
 * logits are its own, so the bits are those of one row after another); then
 * each sequence takes its token in batch order.
 */
#include "engine/sched_internal.h"

#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(BACKEND_TOPK_MAX == SAMPLER_NUCLEUS_MAX, "a nucleus draw's candidates: the backend's count is the sampler's");

_Static_assert(KV_POOL_BLOCK == BACKEND_KV_BLOCK, "the pool's block is the backend's");

#define SCHED_PROFILE_STEPS 256u
/* A sequence whose nucleus draw the backend's candidates could not decide
 * (a flat distribution: its nucleus reaches past them) takes the host's way
 * for this many draws before it tries the candidates again: the tokens are
 * the same either way, but the candidates plus the row cost more than the
 * row alone. */
#define SCHED_NUCLEUS_BACKOFF 16u

/* Engine thread: the pool's figures for sched_get_stats. */
static void publish_pool_stats(struct sched *s)
{
    struct kv_pool_stats st;
    kv_pool_get_stats(s->pool, &st);
    atomic_store(&s->st_kv_used, st.used);
    atomic_store(&s->st_kv_free, st.free);
    atomic_store(&s->st_kv_cached, st.cached);
    atomic_store(&s->st_lookups, st.lookups);
    atomic_store(&s->st_hit_tokens, st.hit_tokens);
    atomic_store(&s->st_evictions, st.evictions);
}

/* Engine thread: take a running job out of the pool (its blocks are released). */
static void job_unrun(struct sched *s, struct sched_job *j)
{
    kv_pool_seq_release(s->pool, j->seq);
    s->run[j->seq] = NULL;
    s->n_run--;
    publish_pool_stats(s); /* before the job's end is visible: an idle server reads 0 blocks used */
    atomic_fetch_sub(&s->st_running, 1);
}

/* Engine thread: end the job, free its KV, wake the submitter, drop the engine's ref. */
static void job_finish(struct sched *s, struct sched_job *j, enum sched_finish f, const char *why)
{
    if (j->state == JOB_PREFILL || j->state == JOB_DECODE)
        job_unrun(s, j);
    j->state = JOB_DONE;
    pthread_mutex_lock(&j->mu);
    j->out.finish = f;
    if (why)
        snprintf(j->out.error, sizeof(j->out.error), "%s", why);
    j->out.n_generated = j->n_gen;
    if (j->notify)
        j->notify(j->notify_arg);
    pthread_mutex_unlock(&j->mu);
    sched_job_unref(j);
}
/* ---- engine thread: queues, admission, preemption ---- */

static void waiting_push_back(struct sched *s, struct sched_job *j)
{
    j->next = NULL;
    if (s->waiting_tail[j->lane])
        s->waiting_tail[j->lane]->next = j;
    else
        s->waiting[j->lane] = j;
    s->waiting_tail[j->lane] = j;
}

static void waiting_push_front(struct sched *s, struct sched_job *j)
{
    j->next = s->waiting[j->lane];
    s->waiting[j->lane] = j;
    if (!s->waiting_tail[j->lane])
        s->waiting_tail[j->lane] = j;
}

static void waiting_remove(struct sched *s, struct sched_job *j)
{
    struct sched_job **pp = &s->waiting[j->lane], *prev = NULL;
    while (*pp != j) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    *pp = j->next;
    if (s->waiting_tail[j->lane] == j)
        s->waiting_tail[j->lane] = prev;
    j->next = NULL;
}

/* Apply the copy-on-write pairs of one reserve at once: the source block is
 * still intact (nothing ran since), and later reserves may hand it out again. */
static void apply_copies(struct sched *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        backend_kv_copy(s->b, s->copies[i].dst, s->copies[i].src);
}

/* The newest running job of `lane` (all lanes when lane < 0), or NULL. */
static struct sched_job *newest_running(const struct sched *s, int lane)
{
    struct sched_job *best = NULL;
    for (uint32_t i = 0; i < s->max_seqs; i++) {
        struct sched_job *j = s->run[i];
        if (j && (lane < 0 || (int)j->lane == lane) && (!best || j->admit_order > best->admit_order))
            best = j;
    }
    return best;
}

/* Give up j's KV and queue it again at the head of its lane, to recompute later. */
static void job_preempt(struct sched *s, struct sched_job *j)
{
    job_unrun(s, j);
    j->state = JOB_WAITING;
    j->n_preempted++;
    waiting_push_front(s, j);
    atomic_fetch_add(&s->st_waiting, 1);
    atomic_fetch_add(&s->st_preemptions, 1);
    pthread_mutex_lock(&j->mu);
    j->out.n_preempted = j->n_preempted;
    pthread_mutex_unlock(&j->mu);
    log_debug("sched: preempted a %s job after %u tokens (KV full)", j->lane == SCHED_LANE_BATCH ? "batch" :
              "interactive", j->n_gen);
}

/* Try to admit j (waiting, a sequence free): 1 admitted, 0 not now (KV short;
 * nothing changed), -1 finished (refused or failed). */
static int job_admit(struct sched *s, struct sched_job *j)
{
    char err[256];
    const char *model = j->ns, *tenant = model + strlen(model) + 1, *salt = tenant + strlen(tenant) + 1;
    struct kv_pool_ns ns = {model, tenant, salt};
    uint32_t seq;
    if (kv_pool_seq_open(s->pool, &ns, &seq, err, sizeof(err))) {
        waiting_remove(s, j);
        atomic_fetch_sub(&s->st_waiting, 1);
        job_finish(s, j, SCHED_FINISH_ERROR, err);
        return -1;
    }
    /* the tokens to put in the KV: the prompt, then what it generated before a preemption */
    uint32_t n_feed = j->n_prompt + j->n_gen;
    uint32_t cached = s->cfg.prefix_reuse ? kv_pool_seq_attach(s->pool, seq, j->toks, n_feed) : 0;
    uint32_t start = cached < n_feed ? cached : n_feed - 1; /* recompute ≥ 1 token for its logits */
    uint32_t need = kv_pool_seq_need(s->pool, seq, start, n_feed);
    bool may_refuse = j->lane == SCHED_LANE_INTERACTIVE && !j->ever_admitted; /* new interactive work */
    if (need > kv_pool_available(s->pool) && may_refuse) {
        /* an interactive job may take the blocks of running batch work, newest first */
        struct sched_job *v;
        while (need > kv_pool_available(s->pool) && (v = newest_running(s, SCHED_LANE_BATCH)) != NULL)
            job_preempt(s, v);
    }
    if (need > kv_pool_available(s->pool)) {
        kv_pool_seq_release(s->pool, seq);
        if (!may_refuse)
            return 0; /* batch work, and preempted work, waits for blocks */
        waiting_remove(s, j);
        atomic_fetch_sub(&s->st_waiting, 1);
        atomic_fetch_add(&s->st_refusals, 1);
        snprintf(err, sizeof(err), "the KV cache is full (%u blocks needed, %u available, nothing to preempt)", need,
                 kv_pool_available(s->pool));
        job_finish(s, j, SCHED_FINISH_REFUSED, err);
        return -1;
    }
    uint32_t nc = 0;
    MEMRA_ASSERT(kv_pool_seq_reserve(s->pool, seq, start, n_feed, s->copies, &nc) == 0);
    apply_copies(s, nc);
    waiting_remove(s, j);
    s->run[seq] = j;
    s->n_run++;
    j->seq = seq;
    j->n_feed = n_feed;
    j->n_past = start;
    j->state = JOB_PREFILL;
    j->admit_order = ++s->admit_counter;
    atomic_fetch_sub(&s->st_waiting, 1);
    atomic_fetch_add(&s->st_running, 1);
    if (j->ever_admitted)
        return 1;
    j->ever_admitted = true;
    sampler_add_prompt(&j->sampler, j->toks, j->n_prompt);
    pthread_mutex_lock(&j->mu);
    j->out.n_cached = start;
    j->out.admitted = true;
    uint64_t now = sched_now_ns();
    j->out.queue_ns = now > j->submit_ns ? now - j->submit_ns : 0;
    pthread_mutex_unlock(&j->mu);
    return 1;
}

/* Admissions: interactive lane first, FIFO within a lane, while sequences are free. */
static void admit_waiting(struct sched *s)
{
    for (int lane = SCHED_LANE_INTERACTIVE; lane <= SCHED_LANE_BATCH; lane++) {
        struct sched_job *j = s->waiting[lane];
        while (j && s->n_run < s->max_seqs) {
            struct sched_job *next = j->next;
            int rc = job_admit(s, j);
            if (rc == 0)
                break; /* FIFO: nothing in this lane passes the job at its head */
            j = next;
        }
    }
}

/* Reserve every decoding job's next position, oldest first; a job the pool
 * cannot serve preempts the newest batch job, else the newest job (maybe itself). */
static void reserve_decode(struct sched *s)
{
    for (;;) {
        struct sched_job *j = NULL; /* the oldest decoding job not yet reserved this round */
        for (uint32_t i = 0; i < s->max_seqs; i++) {
            struct sched_job *c = s->run[i];
            if (c && c->state == JOB_DECODE && kv_pool_seq_need(s->pool, c->seq, c->n_past, c->n_past + 1) &&
                (!j || c->admit_order < j->admit_order))
                j = c;
        }
        if (!j)
            return;
        uint32_t nc = 0;
        if (kv_pool_seq_reserve(s->pool, j->seq, j->n_past, j->n_past + 1, s->copies, &nc) == 0) {
            apply_copies(s, nc);
            continue;
        }
        struct sched_job *v = newest_running(s, SCHED_LANE_BATCH);
        if (!v)
            v = newest_running(s, -1);
        job_preempt(s, v);
    }
}

/* Run text through the stop matcher into the output; true when a stop string matched. */
static bool emit_text(struct sched_job *j, const char *piece, size_t n)
{
    const char *vis;
    size_t vis_len;
    int m = stop_matcher_feed(&j->stops, piece, n, &vis, &vis_len);
    if (vis_len && sched_out_append_text(&j->out, vis, vis_len))
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
    if (vis_len && sched_out_append_text(&j->out, vis, vis_len))
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
    if (j->want_logprobs && sched_out_append_token(&j->out, r))
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
    MEMRA_ASSERT(j->n_past < j->cap); /* cap covers prompt + max_tokens and the context */
    j->toks[j->n_past] = tok;         /* fed at position n_past by the next decode step */
    j->state = JOB_DECODE;
}

/* One step: cancellations, admissions, reservations, one batch, sampling.
 * Returns false when it had nothing to run. */
/* Where the backend puts j's greedy pick (backend_seq.argmax) when its
 * sampler would pick the plain argmax anyway; NULL: j needs its logits. */
static int32_t *job_argmax(struct sched_job *j)
{
    return sampler_plain_greedy(&j->sampler) ? &j->argmax_tok : NULL;
}

/* Where the backend makes j's temperature draw (backend_seq.draw) when its
 * sampler draws from the whole vocabulary with temperature alone and the
 * backend can (the logits then stay on the device); takes the draw's u from
 * j's PRNG (put back by sampler_draw_end if the draw does not use it). Or,
 * for a top-k sampler, where the backend puts its top-k candidates, from
 * which sched_step has the sampler draw (sampler_sample_candidates). */
static struct backend_draw *job_draw(struct sched *s, struct sched_job *j)
{
    if (!s->b->device_draw)
        return NULL;
    if (sampler_plain_temperature(&j->sampler)) {
        j->draw = (struct backend_draw){.temperature = j->sampler.params.temperature,
                                        .u = sampler_draw_begin(&j->sampler, j->draw_rng)};
        return &j->draw;
    }
    /* top-k, or top-p / min-p without it: the backend finds the candidates,
     * the sampler draws from them (a nucleus it cannot decide from them
     * takes the row: sched_step) */
    if (!s->b->device_topk || !j->cand_idx) /* (made with the job) */
        return NULL;
    const bool topk = sampler_topk_candidates(&j->sampler, BACKEND_TOPK_MAX);
    if (!topk && !sampler_nucleus_candidates(&j->sampler))
        return NULL;
    if (!topk && j->nucleus_skip) { /* its last nucleus needed the row: the row, for a while (same tokens) */
        j->nucleus_skip--;
        return NULL;
    }
    j->draw = (struct backend_draw){.temperature = j->sampler.params.temperature,
                                    .top_k = topk ? (uint32_t)j->sampler.params.top_k : 0,
                                    .cand_idx = j->cand_idx,
                                    .cand_val = j->cand_val,
                                    .nucleus = !topk};
    return &j->draw;
}

static bool sched_step(struct sched *s)
{
    const uint64_t t_plan = sched_now_ns();
    /* cancellations of running jobs */
    for (uint32_t i = 0; i < s->max_seqs; i++) {
        struct sched_job *j = s->run[i];
        if (j && atomic_load(&j->cancel))
            job_finish(s, j, SCHED_FINISH_CANCELLED, NULL);
    }
    /* cancellations of waiting jobs */
    for (int lane = 0; lane < 2; lane++) {
        struct sched_job **pp = &s->waiting[lane];
        s->waiting_tail[lane] = NULL;
        while (*pp) {
            struct sched_job *j = *pp;
            if (atomic_load(&j->cancel)) {
                *pp = j->next;
                atomic_fetch_sub(&s->st_waiting, 1);
                job_finish(s, j, SCHED_FINISH_CANCELLED, NULL);
                continue;
            }
            s->waiting_tail[lane] = j;
            pp = &j->next;
        }
    }
    admit_waiting(s);
    reserve_decode(s);

    /* the batch: decode tokens first, then prefill chunks (the budget bounds
     * how much prefill runs) */
    uint32_t budget = s->cfg.max_batch_tokens, n = 0, n_prefill = 0, first_prefill_pos = 0;
    for (uint32_t i = 0; i < s->max_seqs && budget; i++) {
        struct sched_job *j = s->run[i];
        if (!j || j->state != JOB_DECODE)
            continue;
        uint32_t nb;
        const uint32_t *blocks = kv_pool_seq_blocks(s->pool, j->seq, &nb);
        s->seqs[n] = (struct backend_seq){.blocks = blocks, .pos = j->n_past, .n_tokens = 1,
                                          .tokens = j->toks + j->n_past, .n_logits = 1,
                                          .logits = s->logits + (size_t)n * s->vocab,
                                          .argmax = job_argmax(j), .draw = job_draw(s, j)};
        s->seq_job[n++] = j;
        budget--;
    }
    /* Prefill chunks, oldest admission first, each whole: a chunk ends at the
     * prompt's end or at the next multiple of pf_grain (max_batch_tokens less
     * one decode token a sequence), and one that does not fit in what is left
     * of the budget waits for the next step (with everything admitted after
     * it). So where a prompt is cut depends on its own positions only, never
     * on what else runs: on the CUDA backend a span's kernels depend on its
     * length, so a prompt cut elsewhere would get other bits — and possibly
     * other greedy text — batched than alone. The oldest chunk always fits
     * (the decode tokens leave at least pf_grain), so every prompt progresses. */
    uint32_t n_pf = 0;
    for (uint32_t i = 0; i < s->max_seqs; i++) {
        struct sched_job *j = s->run[i];
        if (!j || j->state != JOB_PREFILL)
            continue;
        uint32_t k = n_pf++;
        for (; k > 0 && s->pf[k - 1]->admit_order > j->admit_order; k--)
            s->pf[k] = s->pf[k - 1];
        s->pf[k] = j;
    }
    for (uint32_t k = 0; k < n_pf && budget; k++) {
        struct sched_job *j = s->pf[k];
        uint32_t chunk = j->n_feed - j->n_past;
        const uint32_t to_edge = s->pf_grain - j->n_past % s->pf_grain;
        if (chunk > to_edge)
            chunk = to_edge;
        if (chunk > budget)
            break;
        bool last = j->n_past + chunk == j->n_feed;
        uint32_t nb;
        const uint32_t *blocks = kv_pool_seq_blocks(s->pool, j->seq, &nb);
        s->seqs[n] = (struct backend_seq){.blocks = blocks, .pos = j->n_past, .n_tokens = chunk,
                                          .tokens = j->toks + j->n_past, .n_logits = last ? 1 : 0,
                                          .logits = last ? s->logits + (size_t)n * s->vocab : NULL,
                                          .argmax = last ? job_argmax(j) : NULL,
                                          .draw = last ? job_draw(s, j) : NULL};
        if (!n_prefill)
            first_prefill_pos = j->n_past;
        n_prefill += chunk;
        s->seq_job[n++] = j;
        budget -= chunk;
    }
    if (n == 0) {
        publish_pool_stats(s);
        return false;
    }

    char err[256];
    struct backend_batch batch = {.n_seqs = n, .seqs = s->seqs};
    const uint64_t t_fwd = sched_now_ns();
    if (backend_forward(s->b, &batch, err, sizeof(err))) {
        log_error("sched: forward failed: %s", err);
        for (uint32_t i = 0; i < n; i++)
            job_finish(s, s->seq_job[i], SCHED_FINISH_ERROR, err);
        publish_pool_stats(s);
        return true;
    }
    atomic_fetch_add(&s->st_steps, 1);
    const uint64_t t_sample = sched_now_ns();
    if (n_prefill) /* prefill steps are few and decide the TTFT: each one logged */
        log_debug("sched: step of %u sequences, %u prefill tokens (first at position %u): plan %.3f ms, forward "
                  "%.3f ms", n, n_prefill, first_prefill_pos, 1e-6 * (double)(t_fwd - t_plan),
                  1e-6 * (double)(t_sample - t_fwd));
    atomic_store(&s->st_progress_ns, t_sample);
    /* the rows drawn from logits, all at once over the batch sampler's threads
     * (a sequence's sampler and row are its own: the same bits as one by one) */
    uint32_t n_draw = 0, n_z = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct backend_seq *q = &s->seqs[i];
        struct sched_job *j = s->seq_job[i];
        if (q->n_logits && !q->argmax && !q->draw) {
            s->sjobs[n_draw++] = (struct sample_job){.s = &j->sampler, .logits = q->logits, .out = &s->sres[i]};
        } else if (q->draw && q->draw->nucleus) {
            /* the sampler's draw from the backend's nucleus candidates; when
             * they cannot decide it, from the row of z (the row's room) */
            const int32_t t = sampler_sample_nucleus(&j->sampler, q->draw->cand_idx, q->draw->cand_val,
                                                     q->draw->n_cand, q->draw->total, q->draw->rest,
                                                     q->draw->token);
            s->sres[i] = (struct sample_result){.token = t};
            s->prof_nucleus++;
            j->nucleus_skip = 0;
            if (t == SAMPLER_NEED_ROW) {
                s->zdraw[n_z] = q->draw;
                s->zrow[n_z++] = q->logits;
                s->sjobs[n_draw++] = (struct sample_job){.s = &j->sampler, .logits = q->logits, .out = &s->sres[i],
                                                         .z = true, .greedy = q->draw->token};
                j->nucleus_skip = SCHED_NUCLEUS_BACKOFF;
            }
        }
    }
    if (n_z) /* the rows the nucleus candidates could not decide, all at once */
        backend_draw_z(s->b, s->zdraw, s->zrow, n_z);
    s->prof_nucleus_rows += n_z;
    sample_batch_run(&s->sb, s->sjobs, n_draw);
    for (uint32_t i = 0; i < n; i++) {
        const struct backend_seq *q = &s->seqs[i];
        struct sched_job *j = s->seq_job[i];
        j->n_past = q->pos + q->n_tokens;
        kv_pool_seq_commit(s->pool, j->seq, j->toks, j->n_past);
        if (j->state == JOB_PREFILL)
            atomic_fetch_add(&s->st_prefilled, q->n_tokens);
        if (!q->n_logits)
            continue;
        struct sample_result r;
        if (q->argmax) { /* plain greedy: the backend's pick, the sampler's rule (sampler_plain_greedy) */
            r = (struct sample_result){.token = *q->argmax};
        } else if (q->draw && q->draw->nucleus) { /* drawn above */
            r = s->sres[i];
        } else if (q->draw && q->draw->top_k) { /* top-k: the sampler's draw from the backend's candidates */
            r = (struct sample_result){.token = sampler_sample_candidates(&j->sampler, q->draw->cand_idx,
                                                                          q->draw->cand_val, q->draw->top_k,
                                                                          q->draw->token)};
        } else if (q->draw) { /* plain temperature: the backend's draw, the sampler's rule */
            sampler_draw_end(&j->sampler, j->draw_rng, q->draw->used);
            r = (struct sample_result){.token = q->draw->token};
        } else {
            r = s->sres[i];
        }
        job_on_token(s, j, &r);
    }
    publish_pool_stats(s);
    s->prof_plan_ns += t_fwd - t_plan;
    s->prof_fwd_ns += t_sample - t_fwd;
    s->prof_sample_ns += sched_now_ns() - t_sample;
    s->prof_seqs += n;
    if (++s->prof_steps == SCHED_PROFILE_STEPS) {
        const double k = 1e-6 / SCHED_PROFILE_STEPS;
        log_debug("sched: %u steps, %.1f sequences a step; per step: plan %.3f ms, forward %.3f ms, sample and "
                  "detokenize %.3f ms; nucleus draws %llu, of them from the row %llu", SCHED_PROFILE_STEPS,
                  (double)s->prof_seqs / SCHED_PROFILE_STEPS, k * (double)s->prof_plan_ns,
                  k * (double)s->prof_fwd_ns, k * (double)s->prof_sample_ns, (unsigned long long)s->prof_nucleus,
                  (unsigned long long)s->prof_nucleus_rows);
        s->prof_plan_ns = s->prof_fwd_ns = s->prof_sample_ns = s->prof_seqs = s->prof_steps = 0;
        s->prof_nucleus = s->prof_nucleus_rows = 0;
    }
    return true;
}

static void take_incoming(struct sched *s) /* s->mu held */
{
    while (s->incoming) {
        struct sched_job *j = s->incoming;
        s->incoming = j->next;
        waiting_push_back(s, j);
    }
    s->incoming_tail = NULL;
}

static void *sched_thread(void *arg)
{
    struct sched *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        for (;;) {
            take_incoming(s);
            bool busy = s->waiting[0] || s->waiting[1] || s->n_run;
            if (s->stopping || busy)
                break;
            s->idle = true;
            pthread_cond_wait(&s->cv, &s->mu);
            s->idle = false;
            atomic_store(&s->st_progress_ns, sched_now_ns());
        }
        bool stopping = s->stopping;
        pthread_mutex_unlock(&s->mu);
        if (stopping)
            break;
        if (!sched_step(s) && !s->n_run) {
            /* nothing could run: batch work waits for blocks that only a finishing
             * job frees, and none runs — cannot happen (a job alone always fits) */
            MEMRA_ASSERT(!s->waiting[0] && !s->waiting[1]);
        }
    }
    /* shut down: every job still here ends as cancelled */
    for (uint32_t i = 0; i < s->max_seqs; i++)
        if (s->run[i])
            job_finish(s, s->run[i], SCHED_FINISH_CANCELLED, "the server is shutting down");
    pthread_mutex_lock(&s->mu);
    take_incoming(s);
    pthread_mutex_unlock(&s->mu);
    for (int lane = 0; lane < 2; lane++)
        while (s->waiting[lane]) {
            struct sched_job *j = s->waiting[lane];
            s->waiting[lane] = j->next;
            atomic_fetch_sub(&s->st_waiting, 1);
            job_finish(s, j, SCHED_FINISH_CANCELLED, "the server is shutting down");
        }
    return NULL;
}

/* The KV pool and the step's buffers (sched_start's, freed on its failure
 * and by sched_stop). */
static void sched_free_bufs(struct sched *s)
{
    kv_pool_free(s->pool);
    free(s->run);
    free(s->copies);
    free(s->seqs);
    free(s->seq_job);
    free(s->pf);
    free(s->logits);
    free(s->sjobs);
    free(s->sres);
    free(s->zdraw);
    free(s->zrow);
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
    s->max_seqs = b->cfg.max_seqs;
    s->max_ctx = b->cfg.max_ctx;
    if ((uint64_t)b->cfg.kv_blocks * KV_POOL_BLOCK < s->max_ctx)
        s->max_ctx = b->cfg.kv_blocks * KV_POOL_BLOCK; /* a job alone must always fit */
    s->vocab = b->model->cfg.vocab;
    if (!s->cfg.max_batch_tokens || s->cfg.max_batch_tokens > b->cfg.max_batch_tokens)
        s->cfg.max_batch_tokens = b->cfg.max_batch_tokens;
    if (s->cfg.max_batch_tokens < s->max_seqs) {
        err_set(err, errlen, "max_batch_tokens %u is below the %u sequences (one decode token each)",
                s->cfg.max_batch_tokens, s->max_seqs);
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
    struct kv_pool_config pc = {.n_blocks = b->cfg.kv_blocks, .max_seqs = s->max_seqs, .max_ctx = s->max_ctx};
    if (kv_pool_init(&s->pool, &pc, err, errlen)) {
        free(s);
        return -1;
    }
    s->run = calloc(s->max_seqs, sizeof(*s->run));
    s->copies = calloc(kv_pool_max_seq_blocks(s->pool), sizeof(*s->copies));
    s->seqs = calloc(s->max_seqs, sizeof(*s->seqs));
    s->seq_job = calloc(s->max_seqs, sizeof(*s->seq_job));
    s->pf = calloc(s->max_seqs, sizeof(*s->pf));
    s->pf_grain = s->cfg.max_batch_tokens > s->max_seqs ? s->cfg.max_batch_tokens - s->max_seqs : 1;
    s->logits = malloc((size_t)s->max_seqs * s->vocab * sizeof(float));
    s->sjobs = calloc(s->max_seqs, sizeof(*s->sjobs));
    s->sres = calloc(s->max_seqs, sizeof(*s->sres));
    s->zdraw = calloc(s->max_seqs, sizeof(*s->zdraw));
    s->zrow = calloc(s->max_seqs, sizeof(*s->zrow));
    if (!s->run || !s->copies || !s->seqs || !s->seq_job || !s->pf || !s->logits || !s->sjobs || !s->sres ||
        !s->zdraw || !s->zrow) {
        err_set(err, errlen, "out of memory for %u sequences", s->max_seqs);
        goto fail;
    }
    if (sample_batch_init(&s->sb, s->vocab, 0, err, errlen))
        goto fail;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    atomic_init(&s->st_progress_ns, sched_now_ns());
    publish_pool_stats(s);
    if (pthread_create(&s->thread, NULL, sched_thread, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        sample_batch_free(&s->sb);
        err_set(err, errlen, "cannot start the engine thread");
        goto fail;
    }
    *out = s;
    return 0;
fail:
    sched_free_bufs(s);
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
    sched_free_bufs(s);
    sample_batch_free(&s->sb);
    free(s);
}
