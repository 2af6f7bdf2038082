/* cli/tokenize.c — memra-tokenize: run a model's tokenizer from the shell.
 *
 *   memra-tokenize [options] PATH            UTF-8 text on stdin → JSON array of ids
 *   memra-tokenize --decode [options] PATH   JSON array of ids on stdin → text
 *   memra-tokenize --bench FILE [options] PATH   encode FILE repeatedly, print MB/s as JSON
 *   memra-tokenize --jsonl [options] PATH    one JSON string per stdin line → one JSON array
 *                                            of ids per stdout line (many texts, one load)
 *   memra-tokenize --chat FILE.json [--template FILE.jinja] PATH
 *                                            render the model's chat template (or FILE.jinja)
 *                                            and print the text
 *
 * PATH is a Hugging Face folder, a tokenizer.json, or a .gguf file.
 * Encoding follows the Python `tokenizers` package by default: the model's
 * BOS/EOS rule applies and special-token text is parsed as special tokens.
 *   --no-add-special     do not add BOS/EOS
 *   --no-parse-special   treat special-token text as plain text (llama.cpp's tests)
 *   --special            (decode) include special tokens' text; by default they
 *                        are skipped, like tokenizers' skip_special_tokens=True
 *   --runs N             (bench) timed runs, best one reported (default 5)
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template/template.h"
#include "tokenizer/tokenizer.h"

/* Bounds for --chat inputs (a conversation file and a template are small). */
#define CHAT_MAX_JSON_BYTES (64u << 20)
#define CHAT_MAX_TEMPLATE_BYTES (4u << 20)

enum mode {
    MODE_ENCODE,
    MODE_DECODE,
    MODE_BENCH,
    MODE_JSONL,
    MODE_CHAT,
};

static void usage(void)
{
    fprintf(stderr,
            "usage: memra-tokenize [--decode | --jsonl | --bench FILE] [--no-add-special] [--no-parse-special]\n"
            "                      [--special] [--runs N] PATH\n"
            "  PATH: a Hugging Face model folder, a tokenizer.json, or a .gguf file\n"
            "  encode (default): UTF-8 text on stdin -> JSON array of ids on stdout\n"
            "  --decode: JSON array of ids on stdin -> text on stdout\n"
            "  --bench FILE: encode FILE repeatedly and print the speed as JSON\n"
            "  --jsonl: one JSON string per input line -> one JSON array of ids per output line\n"
            "  --chat FILE.json [--template FILE.jinja]: render the chat template (the model's own, or\n"
            "      FILE.jinja) with FILE.json's keys as its variables, as transformers'\n"
            "      apply_chat_template passes them ({\"messages\": [...], \"tools\": [...],\n"
            "      \"add_generation_prompt\": true, ...}); bos_token/eos_token/unk_token/pad_token come\n"
            "      from the tokenizer unless FILE.json sets them; prints the text\n");
}

