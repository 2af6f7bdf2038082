/* api/api_response.c — OpenAI response bodies and stream chunks; see api_response.h. */
#include "api/api_response.h"

#include "api/api_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* Builders collect failures in *ok rather than checking every call: jansson's
 * *_set_new / *_append_new take NULL values (and fail) and free what they were
 * given on failure, so a NULL from a constructor just flips ok. */
static void put(json_t *obj, const char *key, json_t *v, bool *ok)
{
    if (!obj || json_object_set_new(obj, key, v))
        *ok = false;
}

static void add(json_t *arr, json_t *v, bool *ok)
{
    if (!arr || json_array_append_new(arr, v))
        *ok = false;
}

static json_t *logprob_value(float lp)
{
    double d = isnan(lp) || lp < -9999.0f ? -9999.0 : (double)lp;
    return json_real(d);
}

static char *finish(json_t *root, bool ok)
{
    char *out = ok && root ? api_json_dump(root) : NULL;
    json_decref(root);
    return out;
}

void api_make_id(char *out, size_t cap, enum api_kind kind)
{
    static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const char *prefix = kind == API_KIND_CHAT ? "chatcmpl-" : "cmpl-";
    unsigned char rnd[24];
    size_t got = 0;
    while (got < sizeof(rnd)) {
        ssize_t r = getrandom(rnd + got, sizeof(rnd) - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got < sizeof(rnd)) { /* no entropy source: time and address, still unique enough per process */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)out;
        for (size_t i = got; i < sizeof(rnd); i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            rnd[i] = (unsigned char)(x >> 56);
        }
    }
    size_t o = 0, plen = strlen(prefix);
    for (size_t i = 0; i < plen && o + 1 < cap; i++)
        out[o++] = prefix[i];
    for (size_t i = 0; i < sizeof(rnd) && o + 1 < cap; i++)
        out[o++] = b62[rnd[i] % 62]; /* slight modulo bias: these are ids, not keys */
    if (cap)
        out[o] = '\0';
}

