/* server/health.c — GET /health, /livez, /readyz; the in-flight request count
 * (each routed request is counted from on_request until evhttp reports its
 * response written, or until gen.c reports its client gone); and the drain on
 * SIGTERM/SIGINT (see health.h for the rules).
 *
 * Why count until the response is written and not until gen.c is done: the
 * last bytes of a stream ("data: [DONE]", the closing chunk) sit in the
 * connection's output buffer after gen.c lets go; exiting then would lose them.
 * evhttp calls the request's on_complete callback once they are written.
 * A client that closes first never gets that callback; gen.c reports it with
 * server_request_dropped (as does admission.c for a waiting client that
 * leaves). (A small answer whose connection fails before it is
 * written is the one case left uncounted: the drain then waits out drain_s.)
 */
#include "server/health.h"
#include "server/server_internal.h"

#include "core/log.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const route_labels[] = {
    "/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize", "/v1/models", "/v1/models/{id}",
    "/health", "/livez", "/readyz", "/metrics", "other", NULL,
};

bool health_engine_stalled(const struct sched_stats *st, uint64_t now_ns, uint32_t stall_s)
{
    if (!stall_s || st->running + st->waiting == 0 || now_ns <= st->progress_ns)
        return false;
    return now_ns - st->progress_ns > (uint64_t)stall_s * 1000000000ull;
}

const char *health_route_label(const char *path, size_t len)
{
    for (int i = 0; route_labels[i]; i++)
        if (strlen(route_labels[i]) == len && !strncmp(route_labels[i], path, len) && strcmp(route_labels[i], "other"))
            return route_labels[i];
    if (len > 11 && !strncmp(path, "/v1/models/", 11))
        return "/v1/models/{id}";
    return "other";
}

void health_init(struct server *s)
{
    memset(&s->health, 0, sizeof(s->health));
    s->health.started_ns = metrics_now_ns();
}

void health_free(struct server *s)
{
    if (s->health.drain_timer)
        event_free(s->health.drain_timer);
    s->health.drain_timer = NULL;
    while (s->health.reqs) { /* requests whose connection failed before their answer was written */
        struct health_req *r = s->health.reqs;
        s->health.reqs = r->next;
        free(r);
    }
    s->health.inflight = 0;
}

/* Count r's response with status, take it off the in-flight list, free it. */
static void req_end(struct health_req *r, int status)
{
    struct server *s = r->s;
    metrics_count_request(&s->metrics, r->route, status, r->tenant);
    if (r->prev)
        r->prev->next = r->next;
    else
        s->health.reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r);
    if (s->health.inflight)
        s->health.inflight--;
}

static void drain_check(struct server *s)
{
    if (s->health.draining && s->health.inflight == 0) {
        log_info("drain: every request answered; exiting");
        event_base_loopexit(s->base, NULL);
    }
}

static void on_complete(struct evhttp_request *req, void *arg)
{
    struct health_req *r = arg;
    struct server *s = r->s;
    req_end(r, evhttp_request_get_response_code(req));
    drain_check(s);
}

struct health_req *server_request_begin(struct server *s, struct evhttp_request *req, const char *path, size_t plen)
{
    struct health_req *r = calloc(1, sizeof(*r));
    if (!r) {
        log_error("out of memory tracking a request (not counted in metrics or the drain)");
        return NULL;
    }
    *r = (struct health_req){.s = s, .req = req, .route = health_route_label(path, plen), .tenant = "none",
                             .arrival_ns = metrics_now_ns(), .next = s->health.reqs};
    if (r->next)
        r->next->prev = r;
    s->health.reqs = r;
    s->health.inflight++;
    evhttp_request_set_on_complete_cb(req, on_complete, r);
    return r;
}

void server_request_set_tenant(struct health_req *r, const char *tenant)
{
    if (r && tenant)
        snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
}

uint64_t server_request_arrival(struct server *s, struct evhttp_request *req)
{
    for (const struct health_req *r = s->health.reqs; r; r = r->next)
        if (r->req == req)
            return r->arrival_ns;
    return metrics_now_ns();
}

void server_request_dropped(struct server *s, struct evhttp_request *req)
{
    struct health_req *r = s->health.reqs;
    while (r && r->req != req)
        r = r->next;
    if (!r)
        return; /* already answered, or never tracked */
    evhttp_request_set_on_complete_cb(req, NULL, NULL);
    req_end(r, 499);
    drain_check(s);
}

bool server_refuse_draining(struct server *s, struct evhttp_request *req)
{
    if (!s->health.draining)
        return false;
    struct api_error e;
    api_error_set(&e, 503, "server_shutting_down", NULL, "The server is shutting down; retry on another instance.");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    server_send_error(req, &e);
    return true;
}

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server *s = arg;
    log_warn("drain: %u request(s) still in flight after %u s; exiting (they are cancelled)", s->health.inflight,
             s->cfg->drain_s);
    event_base_loopexit(s->base, NULL);
}

