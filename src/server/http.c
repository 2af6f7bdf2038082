/* server/http.c — the evhttp server: start-up and shutdown, limits and
 * timeouts, routing (404 / 405 in OpenAI's error shape), and the small
 * endpoints: /v1/models, /health, /tokenize, /detokenize. The generation
 * endpoints are in gen.c.
 *
 * Start-up: the listener opens first and the models load on a loader thread
 * (models.c), so orchestrators see a live process at once: /health and /livez
 * answer 200, /readyz 503 "loading", and every other known route 503
 * `model_loading` with Retry-After, until the loader reports back (the
 * `loaded` event) and the server is READY. A model that fails to load ends
 * the loop and server_run returns -1 with the reason.
 *
 * Shutdown (after a drain, a drain timeout or a second signal): the listener
 * closes, admission starts nothing more, the engines stop (their jobs end as
 * cancelled and wake their requests), and a few non-blocking loop passes let
 * gen.c free every request still in flight before evhttp, the engines and the
 * tenants are freed — a forced exit frees what it cancelled.
 *
 * Body limit: evhttp itself refuses bodies above twice the configured limit
 * (its own 413, before reading them); bodies between the limit and twice the
 * limit are read and answered by api_request_parse's 413 in OpenAI's JSON
 * shape, which is what a client sending a slightly-too-large body sees.
 * libevent 2.1 gives no hook for the first kind: it answers from inside its
 * connection code with a fixed HTML page (evhttp_send_error), and the hook for
 * it (evhttp_set_errorcb) exists only from libevent 2.2 (docs/SERVING.md).
 */
#include "server/server_internal.h"

#include "core/log.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void server_config_default(struct server_config *c)
{
    memset(c, 0, sizeof(*c));
    c->host = "127.0.0.1";
    c->port = 8080;
    c->n_slots = 16;
    c->batch_tokens = 0; /* by backend: models.c */
    c->prefix_reuse = true;
    c->max_body = 8u << 20;
    c->max_headers = 64u << 10;
    c->timeout_s = 60;
    c->progress = true;
    c->drain_s = 30;
    c->stall_s = 60;
    c->max_queue = 256;
}

int server_parse_models(struct server_config *c, char *spec, char *err, size_t errlen)
{
    c->n_models = 0;
    char *save = NULL;
    for (char *item = strtok_r(spec, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1])
            return err_set(err, errlen, "MEMRA_MODELS: '%s' is not alias=PATH", item);
        if (c->n_models == SERVER_MAX_MODELS)
            return err_set(err, errlen, "MEMRA_MODELS: more than %d models", SERVER_MAX_MODELS);
        *eq = '\0';
        for (uint32_t i = 0; i < c->n_models; i++)
            if (!strcmp(c->models[i].alias, item))
                return err_set(err, errlen, "MEMRA_MODELS: alias '%s' given twice", item);
        c->models[c->n_models].alias = item;
        c->models[c->n_models].path = eq + 1;
        c->n_models++;
    }
    if (c->n_models == 0)
        return err_set(err, errlen, "MEMRA_MODELS: no model given (alias=PATH[,alias2=PATH2])");
    return 0;
}

void server_send_json(struct evhttp_request *req, int status, const char *json)
{
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "application/json");
    evbuffer_add(buf, json, strlen(json));
    evhttp_send_reply(req, status, NULL, buf);
    evbuffer_free(buf);
}

void server_send_error(struct evhttp_request *req, const struct api_error *e)
{
    char *j = api_error_json(e);
    if (!j) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    server_send_json(req, e->status, j);
    free(j);
}

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    case EVHTTP_REQ_TRACE: return "TRACE";
    case EVHTTP_REQ_CONNECT: return "CONNECT";
    case EVHTTP_REQ_PATCH: return "PATCH";
    }
    return "?";
}

static void send_models(struct server *s, struct evhttp_request *req, const char *one)
{
    const char *ids[SERVER_MAX_MODELS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n_models; i++)
        if (!one || !strcmp(one, s->models[i].alias))
            ids[n++] = s->models[i].alias;
    if (one && n == 0) {
        struct api_error e;
        api_error_set(&e, 404, "model_not_found", "model", "The model '%.200s' does not exist.", one);
        server_send_error(req, &e);
        return;
    }
    char *j = api_models_json(ids, n, s->started, "memra");
    if (j && one) { /* a single model object, not a list */
        json_t *v = json_loads(j, 0, NULL);
        free(j);
        j = v ? json_dumps(json_array_get(json_object_get(v, "data"), 0), JSON_COMPACT) : NULL;
        json_decref(v);
    }
    if (!j) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    server_send_json(req, 200, j);
    free(j);
}

