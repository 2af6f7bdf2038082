/* test_engine_sched.c — the continuous-batching engine (engine/sched.c) on the
 * CPU backend with the default model (models/, fetched by scripts/fetch-model.sh):
 * greedy text does not depend on what else is batched or how prefill is chunked
 * (4 prompts at once with an 8-token step budget vs each alone with 512),
 * max_tokens and finish reasons, stop strings, cancellation frees the KV
 * within a step, prefix reuse reports cached tokens (full 16-position blocks)
 * and changes nothing, bad submissions are refused; and the paged KV pool under
 * pressure: the prefix cache is per (model, tenant, salt) namespace, a job
 * that runs out of blocks preempts the newest one (recomputed later, same
 * greedy text as alone), a new interactive job preempts batch work and is
 * refused when only interactive work runs, while a batch job waits. */
#include "engine/sched.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define MODEL_PATH "models/SmolLM2-135M-Instruct.Q4_1.gguf"

static struct model g_model;
static struct tokenizer g_tok;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;

static void notify(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_mu);
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

struct run {
    struct sched_job *job;
    struct sched_output take, all; /* all: accumulated text, last totals */
    char text[4096];
    size_t len;
};

/* Drain a job's output into r; true once it finished. */
static bool drain(struct run *r)
{
    sched_job_take(r->job, &r->take);
    if (r->take.text_len && r->len + r->take.text_len < sizeof(r->text)) {
        memcpy(r->text + r->len, r->take.text, r->take.text_len);
        r->len += r->take.text_len;
        r->text[r->len] = '\0';
    }
    r->all.n_prompt = r->take.n_prompt;
    r->all.n_cached = r->take.n_cached;
    r->all.n_generated = r->take.n_generated;
    r->all.finish = r->take.finish;
    return r->take.finish != SCHED_RUNNING;
}

static void wait_all(struct run *runs, int n)
{
    for (;;) {
        bool done = true;
        for (int i = 0; i < n; i++)
            if (runs[i].all.finish == SCHED_RUNNING && !drain(&runs[i]))
                done = false;
        if (done)
            return;
        pthread_mutex_lock(&g_mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&g_cv, &g_mu, &ts);
        pthread_mutex_unlock(&g_mu);
    }
}

static struct sched *start(struct backend **b, uint32_t slots, uint32_t budget, bool reuse)
{
    char err[256];
    struct backend_config bc = {.max_seqs = slots, .max_ctx = 256, .max_batch_tokens = 512, .n_threads = 0};
    if (backend_open(b, "cpu", &g_model, &bc, err, sizeof(err))) {
        fprintf(stderr, "backend: %s\n", err);
        return NULL;
    }
    struct sched_config sc = {.max_batch_tokens = budget, .prefix_reuse = reuse};
    struct sched *s = NULL;
    if (sched_start(&s, *b, &g_tok, &sc, err, sizeof(err)))
        fprintf(stderr, "sched: %s\n", err);
    return s;
}

static void sched_close(struct sched *s, struct backend *b)
{
    sched_stop(s);
    backend_close(b);
}

static int32_t *encode(const char *text, uint32_t *n)
{
    int32_t *ids = NULL;
    size_t count = 0;
    char err[128];
    if (tokenizer_encode_alloc(&g_tok, text, strlen(text), true, true, &ids, &count, err, sizeof(err)))
        return NULL;
    *n = (uint32_t)count;
    return ids;
}

/* greedy params with the end-of-generation tokens banned, so jobs run to max_tokens */
static struct sample_bias g_ban[SAMPLE_MAX_STOP_TOKENS];
static uint32_t g_n_ban;

static struct sched_params greedy(const int32_t *ids, uint32_t n, uint32_t max_tokens)
{
    struct sched_params p = {.prompt = ids, .n_prompt = n, .max_tokens = max_tokens, .notify = notify};
    sample_params_default(&p.sample);
    p.sample.temperature = 0;
    p.sample.logit_bias = g_ban;
    p.sample.n_logit_bias = g_n_ban;
    return p;
}

static const char *prompts[4] = {
    "The capital of France is",
    "Here is a list of colors: red, green,",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea, there lived",
};

/* ---- the paged KV pool under pressure ---- */

