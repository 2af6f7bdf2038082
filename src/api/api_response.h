/* api/api_response.h — native results → OpenAI response JSON.
 *
 * Builders for every body the server sends: chat.completion and text_completion
 * objects, their stream chunks (chat: a role chunk first, content chunks, a
 * finish chunk with an empty delta, then — with stream_options.include_usage —
 * a usage chunk with "choices": [] while every other chunk carries "usage":
 * null), both logprobs shapes, the /v1/models list, /tokenize and /detokenize
 * bodies and response ids. Each returns compact JSON text, NUL-terminated and
 * malloc'd (caller frees), or NULL when memory runs out; the server adds the SSE
 * framing ("data: " … "\n\n", and the final "data: [DONE]\n\n").
 *
 * Text may be any bytes: invalid UTF-8 (a token holding half a character) is
 * written as U+FFFD, as Python's bytes.decode(errors="replace") would; chat
 * logprobs carry the raw bytes in "bytes". Log-probabilities are clamped to
 * ≥ -9999 (JSON has no -Infinity; vLLM does the same). Completions' text_offset
 * counts Unicode code points (Python's len() of the text before the token), and
 * their top_logprobs always include the chosen token (OpenAI: "up to logprobs+1
 * elements").
 */
#ifndef MEMRA_API_API_RESPONSE_H
#define MEMRA_API_API_RESPONSE_H

#include "api/api_request.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum api_finish {
    API_FINISH_NONE,    /* still running: finish_reason null */
    API_FINISH_STOP,    /* EOS / stop token / stop string: "stop" */
    API_FINISH_LENGTH,  /* max_tokens or the context length: "length" */
};

/* A token's text: its bytes, not NUL-terminated, maybe partial UTF-8. */
struct api_piece {
    const char *text;
    size_t len;
};

/* One alternative at a token position. */
struct api_top_logprob {
    const char *text; /* the token's bytes (not NUL-terminated; may be partial UTF-8) */
    size_t len;
    float logprob;
};

/* The chosen token at one position and its alternatives. */
struct api_token_logprob {
    const char *text;
    size_t len;
    float logprob;
    const struct api_top_logprob *top; /* (n_top), descending logprob */
    uint32_t n_top;
};

/* Per-response constants. */
struct api_response_meta {
    enum api_kind kind;        /* API_KIND_CHAT or API_KIND_COMPLETION */
    const char *id;            /* from api_make_id */
    const char *model;         /* the model name as the client gave it */
    int64_t created;           /* unix seconds, the same in every chunk */
    const char *system_fingerprint; /* NULL: field omitted */
    bool logprobs;             /* the request asked for logprobs ("logprobs" an object, not null) */
    bool include_usage;        /* stream: chunks carry "usage": null, and a usage chunk ends */
};

/* One choice: the whole text (final response) or this chunk's new text. */
struct api_choice {
    uint32_t index;
    const char *text;          /* bytes, may be NULL when len == 0 */
    size_t len;
    enum api_finish finish;
    const struct api_token_logprob *logprobs; /* (n_logprobs) tokens of `text` (if meta.logprobs) */
    uint32_t n_logprobs;
    uint64_t text_offset;      /* completions: code points of this choice's text before `text` */
};

struct api_usage {
    uint64_t prompt_tokens;
    uint64_t completion_tokens;
    uint64_t cached_tokens;    /* prompt tokens served from the prefix cache */
};

/* Unicode code points in UTF-8 text (Python's len() of it): how far a
 * completions stream's text_offset advances over text already sent. */
size_t api_utf8_count(const char *s, size_t len);

/* "chatcmpl-" or "cmpl-" (by kind) and 24 random base-62 characters into
 * out[cap] (cap ≥ 34). */
void api_make_id(char *out, size_t cap, enum api_kind kind);

/* The full non-streamed response (chat.completion / text_completion) with
 * choices c[0..n) and usage. */
char *api_response_json(const struct api_response_meta *m, const struct api_choice *c, uint32_t n,
                        const struct api_usage *u);

/* Stream chunks. The role chunk (chat only) opens each choice; a content chunk
 * carries c->text (and its logprobs) and, when c->finish is set, finish_reason
 * (chat: with finish set and no text the delta is {}); the usage chunk ends the
 * stream when include_usage. */
char *api_chunk_role_json(const struct api_response_meta *m, uint32_t index);
char *api_chunk_json(const struct api_response_meta *m, const struct api_choice *c);
char *api_chunk_usage_json(const struct api_response_meta *m, const struct api_usage *u);

/* GET /v1/models: {"object":"list","data":[{"id","object":"model","created","owned_by"}...]}. */
char *api_models_json(const char *const *ids, uint32_t n, int64_t created, const char *owned_by);

/* /tokenize: {"count","max_model_len","tokens":[...],"token_strs":[...]|null} (vLLM's
 * shape); strs (n pieces) may be NULL. /detokenize: {"prompt": text}. */
char *api_tokenize_json(const int32_t *ids, uint32_t n, uint32_t max_model_len, const struct api_piece *strs);
char *api_detokenize_json(const char *text, size_t len);

#endif
