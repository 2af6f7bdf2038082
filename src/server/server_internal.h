/* server/server_internal.h — what the server's files share (internal to server/).
 *
 * A served_model is one alias: an engine (engine/engine.h: the model, its
 * tokenizer and chat template, the backend) and the engine thread (sched) over
 * it. A struct server holds the
 * loop, the evhttp instance and the models. http.c routes and answers the small
 * endpoints, gen.c runs /v1/chat/completions and /v1/completions, models.c loads
 * models and turns requests into prompt tokens.
 */
#ifndef MEMRA_SERVER_SERVER_INTERNAL_H
#define MEMRA_SERVER_SERVER_INTERNAL_H

#include "api/api_request.h"
#include "api/api_response.h"
#include "server/admission.h"
#include "server/auth.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/sched.h"
#include "server/health.h"
#include "server/metrics.h"
#include "model/model.h"
#include "server/server.h"
#include "template/template.h"
#include "tokenizer/tokenizer.h"

#include <event2/event.h>
#include <event2/http.h>
#include <pthread.h>

struct served_model {
    const char *alias;
    const char *path;
    struct engine eng;          /* model, tokenizer, chat template (NULL: none), backend */
    bool eng_open;
    struct sched *sched;        /* the engine thread over eng.backend */
    uint32_t max_ctx;           /* positions per sequence */
    struct metrics_model metrics; /* token counters and latency histograms (metrics.h) */
};

/* Life of the server (loop thread): the listener opens first and the models
 * load on another thread (probes answer, API routes 503 model_loading); after
 * the loop exits, STOPPING refuses everything while in-flight requests are
 * freed (http.c). */
enum server_state { SERVER_LOADING, SERVER_READY, SERVER_STOPPING };

struct server {
    const struct server_config *cfg;
    enum server_state state;     /* loop thread only */
    pthread_t loader;            /* loads the models (models.c: server_load_main) */
    bool loader_started;
    struct event *loaded;        /* made active by the loader thread when it ends */
    int load_rc;                 /* written by the loader before `loaded` fires */
    char load_err[1024];
    struct served_model *models; /* (n_models) */
    uint32_t n_models;
    struct event_base *base;
    struct evhttp *http;
    struct api_limits limits;
    int64_t started;             /* unix seconds: "created" of /v1/models */
    char fingerprint[64];        /* system_fingerprint: "fp_memra_<backend>" */
    struct metrics metrics;      /* requests by route, status, tenant (metrics.h) */
    struct health health;        /* in-flight requests, drain state (health.h) */
    struct auth_state auth;      /* API keys (auth.h) */
    struct admission adm;        /* caps and queues of generation requests (admission.h) */
};

/* models.c */
/* The loader thread (arg: the server): sleeps cfg->test_load_delay_ms, loads
 * every model, sets load_rc / load_err, then makes `loaded` active. */
void *server_load_main(void *arg);
int served_model_load(struct served_model *sm, const struct server_config *cfg, char *err, size_t errlen);
void served_model_unload(struct served_model *sm);
struct served_model *server_find_model(struct server *s, const char *alias);
/* The prompt tokens of a chat request (rendered with the model's template) or of
 * completion prompt i. *ids is malloc'd. Fails with a 400 in *e (no template, a
 * template error, a prompt too long) or 500. add_generation_prompt and
 * add_special come from the request for /tokenize. */
int server_prompt_tokens(struct served_model *sm, const struct api_request *r, uint32_t i, int32_t **ids,
                         uint32_t *n, struct api_error *e);
/* The bytes of one token as they read inside a text (no leading-space
 * stripping; maybe part of a UTF-8 character), into buf (cap ≥
 * tokenizer_max_piece_len + 16); returns its length. */
size_t server_token_piece(const struct served_model *sm, int32_t id, char *buf, size_t cap);

/* http.c */
void server_send_json(struct evhttp_request *req, int status, const char *json);
void server_send_error(struct evhttp_request *req, const struct api_error *e);

/* gen.c: POST /v1/chat/completions and /v1/completions, body already parsed;
 * started by admission_submit for tenant t (admission_done when it ends) */
void gen_handle(struct server *s, struct evhttp_request *req, struct api_request *r, struct adm_tenant *t);

/* metrics.c: GET /metrics */
void metrics_send(struct server *s, struct evhttp_request *req);

/* health.c: probes, in-flight requests, drain (health.h) */
void health_init(struct server *s);
void health_free(struct server *s);
void health_send(struct server *s, struct evhttp_request *req, const char *route); /* /health, /livez, /readyz */
/* Count a routed request (path: plen bytes) in flight until its response is
 * written; NULL when out of memory (then it is not counted). */
struct health_req *server_request_begin(struct server *s, struct evhttp_request *req, const char *path,
                                        size_t plen);
/* The tenant that labels its metrics (copied). r may be NULL. */
void server_request_set_tenant(struct health_req *r, const char *tenant);
/* When req arrived (monotonic ns; now if it is not tracked). */
uint64_t server_request_arrival(struct server *s, struct evhttp_request *req);
/* The client left before req's response was written (counted as status 499);
 * call before the request is freed. */
void server_request_dropped(struct server *s, struct evhttp_request *req);
/* While draining: answer 503 server_shutting_down and return true. */
bool server_refuse_draining(struct server *s, struct evhttp_request *req);
/* SIGTERM/SIGINT: the first starts the drain, the second exits at once. */
void server_on_signal(struct server *s, int sig);

/* True when the client has closed its end of conn (orderly or reset): a
 * non-blocking peek, for requests that are waiting and write nothing yet. */
bool server_peer_gone(struct evhttp_connection *conn);

#endif
