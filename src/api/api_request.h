/* api/api_request.h — OpenAI request bodies → validated native requests.
 *
 * api_request_parse() takes the raw body of POST /v1/chat/completions,
 * /v1/completions, /tokenize or /detokenize and either fills a `struct
 * api_request` in which every field has the right type and range, or returns -1
 * with an api_error (status 400, or 413 for a body over the limit) naming the
 * field. Nothing downstream re-checks JSON; only what needs the model (token ids
 * against the vocabulary, the model alias, the context length) is left, and
 * api_request_check_vocab() does the first.
 *
 * Field semantics follow OpenAI's API reference (the CreateChatCompletionRequest
 * and CreateCompletionRequest schemas); docs/SERVING.md lists them. The choices
 * where we had to decide:
 *   - A field not in the schema is a 400 "unknown_parameter" naming it, as
 *     OpenAI's own API does ("Unrecognized request argument supplied"); vLLM
 *     ignores them by default, but silently ignoring a misspelt "temprature"
 *     hides a bug from the client. The extensions vLLM and llama.cpp accept that
 *     we implement — top_k, min_p, repetition_penalty — are known fields.
 *   - OpenAI fields we do not implement are a 400 "unsupported_parameter" naming
 *     them, unless their value asks for the default behaviour, which is then
 *     accepted: tools/functions ([] or null), tool_choice / function_call
 *     ("none"), response_format ({"type":"text"}), modalities (["text"]),
 *     echo (false), suffix (null or ""), best_of (null or = n). Fields that only
 *     concern OpenAI's bookkeeping are accepted and ignored: store, metadata,
 *     service_tier, parallel_tool_calls. audio, prediction, reasoning_effort and
 *     web_search_options are rejected.
 *   - null for an optional field means "not given" (the openai client sends null
 *     for None).
 *   - Integer fields accept a JSON integer or an integral real (2.0); anything
 *     else of the wrong type is a 400 "invalid_type".
 *   - Bounds: temperature [0,2], top_p [0,1] (0 is taken as "only the most
 *     likely token"), min_p [0,1], presence/frequency penalty [-2,2],
 *     repetition_penalty (0,100], top_k ≥ -1 (≤ 0 off), n [1, limit.max_n],
 *     top_logprobs [0,20] and only with logprobs:true, completions' logprobs
 *     [0,20] (OpenAI allows 5; vLLM 20), stop: a string or up to 16 strings of
 *     1..1024 bytes (OpenAI: 4; a superset, as vLLM), logit_bias: up to 1024
 *     entries, keys decimal token ids, values [-100,100], seed any int64,
 *     max_tokens / max_completion_tokens ≥ 1 (max_completion_tokens wins when
 *     both are given), stream_options only with stream:true, cache_salt a
 *     string of 1..256 bytes without NUL (both completion routes).
 *   - Chat messages are normalised for the chat template: content given as an
 *     array of text parts is joined with "\n" into one string (as vLLM does); a
 *     "developer" message is given to the template as "system" (OpenAI's newer
 *     name for it; templates know only "system"); roles are system, developer,
 *     user, assistant, tool; non-text parts (images, audio, files) and
 *     tool_calls are 400 "unsupported". Each message keeps "name" when given.
 *   - /tokenize and /detokenize follow vLLM's bodies: {"model"?, "prompt" |
 *     "messages", "add_special_tokens"?, "add_generation_prompt"?,
 *     "return_token_strs"?} and {"model"?, "tokens"}; model may be omitted.
 */
#ifndef MEMRA_API_API_REQUEST_H
#define MEMRA_API_API_REQUEST_H

#include "api/api_error.h"
#include "sample/sample.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum api_kind {
    API_KIND_CHAT,        /* POST /v1/chat/completions */
    API_KIND_COMPLETION,  /* POST /v1/completions */
    API_KIND_TOKENIZE,    /* POST /tokenize */
    API_KIND_DETOKENIZE,  /* POST /detokenize */
};

#define API_MAX_STOP STOP_MATCHER_MAX_STOPS         /* stop strings per request */
#define API_MAX_STOP_LEN STOP_MATCHER_MAX_LEN       /* bytes per stop string */
#define API_MAX_LOGIT_BIAS 1024                     /* logit_bias entries */
#define API_MAX_TOP_LOGPROBS SAMPLE_MAX_LOGPROBS    /* 20 */
#define API_MAX_MODEL_LEN 256                       /* bytes of "model" */
#define API_MAX_USER_LEN 512                        /* bytes of "user" */
#define API_MAX_CACHE_SALT_LEN 256                  /* bytes of "cache_salt" */

