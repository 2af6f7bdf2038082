/* server/gen.c — POST /v1/chat/completions and /v1/completions.
 *
 * One HTTP request becomes n × prompts engine jobs (choice index = prompt·n + j).
 * Each job's notify makes the request's `wake` event active on the loop; the
 * wake callback drains every job's new output and either streams it (SSE: one
 * "data: {chunk}\n\n" per choice and wake, "data: [DONE]\n\n" at the end) or
 * collects it for the final JSON. When the client goes away (evhttp's connection
 * close callback, raised when a write fails or the connection drops), every job
 * is cancelled; the engine releases their KV blocks within one step, and the
 * last wake frees the request.
 *
 * Prefix cache and lanes: each job's cache namespace is (model alias, tenant
 * from auth, the request's cache_salt), so KV is shared only within one tenant
 * and salt; the tenant's lane (keyring) is the job's lane. When the KV pool is
 * full and nothing can be preempted, the engine refuses an interactive job
 * (SCHED_FINISH_REFUSED): the request gets 503 with Retry-After. So that a
 * stream can still get that status, a streamed request sends its 200 headers
 * only once every choice has been admitted (or has ended).
 *
 * Heartbeat: evhttp keeps the connection's read timeout running while it writes
 * a response (to notice a client that closes), and resets it on every write; a
 * stream that is silent for longer than the timeout (long prefill, a busy
 * engine) would be cut. So a streamed request sends an SSE comment
 * (": keep-alive", which SSE clients ignore) when nothing was written for half
 * the timeout. A client that stops reading still hits the write timeout.
 *
 * Disconnects: evhttp notices a closed connection only when a write fails, and
 * a non-streamed request writes nothing until it is done. So the same timer
 * (every second, or half the timeout if shorter) peeks at the socket
 * (recv MSG_PEEK, which takes nothing from libevent): an orderly close (0) or a
 * reset cancels the request's jobs at once.
 *
 * Metrics (metrics.h), seen on this loop: TTFT from the request's arrival to a
 * choice's first token; inter-token latency per choice between wakes that
 * brought tokens (k tokens in one wake count k times, at 1/k of the gap each);
 * end-to-end at the last choice; queue time from arrival (admission's queue)
 * to a KV slot (the engine's FIFO, as the engine measured it). Token
 * counters add the request's usage when it is freed.
 *
 * Seeds: with "seed", choice j uses seed + j (distinct, reproducible samples);
 * without, each choice draws a random seed.
 */
#include "server/server_internal.h"

#include "core/log.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <sys/socket.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct gen_choice {
    uint32_t index;
    uint32_t prompt_i;
    struct sched_job *job;
    struct sched_output out;   /* scratch for sched_job_take */
    bool done;
    enum sched_finish finish;
    char error[256];
    uint32_t n_prompt, n_cached, n_generated;
    uint64_t text_offset;      /* completions stream: code points sent so far */
    uint64_t t_last;           /* metrics: when its latest tokens arrived (monotonic ns) */
    bool queue_seen;           /* metrics: queue time observed */
    /* non-streamed: everything so far */
    char *text;
    size_t len, cap;
    struct sample_result *toks;
    uint32_t n_toks, cap_toks;
};

struct gen_req {
    struct server *s;
    struct served_model *sm;
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    struct api_request r;
    char id[64];
    struct api_response_meta meta;
    struct gen_choice *ch;     /* (n_ch) */
    uint32_t n_ch, n_done;
    struct event *wake;
    struct event *beat;        /* heartbeat / disconnect check timer (EV_PERSIST) */
    struct timeval last_write; /* last chunk sent (stream) */
    bool gone;                 /* evhttp closed the connection (the request is detached) */
    bool peer_closed;          /* the peek saw the client close; the request is still attached */
    bool dropped;              /* reported to server_request_dropped */
    bool started;              /* stream: the 200 headers went out */
    uint64_t t_start;          /* arrival (monotonic ns), for TTFT and end-to-end latency */
    uint64_t t_submit;         /* handed to the engine (monotonic ns) */
    struct adm_tenant *tenant; /* who sent it (tenant->name labels metrics); admission_done at the end */
};

static void usage_of(const struct gen_req *g, struct api_usage *u);

