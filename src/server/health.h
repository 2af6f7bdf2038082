/* server/health.h — liveness, readiness and graceful drain of memra-server.
 *
 * An engine "makes progress" when its thread finishes steps: the scheduler
 * stamps sched_stats.progress_ns (monotonic) after every step, when it wakes up
 * with work, and when a job arrives at an idle engine. It is stalled when it has
 * work (running or waiting sequences) and no progress for more than stall_s
 * seconds (MEMRA_STALL_S; 0 turns the check off).
 *
 * Drain (the loop side is in health.c): the first SIGTERM/SIGINT stops
 * admission (POST routes answer 503 `server_shutting_down`, /readyz 503) while
 * the listener stays open for probes; once every request in flight has been
 * answered, or after drain_s seconds, the loop exits and server_run returns 0.
 * A second signal exits at once (requests still running are cancelled).
 */
#ifndef MEMRA_SERVER_HEALTH_H
#define MEMRA_SERVER_HEALTH_H

#include "engine/sched.h"

#include <stdbool.h>
#include <stdint.h>

struct event;
struct evhttp_request;
struct server;

/* One routed request in flight (health.c keeps them in a list until the
 * response is written or the client is gone). */
struct health_req {
    struct server *s;
    struct evhttp_request *req;
    const char *route;             /* static label (health_route_label) */
    char tenant[64];               /* a copy of the adm_tenant's name (tenants are freed before evhttp's
                                      last close callbacks), "none" before auth */
    uint64_t arrival_ns;           /* monotonic */
    struct health_req *prev, *next;
};

struct health {
    bool draining;
    uint32_t inflight;             /* requests routed and not yet answered (loop thread) */
    struct health_req *reqs;       /* the in-flight list */
    struct event *drain_timer;
    uint64_t started_ns;
};

/* True when an engine with these stats has work and made no progress for more
 * than stall_s seconds at now_ns (stall_s 0: never). */
bool health_engine_stalled(const struct sched_stats *st, uint64_t now_ns, uint32_t stall_s);

/* The route label of a request path (len bytes, trailing slashes removed):
 * a known route's path, "/v1/models/{id}", or "other". */
const char *health_route_label(const char *path, size_t len);

#endif
