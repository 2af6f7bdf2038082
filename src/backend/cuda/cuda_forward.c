/* backend/cuda/cuda_forward.c — the CUDA backend's general forward path (host
 * C): any batch of spans, laid out token after token in (T, ·) scratch; each
 * span's matmuls take the cuBLASLt GEMM, the tensor-core batched GEMV or the
 * decode GEMVs by its own length (matmul_multi), attention takes the split-K
 * decode kernel or the prefill kernel by span (attn_plan); decode-shaped
 * batches go to cuda_decode_step.c instead. backend_cuda.c's header comment
 * describes the choices and why a sequence's bits never depend on the batch.
 */
#include "backend/cuda/backend_cuda_internal.h"
#include "core/log.h"
#include "quant/quant.h"

#include <math.h>
#include <string.h>

/* Tokens [t0, t0 + T) through the GEMVs: ys[i] (T, rows) = x (T, cols) · wsᵀ,
 * 64 tokens a launch on the mmv (use_mmv), else 8; the quantized ones share
 * one preparation of x a chunk. */
static void matmul_gemv(struct cuda_backend *b, const struct cuda_weight *const *ws, float *const *ys, int n,
                        const float *x, uint32_t t0, uint32_t T)
{
    const uint32_t cols = ws[0]->cols;
    bool any_q = false;
    for (int i = 0; i < n; i++) {
        if (ws[i]->dtype == DTYPE_F32)
            cuda_fwd_matmul_f32(b->ctx, ws[i]->d, ws[i]->rows, cols, x + (uint64_t)t0 * cols, T,
                                ys[i] + (uint64_t)t0 * ws[i]->rows, ws[i]->scale);
        any_q |= is_quantized(ws[i]->dtype);
        if (use_mmv(b, ws[i], T))
            for (uint32_t c0 = t0; c0 < t0 + T; c0 += CUDA_MMV_MAX_BATCH) {
                const uint32_t nb = t0 + T - c0 < CUDA_MMV_MAX_BATCH ? t0 + T - c0 : CUDA_MMV_MAX_BATCH;
                cuda_mmv_sliced(b->ctx, ws[i]->dtype, ws[i]->d, ws[i]->rows, cols, x + (uint64_t)c0 * cols, nb,
                                ys[i] + (uint64_t)c0 * ws[i]->rows, ws[i]->scale, false, ws[i]->mmv_slices);
            }
    }
    for (uint32_t c0 = t0; c0 < t0 + T; c0 += CUDA_GEMV_MAX_BATCH) {
        const uint32_t nb = t0 + T - c0 < CUDA_GEMV_MAX_BATCH ? t0 + T - c0 : CUDA_GEMV_MAX_BATCH;
        const float *xc = x + (uint64_t)c0 * cols;
        if (any_q)
            cuda_gemv_prep_x(b->ctx, xc, cols, nb);
        for (int i = 0; i < n; i++) {
            const struct cuda_weight *w = ws[i];
            if (w->dtype == DTYPE_F32 || use_mmv(b, w, T))
                continue;
            if (w->bs) {
                cuda_gemv_bs(b->ctx, w->d, w->bs, w->rows, cols, xc, nb, ys[i] + (uint64_t)c0 * w->rows, w->scale);
                continue;
            }
            const bool q = is_quantized(w->dtype);
            /* quantized: the weight's K split, the same at every batch size (a row's bits with it) */
            cuda_gemv_variant(b->ctx, w->dtype, w->d, w->rows, cols, xc, nb, ys[i] + (uint64_t)c0 * w->rows,
                              w->scale, 0, q ? cuda_gemv_engine_ksplit(b->ctx, w == &b->output) : 0,
                              q ? CUDA_GEMV_X_PREPARED : 0);
        }
    }
}

/* Whether a span of len tokens takes the GEMM for this group of weights: all
 * of them have one and len reaches every one's threshold. A function of the
 * span's own length: a sequence's path does not depend on the rest of the
 * batch. */
static bool span_takes_gemm(const struct cuda_backend *b, const struct cuda_weight *const *ws, int n, uint32_t len)
{
    if (!b->gemm)
        return false;
    for (int i = 0; i < n; i++)
        if (ws[i]->gemm_min == 0 || len < ws[i]->gemm_min)
            return false;
    return true;
}

/* Tokens [t0, t0 + T) through the GEMM, one call a weight (the group's x
 * converted once); flags CUDA_GEMM_ACCUM (accum_ok: each adds into its y) or
 * CUDA_GEMM_Y_BF16 (gu_bf16_ok: each y written as bf16). */
