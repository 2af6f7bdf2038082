/* backend/cuda/cuda_logits_out.c — what a step hands back for its logit rows
 * (host C), shared by the decode step (cuda_decode_step.c) and the general
 * path (cuda_forward.c): each row's sequence asked for its greedy pick
 * (backend_seq.argmax), a temperature draw, top-k or nucleus candidates
 * (backend_seq.draw), or the row itself. The picks, draws and candidates are
 * made on the device (sample.cu, topk.cu) and only they come down; the rows
 * asked for come down in runs; one sync, then each sequence gets its answer.
 * Softcapped models take every row to the host (the cap is applied there).
 */
#include "backend/cuda/backend_cuda_internal.h"

#include <string.h>

/* What sequence s wants from its logit rows. */
static enum cuda_be_out_kind out_kind(const struct cuda_backend *b, const struct backend_seq *s)
{
    if (!s->n_logits)
        return CUDA_BE_OUT_NONE;
    const bool dev = b->base.model->cfg.final_softcap <= 0.0f;
    if (dev && s->draw) /* n_logits 1 and no argmax (batch check) */
        return s->draw->top_k || s->draw->nucleus ? CUDA_BE_OUT_TOPK : CUDA_BE_OUT_DRAW;
    return dev && s->argmax ? CUDA_BE_OUT_ARGMAX : CUDA_BE_OUT_ROW;
}

void cuda_be_out_plan(struct cuda_backend *b, struct cuda_be_out *o)
{
    const uint32_t V = b->base.model->cfg.vocab, kn = V < CUDA_TOPK_MAX ? V : CUDA_TOPK_MAX; /* a nucleus row's k */
    memset(o->any, 0, sizeof(o->any));
    for (uint32_t k = 0; k < o->n; k++) {
        const struct backend_seq *s = o->seq[k];
        const enum cuda_be_out_kind kind = out_kind(b, s);
        const bool draw = kind == CUDA_BE_OUT_DRAW, topk = kind == CUDA_BE_OUT_TOPK;
        o->kind[k] = kind;
        o->any[kind] = true;
        b->h_draw[k] = (struct cuda_draw_params){draw ? s->draw->temperature : 1.0f, draw, draw ? s->draw->u : 0.0};
        const bool nuc = topk && s->draw->nucleus;
        b->h_topk[k] = (struct cuda_topk_params){topk ? s->draw->temperature : 1.0f,
                                                 !topk ? 0 : nuc ? kn : s->draw->top_k, nuc};
    }
}

void cuda_be_out_params_up(struct cuda_backend *b, const struct cuda_be_out *o, bool all_draws)
{
    if (all_draws || o->any[CUDA_BE_OUT_DRAW])
        cuda_upload_async(b->ctx, b->d_draw, b->h_draw, (size_t)o->n * sizeof(struct cuda_draw_params));
    if (o->any[CUDA_BE_OUT_TOPK])
        cuda_upload_async(b->ctx, b->d_topk, b->h_topk, (size_t)o->n * sizeof(struct cuda_topk_params));
}

/* Queue the top-k kernel over the first n logit rows and the copies of the
 * rows' candidates down: one copy over the rows that have some, each way. */
static void topk_run(struct cuda_backend *b, uint32_t n)
{
    const uint32_t V = b->base.model->cfg.vocab;
    cuda_topk_rows(b->ctx, b->logits, n, V, b->d_topk, b->d_topk_idx, b->d_topk_val, b->d_topk_greedy,
                   b->d_topk_stats);
    uint32_t r0 = n, r1 = 0;
    bool stats = false;
    for (uint32_t r = 0; r < n; r++) {
        if (b->h_topk[r].k)
            r0 = r < r0 ? r : r0, r1 = r + 1;
        stats = stats || b->h_topk[r].stats;
    }
    if (stats)
        cuda_download_async(b->ctx, b->h_topk_stats, b->d_topk_stats, (size_t)n * sizeof(struct cuda_topk_stats));
    if (r0 >= r1)
        return;
    const size_t off = (size_t)r0 * CUDA_TOPK_MAX, len = (size_t)(r1 - 1 - r0) * CUDA_TOPK_MAX + b->h_topk[r1 - 1].k;
    cuda_download_async(b->ctx, b->h_topk_idx + off, b->d_topk_idx + off, len * sizeof(int32_t));
    cuda_download_async(b->ctx, b->h_topk_val + off, b->d_topk_val + off, len * sizeof(float));
    cuda_download_async(b->ctx, b->h_topk_greedy, b->d_topk_greedy, (size_t)n * sizeof(int32_t));
}

