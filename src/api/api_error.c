/* api/api_error.c — OpenAI-shaped errors; see api_error.h. */
#include "api/api_error.h"

#include "api/api_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int api_error_set(struct api_error *e, int status, const char *code, const char *param, const char *fmt, ...)
{
    if (!e)
        return -1;
    e->status = status;
    e->type = status >= 500 ? "server_error" : "invalid_request_error";
    e->code = code ? code : "";
    snprintf(e->param, sizeof(e->param), "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    return -1;
}

char *api_error_json(const struct api_error *e)
{
    json_t *inner = json_object(), *root = json_object();
    char *out = NULL;
    if (!inner || !root)
        goto done;
    json_t *param = e->param[0] ? api_json_string_bytes(e->param, strlen(e->param)) : json_null();
    json_t *code = e->code && e->code[0] ? json_string(e->code) : json_null();
    if (json_object_set_new(inner, "message", api_json_string_bytes(e->message, strlen(e->message))) ||
        json_object_set_new(inner, "type", json_string(e->type ? e->type : "invalid_request_error")) ||
        json_object_set_new(inner, "param", param) || json_object_set_new(inner, "code", code))
        goto done;
    if (json_object_set(root, "error", inner))
        goto done;
    out = api_json_dump(root);
done:
    json_decref(inner);
    json_decref(root);
    return out;
}