static void matmul_gemm(struct cuda_backend *b, const struct cuda_weight *const *ws, float *const *ys, int n,
                        const float *x, uint32_t t0, uint32_t T, unsigned flags)
{
    const uint32_t cols = ws[0]->cols;
    /* x converted by an earlier weight of the group (f32 ones read x as is) or by the kernel that wrote x
     * (b->x_claim: the whole batch's rows): the others reuse it when their input type is the same */
    bool converted = t0 == 0 && b->x_claim == x && b->x_claim_T == T;
    if (converted) /* the producer wrote the parts only: x itself is not there to convert again */
        MEMRA_ASSERT(cuda_gemm_x_ready(b->gemm, ws[0]->dtype, x, cols, T));
    for (int i = 0; i < n; i++) {
        const unsigned fl = (converted ? CUDA_GEMM_X_PREPARED : 0) | flags;
        float *y = ys[i] + (uint64_t)t0 * ws[i]->rows;
        MEMRA_ASSERT(t0 == 0 || !(flags & CUDA_GEMM_Y_BF16)); /* (a bf16 y's rows are not at t0 · rows floats) */
        if (ws[i]->bs) /* FP8 with block scales */
            cuda_gemm_run_bs(b->gemm, ws[i]->d, ws[i]->bs, ws[i]->kept, ws[i]->rows, cols, x + (uint64_t)t0 * cols, T, y,
                             ws[i]->scale, fl);
        else
            cuda_gemm_run_kept(b->gemm, ws[i]->dtype, ws[i]->d, ws[i]->kept, ws[i]->rows, cols,
                               x + (uint64_t)t0 * cols, T, y, ws[i]->scale, fl);
        converted |= ws[i]->dtype != DTYPE_F32;
    }
}

/* Tokens [t0, t0 + T) through the GEMM (in_gemm) or the GEMVs. */
static void matmul_run(struct cuda_backend *b, const struct cuda_weight *const *ws, float *const *ys, int n,
                       const float *x, uint32_t t0, uint32_t T, bool in_gemm)
{
    if (in_gemm)
        matmul_gemm(b, ws, ys, n, x, t0, T, 0);
    else
        matmul_gemv(b, ws, ys, n, x, t0, T);
}

/* ys[i] (T, ws[i].rows) = x (T, cols) · ws[i]ᵀ for weights sharing the input,
 * T = Σ spans: each span (a sequence's tokens, consecutive in x) of enough
 * tokens takes the GEMM — consecutive such spans one GEMM over all their rows
 * (gemm.cu's algorithms have no split K, so a span's rows get the bits they
 * get alone: more rows a call, the weights read once for them all) — the
 * others, gathered into runs of consecutive spans, the GEMVs. */
static void matmul_multi(struct cuda_backend *b, const struct cuda_weight *const *ws, float *const *ys, int n,
                         const float *x, const uint32_t *spans, uint32_t n_spans)
{
    const uint32_t cols = ws[0]->cols;
    for (int i = 0; i < n; i++)
        MEMRA_ASSERT(ws[i]->cols == cols);
    uint32_t t = 0, run0 = 0; /* [run0, t): the pending run, of GEMM spans when in_gemm, else of GEMV ones */
    bool in_gemm = false;
    for (uint32_t s = 0; s < n_spans; s++) {
        const bool gemm = span_takes_gemm(b, ws, n, spans[s]);
        if (gemm != in_gemm) {
            if (t > run0)
                matmul_run(b, ws, ys, n, x, run0, t - run0, in_gemm);
            run0 = t;
            in_gemm = gemm;
        }
        t += spans[s];
    }
    if (t > run0)
        matmul_run(b, ws, ys, n, x, run0, t - run0, in_gemm);
    b->x_claim = NULL; /* a claim serves the matmul right after its producer only */
}

/* Whether every span of the batch takes the GEMM for weights ws (so one call over all T rows). */
static bool all_spans_gemm(const struct cuda_backend *b, const struct cuda_weight *const *ws, int n,
                           const uint32_t *spans, uint32_t n_spans)
{
    for (uint32_t s = 0; s < n_spans; s++)
        if (!span_takes_gemm(b, ws, n, spans[s]))
            return false;
    return true;
}

/* Whether the producer of the input of weights ws may write the GEMM's bf16
 * parts itself (cuda_gemm_x_claim): every span of the batch takes the GEMM
 * for them (so one call over all T rows reads x), none reads an f16 or f32 x,
 * and MEMRA_GEMM_X_PRODUCERS is not off (b->x_producers). */
