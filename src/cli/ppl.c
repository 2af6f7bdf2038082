/* cli/ppl.c — memra-ppl: perplexity of a model over a text file.
 *
 *   memra-ppl PATH FILE [--ctx N] [--max-windows N] [--threads N] [--backend NAME] [--dump OUT.json]
 *
 * The file is tokenized once (with the BOS the model asks for) and cut into
 * consecutive windows of --ctx tokens (default 512); each window is evaluated
 * from an empty KV state, and every token of a window but the first is scored
 * by the log-softmax of the logits at the position before it. Perplexity =
 * exp(mean negative log-likelihood) over all scored tokens. --dump writes the
 * token ids, memra's top-1 prediction and the NLL of every scored position as
 * JSON (top-1 at every position of a window, NLL at all but the last), so
 * tools/real_model_check.py can run transformers on the same ids.
 */
#include "core/checked.h"
#include "core/log.h"
#include "engine/engine.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PPL_MAX_FILE (256u << 20)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            if (cap > PPL_MAX_FILE + 65536) {
                err_set(err, errlen, "%s: larger than %u MB", path, PPL_MAX_FILE >> 20);
                goto fail;
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                err_set(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        err_set(err, errlen, "%s: read error", path);
        goto fail;
    }
    fclose(f);
    *len = n;
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *file = NULL, *backend = NULL, *dump = NULL;
    uint32_t ctx = 512, max_windows = UINT32_MAX, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int bad = 0;
        if (strcmp(a, "--ctx") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 2, 1u << 20, &ctx);
        else if (strcmp(a, "--max-windows") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 1, UINT32_MAX, &max_windows);
        else if (strcmp(a, "--threads") == 0)
            bad = i + 1 >= argc || checked_parse_u32(argv[++i], 0, 1024, &threads);
        else if (strcmp(a, "--backend") == 0 && i + 1 < argc)
            backend = argv[++i];
        else if (strcmp(a, "--dump") == 0 && i + 1 < argc)
            dump = argv[++i];
        else if (a[0] != '-' && !path)
            path = a;
        else if (a[0] != '-' && !file)
            file = a;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "memra-ppl: bad argument '%s'\n", a);
            file = NULL;
            break;
        }
    }
    if (!path || !file) {
        fprintf(stderr, "usage: memra-ppl PATH FILE [--ctx N] [--max-windows N] [--threads N] [--backend NAME] "
                        "[--dump OUT.json]\n");
        return 2;
    }

    char err[1024];
    size_t text_len;
    char *text = read_file(file, &text_len, err, sizeof(err));
    if (!text) {
        fprintf(stderr, "memra-ppl: %s\n", err);
        return 1;
    }
    struct engine e;
    struct backend_config cfg = {.max_seqs = 1, .max_ctx = ctx, .kv_blocks = backend_kv_blocks_for(ctx),
                                 .max_batch_tokens = ctx < 256 ? ctx : 256, .n_threads = threads};
    if (engine_open(&e, path, backend, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-ppl: %s\n", err);
        free(text);
        return 1;
    }
    int rc = 1;
    int32_t *ids = NULL, *top1 = NULL;
    uint32_t *blocks = NULL; /* (ceil(ctx / 16)) the one sequence's linear table */
    float *logits = NULL, *nll = NULL;
    size_t n_ids;
    if (tokenizer_encode_alloc(&e.tok, text, text_len, true, false, &ids, &n_ids, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-ppl: %s\n", err);
        goto out;
    }
    const uint32_t V = e.model.cfg.vocab, chunk = e.backend->cfg.max_batch_tokens;
    uint64_t n_windows = n_ids / ctx;
    if (n_windows == 0) {
        fprintf(stderr, "memra-ppl: %s has %zu tokens, fewer than one window of %u\n", file, n_ids, ctx);
        goto out;
    }
    if (n_windows > max_windows)
        n_windows = max_windows;
    logits = malloc(sizeof(float) * (size_t)ctx * V);
    top1 = malloc(sizeof(int32_t) * n_windows * ctx);
    nll = malloc(sizeof(float) * n_windows * ctx);
    blocks = malloc(sizeof(uint32_t) * backend_kv_blocks_for(ctx));
    if (!logits || !top1 || !nll || !blocks) {
        fprintf(stderr, "memra-ppl: out of memory\n");
        goto out;
    }
    backend_blocks_linear(blocks, 0, ctx);
    double sum = 0.0, t0 = now_s();
    uint64_t scored = 0, agree_next = 0;
    for (uint64_t w = 0; w < n_windows; w++) {
        const int32_t *tk = ids + w * ctx;
        for (uint32_t i = 0; i < ctx; i += chunk) {
            const uint32_t k = ctx - i < chunk ? ctx - i : chunk;
            struct backend_seq s = {.blocks = blocks, .pos = i, .n_tokens = k, .tokens = tk + i, .n_logits = k,
                                    .logits = logits + (size_t)i * V};
            struct backend_batch b = {1, &s};
            if (backend_forward(e.backend, &b, err, sizeof(err)) != 0) {
                fprintf(stderr, "memra-ppl: %s\n", err);
                goto out;
            }
        }
        double wsum = 0.0;
        for (uint32_t i = 0; i < ctx; i++) {
            const float *l = logits + (size_t)i * V;
            uint32_t best = 0;
            float mx = l[0];
            for (uint32_t v = 1; v < V; v++)
                if (l[v] > mx)
                    mx = l[v], best = v;
            top1[w * ctx + i] = (int32_t)best;
            if (i + 1 == ctx)
                break; /* the last position predicts a token outside the window */
            double z = 0.0;
            for (uint32_t v = 0; v < V; v++)
                z += exp((double)l[v] - mx);
            const double lp = (double)l[tk[i + 1]] - mx - log(z);
            wsum -= lp;
            nll[w * ctx + i] = (float)-lp;
            agree_next += best == (uint32_t)tk[i + 1];
        }
        sum += wsum;
        scored += ctx - 1;
        fprintf(stderr, "memra-ppl: window %llu/%llu: perplexity %.4f\n", (unsigned long long)w + 1,
                (unsigned long long)n_windows, exp(wsum / (ctx - 1)));
    }
    const double dt = now_s() - t0;
    printf("perplexity %.4f over %llu tokens (%llu windows of %u) of %s\n", exp(sum / scored),
           (unsigned long long)scored, (unsigned long long)n_windows, ctx, file);
    fprintf(stderr, "memra-ppl: %s on %s: %.1f tokens/s; top-1 = next token at %.1f %% of positions\n",
            e.model.arch_name, e.backend->ops->name, n_windows * ctx / dt, 100.0 * agree_next / scored);

    if (dump) {
        json_t *o = json_object(), *jt = json_array(), *j1 = json_array(), *jn = json_array();
        for (uint64_t i = 0; i < n_windows * ctx; i++)
            json_array_append_new(jt, json_integer(ids[i]));
        for (uint64_t w = 0; w < n_windows; w++)
            for (uint32_t i = 0; i < ctx; i++) {
                json_array_append_new(j1, json_integer(top1[w * ctx + i]));
                if (i + 1 < ctx)
                    json_array_append_new(jn, json_real(nll[w * ctx + i]));
            }
        json_object_set_new(o, "ctx", json_integer(ctx));
        json_object_set_new(o, "tokens", jt);
        json_object_set_new(o, "top1", j1);
        json_object_set_new(o, "nll", jn);
        json_object_set_new(o, "perplexity", json_real(exp(sum / scored)));
        if (json_dump_file(o, dump, JSON_COMPACT) != 0) {
            fprintf(stderr, "memra-ppl: cannot write %s\n", dump);
            json_decref(o);
            goto out;
        }
        json_decref(o);
    }
    rc = 0;
out:
    free(ids);
    free(top1);
    free(nll);
    free(blocks);
    free(logits);
    free(text);
    engine_close(&e);
    return rc;
}
