/* fuzz_format_safetensors.c — libFuzzer target for the safetensors reader.
 *
 * The input becomes a file: a memfd reached through a symlink named
 * /tmp/memra-fuzz-PID.safetensors (model_file_open picks the reader by the
 * name, so the path must end in .safetensors; no bytes touch the disk). When
 * the open succeeds, every metadata string is read to its NUL and every
 * tensor's first and last byte touched, and every name must find itself in the
 * index. Seeds: tests/fuzz/corpus/fuzz_format_safetensors/ (tools/make_fuzz_seeds.py).
 */
#include "format/model_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_input.h"

static volatile uint64_t g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size, ".safetensors");
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
        const struct mf_value *v = &mf.kvs[i].value;
        if (v->type != MF_VT_STR || v->v.str.ptr[v->v.str.len] != '\0')
            __builtin_trap();
        for (uint64_t k = 0; k < v->v.str.len; k++)
            h += (unsigned char)v->v.str.ptr[k];
        if (model_file_find_kv(&mf, mf.kvs[i].key) != v)
            __builtin_trap();
    }
    for (uint64_t i = 0; i < mf.n_tensors; i++) {
        const struct mf_tensor *t = &mf.tensors[i];
        if (t->file_index >= mf.n_files || t->n_dims > MF_MAX_DIMS)
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
