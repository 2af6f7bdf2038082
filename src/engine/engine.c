/* engine/engine.c — opening a model with its tokenizer, chat template and
 * backend; chunked prefill; chat rendering. See engine.h. */
#include "engine/engine.h"
#include "core/log.h"
#include "template/template.h"

#include <stdlib.h>
#include <string.h>

int engine_open(struct engine *e, const char *path, const char *backend_name, const struct backend_config *cfg,
                char *err, size_t errlen)
{
    memset(e, 0, sizeof(*e));
    if (model_open(&e->model, path, err, errlen) != 0)
        return -1;
    if (tokenizer_load(&e->tok, &e->model.file, path, err, errlen) != 0)
        goto fail;
    if (tokenizer_n_vocab(&e->tok) > e->model.cfg.vocab) {
        err_set(err, errlen, "%s: tokenizer has %u tokens but the model's vocabulary is %u", path,
                tokenizer_n_vocab(&e->tok), e->model.cfg.vocab);
        goto fail;
    }
    const char *src = tokenizer_chat_template(&e->tok);
    if (src) {
        char terr[256];
        if (chat_template_parse(&e->tmpl, src, strlen(src), terr, sizeof(terr)) != 0) {
            /* a template we cannot parse only disables chat, it is not fatal */
            log_warn("%s: chat template not usable: %s", path, terr);
            e->tmpl = NULL;
        }
    }
    struct backend_config bc = *cfg;
    if (bc.max_ctx == 0)
        bc.max_ctx = e->model.cfg.max_ctx < ENGINE_DEFAULT_CTX ? e->model.cfg.max_ctx : ENGINE_DEFAULT_CTX;
    if (backend_open(&e->backend, backend_name ? backend_name : backend_default_name(), &e->model, &bc, err,
                     errlen) != 0)
        goto fail;
    return 0;
fail:
    engine_close(e);
    return -1;
}

void engine_close(struct engine *e)
{
    backend_close(e->backend);
    if (e->tmpl)
        chat_template_free(e->tmpl);
    if (e->tok.m)
        tokenizer_free(&e->tok);
    if (e->model.layers || e->model.file.path)
        model_close(&e->model);
    memset(e, 0, sizeof(*e));
}

int engine_prefill(struct engine *e, const uint32_t *blocks, uint32_t pos, const int32_t *tokens, uint32_t n,
                   float *logits, char *err, size_t errlen)
{
    const uint32_t chunk = e->backend->cfg.max_batch_tokens;
    for (uint32_t i = 0; i < n; i += chunk) {
        const uint32_t k = n - i < chunk ? n - i : chunk;
        const bool last = i + k == n;
        struct backend_seq s = {.blocks = blocks, .pos = pos + i, .n_tokens = k, .tokens = tokens + i,
                                .n_logits = last && logits ? 1 : 0, .logits = logits};
        struct backend_batch b = {1, &s};
        if (backend_forward(e->backend, &b, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* A special token's text, or NULL when the tokenizer has no such token (the
 * template then sees the variable undefined, as with transformers). */
static const char *special_text(const struct tokenizer *tok, int32_t id)
{
    size_t len;
    return id >= 0 ? tokenizer_token_text(tok, id, &len) : NULL;
}

void engine_special_tokens(const struct engine *e, struct chat_special_tokens *sp)
{
    sp->bos = special_text(&e->tok, tokenizer_bos(&e->tok));
    sp->eos = special_text(&e->tok, tokenizer_eos(&e->tok));
    sp->unk = special_text(&e->tok, tokenizer_unk(&e->tok));
    sp->pad = special_text(&e->tok, tokenizer_pad(&e->tok));
}

int engine_render_chat(const struct engine *e, const json_t *messages, char **out, size_t *out_len, char *err,
                       size_t errlen)
{
    if (!e->tmpl)
        return err_set(err, errlen, "%s: the model has no usable chat template", e->model.file.path);
    struct chat_special_tokens sp;
    engine_special_tokens(e, &sp);
    json_t *ctx = json_pack("{s:O, s:b}", "messages", (json_t *)messages, "add_generation_prompt", 1);
    if (!ctx || chat_template_context_defaults(ctx, &sp) != 0) {
        json_decref(ctx);
        return err_set(err, errlen, "chat: out of memory");
    }
    int rc = chat_template_render(e->tmpl, ctx, out, out_len, err, errlen);
    json_decref(ctx);
    return rc;
}
