/* fuzz_backend_cpu_model.c — libFuzzer target for the model registry and the
 * CPU forward over an untrusted GGUF file.
 *
 * The input becomes a file (a memfd opened through /proc/self/fd/N) and goes
 * through model_open: hyper-parameters from metadata, every tensor bound,
 * shape- and byte-checked. Whatever is refused must say why, naming the file.
 * A model that is accepted and small runs one forward of two tokens (the
 * first and last vocabulary ids) on the CPU backend, so every weight row the
 * binding handed out is read by the kernels: a binding that points past the
 * map, or a shape the kernels do not expect, fails here under ASan.
 * Seeds: tests/fuzz/corpus/fuzz_backend_cpu_model/ (the tiny and broken models
 * of tools/make_fixtures.py).
 */
#include "backend/cpu/backend_cpu.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_forward.h"
#include "fuzz_input.h"

static volatile float g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size, NULL);
    if (!path)
        return 0;
    struct model m;
    char err[512] = "";
    if (model_open(&m, path, err, sizeof(err)) != 0) {
        if (!strstr(err, path))
            __builtin_trap(); /* every refusal names the file */
        return 0;
    }
    const struct model_config *c = &m.cfg;
    if (fuzz_forward_is_small(c)) {
        struct backend *b;
        struct backend_config cfg = {.max_seqs = 1, .max_ctx = 8, .max_batch_tokens = 4, .n_threads = 1};
        if (backend_cpu_ops.init(&b, &m, &cfg, err, sizeof(err)) == 0) {
            int32_t toks[2] = {0, (int32_t)c->vocab - 1};
            float *logits = malloc(sizeof(float) * 2 * c->vocab);
            const uint32_t blocks[1] = {0}; /* max_ctx 8: one block */
            int32_t picks[2]; /* the greedy picks too (backend_seq.argmax) */
            struct backend_seq s = {blocks, 0, 2, toks, 2, logits, picks, NULL};
            struct backend_batch batch = {1, &s};
            if (logits && b->ops->forward(b, &batch, err, sizeof(err)) == 0)
                g_sink = logits[0] + logits[2 * c->vocab - 1] + (float)(picks[0] + picks[1]);
            free(logits);
            b->ops->free(b);
        }
    }
    model_close(&m);
    return 0;
}
