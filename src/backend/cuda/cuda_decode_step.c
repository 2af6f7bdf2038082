/* backend/cuda/cuda_decode_step.c — the CUDA backend's decode step (host C):
 * batches of sequences × one token, the steady state of generation, as one
 * CUDA graph per batch size (the section comment below has the details).
 * Called by cuda_be_forward (cuda_forward.c) in groups of b->dec_g.
 */
#include "backend/cuda/backend_cuda_internal.h"
#include "core/log.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* ---- decode step ------------------------------------------------------------
 * A batch of T ≤ dec_g sequences × 1 token (the steady state of generation)
 * runs here instead of the general path: the step's inputs (token ids,
 * positions, block-table offsets, block tables) go up in ONE async copy from
 * pinned memory into fixed device buffers (d_dec), the whole forward — the
 * embedding gather (embed.cu), every layer, the final norm and the logits
 * GEMV — replays as a CUDA graph of that T, captured at load for every T
 * (cuda_be_decode_capture_all: a capture in the first burst of requests cost
 * its steps more than the graph saves them), and
 * the logit rows asked for come down in async copies to pinned memory; the
 * only host sync of a step is the one before reading them. The graph stays
 * valid across steps because no kernel's launch configuration depends on the
 * positions (attention and RoPE read them from d_dec) and every pointer it
 * holds is fixed (d_dec, the scratch, the KV pool, the GEMV activation scratch
 * reserved at load for the largest n × 8, the mmv's for every shape at 64, so
 * neither moves). dec_g is 64 when every matmul of the model has the
 * tensor-core batched GEMV (BF16 weights), else 8 (the CUDA-core GEMV's batch).
 *
 * Fewer launches per layer: the residual add is fused into the next RMSNorm
 * (cuda_rmsnorm with a residual), the RMSNorm and the activation write the
 * quantized GEMVs' prepared x themselves (cuda_rmsnorm_prep, cuda_glu_prep),
 * so no prep kernel runs before q/k/v, gate/up, down or the logits. Every
 * output element is computed by the same float operations as the general
 * path (the fused kernels are the same kernels; a + b = b + a exactly), so a
 * sequence's logits are bit-identical whichever path or batch serves it.
 * A lone token (T = 1, on the CUDA-core GEMV) runs q/k/v as one GEMV and
 * gate/up as one, over the fused allocations of the layer (cuda_layer.qkv /
 * .gu), writing into qkv1 / gu1 instead of q, k, v / hb, hb2 — same bits,
 * two and one launches fewer a layer (MEMRA_DECODE_FUSE=off: one a matrix);
 * when v's type differs from q's and k's (Q4_K_M's Q6_K v), q|k is the fused
 * one and v runs beside it on the side stream (side_v), or after it. A batch
 * on the tensor-core GEMV runs q|k|v as one launch (cuda_layer.qkv_join,
 * MEMRA_DECODE_QKV) into qkv_dec's rows —
 * q, k and v take that launch's K slices wherever they run alone, so the
 * bits are theirs (cuda_mmv_join_slices); RoPE reads q from those rows and
 * writes it rotated into q, k and v with the row stride — else k|v as one
 * launch, and gate|up as one, (cuda_layer.kv_join / .gu_join) into rows of
 * both members side by side (kv_dec, gu_dec: RoPE reads k and v with a row
 * stride, the activation reads gate and up from one row into hb) — where one
 * launch gives every row the bits of its member's own (cuda_mmv_rows_join).
 * H200, 8B BF16, 64 rows: q|k|v 20-22 µs a layer against q beside k|v; the
 * step +3.7 % (bench/RESULTS.md, thirty-first run). On that path the
 * activation runs in gate|up's epilogue, written as down's A rows
 * (cuda_mmv_glu, MEMRA_DECODE_GLU; the same float operations, so the same
 * bits): no activation launch and no gate|up rows in memory.
 * The attention writes its output prepared for a quantized o-projection
 * (cuda_attn_decode's prep), so no prep kernel runs before it either.
 * A step whose every row is at or past the decode attention's head-split
 * bound (cuda_attn_decode_hsplit_below: 256 positions for one row of 32
 * heads) replays a second graph of its T (graphs_deep), whose attention takes
 * the kv-head grid instead of one CTA a query head of which most would exit
 * at once (cuda_attn_kv.pos_min; same bits).
 * Every kernel of the step is launched with programmatic dependent launch
 * (cuda_common.cuh, MEMRA_PDL); the attention is told its keys and values
 * before each row's position are settled (one token a sequence).
 * MEMRA_CUDA_GRAPH=0 runs the same step eagerly (no graph); MEMRA_CUDA_DECODE=0
 * sends decode batches down the general path (both for measurements). */

static bool group_quantized(const struct cuda_weight *const *ws, int n)
{
    for (int i = 0; i < n; i++)
        if (is_quantized(ws[i]->dtype))
            return true;
    return false;
}

/* Whether the kernel that makes the input of a group whose first weight is w
 * writes the wgmma GEMV's A rows too (cuda_rmsnorm_in_split,
 * cuda_fwd_glu_rows_split): a batch on that GEMV, MEMRA_DECODE_FUSE on and
 * the shapes the fused kernels take (dec_fuse). */
static bool split_for(const struct cuda_backend *b, const struct cuda_weight *w, uint32_t T)
{
    return b->dec_fuse && b->fuse_w && w->dtype != DTYPE_F32 && use_mmv(b, w, T) &&
           cuda_mmv_takes_split(b->ctx, w->dtype, w->rows, w->cols);
}

/* Whether a batch of T runs its joined k | v GEMV on the side stream beside
 * q's (MEMRA_DECODE_SIDE, default on): both read A rows a producer wrote
 * (split_for), and a block of each fits on one SM — their launch shapes at
 * up to 32 A rows' worth of tokens (64 with bf16 activations: one A row a
 * token). Each takes the bits it takes alone (every launch shape gives the
 * same); the two small GEMVs share the time their fixed costs took in turn. */
static bool side_kv(const struct cuda_backend *b, uint32_t T)
{
    return b->dec_side && (T <= 32 || b->base.cfg.act_type == BACKEND_ACT_BF16);
}

/* Whether a lone token runs v's GEMV on the side stream beside q|k's, where
 * v's type is not q|k's (Q4_K_M's Q6_K v in half the layers: one GEMV each,
 * MEMRA_DECODE_SIDE as side_kv): when the norm has prepared x for both
 * (prepared), so neither writes what the other reads. v's small grid then
 * runs in q|k's tail instead of paying its own fill and drain after it; the
 * same kernels, so the same bits. H200, random 8B Q4_K_M, tg128 with f32
 * activations 420.7-421.2 → 423.7-423.9 tok/s; beside a lab form of the GEMV
 * +0.5-1.4 % at tg128 and +0.7-1.7 % at tg128@d4096, f32 and bf16
 * activations (bench/RESULTS.md, fifty-eighth run). */
static bool side_v(const struct cuda_backend *b, bool prepared)
{
    return b->dec_side && prepared;
}

/* Whether a lone token's fused q|k[|v] GEMV f is asked to rotate q and k and
 * write k and v into the cache in its epilogue (MEMRA_DECODE_ROPE;
 * cuda_fwd_gemv_rope_kv): a quantized GEMV, adjacent pairs, no biases, no
 * q/k norms. Its kernel then says whether it took it (the int8 tensor-core
 * GEMV, and by default the dp4a ones at ≥ 2 rows a warp); where it did, no
 * RoPE kernel runs between it and the attention — the same bits. H100,
 * random 8B, off → default, two rounds: Q4_K_M tg128 374.5-375.6 → 383.3-383.7
 * tok/s, tg128@d4096 343.5-343.8 → 353.3-353.5; Q8_0 280.8-281.6 → 288.5-288.7,
 * 265.0-265.2 → 268.7 (f32 activations; bf16 +2.2-3.1 %; RESULTS sixtieth run). */
static bool rope_in_gemv(const struct cuda_backend *b, const struct cuda_layer *D, const struct cuda_weight *f)
{
    return b->dec_rope > 0 && is_quantized(f->dtype) && !use_mmv(b, f, 1) && !D->bq && !D->bk && !D->bv &&
           !D->q_norm && !D->k_norm && b->base.model->cfg.rope_style != MODEL_ROPE_NEOX;
}

/* ys[i] (T, rows) = x (T, cols) · ws[i]ᵀ, T ≤ dec_g: one GEMV per weight;
 * prepared: x's quantized form is already in the context's scratch; split:
 * its wgmma GEMV A rows are (the producer wrote them: split_for), so the
 * first weight's cuda_mmv_next reads them. */
static void decode_matmul(struct cuda_backend *b, const struct cuda_weight *const *ws, float *const *ys, int n,
                          const float *x, uint32_t T, bool prepared, bool split)
{
    if (!prepared && group_quantized(ws, n))
        cuda_gemv_prep_x(b->ctx, x, ws[0]->cols, T);
    for (int i = 0; i < n; i++) {
        const struct cuda_weight *w = ws[i];
        if (w->dtype == DTYPE_F32) {
            cuda_fwd_matmul_f32(b->ctx, w->d, w->rows, w->cols, x, T, ys[i], w->scale);
            continue;
        }
        if (w->bs) { /* FP8 with block scales: 8 tokens a launch at most (the decode step's groups of 8) */
            cuda_gemv_bs(b->ctx, w->d, w->bs, w->rows, w->cols, x, T, ys[i], w->scale);
            continue;
        }
        if (use_mmv(b, w, T)) { /* the weights of a group read the same x */
            const bool same_x = i > 0 ? use_mmv(b, ws[i - 1], T) : split;
            cuda_mmv_sliced(b->ctx, w->dtype, w->d, w->rows, w->cols, x, T, ys[i], w->scale, same_x, w->mmv_slices);
            continue;
        }
        const bool q = is_quantized(w->dtype);
        cuda_gemv_variant(b->ctx, w->dtype, w->d, w->rows, w->cols, x, T, ys[i], w->scale, 0,
                          q ? cuda_gemv_engine_ksplit(b->ctx, w == &b->output) : 0,
                          q ? CUDA_GEMV_X_PREPARED : 0);
    }
}

/* Whether a step of T tokens runs the fused matrix f (q/k/v or gate/up) as
 * one GEMV: a lone token that takes the CUDA-core GEMV (batches and
 * MEMRA_DECODE_MMV=all keep the members, on the tensor-core GEMV). */
static bool lone_fused(const struct cuda_backend *b, const struct cuda_weight *f, const struct cuda_weight *member,
                       uint32_t T)
{
    return T == 1 && f->rows && !use_mmv(b, member, 1) && b->fuse_w;
}

/* Whether a batch of T runs the joined matrix j (cuda_layer.kv_join or
 * .gu_join: two members as one tensor-core GEMV, each row with its member's
 * bits): one launch fewer a layer, and the members' blocks share one wave
 * (H200, 64 tokens: k|v 2048 × 4096 12.6 µs against 2 × 9.8 alone, gate|up
 * 70.4 against 2 × 36.7). */
static bool joined(const struct cuda_backend *b, const struct cuda_weight *j, uint32_t T)
{
    return j->rows && use_mmv(b, j, T) && b->fuse_w;
}

/* xb (T, dim) = rmsnorm(x += add) · w (add NULL: x as is), preparing xb for the
 * quantized GEMVs when prep and the shapes allow (returns whether it did),
 * else writing its wgmma GEMV A rows too when the group's first weight is
 * next and takes them (split_for: never for a lone token's fused GEMV, whose
 * members are not on the mmv) (*split: whether it did). xb is a matmul's input:
 * rounded to bf16 with bf16 activations (as the GLUs' and the attention's
 * outputs are: cuda_ctx_set_act_bf16). */
static bool decode_norm(struct cuda_backend *b, const float *add, const float *w, uint32_t T, bool prep,
                        const struct cuda_weight *next, bool *split)
{
    const struct model_config *c = &b->base.model->cfg;
    const float *x = add ? add : b->x;
    float *res = add ? b->x : NULL;
    *split = false;
    if (prep && b->dec_fuse) {
        cuda_rmsnorm_prep(b->ctx, x, res, w, b->xb, T, c->dim, c->norm_eps);
        return true;
    }
    if (next && split_for(b, next, T))
        *split = cuda_rmsnorm_in_split(b->ctx, x, res, w, b->xb, T, c->dim, c->norm_eps);
    else
        cuda_rmsnorm_in(b->ctx, x, res, w, b->xb, T, c->dim, c->norm_eps);
    return false;
}

/* Everything a decode step queues on the stream after its input copy: what the
 * graph of T holds. Logits of the T tokens → b->logits (T, vocab). pos_min:
 * the attention launches' cuda_attn_kv.pos_min (a position every row is at or
 * past; 0: none known). */
static void decode_body(struct cuda_backend *b, uint32_t T, uint32_t pos_min)
{
    const struct model *m = b->base.model;
    const struct model_config *c = &m->cfg;
    const uint32_t *tok = b->d_dec, *tok_pos = b->d_dec + DEC_G, *tok_table = b->d_dec + 2 * DEC_G;
    const uint32_t *blocks = b->d_dec + 3 * DEC_G;
    if (b->d_embd) /* else the caller uploaded the rows into x */
        cuda_embed_gather(b->ctx, m->tok_embd.dtype, b->d_embd, m->tok_embd.row_bytes, c->dim, (const int32_t *)tok,
                          T, b->embd_scale, b->x);
    const struct cuda_attn_shape sh = {c->n_heads, c->n_kv_heads, c->head_dim};
    const bool gelu = c->act == MODEL_ACT_GELU_TANH;
    const float *pending = NULL; /* the last block's output, added into x by the next norm */
    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        const struct cuda_layer *D = &b->layers[l];
        const struct cuda_weight *qkv[3] = {&D->wq, &D->wk, &D->wv};
        float *qkv_out[3] = {b->q, b->k, b->v};
        uint32_t kv_ld = b->kv_dim, q_ld = b->q_dim; /* the row strides of k and v, and of q before RoPE */
        bool split; /* the norm (or the GLU) wrote the next group's wgmma A rows */
        bool prep = decode_norm(b, pending, D->attn_norm, T, group_quantized(qkv, 3), &D->wq, &split);
        struct cuda_kv_view kv;
        struct cuda_attn_kv akv; /* one token a sequence: settled */
        cuda_be_kv_layer(b, l, blocks, tok_table, 1, &kv, &akv);
        akv.pos_min = pos_min;
        bool roped = false; /* the q|k[|v] GEMV wrote q RoPE'd and the cache rows itself (rope_in_gemv) */
        if (lone_fused(b, &D->qkv, &D->wq, T)) { /* one GEMV into q | k | v, or into q | k and one into v */
            qkv_out[0] = b->qkv1, qkv_out[1] = b->qkv1 + b->q_dim, qkv_out[2] = qkv_out[1] + b->kv_dim;
            const struct cuda_weight *f = &D->qkv, *wv = &D->wv;
            const bool v_apart = f->rows == D->wq.rows + D->wk.rows; /* f is q|k: v is a GEMV of its own */
            const bool try_rope = rope_in_gemv(b, D, f);
            const struct cuda_rope_epi rp = {.q = b->q, .q_rows = D->wq.rows, .k_rows = D->wk.rows,
                                             .head_dim = c->head_dim, .tok_pos = tok_pos, .inv_freq = D->inv_freq,
                                             .kv = kv, .dp4a = b->dec_rope == 2};
            const bool side = v_apart && side_v(b, prep); /* v beside q|k (x prepared for both) */
            if (side) {
                cuda_ctx_side_begin(b->ctx);
                decode_matmul(b, &wv, &qkv_out[2], 1, b->xb, T, true, false);
                if (try_rope) /* (where q|k then declines, the RoPE kernel writes the same v again) */
                    cuda_fwd_v_cache(b->ctx, qkv_out[2], tok_pos, kv, b->kv_dim);
                cuda_ctx_side_end(b->ctx);
            } else if (try_rope && !prep) {
                cuda_gemv_prep_x(b->ctx, b->xb, f->cols, T), prep = true;
            }
            roped = try_rope && cuda_fwd_gemv_rope_kv(b->ctx, f->dtype, f->d, f->rows, f->cols, f->scale,
                                                      cuda_gemv_engine_ksplit(b->ctx, false), &rp);
            if (!roped)
                decode_matmul(b, &f, qkv_out, 1, b->xb, T, prep, false);
            if (side) {
                cuda_ctx_side_join(b->ctx);
            } else if (v_apart) { /* x is prepared now if q|k is quantized */
                decode_matmul(b, &wv, &qkv_out[2], 1, b->xb, T, prep || is_quantized(f->dtype), false);
                if (roped)
                    cuda_fwd_v_cache(b->ctx, qkv_out[2], tok_pos, kv, b->kv_dim);
            }
        } else if (joined(b, &D->qkv_join, T)) { /* one GEMV into qkv_dec's rows (q, k, v: q_dim + 2 kv_dim a row) */
            const struct cuda_weight *j = &D->qkv_join;
            decode_matmul(b, &j, &b->qkv_dec, 1, b->xb, T, prep, split);
            qkv_out[0] = b->qkv_dec, qkv_out[1] = b->qkv_dec + b->q_dim, qkv_out[2] = qkv_out[1] + b->kv_dim;
            kv_ld = q_ld = j->rows;
        } else if (joined(b, &D->kv_join, T)) { /* q, then k | v into kv_dec's rows (k, then v: 2 kv_dim a row) */
            const struct cuda_weight *qk[2] = {&D->wq, &D->kv_join};
            float *qk_out[2] = {b->q, b->kv_dec};
            if (split && side_kv(b, T)) { /* k | v on the side stream, q beside it */
                cuda_ctx_side_begin(b->ctx);
                decode_matmul(b, &qk[1], &qk_out[1], 1, b->xb, T, prep, true);
                cuda_ctx_side_end(b->ctx);
                cuda_mmv_set_narrow(b->ctx, true);
                decode_matmul(b, &qk[0], &qk_out[0], 1, b->xb, T, prep, true);
                cuda_mmv_set_narrow(b->ctx, false);
                cuda_ctx_side_join(b->ctx);
            } else {
                decode_matmul(b, qk, qk_out, 2, b->xb, T, prep, split);
            }
            qkv_out[1] = b->kv_dec, qkv_out[2] = b->kv_dec + b->kv_dim, kv_ld = 2 * b->kv_dim;
        } else {
            decode_matmul(b, qkv, qkv_out, 3, b->xb, T, prep, split);
        }
        /* q rotated into b->q (in place unless it came in q|k|v's rows) */
        if (!roped)
            cuda_fwd_qk_rope_kv(b->ctx, b->q, qkv_out[0], q_ld, qkv_out[1], qkv_out[2], kv_ld, T, tok_pos, D->bq,
                                D->bk, D->bv, D->q_norm, D->k_norm, D->inv_freq, c->rope_style == MODEL_ROPE_NEOX,
                                c->norm_eps, sh, kv);
        const struct cuda_weight *wo = &D->wo;
        const bool wo_prep = b->attn_prep && is_quantized(wo->dtype) && T <= b->attn_rows;
        cuda_be_attn_rows(b, b->q, &akv, tok_pos, tok_table, 0, T, c->attn_scale,
                          L->sliding ? c->sliding_window : 0, wo_prep);
        decode_matmul(b, &wo, &b->xb2, 1, b->att, T, wo_prep, false);
        if (D->post_attn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_attn_norm, b->xb2, T, c->dim, c->norm_eps);
        if (c->n_experts > 0) { /* the router's logits, then the experts (moe.cu: no host sync) */
            const struct cuda_weight *rw = &D->router;
            const bool q_router = is_quantized(rw->dtype), q_experts = is_quantized(D->moe.gu_type);
            prep = decode_norm(b, b->xb2, D->ffn_norm, T, q_router || q_experts, NULL, &split); /* one prep for both */
            decode_matmul(b, &rw, &b->moe_logits, 1, b->xb, T, prep || !q_router, false);
            cuda_moe_ffn(b->ctx, &D->moe, b->moe, b->moe_logits, b->xb, T, b->xb2, prep ? CUDA_GEMV_X_PREPARED : 0);
            if (D->post_ffn_norm)
                cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_ffn_norm, b->xb2, T, c->dim, c->norm_eps);
            pending = b->xb2;
            continue;
        }
        const struct cuda_weight *gu[2] = {&D->w_gate, &D->w_up};
        bool glu_in = false; /* the gate|up GEMV wrote the activation as down's A rows (cuda_mmv_glu) */
        float *gu_out[2] = {b->hb, b->hb2};
        const bool gu_rows = !lone_fused(b, &D->gu, &D->w_gate, T) && joined(b, &D->gu_join, T);
        prep = decode_norm(b, b->xb2, D->ffn_norm, T, group_quantized(gu, 2), gu_rows ? &D->gu_join : &D->w_gate,
                           &split);
        if (lone_fused(b, &D->gu, &D->w_gate, T)) { /* one GEMV into gate | up */
            gu_out[0] = b->gu1, gu_out[1] = b->gu1 + c->ffn_dim;
            const struct cuda_weight *f = &D->gu;
            decode_matmul(b, &f, gu_out, 1, b->xb, T, prep, false);
        } else if (gu_rows) { /* gate | up into gu_dec's rows; the activation into hb */
            const struct cuda_weight *f = &D->gu_join;
            /* or the activation in the GEMV's epilogue, as down's A rows (the same bits) */
            glu_in = b->dec_glu && !prep && split_for(b, &D->w_down, T) &&
                     cuda_mmv_glu(b->ctx, f->dtype, f->d, f->rows, f->cols, b->xb, T, b->hb, f->scale, gelu, split,
                                  f->mmv_slices);
            if (!glu_in)
                decode_matmul(b, &f, &b->gu_dec, 1, b->xb, T, prep, split);
        } else {
            decode_matmul(b, gu, gu_out, 2, b->xb, T, prep, split);
        }
        const struct cuda_weight *wd = &D->w_down;
        prep = b->dec_fuse && is_quantized(wd->dtype);
        split = false;
        if (glu_in) {
            split = true, prep = false;
        } else if (gu_rows) { /* the activation from gu_dec's rows into hb (and down's A rows when it takes them) */
            if (split_for(b, wd, T))
                split = cuda_fwd_glu_rows_split(b->ctx, b->hb, b->gu_dec, T, c->ffn_dim, gelu);
            else
                cuda_fwd_glu_rows(b->ctx, b->hb, b->gu_dec, T, c->ffn_dim, gelu);
            prep = false; /* a quantized down prepares hb itself */
        } else if (prep) {
            cuda_glu_prep(b->ctx, gu_out[0], gu_out[1], T, c->ffn_dim, gelu);
        } else {
            cuda_fwd_glu(b->ctx, gu_out[0], gu_out[1], (uint64_t)T * c->ffn_dim, gelu);
        }
        decode_matmul(b, &wd, &b->xb2, 1, gu_out[0], T, prep, split);
        if (D->post_ffn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_ffn_norm, b->xb2, T, c->dim, c->norm_eps);
        pending = b->xb2;
    }
    const struct cuda_weight *out = &b->output;
    bool split;
    const bool prep = decode_norm(b, pending, b->out_norm, T, is_quantized(out->dtype), out, &split);
    decode_matmul(b, &out, &b->logits, 1, b->xb, T, prep, split);
    if (c->final_softcap <= 0.0f) { /* softcapped rows: the host caps, then picks */
        cuda_argmax_rows(b->ctx, b->logits, T, c->vocab, b->d_argmax);
        cuda_draw_rows(b->ctx, b->logits, T, c->vocab, b->d_draw, b->d_draw_out); /* after the argmax: in place */
    }
}

