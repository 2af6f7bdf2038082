/* server/models.c — loading the served models (file → tokenizer, chat template,
 * backend, engine thread; a progress bar while the weights are read) on the
 * loader thread, and turning a request into prompt tokens (chat template +
 * tokenizer). */
#include "server/server_internal.h"

#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Read every page of the weights once, so that the first requests do not pay
 * for page faults (and the CUDA upload reads from the page cache), with a
 * progress bar on stderr when it is a terminal. */
static void weights_prefault(const struct model_file *mf, const char *alias, bool show)
{
    uint64_t total = 0, done = 0;
    for (uint64_t i = 0; i < mf->n_tensors; i++)
        total += mf->tensors[i].n_bytes;
    show = show && isatty(STDERR_FILENO) && total > 0;
    int last_pct = -1;
    volatile uint8_t sink = 0;
    for (uint64_t i = 0; i < mf->n_tensors; i++) {
        const struct mf_tensor *t = &mf->tensors[i];
        for (uint64_t off = 0; off < t->n_bytes; off += 4096) {
            sink ^= t->data[off];
            if (show && ((done + off) & ((1u << 24) - 1)) < 4096) {
                int pct = (int)((done + off) * 100 / total);
                if (pct != last_pct) {
                    int bar = pct * 30 / 100;
                    fprintf(stderr, "\rmemra: loading %s [%.*s%*s] %3d%% of %.1f MiB", alias, bar,
                            "##############################", 30 - bar, "", pct, (double)total / (1 << 20));
                    last_pct = pct;
                }
            }
        }
        done += t->n_bytes;
    }
    (void)sink;
    if (show)
        fprintf(stderr, "\rmemra: loading %s [##############################] 100%% of %.1f MiB\n", alias,
                (double)total / (1 << 20));
}

