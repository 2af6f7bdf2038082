/* cli/inspect.c — memra-inspect [--json] PATH: print a model file's metadata
 * and tensor table (name, dtype, shape, bytes) for a GGUF file, a safetensors
 * file or index, or a Hugging Face folder. Long arrays are shown by their first
 * items. With --json the whole view is printed as one JSON document (arrays in
 * full), which the Python reference tests compare against the gguf and
 * safetensors packages:
 *   {"path", "format", "gguf_version", "gguf_alignment" (GGUF only),
 *    "files": [path...], "config", "generation_config", "tokenizer_json",
 *    "tokenizer_config", "chat_template" (folders only, when present),
 *    "metadata": {key: {"type": "U32", "value": V} or
 *                      {"type": "ARR", "elem_type": "STR", "value": [V...]}},
 *    "tensors": [{"name", "dtype", "shape": [outermost first], "n_elements",
 *                 "n_bytes", "file": index into files, "offset": byte offset
 *                 of the data in that file}]}
 * V is a JSON number, bool or string; a U64 above INT64_MAX and a NaN or
 * infinite float are written as strings ("18446744073709551615", "nan",
 * "inf", "-inf"); a string that is not valid UTF-8 as {"hex": "..."}; nested
 * arrays as nested lists. Exit status: 0 ok, 1 the file could not be read
 * (the reason on stderr), 2 bad usage. */
#include "format/model_file.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_ITEMS 8
#define SHOW_CHARS 120

static void print_str(const struct mf_str *s)
{
    putchar('"');
    uint64_t n = s->len < SHOW_CHARS ? s->len : SHOW_CHARS;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s->ptr[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    if (s->len > n)
        printf("… (%" PRIu64 " bytes)", s->len);
}

static void print_scalar(enum mf_vtype t, const void *p)
{
    switch (t) {
    case MF_VT_U8: printf("%u", *(const uint8_t *)p); break;
    case MF_VT_I8: printf("%d", *(const int8_t *)p); break;
    case MF_VT_U16: printf("%u", *(const uint16_t *)p); break;
    case MF_VT_I16: printf("%d", *(const int16_t *)p); break;
    case MF_VT_U32: printf("%" PRIu32, *(const uint32_t *)p); break;
    case MF_VT_I32: printf("%" PRId32, *(const int32_t *)p); break;
    case MF_VT_U64: printf("%" PRIu64, *(const uint64_t *)p); break;
    case MF_VT_I64: printf("%" PRId64, *(const int64_t *)p); break;
    case MF_VT_F32: printf("%g", *(const float *)p); break;
    case MF_VT_F64: printf("%g", *(const double *)p); break;
    case MF_VT_BOOL: fputs(*(const bool *)p ? "true" : "false", stdout); break;
    case MF_VT_STR: print_str(p); break;
    default: fputs("?", stdout); break;
    }
}

static size_t elem_size(enum mf_vtype t)
{
    switch (t) {
    case MF_VT_U8: case MF_VT_I8: return 1;
    case MF_VT_BOOL: return sizeof(bool);
    case MF_VT_U16: case MF_VT_I16: return 2;
    case MF_VT_U32: case MF_VT_I32: case MF_VT_F32: return 4;
    case MF_VT_U64: case MF_VT_I64: case MF_VT_F64: return 8;
    case MF_VT_STR: return sizeof(struct mf_str);
    default: return sizeof(struct mf_value);
    }
}

static void print_value(const struct mf_value *v)
{
    switch (v->type) {
    case MF_VT_U8: case MF_VT_U16: case MF_VT_U32: case MF_VT_U64: printf("%" PRIu64, v->v.u64); break;
    case MF_VT_I8: case MF_VT_I16: case MF_VT_I32: case MF_VT_I64: printf("%" PRId64, v->v.i64); break;
    case MF_VT_F32: case MF_VT_F64: printf("%g", v->v.f64); break;
    case MF_VT_BOOL: fputs(v->v.b ? "true" : "false", stdout); break;
    case MF_VT_STR: print_str(&v->v.str); break;
    case MF_VT_ARR: {
        printf("[%s × %" PRIu64 "] [", mf_vtype_name(v->v.arr.type), v->v.arr.n);
        uint64_t n = v->v.arr.n < SHOW_ITEMS ? v->v.arr.n : SHOW_ITEMS;
        const char *p = v->v.arr.data;
        for (uint64_t i = 0; i < n; i++) {
            if (i)
                fputs(", ", stdout);
            if (v->v.arr.type == MF_VT_ARR)
                print_value((const struct mf_value *)(p + i * elem_size(MF_VT_ARR)));
            else
                print_scalar(v->v.arr.type, p + i * elem_size(v->v.arr.type));
        }
        fputs(v->v.arr.n > n ? ", …]" : "]", stdout);
        break;
    }
    default: fputs("?", stdout); break;
    }
}

/* --- --json --- */

static json_t *json_str_value(const struct mf_str *s)
{
    json_t *j = json_stringn(s->ptr, (size_t)s->len); /* NULL when not valid UTF-8 */
    if (j)
        return j;
    char *hex = malloc((size_t)s->len * 2 + 1);
    if (!hex)
        return json_null();
    for (uint64_t i = 0; i < s->len; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)s->ptr[i]);
    hex[2 * s->len] = '\0';
    j = json_pack("{s:s}", "hex", hex);
    free(hex);
    return j;
}