static void gen_free(struct gen_req *g)
{
    if (g->sm && g->ch) {
        struct api_usage u;
        usage_of(g, &u);
        atomic_fetch_add(&g->sm->metrics.prompt_tokens, u.prompt_tokens);
        atomic_fetch_add(&g->sm->metrics.cached_tokens, u.cached_tokens);
        atomic_fetch_add(&g->sm->metrics.generated_tokens, u.completion_tokens);
    }
    for (uint32_t i = 0; i < g->n_ch; i++) {
        sched_job_release(g->ch[i].job); /* no notify after this */
        sched_output_free(&g->ch[i].out);
        free(g->ch[i].text);
        free(g->ch[i].toks);
    }
    if (g->wake)
        event_free(g->wake);
    if (g->beat)
        event_free(g->beat);
    free(g->ch);
    api_request_free(&g->r);
    if (g->tenant)
        admission_done(&g->s->adm, g->tenant);
    free(g);
}

static void cancel_all(struct gen_req *g);

/* The client is gone before its answer was written: no longer in flight. */
static void gen_drop(struct gen_req *g)
{
    if (!g->dropped) {
        g->dropped = true;
        server_request_dropped(g->s, g->req);
    }
}

#define GEN_RETRY_AFTER_S "1" /* a refused request's Retry-After: the pool frees as running work ends */

static void wake_notify(void *arg) { event_active((struct event *)arg, EV_READ, 0); }

static void on_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct gen_req *g = arg;
    g->gone = true;
    g->conn = NULL;
    cancel_all(g);
    gen_drop(g);
    log_debug("%s: client disconnected; %u choice(s) cancelled", g->id, g->n_ch - g->n_done);
}

/* Log-prob entries for tokens[0..n): token texts go into *pool (malloc'd). */
static struct api_token_logprob *build_logprobs(const struct served_model *sm, const struct sample_result *t,
                                                uint32_t n, char **pool, struct api_top_logprob **tops)
{
    size_t cap = tokenizer_max_piece_len(&sm->eng.tok) + 16;
    uint32_t max_top = 0; /* pieces per position: the token and its alternatives */
    for (uint32_t i = 0; i < n; i++)
        if (t[i].n_top > 0 && (uint32_t)t[i].n_top > max_top)
            max_top = t[i].n_top > SAMPLE_MAX_LOGPROBS ? SAMPLE_MAX_LOGPROBS : (uint32_t)t[i].n_top;
    *pool = malloc((size_t)(n ? n : 1) * (1 + max_top) * cap);
    *tops = malloc((size_t)(n ? n : 1) * SAMPLE_MAX_LOGPROBS * sizeof(**tops));
    struct api_token_logprob *lp = calloc(n ? n : 1, sizeof(*lp));
    if (!*pool || !*tops || !lp) {
        free(*pool);
        free(*tops);
        free(lp);
        *pool = NULL;
        *tops = NULL;
        return NULL;
    }
    char *p = *pool;
    for (uint32_t i = 0; i < n; i++) {
        lp[i].text = p;
        lp[i].len = server_token_piece(sm, t[i].token, p, cap);
        lp[i].logprob = t[i].logprob;
        p += cap;
        struct api_top_logprob *top = *tops + (size_t)i * SAMPLE_MAX_LOGPROBS;
        for (int32_t k = 0; k < t[i].n_top && k < SAMPLE_MAX_LOGPROBS; k++) {
            top[k].text = p;
            top[k].len = server_token_piece(sm, t[i].top_tokens[k], p, cap);
            top[k].logprob = t[i].top_logprobs[k];
            p += cap;
        }
        lp[i].top = top;
        lp[i].n_top = t[i].n_top <= 0 ? 0 : t[i].n_top > SAMPLE_MAX_LOGPROBS ? SAMPLE_MAX_LOGPROBS : (uint32_t)t[i].n_top;
    }
    return lp;
}

static enum api_finish finish_of(enum sched_finish f)
{
    return f == SCHED_FINISH_LENGTH ? API_FINISH_LENGTH : API_FINISH_STOP;
}

static void usage_of(const struct gen_req *g, struct api_usage *u)
{
    memset(u, 0, sizeof(*u));
    for (uint32_t i = 0; i < g->n_ch; i++) {
        const struct gen_choice *c = &g->ch[i];
        if (c->index % g->r.n == 0) { /* the prompt counts once, not once per choice */
            u->prompt_tokens += c->n_prompt;
            u->cached_tokens += c->n_cached;
        }
        u->completion_tokens += c->n_generated;
    }
}

