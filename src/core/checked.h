/* core/checked.h — overflow-checked size arithmetic for parsers of untrusted input.
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

#endif