int served_model_load(struct served_model *sm, const struct server_config *cfg, char *err, size_t errlen)
{
    char e2[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* read the weights once with a progress bar; engine_open then finds them in
     * the page cache (a file that does not open is reported by engine_open) */
    struct model_file mf;
    if (model_file_open(&mf, sm->path, e2, sizeof(e2)) == 0) {
        weights_prefault(&mf, sm->alias, cfg->progress);
        model_file_close(&mf);
    }
    const char *bname = cfg->backend ? cfg->backend : backend_default_name();
    /* an unset budget: 8192 tokens a step on the GPU (64 streams of 512-token
     * prompts on an H200, 8B BF16, bf16 activations: TTFT p99 0.94-0.96 s
     * and 5.3 k tok/s against 1.07-1.08 s and 5.1 k with 2048 — fewer, fuller
     * prefill steps; bench/RESULTS.md, twenty-eighth run), 512 on the CPU (a
     * step stays short enough for streams to keep flowing); at least two
     * tokens a slot */
    uint32_t batch_tokens = cfg->batch_tokens;
    if (!batch_tokens) {
        batch_tokens = strcmp(bname, "cuda") == 0 ? 8192 : 512;
        if (batch_tokens < 2 * cfg->n_slots)
            batch_tokens = 2 * cfg->n_slots;
    }
    struct backend_config bc = {.max_seqs = cfg->n_slots, .max_ctx = cfg->ctx, .max_batch_tokens = batch_tokens,
                                .n_threads = cfg->threads, .kv_blocks = cfg->kv_blocks,
                                .kv_type = cfg->kv_type, /* BACKEND_KV_DEFAULT: backend_open's (bf16) */
                                .act_type = cfg->act_type}; /* BACKEND_ACT_DEFAULT: backend_open's (f32) */
    if (engine_open(&sm->eng, sm->path, bname, &bc, e2, sizeof(e2)))
        return err_set(err, errlen, "model '%s': %s", sm->alias, e2);
    sm->eng_open = true;
    if (!sm->eng.tmpl)
        log_warn("model '%s': no usable chat template; /v1/chat/completions answers 400 for it", sm->alias);
    sm->max_ctx = sm->eng.backend->cfg.max_ctx;
    if (sm->eng.model.cfg.max_ctx && sm->max_ctx > sm->eng.model.cfg.max_ctx)
        log_warn("model '%s': context %u is beyond its trained context %u", sm->alias, sm->max_ctx,
                 sm->eng.model.cfg.max_ctx);
    struct sched_config sc = {.max_batch_tokens = batch_tokens, .prefix_reuse = cfg->prefix_reuse};
    if (sched_start(&sm->sched, sm->eng.backend, &sm->eng.tok, &sc, e2, sizeof(e2)))
        return err_set(err, errlen, "model '%s': engine: %s", sm->alias, e2);
    sm->max_ctx = sched_max_ctx(sm->sched); /* a small KV pool caps the context */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    log_info("model '%s' ready: %s, %s, %s backend, %u sequences of up to %u positions, KV pool of %u blocks "
             "(%s), %s activations, %u tokens a step, %.1f s", sm->alias, sm->path, sm->eng.model.arch_name,
             sm->eng.backend->ops->name, sm->eng.backend->cfg.max_seqs, sm->max_ctx, sm->eng.backend->cfg.kv_blocks,
             backend_kv_type_name(sm->eng.backend->cfg.kv_type), backend_act_type_name(sm->eng.backend->cfg.act_type),
             batch_tokens,
             (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return 0;
}

void *server_load_main(void *arg)
{
    struct server *s = arg;
    if (s->cfg->test_load_delay_ms) { /* test only: make "loading" last long enough to observe */
        struct timespec d = {.tv_sec = s->cfg->test_load_delay_ms / 1000,
                             .tv_nsec = (long)(s->cfg->test_load_delay_ms % 1000) * 1000000L};
        while (nanosleep(&d, &d) && errno == EINTR)
            ;
    }
    int rc = 0;
    for (uint32_t i = 0; i < s->n_models && !rc; i++)
        rc = served_model_load(&s->models[i], s->cfg, s->load_err, sizeof(s->load_err));
    s->load_rc = rc;
    event_active(s->loaded, EV_READ, 0); /* the loop reads load_rc after this (libevent's lock orders it) */
    return NULL;
}

void served_model_unload(struct served_model *sm)
{
    sched_stop(sm->sched);
    sm->sched = NULL;
    if (sm->eng_open)
        engine_close(&sm->eng);
    sm->eng_open = false;
}

struct served_model *server_find_model(struct server *s, const char *alias)
{
    if (!alias)
        return &s->models[0];
    for (uint32_t i = 0; i < s->n_models; i++)
        if (!strcmp(s->models[i].alias, alias))
            return &s->models[i];
    return NULL;
}

static int render_chat(struct served_model *sm, const struct api_request *r, char **text, size_t *len,
                       struct api_error *e)
{
    if (!sm->eng.tmpl)
        return api_error_set(e, 400, "no_chat_template", "messages",
                             "The model '%s' has no usable chat template; use /v1/completions.", sm->alias);
    /* the context transformers' apply_chat_template builds (engine.h: one place) */
    struct chat_special_tokens sp;
    engine_special_tokens(&sm->eng, &sp);
    bool gen_prompt = r->kind == API_KIND_CHAT ? true : r->add_generation_prompt;
    json_t *ctx = json_pack("{s:O,s:b}", "messages", r->messages, "add_generation_prompt", gen_prompt);
    if (!ctx || chat_template_context_defaults(ctx, &sp)) {
        json_decref(ctx);
        return api_error_set(e, 500, NULL, NULL, "out of memory");
    }
    char err[512];
    int rc = chat_template_render(sm->eng.tmpl, ctx, text, len, err, sizeof(err));
    json_decref(ctx);
    if (rc)
        return api_error_set(e, 400, "template_error", "messages", "The chat template rejected the messages: %s",
                             err);
    return 0;
}

int server_prompt_tokens(struct served_model *sm, const struct api_request *r, uint32_t i, int32_t **ids,
                         uint32_t *n, struct api_error *e)
{
    char err[512];
    size_t count = 0;
    *ids = NULL;
    *n = 0;
    uint64_t t0 = metrics_now_ns(); /* on the event-loop thread: how long it holds the loop (debug log) */
    if (r->messages) {
        char *text;
        size_t len;
        if (render_chat(sm, r, &text, &len, e))
            return -1;
        /* the template writes BOS itself when the model wants one (as HF's
         * apply_chat_template, which encodes with add_special_tokens=False) */
        int rc = tokenizer_encode_alloc(&sm->eng.tok, text, len, false, true, ids, &count, err, sizeof(err));
        free(text);
        if (rc)
            return api_error_set(e, 500, NULL, NULL, "tokenizer: %s", err);
    } else {
        const struct api_prompt *p = &r->prompts[i];
        if (p->text) {
            bool add_special = r->kind == API_KIND_TOKENIZE ? r->add_special_tokens : true;
            if (tokenizer_encode_alloc(&sm->eng.tok, p->text, p->text_len, add_special, true, ids, &count, err,
                                       sizeof(err)))
                return api_error_set(e, 500, NULL, NULL, "tokenizer: %s", err);
        } else {
            *ids = malloc((p->n_tokens ? p->n_tokens : 1) * sizeof(int32_t));
            if (!*ids)
                return api_error_set(e, 500, NULL, NULL, "out of memory");
            memcpy(*ids, p->tokens, p->n_tokens * sizeof(int32_t));
            count = p->n_tokens;
        }
    }
    if (count > UINT32_MAX) {
        free(*ids);
        *ids = NULL;
        return api_error_set(e, 400, "context_length_exceeded", r->messages ? "messages" : "prompt",
                             "The prompt is too long.");
    }
    *n = (uint32_t)count;
    log_debug("model '%s': %s %u tokens in %.3f ms (template + tokenize, event-loop thread)", sm->alias,
              r->messages ? "chat prompt of" : "prompt of", *n, (double)(metrics_now_ns() - t0) * 1e-6);
    return 0;
}

size_t server_token_piece(const struct served_model *sm, int32_t id, char *buf, size_t cap)
{
    /* the token's own bytes, a partial UTF-8 character included (api/ writes it
     * as U+FFFD in "token" and the raw bytes in "bytes") */
    size_t len = 0;
    const char *piece = tokenizer_token_piece(&sm->eng.tok, id, &len);
    if (!piece)
        return 0;
    if (len > cap)
        len = cap;
    memcpy(buf, piece, len);
    return len;
}
