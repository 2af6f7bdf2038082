/* backend/cpu/cpu_backend.c — the CPU backend's lifecycle and forward driver.
 *
 * init sizes everything from the model and the backend_config (the KV pool,
 * scratch for max_batch_tokens, one attention row per thread) in a handful of
 * allocations; forward then walks the layers over the whole batch at once:
 * the batch's tokens are laid out one after another (sequence by sequence) and
 * every kernel works on that (T, ·) layout; only attention looks up each
 * token's block table and position.
 */
#include "backend/cpu/cpu_internal.h"
#include "core/checked.h"
#include "core/log.h"
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void cpu_free(struct backend *base)
{
    struct cpu_backend *b = (struct cpu_backend *)base;
    if (!b)
        return;
    threadpool_free(&b->pool);
    free(base->batch_mark);
    void *bufs[] = {b->kv, b->tok_pos, (void *)b->tok_blocks, b->x, b->xb, b->xb2, b->q, b->k, b->v, b->att,
                    b->hb, b->hb2, b->scores, b->rowbuf, b->router, b->topk_idx, b->topk_w, b->exp_start, b->exp_pairs,
                    b->ex_in, b->ex_tmp, b->ex_out};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        free(bufs[i]);
    free(b);
}

/* n floats (or other 4-byte elements), overflow-checked */
static void *alloc4(uint64_t a, uint64_t c, bool *ok)
{
    uint64_t n;
    if (checked_mul_u64(a, c, &n) || checked_mul_u64(n, 4, &n) || n > SIZE_MAX) {
        *ok = false;
        return NULL;
    }
    void *p = malloc(n ? n : 4);
    if (!p)
        *ok = false;
    return p;
}

static int cpu_init(struct backend **out, const struct model *m, const struct backend_config *cfg, char *err,
                    size_t errlen)
{
    *out = NULL;
    const struct model_config *c = &m->cfg;
    struct cpu_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return err_set(err, errlen, "cpu backend: out of memory");
    b->base.ops = &backend_cpu_ops;
    b->base.model = m;
    b->base.cfg = *cfg;
    struct backend_config *bc = &b->base.cfg;
    backend_config_defaults(bc, c);
    if (bc->max_seqs > 4096 || bc->max_ctx > MODEL_MAX_CTX || bc->max_batch_tokens > (1u << 20)) {
        cpu_free(&b->base);
        return err_set(err, errlen, "cpu backend: max_seqs %u / max_ctx %u / max_batch_tokens %u out of range",
                       bc->max_seqs, bc->max_ctx, bc->max_batch_tokens);
    }
    if (bc->kv_blocks == 0)
        bc->kv_blocks = bc->max_seqs * backend_kv_blocks_for(bc->max_ctx);
    if (bc->kv_blocks > (1u << 24)) {
        cpu_free(&b->base);
        return err_set(err, errlen, "cpu backend: kv_blocks %u out of range (at most %u)", bc->kv_blocks,
                       1u << 24);
    }
    if (threadpool_init(&b->pool, bc->n_threads, THREADPOOL_SPIN_NS, err, errlen) != 0) {
        cpu_free(&b->base);
        return -1;
    }
    bc->n_threads = b->pool.n_threads;

    b->q_dim = c->n_heads * c->head_dim;
    b->kv_dim = c->n_kv_heads * c->head_dim;
    b->ffn_max = c->ffn_dim > c->moe_ffn_dim ? c->ffn_dim : c->moe_ffn_dim;
    const uint64_t T = bc->max_batch_tokens;
    bool ok = true;
    uint64_t kv_rows;
    if (checked_mul_u64((uint64_t)bc->kv_blocks * c->n_layers * 2, BACKEND_KV_BLOCK, &kv_rows))
        ok = false;
    b->kv = alloc4(kv_rows, b->kv_dim, &ok);
    b->tok_pos = alloc4(T, 1, &ok);
    b->tok_blocks = calloc(T ? T : 1, sizeof(*b->tok_blocks));
    if (!b->tok_blocks)
        ok = false;
    b->x = alloc4(T, c->dim, &ok);
    b->xb = alloc4(T, c->dim, &ok);
    b->xb2 = alloc4(T, c->dim, &ok);
    b->q = alloc4(T, b->q_dim, &ok);
    b->k = alloc4(T, b->kv_dim, &ok);
    b->v = alloc4(T, b->kv_dim, &ok);
    b->att = alloc4(T, b->q_dim, &ok);
    b->hb = alloc4(T, b->ffn_max, &ok);
    b->hb2 = alloc4(T, b->ffn_max, &ok);
    b->scores = alloc4(bc->n_threads, bc->max_ctx, &ok);
    b->rowbuf_len = c->dim > b->q_dim ? c->dim : b->q_dim;
    if (b->ffn_max > b->rowbuf_len)
        b->rowbuf_len = b->ffn_max;
    b->rowbuf = alloc4((uint64_t)bc->n_threads * 4, b->rowbuf_len, &ok); /* four rows a thread (cpu_ops.c) */
    if (c->n_experts > 0) {
        const uint64_t K = c->n_experts_used;
        b->router = alloc4(T, c->n_experts, &ok);
        b->topk_idx = alloc4(T, K, &ok);
        b->topk_w = alloc4(T, K, &ok);
        b->exp_start = alloc4(c->n_experts + 1, 1, &ok);
        b->exp_pairs = alloc4(T, K, &ok);
        b->ex_in = alloc4(T, c->dim, &ok);
        b->ex_tmp = alloc4(T, c->dim, &ok);
        b->ex_out = alloc4(T * K, c->dim, &ok);
    }
    if (!ok) {
        cpu_free(&b->base);
        return err_set(err, errlen, "cpu backend: out of memory for %u KV blocks of %u positions (%u layers × %u "
                       "KV width)", bc->kv_blocks, BACKEND_KV_BLOCK, c->n_layers, c->n_kv_heads * c->head_dim);
    }
    *out = &b->base;
    return 0;
}