static void add_sse(struct evbuffer *buf, char *json)
{
    if (!json)
        return;
    evbuffer_add(buf, "data: ", 6);
    evbuffer_add(buf, json, strlen(json));
    evbuffer_add(buf, "\n\n", 2);
    free(json);
}

/* A content chunk (text + logprobs) for choice c from its latest output. */
static void stream_output(struct gen_req *g, struct gen_choice *c, struct evbuffer *buf)
{
    const struct sched_output *o = &c->out;
    if (o->text_len || o->n_tokens) {
        char *pool = NULL;
        struct api_top_logprob *tops = NULL;
        struct api_token_logprob *lp = NULL;
        if (g->meta.logprobs && o->n_tokens)
            lp = build_logprobs(g->sm, o->tokens, o->n_tokens, &pool, &tops);
        struct api_choice ac = {.index = c->index, .text = o->text, .len = o->text_len, .logprobs = lp,
                                .n_logprobs = lp ? o->n_tokens : 0, .text_offset = c->text_offset};
        add_sse(buf, api_chunk_json(&g->meta, &ac));
        c->text_offset += api_utf8_count(o->text, o->text_len);
        free(lp);
        free(tops);
        free(pool);
    }
    if (c->done && c->finish != SCHED_FINISH_ERROR && c->finish != SCHED_FINISH_CANCELLED &&
        c->finish != SCHED_FINISH_REFUSED) {
        struct api_choice fin = {.index = c->index, .finish = finish_of(c->finish)};
        add_sse(buf, api_chunk_json(&g->meta, &fin));
    }
}

static int collect_output(struct gen_choice *c)
{
    const struct sched_output *o = &c->out;
    if (c->len + o->text_len + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        while (cap < c->len + o->text_len + 1)
            cap *= 2;
        char *t = realloc(c->text, cap);
        if (!t)
            return -1;
        c->text = t;
        c->cap = cap;
    }
    if (o->text_len)
        memcpy(c->text + c->len, o->text, o->text_len);
    c->len += o->text_len;
    if (c->n_toks + o->n_tokens > c->cap_toks) {
        uint32_t cap = c->cap_toks ? c->cap_toks : 16;
        while (cap < c->n_toks + o->n_tokens)
            cap *= 2;
        struct sample_result *t = realloc(c->toks, cap * sizeof(*t));
        if (!t)
            return -1;
        c->toks = t;
        c->cap_toks = cap;
    }
    if (o->n_tokens)
        memcpy(c->toks + c->n_toks, o->tokens, o->n_tokens * sizeof(*o->tokens));
    c->n_toks += o->n_tokens;
    return 0;
}

/* The first refused choice (the others were cancelled because of it), else the
 * first failed one, or NULL. */
static const struct gen_choice *failed_choice(const struct gen_req *g)
{
    for (uint32_t i = 0; i < g->n_ch; i++)
        if (g->ch[i].finish == SCHED_FINISH_REFUSED)
            return &g->ch[i];
    for (uint32_t i = 0; i < g->n_ch; i++)
        if (g->ch[i].finish == SCHED_FINISH_ERROR || g->ch[i].finish == SCHED_FINISH_CANCELLED)
            return &g->ch[i];
    return NULL;
}

static void send_final(struct gen_req *g)
{
    struct api_usage u;
    usage_of(g, &u);
    const struct gen_choice *bad = failed_choice(g);
    struct api_error e;
    if (bad && bad->finish == SCHED_FINISH_REFUSED) {
        evhttp_add_header(evhttp_request_get_output_headers(g->req), "Retry-After", GEN_RETRY_AFTER_S);
        api_error_set(&e, 503, "kv_cache_full", NULL, "The server is out of KV cache for now (%s). Retry later.",
                      bad->error);
        server_send_error(g->req, &e);
        return;
    }
    if (bad) {
        api_error_set(&e, bad->finish == SCHED_FINISH_CANCELLED ? 503 : 500, NULL, NULL, "generation failed: %s",
                      bad->error[0] ? bad->error : "cancelled");
        server_send_error(g->req, &e);
        return;
    }
    struct api_choice *ac = calloc(g->n_ch, sizeof(*ac));
    char **pools = calloc(g->n_ch, sizeof(*pools));
    struct api_top_logprob **tops = calloc(g->n_ch, sizeof(*tops));
    struct api_token_logprob **lps = calloc(g->n_ch, sizeof(*lps));
    char *j = NULL;
    if (ac && pools && tops && lps) {
        for (uint32_t i = 0; i < g->n_ch; i++) {
            const struct gen_choice *c = &g->ch[i];
            if (g->meta.logprobs)
                lps[i] = build_logprobs(g->sm, c->toks, c->n_toks, &pools[i], &tops[i]);
            ac[i] = (struct api_choice){.index = c->index, .text = c->text, .len = c->len,
                                        .finish = finish_of(c->finish), .logprobs = lps[i],
                                        .n_logprobs = lps[i] ? c->n_toks : 0};
        }
        j = api_response_json(&g->meta, ac, g->n_ch, &u);
    }
    for (uint32_t i = 0; lps && i < g->n_ch; i++) {
        free(lps[i]);
        free(tops[i]);
        free(pools[i]);
    }
    free(ac);
    free(pools);
    free(tops);
    free(lps);
    if (!j) {
        api_error_set(&e, 500, NULL, NULL, "out of memory building the response");
        server_send_error(g->req, &e);
        return;
    }
    server_send_json(g->req, 200, j);
    free(j);
}

