/* core/log.h — logging and the three levels of errors (DESIGN.md §3.2).
 *
 * 1. Programming and device errors abort with file:line (MEMRA_ASSERT, die()).
 * 2. Untrusted input never aborts: functions return -1 and write the reason into a
 *    caller's buffer with err_set(); the message names the file or field.
 * 3. Setup code unwinds through one `err:` label.
 */
#ifndef MEMRA_CORE_LOG_H
#define MEMRA_CORE_LOG_H

#include <stddef.h>
#include <stdarg.h>

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

void log_set_level(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

/* Print "file:line: message" and abort. For invariants, never for bad input. */
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define MEMRA_ASSERT(cond) \
    do { if (!(cond)) die_at(__FILE__, __LINE__, "assertion failed: %s", #cond); } while (0)

/* Write a formatted reason into err[errlen] (may be NULL/0). Always returns -1,
 * so a parser can `return err_set(err, errlen, "...")`. */
int err_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int err_setv(char *err, size_t errlen, const char *fmt, va_list ap);

#endif
