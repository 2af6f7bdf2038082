/* api/api_parse.h — the typed field readers api_request*.c share (internal to api/).
 *
 * Each reader takes the parameter's path for the error ("temperature",
 * "messages[2].content") and either stores a value of the right type and range
 * or fills the api_error in OpenAI's style and returns -1:
 *   400 invalid_type        "Invalid type for 'n': expected an integer, but got a string instead."
 *   400 integer_above_max_value "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 500 instead."
 * Integers accept a JSON integer or an integral real; decimals accept both.
 */
#ifndef MEMRA_API_API_PARSE_H
#define MEMRA_API_API_PARSE_H

#include "api/api_request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct api_parser {
    struct api_request *req;
    const struct api_limits *lim;
    struct api_error *err;
};

/* Format a parameter path into out[API_ERROR_PARAM_MAX] (truncating). */
void api_path(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "an object", "an array", "a string", "an integer", "a decimal", "a boolean", "null". */
const char *api_json_type_name(const json_t *v);

int api_type_error(struct api_error *e, const char *param, const char *expected, const json_t *got);
int api_unsupported(struct api_error *e, const char *param, const char *what);
int api_unknown_param(struct api_error *e, const char *param);

int api_get_int(struct api_error *e, const char *param, const json_t *v, int64_t lo, int64_t hi, int64_t *out);
int api_get_real(struct api_error *e, const char *param, const json_t *v, double lo, double hi, bool lo_open,
                 double *out);
int api_get_bool(struct api_error *e, const char *param, const json_t *v, bool *out);
/* A string of min_len..max_len bytes: *out borrows from v. */
int api_get_string(struct api_error *e, const char *param, const json_t *v, size_t min_len, size_t max_len,
                   const char **out, size_t *out_len);

/* Fields of api_request_input.c: "messages", "prompt" (completions or /tokenize)
 * and "tokens" (/detokenize). */
int api_parse_messages(struct api_parser *p, const json_t *v);
int api_parse_prompt(struct api_parser *p, const json_t *v);
int api_parse_detok_tokens(struct api_parser *p, const json_t *v);

#endif
