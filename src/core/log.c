/* core/log.c — see log.h. Messages go to stderr, one line each, with a level tag. */
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>

static enum log_level g_level = LOG_LEVEL_INFO;

void log_set_level(enum log_level level) { g_level = level; }

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *tags[] = {"debug", "info", "warn", "error"};
    if (level < g_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memra %s: ", tags[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memra fatal: %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

int err_setv(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    return -1;
}

int err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_setv(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
