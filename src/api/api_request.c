/* api/api_request.c — the top level of request parsing: the body, its size and
 * depth, the table of known fields per endpoint, the scalar fields (sampling,
 * stop, n, stream, logprobs, logit_bias, ...) and the checks between fields.
 * Rules and choices: api_request.h. Messages and prompts: api_request_input.c.
 */
#include "api/api_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api_limits_default(struct api_limits *l)
{
    l->max_body = 8u << 20;
    l->max_depth = 32;
    l->max_n = 128;
    l->max_messages = 4096;
    l->max_prompts = 128;
    l->max_prompt_tokens = 1u << 20;
}

/* which endpoints know a field */
#define K_CHAT (1u << API_KIND_CHAT)
#define K_CMPL (1u << API_KIND_COMPLETION)
#define K_TOK (1u << API_KIND_TOKENIZE)
#define K_DETOK (1u << API_KIND_DETOKENIZE)
#define K_GEN (K_CHAT | K_CMPL)

/* fields seen, for the checks between fields */
struct seen {
    const json_t *logprobs, *top_logprobs, *stream_options, *max_tokens, *max_completion_tokens;
    int64_t best_of; /* 0: not given */
    bool model, messages, prompt, tokens;
};

typedef int (*field_fn)(struct api_parser *p, struct seen *s, const char *key, const json_t *v);

static int oom(struct api_parser *p) { return api_error_set(p->err, 500, NULL, NULL, "out of memory"); }

static int f_model(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    s->model = true;
    return api_get_string(p->err, key, v, 1, API_MAX_MODEL_LEN, &p->req->model, NULL);
}

static int f_messages(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)key;
    s->messages = true;
    return api_parse_messages(p, v);
}

static int f_prompt(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)key;
    s->prompt = true;
    return api_parse_prompt(p, v);
}

static int f_tokens(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)key;
    s->tokens = true;
    return api_parse_detok_tokens(p, v);
}

static int f_max_tokens(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)p;
    if (!strcmp(key, "max_tokens"))
        s->max_tokens = v;
    else
        s->max_completion_tokens = v;
    return 0; /* resolved in check_fields: max_completion_tokens wins */
}

static int f_real(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    struct sample_params *sp = &p->req->sample;
    double x;
    if (!strcmp(key, "temperature")) {
        if (api_get_real(p->err, key, v, 0, 2, false, &x))
            return -1;
        sp->temperature = (float)x;
    } else if (!strcmp(key, "top_p")) {
        if (api_get_real(p->err, key, v, 0, 1, false, &x))
            return -1;
        /* OpenAI allows 0: keep only the most likely token. The sampler wants
         * (0, 1]; the smallest positive float keeps exactly the first token. */
        sp->top_p = x > 0 ? (float)x : 1.17549435e-38f;
    } else if (!strcmp(key, "min_p")) {
        if (api_get_real(p->err, key, v, 0, 1, false, &x))
            return -1;
        sp->min_p = (float)x;
    } else if (!strcmp(key, "presence_penalty")) {
        if (api_get_real(p->err, key, v, -2, 2, false, &x))
            return -1;
        sp->presence_penalty = (float)x;
    } else if (!strcmp(key, "frequency_penalty")) {
        if (api_get_real(p->err, key, v, -2, 2, false, &x))
            return -1;
        sp->frequency_penalty = (float)x;
    } else { /* repetition_penalty */
        if (api_get_real(p->err, key, v, 0, 100, true, &x))
            return -1;
        sp->repetition_penalty = (float)x;
    }
    return 0;
}

static int f_top_k(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    int64_t k;
    if (api_get_int(p->err, key, v, -1, INT32_MAX, &k))
        return -1;
    p->req->sample.top_k = (int32_t)k;
    return 0;
}

static int f_seed(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    int64_t x;
    if (api_get_int(p->err, key, v, INT64_MIN, INT64_MAX, &x))
        return -1;
    p->req->sample.seed = (uint64_t)x;
    p->req->has_seed = true;
    return 0;
}

static int f_n(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    int64_t x;
    if (api_get_int(p->err, key, v, 1, p->lim->max_n, &x))
        return -1;
    p->req->n = (uint32_t)x;
    return 0;
}

