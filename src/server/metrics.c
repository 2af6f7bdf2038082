/* server/metrics.c — histogram math, the request counter table, and GET
 * /metrics in Prometheus' text format (see metrics.h; every metric is listed
 * in docs/SERVING.md "Metrics").
 *
 * Gauges (running / waiting sequences, KV blocks used / free / cached, engine
 * steps, the pool's lookups, evictions, preemptions and refusals) are read from
 * the scheduler's own atomics at scrape time (sched_get_stats), so the token
 * path pays nothing for them. The prefix-cache hit ratio is cached / prompt
 * tokens since start (0 before the first request).
 */
#include "server/metrics.h"
#include "server/server_internal.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bucket bounds in seconds. TTFT and end-to-end span a CPU run of a long
 * prompt (tens of seconds) down to a GPU's few milliseconds; inter-token
 * latency spans 1 ms (a GPU decode step) to seconds (a CPU under load). */
static const double le_ttft[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const double le_itl[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5};
static const double le_e2e[] = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
static const double le_queue[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60};

#define N_OF(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

const double *metrics_hist_bounds(enum metrics_hist_kind k, uint32_t *n_le)
{
    switch (k) {
    case METRICS_TTFT: *n_le = N_OF(le_ttft); return le_ttft;
    case METRICS_ITL: *n_le = N_OF(le_itl); return le_itl;
    case METRICS_E2E: *n_le = N_OF(le_e2e); return le_e2e;
    case METRICS_QUEUE: *n_le = N_OF(le_queue); return le_queue;
    case METRICS_N_HIST: break;
    }
    *n_le = 0;
    return NULL;
}

uint64_t metrics_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

void metrics_hist_init(struct metrics_hist *h, const double *le, uint32_t n_le)
{
    MEMRA_ASSERT(n_le <= METRICS_HIST_MAX_LE);
    h->le = le;
    h->n_le = n_le;
    for (uint32_t i = 0; i <= METRICS_HIST_MAX_LE; i++)
        atomic_init(&h->counts[i], 0);
    atomic_init(&h->sum_ns, 0);
}

uint32_t metrics_hist_bucket(const struct metrics_hist *h, uint64_t ns)
{
    double v = (double)ns * 1e-9;
    for (uint32_t i = 0; i < h->n_le; i++) /* ≤ 20 bounds: a scan beats a search */
        if (v <= h->le[i])
            return i;
    return h->n_le;
}

void metrics_hist_observe(struct metrics_hist *h, uint64_t ns, uint64_t k)
{
    if (!k)
        return;
    atomic_fetch_add_explicit(&h->counts[metrics_hist_bucket(h, ns)], k, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns * k, memory_order_relaxed);
}

void metrics_model_init(struct metrics_model *m)
{
    atomic_init(&m->prompt_tokens, 0);
    atomic_init(&m->cached_tokens, 0);
    atomic_init(&m->generated_tokens, 0);
    for (int k = 0; k < METRICS_N_HIST; k++) {
        uint32_t n;
        const double *le = metrics_hist_bounds((enum metrics_hist_kind)k, &n);
        metrics_hist_init(&m->hist[k], le, n);
    }
}

void metrics_init(struct metrics *m) { memset(m, 0, sizeof(*m)); }

void metrics_free(struct metrics *m)
{
    free(m->req);
    memset(m, 0, sizeof(*m));
}

void metrics_count_request(struct metrics *m, const char *route, int status, const char *tenant)
{
    if (!tenant)
        tenant = "default";
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < m->n_req; i++) {
            struct metrics_req_entry *e = &m->req[i];
            if (e->status == status && !strcmp(e->route, route) && !strncmp(e->tenant, tenant, sizeof(e->tenant) - 1)) {
                e->count++;
                return;
            }
        }
        /* the last entry is kept for tenant "other" */
        if (m->n_req + 1 < METRICS_MAX_REQ_ENTRIES || (m->n_req < METRICS_MAX_REQ_ENTRIES && pass == 1)) {
            if (m->n_req == m->cap_req) {
                uint32_t cap = m->cap_req ? m->cap_req * 2 : 32;
                struct metrics_req_entry *t = realloc(m->req, cap * sizeof(*t));
                if (!t)
                    return; /* the count is lost, the server goes on */
                m->req = t;
                m->cap_req = cap;
            }
            struct metrics_req_entry *e = &m->req[m->n_req++];
            e->route = route;
            e->status = status;
            snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
            e->count = 1;
            return;
        }
        tenant = "other"; /* table full: fold into one series (lost once "other" has no room either) */
    }
}