/* Latency metrics of choice c from the output just taken (before its counters move). */
static void gen_observe(struct gen_req *g, struct gen_choice *c, uint64_t now)
{
    struct metrics_model *m = &g->sm->metrics;
    if (c->out.admitted && !c->queue_seen) {
        c->queue_seen = true;
        metrics_hist_observe(&m->hist[METRICS_QUEUE], g->t_submit - g->t_start + c->out.queue_ns, 1);
    }
    uint32_t k = c->out.n_generated > c->n_generated ? c->out.n_generated - c->n_generated : 0;
    if (!k)
        return;
    if (c->n_generated == 0) /* the first token (others in the same wake have no gap we saw) */
        metrics_hist_observe(&m->hist[METRICS_TTFT], now - g->t_start, 1);
    else
        metrics_hist_observe(&m->hist[METRICS_ITL], (now - c->t_last) / k, k);
    c->t_last = now;
}

/* Stream: the 200 headers and the chat role chunks. */
static void start_stream(struct gen_req *g)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(g->req);
    evhttp_add_header(h, "Content-Type", "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_send_reply_start(g->req, 200, "OK");
    g->started = true;
    event_base_gettimeofday_cached(g->s->base, &g->last_write);
    if (g->r.kind == API_KIND_CHAT) {
        struct evbuffer *buf = evbuffer_new();
        for (uint32_t i = 0; buf && i < g->n_ch; i++)
            add_sse(buf, api_chunk_role_json(&g->meta, g->ch[i].index));
        if (buf) {
            evhttp_send_reply_chunk(g->req, buf);
            evbuffer_free(buf);
        }
    }
}

/* Stream not started yet: 1 when every choice is admitted or has ended (start
 * now), 0 when one still waits for KV, -1 when one was refused (answer 503). */
