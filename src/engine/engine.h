/* engine/engine.h — one loaded model ready to run: the model, its tokenizer, its
 * chat template and a backend, opened and closed together. The command-line
 * programs (run-gen, memra-ppl) use this; the server's scheduler (sched.h)
 * takes the backend and tokenizer from it too.
 *
 * Also the two loops every caller needs: chunked prefill of a prompt into a
 * block table, and rendering a conversation through the model's chat template.
 */
#ifndef MEMRA_ENGINE_ENGINE_H
#define MEMRA_ENGINE_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"
#include "model/model.h"
#include "template/template.h"
#include "tokenizer/tokenizer.h"

struct chat_template;

struct engine {
    struct model model;
    struct tokenizer tok;
    struct chat_template *tmpl; /* NULL when the model ships no chat template */
    struct backend *backend;
};

/* Positions per sequence when the caller leaves backend_config.max_ctx 0 (or the
 * model's trained context, when shorter). */
#define ENGINE_DEFAULT_CTX 4096u

/* Open PATH (a .gguf or a Hugging Face folder): model, tokenizer, chat template
 * and the backend `backend_name` (NULL: backend_default_name()) with cfg
 * (max_ctx 0: see ENGINE_DEFAULT_CTX).
 * 0, or -1 with the reason in err; nothing to free on failure. */
int engine_open(struct engine *e, const char *path, const char *backend_name, const struct backend_config *cfg,
                char *err, size_t errlen);
void engine_close(struct engine *e);

/* Feed tokens[0..n) into the sequence whose KV lives in the blocks of table
 * blocks (ceil((pos + n) / BACKEND_KV_BLOCK) ids) from position pos, in chunks
 * of at most the backend's max_batch_tokens; the logits of the last token go
 * to logits (vocab floats) when it is not NULL. */
int engine_prefill(struct engine *e, const uint32_t *blocks, uint32_t pos, const int32_t *tokens, uint32_t n,
                   float *logits, char *err, size_t errlen);

/* Render messages (a JSON array of {role, content}) with the model's chat
 * template and add_generation_prompt; *out is malloc'd (free it). */
/* The tokenizer's special tokens' text for a template context (NULL where absent). */
void engine_special_tokens(const struct engine *e, struct chat_special_tokens *sp);
int engine_render_chat(const struct engine *e, const json_t *messages, char **out, size_t *out_len, char *err,
                       size_t errlen);

#endif
