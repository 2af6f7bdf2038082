/* server/server.h — memra-server: the OpenAI-compatible HTTP server.
 *
 * server_run() loads every model of the config (each gets its own backend and
 * engine thread, engine/sched.h), binds the address and serves HTTP/1.1 with
 * libevent's evhttp on the calling thread until SIGINT/SIGTERM:
 *   POST /v1/chat/completions, POST /v1/completions   (streamed with SSE or not)
 *   GET  /v1/models, GET /v1/models/{id}
 *   POST /tokenize, POST /detokenize                   (vLLM's bodies)
 *   GET  /health, /livez, /readyz                      (health.h: probes, drain)
 *   GET  /metrics                                      (Prometheus text, metrics.h)
 * Request JSON is parsed and validated by api/ (api_request.h); errors use
 * OpenAI's error shape. See docs/SERVING.md for the behaviour and
 * docs/FLAGS.md for the settings.
 *
 * Threads: the evhttp event loop runs on the caller's thread and does all HTTP
 * work, JSON, chat templates and tokenization; each model's engine thread only
 * computes. Engine output reaches the loop through a per-request libevent event
 * made active by the engine thread (libevent's pthreads locking is enabled).
 */
#ifndef MEMRA_SERVER_SERVER_H
#define MEMRA_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"

#define SERVER_MAX_MODELS 16

struct server_model_spec {
    const char *alias;   /* the "model" name clients use */
    const char *path;    /* GGUF file, safetensors file or Hugging Face folder */
};

struct server_config {
    struct server_model_spec models[SERVER_MAX_MODELS];
    uint32_t n_models;
    const char *host;            /* bind address, "127.0.0.1" */
    uint16_t port;               /* 8080; 0 picks a free port (printed at start) */
    const char *backend;         /* "cpu", "cuda"; NULL: backend_default_name() */
    uint32_t n_slots;            /* concurrent sequences per model (KV slots) */
    uint32_t ctx;                /* positions per sequence; 0: min(model's, 4096) */
    uint32_t kv_blocks;          /* KV pool blocks per model; 0: the backend's default (backend.h) */
    enum backend_kv_type kv_type; /* the KV cache's element type (BACKEND_KV_DEFAULT: backend_open's, bf16) */
    enum backend_act_type act_type; /* matmul inputs (BACKEND_ACT_DEFAULT: backend_open's, f32) */
    uint32_t batch_tokens;       /* token budget per engine step */
    uint32_t threads;            /* CPU backend worker threads; 0: all cores */
    bool prefix_reuse;           /* reuse KV prefixes across requests */
    size_t max_body;             /* request body bytes (413 above) */
    size_t max_headers;          /* request header bytes */
    uint32_t timeout_s;          /* HTTP read/write timeout for slow clients */
    bool progress;               /* a progress bar while weights load (on a terminal) */
    uint32_t drain_s;            /* seconds in-flight requests get after SIGTERM (30) */
    uint32_t stall_s;            /* an engine with work and no step for longer is stalled (60; 0: off) */
    /* API keys and admission (auth.h, admission.h) */
    const char *api_key;         /* MEMRA_API_KEY: the one key; NULL: none */
    const char *api_keys;        /* MEMRA_API_KEYS: keyring file; NULL: none */
    bool metrics_auth;           /* /metrics needs a key too (when keys are configured) */
    uint32_t max_running;        /* generation requests handed to the engines at once; 0: slots × models */
    uint32_t max_queue;          /* generation requests waiting, all tenants (256) */
    uint32_t test_load_delay_ms; /* TEST ONLY: the loader sleeps this long before loading (0) */
};

/* Defaults: 127.0.0.1:8080, 16 slots, ctx 0, 512 tokens per step, prefix reuse on,
 * 8 MiB bodies, 64 KiB headers, 60 s timeout, progress on, no API keys, queue 256.
 * No models. */
void server_config_default(struct server_config *c);

/* Parse "alias=PATH[,alias2=PATH2]" into c->models (borrowing from spec, which
 * is modified in place). 0 or -1 with the reason in err. */
int server_parse_models(struct server_config *c, char *spec, char *err, size_t errlen);

/* Open the listener, load the models on another thread (meanwhile probes
 * answer and /readyz and the API routes say 503 "loading"), serve until
 * SIGINT/SIGTERM, unload. Returns 0 after a clean shutdown, -1 with the reason
 * in err when start-up (the listener or a model) fails. */
int server_run(const struct server_config *c, char *err, size_t errlen);

#endif