void cuda_be_out_finish(struct cuda_backend *b, const struct cuda_be_out *o, bool queue_picks)
{
    const struct model_config *c = &b->base.model->cfg;
    const uint32_t n = o->n, V = c->vocab;
    if (queue_picks) { /* (the decode graph holds these two) */
        if (o->any[CUDA_BE_OUT_ARGMAX])
            cuda_argmax_rows(b->ctx, b->logits, n, V, b->d_argmax);
        if (o->any[CUDA_BE_OUT_DRAW]) /* after the argmax: the draw overwrites its rows */
            cuda_draw_rows(b->ctx, b->logits, n, V, b->d_draw, b->d_draw_out);
    }
    uint32_t zrow[DEC_G]; /* a nucleus row's z: its logit row, or a stash slot when another group follows */
    if (o->any[CUDA_BE_OUT_TOPK]) { /* after both, which leave its rows alone; it overwrites them */
        topk_run(b, n);
        for (uint32_t k = 0; k < n; k++) {
            zrow[k] = k;
            if (o->kind[k] != CUDA_BE_OUT_TOPK || !o->seq[k]->draw->nucleus || !b->out_stash)
                continue;
            MEMRA_ASSERT(b->z_stash && b->n_z < b->z_rows); /* one nucleus row a sequence, ≤ max_seqs */
            cuda_copy_d2d(b->ctx, b->z_stash + (uint64_t)b->n_z * V, b->logits + (uint64_t)k * V,
                          (size_t)V * sizeof(float));
            zrow[k] = CUDA_BE_Z_STASHED | b->n_z++;
        }
    }
    if (o->any[CUDA_BE_OUT_ARGMAX])
        cuda_download_async(b->ctx, b->h_argmax, b->d_argmax, (size_t)n * sizeof(int32_t));
    if (o->any[CUDA_BE_OUT_DRAW])
        cuda_download_async(b->ctx, b->h_draw_out, b->d_draw_out, (size_t)n * 2 * sizeof(int32_t));
    for (uint32_t k = 0; k < n;) { /* the rows that come down, in runs */
        if (o->kind[k] != CUDA_BE_OUT_ROW) {
            k++;
            continue;
        }
        uint32_t j = k + 1;
        while (j < n && o->kind[j] == CUDA_BE_OUT_ROW)
            j++;
        cuda_download_async(b->ctx, b->h_logits + (uint64_t)k * V, b->logits + (uint64_t)k * V,
                            (size_t)(j - k) * V * sizeof(float));
        k = j;
    }
    cuda_ctx_sync(b->ctx);
    for (uint32_t k = 0; k < n; k++) {
        const struct backend_seq *s = o->seq[k];
        const uint32_t r = o->row[k];
        switch (o->kind[k]) {
        case CUDA_BE_OUT_NONE:
            break;
        case CUDA_BE_OUT_ARGMAX:
            s->argmax[r] = b->h_argmax[k];
            break;
        case CUDA_BE_OUT_DRAW:
            s->draw->token = b->h_draw_out[2 * k];
            s->draw->used = b->h_draw_out[2 * k + 1] != 0;
            break;
        case CUDA_BE_OUT_TOPK: {
            const uint32_t kc = b->h_topk[k].k; /* top_k, or a nucleus row's min(CUDA_TOPK_MAX, vocab) */
            memcpy(s->draw->cand_idx, b->h_topk_idx + (size_t)k * CUDA_TOPK_MAX, kc * sizeof(int32_t));
            memcpy(s->draw->cand_val, b->h_topk_val + (size_t)k * CUDA_TOPK_MAX, kc * sizeof(float));
            s->draw->token = b->h_topk_greedy[k];
            s->draw->used = false;
            if (s->draw->nucleus) {
                s->draw->n_cand = kc;
                s->draw->total = b->h_topk_stats[k].total;
                s->draw->rest = b->h_topk_stats[k].rest;
                s->draw->row = zrow[k]; /* its z stays there until the next forward (cuda_be_draw_z) */
            }
            break;
        }
        case CUDA_BE_OUT_ROW: {
            float *dst = s->logits + (uint64_t)r * V;
            memcpy(dst, b->h_logits + (uint64_t)k * V, (size_t)V * sizeof(float));
            backend_logits_finish(c, dst, 1, s->argmax ? s->argmax + r : NULL); /* a softcapped model's pick */
            break;
        }
        }
    }
}