static bool x_claim_ok(const struct cuda_backend *b, const struct cuda_weight *const *ws, int n, const uint32_t *spans,
                       uint32_t n_spans)
{
    if (!b->x_producers || !b->gemm)
        return false;
    for (int i = 0; i < n; i++)
        if (ws[i]->dtype == DTYPE_F16 || ws[i]->dtype == DTYPE_F32)
            return false;
    return all_spans_gemm(b, ws, n, spans, n_spans);
}

/* out (T, dim) = RMSNorm of x (+ residual, written back) · w, the input of the
 * weights ws: with its GEMM parts where x_claim_ok. */
static void norm_for(struct cuda_backend *b, const float *x, float *residual, const float *w, float *out, uint32_t T,
                     const struct cuda_weight *const *ws, int n, const uint32_t *spans, uint32_t n_spans)
{
    const struct model_config *c = &b->base.model->cfg;
    b->x_claim = NULL;
    if (!x_claim_ok(b, ws, n, spans, n_spans))
        cuda_rmsnorm_in(b->ctx, x, residual, w, out, T, c->dim, c->norm_eps);
    else if (cuda_rmsnorm_in_gemm(b->ctx, b->gemm, ws[0]->dtype, x, residual, w, out, T, c->dim, c->norm_eps))
        b->x_claim = out, b->x_claim_T = T; /* (else it ran as cuda_rmsnorm_in) */
}

static void matmul(struct cuda_backend *b, const struct cuda_weight *w, const float *x, float *y,
                   const uint32_t *spans, uint32_t n_spans)
{
    matmul_multi(b, &w, &y, 1, x, spans, n_spans);
}

/* Whether the block output of weight w (o, down) may go straight into the residual: its GEMM adds into it
 * (matmul_gemm's accum) with the bits of the RMSNorm's add after it — MEMRA_GEMM_ACCUM on, every span of the batch
 * takes the GEMM (one call over all T rows) and cuda_gemm_accum_takes. The norm then reads the residual alone: a
 * 4096-token pass reads and writes T·dim·4 bytes less twice a layer (lab/ncu-prefill-gpu.sh: the two norms were
 * 79 µs each a layer on the H100, at their bytes' floor). */
static bool accum_ok(const struct cuda_backend *b, const struct cuda_weight *w, const uint32_t *spans,
                     uint32_t n_spans)
{
    if (!b->gemm_accum || !b->gemm || !cuda_gemm_accum_takes(b->gemm, w->dtype, w->bs != NULL, w->rows, w->cols,
                                                             w->scale))
        return false;
    return all_spans_gemm(b, &w, 1, spans, n_spans);
}

/* A block's output through w into xb2 — for the next norm to add — or, where may_add (no post-norm: Gemma's
 * scale the output before the add) and accum_ok, added into the residual x by the GEMM; returns whether it was. */
static bool block_out(struct cuda_backend *b, const struct cuda_weight *w, const float *in, uint32_t T,
                      const uint32_t *spans, uint32_t n_spans, bool may_add)
{
    if (!may_add || !accum_ok(b, w, spans, n_spans)) {
        matmul(b, w, in, b->xb2, spans, n_spans);
        return false;
    }
    float *y = b->x;
    matmul_gemm(b, &w, &y, 1, in, 0, T, CUDA_GEMM_ACCUM);
    b->x_claim = NULL;
    return true;
}

/* Whether the gate and up GEMMs may write bf16 (CUDA_GEMM_Y_BF16) for the GLU to read (cuda_fwd_glu16_gemm), which
 * writes the down GEMM's x parts: bf16 activations, MEMRA_GEMM_GU_BF16 not off, every span takes the GEMM for gate,
 * up (one call over all T rows) and down (x_claim_ok), gate and up can write bf16 (one product) and down's x can be
 * claimed. Under bf16 activations every GLU rounds gate and up to bf16 first (glu_in), so these are the values the
 * f32 path computes from the same products; the GLU reads 4·T·ffn_dim bytes less and the GEMMs write as many less
 * (a 4096-token 8B layer: 470 MB → 235 MB read). */