/* All of f into a malloc'd buffer. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                free(buf);
                return NULL;
            }
            break;
        }
        char *nb = cap < ((size_t)1 << 31) ? realloc(buf, cap * 2) : NULL;
        if (!nb) {
            free(buf);
            return NULL;
        }
        buf = nb;
        cap *= 2;
    }
    if (buf)
        *len = n;
    return buf;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int do_encode(const struct tokenizer *tok, bool add_special, bool parse_special)
{
    size_t len;
    char *text = read_all(stdin, &len);
    if (!text) {
        fprintf(stderr, "memra-tokenize: cannot read stdin\n");
        return 1;
    }
    char err[512];
    int32_t *ids;
    size_t n;
    int rc = tokenizer_encode_alloc(tok, text, len, add_special, parse_special, &ids, &n, err, sizeof(err));
    free(text);
    if (rc != 0) {
        fprintf(stderr, "memra-tokenize: %s\n", err);
        return 1;
    }
    fputc('[', stdout);
    for (size_t i = 0; i < n; i++)
        printf(i ? ", %d" : "%d", ids[i]);
    fputs("]\n", stdout);
    free(ids);
    return 0;
}

static int do_jsonl(const struct tokenizer *tok, bool add_special, bool parse_special)
{
    char *line = NULL, err[512];
    size_t cap = 0;
    ssize_t got;
    int rc = 0;
    while ((got = getline(&line, &cap, stdin)) > 0) {
        json_error_t je;
        json_t *s = json_loadb(line, (size_t)got, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!json_is_string(s)) {
            fprintf(stderr, "memra-tokenize: stdin line is not a JSON string\n");
            json_decref(s);
            rc = 1;
            break;
        }
        int32_t *ids;
        size_t n;
        if (tokenizer_encode_alloc(tok, json_string_value(s), json_string_length(s), add_special, parse_special, &ids,
                                   &n, err, sizeof(err)) != 0) {
            fprintf(stderr, "memra-tokenize: %s\n", err);
            json_decref(s);
            rc = 1;
            break;
        }
        json_decref(s);
        fputc('[', stdout);
        for (size_t i = 0; i < n; i++)
            printf(i ? ", %d" : "%d", ids[i]);
        fputs("]\n", stdout);
        free(ids);
    }
    free(line);
    return rc;
}

static int do_decode(const struct tokenizer *tok, bool render_special)
{
    json_error_t je;
    json_t *arr = json_loadf(stdin, JSON_DECODE_ANY, &je);
    if (!json_is_array(arr)) {
        fprintf(stderr, "memra-tokenize: stdin: expected a JSON array of ids%s%s\n", arr ? "" : ": ",
                arr ? "" : je.text);
        json_decref(arr);
        return 1;
    }
    size_t n = json_array_size(arr);
    int32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    if (!ids) {
        json_decref(arr);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        json_int_t x = json_integer_value(v);
        if (!json_is_integer(v) || x < INT32_MIN || x > INT32_MAX) {
            fprintf(stderr, "memra-tokenize: stdin: element %zu is not a token id\n", i);
            free(ids);
            json_decref(arr);
            return 1;
        }
        ids[i] = (int32_t)x;
    }
    json_decref(arr);
    char err[512], *text;
    size_t len;
    int rc = tokenizer_decode(tok, ids, n, render_special, &text, &len, err, sizeof(err));
    free(ids);
    if (rc != 0) {
        fprintf(stderr, "memra-tokenize: %s\n", err);
        return 1;
    }
    fwrite(text, 1, len, stdout);
    free(text);
    return 0;
}

static int do_bench(const struct tokenizer *tok, const char *file, int runs, bool add_special, bool parse_special,
                    double load_s)
{
    FILE *f = fopen(file, "rb");
    size_t len = 0;
    char *text = f ? read_all(f, &len) : NULL;
    if (f)
        fclose(f);
    if (!text) {
        fprintf(stderr, "memra-tokenize: cannot read %s\n", file);
        return 1;
    }
    char err[512];
    double best = 1e30, total = 0;
    size_t n_ids = 0;
    for (int r = 0; r <= runs; r++) { /* run 0 warms up */
        int32_t *ids;
        double t0 = now_s();
        int rc = tokenizer_encode_alloc(tok, text, len, add_special, parse_special, &ids, &n_ids, err, sizeof(err));
        double dt = now_s() - t0;
        if (rc != 0) {
            fprintf(stderr, "memra-tokenize: %s\n", err);
            free(text);
            return 1;
        }
        free(ids);
        if (r > 0) {
            total += dt;
            if (dt < best)
                best = dt;
        }
    }
    free(text);
    printf("{\"file\": \"%s\", \"bytes\": %zu, \"tokens\": %zu, \"runs\": %d, \"best_s\": %.6f, \"mean_s\": %.6f, "
           "\"mb_per_s\": %.2f, \"load_s\": %.3f}\n",
           file, len, n_ids, runs, best, total / runs, (double)len / 1e6 / best, load_s);
    return 0;
}

/* FILE into a malloc'd, NUL-terminated buffer of at most max bytes; NULL with
 * the reason in err. */
static char *read_file_bounded(const char *file, size_t max, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", file);
        return NULL;
    }
    char *buf = read_all(f, len);
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "%s: cannot read", file);
        return NULL;
    }
    if (*len > max) {
        snprintf(err, errlen, "%s: %zu bytes, more than the %zu allowed", file, *len, max);
        free(buf);
        return NULL;
    }
    char *z = realloc(buf, *len + 1);
    if (!z) {
        free(buf);
        snprintf(err, errlen, "%s: out of memory", file);
        return NULL;
    }
    z[*len] = '\0';
    return z;
}

static const char *special_text(const struct tokenizer *tok, int32_t id)
{
    size_t len;
    return id >= 0 ? tokenizer_token_text(tok, id, &len) : NULL;
}