static int f_stop(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    char path[API_ERROR_PARAM_MAX];
    struct api_request *r = p->req;
    if (json_is_string(v)) {
        r->n_stop = 1;
        return api_get_string(p->err, key, v, 1, API_MAX_STOP_LEN, &r->stop[0], &r->stop_len[0]);
    }
    if (!json_is_array(v))
        return api_type_error(p->err, key, "a string or an array of strings", v);
    size_t n = json_array_size(v);
    if (n > API_MAX_STOP)
        return api_error_set(p->err, 400, "array_above_max_length", key,
                             "Invalid 'stop': array too long. Expected an array with maximum length %d, but got "
                             "an array with length %zu instead.", API_MAX_STOP, n);
    for (size_t i = 0; i < n; i++) {
        api_path(path, "stop[%zu]", i);
        if (api_get_string(p->err, path, json_array_get(v, i), 1, API_MAX_STOP_LEN, &r->stop[i], &r->stop_len[i]))
            return -1;
    }
    r->n_stop = (uint32_t)n;
    return 0;
}

static int f_logprobs(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    s->logprobs = v;
    if (p->req->kind == API_KIND_CHAT)
        return api_get_bool(p->err, key, v, &p->req->logprobs);
    int64_t k;
    if (api_get_int(p->err, key, v, 0, API_MAX_TOP_LOGPROBS, &k))
        return -1;
    p->req->logprobs = true;
    p->req->sample.top_logprobs = (int32_t)k;
    return 0;
}

static int f_top_logprobs(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    s->top_logprobs = v;
    int64_t k;
    if (api_get_int(p->err, key, v, 0, API_MAX_TOP_LOGPROBS, &k))
        return -1;
    p->req->sample.top_logprobs = (int32_t)k;
    return 0;
}

static int f_logit_bias(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    char path[API_ERROR_PARAM_MAX];
    if (!json_is_object(v))
        return api_type_error(p->err, key, "an object", v);
    size_t n = json_object_size(v);
    if (n > API_MAX_LOGIT_BIAS)
        return api_error_set(p->err, 400, "object_above_max_size", key,
                             "Invalid 'logit_bias': too many entries. Expected at most %d, but got %zu.",
                             API_MAX_LOGIT_BIAS, n);
    struct sample_bias *b = malloc((n ? n : 1) * sizeof(*b));
    if (!b)
        return oom(p);
    free((void *)p->req->sample.logit_bias);
    p->req->sample.logit_bias = b;
    p->req->sample.n_logit_bias = 0;
    const char *k;
    const json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        api_path(path, "logit_bias.%.32s", k);
        size_t len = strlen(k);
        uint64_t id = 0;
        bool ok = len >= 1 && len <= 10;
        for (size_t i = 0; ok && i < len; i++) {
            ok = k[i] >= '0' && k[i] <= '9';
            id = id * 10 + (uint64_t)(k[i] - '0');
        }
        if (!ok || id > INT32_MAX)
            return api_error_set(p->err, 400, "invalid_key", path,
                                 "Invalid key in 'logit_bias': '%.32s'. Expected a token id (a decimal integer "
                                 "from 0 to 2147483647).", k);
        double x;
        if (api_get_real(p->err, path, val, -100, 100, false, &x))
            return -1;
        /* "01" and "1" name the same token: the later entry wins */
        uint32_t j = 0;
        while (j < p->req->sample.n_logit_bias && b[j].token != (int32_t)id)
            j++;
        b[j].token = (int32_t)id;
        b[j].bias = (float)x;
        if (j == p->req->sample.n_logit_bias)
            p->req->sample.n_logit_bias++;
    }
    return 0;
}

static int f_user(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    return api_get_string(p->err, key, v, 0, API_MAX_USER_LEN, &p->req->user, NULL);
}

static int f_cache_salt(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s; /* no NUL inside: the body is parsed without JSON_ALLOW_NUL (the namespace compares C strings) */
    return api_get_string(p->err, key, v, 1, API_MAX_CACHE_SALT_LEN, &p->req->cache_salt, NULL);
}

static int f_stream(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    return api_get_bool(p->err, key, v, &p->req->stream);
}