static bool gu_bf16_ok(const struct cuda_backend *b, const struct cuda_weight *const *gu,
                       const struct cuda_weight *wd, uint32_t T, const uint32_t *spans, uint32_t n_spans)
{
    if (!b->gu_bf16 || b->base.cfg.act_type != BACKEND_ACT_BF16 || !x_claim_ok(b, &wd, 1, spans, n_spans) ||
        !all_spans_gemm(b, gu, 2, spans, n_spans))
        return false;
    for (int i = 0; i < 2; i++)
        if (gu[i]->bs || !cuda_gemm_y_bf16_takes(b->gemm, gu[i]->dtype, gu[i]->rows, gu[i]->cols))
            return false;
    return cuda_gemm_x_claim_takes(b->gemm, wd->dtype, b->hb, wd->cols, T);
}

/* xb2 (T, dim) = the MoE FFN of xb (router logits in moe_logits): spans of
 * ≥ moe_gemm_min tokens run their experts as GEMMs on their own rows
 * (cuda_moe_ffn_gemm: a function of the span alone), the tokens between them
 * the grouped GEMVs (cuda_moe_ffn, row by row the same bits in any batch). */
static void moe_ffn(struct cuda_backend *b, const struct cuda_moe_weights *w, const uint32_t *spans, uint32_t n_spans)
{
    const uint32_t E = w->n_experts, dim = w->dim;
    uint32_t t = 0, run0 = 0;
    for (uint32_t i = 0; i <= n_spans; i++) {
        const bool gemm = i < n_spans && b->gemm && b->moe_gemm_min && spans[i] >= b->moe_gemm_min;
        if ((gemm || i == n_spans) && t > run0)
            cuda_moe_ffn(b->ctx, w, b->moe, b->moe_logits + (uint64_t)run0 * E, b->xb + (uint64_t)run0 * dim, t - run0,
                         b->xb2 + (uint64_t)run0 * dim, 0);
        if (i == n_spans)
            break;
        if (gemm) {
            cuda_moe_ffn_gemm(b->ctx, b->gemm, w, b->moe, b->moe_logits + (uint64_t)t * E, b->xb + (uint64_t)t * dim,
                              spans[i], b->xb2 + (uint64_t)t * dim);
            run0 = t + spans[i];
        }
        t += spans[i];
    }
}

/* Positions, table offsets and the concatenated block tables of the batch,
 * and its token ids, into the staging buffers, then up to the device
 * (d_meta: [0, T) positions, [T, 2T) offsets into [2T, 2T + n_ids) block
 * ids, then the T token ids); the embedding rows gathered on the device from
 * them (embed.cu, the decode step's gather: the same values as
 * model_embed_row), or where the table is not on the device made on the host
 * and uploaded. */
static void embed_upload(struct cuda_backend *b, const struct backend_batch *batch, uint32_t T)
{
    const struct model *m = b->base.model;
    const uint32_t dim = m->cfg.dim;
    uint32_t g = 0, n_ids = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t nb = backend_kv_blocks_for((uint64_t)s->pos + s->n_tokens);
        MEMRA_ASSERT(n_ids + nb <= b->tables_max); /* batch_check: ≤ max_seqs sequences within max_ctx */
        memcpy(b->h_meta + 2 * T + n_ids, s->blocks, nb * sizeof(uint32_t));
        for (uint32_t t = 0; t < s->n_tokens; t++, g++) {
            if (!b->d_embd)
                model_embed_row(m, s->tokens[t], b->h_x + (uint64_t)g * dim);
            b->h_meta[g] = s->pos + t;
            b->h_meta[T + g] = n_ids;
        }
        n_ids += nb;
    }
    g = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++)
        for (uint32_t t = 0; t < batch->seqs[i].n_tokens; t++)
            b->h_meta[2 * T + n_ids + g++] = (uint32_t)batch->seqs[i].tokens[t];
    cuda_upload(b->ctx, b->d_meta, b->h_meta, ((size_t)T * 3 + n_ids) * 4);
    if (b->d_embd)
        cuda_embed_gather(b->ctx, m->tok_embd.dtype, b->d_embd, m->tok_embd.row_bytes, dim,
                          (const int32_t *)(b->d_meta + 2 * T + n_ids), T, b->embd_scale, b->x);
    else
        cuda_upload(b->ctx, b->x, b->h_x, (size_t)T * dim * 4);
}

/* ---- attention ----------------------------------------------------------------
 * How each sequence's attention runs is decided from its own span only, so a
 * sequence's bits never depend on the rest of the batch or on the path (the
 * decode step's rows and the general path's one-token spans run the same
 * kernel). */