static struct served_model *request_model(struct server *s, const struct api_request *r, struct api_error *e)
{
    struct served_model *sm = server_find_model(s, r->model);
    if (!sm)
        api_error_set(e, 404, "model_not_found", "model", "The model '%.200s' does not exist.", r->model);
    return sm;
}

static void send_tokenize(struct server *s, struct evhttp_request *req, struct api_request *r)
{
    struct api_error e;
    struct served_model *sm = request_model(s, r, &e);
    int32_t *ids = NULL;
    uint32_t n = 0;
    if (!sm || server_prompt_tokens(sm, r, 0, &ids, &n, &e)) {
        server_send_error(req, &e);
        return;
    }
    struct api_piece *strs = NULL;
    char *pool = NULL;
    size_t cap = tokenizer_max_piece_len(&sm->eng.tok) + 16;
    if (r->return_token_strs) {
        strs = calloc(n ? n : 1, sizeof(*strs));
        pool = malloc((size_t)(n ? n : 1) * cap);
        if (!strs || !pool) {
            free(strs);
            free(pool);
            strs = NULL;
            pool = NULL;
        } else {
            for (uint32_t i = 0; i < n; i++) {
                strs[i].text = pool + (size_t)i * cap;
                strs[i].len = server_token_piece(sm, ids[i], pool + (size_t)i * cap, cap);
            }
        }
    }
    char *j = api_tokenize_json(ids, n, sm->max_ctx, strs);
    free(ids);
    free(strs);
    free(pool);
    if (!j) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    server_send_json(req, 200, j);
    free(j);
}

static void send_detokenize(struct server *s, struct evhttp_request *req, struct api_request *r)
{
    struct api_error e;
    struct served_model *sm = request_model(s, r, &e);
    if (!sm || api_request_check_vocab(r, tokenizer_n_vocab(&sm->eng.tok), &e)) {
        server_send_error(req, &e);
        return;
    }
    char *text = NULL, err[256];
    size_t len = 0;
    if (tokenizer_decode(&sm->eng.tok, r->prompts[0].tokens, r->prompts[0].n_tokens, false, &text, &len, err,
                         sizeof(err))) {
        api_error_set(&e, 400, "invalid_token_id", "tokens", "%s", err);
        server_send_error(req, &e);
        return;
    }
    char *j = api_detokenize_json(text, len);
    free(text);
    if (!j) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    server_send_json(req, 200, j);
    free(j);
}

static const struct route {
    const char *path;
    enum evhttp_cmd_type method;
    int kind; /* enum api_kind for POST routes with a JSON body, -1 otherwise */
} routes[] = {
    {"/v1/chat/completions", EVHTTP_REQ_POST, API_KIND_CHAT},
    {"/v1/completions", EVHTTP_REQ_POST, API_KIND_COMPLETION},
    {"/tokenize", EVHTTP_REQ_POST, API_KIND_TOKENIZE},
    {"/detokenize", EVHTTP_REQ_POST, API_KIND_DETOKENIZE},
    {"/v1/models", EVHTTP_REQ_GET, -1},
    {"/health", EVHTTP_REQ_GET, -1},
    {"/livez", EVHTTP_REQ_GET, -1},
    {"/readyz", EVHTTP_REQ_GET, -1},
    {"/metrics", EVHTTP_REQ_GET, -1},
};

/* While the models load: answer 503 model_loading (with Retry-After) and
 * return true. */