static struct sched *start_pool(struct backend **b, uint32_t seqs, uint32_t kv_blocks)
{
    char err[256];
    struct backend_config bc = {.max_seqs = seqs, .max_ctx = 256, .kv_blocks = kv_blocks, .max_batch_tokens = 512,
                                .n_threads = 0};
    if (backend_open(b, "cpu", &g_model, &bc, err, sizeof(err))) {
        fprintf(stderr, "backend: %s\n", err);
        return NULL;
    }
    struct sched_config sc = {.max_batch_tokens = 64, .prefix_reuse = true};
    struct sched *s = NULL;
    if (sched_start(&s, *b, &g_tok, &sc, err, sizeof(err)))
        fprintf(stderr, "sched: %s\n", err);
    return s;
}

/* A prompt of at least n tokens: prompts[i] repeated. */
static int32_t *encode_long(int i, uint32_t min_tokens, uint32_t *n)
{
    char text[4096] = "";
    size_t len = 0;
    int32_t *ids = NULL;
    for (;;) {
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %d ", prompts[i], (int)len);
        free(ids);
        ids = encode(text, n);
        if (!ids || *n >= min_tokens || len > sizeof(text) - 200)
            return ids;
    }
}

/* A forward that records the prefill spans the scheduler makes (spans of
 * more than one token, or without logits: a decode row has one token and its
 * logits), then runs the real one. The scheduler cuts a prompt only at
 * multiples of its grain (max_batch_tokens − max_seqs), whatever else the
 * step holds: checked on every span. Read after sched_stop (the engine thread
 * has been joined). */
static const struct backend_ops *g_real_ops;
static struct backend_ops g_rec_ops;
static uint32_t g_grain, g_spans, g_cut_spans, g_bad_spans;

static int rec_forward(struct backend *b, const struct backend_batch *batch, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *q = &batch->seqs[i];
        if (q->n_tokens < 2 && q->n_logits)
            continue;
        g_spans++;
        g_cut_spans += q->n_logits == 0;
        if (q->pos % g_grain || (!q->n_logits && (q->pos + q->n_tokens) % g_grain))
            g_bad_spans++;
    }
    return g_real_ops->forward(b, batch, err, errlen);
}

static void record_spans(struct backend *b, uint32_t grain)
{
    g_real_ops = b->ops;
    g_rec_ops = *b->ops;
    g_rec_ops.forward = rec_forward;
    b->ops = &g_rec_ops;
    g_grain = grain;
    g_spans = g_cut_spans = g_bad_spans = 0;
}

static void test_batching_and_chunking_do_not_change_greedy_text(void)
{
    char alone[4][4096];
    struct backend *b;
    struct sched *s = start(&b, 4, 512, false);
    CHECK(s != NULL);
    if (!s)
        return;
    for (int i = 0; i < 4; i++) {
        uint32_t n;
        int32_t *ids = encode(prompts[i], &n);
        struct run r = {0};
        struct sched_params p = greedy(ids, n, 12);
        char err[256];
        CHECK_EQ_INT(sched_submit(s, &p, &r.job, err, sizeof(err)), 0);
        free(ids);
        wait_all(&r, 1);
        CHECK_EQ_INT(r.all.finish, SCHED_FINISH_LENGTH);
        CHECK_EQ_INT(r.all.n_generated, 12);
        CHECK_EQ_INT(r.all.n_prompt, n);
        CHECK(r.len > 0);
        snprintf(alone[i], sizeof(alone[i]), "%s", r.text);
        sched_job_release(r.job);
        sched_output_free(&r.take);
    }
    sched_close(s, b);

    /* all four at once, 8 tokens per step: prompts prefill in chunks of 4
     * positions (8 − 4 slots) while others decode */
    s = start(&b, 4, 8, false);
    CHECK(s != NULL);
    if (!s)
        return;
    record_spans(b, 4);
    struct run runs[4] = {0};
    for (int i = 0; i < 4; i++) {
        uint32_t n;
        int32_t *ids = encode(prompts[i], &n);
        struct sched_params p = greedy(ids, n, 12);
        char err[256];
        CHECK_EQ_INT(sched_submit(s, &p, &runs[i].job, err, sizeof(err)), 0);
        free(ids);
    }
    wait_all(runs, 4);
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(!strcmp(runs[i].text, alone[i]), "prompt %d: batched \"%s\" vs alone \"%s\"", i, runs[i].text,
                  alone[i]);
        CHECK_EQ_INT(runs[i].all.n_generated, 12);
        sched_job_release(runs[i].job);
        sched_output_free(&runs[i].take);
    }
    struct sched_stats st;
    sched_get_stats(s, &st);
    CHECK_EQ_INT(st.running, 0);
    CHECK_EQ_INT(st.waiting, 0);
    CHECK(st.steps >= 12);
    sched_close(s, b);
    CHECK(g_cut_spans > 0); /* some prompt was cut, so the rule was exercised */
    CHECK_MSG(g_bad_spans == 0, "%u of %u prefill spans cut off the 4-position grid", g_bad_spans, g_spans);
}