void metrics_escape_label(struct evbuffer *out, const char *v)
{
    for (const char *p = v; *p; p++) {
        const char *run = p;
        while (*p && *p != '\\' && *p != '"' && *p != '\n')
            p++;
        if (p > run)
            evbuffer_add(out, run, (size_t)(p - run));
        if (!*p)
            break;
        evbuffer_add(out, *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : "\\n", 2);
    }
}

void metrics_render_hist(struct evbuffer *out, const char *name, const char *labels, const struct metrics_hist *h)
{
    uint64_t cum = 0;
    const char *sep = labels[0] ? "," : "";
    for (uint32_t i = 0; i <= h->n_le; i++) {
        cum += atomic_load_explicit(&((struct metrics_hist *)h)->counts[i], memory_order_relaxed);
        if (i < h->n_le)
            evbuffer_add_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, h->le[i],
                                (unsigned long long)cum);
        else
            evbuffer_add_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)cum);
    }
    uint64_t sum = atomic_load_explicit(&((struct metrics_hist *)h)->sum_ns, memory_order_relaxed);
    evbuffer_add_printf(out, "%s_sum{%s} %.9f\n", name, labels, (double)sum * 1e-9);
    evbuffer_add_printf(out, "%s_count{%s} %llu\n", name, labels, (unsigned long long)cum);
}

