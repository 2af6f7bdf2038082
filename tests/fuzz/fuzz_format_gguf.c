/* fuzz_format_gguf.c — libFuzzer target for the GGUF reader.
 *
 * The input becomes a file (a memfd, opened by model_file_open through
 * /proc/self/fd/N, so the real path → stat → mmap route is exercised). When the
 * open succeeds, every metadata value is walked (every string byte and array
 * element read) and every tensor's first and last byte touched: a reader that
 * hands out a pointer or length past the map fails here under ASan, not later
 * in a kernel. Seeds: tests/fuzz/corpus/fuzz_format_gguf/ (tools/make_fuzz_seeds.py).
 */
#include "format/model_file.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_input.h"

static volatile uint64_t g_sink;

static uint64_t walk_str(const struct mf_str *s)
{
    uint64_t h = s->len;
    for (uint64_t i = 0; i < s->len; i++)
        h = h * 31 + (unsigned char)s->ptr[i];
    return h + (unsigned char)s->ptr[s->len]; /* the terminating NUL */
}

static uint64_t walk_value(const struct mf_value *v)
{
    switch (v->type) {
    case MF_VT_STR: return walk_str(&v->v.str);
    case MF_VT_BOOL: return v->v.b;
    case MF_VT_F32: case MF_VT_F64: return (uint64_t)(v->v.f64 == v->v.f64);
    case MF_VT_ARR: {
        uint64_t h = v->v.arr.n;
        const struct mf_value *nested = v->v.arr.data;
        const struct mf_str *strs = v->v.arr.data;
        const uint8_t *bytes = v->v.arr.data;
        size_t esz = 0;
        switch (v->v.arr.type) {
        case MF_VT_U8: case MF_VT_I8: case MF_VT_BOOL: esz = 1; break;
        case MF_VT_U16: case MF_VT_I16: esz = 2; break;
        case MF_VT_U32: case MF_VT_I32: case MF_VT_F32: esz = 4; break;
        case MF_VT_U64: case MF_VT_I64: case MF_VT_F64: esz = 8; break;
        default: break;
        }
        for (uint64_t i = 0; i < v->v.arr.n; i++) {
            if (v->v.arr.type == MF_VT_ARR)
                h += walk_value(&nested[i]);
            else if (v->v.arr.type == MF_VT_STR)
                h += walk_str(&strs[i]);
            else
                for (size_t k = 0; k < esz; k++)
                    h += bytes[i * esz + k];
        }
        return h;
    }
    default: return v->v.u64;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size, NULL);
    if (!path)
        return 0;
    struct model_file mf;
    char err[512];
    if (model_file_open(&mf, path, err, sizeof(err)) != 0) {
        if (!err[0] || !strstr(err, path))
            __builtin_trap(); /* every failure says which file and why */
        return 0;
    }
    uint64_t h = 0;
    for (uint64_t i = 0; i < mf.n_kvs; i++) {
        h += strlen(mf.kvs[i].key);
        h += walk_value(&mf.kvs[i].value);
        if (model_file_find_kv(&mf, mf.kvs[i].key) != &mf.kvs[i].value)
            __builtin_trap();
    }
    for (uint64_t i = 0; i < mf.n_tensors; i++) {
        const struct mf_tensor *t = &mf.tensors[i];
        if (t->file_index >= mf.n_files)
            __builtin_trap();
        if (t->n_bytes)
            h += t->data[0] + t->data[t->n_bytes - 1];
        if (model_file_find_tensor(&mf, t->name) != t)
            __builtin_trap();
    }
    g_sink = h;
    model_file_close(&mf);
    return 0;
}
