/* cli/template.c — memra-template --template FILE.jinja CONTEXT.json: render a
 * chat template with a JSON context (messages, tools, add_generation_prompt,
 * bos_token, ...) and print the result byte for byte. Errors go to stderr with
 * exit status 1 (2 for bad usage). Used by tests/py/test_templates.py to compare
 * against Python's jinja2. */
#include "core/mapped_file.h"
#include "template/template.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    char err[1024];
    struct mapped_file src;
    if (mapped_file_open(&src, tpl_path, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    json_error_t jerr;
    json_t *ctx = json_load_file(ctx_path, JSON_DECODE_ANY, &jerr);
    if (!ctx) {
        fprintf(stderr, "%s:%d: %s\n", ctx_path, jerr.line, jerr.text);
        mapped_file_close(&src);
        return 1;
    }
    struct chat_template *t;
    int rc = 1;
    if (chat_template_parse(&t, src.data ? (const char *)src.data : "", (size_t)src.size, err, sizeof(err)) < 0) {
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
    mapped_file_close(&src);
    return rc;
}
