/* cli/run_gen.c — run-gen: generate text from a prompt with one model.
 *
 *   run-gen PATH --prompt TEXT [--chat] [--max-tokens N] [--temperature T]
 *           [--top-p P] [--top-k K] [--seed S] [--threads N] [--ctx N]
 *           [--backend cpu|cuda]
 *
 * PATH is a .gguf file or a Hugging Face folder. With --chat (or MEMRA_CHAT=1)
 * the prompt becomes one user message rendered through the model's own chat
 * template. The text streams to stdout as it is generated; the speeds go to
 * stderr: prompt tokens/s, generation tokens/s and the GB/s of weights that
 * generation read (model_decode_bytes per token).
 */
#include "core/log.h"
#include "engine/engine.h"
#include "sample/sample.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: run-gen PATH --prompt TEXT [--chat] [--max-tokens N] [--temperature T] [--top-p P]\n"
            "               [--top-k K] [--seed S] [--threads N] [--ctx N] [--backend NAME]\n"
            "  PATH: a .gguf file or a Hugging Face model folder\n"
            "  --chat (or MEMRA_CHAT=1): apply the model's chat template to the prompt\n"
            "  defaults: --max-tokens 256 --temperature 0 (greedy) --top-p 1 --top-k 0 --seed 0\n"
            "            --ctx: the model's trained context, at most 4096 (0 = that default)\n");
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *prompt = NULL, *backend = NULL;
    const char *env = getenv("MEMRA_CHAT");
    bool chat = env && *env && strcmp(env, "0") != 0;
    double max_tokens = 256, temperature = 0, top_p = 1, top_k = 0, seed = 0, threads = 0, ctx = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double *num = NULL, lo = 0, hi = 0;
        if (strcmp(a, "--prompt") == 0 && i + 1 < argc) {
            prompt = argv[++i];
        } else if (strcmp(a, "--chat") == 0) {
            chat = true;
        } else if (strcmp(a, "--backend") == 0 && i + 1 < argc) {
            backend = argv[++i];
        } else if (strcmp(a, "--max-tokens") == 0) {
            num = &max_tokens, lo = 0, hi = 1 << 24;
        } else if (strcmp(a, "--temperature") == 0) {
            num = &temperature, lo = 0, hi = 100;
        } else if (strcmp(a, "--top-p") == 0) {
            num = &top_p, lo = 1e-9, hi = 1;
        } else if (strcmp(a, "--top-k") == 0) {
            num = &top_k, lo = 0, hi = 1 << 24;
        } else if (strcmp(a, "--seed") == 0) {
            num = &seed, lo = 0, hi = 9007199254740992.0;
        } else if (strcmp(a, "--threads") == 0) {
            num = &threads, lo = 0, hi = 1024;
        } else if (strcmp(a, "--ctx") == 0) {
            num = &ctx, lo = 0, hi = MODEL_MAX_CTX;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (a[0] != '-' && !path) {
            path = a;
        } else {
            fprintf(stderr, "run-gen: unknown or incomplete argument '%s'\n", a);
            usage();
            return 2;
        }
        if (num && (i + 1 >= argc || parse_num(argv[++i], lo, hi, num) != 0)) {
            fprintf(stderr, "run-gen: %s needs a number in [%g, %g]\n", a, lo, hi);
            return 2;
        }
    }
    if (!path || !prompt) {
        usage();
        return 2;
    }

    char err[1024];
    struct engine e;
    struct backend_config cfg = {.max_seqs = 1, .max_ctx = (uint32_t)ctx, .max_batch_tokens = 256,
                                 .n_threads = (uint32_t)threads};
    double t_load = now_s();
    if (engine_open(&e, path, backend, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "run-gen: %s\n", err);
        return 1;
    }
    if (e.backend->cfg.max_ctx > e.model.cfg.max_ctx)
        log_warn("context %u is beyond the model's trained %u", e.backend->cfg.max_ctx, e.model.cfg.max_ctx);
    t_load = now_s() - t_load;

    /* prompt → ids */
    char *text = NULL;
    size_t text_len = 0;
    int rc = 1;
    int32_t *ids = NULL, *seq = NULL;
    uint32_t *blocks = NULL; /* (ceil(max_ctx / 16)) the one sequence's linear table */
    float *logits = NULL;
    struct sampler smp = {0};
    struct sample_work work = {0};
    if (chat) {
        json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", prompt);
        if (!msgs || engine_render_chat(&e, msgs, &text, &text_len, err, sizeof(err)) != 0) {
            json_decref(msgs);
            fprintf(stderr, "run-gen: %s\n", err);
            goto out;
        }
        json_decref(msgs);
    } else {
        text = strdup(prompt);
        text_len = strlen(prompt);
    }
    size_t n_prompt;
    /* a rendered chat holds the special tokens (and BOS) itself */
    if (tokenizer_encode_alloc(&e.tok, text, text_len, !chat, chat, &ids, &n_prompt, err, sizeof(err)) != 0) {
        fprintf(stderr, "run-gen: %s\n", err);
        goto out;
    }
    const uint32_t max_ctx = e.backend->cfg.max_ctx;
    if (n_prompt == 0 || n_prompt >= max_ctx) {
        fprintf(stderr, "run-gen: the prompt has %zu tokens; the context holds %u\n", n_prompt, max_ctx);
        goto out;
    }
    uint32_t n_gen_max = (uint32_t)max_tokens;
    if (n_prompt + n_gen_max > max_ctx)
        n_gen_max = max_ctx - (uint32_t)n_prompt;

    const uint32_t V = e.model.cfg.vocab;
    seq = malloc(sizeof(int32_t) * (n_prompt + n_gen_max + 1));
    logits = malloc(sizeof(float) * V);
    blocks = malloc(sizeof(uint32_t) * backend_kv_blocks_for(max_ctx));
    struct sample_params sp;
    sample_params_default(&sp);
    sp.temperature = (float)temperature;
    sp.top_p = (float)top_p;
    sp.top_k = (int32_t)top_k;
    sp.seed = (uint64_t)seed;
    if (!seq || !logits || !blocks || sampler_init(&smp, V, &sp, err, sizeof(err)) != 0 ||
        sample_work_init(&work, V, err, sizeof(err)) != 0) {
        fprintf(stderr, "run-gen: %s\n", seq && logits && blocks ? err : "out of memory");
        goto out;
    }
    backend_blocks_linear(blocks, 0, max_ctx);
    memcpy(seq, ids, n_prompt * sizeof(int32_t));
    sampler_add_prompt(&smp, ids, (uint32_t)n_prompt);

    double t0 = now_s();
    if (engine_prefill(&e, blocks, 0, seq, (uint32_t)n_prompt, logits, err, sizeof(err)) != 0) {
        fprintf(stderr, "run-gen: %s\n", err);
        goto out;
    }
    double t_prompt = now_s() - t0;

    struct detok_stream ds;
    detok_stream_init(&ds, &e.tok, false);
    char piece[4096];
    size_t piece_len;
    uint32_t n = (uint32_t)n_prompt, n_gen = 0;
    t0 = now_s();
    for (; n_gen < n_gen_max; n_gen++) {
        int32_t tok = sampler_sample(&smp, &work, logits, NULL);
        if (tok < 0 || tokenizer_is_eog(&e.tok, tok))
            break;
        sampler_accept(&smp, tok);
        if (detok_stream_push(&ds, tok, piece, sizeof(piece), &piece_len, err, sizeof(err)) == 0) {
            fwrite(piece, 1, piece_len, stdout);
            fflush(stdout);
        }
        seq[n] = tok;
        if (n_gen + 1 < n_gen_max && engine_prefill(&e, blocks, n, &seq[n], 1, logits, err, sizeof(err)) != 0) {
            fprintf(stderr, "\nrun-gen: %s\n", err);
            goto out;
        }
        n++;
    }
    double t_gen = now_s() - t0;
    piece_len = detok_stream_flush(&ds, piece, sizeof(piece));
    fwrite(piece, 1, piece_len, stdout);
    printf("\n");
    fflush(stdout);

    /* n_gen tokens were sampled but only n_gen - 1 decode steps ran after the prefill */
    const uint32_t steps = n_gen > 0 ? n_gen - 1 : 0;
    const double gen_tps = steps > 0 && t_gen > 0 ? steps / t_gen : 0.0;
    fprintf(stderr,
            "run-gen: %s (%s, %u layers, %.1f MB of weights) on %s, %u threads, loaded in %.2f s\n"
            "run-gen: prompt %zu tokens in %.3f s = %.1f tok/s; generation %u tokens, %.1f tok/s, "
            "%.2f GB/s of weights\n",
            path, e.model.arch_name, e.model.cfg.n_layers, (double)e.model.weight_bytes / 1e6,
            e.backend->ops->name, e.backend->cfg.n_threads, t_load, n_prompt, t_prompt,
            t_prompt > 0 ? n_prompt / t_prompt : 0.0, n_gen, gen_tps,
            gen_tps * (double)model_decode_bytes(&e.model) / 1e9);
    rc = 0;
out:
    sampler_free(&smp);
    sample_work_free(&work);
    free(seq);
    free(blocks);
    free(logits);
    free(ids);
    free(text);
    engine_close(&e);
    return rc;
}
