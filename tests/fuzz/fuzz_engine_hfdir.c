/* fuzz_engine_hfdir.c — libFuzzer target for a whole Hugging Face model folder
 * as the engine opens it: config.json, the safetensors (single or sharded with
 * model.safetensors.index.json), generation_config.json, tokenizer.json,
 * tokenizer_config.json and chat_template.jinja — every file of the folder is
 * untrusted input (and a folder holding a single .gguf, the loader's other
 * folder form).
 *
 * The input is the folder: records "@@X\n<bytes>", each up to the next
 * "\n@@Y\n" (X, Y one letter: the file table below; an input not starting
 * with a record is config.json alone). The files go into one folder per
 * process (/dev/shm when there is one), rewritten for each input; absent
 * records leave their file absent. engine_open (CPU backend, one sequence of
 * 8 positions) must either succeed or say why, naming the folder. A model
 * that opens renders its chat template (when it has one) with a fixed
 * conversation, encodes that text and a plain one, decodes the ids, and — when
 * small — runs one forward of up to 4 of those tokens, so every weight row
 * the binding handed out is read by the kernels under ASan.
 * Seeds: tests/fuzz/corpus/fuzz_engine_hfdir/ (tools/make_fuzz_seeds.py: tiny
 * Llama, Qwen3 and Gemma 3 folders, sharded and broken variants).
 */
#include "core/log.h"
#include "engine/engine.h"
#include "fuzz_forward.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    char code;
    const char *name;
} FILES[] = {
    {'c', "config.json"},
    {'w', "model.safetensors"},
    {'i', "model.safetensors.index.json"},
    {'a', "model-00001-of-00002.safetensors"},
    {'b', "model-00002-of-00002.safetensors"},
    {'g', "generation_config.json"},
    {'t', "tokenizer.json"},
    {'k', "tokenizer_config.json"},
    {'j', "chat_template.jinja"},
    {'f', "model.gguf"}, /* a folder holding one GGUF (and no safetensors) */
};
#define N_FILES (sizeof(FILES) / sizeof(FILES[0]))

static char g_dir[64];
static volatile float g_sink;

/* The folder's files removed (those an input wrote). */
static void dir_clear(void)
{
    char p[128];
    for (size_t i = 0; i < N_FILES; i++) {
        snprintf(p, sizeof(p), "%s/%s", g_dir, FILES[i].name);
        unlink(p);
    }
}

static void dir_remove(void)
{
    dir_clear();
    rmdir(g_dir);
}

static bool dir_make(void)
{
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof(g_dir), "%s/memra-fuzz-hf-XXXXXX", base);
    if (!mkdtemp(g_dir))
        return false;
    atexit(dir_remove);
    return true;
}

static bool file_write(const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* The records of the input into the folder; false when a file cannot be written. */
static bool folder_write(const uint8_t *data, size_t size)
{
    dir_clear();
    if (size < 4 || data[0] != '@' || data[1] != '@' || data[3] != '\n')
        return file_write("config.json", data, size);
    size_t pos = 0;
    while (pos + 4 <= size) {
        const char code = (char)data[pos + 2];
        const size_t start = pos + 4;
        size_t end = size, next = size;
        for (size_t q = start; q + 5 <= size; q++)
            if (data[q] == '\n' && data[q + 1] == '@' && data[q + 2] == '@' && data[q + 4] == '\n') {
                end = q;
                next = q + 1;
                break;
            }
        for (size_t i = 0; i < N_FILES; i++)
            if (FILES[i].code == code && !file_write(FILES[i].name, data + start, end - start))
                return false;
        pos = next;
    }
    return true;
}

static void exercise_tokens(struct engine *e, const char *text, size_t len, bool special, int32_t *keep,
                            uint32_t *n_keep)
{
    char err[256];
    int32_t *ids;
    size_t n;
    if (tokenizer_encode_alloc(&e->tok, text, len, special, true, &ids, &n, err, sizeof(err)) != 0)
        return;
    char *back;
    size_t back_len;
    if (tokenizer_decode(&e->tok, ids, n, false, &back, &back_len, err, sizeof(err)) == 0)
        free(back);
    for (size_t i = 0; i < n && *n_keep < 4; i++)
        keep[(*n_keep)++] = ids[i];
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_dir[0]) {
        if (!dir_make())
            return 0;
        if (!getenv("MEMRA_FUZZ_VERBOSE"))
            log_set_level(LOG_LEVEL_ERROR); /* an unusable template's warning at every input slows the run */
    }
    if (!folder_write(data, size))
        return 0;
    struct engine e;
    char err[512] = "";
    struct backend_config cfg = {.max_seqs = 1, .max_ctx = 8, .max_batch_tokens = 4, .n_threads = 1};
    const bool verbose = getenv("MEMRA_FUZZ_VERBOSE") != NULL; /* what each input did: for checking the seeds */
    if (engine_open(&e, g_dir, "cpu", &cfg, err, sizeof(err)) != 0) {
        if (verbose)
            fprintf(stderr, "refused: %s\n", err);
        if (!strstr(err, g_dir))
            __builtin_trap(); /* every refusal names the folder or its file */
        return 0;
    }
    int32_t toks[4];
    uint32_t n_toks = 0;
    if (e.tmpl) {
        struct chat_special_tokens sp;
        engine_special_tokens(&e, &sp);
        json_t *ctx = json_pack("{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}],s:b}", "messages", "role", "system", "content",
                                "Be brief.", "role", "user", "content", "Hi <|im_start|> there", "role", "assistant",
                                "content", "Hello.", "add_generation_prompt", 1);
        if (ctx && chat_template_context_defaults(ctx, &sp) == 0) {
            char *text, terr[256];
            size_t len;
            if (chat_template_render(e.tmpl, ctx, &text, &len, terr, sizeof(terr)) == 0) {
                exercise_tokens(&e, text, len, true, toks, &n_toks);
                free(text);
            }
        }
        json_decref(ctx);
    }
    static const char plain[] = "The capital of France is 日本 \xff!";
    exercise_tokens(&e, plain, sizeof(plain) - 1, false, toks, &n_toks);

    const struct model_config *c = &e.model.cfg;
    const bool small = fuzz_forward_is_small(c);
    if (n_toks > 0 && small) { /* ids < the model's vocabulary: engine_open refuses a larger tokenizer */
        float *logits = malloc(sizeof(float) * c->vocab);
        const uint32_t blocks[1] = {0};
        if (logits && engine_prefill(&e, blocks, 0, toks, n_toks, logits, err, sizeof(err)) == 0)
            g_sink = logits[0] + logits[c->vocab - 1];
        else if (verbose)
            fprintf(stderr, "forward: %s\n", err);
        free(logits);
    }
    if (verbose)
        fprintf(stderr, "opened: %s, %u layers, template %s, %u tokens run\n", e.model.arch_name, c->n_layers,
                e.tmpl ? "yes" : "no", small ? n_toks : 0);
    engine_close(&e);
    return 0;
}
