/* lab/cpu-bits/cpu_bits.c — the CPU backend's logits of one model, as raw f32,
 * to compare two builds bit for bit (lab/cpu-bits/compare.sh).
 *
 * Three prompts (37, 21 and 50 fixed token ids) prefilled in one batch with
 * every position's logits, then 8 decode steps alternating one sequence alone
 * and all three batched, each step's logits appended. Usage:
 *   cpu_bits MODEL OUT.bin THREADS KV_BF16(0|1) ACT_BF16(0|1)
 * Build against a build folder B (no CUDA needed) — compare.sh does this:
 *   gcc -O2 -std=c17 -Isrc lab/cpu-bits/cpu_bits.c -o cpu_bits -LB -Wl,--start-group B/libmemra_backend_cpu.a \
 *       B/libmemra_model.a B/libmemra_quant.a B/libmemra_format.a B/libmemra_core.a -Wl,--end-group -ljansson -lm -lpthread
 */
#include "backend/cpu/backend_cpu.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: cpu_bits MODEL OUT.bin THREADS KV_BF16 ACT_BF16\n");
        return 2;
    }
    char err[512];
    struct model m;
    if (model_open(&m, argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct backend *b = NULL;
    struct backend_config cfg = {.max_seqs = 4, .max_ctx = 128, .max_batch_tokens = 256,
                                 .n_threads = (uint32_t)atoi(argv[3]),
                                 .kv_type = atoi(argv[4]) ? BACKEND_KV_BF16 : BACKEND_KV_F32,
                                 .act_type = atoi(argv[5]) ? BACKEND_ACT_BF16 : BACKEND_ACT_F32};
    if (backend_cpu_ops.init(&b, &m, &cfg, err, sizeof err) != 0 || b->ops->load_weights(b, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const uint32_t V = m.cfg.vocab;
    uint32_t blk[4][8];
    for (uint32_t s = 0; s < 4; s++)
        backend_blocks_linear(blk[s], s, 128);
    FILE *f = fopen(argv[2], "wb");
    float *lg = malloc(sizeof(float) * 64 * V * 3);
    if (!f || !lg)
        return 1;
    int32_t toks[3][64];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 64; i++)
            toks[s][i] = (int32_t)((i * 7919 + s * 131 + 3) % V);
    const uint32_t len[3] = {37, 21, 50};
    struct backend_seq sq[3];
    float *p = lg;
    for (int s = 0; s < 3; s++) {
        sq[s] = (struct backend_seq){blk[s], 0, len[s], toks[s], len[s], p, NULL, NULL};
        p += (size_t)len[s] * V;
    }
    struct backend_batch bt = {3, sq};
    if (b->ops->forward(b, &bt, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    fwrite(lg, sizeof(float), (size_t)(p - lg), f);
    uint32_t pos[3] = {len[0], len[1], len[2]};
    for (uint32_t step = 0; step < 8; step++) {
        int32_t nt[3];
        bt.n_seqs = step % 2 ? 3 : 1; /* sequence 0 alone, then all three batched */
        for (uint32_t s = 0; s < bt.n_seqs; s++) {
            nt[s] = (int32_t)((step * 31 + s) % V);
            sq[s] = (struct backend_seq){blk[s], pos[s]++, 1, &nt[s], 1, lg + (size_t)s * V, NULL, NULL};
        }
        if (b->ops->forward(b, &bt, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        fwrite(lg, sizeof(float), (size_t)bt.n_seqs * V, f);
    }
    fclose(f);
    free(lg);
    b->ops->free(b);
    model_close(&m);
    return 0;
}
