/* cli/template.c — memra-template --template FILE.jinja CONTEXT.json: render a
 * chat template with a JSON context (messages, tools, add_generation_prompt,
 * bos_token, ...) and print the result byte for byte. Errors go to stderr with
 * exit status 1 (2 for bad usage). Used by tests/py/test_templates.py to compare
 * against Python's jinja2. */
#include "template/template.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (n < cap)
            break;
        char *nb = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    const char *tpl_path = NULL, *ctx_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--template") == 0 && i + 1 < argc)
            tpl_path = argv[++i];
        else if (!ctx_path && argv[i][0] != '-')
            ctx_path = argv[i];
        else {
            fprintf(stderr, "usage: memra-template --template FILE.jinja CONTEXT.json\n");
            return 2;
        }
    }
    if (!tpl_path || !ctx_path) {
        fprintf(stderr, "usage: memra-template --template FILE.jinja CONTEXT.json\n");
        return 2;
    }
    size_t len;
    char *src = read_all(tpl_path, &len);
    if (!src) {
        fprintf(stderr, "%s: cannot read\n", tpl_path);
        return 1;
    }
    json_error_t jerr;
    json_t *ctx = json_load_file(ctx_path, JSON_DECODE_ANY, &jerr);
    if (!ctx) {
        fprintf(stderr, "%s:%d: %s\n", ctx_path, jerr.line, jerr.text);
        free(src);
        return 1;
    }
    char err[1024];
    struct chat_template *t;
    int rc = 1;
    if (chat_template_parse(&t, src, len, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s: %s\n", tpl_path, err);
    } else {
        char *out;
        size_t out_len;
        if (chat_template_render(t, ctx, &out, &out_len, err, sizeof(err)) < 0) {
            fprintf(stderr, "%s: %s\n", tpl_path, err);
        } else {
            fwrite(out, 1, out_len, stdout);
            free(out);
            rc = 0;
        }
        chat_template_free(t);
    }
    json_decref(ctx);
    free(src);
    return rc;
}
