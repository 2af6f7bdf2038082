/* backend/cpu/cpu_moe.c — the mixture-of-experts FFN (Qwen3-MoE).
 *
 * Per token: model_moe_route (router logits → softmax over all experts → the
 * top-k, ties to the lower index → optionally renormalised). Tokens are then grouped by
 * expert so that each expert's matrices are read once per batch; each
 * (token, k) output is kept apart and the weighted sum over k is taken in rank
 * order, so a token's result does not depend on the rest of the batch.
 */
#include "backend/cpu/cpu_internal.h"
#include "core/log.h"

#include <math.h>
#include <string.h>

void cpu_moe(struct cpu_backend *b, uint32_t layer, uint32_t T)
{
    const struct model *m = b->base.model;
    const struct model_config *c = &m->cfg;
    const struct model_layer *L = &m->layers[layer];
    const uint32_t E = c->n_experts, K = c->n_experts_used, dim = c->dim, F = c->moe_ffn_dim;

    cpu_matmul(b, &L->router, b->xb, b->router, T);
    for (uint32_t t = 0; t < T; t++)
        model_moe_route(c, b->router + (uint64_t)t * E, b->topk_idx + (uint64_t)t * K, b->topk_w + (uint64_t)t * K);

    /* counting sort of (token, k) pairs by expert */
    memset(b->exp_start, 0, (E + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < T * K; i++)
        b->exp_start[b->topk_idx[i] + 1]++;
    for (uint32_t e = 0; e < E; e++)
        b->exp_start[e + 1] += b->exp_start[e];
    uint32_t *fill = b->exp_pairs; /* reuse: positions filled in order */
    for (uint32_t e = 0; e < E; e++) {
        uint32_t n = b->exp_start[e];
        for (uint32_t i = 0; i < T * K; i++)
            if (b->topk_idx[i] == e)
                fill[n++] = i;
    }

    for (uint32_t e = 0; e < E; e++) {
        const uint32_t s0 = b->exp_start[e], n = b->exp_start[e + 1] - s0;
        if (n == 0)
            continue;
        const struct model_expert *X = &L->experts[e];
        for (uint32_t i = 0; i < n; i++)
            memcpy(b->ex_in + (uint64_t)i * dim, b->xb + (uint64_t)(b->exp_pairs[s0 + i] / K) * dim,
                   dim * sizeof(float));
        const struct model_weight *gu[2] = {&X->gate, &X->up};
        float *ys[2] = {b->hb, b->hb2};
        cpu_matmul_multi(b, gu, ys, 2, b->ex_in, n);
        cpu_glu(b, b->hb, b->hb2, F, n, false); /* experts: f32 gate and up */
        cpu_matmul(b, &X->down, b->hb, b->ex_tmp, n);
        for (uint32_t i = 0; i < n; i++)
            memcpy(b->ex_out + (uint64_t)b->exp_pairs[s0 + i] * dim, b->ex_tmp + (uint64_t)i * dim,
                   dim * sizeof(float));
    }

    for (uint32_t t = 0; t < T; t++) {
        float *out = b->xb2 + (uint64_t)t * dim;
        memset(out, 0, dim * sizeof(float));
        for (uint32_t k = 0; k < K; k++) {
            const float w = b->topk_w[(uint64_t)t * K + k];
            const float *y = b->ex_out + ((uint64_t)t * K + k) * dim;
            for (uint32_t i = 0; i < dim; i++)
                out[i] += w * y[i];
        }
    }
}
