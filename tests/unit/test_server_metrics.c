/* tests/unit/test_server_metrics.c — server/metrics.h and health.h pieces that
 * need no running server: histogram bucket math (inclusive upper bounds, +Inf,
 * cumulative rendering, sum in seconds), label-value escaping of the text
 * format, the request counter table (its tenant cap), the stall rule and the
 * route labels. The whole /metrics page is checked against prometheus_client's
 * parser by tests/e2e/test_server_metrics.py. */
#include "test.h"

#include "server/health.h"
#include "server/metrics.h"

#include <event2/buffer.h>

static char *drain(struct evbuffer *b)
{
    size_t n = evbuffer_get_length(b);
    char *s = malloc(n + 1);
    evbuffer_remove(b, s, n);
    s[n] = '\0';
    return s;
}

static void test_bucket_bounds(void)
{
    static const double le[] = {0.001, 0.01, 0.1, 1};
    struct metrics_hist h;
    metrics_hist_init(&h, le, 4);
    CHECK_EQ_INT(metrics_hist_bucket(&h, 0), 0);
    CHECK_EQ_INT(metrics_hist_bucket(&h, 1000000), 0);      /* exactly 1 ms: le is inclusive */
    CHECK_EQ_INT(metrics_hist_bucket(&h, 1000001), 1);
    CHECK_EQ_INT(metrics_hist_bucket(&h, 10000000), 1);     /* 10 ms */
    CHECK_EQ_INT(metrics_hist_bucket(&h, 99999999), 2);
    CHECK_EQ_INT(metrics_hist_bucket(&h, 1000000000), 3);   /* 1 s */
    CHECK_EQ_INT(metrics_hist_bucket(&h, 1000000001), 4);   /* +Inf */
    CHECK_EQ_INT(metrics_hist_bucket(&h, UINT64_MAX), 4);
}

static void test_every_kind_has_sorted_bounds(void)
{
    for (int k = 0; k < METRICS_N_HIST; k++) {
        uint32_t n = 0;
        const double *le = metrics_hist_bounds((enum metrics_hist_kind)k, &n);
        CHECK(le != NULL);
        CHECK(n >= 5 && n <= METRICS_HIST_MAX_LE);
        for (uint32_t i = 1; le && i < n; i++)
            CHECK_MSG(le[i] > le[i - 1], "kind %d bound %u", k, i);
    }
}

static void test_render_cumulative(void)
{
    static const double le[] = {0.5, 1, 2.5};
    struct metrics_hist h;
    metrics_hist_init(&h, le, 3);
    metrics_hist_observe(&h, 250000000, 1);   /* 0.25 s → le 0.5 */
    metrics_hist_observe(&h, 500000000, 2);   /* 0.5 s twice → le 0.5 */
    metrics_hist_observe(&h, 2000000000, 1);  /* 2 s → le 2.5 */
    metrics_hist_observe(&h, 9000000000, 1);  /* 9 s → +Inf */
    metrics_hist_observe(&h, 1, 0);           /* k = 0: nothing */
    struct evbuffer *b = evbuffer_new();
    metrics_render_hist(b, "x_seconds", "model=\"m\"", &h);
    char *s = drain(b);
    CHECK_EQ_STR(s, "x_seconds_bucket{model=\"m\",le=\"0.5\"} 3\n"
                    "x_seconds_bucket{model=\"m\",le=\"1\"} 3\n"
                    "x_seconds_bucket{model=\"m\",le=\"2.5\"} 4\n"
                    "x_seconds_bucket{model=\"m\",le=\"+Inf\"} 5\n"
                    "x_seconds_sum{model=\"m\"} 12.250000000\n"
                    "x_seconds_count{model=\"m\"} 5\n");
    free(s);
    /* no other labels: no leading comma */
    metrics_render_hist(b, "y", "", &h);
    s = drain(b);
    CHECK_CONTAINS(s, "y_bucket{le=\"0.5\"} 3\n");
    CHECK_CONTAINS(s, "y_sum{} 12.250000000\n");
    free(s);
    evbuffer_free(b);
}

static void test_escape_label(void)
{
    struct evbuffer *b = evbuffer_new();
    metrics_escape_label(b, "plain-Name_1");
    char *s = drain(b);
    CHECK_EQ_STR(s, "plain-Name_1");
    free(s);
    metrics_escape_label(b, "a\"b\\c\nd");
    s = drain(b);
    CHECK_EQ_STR(s, "a\\\"b\\\\c\\nd");
    free(s);
    metrics_escape_label(b, "\\\\\"\n");  /* only specials */
    s = drain(b);
    CHECK_EQ_STR(s, "\\\\\\\\\\\"\\n");
    free(s);
    metrics_escape_label(b, "");
    CHECK_EQ_INT(evbuffer_get_length(b), 0);
    metrics_escape_label(b, "caf\xc3\xa9 \t");  /* UTF-8 and tabs pass through */
    s = drain(b);
    CHECK_EQ_STR(s, "caf\xc3\xa9 \t");
    free(s);
    evbuffer_free(b);
}

