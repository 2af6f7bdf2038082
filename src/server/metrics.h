/* server/metrics.h — Prometheus metrics of memra-server (GET /metrics).
 *
 * Two kinds of state:
 *   - per model (struct metrics_model): token counters and latency histograms,
 *     C11 atomics with relaxed order, so any thread may observe without a lock
 *     (today gen.c observes on the event-loop thread; the engine thread may
 *     later); a scrape reads each atomic once, so a scrape is a consistent
 *     picture of each series, not of all of them together;
 *   - requests by (route, status, tenant) (struct metrics): counted only on
 *     the event-loop thread when a response completes, so a plain table.
 * Histograms have fixed buckets (seconds; listed in docs/SERVING.md "Metrics")
 * and keep their sum in nanoseconds. metrics_render writes the text exposition
 * format 0.0.4 (HELP/TYPE lines, cumulative `le` buckets, label values escaped).
 */
#ifndef MEMRA_SERVER_METRICS_H
#define MEMRA_SERVER_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;

#define METRICS_HIST_MAX_LE 20

struct metrics_hist {
    const double *le;        /* (n_le) upper bounds in seconds, ascending; +Inf is implicit */
    uint32_t n_le;
    _Atomic uint64_t counts[METRICS_HIST_MAX_LE + 1]; /* per bucket (not cumulative); [n_le] is +Inf */
    _Atomic uint64_t sum_ns;
};

enum metrics_hist_kind {
    METRICS_TTFT,          /* request arrival → a choice's first generated token */
    METRICS_ITL,           /* between consecutive tokens of a choice */
    METRICS_E2E,           /* request arrival → last choice done */
    METRICS_QUEUE,         /* submitted to the engine → admitted into a KV slot */
    METRICS_N_HIST
};

struct metrics_model {
    _Atomic uint64_t prompt_tokens, cached_tokens, generated_tokens; /* as usage reports them */
    struct metrics_hist hist[METRICS_N_HIST];
};

/* One (route, status, tenant) counter. */
struct metrics_req_entry {
    const char *route;       /* static string (the route table's path, or "other") */
    int status;
    char tenant[64];
    uint64_t count;
};

#define METRICS_MAX_REQ_ENTRIES 512

struct metrics {
    struct metrics_req_entry *req;  /* (n_req) loop thread only */
    uint32_t n_req, cap_req;
};

/* Bucket bounds of a histogram kind (n_le ≤ METRICS_HIST_MAX_LE). */
const double *metrics_hist_bounds(enum metrics_hist_kind k, uint32_t *n_le);
void metrics_hist_init(struct metrics_hist *h, const double *le, uint32_t n_le);
/* The bucket an observation of ns nanoseconds falls in: the first bound with
 * value ≤ bound (Prometheus' `le` is inclusive), n_le for +Inf. */
uint32_t metrics_hist_bucket(const struct metrics_hist *h, uint64_t ns);
/* Record k observations of ns nanoseconds each. */
void metrics_hist_observe(struct metrics_hist *h, uint64_t ns, uint64_t k);

void metrics_model_init(struct metrics_model *m);

void metrics_init(struct metrics *m);
void metrics_free(struct metrics *m);
/* Count one completed response. Tenants beyond the table's capacity are
 * counted under tenant "other". */
void metrics_count_request(struct metrics *m, const char *route, int status, const char *tenant);

/* Append `v` with backslash, double quote and newline escaped as the text
 * format wants inside a label value. */
void metrics_escape_label(struct evbuffer *out, const char *v);
/* A histogram's lines: name_bucket{labels,le="..."} (cumulative), name_sum
 * (seconds), name_count. `labels` is the already-escaped `k="v",...` text. */
void metrics_render_hist(struct evbuffer *out, const char *name, const char *labels, const struct metrics_hist *h);

/* Monotonic clock in nanoseconds. */
uint64_t metrics_now_ns(void);

#endif
