/* api/api_request_input.c — the request's input: chat "messages", completion
 * "prompt" and /detokenize "tokens". See api_request.h for the rules (roles,
 * text parts joined with "\n", prompt as string / strings / ids / lists of ids).
 */
#include "api/api_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_MAX_NAME_LEN 256

/* Content as a string, or an array of {"type":"text","text":...} parts joined
 * with "\n". *out is a new JSON string. */
static int parse_content(struct api_parser *p, const char *param, const json_t *v, json_t **out)
{
    char path[API_ERROR_PARAM_MAX];
    if (json_is_string(v)) {
        *out = json_stringn(json_string_value(v), json_string_length(v));
        return *out ? 0 : api_error_set(p->err, 500, NULL, NULL, "out of memory");
    }
    if (!json_is_array(v))
        return api_type_error(p->err, param, "a string or an array of content parts", v);
    size_t n = json_array_size(v);
    if (n == 0)
        return api_error_set(p->err, 400, "empty_array", param,
                             "Invalid '%s': empty array. Expected an array with minimum length 1, but got an "
                             "empty array instead.", param);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *part = json_array_get(v, i);
        api_path(path, "%s[%zu]", param, i);
        if (!json_is_object(part))
            return api_type_error(p->err, path, "an object", part);
        const char *key;
        const json_t *val;
        const json_t *type = NULL, *text = NULL;
        json_object_foreach((json_t *)part, key, val) {
            if (!strcmp(key, "type"))
                type = val;
            else if (!strcmp(key, "text"))
                text = val;
            else if (!strcmp(key, "image_url") || !strcmp(key, "input_audio") || !strcmp(key, "file") ||
                     !strcmp(key, "refusal"))
                continue; /* named by the "type" check below */
            else {
                api_path(path, "%s[%zu].%s", param, i, key);
                return api_unknown_param(p->err, path);
            }
        }
        api_path(path, "%s[%zu].type", param, i);
        const char *t;
        if (!type)
            return api_error_set(p->err, 400, "missing_required_parameter", path,
                                 "Missing required parameter: '%s'.", path);
        if (api_get_string(p->err, path, type, 1, 64, &t, NULL))
            return -1;
        if (strcmp(t, "text") != 0) {
            if (!strcmp(t, "image_url") || !strcmp(t, "input_audio") || !strcmp(t, "file") || !strcmp(t, "refusal"))
                return api_unsupported(p->err, path, "only text content parts are accepted");
            return api_error_set(p->err, 400, "invalid_value", path,
                                 "Invalid value: '%.64s'. Supported values are: 'text', 'image_url', "
                                 "'input_audio', 'refusal' and 'file'.", t);
        }
        api_path(path, "%s[%zu].text", param, i);
        if (!text)
            return api_error_set(p->err, 400, "missing_required_parameter", path,
                                 "Missing required parameter: '%s'.", path);
        if (!json_is_string(text))
            return api_type_error(p->err, path, "a string", text);
        total += json_string_length(text) + (i > 0);
    }
    char *buf = malloc(total + 1);
    if (!buf)
        return api_error_set(p->err, 500, NULL, NULL, "out of memory");
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *text = json_object_get(json_array_get(v, i), "text");
        if (i > 0)
            buf[off++] = '\n';
        memcpy(buf + off, json_string_value(text), json_string_length(text));
        off += json_string_length(text);
    }
    *out = json_stringn(buf, off);
    free(buf);
    return *out ? 0 : api_error_set(p->err, 500, NULL, NULL, "out of memory");
}

/* Empty-equivalent values of fields we do not implement: null, [] or false. */
static bool is_empty_value(const json_t *v)
{
    return json_is_null(v) || json_is_false(v) || (json_is_array(v) && json_array_size(v) == 0);
}