static int stream_readiness(const struct gen_req *g)
{
    int rc = 1;
    for (uint32_t i = 0; i < g->n_ch; i++) {
        bool admitted;
        enum sched_finish f;
        if (g->ch[i].done) {
            if (g->ch[i].finish == SCHED_FINISH_REFUSED)
                return -1;
            continue;
        }
        sched_job_peek(g->ch[i].job, &admitted, &f);
        if (f == SCHED_FINISH_REFUSED)
            return -1;
        if (!admitted && f == SCHED_RUNNING)
            rc = 0;
    }
    return rc;
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gen_req *g = arg;
    bool dead = g->gone || g->peer_closed;
    uint64_t now = metrics_now_ns();
    if (g->r.stream && !g->started && !dead) {
        int ready = stream_readiness(g);
        if (ready == 0)
            return; /* output stays in the jobs until the stream starts */
        if (ready > 0)
            start_stream(g);
        else
            cancel_all(g); /* refused: the other choices end too, then 503 */
    }
    struct evbuffer *buf = g->started && !dead ? evbuffer_new() : NULL;
    for (uint32_t i = 0; i < g->n_ch; i++) {
        struct gen_choice *c = &g->ch[i];
        if (c->done)
            continue;
        sched_job_take(c->job, &c->out);
        gen_observe(g, c, now);
        c->n_prompt = c->out.n_prompt;
        c->n_cached = c->out.n_cached;
        c->n_generated = c->out.n_generated;
        if (c->out.finish != SCHED_RUNNING) {
            c->done = true;
            c->finish = c->out.finish;
            snprintf(c->error, sizeof(c->error), "%s", c->out.error);
            g->n_done++;
        }
        if (dead)
            continue;
        if (buf)
            stream_output(g, c, buf);
        else if (!g->r.stream && collect_output(c))
            log_error("%s: out of memory collecting output", g->id);
    }
    bool all_done = g->n_done == g->n_ch;
    if (all_done && !dead && !failed_choice(g))
        metrics_hist_observe(&g->sm->metrics.hist[METRICS_E2E], now - g->t_start, 1);
    if (!all_done && !buf && g->r.stream)
        return; /* a stream being refused: nothing to collect */
    if (buf && all_done) {
        const struct gen_choice *bad = failed_choice(g);
        if (bad) {
            struct api_error e;
            api_error_set(&e, 500, NULL, NULL, "generation failed: %s", bad->error[0] ? bad->error : "cancelled");
            add_sse(buf, api_error_json(&e));
        } else if (g->meta.include_usage) {
            struct api_usage u;
            usage_of(g, &u);
            add_sse(buf, api_chunk_usage_json(&g->meta, &u));
        }
        evbuffer_add(buf, "data: [DONE]\n\n", 14);
    }
    if (buf) {
        if (evbuffer_get_length(buf)) {
            evhttp_send_reply_chunk(g->req, buf);
            event_base_gettimeofday_cached(g->s->base, &g->last_write);
        }
        evbuffer_free(buf);
    }
    if (!all_done)
        return;
    if (g->conn)
        evhttp_connection_set_closecb(g->conn, NULL, NULL);
    if (g->started || g->gone)
        evhttp_send_reply_end(g->req); /* also frees a request whose connection is gone */
    else
        send_final(g); /* a stream that never started gets its error (503 when refused) as plain JSON */
    gen_free(g);
}

static void cancel_all(struct gen_req *g)
{
    for (uint32_t i = 0; i < g->n_ch; i++)
        if (!g->ch[i].done)
            sched_job_cancel(g->ch[i].job);
}

/* See server_internal.h. */
bool server_peer_gone(struct evhttp_connection *conn)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0)
        return false;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void on_beat(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gen_req *g = arg;
    if (g->gone || g->peer_closed)
        return;
    if (g->conn && server_peer_gone(g->conn)) {
        g->peer_closed = true;
        cancel_all(g);
        gen_drop(g);
        log_debug("%s: client closed the connection; %u choice(s) cancelled", g->id, g->n_ch - g->n_done);
        return;
    }
    if (!g->started)
        return;
    struct timeval now, idle;
    event_base_gettimeofday_cached(g->s->base, &now);
    evutil_timersub(&now, &g->last_write, &idle);
    if ((uint64_t)idle.tv_sec * 1000 + (uint64_t)idle.tv_usec / 1000 >= (uint64_t)g->s->cfg->timeout_s * 500) {
        struct evbuffer *buf = evbuffer_new();
        if (buf) {
            evbuffer_add(buf, ": keep-alive\n\n", 14);
            evhttp_send_reply_chunk(g->req, buf);
            evbuffer_free(buf);
            g->last_write = now;
        }
    }
}

static uint64_t random_seed(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
        x = (uint64_t)(uintptr_t)&x ^ 0x9e3779b97f4a7c15ull;
    return x;
}

