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

#include "fuzz_input.h"

#include "format/model_file.h"
#include "tokenizer_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size, NULL);
    if (!path)
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