static int parse_message(struct api_parser *p, size_t i, const json_t *m, json_t *out)
{
    char param[API_ERROR_PARAM_MAX], path[API_ERROR_PARAM_MAX];
    api_path(param, "messages[%zu]", i);
    if (!json_is_object(m))
        return api_type_error(p->err, param, "an object", m);
    const json_t *role = NULL, *content = NULL, *name = NULL, *tool_call_id = NULL;
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)m, key, val) {
        api_path(path, "%s.%.64s", param, key);
        if (!strcmp(key, "role"))
            role = val;
        else if (!strcmp(key, "content"))
            content = val;
        else if (!strcmp(key, "name"))
            name = val;
        else if (!strcmp(key, "tool_call_id"))
            tool_call_id = val;
        else if (!strcmp(key, "refusal")) {
            if (!json_is_null(val) && !json_is_string(val))
                return api_type_error(p->err, path, "a string", val);
        } else if (!strcmp(key, "tool_calls") || !strcmp(key, "function_call") || !strcmp(key, "audio")) {
            if (!is_empty_value(val))
                return api_unsupported(p->err, path, "tool calls and audio are not implemented");
        } else
            return api_unknown_param(p->err, path);
    }
    api_path(path, "%s.role", param);
    const char *r;
    if (!role)
        return api_error_set(p->err, 400, "missing_required_parameter", path, "Missing required parameter: '%s'.",
                             path);
    if (api_get_string(p->err, path, role, 1, 32, &r, NULL))
        return -1;
    const char *tmpl_role;
    if (!strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant") || !strcmp(r, "tool"))
        tmpl_role = r;
    else if (!strcmp(r, "developer"))
        tmpl_role = "system";
    else if (!strcmp(r, "function"))
        return api_unsupported(p->err, path, "the deprecated 'function' role");
    else
        return api_error_set(p->err, 400, "invalid_value", path,
                             "Invalid value: '%.32s'. Supported values are: 'system', 'developer', 'user', "
                             "'assistant' and 'tool'.", r);
    if (json_object_set_new(out, "role", json_string(tmpl_role)))
        return api_error_set(p->err, 500, NULL, NULL, "out of memory");

    api_path(path, "%s.content", param);
    json_t *c = NULL;
    if (!content || json_is_null(content)) {
        /* OpenAI makes content optional only for assistant messages (which then
         * carry tool calls, which we reject above): an empty assistant turn. */
        if (strcmp(r, "assistant") != 0)
            return api_error_set(p->err, 400, "missing_required_parameter", path,
                                 "Missing required parameter: '%s'.", path);
        c = json_string("");
    } else if (parse_content(p, path, content, &c)) {
        return -1;
    }
    if (json_object_set_new(out, "content", c))
        return api_error_set(p->err, 500, NULL, NULL, "out of memory");

    if (name && !json_is_null(name)) {
        const char *s;
        size_t len;
        api_path(path, "%s.name", param);
        if (api_get_string(p->err, path, name, 1, API_MAX_NAME_LEN, &s, &len))
            return -1;
        if (json_object_set_new(out, "name", json_stringn(s, len)))
            return api_error_set(p->err, 500, NULL, NULL, "out of memory");
    }
    if (tool_call_id && !json_is_null(tool_call_id)) {
        const char *s;
        size_t len;
        api_path(path, "%s.tool_call_id", param);
        if (api_get_string(p->err, path, tool_call_id, 0, API_MAX_NAME_LEN, &s, &len))
            return -1;
        if (json_object_set_new(out, "tool_call_id", json_stringn(s, len)))
            return api_error_set(p->err, 500, NULL, NULL, "out of memory");
    }
    return 0;
}

int api_parse_messages(struct api_parser *p, const json_t *v)
{
    if (!json_is_array(v))
        return api_type_error(p->err, "messages", "an array", v);
    size_t n = json_array_size(v);
    if (n == 0)
        return api_error_set(p->err, 400, "empty_array", "messages",
                             "Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
                             "an empty array instead.");
    if (n > p->lim->max_messages)
        return api_error_set(p->err, 400, "array_above_max_length", "messages",
                             "Invalid 'messages': array too long. Expected an array with maximum length %u, but "
                             "got an array with length %zu instead.", p->lim->max_messages, n);
    json_t *arr = json_array();
    if (!arr)
        return api_error_set(p->err, 500, NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *out = json_object();
        if (!out || json_array_append_new(arr, out)) {
            json_decref(arr);
            return api_error_set(p->err, 500, NULL, NULL, "out of memory");
        }
        if (parse_message(p, i, json_array_get(v, i), out)) {
            json_decref(arr);
            return -1;
        }
    }
    json_decref(p->req->messages);
    p->req->messages = arr;
    return 0;
}

