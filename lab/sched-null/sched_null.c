/* lab/sched-null/sched_null.c — the engine thread's own share of a step: the
 * scheduler (engine/sched.c) driving SLOTS greedy jobs of 512-token prompts
 * and GEN generated tokens over a backend whose forward does nothing but name
 * a greedy token for every row that wants one. Wall time / steps is what a
 * step costs on the host besides the backend: batch building, the greedy
 * picks, detokenizing, stop matching, output hand-off. Not built by CMake
 * (lab/README.md). Build from the repository root after `make build`:
 *
 *   cc -O2 -pthread -D_GNU_SOURCE -std=c17 -DPCRE2_CODE_UNIT_WIDTH=8 -DPCRE2_STATIC -DUTF8PROC_STATIC -Isrc \
 *      -c lab/sched-null/sched_null.c -o /tmp/sched_null.o && \
 *   (cd build && g++ /tmp/sched_null.o -o /tmp/sched_null @CMakeFiles/test_engine_sched.dir/linkLibs.rsp \
 *      -L/usr/local/cuda/targets/x86_64-linux/lib/stubs -L/usr/local/cuda/targets/x86_64-linux/lib)
 *   /tmp/sched_null [SLOTS (64)] [GEN (256)]      (reads models/SmolLM2-135M-Instruct.Q4_1.gguf)
 */
#include "engine/backend.h"
#include "engine/sched.h"
#include "model/model.h"
#include "sample/sample.h"
#include "tokenizer/tokenizer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODEL_PATH "models/SmolLM2-135M-Instruct.Q4_1.gguf"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;

static void notify(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_mu);
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

/* A token for each row that asks for a greedy pick (varied, so the detokenizer has work). */
static int null_forward(struct backend *b, const struct backend_batch *batch, char *err, size_t errlen)
{
    (void)b, (void)err, (void)errlen;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *q = &batch->seqs[i];
        if (q->n_logits && q->argmax)
            q->argmax[0] = 300 + (int32_t)((q->pos * 7 + i * 13) % 2000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const uint32_t slots = argc > 1 ? (uint32_t)atoi(argv[1]) : 64, gen = argc > 2 ? (uint32_t)atoi(argv[2]) : 256;
    if (slots < 1 || slots > 1024 || gen < 1 || gen > 512) {
        fprintf(stderr, "sched_null [SLOTS 1..1024] [GEN 1..512]\n");
        return 2;
    }
    char err[256];
    struct model m;
    struct tokenizer tok;
    if (model_open(&m, MODEL_PATH, err, sizeof(err)) || tokenizer_load(&tok, &m.file, NULL, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct backend *b;
    struct backend_config bc = {.max_seqs = slots, .max_ctx = 1024, .n_threads = 1, .kv_blocks = slots * 64,
                                .max_batch_tokens = 2048 > 2 * slots ? 2048 : 2 * slots};
    if (backend_open(&b, "cpu", &m, &bc, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    static struct backend_ops null_ops;
    null_ops = *b->ops;
    null_ops.forward = null_forward;
    b->ops = &null_ops;
    struct sched_config sc = {.max_batch_tokens = bc.max_batch_tokens, .prefix_reuse = false};
    struct sched *s = NULL;
    if (sched_start(&s, b, &tok, &sc, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int32_t ids[512];
    struct sched_job **jobs = calloc(slots, sizeof(*jobs));
    struct sched_output out = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t i = 0; i < slots; i++) {
        for (int k = 0; k < 512; k++)
            ids[k] = 1000 + (int32_t)((k * 31 + i * 17) % 5000);
        struct sched_params p = {.prompt = ids, .n_prompt = 512, .max_tokens = gen, .notify = notify};
        sample_params_default(&p.sample);
        p.sample.temperature = 0;
        if (sched_submit(s, &p, &jobs[i], err, sizeof(err))) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    }
    for (uint32_t done = 0; done < slots;) {
        done = 0;
        for (uint32_t i = 0; i < slots; i++) {
            sched_job_take(jobs[i], &out);
            done += out.finish != SCHED_RUNNING;
        }
        if (done < slots) {
            pthread_mutex_lock(&g_mu);
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 5 * 1000000;
            if (ts.tv_nsec >= 1000000000)
                ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&g_cv, &g_mu, &ts);
            pthread_mutex_unlock(&g_mu);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct sched_stats st;
    sched_get_stats(s, &st);
    const double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    printf("slots %u, %u tokens each: %.1f ms, %llu steps, %.3f ms a step (engine thread and this consumer), "
           "%llu generated\n",
           slots, gen, ms, (unsigned long long)st.steps, ms / (double)st.steps,
           (unsigned long long)st.tokens_generated);
    for (uint32_t i = 0; i < slots; i++)
        sched_job_release(jobs[i]);
    sched_output_free(&out);
    sched_stop(s);
    backend_close(b);
    tokenizer_free(&tok);
    model_close(&m);
    free(jobs);
    return 0;
}