static json_t *json_u64(uint64_t x)
{
    if (x <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)x);
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRIu64, x);
    return json_string(buf);
}

static json_t *json_f64(double x)
{
    if (isnan(x))
        return json_string("nan");
    if (isinf(x))
        return json_string(x > 0 ? "inf" : "-inf");
    return json_real(x);
}

static json_t *json_scalar(enum mf_vtype t, const void *p)
{
    switch (t) {
    case MF_VT_U8: return json_integer(*(const uint8_t *)p);
    case MF_VT_I8: return json_integer(*(const int8_t *)p);
    case MF_VT_U16: return json_integer(*(const uint16_t *)p);
    case MF_VT_I16: return json_integer(*(const int16_t *)p);
    case MF_VT_U32: return json_integer(*(const uint32_t *)p);
    case MF_VT_I32: return json_integer(*(const int32_t *)p);
    case MF_VT_U64: return json_u64(*(const uint64_t *)p);
    case MF_VT_I64: return json_integer(*(const int64_t *)p);
    case MF_VT_F32: return json_f64(*(const float *)p);
    case MF_VT_F64: return json_f64(*(const double *)p);
    case MF_VT_BOOL: return json_boolean(*(const bool *)p);
    case MF_VT_STR: return json_str_value(p);
    default: return json_null();
    }
}

static json_t *json_value(const struct mf_value *v)
{
    switch (v->type) {
    case MF_VT_U8: case MF_VT_U16: case MF_VT_U32: case MF_VT_U64: return json_u64(v->v.u64);
    case MF_VT_I8: case MF_VT_I16: case MF_VT_I32: case MF_VT_I64: return json_integer(v->v.i64);
    case MF_VT_F32: case MF_VT_F64: return json_f64(v->v.f64);
    case MF_VT_BOOL: return json_boolean(v->v.b);
    case MF_VT_STR: return json_str_value(&v->v.str);
    case MF_VT_ARR: {
        json_t *a = json_array();
        const char *p = v->v.arr.data;
        size_t esz = elem_size(v->v.arr.type);
        for (uint64_t i = 0; i < v->v.arr.n; i++) {
            const void *e = p + i * esz;
            json_array_append_new(a, v->v.arr.type == MF_VT_ARR ? json_value(e) : json_scalar(v->v.arr.type, e));
        }
        return a;
    }
    default: return json_null();
    }
}