/* Server-chosen bounds on what one request may ask for. */
struct api_limits {
    size_t max_body;          /* bytes of the body; larger → 413 */
    uint32_t max_depth;       /* JSON nesting depth (the root object is 1) */
    uint32_t max_n;           /* n, and n × number of prompts, for one request */
    uint32_t max_messages;    /* chat messages */
    uint32_t max_prompts;     /* prompts in one /v1/completions request */
    uint32_t max_prompt_tokens; /* token ids in one prompt given as ids */
};

/* 8 MiB body, depth 32, n ≤ 128 (OpenAI's bound), 4096 messages, 128 prompts,
 * 1 Mi token ids. */
void api_limits_default(struct api_limits *l);

/* One prompt of /v1/completions or /tokenize: text, or token ids. */
struct api_prompt {
    const char *text;    /* text prompt (UTF-8, borrowed from req->root), NULL for ids */
    size_t text_len;
    int32_t *tokens;     /* (n_tokens) owned token ids, NULL for text; each ≥ 0 */
    uint32_t n_tokens;
};

struct api_request {
    enum api_kind kind;
    json_t *root;              /* the parsed body; borrowed strings below point into it */
    const char *model;         /* NUL-terminated, 1..API_MAX_MODEL_LEN bytes; NULL when
                                  omitted (tokenize/detokenize only: the default model) */

    /* chat (and /tokenize with messages): the normalised message array the chat
     * template renders: [{"role": "system"|"user"|"assistant"|"tool", "content":
     * "<string>", "name"?: "<string>"}, ...], owned reference; NULL otherwise. */
    json_t *messages;
    bool add_generation_prompt; /* /tokenize with messages (default true); chat: true */

    /* completions: ≥ 1 prompts; /tokenize with prompt: 1; /detokenize: 1 (ids) */
    struct api_prompt *prompts; /* (n_prompts) owned */
    uint32_t n_prompts;
    bool add_special_tokens;   /* /tokenize: default true for prompt, false for messages */
    bool return_token_strs;    /* /tokenize */

    uint32_t n;                /* choices per prompt, ≥ 1 */
    bool stream;
    bool include_usage;        /* stream_options.include_usage */
    int64_t max_tokens;        /* ≥ 1; -1: not given (chat: up to the context length;
                                  completions default to 16 as OpenAI's) */
    const char *stop[API_MAX_STOP]; /* (n_stop) borrowed, each 1..API_MAX_STOP_LEN bytes */
    size_t stop_len[API_MAX_STOP];
    uint32_t n_stop;

    /* Sampling: temperature, top_k/p, min_p, penalties, logprobs, top_logprobs and
     * logit_bias are filled (logit_bias points into req-owned memory; ids are only
     * checked ≥ 0 here — api_request_check_vocab bounds them). stop_tokens is left
     * empty for the engine (EOS). seed is set only when has_seed; choice i of a
     * request with a seed should use seed + i so that n > 1 gives distinct,
     * reproducible samples. */
    struct sample_params sample;
    bool has_seed;
    bool logprobs;             /* report logprobs (chat: logprobs:true; completions:
                                  logprobs given, sample.top_logprobs = its value) */
    const char *user;          /* NULL or ≤ API_MAX_USER_LEN bytes, borrowed */
    const char *cache_salt;    /* NULL or 1..API_MAX_CACHE_SALT_LEN bytes without NUL, borrowed:
                                  the prefix cache shares KV only between requests with the same
                                  salt (and tenant and model) — vLLM's field */
};

/* Parse and validate body[0..len) as a request of `kind`. On success returns 0 and
 * *req owns what it holds (free with api_request_free). On failure returns -1 with
 * *err filled (status 400, or 413 when len > limits->max_body) and *req left empty
 * (api_request_free on it is harmless). limits may be NULL for the defaults. */
int api_request_parse(struct api_request *req, enum api_kind kind, const char *body, size_t len,
                      const struct api_limits *limits, struct api_error *err);
void api_request_free(struct api_request *req);

/* Check every token id the request names (prompt ids, logit_bias keys) against a
 * vocabulary of n_vocab tokens: 0 or -1 with a 400 naming the field. */
int api_request_check_vocab(const struct api_request *req, uint32_t n_vocab, struct api_error *err);

#endif