void gen_handle(struct server *s, struct evhttp_request *req, struct api_request *r, struct adm_tenant *t)
{
    struct api_error e;
    struct gen_req *g = calloc(1, sizeof(*g));
    if (!g) {
        api_request_free(r);
        api_error_set(&e, 500, NULL, NULL, "out of memory");
        server_send_error(req, &e);
        if (t)
            admission_done(&s->adm, t);
        return;
    }
    g->s = s;
    g->tenant = t;
    g->req = req;
    g->t_start = server_request_arrival(s, req); /* before any wait in admission's queue */
    g->r = *r; /* g owns the request now */
    memset(r, 0, sizeof(*r));
    r = &g->r;
    uint32_t n_prompts = r->kind == API_KIND_CHAT ? 1 : r->n_prompts;
    int32_t **prompts = NULL;
    uint32_t *prompt_len = NULL;

    g->sm = server_find_model(s, r->model);
    if (!g->sm) {
        api_error_set(&e, 404, "model_not_found", "model", "The model '%.200s' does not exist.", r->model);
        goto fail;
    }
    struct served_model *sm = g->sm;
    if (api_request_check_vocab(r, tokenizer_n_vocab(&sm->eng.tok), &e))
        goto fail;
    prompts = calloc(n_prompts, sizeof(*prompts));
    prompt_len = calloc(n_prompts, sizeof(*prompt_len));
    g->n_ch = n_prompts * r->n;
    g->ch = calloc(g->n_ch, sizeof(*g->ch));
    g->wake = event_new(s->base, -1, 0, on_wake, g);
    if (!prompts || !prompt_len || !g->ch || !g->wake) {
        api_error_set(&e, 500, NULL, NULL, "out of memory");
        goto fail;
    }
    const char *pname = r->kind == API_KIND_CHAT ? "messages" : "prompt";
    for (uint32_t i = 0; i < n_prompts; i++) {
        if (server_prompt_tokens(sm, r, i, &prompts[i], &prompt_len[i], &e))
            goto fail;
        uint64_t want = (uint64_t)prompt_len[i] + (r->max_tokens > 0 ? (uint64_t)r->max_tokens : 1);
        if (prompt_len[i] == 0) {
            api_error_set(&e, 400, "invalid_value", pname, "The prompt is empty (it has no tokens).");
            goto fail;
        }
        if (want > sm->max_ctx) {
            api_error_set(&e, 400, "context_length_exceeded", pname,
                          "This model's maximum context length is %u tokens. However, you requested %llu tokens "
                          "(%u in the %s, %lld in the completion). Please reduce the length of the %s or "
                          "completion.", sm->max_ctx, (unsigned long long)want, prompt_len[i], pname,
                          r->max_tokens > 0 ? (long long)r->max_tokens : 1LL, pname);
            goto fail;
        }
    }
    api_make_id(g->id, sizeof(g->id), r->kind);
    g->meta = (struct api_response_meta){.kind = r->kind, .id = g->id, .model = r->model, .created = time(NULL),
                                         .system_fingerprint = s->fingerprint, .logprobs = r->logprobs,
                                         .include_usage = r->include_usage};
    uint64_t base_seed = r->has_seed ? r->sample.seed : 0;
    g->t_submit = metrics_now_ns();
    for (uint32_t i = 0; i < g->n_ch; i++) {
        struct gen_choice *c = &g->ch[i];
        c->index = i;
        c->prompt_i = i / r->n;
        struct sched_params p = {.prompt = prompts[c->prompt_i], .n_prompt = prompt_len[c->prompt_i],
                                 .sample = r->sample, .max_tokens = r->max_tokens > 0 ? (uint32_t)r->max_tokens : 0,
                                 .stop = r->stop, .n_stop = r->n_stop, .notify = wake_notify,
                                 .notify_arg = g->wake, .cache_model = sm->alias,
                                 .cache_tenant = g->tenant ? g->tenant->name : "", .cache_salt = r->cache_salt,
                                 .lane = g->tenant && g->tenant->lane == AUTH_LANE_BATCH ? SCHED_LANE_BATCH
                                                                                       : SCHED_LANE_INTERACTIVE};
        p.sample.seed = r->has_seed ? base_seed + (i % r->n) : random_seed();
        char err[256];
        if (sched_submit(sm->sched, &p, &c->job, err, sizeof(err))) {
            api_error_set(&e, 400, "invalid_value", NULL, "%s", err);
            goto fail;
        }
    }
    for (uint32_t i = 0; i < n_prompts; i++)
        free(prompts[i]);
    free(prompts);
    free(prompt_len);

    g->conn = evhttp_request_get_connection(req);
    if (g->conn)
        evhttp_connection_set_closecb(g->conn, on_close, g);
    /* a stream starts at the first wake that finds every choice admitted (on_wake) */
    /* heartbeat and disconnect check: every second, or half the timeout if shorter */
    uint32_t period_ms = s->cfg->timeout_s * 500 < 1000 ? s->cfg->timeout_s * 500 : 1000;
    struct timeval tv = {.tv_sec = period_ms / 1000, .tv_usec = (period_ms % 1000) * 1000};
    g->beat = event_new(s->base, -1, EV_PERSIST, on_beat, g);
    if (g->beat)
        event_add(g->beat, &tv);
    return;
fail:
    for (uint32_t i = 0; prompts && i < n_prompts; i++)
        free(prompts[i]);
    free(prompts);
    free(prompt_len);
    server_send_error(req, &e);
    gen_free(g); /* releases submitted jobs: they end as cancelled */
}