static int f_stream_options(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    char path[API_ERROR_PARAM_MAX];
    s->stream_options = v;
    if (!json_is_object(v))
        return api_type_error(p->err, key, "an object", v);
    const char *k;
    const json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        api_path(path, "stream_options.%.64s", k);
        if (json_is_null(val))
            continue;
        bool b;
        if (!strcmp(k, "include_usage")) {
            if (api_get_bool(p->err, path, val, &p->req->include_usage))
                return -1;
        } else if (!strcmp(k, "include_obfuscation")) {
            if (api_get_bool(p->err, path, val, &b)) /* no obfuscation padding here */
                return -1;
        } else {
            return api_unknown_param(p->err, path);
        }
    }
    return 0;
}

static int f_bool_opt(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    bool b;
    if (api_get_bool(p->err, key, v, &b))
        return -1;
    if (!strcmp(key, "add_special_tokens"))
        p->req->add_special_tokens = b;
    else if (!strcmp(key, "add_generation_prompt"))
        p->req->add_generation_prompt = b;
    else if (!strcmp(key, "return_token_strs"))
        p->req->return_token_strs = b;
    /* store, parallel_tool_calls: accepted and ignored */
    return 0;
}

/* accepted and ignored: metadata (an object of strings), service_tier (a string) */
static int f_ignored(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    if (!strcmp(key, "metadata") && !json_is_object(v))
        return api_type_error(p->err, key, "an object", v);
    if (!strcmp(key, "service_tier") && !json_is_string(v))
        return api_type_error(p->err, key, "a string", v);
    return 0;
}

/* OpenAI fields we do not implement: accepted only with the value that asks for
 * the default behaviour. */
static int f_default_only(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    bool ok = false;
    if (!strcmp(key, "tools") || !strcmp(key, "functions")) {
        ok = json_is_array(v) && json_array_size(v) == 0;
    } else if (!strcmp(key, "tool_choice") || !strcmp(key, "function_call")) {
        ok = json_is_string(v) && !strcmp(json_string_value(v), "none");
    } else if (!strcmp(key, "response_format")) {
        const json_t *t = json_is_object(v) ? json_object_get(v, "type") : NULL;
        ok = json_object_size(v) == 1 && json_is_string(t) && !strcmp(json_string_value(t), "text");
    } else if (!strcmp(key, "modalities")) {
        const json_t *m = json_array_get(v, 0);
        ok = json_is_array(v) && json_array_size(v) == 1 && json_is_string(m) && !strcmp(json_string_value(m), "text");
    } else if (!strcmp(key, "echo")) {
        ok = json_is_false(v);
    } else if (!strcmp(key, "suffix")) {
        ok = json_is_string(v) && json_string_length(v) == 0;
    } else if (!strcmp(key, "best_of")) {
        return api_get_int(p->err, key, v, 1, 128, &s->best_of); /* compared with n in check_fields */
    }
    return ok ? 0 : api_unsupported(p->err, key, "only its default value is accepted");
}

static int f_unsupported(struct api_parser *p, struct seen *s, const char *key, const json_t *v)
{
    (void)s;
    (void)v;
    return api_unsupported(p->err, key, NULL);
}

static const struct field {
    const char *name;
    unsigned kinds;
    field_fn fn;
} fields[] = {
    {"model", K_GEN | K_TOK | K_DETOK, f_model},
    {"messages", K_CHAT | K_TOK, f_messages},
    {"prompt", K_CMPL | K_TOK, f_prompt},
    {"tokens", K_DETOK, f_tokens},
    {"max_tokens", K_GEN, f_max_tokens},
    {"max_completion_tokens", K_CHAT, f_max_tokens},
    {"temperature", K_GEN, f_real},
    {"top_p", K_GEN, f_real},
    {"min_p", K_GEN, f_real},
    {"presence_penalty", K_GEN, f_real},
    {"frequency_penalty", K_GEN, f_real},
    {"repetition_penalty", K_GEN, f_real},
    {"top_k", K_GEN, f_top_k},
    {"seed", K_GEN, f_seed},
    {"n", K_GEN, f_n},
    {"stop", K_GEN, f_stop},
    {"logprobs", K_GEN, f_logprobs},
    {"top_logprobs", K_CHAT, f_top_logprobs},
    {"logit_bias", K_GEN, f_logit_bias},
    {"user", K_GEN, f_user},
    {"cache_salt", K_GEN, f_cache_salt},
    {"stream", K_GEN, f_stream},
    {"stream_options", K_GEN, f_stream_options},
    {"add_special_tokens", K_TOK, f_bool_opt},
    {"add_generation_prompt", K_TOK, f_bool_opt},
    {"return_token_strs", K_TOK, f_bool_opt},
    {"store", K_CHAT, f_bool_opt},
    {"parallel_tool_calls", K_CHAT, f_bool_opt},
    {"metadata", K_CHAT, f_ignored},
    {"service_tier", K_GEN, f_ignored},
    {"tools", K_CHAT, f_default_only},
    {"functions", K_CHAT, f_default_only},
    {"tool_choice", K_CHAT, f_default_only},
    {"function_call", K_CHAT, f_default_only},
    {"response_format", K_CHAT, f_default_only},
    {"modalities", K_CHAT, f_default_only},
    {"echo", K_CMPL, f_default_only},
    {"suffix", K_CMPL, f_default_only},
    {"best_of", K_CMPL, f_default_only},
    {"audio", K_CHAT, f_unsupported},
    {"prediction", K_CHAT, f_unsupported},
    {"reasoning_effort", K_CHAT, f_unsupported},
    {"web_search_options", K_CHAT, f_unsupported},
};

