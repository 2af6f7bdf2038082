/* server/admission.c — per-tenant caps and queues, the global bounds, lanes,
 * 429s, and the authentication of each request; see admission.h and auth.h. */
#include "server/admission.h"

#include "server/server_internal.h"

#include "core/log.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A waiting request. */
struct adm_entry {
    struct adm_entry *prev, *next;
    struct admission *a;
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    struct api_request r;
    struct adm_tenant *t;
    enum auth_lane lane;
};

static void unlink_entry(struct admission *a, struct adm_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        a->head[e->lane] = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        a->tail[e->lane] = e->prev;
    e->prev = e->next = NULL;
    a->queued--;
    e->t->queued--;
    if (e->conn)
        evhttp_connection_set_closecb(e->conn, NULL, NULL);
}

static void drop_entry(struct adm_entry *e)
{
    api_request_free(&e->r);
    free(e);
}

/* evhttp closed a waiting request's connection: the request is detached
 * (evhttp_send_reply_end frees it) unless evhttp itself is being freed. */
static void on_queued_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct adm_entry *e = arg;
    e->conn = NULL;
    unlink_entry(e->a, e);
    log_debug("tenant %s: a waiting client disconnected", e->t->name);
    server_request_dropped(e->a->s, e->req); /* no longer in flight (health.c) */
    if (!evhttp_request_get_connection(e->req))
        evhttp_send_reply_end(e->req);
    drop_entry(e);
}

static bool tenant_has_room(const struct adm_tenant *t) { return !t->max_concurrent || t->running < t->max_concurrent; }

static void start(struct admission *a, struct evhttp_request *req, struct api_request *r, struct adm_tenant *t)
{
    a->running++;
    t->running++;
    t->admitted++;
    gen_handle(a->s, req, r, t); /* takes r; ends with admission_done */
}

static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct admission *a = arg;
    while (a->running < a->max_running) {
        struct adm_entry *e = NULL;
        for (int lane = AUTH_LANE_INTERACTIVE; lane <= AUTH_LANE_BATCH && !e; lane++)
            for (struct adm_entry *x = a->head[lane]; x && !e; x = x->next)
                if (tenant_has_room(x->t))
                    e = x;
        if (!e)
            break;
        unlink_entry(a, e);
        start(a, e->req, &e->r, e->t);
        free(e);
    }
}

void admission_done(struct admission *a, struct adm_tenant *t)
{
    if (a->running)
        a->running--;
    if (t->running)
        t->running--;
    if (a->queued && a->pump)
        event_active(a->pump, EV_READ, 0);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct admission *a = arg;
    auth_state_poll(&a->s->auth);
    for (int lane = AUTH_LANE_INTERACTIVE; lane <= AUTH_LANE_BATCH; lane++) {
        struct adm_entry *next;
        for (struct adm_entry *e = a->head[lane]; e; e = next) {
            next = e->next;
            if (!e->conn || !server_peer_gone(e->conn))
                continue;
            unlink_entry(a, e);
            log_debug("tenant %s: a waiting client closed its connection", e->t->name);
            server_request_dropped(a->s, e->req); /* no longer in flight (health.c) */
            struct api_error err;
            api_error_set(&err, 503, NULL, NULL, "The client closed the connection while waiting.");
            server_send_error(e->req, &err);
            drop_entry(e);
        }
    }
}

int admission_init(struct admission *a, struct server *s, uint32_t max_running, uint32_t max_queued, char *err,
                   size_t errlen)
{
    memset(a, 0, sizeof(*a));
    a->s = s;
    a->max_running = max_running ? max_running : 1;
    a->max_queued = max_queued;
    a->pump = event_new(s->base, -1, 0, on_pump, a);
    a->tick = event_new(s->base, -1, EV_PERSIST, on_tick, a);
    struct timeval one = {.tv_sec = 1};
    if (!a->pump || !a->tick || event_add(a->tick, &one))
        return err_set(err, errlen, "libevent: cannot create the admission events");
    return 0;
}

