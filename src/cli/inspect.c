/* cli/inspect.c — memra-inspect PATH: print a model file's metadata and tensor
 * table (name, dtype, shape, bytes) for a GGUF file, a safetensors file or
 * index, or a Hugging Face folder. Long arrays are shown by their first items. */
#include "format/model_file.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(stderr, "usage: memra-inspect PATH\n"
                        "  PATH: a .gguf file, a .safetensors file, a model.safetensors.index.json,\n"
                        "        or a Hugging Face model folder\n"
                        "prints the metadata and the tensor table (name, dtype, shape, bytes)\n");
        return argc == 2 ? 0 : 2;
    }
    struct model_file mf;
    char err[512];
    if (model_file_open(&mf, argv[1], err, sizeof(err)) != 0) {
        fprintf(stderr, "memra-inspect: %s\n", err);
        return 1;
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