static uint64_t count_of(const struct metrics *m, const char *route, int status, const char *tenant)
{
    for (uint32_t i = 0; i < m->n_req; i++)
        if (!strcmp(m->req[i].route, route) && m->req[i].status == status && !strcmp(m->req[i].tenant, tenant))
            return m->req[i].count;
    return 0;
}

static void test_request_table(void)
{
    struct metrics m;
    metrics_init(&m);
    metrics_count_request(&m, "/v1/completions", 200, "alice");
    metrics_count_request(&m, "/v1/completions", 200, "alice");
    metrics_count_request(&m, "/v1/completions", 429, "alice");
    metrics_count_request(&m, "/health", 200, NULL);
    CHECK_EQ_U64(count_of(&m, "/v1/completions", 200, "alice"), 2);
    CHECK_EQ_U64(count_of(&m, "/v1/completions", 429, "alice"), 1);
    CHECK_EQ_U64(count_of(&m, "/health", 200, "default"), 1);
    CHECK_EQ_INT(m.n_req, 3);
    /* fill the table with distinct tenants: the overflow lands in "other" */
    char name[32];
    for (int i = 0; i < METRICS_MAX_REQ_ENTRIES + 10; i++) {
        snprintf(name, sizeof(name), "t%d", i);
        metrics_count_request(&m, "/v1/completions", 200, name);
    }
    CHECK_EQ_INT(m.n_req, METRICS_MAX_REQ_ENTRIES);
    uint64_t total = 0;
    for (uint32_t i = 0; i < m.n_req; i++)
        total += m.req[i].count;
    /* 3 entries + 508 tenants fill all but the last entry, which "other" takes for the other 14 */
    CHECK_EQ_U64(total, 4 + METRICS_MAX_REQ_ENTRIES + 10);
    CHECK_EQ_U64(count_of(&m, "/v1/completions", 200, "t507"), 1);
    CHECK_EQ_U64(count_of(&m, "/v1/completions", 200, "t508"), 0);
    CHECK_EQ_U64(count_of(&m, "/v1/completions", 200, "other"), 14);
    metrics_free(&m);
    CHECK_EQ_INT(m.n_req, 0);
}

static void test_stall_rule(void)
{
    const uint64_t s = 1000000000ull;
    struct sched_stats st = {.running = 1, .waiting = 0, .n_slots = 4, .progress_ns = 100 * s};
    CHECK(!health_engine_stalled(&st, 100 * s + 5 * s, 10));
    CHECK(!health_engine_stalled(&st, 110 * s, 10));       /* exactly the limit: not yet */
    CHECK(health_engine_stalled(&st, 110 * s + 1, 10));
    CHECK(!health_engine_stalled(&st, 1000 * s, 0));       /* 0: off */
    st.running = 0;
    CHECK(!health_engine_stalled(&st, 1000 * s, 10));      /* idle is not stalled */
    st.waiting = 3;
    CHECK(health_engine_stalled(&st, 1000 * s, 10));       /* work waiting, no step */
    CHECK(!health_engine_stalled(&st, 50 * s, 10));        /* a stamp newer than now */
}

static void test_route_labels(void)
{
    CHECK_EQ_STR(health_route_label("/v1/chat/completions", 20), "/v1/chat/completions");
    CHECK_EQ_STR(health_route_label("/metrics", 8), "/metrics");
    CHECK_EQ_STR(health_route_label("/v1/models/smol", 15), "/v1/models/{id}");
    CHECK_EQ_STR(health_route_label("/v1/models", 10), "/v1/models");
    CHECK_EQ_STR(health_route_label("/other", 6), "other");
    CHECK_EQ_STR(health_route_label("/healthz", 8), "other");
    CHECK_EQ_STR(health_route_label("/livez/", 6), "/livez"); /* the caller strips the slash via len */
}

int main(void)
{
    RUN(test_bucket_bounds);
    RUN(test_every_kind_has_sorted_bounds);
    RUN(test_render_cumulative);
    RUN(test_escape_label);
    RUN(test_request_table);
    RUN(test_stall_rule);
    RUN(test_route_labels);
    return test_summary();
}