void admission_free(struct admission *a)
{
    for (int lane = AUTH_LANE_INTERACTIVE; lane <= AUTH_LANE_BATCH; lane++)
        while (a->head[lane]) {
            struct adm_entry *e = a->head[lane];
            unlink_entry(a, e);
            drop_entry(e);
        }
    if (a->pump)
        event_free(a->pump);
    if (a->tick)
        event_free(a->tick);
    while (a->tenants) {
        struct adm_tenant *t = a->tenants;
        a->tenants = t->next;
        free(t);
    }
    memset(a, 0, sizeof(*a));
}

struct adm_tenant *admission_tenant(struct admission *a, const struct auth_key *key)
{
    const char *name = key ? key->tenant : "anonymous";
    struct adm_tenant *t = a->tenants;
    while (t && strcmp(t->name, name))
        t = t->next;
    if (!t) {
        t = calloc(1, sizeof(*t));
        if (!t)
            return NULL;
        snprintf(t->name, sizeof(t->name), "%s", name);
        t->next = a->tenants;
        a->tenants = t;
    }
    t->lane = key ? key->lane : AUTH_LANE_INTERACTIVE;
    t->max_concurrent = key ? key->max_concurrent : 0;
    t->max_queued = key ? key->max_queued : a->max_queued;
    return t;
}

static void send_429(struct admission *a, struct evhttp_request *req, struct adm_tenant *t, const char *why)
{
    t->rejected++;
    uint32_t limit = t->max_concurrent ? t->max_concurrent : a->max_running;
    uint32_t used = t->max_concurrent ? t->running : a->running;
    char lim[16], rem[16];
    snprintf(lim, sizeof(lim), "%u", limit);
    snprintf(rem, sizeof(rem), "%u", used < limit ? limit - used : 0);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Retry-After", "1");
    evhttp_add_header(h, "X-RateLimit-Limit", lim);
    evhttp_add_header(h, "X-RateLimit-Remaining", rem);
    evhttp_add_header(h, "X-RateLimit-Reset", "1");
    struct api_error e;
    api_error_set(&e, 429, "rate_limit_exceeded", NULL, "Rate limit reached for tenant '%s': %s. Retry later.",
                  t->name, why);
    e.type = "requests";
    server_send_error(req, &e);
}

/* 0 when every prompt of r fits the model's context with max_tokens, else -1
 * with the 400 (or 404) in *e. Without tokenize, only what needs no
 * tokenizing: the model, token ids, and max_tokens alone. */
static int check_fits(struct server *s, const struct api_request *r, bool tokenize, struct api_error *e)
{
    struct served_model *sm = server_find_model(s, r->model);
    if (!sm)
        return api_error_set(e, 404, "model_not_found", "model", "The model '%.200s' does not exist.", r->model);
    if (api_request_check_vocab(r, tokenizer_n_vocab(&sm->eng.tok), e))
        return -1;
    uint64_t out = r->max_tokens > 0 ? (uint64_t)r->max_tokens : 1;
    const char *pname = r->kind == API_KIND_CHAT ? "messages" : "prompt";
    if (out >= sm->max_ctx) /* no prompt of ≥ 1 token fits */
        return api_error_set(e, 400, "context_length_exceeded", pname,
                             "This model's maximum context length is %u tokens. However, you requested %llu "
                             "tokens in the completion alone. Please reduce the completion.", sm->max_ctx,
                             (unsigned long long)out);
    uint32_t n_prompts = r->kind == API_KIND_CHAT ? 1 : r->n_prompts;
    for (uint32_t i = 0; tokenize && i < n_prompts; i++) {
        int32_t *ids = NULL;
        uint32_t n = 0;
        if (server_prompt_tokens(sm, r, i, &ids, &n, e))
            return -1;
        free(ids);
        if ((uint64_t)n + out > sm->max_ctx)
            return api_error_set(e, 400, "context_length_exceeded", pname,
                                 "This model's maximum context length is %u tokens. However, you requested %llu "
                                 "tokens (%u in the %s, %llu in the completion). Please reduce the length of the "
                                 "%s or completion.", sm->max_ctx, (unsigned long long)(n + out), n, pname,
                                 (unsigned long long)out, pname);
    }
    return 0;
}

