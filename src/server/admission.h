/* server/admission.h — bounded admission of generation requests: per-tenant
 * concurrency caps and queues, a global cap on running requests and a global
 * queue bound, interactive before batch.
 *
 * A generation request (already authenticated and parsed) either starts at
 * once (gen_handle), waits in its lane's FIFO, or is refused:
 *   - its tenant runs max_concurrent requests and has max_queued waiting, or
 *     the global queue holds max_queued requests → 429 with Retry-After and
 *     X-RateLimit-Limit / -Remaining / -Reset;
 *   - it can never run (prompt + max_tokens beyond the context) → 400 before it
 *     waits (a request that starts at once gets the same check in gen_handle).
 * When a request ends (admission_done) the loop starts waiting requests: the
 * oldest interactive one whose tenant is under its cap, else the oldest batch
 * one. So memory held by waiting requests is bounded by the queue bounds times
 * the body limit, and the engines' own FIFOs by max_running requests.
 *
 * A waiting request whose client goes away leaves the queue (evhttp's close
 * callback, or a peek at its socket once a second). The same one-second timer
 * checks the API keyring file for changes (auth_state_poll).
 *
 * Tenants are kept by name for the server's life; their limits follow the
 * keyring (updated at each request). Everything runs on the event-loop thread.
 */
#ifndef MEMRA_SERVER_ADMISSION_H
#define MEMRA_SERVER_ADMISSION_H

#include "api/api_request.h"
#include "server/auth.h"

#include <event2/event.h>
#include <event2/http.h>

struct server;

/* One tenant; gen.c keeps a pointer on each running request (gen_req.tenant),
 * and name is what metrics label requests with. */
struct adm_tenant {
    char name[AUTH_TENANT_MAX];
    enum auth_lane lane;
    uint32_t max_concurrent;    /* 0: no cap of its own */
    uint32_t max_queued;
    uint32_t running, queued;
    uint64_t admitted, rejected; /* totals: started requests, 429s */
    struct adm_tenant *next;
};

struct adm_entry;

struct admission {
    struct server *s;
    struct adm_tenant *tenants;          /* list */
    struct adm_entry *head[2], *tail[2]; /* waiting requests per lane (enum auth_lane), FIFO */
    uint32_t running, queued;
    uint32_t max_running;                /* requests handed to the engines at once */
    uint32_t max_queued;                 /* waiting requests, all tenants */
    struct event *pump;                  /* starts waiting requests (made active by admission_done) */
    struct event *tick;                  /* 1 s: keyring reload, peek at waiting clients */
};

int admission_init(struct admission *a, struct server *s, uint32_t max_running, uint32_t max_queued, char *err,
                   size_t errlen);
/* Drop waiting requests (their api_request; evhttp frees the HTTP requests). */
void admission_free(struct admission *a);

/* The tenant of a key (NULL key: the open server's tenant "anonymous"),
 * created on first use, limits refreshed from the key. NULL: out of memory. */
struct adm_tenant *admission_tenant(struct admission *a, const struct auth_key *key);

/* Start, queue or refuse a parsed generation request; takes r. */
void admission_submit(struct admission *a, struct evhttp_request *req, struct api_request *r, struct adm_tenant *t);
/* A request of t started by admission has ended (gen.c's gen_free). */
void admission_done(struct admission *a, struct adm_tenant *t);

/* Authenticate a request to path[0..plen) (probes — /health, /livez, /readyz,
 * and /metrics unless cfg->metrics_auth — are open). Returns the tenant, or
 * NULL after answering 401 (no or unknown key), 403 (disabled key) or 500. */
struct adm_tenant *admission_authenticate(struct admission *a, struct evhttp_request *req, const char *path,
                                          size_t plen, bool *open_path);

#endif