/* Rows [t0, t0 + n) through the split-K decode kernel, attn_rows a launch;
 * tok_pos, tok_table: device (≥ t0 + n), table offsets into kv->tables. */
void cuda_be_attn_rows(struct cuda_backend *b, const float *q, const struct cuda_attn_kv *kv, const uint32_t *tok_pos,
                       const uint32_t *tok_table, uint32_t t0, uint32_t n, float scale, uint32_t window, bool prep)
{
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    MEMRA_ASSERT(!prep || (t0 == 0 && n <= b->attn_rows)); /* the prepared vectors are the launch's rows */
    for (uint32_t o = 0; o < n; o += b->attn_rows) {
        const uint32_t t = t0 + o, nr = n - o < b->attn_rows ? n - o : b->attn_rows;
        cuda_attn_decode(b->ctx, q + (uint64_t)t * b->q_dim, b->att + (uint64_t)t * b->q_dim, nr, tok_pos + t,
                         tok_table + t, ad, *kv, scale, window, b->attn_part, prep);
    }
}

/* The general path's plan: one token → a decode row; a longer span → the
 * prefill kernel unless MEMRA_ATTN=rows or the head_dim is one it lacks, else
 * decode rows. Consecutive decode rows form runs. Prefill spans go up once per
 * forward, grouped into launches: the spans that are not split in the first,
 * the split ones packed so that each launch's partials fit attn_part
 * (attn_rows·CUDA_ATTN_SPLITS row-splits; one split span always fits: n ≤
 * attn_rows or n ≤ 128, splits ≤ 16). Needs h_meta filled by embed_upload
 * (table offsets at [T, 2T)). */
static void attn_plan(struct cuda_backend *b, const struct backend_batch *batch, uint32_t T)
{
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    const bool prefill = b->attn_mode != CUDA_BE_ATTN_MODE_ROWS && cuda_attn_prefill_supported(ad);
    const uint32_t cap = b->attn_rows * CUDA_ATTN_SPLITS;
    uint32_t *runs = b->h_attn_runs, nr = 0, g = 0, n_one = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t n = s->n_tokens;
        if (prefill && n > 1) {
            n_one += cuda_attn_prefill_splits(s->pos, n) == 1;
        } else if (nr > 0 && runs[2 * nr - 2] + runs[2 * nr - 1] == g) {
            runs[2 * nr - 1] += n;
        } else if (n > 0) {
            runs[2 * nr] = g;
            runs[2 * nr + 1] = n;
            nr++;
        }
        g += n;
    }
    b->n_attn_runs = nr;
    /* spans: the unsplit ones at [0, n_one) (launch 0), the split ones after them */
    uint32_t *L = b->h_attn_launch, nl = 0, one = 0, slot = n_one, used = cap;
    if (n_one > 0) {
        L[0] = L[1] = L[2] = 0;
        L[3] = 1;
        nl = 1;
    }
    g = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t n = s->n_tokens, q0 = g;
        g += n;
        if (!prefill || n < 2)
            continue;
        struct cuda_attn_span sp = {.q0 = q0, .n = n, .pos0 = s->pos, .table = b->h_meta[T + q0]};
        sp.splits = cuda_attn_prefill_splits(s->pos, n);
        uint32_t *l = L;
        if (sp.splits == 1) {
            b->h_attn_spans[one++] = sp;
        } else {
            if (used + n * sp.splits > cap) { /* a new launch */
                L[4 * nl] = slot;
                L[4 * nl + 1] = L[4 * nl + 2] = 0;
                L[4 * nl + 3] = 1;
                nl++;
                used = 0;
            }
            l = &L[4 * (nl - 1)];
            sp.part0 = used;
            used += n * sp.splits;
            b->h_attn_spans[slot++] = sp;
        }
        l[1]++;
        l[2] = n > l[2] ? n : l[2];
        l[3] = sp.splits > l[3] ? sp.splits : l[3];
    }
    b->n_attn_launches = nl;
    if (slot > 0)
        cuda_upload(b->ctx, b->d_attn_spans, b->h_attn_spans, slot * sizeof(*b->h_attn_spans));
}

/* att (T, q_dim) = attention of q over one layer's KV as attn_plan decided; with att16 (att_claim's) the one
 * launch writes it there as bf16 instead. */