static int missing(struct api_parser *p, const char *param)
{
    return api_error_set(p->err, 400, "missing_required_parameter", param, "Missing required parameter: '%s'.",
                         param);
}

static int check_fields(struct api_parser *p, const struct seen *s)
{
    struct api_request *r = p->req;
    switch (r->kind) {
    case API_KIND_CHAT:
        if (!s->model)
            return missing(p, "model");
        if (!s->messages)
            return missing(p, "messages");
        break;
    case API_KIND_COMPLETION:
        if (!s->model)
            return missing(p, "model");
        if (!s->prompt)
            return missing(p, "prompt");
        break;
    case API_KIND_TOKENIZE:
        if (s->prompt == s->messages)
            return api_error_set(p->err, 400, s->prompt ? "invalid_value" : "missing_required_parameter",
                                 s->prompt ? "messages" : "prompt", "Give exactly one of 'prompt' and 'messages'.");
        if (!s->prompt)
            return 0;
        break;
    case API_KIND_DETOKENIZE:
        return s->tokens ? 0 : missing(p, "tokens");
    }
    if (r->kind == API_KIND_TOKENIZE)
        return 0;

    /* max_completion_tokens (OpenAI's current name) wins over max_tokens */
    const json_t *mt = s->max_completion_tokens ? s->max_completion_tokens : s->max_tokens;
    if (mt && api_get_int(p->err, s->max_completion_tokens ? "max_completion_tokens" : "max_tokens", mt, 1,
                          INT32_MAX, &r->max_tokens))
        return -1;
    if (!mt && r->kind == API_KIND_COMPLETION)
        r->max_tokens = 16; /* OpenAI's default for /v1/completions */

    if (s->top_logprobs && !r->logprobs)
        return api_error_set(p->err, 400, "invalid_value", "top_logprobs",
                             "'top_logprobs' requires 'logprobs' to be true.");
    if (s->stream_options && !r->stream)
        return api_error_set(p->err, 400, "invalid_value", "stream_options",
                             "The 'stream_options' parameter is only allowed when 'stream' is true.");
    if (s->best_of && s->best_of != (int64_t)r->n)
        return api_unsupported(p->err, "best_of", "only best_of = n is accepted");
    uint64_t choices = (uint64_t)r->n * (r->n_prompts ? r->n_prompts : 1);
    if (choices > p->lim->max_n)
        return api_error_set(p->err, 400, "integer_above_max_value", "n",
                             "Invalid 'n': n times the number of prompts is %llu, above the limit of %u.",
                             (unsigned long long)choices, p->lim->max_n);
    r->sample.logprobs = r->logprobs;
    if (!r->logprobs)
        r->sample.top_logprobs = 0;
    return 0;
}

static uint32_t json_depth(const json_t *v, uint32_t limit)
{
    uint32_t deepest = 0;
    if (limit == 0)
        return 1;
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) {
            uint32_t d = json_depth(c, limit - 1);
            if (d > deepest)
                deepest = d;
        }
        return 1 + deepest;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            uint32_t d = json_depth(json_array_get(v, i), limit - 1);
            if (d > deepest)
                deepest = d;
        }
        return 1 + deepest;
    }
    return 0;
}