static bool refuse_loading(struct server *s, struct evhttp_request *req)
{
    if (s->state == SERVER_READY)
        return false;
    struct api_error e;
    if (s->state == SERVER_LOADING)
        api_error_set(&e, 503, "model_loading", NULL, "The server is loading its models; retry in a few seconds.");
    else
        api_error_set(&e, 503, "server_shutting_down", NULL, "The server is shutting down; retry on another "
                                                             "instance.");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", s->state == SERVER_LOADING ? "2" : "5");
    server_send_error(req, &e);
    return true;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct server *s = arg;
    struct api_error e;
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || !*path)
        path = "/";
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/') /* "/v1/models/" is "/v1/models" */
        plen--;

    struct health_req *tracked = server_request_begin(s, req, path, plen); /* in flight until answered */
    if (s->state == SERVER_STOPPING) { /* the loop's last passes after shutdown: nothing new starts */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        refuse_loading(s, req);
        return;
    }
    bool open_path;
    struct adm_tenant *tenant = admission_authenticate(&s->adm, req, path, plen, &open_path);
    if (!tenant)
        return; /* 401 / 403 sent */
    server_request_set_tenant(tracked, tenant->name);

    const struct route *rt = NULL;
    bool path_known = false;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (strlen(routes[i].path) != plen || strncmp(routes[i].path, path, plen))
            continue;
        path_known = true;
        if (routes[i].method == method || (method == EVHTTP_REQ_HEAD && routes[i].method == EVHTTP_REQ_GET))
            rt = &routes[i];
        else
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                              routes[i].method == EVHTTP_REQ_GET ? "GET, HEAD" : "POST");
    }
    /* GET /v1/models/{id} */
    if (!rt && plen > 11 && !strncmp(path, "/v1/models/", 11)) {
        if (method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD) {
            if (refuse_loading(s, req))
                return;
            char *id = evhttp_uridecode(path + 11, 0, NULL);
            if (id)
                id[plen - 11 < strlen(id) ? plen - 11 : strlen(id)] = '\0';
            send_models(s, req, id ? id : "");
            free(id);
            return;
        }
        path_known = true;
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
    }
    if (!rt) {
        if (path_known)
            api_error_set(&e, 405, "method_not_allowed", NULL, "Method %s is not allowed on %.200s.",
                          method_name(method), path);
        else
            api_error_set(&e, 404, "unknown_url", NULL, "Invalid URL (%s %.200s)", method_name(method), path);
        server_send_error(req, &e);
        return;
    }
    bool probe = !strcmp(rt->path, "/health") || !strcmp(rt->path, "/livez") || !strcmp(rt->path, "/readyz");
    if (!probe && refuse_loading(s, req)) /* the models are not loaded yet */
        return;
    if (rt->kind < 0) {
        if (!strcmp(rt->path, "/v1/models"))
            send_models(s, req, NULL);
        else if (!strcmp(rt->path, "/metrics"))
            metrics_send(s, req);
        else
            health_send(s, req, rt->path);
        return;
    }
    if (server_refuse_draining(s, req)) /* POST routes: 503 once SIGTERM started the drain */
        return;

    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    if (!body) {
        api_error_set(&e, 500, NULL, NULL, "out of memory reading the body");
        server_send_error(req, &e);
        return;
    }
    struct api_request r;
    if (api_request_parse(&r, (enum api_kind)rt->kind, body, len, &s->limits, &e)) {
        server_send_error(req, &e);
        return;
    }
    if (rt->kind == API_KIND_TOKENIZE)
        send_tokenize(s, req, &r);
    else if (rt->kind == API_KIND_DETOKENIZE)
        send_detokenize(s, req, &r);
    else {
        admission_submit(&s->adm, req, &r, tenant); /* takes r */
        return;
    }
    api_request_free(&r);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    server_on_signal(arg, (int)sig); /* health.c: drain, or exit on a second signal */
}

/* The loader thread is done (loop thread). */
static void on_loaded(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server *s = arg;
    if (s->load_rc) {
        log_error("%s", s->load_err);
        event_base_loopexit(s->base, NULL);
        return;
    }
    if (s->state != SERVER_LOADING)
        return;
    snprintf(s->fingerprint, sizeof(s->fingerprint), "fp_memra_%s", s->models[0].eng.backend->ops->name);
    s->state = SERVER_READY;
    log_info("ready: %u model%s loaded in %.1f s", s->n_models, s->n_models > 1 ? "s" : "",
             (double)(metrics_now_ns() - s->health.started_ns) * 1e-9);
    if (s->health.draining) /* a signal came while loading: nothing was admitted */
        event_base_loopexit(s->base, NULL);
}

/* After the loop: free every request still in flight (a forced exit or a
 * drain timeout leaves some). The engines stop first — each job ends as
 * cancelled and makes its request's wake event active — then non-blocking
 * loop passes run those wakes, and gen.c frees the requests (sched jobs,
 * buffers, admission slots) while the tenants and evhttp still exist. */
static void server_quiesce(struct server *s, struct evhttp_bound_socket *sock)
{
    s->state = SERVER_STOPPING;
    if (sock)
        evhttp_del_accept_socket(s->http, sock); /* no new connections */
    s->adm.max_running = 0;                      /* admission starts nothing (waiting requests stay queued) */
    for (uint32_t i = 0; i < s->n_models; i++) {
        sched_stop(s->models[i].sched);          /* joins the engine thread; every job ends as cancelled */
        s->models[i].sched = NULL;
    }
    for (int pass = 0; pass < 4 && s->base; pass++) /* wakes, then what their writes complete */
        event_base_loop(s->base, EVLOOP_NONBLOCK);
}