void server_on_signal(struct server *s, int sig)
{
    if (s->health.draining) {
        log_warn("signal %d again: exiting now; %u request(s) in flight are cancelled", sig, s->health.inflight);
        event_base_loopexit(s->base, NULL);
        return;
    }
    s->health.draining = true;
    log_info("signal %d: draining: no new requests; %u in flight get up to %u s (a second signal exits at once)",
             sig, s->health.inflight, s->cfg->drain_s);
    if (s->health.inflight == 0 || s->cfg->drain_s == 0) {
        event_base_loopexit(s->base, NULL);
        return;
    }
    struct timeval tv = {.tv_sec = (time_t)s->cfg->drain_s};
    s->health.drain_timer = evtimer_new(s->base, on_drain_timeout, s);
    if (!s->health.drain_timer || evtimer_add(s->health.drain_timer, &tv)) {
        log_error("drain: cannot start the drain timer; exiting now");
        event_base_loopexit(s->base, NULL);
    }
}

/* The probes before the models are loaded (or after the engines stopped):
 * the process is alive (/health and /livez 200) but not ready (/readyz 503). */
static void health_send_not_ready(struct server *s, struct evhttp_request *req, const char *route)
{
    const char *state = s->state == SERVER_LOADING ? "loading" : "stopping";
    bool ready_probe = !strcmp(route, "/readyz");
    json_t *root = json_pack("{s:s}", "status", ready_probe ? state : "ok");
    if (root && !strcmp(route, "/health")) {
        json_t *models = json_array();
        for (uint32_t i = 0; models && i < s->n_models; i++)
            json_array_append_new(models, json_pack("{s:s,s:s}", "id", s->models[i].alias, "state", state));
        json_object_set_new(root, "state", json_string(state));
        json_object_set_new(root, "ready", json_false());
        json_object_set_new(root, "draining", json_boolean(s->health.draining));
        json_object_set_new(root, "in_flight", json_integer(s->health.inflight));
        json_object_set_new(root, "uptime_s", json_real((double)(metrics_now_ns() - s->health.started_ns) * 1e-9));
        json_object_set_new(root, "models", models ? models : json_array());
    }
    char *j = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!j) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    if (ready_probe)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "2");
    server_send_json(req, ready_probe ? 503 : 200, j);
    free(j);
}

/* route: "/health", "/livez" or "/readyz". */
void health_send(struct server *s, struct evhttp_request *req, const char *route)
{
    if (s->state != SERVER_READY) {
        health_send_not_ready(s, req, route);
        return;
    }
    uint64_t now = metrics_now_ns();
    bool stalled = false;
    json_t *root = json_object(), *models = json_array(), *stalled_ids = json_array();
    for (uint32_t i = 0; i < s->n_models; i++) {
        struct sched_stats st;
        sched_get_stats(s->models[i].sched, &st);
        bool st_stalled = health_engine_stalled(&st, now, s->cfg->stall_s);
        stalled |= st_stalled;
        if (st_stalled)
            json_array_append_new(stalled_ids, json_string(s->models[i].alias));
        double age = now > st.progress_ns ? (double)(now - st.progress_ns) * 1e-9 : 0.0;
        json_array_append_new(models, json_pack("{s:s,s:i,s:i,s:i,s:I,s:I,s:b,s:f}", "id", s->models[i].alias,
                                                "running", (int)st.running, "waiting", (int)st.waiting, "slots",
                                                (int)st.n_slots, "tokens_generated", (json_int_t)st.tokens_generated,
                                                "steps", (json_int_t)st.steps, "stalled", st_stalled,
                                                "last_progress_s", age));
    }
    int status = stalled ? 503 : 200;
    if (!strcmp(route, "/health")) {
        json_object_set_new(root, "status", json_string(stalled ? "stalled" : "ok"));
        json_object_set_new(root, "ready", json_boolean(!stalled && !s->health.draining));
        json_object_set_new(root, "draining", json_boolean(s->health.draining));
        json_object_set_new(root, "in_flight", json_integer(s->health.inflight));
        json_object_set_new(root, "uptime_s", json_real((double)(now - s->health.started_ns) * 1e-9));
        json_object_set_new(root, "models", models);
        models = NULL;
    } else if (!strcmp(route, "/livez")) {
        json_object_set_new(root, "status", json_string(stalled ? "stalled" : "ok"));
    } else { /* /readyz */
        if (s->health.draining)
            status = 503;
        json_object_set_new(root, "status", json_string(s->health.draining ? "draining" : stalled ? "stalled" : "ready"));
    }
    if (stalled) {
        json_object_set_new(root, "stalled_models", stalled_ids);
        stalled_ids = NULL;
    }
    json_decref(models);
    json_decref(stalled_ids);
    char *j = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!j) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    server_send_json(req, status, j);
    free(j);
}
