/* fuzz_tokenizer_json.c — libFuzzer target for the tokenizer.json loader.
 *
 * The input becomes a file (a memfd reached through /proc/self/fd/N, which the
 * loader takes for a tokenizer.json since it is neither a folder nor .gguf).
 * A failed load must say which file and why; a tokenizer that loads is put
 * through tokenizer_exercise.h. Seeds: tests/fuzz/corpus/fuzz_tokenizer_json/
 * (small valid tokenizer.json files exercising every supported component).
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_input.h"

#include "tokenizer_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size, NULL);
    if (!path)
        return 0;
    char err[512] = "";
    struct tokenizer tok;
    if (tokenizer_load(&tok, NULL, path, err, sizeof(err)) != 0) {
        if (!err[0] || !strstr(err, path))
            __builtin_trap(); /* every failure says which file and why */
        return 0;
    }
    exercise_tokenizer(&tok, data, size);
    tokenizer_free(&tok);
    return 0;
}