static void request_init(struct api_request *r, enum api_kind kind)
{
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->n = 1;
    r->max_tokens = -1;
    r->add_generation_prompt = true;
    /* OpenAI's defaults, which are sample_params_default()'s (sample.h): temperature
     * 1, top_p 1, everything else off. Set here so parsing needs no sampler code. */
    r->sample.temperature = 1.0f;
    r->sample.top_p = 1.0f;
    r->sample.repetition_penalty = 1.0f;
}

int api_request_parse(struct api_request *req, enum api_kind kind, const char *body, size_t len,
                      const struct api_limits *limits, struct api_error *err)
{
    struct api_limits def;
    if (!limits) {
        api_limits_default(&def);
        limits = &def;
    }
    request_init(req, kind);
    if (len > limits->max_body)
        return api_error_set(err, 413, "request_too_large", NULL,
                             "Request body of %zu bytes is larger than the limit of %zu bytes.", len,
                             limits->max_body);
    json_error_t jerr;
    req->root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!req->root)
        return api_error_set(err, 400, "invalid_json", NULL,
                             "We could not parse the JSON body of your request: %s (line %d, column %d).",
                             jerr.text, jerr.line, jerr.column);
    struct api_parser p = {req, limits, err};
    int rc = -1;
    if (!json_is_object(req->root)) {
        api_error_set(err, 400, "invalid_json", NULL, "The request body must be a JSON object, not %s.",
                      api_json_type_name(req->root));
        goto out;
    }
    if (json_depth(req->root, limits->max_depth + 1) > limits->max_depth) {
        api_error_set(err, 400, "invalid_json", NULL, "The JSON body is nested deeper than %u levels.",
                      limits->max_depth);
        goto out;
    }
    if (kind == API_KIND_TOKENIZE)
        req->add_special_tokens = !json_object_get(req->root, "messages");
    struct seen s = {0};
    const char *key;
    json_t *v;
    json_object_foreach(req->root, key, v) {
        const struct field *f = NULL;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]) && !f; i++)
            if (!strcmp(fields[i].name, key) && (fields[i].kinds & (1u << kind)))
                f = &fields[i];
        if (!f) {
            char path[API_ERROR_PARAM_MAX];
            api_path(path, "%.100s", key);
            api_unknown_param(err, path);
            goto out;
        }
        if (json_is_null(v) && strcmp(key, "model") && strcmp(key, "messages") && strcmp(key, "prompt") &&
            strcmp(key, "tokens"))
            continue; /* null: not given */
        if (f->fn(&p, &s, key, v))
            goto out;
    }
    if (check_fields(&p, &s))
        goto out;
    rc = 0;
out:
    if (rc)
        api_request_free(req);
    return rc;
}

void api_request_free(struct api_request *req)
{
    if (!req)
        return;
    for (uint32_t i = 0; i < req->n_prompts; i++)
        free(req->prompts[i].tokens);
    free(req->prompts);
    free((void *)req->sample.logit_bias);
    json_decref(req->messages);
    json_decref(req->root);
    request_init(req, req->kind);
}

int api_request_check_vocab(const struct api_request *req, uint32_t n_vocab, struct api_error *err)
{
    char path[API_ERROR_PARAM_MAX];
    const char *name = req->kind == API_KIND_DETOKENIZE ? "tokens" : "prompt";
    for (uint32_t i = 0; i < req->n_prompts; i++) {
        const struct api_prompt *pr = &req->prompts[i];
        for (uint32_t j = 0; j < pr->n_tokens; j++) {
            if ((uint32_t)pr->tokens[j] < n_vocab)
                continue;
            if (req->n_prompts > 1)
                api_path(path, "%s[%u][%u]", name, i, j);
            else
                api_path(path, "%s[%u]", name, j);
            return api_error_set(err, 400, "invalid_token_id", path,
                                 "Invalid '%s': token id %d is out of the vocabulary (0..%u).", path,
                                 pr->tokens[j], n_vocab - 1);
        }
    }
    for (uint32_t i = 0; i < req->sample.n_logit_bias; i++) {
        int32_t t = req->sample.logit_bias[i].token;
        if ((uint32_t)t >= n_vocab) {
            api_path(path, "logit_bias.%d", t);
            return api_error_set(err, 400, "invalid_token_id", path,
                                 "Invalid 'logit_bias': token id %d is out of the vocabulary (0..%u).", t,
                                 n_vocab - 1);
        }
    }
    return 0;
}