static void test_stop_string_and_prefix_reuse(void)
{
    struct backend *b;
    struct sched *s = start(&b, 2, 64, true);
    CHECK(s != NULL);
    if (!s)
        return;
    uint32_t n;
    int32_t *ids = encode_long(3, 40, &n); /* full blocks of 16 positions to reuse */
    char err[256];
    struct run r1 = {0}, r2 = {0}, r3 = {0};
    struct sched_params p = greedy(ids, n, 16);
    CHECK_EQ_INT(sched_submit(s, &p, &r1.job, err, sizeof(err)), 0);
    wait_all(&r1, 1);
    CHECK_EQ_INT(r1.all.n_cached, 0);
    /* the same prompt again: its full blocks are reused (at least one token recomputed) */
    CHECK_EQ_INT(sched_submit(s, &p, &r2.job, err, sizeof(err)), 0);
    wait_all(&r2, 1);
    CHECK_EQ_INT(r2.all.n_cached, n % 16 ? n / 16 * 16 : n - 1);
    CHECK_EQ_STR(r2.text, r1.text);
    /* a stop string from the middle of that text: the output ends before it */
    const char *mid = r1.text + r1.len / 2;
    char stop[8];
    snprintf(stop, sizeof(stop), "%.3s", mid);
    const char *first = strstr(r1.text, stop);
    const char *stops[1] = {stop};
    p.stop = stops;
    p.n_stop = 1;
    CHECK_EQ_INT(sched_submit(s, &p, &r3.job, err, sizeof(err)), 0);
    wait_all(&r3, 1);
    CHECK_EQ_INT(r3.all.finish, SCHED_FINISH_STOP);
    CHECK_EQ_INT(r3.len, (size_t)(first - r1.text));
    CHECK(!strncmp(r3.text, r1.text, r3.len));
    CHECK(r3.all.n_generated < 16);
    struct run *rs[3] = {&r1, &r2, &r3};
    for (int i = 0; i < 3; i++) {
        sched_job_release(rs[i]->job);
        sched_output_free(&rs[i]->take);
    }
    free(ids);
    sched_close(s, b);
}

/* A job's notify that cancels it from the engine thread itself, at the first
 * token after the test arms it, and records how many tokens it had then — so
 * "ends within a step of the cancel" is checked against the engine's own count,
 * whatever the test thread's scheduling (a count read by the test thread before
 * the cancel can be stale by any number of steps on a loaded machine). notify
 * runs once a running job's token, under the job's lock: only atomics here. */
struct cancel_probe {
    _Atomic(struct sched_job *) job;
    atomic_bool armed;
    atomic_uint tokens, at_cancel; /* tokens notified; the count when it cancelled (0: not yet) */
};

static void notify_cancel_probe(void *arg)
{
    struct cancel_probe *c = arg;
    const unsigned t = atomic_fetch_add(&c->tokens, 1) + 1;
    struct sched_job *j = atomic_load(&c->job);
    if (j && atomic_load(&c->armed) && atomic_load(&c->at_cancel) == 0) {
        sched_job_cancel(j);
        atomic_store(&c->at_cancel, t);
    }
    notify(NULL);
}

