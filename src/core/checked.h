/* core/checked.h — overflow-checked size arithmetic for parsers of untrusted input,
 * and the decimal parser of flags and environment variables built on it.
 * Each returns 0 on success and -1 when the result would not fit. */
#ifndef MEMRA_CORE_CHECKED_H
#define MEMRA_CORE_CHECKED_H

#include <stdint.h>

static inline int checked_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

static inline int checked_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}

/* s as a decimal integer in [lo, hi]: one or more digits and nothing else (no
 * sign, space or suffix; no overflow), for command-line flags and environment
 * variables. *out is set only on success. */
static inline int checked_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9' || checked_mul_u64(v, 10, &v) != 0 ||
            checked_add_u64(v, (uint64_t)(*p - '0'), &v) != 0)
            return -1;
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static inline int checked_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t v;
    if (checked_parse_u64(s, lo, hi, &v) != 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

#endif