static int print_json(const struct model_file *mf)
{
    json_t *root = json_object();
    json_object_set_new(root, "path", json_string(mf->path));
    json_object_set_new(root, "format", json_string(mf_format_name(mf->format)));
    if (mf->format == MF_FORMAT_GGUF) {
        json_object_set_new(root, "gguf_version", json_integer(mf->gguf_version));
        json_object_set_new(root, "gguf_alignment", json_u64(mf->gguf_alignment));
    }
    json_t *files = json_array();
    for (uint32_t i = 0; i < mf->n_files; i++)
        json_array_append_new(files, json_string(mf->file_paths[i]));
    json_object_set_new(root, "files", files);
    if (mf->config)
        json_object_set(root, "config", mf->config);
    if (mf->generation_config)
        json_object_set(root, "generation_config", mf->generation_config);
    if (mf->tokenizer_json_path)
        json_object_set_new(root, "tokenizer_json", json_string(mf->tokenizer_json_path));
    if (mf->tokenizer_config_path)
        json_object_set_new(root, "tokenizer_config", json_string(mf->tokenizer_config_path));
    if (mf->chat_template_path)
        json_object_set_new(root, "chat_template", json_string(mf->chat_template_path));
    json_t *meta = json_object();
    for (uint64_t i = 0; i < mf->n_kvs; i++) {
        const struct mf_value *v = &mf->kvs[i].value;
        json_t *e = json_pack("{s:s}", "type", mf_vtype_name(v->type));
        if (v->type == MF_VT_ARR)
            json_object_set_new(e, "elem_type", json_string(mf_vtype_name(v->v.arr.type)));
        json_object_set_new(e, "value", json_value(v));
        json_object_set_new(meta, mf->kvs[i].key, e);
    }
    json_object_set_new(root, "metadata", meta);
    json_t *tensors = json_array();
    for (uint64_t i = 0; i < mf->n_tensors; i++) {
        const struct mf_tensor *t = &mf->tensors[i];
        json_t *shape = json_array();
        for (uint32_t d = 0; d < t->n_dims; d++)
            json_array_append_new(shape, json_u64(t->shape[d]));
        json_t *e = json_pack("{s:s, s:s, s:o, s:o, s:o, s:I, s:o}", "name", t->name, "dtype", dtype_name(t->dtype),
                              "shape", shape, "n_elements", json_u64(t->n_elements), "n_bytes", json_u64(t->n_bytes),
                              "file", (json_int_t)t->file_index,
                              "offset", json_u64((uint64_t)(t->data - mf->files[t->file_index].data)));
        json_array_append_new(tensors, e);
    }
    json_object_set_new(root, "tensors", tensors);
    int rc = json_dumpf(root, stdout, JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
    putchar('\n');
    json_decref(root);
    return rc == 0 ? 0 : 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: memra-inspect [--json] PATH\n"
               "  PATH: a .gguf file, a .safetensors file, a model.safetensors.index.json,\n"
               "        or a Hugging Face model folder\n"
               "prints the metadata and the tensor table (name, dtype, shape, bytes);\n"
               "--json prints everything (arrays in full) as one JSON document\n"
               "exit status: 0 ok, 1 the model could not be read, 2 bad usage\n");
}

int main(int argc, char **argv)
{
    bool as_json = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            as_json = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "memra-inspect: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (path) {
            fprintf(stderr, "memra-inspect: one PATH only\n");
            usage(stderr);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    struct model_file mf;
    char err[512];
    if (model_file_open(&mf, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-inspect: %s\n", err);
        return 1;
    }
    if (as_json) {
        int rc = print_json(&mf);
        model_file_close(&mf);
        return rc;
    }
    printf("path: %s\nformat: %s\n", mf.path, mf_format_name(mf.format));
    if (mf.format == MF_FORMAT_GGUF)
        printf("gguf version: %" PRIu32 "\nalignment: %" PRIu64 "\n", mf.gguf_version, mf.gguf_alignment);
    if (mf.n_files > 1)
        printf("shards: %" PRIu32 "\n", mf.n_files);
    if (mf.config) {
        char *s = json_dumps(mf.config, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("config.json: %s\n", s ? s : "?");
        free(s);
    }
    if (mf.tokenizer_json_path)
        printf("tokenizer.json: %s\n", mf.tokenizer_json_path);
    if (mf.tokenizer_config_path)
        printf("tokenizer_config.json: %s\n", mf.tokenizer_config_path);
    printf("\nmetadata (%" PRIu64 " keys):\n", mf.n_kvs);
    for (uint64_t i = 0; i < mf.n_kvs; i++) {
        printf("  %-40s %-4s = ", mf.kvs[i].key, mf_vtype_name(mf.kvs[i].value.type));
        print_value(&mf.kvs[i].value);
        putchar('\n');
    }
    uint64_t total = 0;
    printf("\ntensors (%" PRIu64 "):\n  %-48s %-8s %-24s %14s\n", mf.n_tensors, "name", "dtype", "shape", "bytes");
    for (uint64_t i = 0; i < mf.n_tensors; i++) {
        const struct mf_tensor *t = &mf.tensors[i];
        char shape[128];
        size_t off = 0;
        shape[0] = '\0';
        for (uint32_t d = 0; d < t->n_dims && off < sizeof(shape); d++)
            off += (size_t)snprintf(shape + off, sizeof(shape) - off, d ? "×%" PRIu64 : "%" PRIu64, t->shape[d]);
        printf("  %-48s %-8s %-24s %14" PRIu64 "\n", t->name, dtype_name(t->dtype), shape, t->n_bytes);
        total += t->n_bytes;
    }
    printf("\ntotal tensor bytes: %" PRIu64 " (%.1f MiB)\n", total, (double)total / (1024.0 * 1024.0));
    model_file_close(&mf);
    return 0;
}