static void attention(struct cuda_backend *b, const struct cuda_attn_kv *kv, const uint32_t *tok_pos,
                      const uint32_t *tok_table, float scale, uint32_t window, uint16_t *att16)
{
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    if (att16) {
        const uint32_t *l = b->h_attn_launch;
        cuda_attn_prefill_bf16(b->ctx, b->q, att16, b->d_attn_spans + l[0], l[1], l[2], ad, *kv, scale, window);
        return;
    }
    for (uint32_t r = 0; r < b->n_attn_runs; r++)
        cuda_be_attn_rows(b, b->q, kv, tok_pos, tok_table, b->h_attn_runs[2 * r], b->h_attn_runs[2 * r + 1], scale, window,
                          false);
    for (uint32_t i = 0; i < b->n_attn_launches; i++) {
        const uint32_t *l = &b->h_attn_launch[4 * i];
        /* launch 0 holds the unsplit spans (l[3] 1), every later one split spans only (attn_plan) */
        (l[3] > 1 ? cuda_attn_prefill_split : cuda_attn_prefill)(b->ctx, b->q, b->att, b->d_attn_spans + l[0], l[1],
                                                                 l[2], l[3], ad, *kv, scale, window,
                                                                 b->attn_mode == CUDA_BE_ATTN_MODE_EXACT,
                                                                 b->attn_part, b->attn_rows * CUDA_ATTN_SPLITS);
    }
}

/* With bf16 activations, where every span takes the o GEMM (x_claim_ok) and the layer's attention is one launch
 * of the wgmma kernel (no decode rows, no split span: cuda_attn_prefill_bf16_takes), the attention writes o's bf16
 * input itself — the bits of the rounding kernel after it, without that kernel's pass over att (f32 written, read,
 * bf16 written: a 4096-token H100 pass spent 1.0 ms in it) — : the claimed parts, else NULL. */
static uint16_t *att_claim(struct cuda_backend *b, const struct cuda_attn_kv *kv, const struct cuda_weight *wo,
                           uint32_t T, const uint32_t *spans, uint32_t n_spans)
{
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    if (b->base.cfg.act_type != BACKEND_ACT_BF16 || b->n_attn_runs || b->n_attn_launches != 1 ||
        !cuda_attn_prefill_bf16_takes(b->ctx, ad, *kv, b->attn_mode == CUDA_BE_ATTN_MODE_EXACT, b->h_attn_launch[3]) ||
        !x_claim_ok(b, &wo, 1, spans, n_spans))
        return NULL;
    uint16_t *lo = NULL, *hi = cuda_gemm_x_claim(b->gemm, wo->dtype, b->att, b->q_dim, T, &lo);
    return lo ? NULL : hi; /* (a low part: not bf16 activations' mode; the GEMM then converts att itself) */
}

/* A decode-shaped batch in groups of dec_g: a sequence's bits are those of
 * its group's graph, which equal the sequence's alone (the GEMVs and the mmv
 * give each token the same bits whatever the batch; kernel_forward checks
 * batch vs alone) — except that MEMRA_DECODE_MMV=auto runs a group of 1 on
 * the CUDA-core GEMV and larger ones on the mmv (logits within ~1e-6). */
static void decode_groups(struct cuda_backend *b, const struct backend_batch *batch)
{
    for (uint32_t g0 = 0; g0 < batch->n_seqs; g0 += b->dec_g) {
        const uint32_t n = batch->n_seqs - g0 < b->dec_g ? batch->n_seqs - g0 : b->dec_g;
        const struct backend_batch sub = {.n_seqs = n, .seqs = batch->seqs + g0};
        b->out_stash = g0 + n < batch->n_seqs; /* the next group's logits overwrite these */
        cuda_be_decode_step(b, &sub);
    }
}

static void general_forward(struct cuda_backend *b, const struct backend_batch *batch, bool more_after);

int cuda_be_forward(struct backend *base, const struct backend_batch *batch, char *err, size_t errlen)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    if (!b->kv)
        return err_set(err, errlen, "cuda backend: forward before load_weights");
    if (backend_batch_check(base, batch, err, errlen) != 0)
        return -1;
    b->n_z = 0;
    if (cuda_be_decode_shaped(b, batch)) {
        decode_groups(b, batch);
        return 0;
    }
    /* a mixed batch (MEMRA_DECODE_MIXED): its one-token sequences take the
     * decode step's graphs after the general path has run the rest, so a
     * decode token runs the same launches whether or not prompts prefill
     * beside it (the same kernels either way: the same bits) */
    uint32_t nd = 0, np = 0;
    if (b->dec_on && b->dec_mixed)
        for (uint32_t i = 0; i < batch->n_seqs; i++)
            nd += batch->seqs[i].n_tokens == 1;
    if (nd == 0) {
        general_forward(b, batch, false);
        return 0;
    }
    for (uint32_t i = 0; i < batch->n_seqs; i++) /* the spans first, then the decode rows, each in order */
        if (batch->seqs[i].n_tokens > 1)
            b->mixed_seqs[np++] = batch->seqs[i];
    for (uint32_t i = 0, j = np; i < batch->n_seqs; i++)
        if (batch->seqs[i].n_tokens == 1)
            b->mixed_seqs[j++] = batch->seqs[i];
    const struct backend_batch pre = {.n_seqs = np, .seqs = b->mixed_seqs};
    const struct backend_batch dec = {.n_seqs = nd, .seqs = b->mixed_seqs + np};
    general_forward(b, &pre, true);
    decode_groups(b, &dec);
    return 0;
}

