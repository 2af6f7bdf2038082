/* api/api_parse.c — typed field readers with OpenAI-style errors; see api_parse.h. */
#include "api/api_parse.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

void api_path(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, API_ERROR_PARAM_MAX, fmt, ap);
    va_end(ap);
}

const char *api_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

int api_type_error(struct api_error *e, const char *param, const char *expected, const json_t *got)
{
    return api_error_set(e, 400, "invalid_type", param, "Invalid type for '%s': expected %s, but got %s instead.",
                         param, expected, api_json_type_name(got));
}

int api_unsupported(struct api_error *e, const char *param, const char *what)
{
    return api_error_set(e, 400, "unsupported_parameter", param, "'%s' is not supported by this server yet%s%s.",
                         param, what && *what ? ": " : "", what ? what : "");
}

int api_unknown_param(struct api_error *e, const char *param)
{
    return api_error_set(e, 400, "unknown_parameter", param, "Unrecognized request argument supplied: %s", param);
}

int api_get_int(struct api_error *e, const char *param, const json_t *v, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        /* an integral real within int64 (2^63 is not representable as int64) */
        if (!(d == floor(d)) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
            return api_type_error(e, param, "an integer", v);
        x = (int64_t)d;
    } else {
        return api_type_error(e, param, "an integer", v);
    }
    if (x < lo)
        return api_error_set(e, 400, "integer_below_min_value", param,
                             "Invalid '%s': integer below minimum value. Expected a value >= %lld, but got %lld "
                             "instead.", param, (long long)lo, (long long)x);
    if (x > hi)
        return api_error_set(e, 400, "integer_above_max_value", param,
                             "Invalid '%s': integer above maximum value. Expected a value <= %lld, but got %lld "
                             "instead.", param, (long long)hi, (long long)x);
    *out = x;
    return 0;
}

int api_get_real(struct api_error *e, const char *param, const json_t *v, double lo, double hi, bool lo_open,
                 double *out)
{
    if (!json_is_number(v))
        return api_type_error(e, param, "a number", v);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x == lo))
        return api_error_set(e, 400, "decimal_below_min_value", param,
                             "Invalid '%s': decimal below minimum value. Expected a value %s %g, but got %g "
                             "instead.", param, lo_open ? ">" : ">=", lo, x);
    if (x > hi)
        return api_error_set(e, 400, "decimal_above_max_value", param,
                             "Invalid '%s': decimal above maximum value. Expected a value <= %g, but got %g "
                             "instead.", param, hi, x);
    *out = x;
    return 0;
}

int api_get_bool(struct api_error *e, const char *param, const json_t *v, bool *out)
{
    if (!json_is_boolean(v))
        return api_type_error(e, param, "a boolean", v);
    *out = json_is_true(v);
    return 0;
}

int api_get_string(struct api_error *e, const char *param, const json_t *v, size_t min_len, size_t max_len,
                   const char **out, size_t *out_len)
{
    if (!json_is_string(v))
        return api_type_error(e, param, "a string", v);
    size_t n = json_string_length(v);
    if (n < min_len)
        return api_error_set(e, 400, min_len == 1 ? "empty_string" : "string_below_min_length", param,
                             "Invalid '%s': string too short. Expected a string with minimum length %zu, but "
                             "got a string with length %zu instead.", param, min_len, n);
    if (n > max_len)
        return api_error_set(e, 400, "string_above_max_length", param,
                             "Invalid '%s': string too long. Expected a string with maximum length %zu, but got "
                             "a string with length %zu instead.", param, max_len, n);
    *out = json_string_value(v);
    if (out_len)
        *out_len = n;
    return 0;
}
