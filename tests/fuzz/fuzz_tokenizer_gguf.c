/* fuzz_tokenizer_gguf.c — libFuzzer target for the GGUF tokenizer loader.
 *
 * The input becomes a file (a memfd reached through /proc/self/fd/N) opened
 * with model_file_open; when it is a GGUF, tokenizer_load reads its
 * tokenizer.ggml.* metadata (token, type, score and merge arrays, special ids,
 * pre-tokenizer name), which are untrusted like everything in the file. A
 * failed load must say which file and why; a tokenizer that loads is put
 * through tokenizer_exercise.h. Seeds: tests/fuzz/corpus/fuzz_tokenizer_gguf/
 * (tools/make_tokenizer_fuzz_seeds.py: one file per GGUF tokenizer model).
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/model_file.h"
#include "tokenizer_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("vocab.gguf", 0);
        if (fd < 0)
            return 0;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        return 0;
    char err[512] = "";
    struct model_file mf;
    if (model_file_open(&mf, path, err, sizeof(err)) != 0)
        return 0; /* the GGUF reader's own fuzzer checks its messages */
    struct tokenizer tok;
    if (tokenizer_load(&tok, &mf, NULL, err, sizeof(err)) != 0) {
        model_file_close(&mf);
        if (!err[0] || !strstr(err, path))
            __builtin_trap(); /* every failure says which file and why */
        return 0;
    }
    model_file_close(&mf); /* the tokenizer must not keep pointers into the file */
    exercise_tokenizer(&tok, data, size);
    tokenizer_free(&tok);
    return 0;
}