/* The weights are used in place from the map; read one byte per page so the
 * first tokens do not pay for page faults (and a truncated file shows now). */
static int cpu_load_weights(struct backend *base, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const struct model_file *mf = &base->model->file;
    volatile uint8_t sink = 0;
    for (uint64_t i = 0; i < mf->n_tensors; i++) {
        const struct mf_tensor *t = &mf->tensors[i];
        for (uint64_t o = 0; o < t->n_bytes; o += 4096)
            sink ^= t->data[o];
    }
    (void)sink;
    return 0;
}

static void cpu_kv_copy(struct backend *base, uint32_t dst, uint32_t src)
{
    struct cpu_backend *b = (struct cpu_backend *)base;
    MEMRA_ASSERT(dst < base->cfg.kv_blocks && src < base->cfg.kv_blocks);
    if (dst == src)
        return;
    const size_t n = (size_t)BACKEND_KV_BLOCK * b->kv_dim * sizeof(float);
    for (uint32_t l = 0; l < base->model->cfg.n_layers; l++)
        for (int kind = 0; kind < 2; kind++)
            memcpy(cpu_kv_block(b, l, kind, dst), cpu_kv_block(b, l, kind, src), n);
}

static void embed_tokens(struct cpu_backend *b, const struct backend_batch *batch)
{
    const struct model *m = b->base.model;
    uint32_t g = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        for (uint32_t t = 0; t < s->n_tokens; t++, g++) {
            model_embed_row(m, s->tokens[t], b->x + (uint64_t)g * m->cfg.dim);
            b->tok_pos[g] = s->pos + t;
            b->tok_blocks[g] = s->blocks;
        }
    }
}

static void add_rows(float *x, const float *y, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        x[i] += y[i];
}

static int cpu_forward(struct backend *base, const struct backend_batch *batch, char *err, size_t errlen)
{
    struct cpu_backend *b = (struct cpu_backend *)base;
    if (backend_batch_check(base, batch, err, errlen) != 0)
        return -1;
    const struct model *m = base->model;
    const struct model_config *c = &m->cfg;
    uint32_t T = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++)
        T += batch->seqs[i].n_tokens;

    embed_tokens(b, batch);
    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        /* attention block */
        cpu_rmsnorm(b, b->xb, b->x, L->attn_norm, c->dim, T);
        const struct model_weight *qkv[3] = {&L->wq, &L->wk, &L->wv};
        float *qkv_out[3] = {b->q, b->k, b->v};
        cpu_matmul_multi(b, qkv, qkv_out, 3, b->xb, T);
        cpu_attention(b, l, T);
        cpu_matmul(b, &L->wo, b->att, b->xb2, T);
        if (L->post_attn_norm)
            cpu_rmsnorm(b, b->xb2, b->xb2, L->post_attn_norm, c->dim, T);
        add_rows(b->x, b->xb2, (uint64_t)T * c->dim);
        /* feed-forward block */
        cpu_rmsnorm(b, b->xb, b->x, L->ffn_norm, c->dim, T);
        if (c->n_experts > 0) {
            cpu_moe(b, l, T);
        } else {
            const struct model_weight *gu[2] = {&L->w_gate, &L->w_up};
            float *gu_out[2] = {b->hb, b->hb2};
            cpu_matmul_multi(b, gu, gu_out, 2, b->xb, T);
            cpu_glu(b, b->hb, b->hb2, c->ffn_dim, T, b->base.cfg.act_type == BACKEND_ACT_BF16);
            cpu_matmul(b, &L->w_down, b->hb, b->xb2, T);
        }
        if (L->post_ffn_norm)
            cpu_rmsnorm(b, b->xb2, b->xb2, L->post_ffn_norm, c->dim, T);
        add_rows(b->x, b->xb2, (uint64_t)T * c->dim);
    }

    /* logits for the last n_logits tokens of each sequence */
    uint32_t g = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        g += s->n_tokens;
        if (s->n_logits == 0)
            continue;
        const float *h = b->x + (uint64_t)(g - s->n_logits) * c->dim;
        cpu_rmsnorm(b, b->xb, h, m->out_norm, c->dim, s->n_logits);
        cpu_matmul(b, &m->output, b->xb, s->logits, s->n_logits);
        backend_logits_finish(c, s->logits, s->n_logits, s->argmax);
    }
    return 0;
}

const struct backend_ops backend_cpu_ops = {
    .name = "cpu",
    .init = cpu_init,
    .load_weights = cpu_load_weights,
    .forward = cpu_forward,
    .kv_copy = cpu_kv_copy,
    .free = cpu_free,
};