int server_run(const struct server_config *c, char *err, size_t errlen)
{
    struct server s = {.cfg = c, .n_models = c->n_models, .state = SERVER_LOADING};
    struct event *sigint = NULL, *sigterm = NULL;
    struct evhttp_bound_socket *sock = NULL;
    int rc = -1;
    if (c->n_models == 0)
        return err_set(err, errlen, "no models to serve (set MEMRA_MODELS=alias=PATH)");
    if (evthread_use_pthreads())
        return err_set(err, errlen, "libevent: no pthreads support");
    signal(SIGPIPE, SIG_IGN);
    api_limits_default(&s.limits);
    s.limits.max_body = c->max_body;
    s.limits.max_n = c->n_slots * 8 > 128 ? 128 : c->n_slots * 8;
    s.started = (int64_t)time(NULL);
    metrics_init(&s.metrics);
    health_init(&s);
    s.models = calloc(c->n_models, sizeof(*s.models));
    if (!s.models)
        return err_set(err, errlen, "out of memory");
    if (auth_state_init(&s.auth, c->api_key, c->api_keys, err, errlen))
        goto out;
    for (uint32_t i = 0; i < c->n_models; i++) {
        s.models[i].alias = c->models[i].alias;
        s.models[i].path = c->models[i].path;
        metrics_model_init(&s.models[i].metrics);
    }
    snprintf(s.fingerprint, sizeof(s.fingerprint), "fp_memra");

    s.base = event_base_new();
    s.http = s.base ? evhttp_new(s.base) : NULL;
    s.loaded = s.base ? event_new(s.base, -1, 0, on_loaded, &s) : NULL;
    if (!s.http || !s.loaded) {
        err_set(err, errlen, "libevent: cannot create the event loop");
        goto out;
    }
    evhttp_set_max_body_size(s.http, c->max_body > SIZE_MAX / 2 ? c->max_body : 2 * c->max_body);
    evhttp_set_max_headers_size(s.http, c->max_headers);
    evhttp_set_timeout(s.http, (int)c->timeout_s);
    evhttp_set_allowed_methods(s.http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_default_content_type(s.http, "application/json");
    evhttp_set_gencb(s.http, on_request, &s);
    if (admission_init(&s.adm, &s, c->max_running ? c->max_running : c->n_slots * c->n_models, c->max_queue, err,
                       errlen))
        goto out;
    sock = evhttp_bind_socket_with_handle(s.http, c->host, c->port);
    if (!sock) {
        err_set(err, errlen, "cannot listen on %s:%u", c->host, c->port);
        goto out;
    }
    uint16_t port = c->port;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    sigint = evsignal_new(s.base, SIGINT, on_signal, &s);
    sigterm = evsignal_new(s.base, SIGTERM, on_signal, &s);
    if (!sigint || !sigterm || event_add(sigint, NULL) || event_add(sigterm, NULL)) {
        err_set(err, errlen, "libevent: cannot install signal handlers");
        goto out;
    }
    if (pthread_create(&s.loader, NULL, server_load_main, &s)) {
        err_set(err, errlen, "cannot start the model loader thread");
        goto out;
    }
    s.loader_started = true;
    log_info("listening on http://%s:%u (%u model%s loading; /readyz says 503 until they are ready)", c->host,
             port, c->n_models, c->n_models > 1 ? "s" : "");
    if (s.auth.open)
        log_warn("no API keys configured (MEMRA_API_KEY / MEMRA_API_KEYS): the server is open to anyone who can "
                 "reach it");
    else
        log_info("API keys: %u (%s)", s.auth.ring.n, c->api_keys ? c->api_keys : "MEMRA_API_KEY");
    printf("memra-server: listening on http://%s:%u\n", c->host, port);
    fflush(stdout);
    event_base_dispatch(s.base);
    rc = 0;
out:
    if (s.loader_started) { /* a signal while loading waits for the load to end (a second one kills) */
        if (sigint)
            event_del(sigint);
        if (sigterm)
            event_del(sigterm);
        pthread_join(s.loader, NULL);
        if (s.load_rc) {
            err_set(err, errlen, "%s", s.load_err);
            rc = -1;
        }
    }
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    if (s.base && s.http)
        server_quiesce(&s, sock);
    /* engines (stopped above), then the requests' HTTP side and the tenants */
    for (uint32_t i = 0; i < c->n_models; i++)
        served_model_unload(&s.models[i]);
    admission_free(&s.adm); /* waiting requests: evhttp_free frees their HTTP side */
    if (s.http)
        evhttp_free(s.http);
    health_free(&s);
    if (s.loaded)
        event_free(s.loaded);
    if (s.base)
        event_base_free(s.base);
    metrics_free(&s.metrics);
    free(s.models);
    auth_state_free(&s.auth);
    return rc;
}