static json_t *bytes_array(const char *s, size_t len)
{
    json_t *a = json_array();
    bool ok = true;
    for (size_t i = 0; i < len; i++)
        add(a, json_integer((unsigned char)s[i]), &ok);
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* chat: {"content":[{"token","logprob","bytes","top_logprobs":[...]}],"refusal":null} */
static json_t *chat_logprobs(const struct api_choice *c)
{
    bool ok = true;
    json_t *root = json_object(), *content = json_array();
    for (uint32_t i = 0; i < c->n_logprobs; i++) {
        const struct api_token_logprob *t = &c->logprobs[i];
        json_t *e = json_object(), *top = json_array();
        put(e, "token", api_json_string_bytes(t->text, t->len), &ok);
        put(e, "logprob", logprob_value(t->logprob), &ok);
        put(e, "bytes", bytes_array(t->text, t->len), &ok);
        for (uint32_t j = 0; j < t->n_top; j++) {
            json_t *a = json_object();
            put(a, "token", api_json_string_bytes(t->top[j].text, t->top[j].len), &ok);
            put(a, "logprob", logprob_value(t->top[j].logprob), &ok);
            put(a, "bytes", bytes_array(t->top[j].text, t->top[j].len), &ok);
            add(top, a, &ok);
        }
        put(e, "top_logprobs", top, &ok);
        add(content, e, &ok);
    }
    put(root, "content", content, &ok);
    put(root, "refusal", json_null(), &ok);
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* completions: {"tokens","token_logprobs","top_logprobs":[{token: logprob}],"text_offset"} */
static json_t *completion_logprobs(const struct api_choice *c)
{
    bool ok = true;
    json_t *root = json_object(), *tokens = json_array(), *lps = json_array(), *tops = json_array(),
           *offs = json_array();
    uint64_t off = c->text_offset;
    for (uint32_t i = 0; i < c->n_logprobs; i++) {
        const struct api_token_logprob *t = &c->logprobs[i];
        json_t *tok = api_json_string_bytes(t->text, t->len);
        add(tokens, tok, &ok);
        add(lps, logprob_value(t->logprob), &ok);
        json_t *top = json_object();
        for (uint32_t j = 0; j < t->n_top; j++) {
            json_t *k = api_json_string_bytes(t->top[j].text, t->top[j].len);
            if (!k) {
                ok = false;
                continue;
            }
            /* two tokens may print alike: the more likely (earlier) one keeps the key */
            if (!json_object_getn(top, json_string_value(k), json_string_length(k)))
                if (json_object_setn_new(top, json_string_value(k), json_string_length(k),
                                         logprob_value(t->top[j].logprob)))
                    ok = false;
            json_decref(k);
        }
        /* the chosen token is always listed (OpenAI: up to logprobs+1 entries) */
        if (tok && !json_object_getn(top, json_string_value(tok), json_string_length(tok)))
            if (json_object_setn_new(top, json_string_value(tok), json_string_length(tok),
                                     logprob_value(t->logprob)))
                ok = false;
        add(tops, top, &ok);
        add(offs, json_integer((json_int_t)off), &ok);
        if (tok)
            off += api_utf8_count(json_string_value(tok), json_string_length(tok));
    }
    put(root, "tokens", tokens, &ok);
    put(root, "token_logprobs", lps, &ok);
    put(root, "top_logprobs", tops, &ok);
    put(root, "text_offset", offs, &ok);
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static const char *finish_name(enum api_finish f)
{
    return f == API_FINISH_STOP ? "stop" : "length";
}

static json_t *finish_value(enum api_finish f)
{
    return f == API_FINISH_NONE ? json_null() : json_string(finish_name(f));
}

static json_t *logprobs_value(const struct api_response_meta *m, const struct api_choice *c)
{
    if (!m->logprobs)
        return json_null();
    return m->kind == API_KIND_CHAT ? chat_logprobs(c) : completion_logprobs(c);
}

static json_t *usage_object(const struct api_usage *u)
{
    bool ok = true;
    json_t *o = json_object(), *d = json_object();
    put(o, "prompt_tokens", json_integer((json_int_t)u->prompt_tokens), &ok);
    put(o, "completion_tokens", json_integer((json_int_t)u->completion_tokens), &ok);
    put(o, "total_tokens", json_integer((json_int_t)(u->prompt_tokens + u->completion_tokens)), &ok);
    put(d, "cached_tokens", json_integer((json_int_t)u->cached_tokens), &ok);
    put(o, "prompt_tokens_details", d, &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* id, object, created, model, (system_fingerprint) */
static json_t *header(const struct api_response_meta *m, const char *object, bool *ok)
{
    json_t *root = json_object();
    put(root, "id", json_string(m->id), ok);
    put(root, "object", json_string(object), ok);
    put(root, "created", json_integer((json_int_t)m->created), ok);
    put(root, "model", api_json_string_bytes(m->model, strlen(m->model)), ok);
    if (m->system_fingerprint)
        put(root, "system_fingerprint", json_string(m->system_fingerprint), ok);
    return root;
}

char *api_response_json(const struct api_response_meta *m, const struct api_choice *c, uint32_t n,
                        const struct api_usage *u)
{
    bool ok = true, chat = m->kind == API_KIND_CHAT;
    json_t *root = header(m, chat ? "chat.completion" : "text_completion", &ok);
    json_t *choices = json_array();
    for (uint32_t i = 0; i < n; i++) {
        json_t *ch = json_object();
        put(ch, "index", json_integer(c[i].index), &ok);
        if (chat) {
            json_t *msg = json_object();
            put(msg, "role", json_string("assistant"), &ok);
            put(msg, "content", api_json_string_bytes(c[i].text, c[i].len), &ok);
            put(msg, "refusal", json_null(), &ok);
            put(ch, "message", msg, &ok);
        } else {
            put(ch, "text", api_json_string_bytes(c[i].text, c[i].len), &ok);
        }
        put(ch, "logprobs", logprobs_value(m, &c[i]), &ok);
        put(ch, "finish_reason", json_string(finish_name(c[i].finish)), &ok);
        add(choices, ch, &ok);
    }
    put(root, "choices", choices, &ok);
    put(root, "usage", usage_object(u), &ok);
    return finish(root, ok);
}

static json_t *chunk_header(const struct api_response_meta *m, bool *ok)
{
    return header(m, m->kind == API_KIND_CHAT ? "chat.completion.chunk" : "text_completion", ok);
}

char *api_chunk_role_json(const struct api_response_meta *m, uint32_t index)
{
    bool ok = true;
    json_t *root = chunk_header(m, &ok), *choices = json_array(), *ch = json_object(), *delta = json_object();
    put(delta, "role", json_string("assistant"), &ok);
    put(delta, "content", json_string(""), &ok);
    put(ch, "index", json_integer(index), &ok);
    put(ch, "delta", delta, &ok);
    put(ch, "logprobs", json_null(), &ok);
    put(ch, "finish_reason", json_null(), &ok);
    add(choices, ch, &ok);
    put(root, "choices", choices, &ok);
    if (m->include_usage)
        put(root, "usage", json_null(), &ok);
    return finish(root, ok);
}

char *api_chunk_json(const struct api_response_meta *m, const struct api_choice *c)
{
    bool ok = true;
    json_t *root = chunk_header(m, &ok), *choices = json_array(), *ch = json_object();
    put(ch, "index", json_integer(c->index), &ok);
    if (m->kind == API_KIND_CHAT) {
        json_t *delta = json_object();
        if (c->len || c->finish == API_FINISH_NONE)
            put(delta, "content", api_json_string_bytes(c->text, c->len), &ok);
        put(ch, "delta", delta, &ok);
    } else {
        put(ch, "text", api_json_string_bytes(c->text, c->len), &ok);
    }
    put(ch, "logprobs", c->n_logprobs ? logprobs_value(m, c) : json_null(), &ok);
    put(ch, "finish_reason", finish_value(c->finish), &ok);
    add(choices, ch, &ok);
    put(root, "choices", choices, &ok);
    if (m->include_usage)
        put(root, "usage", json_null(), &ok);
    return finish(root, ok);
}

char *api_chunk_usage_json(const struct api_response_meta *m, const struct api_usage *u)
{
    bool ok = true;
    json_t *root = chunk_header(m, &ok);
    put(root, "choices", json_array(), &ok);
    put(root, "usage", usage_object(u), &ok);
    return finish(root, ok);
}

char *api_models_json(const char *const *ids, uint32_t n, int64_t created, const char *owned_by)
{
    bool ok = true;
    json_t *root = json_object(), *data = json_array();
    put(root, "object", json_string("list"), &ok);
    for (uint32_t i = 0; i < n; i++) {
        json_t *e = json_object();
        put(e, "id", api_json_string_bytes(ids[i], strlen(ids[i])), &ok);
        put(e, "object", json_string("model"), &ok);
        put(e, "created", json_integer((json_int_t)created), &ok);
        put(e, "owned_by", json_string(owned_by), &ok);
        add(data, e, &ok);
    }
    put(root, "data", data, &ok);
    return finish(root, ok);
}

char *api_tokenize_json(const int32_t *ids, uint32_t n, uint32_t max_model_len, const struct api_piece *strs)
{
    bool ok = true;
    json_t *root = json_object(), *tokens = json_array();
    put(root, "count", json_integer(n), &ok);
    put(root, "max_model_len", json_integer(max_model_len), &ok);
    for (uint32_t i = 0; i < n; i++)
        add(tokens, json_integer(ids[i]), &ok);
    put(root, "tokens", tokens, &ok);
    if (strs) {
        json_t *s = json_array();
        for (uint32_t i = 0; i < n; i++)
            add(s, api_json_string_bytes(strs[i].text, strs[i].len), &ok);
        put(root, "token_strs", s, &ok);
    } else {
        put(root, "token_strs", json_null(), &ok);
    }
    return finish(root, ok);
}

char *api_detokenize_json(const char *text, size_t len)
{
    bool ok = true;
    json_t *root = json_object();
    put(root, "prompt", api_json_string_bytes(text, len), &ok);
    return finish(root, ok);
}
