/* api/api_error.h — errors in OpenAI's shape.
 *
 * Every client mistake becomes one `struct api_error`: an HTTP status, OpenAI's
 * error type ("invalid_request_error" for every 4xx we produce, "server_error"
 * for a 5xx), the offending parameter as a path ("messages[2].content[0].text",
 * or "" when no single field is to blame), a machine-readable code (OpenAI's
 * spellings where OpenAI has one: "invalid_type", "missing_required_parameter",
 * "unknown_parameter", "integer_above_max_value", "model_not_found", ...; "" for
 * none) and a message for a human. api_error_json() writes the body OpenAI sends:
 *
 *   {"error":{"message":"...","type":"invalid_request_error","param":"temperature","code":"invalid_type"}}
 *
 * with "param" and "code" null when empty. The struct is fixed-size (no
 * allocation) so parsers can fill it on any path.
 */
#ifndef MEMRA_API_API_ERROR_H
#define MEMRA_API_API_ERROR_H

#include <stddef.h>

#define API_ERROR_PARAM_MAX 128
#define API_ERROR_MESSAGE_MAX 512

struct api_error {
    int status;                         /* HTTP status: 400, 404, 405, 413, 500, 503 */
    const char *type;                   /* static string: "invalid_request_error", "server_error" */
    const char *code;                   /* static string, "" for none (→ null) */
    char param[API_ERROR_PARAM_MAX];    /* "" for none (→ null) */
    char message[API_ERROR_MESSAGE_MAX];
};

/* Fill *e (e may be NULL) and return -1, so a parser can `return api_error_set(...)`.
 * status ≥ 500 sets type "server_error", anything else "invalid_request_error".
 * code and param may be NULL. The message is printf-formatted and truncated to fit. */
int api_error_set(struct api_error *e, int status, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The error body as compact JSON, NUL-terminated, malloc'd (caller frees). Bytes of
 * the message or param that are not valid UTF-8 are replaced by U+FFFD. Returns NULL
 * only when memory runs out. */
char *api_error_json(const struct api_error *e);

#endif