/* The graph of T sequences (deep: the one whose attention takes the kv-head
 * grid, rows at or past pos_min), recorded (not run) the first time it is
 * asked for: at load, by cuda_be_decode_capture_all. */
static struct cuda_graph *decode_graph(struct cuda_backend *b, uint32_t T, bool deep, uint32_t pos_min)
{
    struct cuda_graph **g = deep ? &b->graphs_deep[T] : &b->graphs[T];
    if (!*g) {
        cuda_graph_begin(b->ctx);
        decode_body(b, T, pos_min);
        *g = cuda_graph_end(b->ctx);
    }
    return *g;
}

/* A batch the decode step takes: sequences of one token each (more than
 * dec_g of them run as consecutive groups of dec_g, see cuda_be_forward). */
bool cuda_be_decode_shaped(const struct cuda_backend *b, const struct backend_batch *batch)
{
    if (!b->dec_on || batch->n_seqs == 0)
        return false;
    for (uint32_t i = 0; i < batch->n_seqs; i++)
        if (batch->seqs[i].n_tokens != 1)
            return false;
    return true;
}

void cuda_be_decode_step(struct cuda_backend *b, const struct backend_batch *batch)
{
    const struct model *m = b->base.model;
    const struct model_config *c = &m->cfg;
    const uint32_t T = batch->n_seqs;
    uint32_t n_ids = 0;
    for (uint32_t i = 0; i < T; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t nb = backend_kv_blocks_for((uint64_t)s->pos + 1);
        MEMRA_ASSERT(n_ids + nb <= b->tables_max); /* batch_check: ≤ max_seqs sequences within max_ctx */
        b->h_dec[i] = (uint32_t)s->tokens[0];
        b->h_dec[DEC_G + i] = s->pos;
        b->h_dec[2 * DEC_G + i] = n_ids;
        memcpy(b->h_dec + 3 * DEC_G + n_ids, s->blocks, nb * sizeof(uint32_t));
        n_ids += nb;
        if (!b->d_embd)
            model_embed_row(m, s->tokens[0], b->h_xdec + (uint64_t)i * c->dim);
    }
    cuda_upload_async(b->ctx, b->d_dec, b->h_dec, ((size_t)3 * DEC_G + n_ids) * sizeof(uint32_t));
    /* what each row asks for; the draw parameters of every row go up (the graph's draw kernel reads all T) */
    struct cuda_be_out o = {.n = T};
    for (uint32_t i = 0; i < T; i++)
        o.seq[i] = &batch->seqs[i], o.row[i] = 0;
    cuda_be_out_plan(b, &o);
    cuda_be_out_params_up(b, &o, c->final_softcap <= 0.0f);
    if (!b->d_embd)
        cuda_upload_async(b->ctx, b->x, b->h_xdec, (size_t)T * c->dim * sizeof(float));
    /* every row at or past the attention's head-split bound: the graph whose attention takes the kv-head grid */
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    const uint32_t below = cuda_attn_decode_hsplit_below(b->ctx, ad, T);
    bool deep = below > 0; /* 0: this T never splits heads, one graph serves */
    for (uint32_t i = 0; i < T && deep; i++)
        deep = batch->seqs[i].pos >= below;
    const uint32_t pos_min = deep ? below : 0;
    if (b->dec_graphs)
        cuda_graph_launch(b->ctx, decode_graph(b, T, deep, pos_min));
    else
        decode_body(b, T, pos_min);
    cuda_be_out_finish(b, &o, false);
}

void cuda_be_decode_capture_all(struct cuda_backend *b)
{
    if (!b->dec_on || !b->dec_graphs)
        return;
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t n = 0;
    for (uint32_t T = 1; T <= b->dec_g; T++, n++) {
        decode_graph(b, T, false, 0);
        const uint32_t below = cuda_attn_decode_hsplit_below(b->ctx, ad, T);
        if (below > 0) {
            decode_graph(b, T, true, below);
            n++;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    log_info("cuda: %u decode graphs (1 to %u sequences) captured in %.2f s", n, b->dec_g,
             (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
}
