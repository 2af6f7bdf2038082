/* tests/unit/test.h — the unit-test harness: checks that count and report.
 *
 * Each tests/unit/test_<lib>_<what>.c is one executable run by ctest. Write
 * `static void test_x(void) { CHECK(...); }` and list them in main() with
 * RUN(test_x); end main with `return test_summary();`. A failed CHECK prints the
 * file:line and the expression (and values for CHECK_EQ_*), and the run goes on
 * so one bad case does not hide the rest.
 *
 * test_shared_path("testdata/vocab/x") resolves a file under ../shared (or
 * $MEMRA_SHARED), which tests read in place and never copy.
 */
#ifndef MEMRA_TEST_H
#define MEMRA_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: the tests' fixed-seed random numbers (each file keeps its own state) */
static inline uint64_t test_rand64(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545F4914F6CDD1DULL;
}

static int test_checks, test_failures, test_cases;
static const char *test_current;

#define CHECK(cond) \
    do { test_checks++; if (!(cond)) { test_failures++; \
        fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", __FILE__, __LINE__, test_current, #cond); } } while (0)

#define CHECK_MSG(cond, ...) \
    do { test_checks++; if (!(cond)) { test_failures++; \
        fprintf(stderr, "%s:%d: [%s] CHECK failed: %s: ", __FILE__, __LINE__, test_current, #cond); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK_EQ_INT(a, b) \
    do { long long _a = (long long)(a), _b = (long long)(b); test_checks++; if (_a != _b) { test_failures++; \
        fprintf(stderr, "%s:%d: [%s] CHECK_EQ_INT failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, \
                test_current, #a, #b, _a, _b); } } while (0)

#define CHECK_EQ_U64(a, b) \
    do { unsigned long long _a = (unsigned long long)(a), _b = (unsigned long long)(b); test_checks++; \
        if (_a != _b) { test_failures++; \
        fprintf(stderr, "%s:%d: [%s] CHECK_EQ_U64 failed: %s == %s (%llu vs %llu)\n", __FILE__, __LINE__, \
                test_current, #a, #b, _a, _b); } } while (0)

#define CHECK_EQ_STR(a, b) \
    do { const char *_a = (a), *_b = (b); test_checks++; \
        if (!_a || !_b || strcmp(_a, _b) != 0) { test_failures++; \
        fprintf(stderr, "%s:%d: [%s] CHECK_EQ_STR failed: %s == %s (\"%s\" vs \"%s\")\n", __FILE__, __LINE__, \
                test_current, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)

#define CHECK_NEAR(a, b, tol) \
    do { double _a = (double)(a), _b = (double)(b); test_checks++; if (!(fabs(_a - _b) <= (tol))) { \
        test_failures++; fprintf(stderr, "%s:%d: [%s] CHECK_NEAR failed: %s ~ %s (%.9g vs %.9g, tol %g)\n", \
                __FILE__, __LINE__, test_current, #a, #b, _a, _b, (double)(tol)); } } while (0)

/* The error message must contain the substring. */
#define CHECK_CONTAINS(hay, needle) \
    do { const char *_h = (hay), *_n = (needle); test_checks++; \
        if (!_h || !strstr(_h, _n)) { test_failures++; \
        fprintf(stderr, "%s:%d: [%s] CHECK_CONTAINS failed: \"%s\" does not contain \"%s\"\n", __FILE__, \
                __LINE__, test_current, _h ? _h : "(null)", _n); } } while (0)

#define RUN(fn) \
    do { test_current = #fn; test_cases++; int _f = test_failures; fn(); \
        fprintf(stderr, "%s %s\n", test_failures == _f ? "ok  " : "FAIL", #fn); } while (0)

static inline int test_summary(void)
{
    fprintf(stderr, "%d cases, %d checks, %d failed\n", test_cases, test_checks, test_failures);
    if (test_checks == 0) {
        fprintf(stderr, "no checks ran: a test that asserts nothing is a failure\n");
        return 1;
    }
    return test_failures ? 1 : 0;
}

static inline const char *test_shared_path(const char *rel)
{
    static char buf[4][4096];
    static int k;
    const char *root = getenv("MEMRA_SHARED");
    char *out = buf[k++ & 3];
    snprintf(out, sizeof(buf[0]), "%s/%s", root && *root ? root : "../shared", rel);
    return out;
}

/* A scratch folder for files a test writes itself (under the build tree). */
static inline const char *test_tmp_path(const char *name)
{
    static char buf[4][4096];
    static int k;
    const char *root = getenv("MEMRA_BUILD");
    char *out = buf[k++ & 3];
    snprintf(out, sizeof(buf[0]), "%s/tmp-%s", root && *root ? root : "/tmp", name);
    return out;
}

#endif