void admission_submit(struct admission *a, struct evhttp_request *req, struct api_request *r, struct adm_tenant *t)
{
    struct api_error e;
    /* out of turn: something waits ahead in this lane or a higher one */
    bool ahead = a->head[AUTH_LANE_INTERACTIVE] || (t->lane == AUTH_LANE_BATCH && a->head[AUTH_LANE_BATCH]);
    if (a->running < a->max_running && tenant_has_room(t) && !ahead) {
        start(a, req, r, t);
        return;
    }
    if (check_fits(a->s, r, false, &e)) { /* never fits: 400 before any 429 */
        api_request_free(r);
        server_send_error(req, &e);
        return;
    }
    if (t->queued >= t->max_queued || a->queued >= a->max_queued) {
        char why[128];
        if (!tenant_has_room(t))
            snprintf(why, sizeof(why), "%u concurrent requests running and %u waiting", t->running, t->queued);
        else
            snprintf(why, sizeof(why), "the server's queue is full (%u waiting)", a->queued);
        api_request_free(r);
        send_429(a, req, t, why);
        return;
    }
    if (check_fits(a->s, r, true, &e)) {
        api_request_free(r);
        server_send_error(req, &e);
        return;
    }
    struct adm_entry *q = calloc(1, sizeof(*q));
    if (!q) {
        api_request_free(r);
        api_error_set(&e, 500, NULL, NULL, "out of memory");
        server_send_error(req, &e);
        return;
    }
    q->a = a;
    q->req = req;
    q->r = *r;
    memset(r, 0, sizeof(*r));
    q->t = t;
    q->lane = t->lane;
    q->prev = a->tail[q->lane];
    if (q->prev)
        q->prev->next = q;
    else
        a->head[q->lane] = q;
    a->tail[q->lane] = q;
    a->queued++;
    t->queued++;
    log_debug("tenant %s: request queued (%u of the tenant's, %u in all waiting)", t->name, t->queued, a->queued);
    q->conn = evhttp_request_get_connection(req);
    if (q->conn)
        evhttp_connection_set_closecb(q->conn, on_queued_close, q);
    event_active(a->pump, EV_READ, 0); /* a lane that could run now does */
}

static const char *bearer(struct evhttp_request *req, size_t *len)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!h)
        return NULL;
    while (*h == ' ')
        h++;
    if (strncasecmp(h, "Bearer ", 7))
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    *len = n;
    return h;
}

struct adm_tenant *admission_authenticate(struct admission *a, struct evhttp_request *req, const char *path,
                                          size_t plen, bool *open_path)
{
    static const char *open[] = {"/health", "/livez", "/readyz", "/metrics"};
    const struct server *s = a->s;
    *open_path = false;
    for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++)
        if (strlen(open[i]) == plen && !strncmp(open[i], path, plen) &&
            !(i == 3 && s->cfg->metrics_auth && !s->auth.open))
            *open_path = true;
    struct api_error e;
    const struct auth_key *k = NULL;
    if (!s->auth.open && !*open_path) {
        size_t len = 0;
        const char *key = bearer(req, &len);
        if (!key || !len) {
            api_error_set(&e, 401, NULL, NULL, "You didn't provide an API key. You need to provide your API key in "
                                               "an Authorization header using Bearer auth (i.e. Authorization: "
                                               "Bearer YOUR_KEY).");
            server_send_error(req, &e);
            return NULL;
        }
        k = auth_keyring_find(&s->auth.ring, key, len);
        if (!k) {
            api_error_set(&e, 401, "invalid_api_key", NULL, "Incorrect API key provided.");
            server_send_error(req, &e);
            return NULL;
        }
        if (!k->enabled) {
            api_error_set(&e, 403, "api_key_disabled", NULL, "This API key (tenant '%s') is disabled.", k->tenant);
            e.type = "permission_error";
            server_send_error(req, &e);
            return NULL;
        }
    }
    struct adm_tenant *t = admission_tenant(a, k);
    if (!t) {
        api_error_set(&e, 500, NULL, NULL, "out of memory");
        server_send_error(req, &e);
    }
    return t;
}