/* A JSON array of token ids → an owned int32 array (min_len..max_len entries). */
static int parse_token_ids(struct api_parser *p, const char *param, const json_t *v, size_t min_len,
                           struct api_prompt *out)
{
    char path[API_ERROR_PARAM_MAX];
    size_t n = json_array_size(v);
    if (n < min_len)
        return api_error_set(p->err, 400, "empty_array", param,
                             "Invalid '%s': empty array. Expected an array with minimum length %zu, but got an "
                             "empty array instead.", param, min_len);
    if (n > p->lim->max_prompt_tokens)
        return api_error_set(p->err, 400, "array_above_max_length", param,
                             "Invalid '%s': array too long. Expected an array with maximum length %u, but got an "
                             "array with length %zu instead.", param, p->lim->max_prompt_tokens, n);
    out->tokens = malloc((n ? n : 1) * sizeof(int32_t));
    if (!out->tokens)
        return api_error_set(p->err, 500, NULL, NULL, "out of memory");
    out->n_tokens = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        int64_t id;
        api_path(path, "%s[%zu]", param, i);
        if (api_get_int(p->err, path, json_array_get(v, i), 0, INT32_MAX, &id))
            return -1;
        out->tokens[i] = (int32_t)id;
    }
    return 0;
}

static int alloc_prompts(struct api_parser *p, size_t n)
{
    p->req->prompts = calloc(n, sizeof(struct api_prompt));
    if (!p->req->prompts)
        return api_error_set(p->err, 500, NULL, NULL, "out of memory");
    p->req->n_prompts = (uint32_t)n;
    return 0;
}

int api_parse_prompt(struct api_parser *p, const json_t *v)
{
    static const char *const expected = "a string, an array of strings, an array of token ids or an array of "
                                        "arrays of token ids";
    char path[API_ERROR_PARAM_MAX];
    if (json_is_string(v)) {
        if (alloc_prompts(p, 1))
            return -1;
        p->req->prompts[0].text = json_string_value(v);
        p->req->prompts[0].text_len = json_string_length(v);
        return 0;
    }
    if (p->req->kind == API_KIND_TOKENIZE)
        return api_type_error(p->err, "prompt", "a string", v);
    if (!json_is_array(v))
        return api_type_error(p->err, "prompt", expected, v);
    size_t n = json_array_size(v);
    if (n == 0)
        return api_error_set(p->err, 400, "empty_array", "prompt",
                             "Invalid 'prompt': empty array. Expected an array with minimum length 1, but got an "
                             "empty array instead.");
    const json_t *first = json_array_get(v, 0);
    if (json_is_number(first)) /* one prompt of token ids */
        return alloc_prompts(p, 1) || parse_token_ids(p, "prompt", v, 1, &p->req->prompts[0]) ? -1 : 0;
    if (!json_is_string(first) && !json_is_array(first))
        return api_type_error(p->err, "prompt", expected, v);
    if (n > p->lim->max_prompts)
        return api_error_set(p->err, 400, "array_above_max_length", "prompt",
                             "Invalid 'prompt': array too long. Expected an array with maximum length %u, but got "
                             "an array with length %zu instead.", p->lim->max_prompts, n);
    if (alloc_prompts(p, n))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        api_path(path, "prompt[%zu]", i);
        if (json_is_string(first)) {
            if (!json_is_string(e))
                return api_type_error(p->err, path, "a string (like the first prompt)", e);
            p->req->prompts[i].text = json_string_value(e);
            p->req->prompts[i].text_len = json_string_length(e);
        } else {
            if (!json_is_array(e))
                return api_type_error(p->err, path, "an array of token ids (like the first prompt)", e);
            if (parse_token_ids(p, path, e, 1, &p->req->prompts[i]))
                return -1;
        }
    }
    return 0;
}

int api_parse_detok_tokens(struct api_parser *p, const json_t *v)
{
    if (!json_is_array(v))
        return api_type_error(p->err, "tokens", "an array of token ids", v);
    if (alloc_prompts(p, 1))
        return -1;
    return parse_token_ids(p, "tokens", v, 0, &p->req->prompts[0]);
}