static void test_cancel_frees_the_slot(void)
{
    struct backend *b;
    struct sched *s = start(&b, 1, 64, false);
    CHECK(s != NULL);
    if (!s)
        return;
    uint32_t n;
    int32_t *ids = encode(prompts[1], &n);
    char err[256];
    struct run r = {0}, w = {0};
    struct cancel_probe probe = {0};
    struct sched_params p = greedy(ids, n, 200);
    p.notify = notify_cancel_probe;
    p.notify_arg = &probe;
    CHECK_EQ_INT(sched_submit(s, &p, &r.job, err, sizeof(err)), 0);
    atomic_store(&probe.job, r.job);
    /* a second job waits for the only slot */
    struct sched_params q = greedy(ids, n, 3);
    CHECK_EQ_INT(sched_submit(s, &q, &w.job, err, sizeof(err)), 0);
    while (r.all.n_generated < 2 && !drain(&r))
        usleep(1000);
    struct sched_stats st;
    sched_get_stats(s, &st);
    CHECK_EQ_INT(st.running, 1);
    CHECK_EQ_INT(st.waiting, 1);
    atomic_store(&probe.armed, true); /* the engine cancels r at its next token */
    wait_all(&r, 1);
    CHECK_EQ_INT(r.all.finish, SCHED_FINISH_CANCELLED);
    const unsigned at = atomic_load(&probe.at_cancel);
    CHECK(at >= 2);
    /* the cancel is seen at the next step's start: no token after the one it was made at */
    CHECK_MSG(r.all.n_generated <= at, "%u tokens, cancelled at %u", r.all.n_generated, at);
    /* the waiting job gets the slot and finishes */
    wait_all(&w, 1);
    CHECK_EQ_INT(w.all.finish, SCHED_FINISH_LENGTH);
    CHECK_EQ_INT(w.all.n_generated, 3);
    sched_job_release(r.job);
    sched_job_release(w.job);
    sched_output_free(&r.take);
    sched_output_free(&w.take);

    /* releasing a running job cancels it too */
    struct run x = {0};
    p.notify = notify; /* no probe for this one */
    p.notify_arg = NULL;
    CHECK_EQ_INT(sched_submit(s, &p, &x.job, err, sizeof(err)), 0);
    sched_job_release(x.job);
    for (int i = 0; i < 10000; i++) { /* ends at the next step; up to 10 s on a loaded machine */
        sched_get_stats(s, &st);
        if (st.running == 0 && st.waiting == 0)
            break;
        usleep(1000);
    }
    CHECK_EQ_INT(st.running + st.waiting, 0);
    free(ids);
    sched_close(s, b);
}