static int do_chat(const struct tokenizer *tok, const char *chat_file, const char *template_file)
{
    char err[512];
    size_t len = 0;
    int rc = 1;
    char *src = NULL, *out = NULL;
    struct chat_template *t = NULL;
    json_t *ctx = NULL;
    char *text = read_file_bounded(chat_file, CHAT_MAX_JSON_BYTES, &len, err, sizeof(err));
    if (!text)
        goto fail;
    json_error_t je;
    ctx = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!ctx) {
        snprintf(err, sizeof(err), "%s:%d:%d: %s", chat_file, je.line, je.column, je.text);
        goto fail;
    }
    if (!json_is_object(ctx)) {
        snprintf(err, sizeof(err), "%s: expected a JSON object whose keys are the template's variables", chat_file);
        goto fail;
    }
    const char *tmpl_name = template_file;
    if (template_file) {
        src = read_file_bounded(template_file, CHAT_MAX_TEMPLATE_BYTES, &len, err, sizeof(err));
        if (!src)
            goto fail;
    } else {
        const char *own = tokenizer_chat_template(tok);
        if (!own) {
            snprintf(err, sizeof(err), "the model has no chat template; give one with --template FILE.jinja");
            goto fail;
        }
        src = strdup(own);
        len = src ? strlen(src) : 0;
        tmpl_name = "the model's chat template";
    }
    if (!src) {
        snprintf(err, sizeof(err), "out of memory");
        goto fail;
    }
    if (chat_template_parse(&t, src, len, err, sizeof(err)) != 0)
        goto fail_template;
    struct chat_special_tokens sp = {
        special_text(tok, tokenizer_bos(tok)), special_text(tok, tokenizer_eos(tok)),
        special_text(tok, tokenizer_unk(tok)), special_text(tok, tokenizer_pad(tok)),
    };
    if (chat_template_context_defaults(ctx, &sp) != 0) {
        snprintf(err, sizeof(err), "out of memory");
        goto fail;
    }
    if (chat_template_render(t, ctx, &out, &len, err, sizeof(err)) != 0)
        goto fail_template;
    fwrite(out, 1, len, stdout);
    rc = 0;
    goto done;
fail_template:
    fprintf(stderr, "memra-tokenize: %s: %s\n", tmpl_name, err);
    goto done;
fail:
    fprintf(stderr, "memra-tokenize: %s\n", err);
done:
    free(out);
    free(src);
    chat_template_free(t);
    json_decref(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    enum mode mode = MODE_ENCODE;
    bool add_special = true, parse_special = true, render_special = false;
    const char *path = NULL, *bench_file = NULL, *chat_file = NULL, *template_file = NULL;
    int runs = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--decode")) {
            mode = MODE_DECODE;
        } else if (!strcmp(a, "--jsonl")) {
            mode = MODE_JSONL;
        } else if (!strcmp(a, "--bench") && i + 1 < argc) {
            mode = MODE_BENCH;
            bench_file = argv[++i];
        } else if (!strcmp(a, "--chat") && i + 1 < argc) {
            mode = MODE_CHAT;
            chat_file = argv[++i];
        } else if (!strcmp(a, "--template") && i + 1 < argc) {
            template_file = argv[++i];
        } else if (!strcmp(a, "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
            if (runs < 1)
                runs = 1;
        } else if (!strcmp(a, "--no-add-special")) {
            add_special = false;
        } else if (!strcmp(a, "--no-parse-special")) {
            parse_special = false;
        } else if (!strcmp(a, "--special")) {
            render_special = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        } else if (a[0] == '-' || path) {
            usage();
            return 2;
        } else {
            path = a;
        }
    }
    if (!path || (template_file && mode != MODE_CHAT)) {
        usage();
        return 2;
    }
    char err[512];
    struct tokenizer tok;
    double t0 = now_s();
    if (tokenizer_load(&tok, NULL, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-tokenize: %s\n", err);
        return 1;
    }
    double load_s = now_s() - t0;
    int rc = 1;
    switch (mode) {
    case MODE_ENCODE: rc = do_encode(&tok, add_special, parse_special); break;
    case MODE_DECODE: rc = do_decode(&tok, render_special); break;
    case MODE_BENCH: rc = do_bench(&tok, bench_file, runs, add_special, parse_special, load_s); break;
    case MODE_JSONL: rc = do_jsonl(&tok, add_special, parse_special); break;
    case MODE_CHAT: rc = do_chat(&tok, chat_file, template_file); break;
    }
    tokenizer_free(&tok);
    return rc;
}