/* Any batch through the general path; more_after: another group of logit
 * rows follows in this forward (its nucleus rows' z must be stashed). */
static void general_forward(struct cuda_backend *b, const struct backend_batch *batch, bool more_after)
{
    const struct backend *base = &b->base;
    const struct model *m = base->model;
    const struct model_config *c = &m->cfg;
    uint32_t T = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        T += batch->seqs[i].n_tokens;
        b->spans[i] = batch->seqs[i].n_tokens;
    }
    const uint32_t *spans = b->spans, n_spans = batch->n_seqs;
    embed_upload(b, batch, T);
    attn_plan(b, batch, T);
    const uint32_t *tok_pos = b->d_meta, *tok_table = b->d_meta + T, *blocks = b->d_meta + 2 * T;
    const struct cuda_attn_shape sh = {c->n_heads, c->n_kv_heads, c->head_dim};
    const uint64_t nx = (uint64_t)T * c->dim;

    /* Each block's residual add is made by the RMSNorm after it (cuda_rmsnorm_in with a residual: x += xb2
     * in the same float addition as cuda_fwd_add, so the same bits; one pass over x instead of two launches,
     * measured by lab/ncu-prefill-gpu.sh at 2 × 54 µs a layer of a 4096-token pass), or by the block's last GEMM
     * itself (block_out: the same bits again); pending: the feed-forward block's xb2 still to be added, by the
     * next layer's attention norm or after the last layer. */
    bool pending = false;
    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        const struct cuda_layer *D = &b->layers[l];
        /* attention block */
        const struct cuda_weight *qkv[3] = {&D->wq, &D->wk, &D->wv};
        norm_for(b, pending ? b->xb2 : b->x, pending ? b->x : NULL, D->attn_norm, b->xb, T, qkv, 3, spans, n_spans);
        float *qkv_out[3] = {b->q, b->k, b->v};
        matmul_multi(b, qkv, qkv_out, 3, b->xb, spans, n_spans);
        struct cuda_kv_view kv;
        struct cuda_attn_kv akv; /* spans as rows: not settled */
        cuda_be_kv_layer(b, l, blocks, tok_table, 0, &kv, &akv);
        cuda_fwd_qk_rope_kv(b->ctx, b->q, b->q, b->q_dim, b->k, b->v, b->kv_dim, T, tok_pos, D->bq, D->bk, D->bv,
                            D->q_norm, D->k_norm, D->inv_freq, c->rope_style == MODEL_ROPE_NEOX, c->norm_eps, sh, kv);
        const struct cuda_weight *wo = &D->wo;
        uint16_t *att16 = att_claim(b, &akv, wo, T, spans, n_spans);
        attention(b, &akv, tok_pos, tok_table, c->attn_scale, L->sliding ? c->sliding_window : 0, att16);
        b->x_claim = NULL;
        if (att16) {
            b->x_claim = b->att, b->x_claim_T = T; /* o's input written by the attention */
        } else if (b->n_attn_launches) { /* the prefill kernel's rows (decode rows come rounded) */
            if (b->base.cfg.act_type != BACKEND_ACT_BF16 || !x_claim_ok(b, &wo, 1, spans, n_spans))
                cuda_be_round_act(b, b->att, (uint64_t)T * b->q_dim);
            else if (cuda_fwd_round_bf16_gemm(b->ctx, b->gemm, wo->dtype, b->att, T, b->q_dim))
                b->x_claim = b->att, b->x_claim_T = T; /* (else it only rounded) */
        }
        const bool added = block_out(b, &D->wo, b->att, T, spans, n_spans, !D->post_attn_norm);
        if (D->post_attn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_attn_norm, b->xb2, T, c->dim, c->norm_eps);
        /* feed-forward block (the attention block's add made by its norm, unless its GEMM made it) */
        const float *fin = added ? b->x : b->xb2;
        float *fres = added ? NULL : b->x;
        if (c->n_experts > 0) { /* the router's logits, then the experts (moe.cu) */
            cuda_rmsnorm_in(b->ctx, fin, fres, D->ffn_norm, b->xb, T, c->dim, c->norm_eps);
            matmul(b, &D->router, b->xb, b->moe_logits, spans, n_spans);
            moe_ffn(b, &D->moe, spans, n_spans);
            pending = true;
        } else {
            const struct cuda_weight *gu[2] = {&D->w_gate, &D->w_up};
            norm_for(b, fin, fres, D->ffn_norm, b->xb, T, gu, 2, spans, n_spans);
            float *gu_out[2] = {b->hb, b->hb2};
            const struct cuda_weight *wd = &D->w_down;
            const bool gelu = c->act == MODEL_ACT_GELU_TANH;
            if (gu_bf16_ok(b, gu, wd, T, spans, n_spans)) {
                matmul_gemm(b, gu, gu_out, 2, b->xb, 0, T, CUDA_GEMM_Y_BF16);
                cuda_fwd_glu16_gemm(b->ctx, b->gemm, wd->dtype, b->hb, (const uint16_t *)b->hb,
                                    (const uint16_t *)b->hb2, T, c->ffn_dim, gelu);
                b->x_claim = b->hb, b->x_claim_T = T; /* down's x: the parts only */
            } else {
                matmul_multi(b, gu, gu_out, 2, b->xb, spans, n_spans);
                b->x_claim = NULL;
                if (!x_claim_ok(b, &wd, 1, spans, n_spans))
                    cuda_fwd_glu(b->ctx, b->hb, b->hb2, (uint64_t)T * c->ffn_dim, gelu);
                else if (cuda_fwd_glu_gemm(b->ctx, b->gemm, wd->dtype, b->hb, b->hb2, T, c->ffn_dim, gelu))
                    b->x_claim = b->hb, b->x_claim_T = T; /* (else it ran as cuda_fwd_glu) */
            }
            pending = !block_out(b, &D->w_down, b->hb, T, spans, n_spans, !D->post_ffn_norm);
        }
        if (D->post_ffn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_ffn_norm, b->xb2, T, c->dim, c->norm_eps);
    }
    if (pending)
        cuda_fwd_add(b->ctx, b->x, b->xb2, nx);

    /* logits: the last n_logits tokens of every sequence normed into
     * consecutive rows of xb, then the output matmul over up to dec_g rows at
     * a time on the decode step's kernels (for BF16 the mmv: one weight read
     * for the whole step's rows, not one a sequence), the greedy picks,
     * temperature draws and top-k candidates asked for made on the device,
     * and only the rows asked for brought down (cuda_logits_out.c;
     * softcapped models: every row, capped and picked on the host) */
    uint32_t g = 0, nrow = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        g += s->n_tokens;
        if (s->n_logits == 0)
            continue;
        cuda_rmsnorm_in(b->ctx, b->x + (uint64_t)(g - s->n_logits) * c->dim, NULL, b->out_norm,
                        b->xb + (uint64_t)nrow * c->dim, s->n_logits, c->dim, c->norm_eps);
        nrow += s->n_logits;
    }
    const uint32_t cap = b->dec_g; /* rows of b->logits and h_logits; ≤ DEC_G */
    uint32_t si = 0, sr = 0;       /* the sequence and row of the next logit row */
    for (uint32_t k0 = 0; k0 < nrow; k0 += cap) {
        const uint32_t nr = nrow - k0 < cap ? nrow - k0 : cap;
        const struct cuda_weight *out = &b->output;
        matmul_gemv(b, &out, &b->logits, 1, b->xb + (uint64_t)k0 * c->dim, 0, nr);
        struct cuda_be_out o = {.n = nr};
        for (uint32_t k = 0; k < nr; k++) {
            while (sr >= batch->seqs[si].n_logits)
                si++, sr = 0;
            o.seq[k] = &batch->seqs[si], o.row[k] = sr++;
        }
        cuda_be_out_plan(b, &o);
        cuda_be_out_params_up(b, &o, false);
        b->out_stash = more_after || k0 + nr < nrow; /* the next chunk's logits overwrite these */
        cuda_be_out_finish(b, &o, true);
    }
    cuda_ctx_sync(b->ctx);
}