static void test_bad_submissions(void)
{
    struct backend *b;
    struct sched *s = start(&b, 1, 64, false);
    CHECK(s != NULL);
    if (!s)
        return;
    char err[256];
    struct sched_job *j = NULL;
    int32_t ids[300] = {0};
    struct sched_params p = greedy(ids, 0, 4);
    CHECK_EQ_INT(sched_submit(s, &p, &j, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "empty");
    p = greedy(ids, 256, 4); /* fills the 256-position context */
    CHECK_EQ_INT(sched_submit(s, &p, &j, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "context");
    ids[1] = (int32_t)g_model.cfg.vocab;
    p = greedy(ids, 3, 4);
    CHECK_EQ_INT(sched_submit(s, &p, &j, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "vocabulary");
    ids[1] = 0;
    p.sample.temperature = -1;
    CHECK_EQ_INT(sched_submit(s, &p, &j, err, sizeof(err)), -1);
    CHECK(j == NULL);
    CHECK_EQ_INT(sched_max_ctx(s), 256);
    sched_close(s, b);
}

/* Greedy text of (ids, max_tokens) alone on a roomy pool. */
static void greedy_alone(const int32_t *ids, uint32_t n, uint32_t max_tokens, char *out, size_t cap)
{
    struct backend *b;
    struct sched *s = start_pool(&b, 1, 0);
    CHECK(s != NULL);
    if (!s)
        return;
    struct run r = {0};
    struct sched_params p = greedy(ids, n, max_tokens);
    char err[256];
    CHECK_EQ_INT(sched_submit(s, &p, &r.job, err, sizeof(err)), 0);
    wait_all(&r, 1);
    CHECK_EQ_INT(r.all.n_generated, max_tokens);
    snprintf(out, cap, "%s", r.text);
    sched_job_release(r.job);
    sched_output_free(&r.take);
    sched_close(s, b);
}

/* Two interactive jobs that each grow to 10 blocks in a pool of 16: the newest
 * is preempted when the pool runs dry (never failed), recomputed later, and
 * both texts are what each gives alone. */
static void test_growth_preempts_the_newest(void)
{
    uint32_t n0, n1;
    int32_t *a = encode_long(0, 60, &n0), *c = encode_long(3, 60, &n1);
    uint32_t gen0 = 160 - n0, gen1 = 160 - n1;
    char want[2][4096];
    greedy_alone(a, n0, gen0, want[0], sizeof(want[0]));
    greedy_alone(c, n1, gen1, want[1], sizeof(want[1]));
    struct backend *b;
    struct sched *s = start_pool(&b, 2, 16);
    CHECK(s != NULL);
    if (!s)
        return;
    struct run runs[2] = {0};
    struct sched_params p0 = greedy(a, n0, gen0), p1 = greedy(c, n1, gen1);
    char err[256];
    CHECK_EQ_INT(sched_submit(s, &p0, &runs[0].job, err, sizeof(err)), 0);
    CHECK_EQ_INT(sched_submit(s, &p1, &runs[1].job, err, sizeof(err)), 0);
    wait_all(runs, 2);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(runs[i].all.finish, SCHED_FINISH_LENGTH);
        CHECK_MSG(!strcmp(runs[i].text, want[i]), "job %d: \"%s\" vs alone \"%s\"", i, runs[i].text, want[i]);
        sched_job_release(runs[i].job);
        sched_output_free(&runs[i].take);
    }
    struct sched_stats st;
    sched_get_stats(s, &st);
    CHECK(st.preemptions >= 1);
    CHECK_EQ_U64(st.refusals, 0);
    CHECK_EQ_INT(st.kv_used, 0);
    CHECK_EQ_INT(st.kv_free + st.kv_cached, 16);
    free(a);
    free(c);
    sched_close(s, b);
}

/* A new interactive job preempts running batch work; with only interactive work
 * running it is refused (SCHED_FINISH_REFUSED), and a batch job just waits. */
static void test_interactive_preempts_batch_then_is_refused(void)
{
    uint32_t nb, nm;
    int32_t *big = encode_long(1, 130, &nb), *mid = encode_long(2, 113, &nm);
    CHECK(nb <= 144 && nm <= 128); /* 9+ blocks at admission; mid needs 8 of the 7 left */
    uint32_t gen = 40;
    char want_big[4096], want_mid[4096];
    greedy_alone(big, nb, gen, want_big, sizeof(want_big));
    greedy_alone(mid, nm, 8, want_mid, sizeof(want_mid));
    struct backend *b;
    struct sched *s = start_pool(&b, 4, 16);
    CHECK(s != NULL);
    if (!s)
        return;
    char err[256];
    struct run rb = {0}, rm = {0};
    struct sched_params pb = greedy(big, nb, gen), pm = greedy(mid, nm, 8);
    pb.lane = SCHED_LANE_BATCH;
    CHECK_EQ_INT(sched_submit(s, &pb, &rb.job, err, sizeof(err)), 0);
    while (rb.all.n_generated < 2 && !drain(&rb))
        usleep(1000);
    CHECK_EQ_INT(sched_submit(s, &pm, &rm.job, err, sizeof(err)), 0);
    wait_all(&rm, 1);
    CHECK_EQ_INT(rm.all.finish, SCHED_FINISH_LENGTH);
    CHECK_EQ_STR(rm.text, want_mid);
    wait_all(&rb, 1);
    CHECK_EQ_INT(rb.all.finish, SCHED_FINISH_LENGTH);
    CHECK_EQ_INT(rb.all.n_generated, gen);
    CHECK_MSG(!strcmp(rb.text, want_big), "preempted batch job: \"%s\" vs alone \"%s\"", rb.text, want_big);
    CHECK_EQ_INT(rb.all.n_cached, 0);
    struct sched_stats st;
    sched_get_stats(s, &st);
    CHECK(st.preemptions >= 1);
    CHECK_EQ_U64(st.refusals, 0);
    sched_job_release(rb.job);
    sched_job_release(rm.job);
    sched_output_free(&rb.take);
    sched_output_free(&rm.take);

    /* interactive work holds the pool: a new interactive job is refused at once, a batch one waits */
    struct run h = {0}, r2 = {0}, w = {0};
    struct sched_params ph = greedy(big, nb, gen);
    ph.cache_tenant = "other"; /* nothing cached for it */
    CHECK_EQ_INT(sched_submit(s, &ph, &h.job, err, sizeof(err)), 0);
    while (h.all.n_generated < 1 && !drain(&h))
        usleep(1000);
    pm.cache_tenant = "other";
    CHECK_EQ_INT(sched_submit(s, &pm, &r2.job, err, sizeof(err)), 0);
    wait_all(&r2, 1);
    CHECK_EQ_INT(r2.all.finish, SCHED_FINISH_REFUSED);
    CHECK_EQ_INT(r2.all.n_generated, 0);
    pm.lane = SCHED_LANE_BATCH;
    CHECK_EQ_INT(sched_submit(s, &pm, &w.job, err, sizeof(err)), 0);
    usleep(50 * 1000);
    CHECK(!drain(&w));
    sched_job_cancel(h.job);
    wait_all(&w, 1);
    CHECK_EQ_INT(w.all.finish, SCHED_FINISH_LENGTH);
    CHECK_EQ_STR(w.text, want_mid);
    sched_get_stats(s, &st);
    CHECK_EQ_U64(st.refusals, 1);
    struct run *rs[3] = {&h, &r2, &w};
    for (int i = 0; i < 3; i++) {
        sched_job_release(rs[i]->job);
        sched_output_free(&rs[i]->take);
    }
    free(big);
    free(mid);
    sched_close(s, b);
}

/* The prefix cache is per namespace: same tenant and salt hit, others miss;
 * a prompt of whole blocks is found entirely (but its last token) and the
 * copy-on-write of its last block leaves the greedy text unchanged. */
static void test_prefix_namespaces(void)
{
    struct backend *b;
    struct sched *s = start_pool(&b, 2, 0);
    CHECK(s != NULL);
    if (!s)
        return;
    uint32_t n;
    int32_t *ids = encode_long(3, 48, &n);
    n = 48; /* whole blocks: a hit recomputes the last token in a copy of the cached block (kv_copy) */
    static const char *const ns[][3] = {{"m", "a", ""}, {"m", "a", ""}, {"m", "b", ""}, {"m", "a", "s"},
                                        {"m2", "a", ""}, {"m", "a", "s"}};
    const uint32_t full = n / 16 * 16 < n ? n / 16 * 16 : n - 1;
    const uint32_t want[] = {0, full, 0, 0, 0, full};
    char first[4096] = "";
    for (int i = 0; i < 6; i++) {
        struct run r = {0};
        struct sched_params p = greedy(ids, n, 4);
        p.cache_model = ns[i][0];
        p.cache_tenant = ns[i][1];
        p.cache_salt = ns[i][2];
        char err[256];
        CHECK_EQ_INT(sched_submit(s, &p, &r.job, err, sizeof(err)), 0);
        wait_all(&r, 1);
        CHECK_MSG(r.all.n_cached == want[i], "request %d: %u cached, want %u", i, r.all.n_cached, want[i]);
        if (i == 0)
            snprintf(first, sizeof(first), "%s", r.text);
        CHECK_EQ_STR(r.text, first);
        sched_job_release(r.job);
        sched_output_free(&r.take);
    }
    free(ids);
    sched_close(s, b);
}

int main(void)
{
    char err[512];
    if (model_open(&g_model, MODEL_PATH, err, sizeof(err)) ||
        tokenizer_load(&g_tok, &g_model.file, NULL, err, sizeof(err))) {
        fprintf(stderr, "%s (run scripts/fetch-model.sh)\n", err);
        return 1;
    }
    for (uint32_t t = 0; t < tokenizer_n_vocab(&g_tok) && g_n_ban < SAMPLE_MAX_STOP_TOKENS; t++)
        if (tokenizer_is_eog(&g_tok, (int32_t)t))
            g_ban[g_n_ban++] = (struct sample_bias){(int32_t)t, -100.0f};
    RUN(test_batching_and_chunking_do_not_change_greedy_text);
    RUN(test_stop_string_and_prefix_reuse);
    RUN(test_cancel_frees_the_slot);
    RUN(test_bad_submissions);
    RUN(test_prefix_namespaces);
    RUN(test_growth_preempts_the_newest);
    RUN(test_interactive_preempts_batch_then_is_refused);
    tokenizer_free(&g_tok);
    model_close(&g_model);
    return test_summary();
}