static void head(struct evbuffer *out, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* `model="alias"` with the alias escaped, into a fresh evbuffer's bytes. */
static char *model_labels(const char *alias)
{
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return NULL;
    evbuffer_add(b, "model=\"", 7);
    metrics_escape_label(b, alias);
    evbuffer_add(b, "\"", 2); /* with the NUL */
    char *s = malloc(evbuffer_get_length(b));
    if (s)
        evbuffer_remove(b, s, evbuffer_get_length(b));
    evbuffer_free(b);
    return s;
}

static void render_models_u64(struct evbuffer *out, struct server *s, char **labels, const char *name,
                              const char *type, const char *help, uint64_t (*get)(struct served_model *))
{
    head(out, name, type, help);
    for (uint32_t i = 0; i < s->n_models; i++)
        evbuffer_add_printf(out, "%s{%s} %llu\n", name, labels[i], (unsigned long long)get(&s->models[i]));
}

static uint64_t get_prompt(struct served_model *m) { return atomic_load(&m->metrics.prompt_tokens); }
static uint64_t get_cached(struct served_model *m) { return atomic_load(&m->metrics.cached_tokens); }
static uint64_t get_generated(struct served_model *m) { return atomic_load(&m->metrics.generated_tokens); }
static uint64_t get_steps(struct served_model *m)
{
    struct sched_stats st;
    sched_get_stats(m->sched, &st);
    return st.steps;
}
static uint64_t get_running(struct served_model *m)
{
    struct sched_stats st;
    sched_get_stats(m->sched, &st);
    return st.running;
}
static uint64_t get_waiting(struct served_model *m)
{
    struct sched_stats st;
    sched_get_stats(m->sched, &st);
    return st.waiting;
}
#define SCHED_GETTER(fn, field)                                                                                        \
    static uint64_t fn(struct served_model *m)                                                                         \
    {                                                                                                                  \
        struct sched_stats st;                                                                                         \
        sched_get_stats(m->sched, &st);                                                                                \
        return st.field;                                                                                               \
    }
SCHED_GETTER(get_kv_used, kv_used)
SCHED_GETTER(get_kv_free, kv_free)
SCHED_GETTER(get_kv_cached, kv_cached)
SCHED_GETTER(get_kv_evictions, kv_evictions)
SCHED_GETTER(get_prefix_hits, prefix_hit_tokens)
SCHED_GETTER(get_preemptions, preemptions)
SCHED_GETTER(get_refusals, refusals)

void metrics_send(struct server *s, struct evhttp_request *req)
{
    struct evbuffer *out = evbuffer_new();
    char **labels = calloc(s->n_models ? s->n_models : 1, sizeof(*labels));
    bool ok = out && labels;
    for (uint32_t i = 0; ok && i < s->n_models; i++)
        ok = (labels[i] = model_labels(s->models[i].alias)) != NULL;
    if (!ok) {
        for (uint32_t i = 0; labels && i < s->n_models; i++)
            free(labels[i]);
        free(labels);
        if (out)
            evbuffer_free(out);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    head(out, "memra_requests_total", "counter",
         "HTTP responses sent, by route, status and tenant (499: the client closed the connection first)");
    for (uint32_t i = 0; i < s->metrics.n_req; i++) {
        const struct metrics_req_entry *e = &s->metrics.req[i];
        evbuffer_add_printf(out, "memra_requests_total{route=\"");
        metrics_escape_label(out, e->route);
        evbuffer_add_printf(out, "\",status=\"%d\",tenant=\"", e->status);
        metrics_escape_label(out, e->tenant);
        evbuffer_add_printf(out, "\"} %llu\n", (unsigned long long)e->count);
    }
    head(out, "memra_requests_in_flight", "gauge", "HTTP requests received and not yet answered");
    evbuffer_add_printf(out, "memra_requests_in_flight %u\n", s->health.inflight);
    render_models_u64(out, s, labels, "memra_prompt_tokens_total", "counter",
                      "prompt tokens of finished generation requests (as usage.prompt_tokens)", get_prompt);
    render_models_u64(out, s, labels, "memra_cached_tokens_total", "counter",
                      "prompt tokens whose KV was reused from the prefix cache (usage cached_tokens)", get_cached);
    render_models_u64(out, s, labels, "memra_generated_tokens_total", "counter",
                      "generated tokens of finished generation requests (as usage.completion_tokens)",
                      get_generated);
    render_models_u64(out, s, labels, "memra_engine_steps_total", "counter", "engine steps (batches run)",
                      get_steps);
    render_models_u64(out, s, labels, "memra_sequences_running", "gauge",
                      "sequences holding KV blocks (one per choice of a request)", get_running);
    render_models_u64(out, s, labels, "memra_sequences_waiting", "gauge",
                      "sequences waiting for KV blocks (one per choice of a request)", get_waiting);
    render_models_u64(out, s, labels, "memra_kv_blocks_used", "gauge",
                      "KV blocks referenced by running sequences (16 positions each)", get_kv_used);
    render_models_u64(out, s, labels, "memra_kv_blocks_free", "gauge", "KV blocks on the free list", get_kv_free);
    render_models_u64(out, s, labels, "memra_kv_blocks_cached", "gauge",
                      "KV blocks nobody references that hold a cached prefix (evicted LRU when needed)",
                      get_kv_cached);
    render_models_u64(out, s, labels, "memra_kv_evictions_total", "counter", "cached KV blocks evicted for reuse",
                      get_kv_evictions);
    render_models_u64(out, s, labels, "memra_prefix_cache_hit_tokens_total", "counter",
                      "positions found in the prefix cache at admission (re-admissions after a preemption included)",
                      get_prefix_hits);
    render_models_u64(out, s, labels, "memra_preemptions_total", "counter",
                      "running sequences that gave up their KV blocks to be recomputed later (KV full)",
                      get_preemptions);
    render_models_u64(out, s, labels, "memra_kv_refusals_total", "counter",
                      "interactive sequences refused because the KV pool was full (503)", get_refusals);
    head(out, "memra_prefix_cache_hit_ratio", "gauge", "cached / prompt tokens since start (0 before any)");
    for (uint32_t i = 0; i < s->n_models; i++) {
        uint64_t p = get_prompt(&s->models[i]), c = get_cached(&s->models[i]);
        evbuffer_add_printf(out, "memra_prefix_cache_hit_ratio{%s} %.6f\n", labels[i], p ? (double)c / (double)p : 0.0);
    }
    static const struct {
        const char *name, *help;
    } hists[METRICS_N_HIST] = {
        [METRICS_TTFT] = {"memra_time_to_first_token_seconds",
                          "request arrival to a choice's first generated token, seen by the HTTP loop"},
        [METRICS_ITL] = {"memra_inter_token_latency_seconds",
                         "time between consecutive generated tokens of a choice, seen by the HTTP loop"},
        [METRICS_E2E] = {"memra_e2e_request_latency_seconds", "request arrival to its last choice finished"},
        [METRICS_QUEUE] = {"memra_queue_time_seconds", "a choice's wait from submission to its first admission into the KV pool"},
    };
    for (int k = 0; k < METRICS_N_HIST; k++) {
        head(out, hists[k].name, "histogram", hists[k].help);
        for (uint32_t i = 0; i < s->n_models; i++)
            metrics_render_hist(out, hists[k].name, labels[i], &s->models[i].metrics.hist[k]);
    }
    for (uint32_t i = 0; i < s->n_models; i++)
        free(labels[i]);
    free(labels);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}
