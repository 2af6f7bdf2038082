/* backend/cuda/cuda_weights.c — the CUDA backend's load_weights (host C): every layer's norms, biases and
 * matrices onto the device, then the output and the embedding, the prefill GEMM's setup (cuda_gemm_setup.c) and
 * the KV pool (backend_cuda.c). A matrix goes up as stored where a GEMV kernel reads its type (block-scaled FP8
 * too, for the layers), else expanded to float32; a layer's q/k/v (and gate/up) back to back in one allocation
 * when they share type, width and scale (upload_fused: a lone token runs each group as one GEMV), joined for the
 * decode batches' tensor-core GEMV where one launch gives each row its member's bits (join_rows, join_qkv); a MoE
 * layer's experts stacked for the grouped GEMVs (upload_expert_kind). backend_cuda.c's header comment describes
 * the backend as a whole.
 */
#include "backend/cuda/backend_cuda_internal.h"
#include "quant/quant.h"

#include <stdlib.h>

static float *upload_vec(struct cuda_backend *b, const float *h, uint64_t n)
{
    if (!h)
        return NULL;
    float *d = cuda_be_dev_alloc(b, n * 4);
    cuda_upload(b->ctx, d, h, n * 4);
    return d;
}

/* Expand rows [r0, r0 + n) of w to float32 (block and tensor scales folded in). */
static int expand_rows(const struct model_weight *w, uint64_t r0, uint64_t n, float *dst)
{
    const uint64_t nbc = (w->cols + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK;
    for (uint64_t r = r0; r < r0 + n; r++) {
        float *row = dst + (r - r0) * w->cols;
        if (quant_dequantize_row(w->dtype, w->data + r * w->row_bytes, row, w->cols) != 0)
            return -1;
        if (w->block_scale) {
            const float *s = w->block_scale + (r / MODEL_FP8_BLOCK) * nbc;
            for (uint64_t i = 0; i < w->cols; i++)
                row[i] *= s[i / MODEL_FP8_BLOCK];
        }
        if (w->scale != 1.0f)
            for (uint64_t i = 0; i < w->cols; i++)
                row[i] *= w->scale;
    }
    return 0;
}

/* Whether w keeps the file's bytes on the device (a GEMV type) rather than
 * being expanded to float32. */
static bool weight_as_stored(const struct model_weight *w)
{
    return !w->block_scale && w->dtype != DTYPE_F32 && cuda_gemv_supported(w->dtype, w->rows, w->cols);
}

static void weight_init(struct cuda_backend *b, const struct model_weight *w, struct cuda_weight *o, void *d)
{
    o->rows = (uint32_t)w->rows;
    o->cols = (uint32_t)w->cols;
    o->gemm_min = 0; /* set by cuda_be_gemm_setup, with kept */
    o->kept = NULL;
    o->dtype = w->dtype;
    o->scale = w->scale;
    o->d = d;
    o->bs = NULL;
    cuda_upload(b->ctx, o->d, w->data, w->rows * w->row_bytes);
    o->mmv = b->mmv_mode != MMV_OFF && cuda_be_weight_mmv(w);
    o->mmv_slices = 0; /* the shape's own (join_qkv may give the joined launch's) */
    if (o->mmv)
        cuda_mmv_reserve(b->ctx, w->rows, w->cols);
}

/* The n weights src (q/k/v or gate/up) into one allocation, back to back, as
 * *fused (and each dst[i] pointing into it) when they are all kept as stored
 * with the same type, width and scale, each starting 16-byte aligned; else
 * returns false and uploads nothing. */
static bool upload_fused(struct cuda_backend *b, const struct model_weight *const *src, struct cuda_weight *const *dst,
                         int n, struct cuda_weight *fused)
{
    uint64_t rows = 0;
    for (int i = 0; i < n; i++) {
        const struct model_weight *w = src[i];
        if (!weight_as_stored(w) || w->dtype != src[0]->dtype || w->cols != src[0]->cols ||
            w->scale != src[0]->scale || (rows * w->row_bytes) % 16 != 0)
            return false;
        rows += w->rows;
    }
    if (rows > UINT32_MAX / 4 || !cuda_gemv_supported(src[0]->dtype, rows, src[0]->cols))
        return false;
    uint8_t *d = cuda_be_dev_alloc(b, rows * src[0]->row_bytes);
    for (int i = 0; i < n; i++) {
        weight_init(b, src[i], dst[i], d);
        d += src[i]->rows * src[i]->row_bytes;
    }
    *fused = *dst[0]; /* type, width, scale and d: the first member's */
    fused->rows = (uint32_t)rows;
    fused->mmv = false; /* batches keep the members on the tensor-core GEMV */
    return true;
}

/* The decode batches' joined matrix of two fused members a, b (one
 * allocation, b right after a) when both take the mmv and one launch gives
 * each row its member's bits (cuda_mmv_rows_join), and the first time a
 * layer joins, its output rows *out (DEC_G, a.rows + b.rows); else *j stays
 * unjoined. */
static void join_rows(struct cuda_backend *b, const struct cuda_weight *a, const struct cuda_weight *bw,
                      struct cuda_weight *j, float **out)
{
    uint64_t row_bytes;
    if (!a->mmv || !bw->mmv || dtype_row_bytes(a->dtype, a->cols, &row_bytes) != 0 ||
        (const uint8_t *)a->d + a->rows * row_bytes != (const uint8_t *)bw->d ||
        !cuda_mmv_rows_join(b->ctx, a->dtype, a->rows, bw->rows, a->cols))
        return;
    *j = *a;
    j->rows = a->rows + bw->rows;
    cuda_mmv_reserve(b->ctx, j->rows, j->cols);
    if (!*out)
        *out = cuda_be_dev_alloc(b, (uint64_t)DEC_G * j->rows * sizeof(float));
}

/* A decode batch's q|k|v as one wgmma launch (cuda_layer.qkv_join) when the
 * fused q|k|v holds all three and the kernel takes it and every member: q, k
 * and v take the joined launch's K slices alone too (mmv_slices), so each row
 * has one set of bits on every path; k|v is then not joined apart (its own
 * slices would differ). The first layer that joins allocates qkv_dec (DEC_G,
 * q|k|v rows). Returns whether it joined. */
static bool join_qkv(struct cuda_backend *b, struct cuda_layer *D)
{
    struct cuda_weight *m[3] = {&D->wq, &D->wk, &D->wv};
    const uint64_t rows = (uint64_t)D->wq.rows + D->wk.rows + D->wv.rows;
    if (!b->dec_qkv || D->qkv.rows != rows)
        return false;
    for (int i = 0; i < 3; i++)
        if (!m[i]->mmv || !cuda_mmv_takes_split(b->ctx, m[i]->dtype, m[i]->rows, m[i]->cols))
            return false;
    const uint32_t s = cuda_mmv_join_slices(b->ctx, D->qkv.dtype, rows, D->qkv.cols);
    if (s == 0)
        return false;
    D->qkv_join = D->qkv;
    D->qkv_join.mmv = true;
    for (int i = 0; i < 3; i++)
        m[i]->mmv_slices = (uint8_t)s;
    D->qkv_join.mmv_slices = (uint8_t)s;
    cuda_mmv_reserve(b->ctx, rows, D->qkv.cols);
    if (!b->qkv_dec)
        b->qkv_dec = cuda_be_dev_alloc(b, (uint64_t)DEC_G * rows * sizeof(float));
    return true;
}

/* Whether w is FP8 E4M3 with 128 × 128 block scales that the GEMV and GEMM read as stored (cuda_gemv_bs,
 * cuda_gemm_run_bs: the decode GEMV reads a byte a weight, against 4 expanded; a prefill copy kept by
 * MEMRA_GEMM_KEEP adds 4) — layer matrices and MoE experts (upload_expert_kind), MEMRA_FP8_BLOCK=native. */
static bool weight_fp8_block(const struct cuda_backend *b, const struct model_weight *w)
{
    return b->fp8_block && w->block_scale && w->dtype == DTYPE_F8_E4M3 &&
           cuda_gemv_supported(DTYPE_F8_E4M3, w->rows, w->cols) && cuda_gemm_supported(DTYPE_F8_E4M3, w->rows, w->cols);
}

/* w on the device: as stored (a GEMV type; with layer set, FP8 with block scales too: weight_fp8_block), else
 * expanded to float32. */
static int upload_weight(struct cuda_backend *b, const struct model_weight *w, struct cuda_weight *o, bool layer,
                         char *err, size_t errlen)
{
    if (w->rows > UINT32_MAX / 4 || w->cols > UINT32_MAX / 4)
        return err_set(err, errlen, "cuda backend: tensor '%s' too large", w->name);
    if (weight_as_stored(w)) {
        weight_init(b, w, o, cuda_be_dev_alloc(b, w->rows * w->row_bytes));
        return 0;
    }
    if (layer && weight_fp8_block(b, w)) {
        weight_init(b, w, o, cuda_be_dev_alloc(b, w->rows * w->row_bytes));
        const uint64_t nbs = (w->rows + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK *
                             ((w->cols + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK);
        float *bs = cuda_be_dev_alloc(b, nbs * 4);
        cuda_upload(b->ctx, bs, w->block_scale, nbs * 4);
        o->bs = bs;
        return 0;
    }
    o->bs = NULL;
    o->rows = (uint32_t)w->rows;
    o->cols = (uint32_t)w->cols;
    o->gemm_min = 0; /* set by cuda_be_gemm_setup, with kept */
    o->kept = NULL;
    /* float32 path, expanded in slices of ≤ 16 MiB */
    o->mmv = false;
    o->mmv_slices = 0;
    o->dtype = DTYPE_F32;
    o->scale = 1.0f;
    o->d = cuda_be_dev_alloc(b, w->rows * w->cols * 4);
    uint64_t per = ((uint64_t)16 << 20) / (w->cols * 4);
    per = per ? per : 1;
    float *tmp = malloc(per * w->cols * 4);
    if (!tmp)
        return err_set(err, errlen, "cuda backend: out of host memory expanding '%s'", w->name);
    for (uint64_t r = 0; r < w->rows; r += per) {
        const uint64_t n = w->rows - r < per ? w->rows - r : per;
        if (expand_rows(w, r, n, tmp) != 0) {
            free(tmp);
            return err_set(err, errlen, "cuda backend: tensor '%s': type %s cannot be expanded", w->name,
                           dtype_name(w->dtype));
        }
        cuda_upload(b->ctx, (float *)o->d + r * w->cols, tmp, n * w->cols * 4);
    }
    free(tmp);
    return 0;
}

/* Expert e's matrix i of one kind: kind 0 gate (i 0) or up (i 1), kind 1 down. */
static const struct model_weight *expert_weight(const struct model_layer *L, int kind, uint32_t e, uint32_t i)
{
    return kind ? &L->experts[e].down : i ? &L->experts[e].up : &L->experts[e].gate;
}

/* One kind of a MoE layer's experts (kind 0: gate and up, 1: down) stacked
 * for the grouped GEMVs (cuda_ops.h): expert e's rows at base + e·stride
 * (gate rows, then up rows). As stored when every expert's matrices of the
 * kind share type, width and scale and have a GEMV kernel — FP8 with block
 * scales too (weight_fp8_block, whole 128-row blocks), each matrix's scale
 * table then at bs + (e·per + i)·tab; else all expanded to float32. */
static int upload_expert_kind(struct cuda_backend *b, const struct model_layer *L, int kind,
                              struct cuda_moe_weights *o, char *err, size_t errlen)
{
    const struct model_config *c = &b->base.model->cfg;
    const uint32_t E = c->n_experts, per = kind == 0 ? 2 : 1;
    const struct model_weight *w0 = expert_weight(L, kind, 0, 0);
    bool stored = true, blocks = true;
    for (uint32_t e = 0; e < E; e++)
        for (uint32_t i = 0; i < per; i++) {
            const struct model_weight *w = expert_weight(L, kind, e, i);
            if (w->rows != w0->rows || w->cols != w0->cols)
                return err_set(err, errlen, "cuda backend: expert tensor '%s' is %llu×%llu, its layer's first is "
                               "%llu×%llu", w->name, (unsigned long long)w->rows, (unsigned long long)w->cols,
                               (unsigned long long)w0->rows, (unsigned long long)w0->cols);
            stored = stored && weight_as_stored(w) && w->dtype == w0->dtype && w->scale == w0->scale;
            blocks = blocks && weight_fp8_block(b, w) && w->scale == w0->scale && w->rows % MODEL_FP8_BLOCK == 0;
        }
    const bool raw = stored || blocks; /* the file's bytes, a byte a weight for block-scaled FP8 */
    const uint64_t rows = w0->rows, cols = w0->cols, row_bytes = raw ? w0->row_bytes : cols * 4;
    if (rows * per > UINT32_MAX / 4 || cols > UINT32_MAX / 4)
        return err_set(err, errlen, "cuda backend: tensor '%s' too large", w0->name);
    const uint64_t stride = (rows * per * row_bytes + 255) & ~(uint64_t)255;
    const uint64_t tab = blocks ? rows / MODEL_FP8_BLOCK * ((cols + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK) : 0;
    uint8_t *d = cuda_be_dev_alloc(b, stride * E);
    float *bs = blocks ? cuda_be_dev_alloc(b, E * per * tab * 4) : NULL;
    float *tmp = raw ? NULL : malloc(rows * cols * 4);
    if (!raw && !tmp)
        return err_set(err, errlen, "cuda backend: out of host memory expanding '%s'", w0->name);
    for (uint32_t e = 0; e < E; e++)
        for (uint32_t i = 0; i < per; i++) {
            const struct model_weight *w = expert_weight(L, kind, e, i);
            uint8_t *dst = d + e * stride + i * rows * row_bytes;
            if (raw) {
                cuda_upload(b->ctx, dst, w->data, rows * row_bytes);
            } else if (expand_rows(w, 0, rows, tmp) == 0) {
                cuda_upload(b->ctx, dst, tmp, rows * row_bytes);
            } else {
                free(tmp);
                return err_set(err, errlen, "cuda backend: tensor '%s': type %s cannot be expanded", w->name,
                               dtype_name(w->dtype));
            }
            if (blocks)
                cuda_upload(b->ctx, bs + (e * per + i) * tab, w->block_scale, tab * 4);
        }
    free(tmp);
    const enum dtype t = raw ? w0->dtype : DTYPE_F32;
    const float scale = raw ? w0->scale : 1.0f;
    if (kind == 0)
        o->gate_up = d, o->gu_stride = stride, o->gu_type = t, o->gu_scale = scale, o->gu_bs = bs,
        o->gu_bs_stride = per * tab;
    else
        o->down = d, o->down_stride = stride, o->down_type = t, o->down_scale = scale, o->down_bs = bs,
        o->down_bs_stride = tab;
    return 0;
}

/* A MoE layer's router and experts. */
static int upload_moe(struct cuda_backend *b, const struct model_layer *L, struct cuda_layer *D, char *err,
                      size_t errlen)
{
    const struct model_config *c = &b->base.model->cfg;
    D->moe = (struct cuda_moe_weights){.n_experts = c->n_experts, .k = c->n_experts_used, .dim = c->dim,
                                       .ffn = c->moe_ffn_dim, .norm_topk = c->moe_norm_topk};
    char why[128];
    if (upload_weight(b, &L->router, &D->router, false, err, errlen) != 0 ||
        upload_expert_kind(b, L, 0, &D->moe, err, errlen) != 0 ||
        upload_expert_kind(b, L, 1, &D->moe, err, errlen) != 0)
        return -1;
    if (!cuda_moe_supported(&D->moe, why, sizeof(why)))
        return err_set(err, errlen, "cuda backend: experts of '%s': %s, use MEMRA_BACKEND=cpu", L->experts[0].gate.name,
                       why);
    return 0;
}

int cuda_be_load_weights(struct backend *base, char *err, size_t errlen)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    const struct model *m = base->model;
    const struct model_config *c = &m->cfg;
    uint64_t n_max = c->dim > c->ffn_dim ? c->dim : c->ffn_dim;
    n_max = n_max > b->q_dim ? n_max : b->q_dim;
    n_max = n_max > c->moe_ffn_dim ? n_max : c->moe_ffn_dim;
    cuda_fwd_reserve_gemv_scratch(b->ctx, n_max);
    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        struct cuda_layer *D = &b->layers[l];
        D->attn_norm = upload_vec(b, L->attn_norm, c->dim);
        D->ffn_norm = upload_vec(b, L->ffn_norm, c->dim);
        D->post_attn_norm = upload_vec(b, L->post_attn_norm, c->dim);
        D->post_ffn_norm = upload_vec(b, L->post_ffn_norm, c->dim);
        D->bq = upload_vec(b, L->bq, b->q_dim);
        D->bk = upload_vec(b, L->bk, b->kv_dim);
        D->bv = upload_vec(b, L->bv, b->kv_dim);
        D->q_norm = upload_vec(b, L->q_norm, c->head_dim);
        D->k_norm = upload_vec(b, L->k_norm, c->head_dim);
        D->inv_freq = upload_vec(b, L->inv_freq, c->head_dim / 2);
        const struct model_weight *src[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        struct cuda_weight *dst[7] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->w_gate, &D->w_up, &D->w_down};
        const bool moe = c->n_experts > 0; /* no dense FFN: the experts instead */
        /* q|k|v, else q|k (Q4_K_M: v in Q6_K on half the layers) */
        const int fq = upload_fused(b, src, dst, 3, &D->qkv) ? 3 : upload_fused(b, src, dst, 2, &D->qkv) ? 2 : 0;
        const bool fg = !moe && upload_fused(b, src + 4, dst + 4, 2, &D->gu);
        if (fq == 3 && !join_qkv(b, D))
            join_rows(b, &D->wk, &D->wv, &D->kv_join, &b->kv_dec);
        if (fg)
            join_rows(b, &D->w_gate, &D->w_up, &D->gu_join, &b->gu_dec);
        for (int i = 0; i < (moe ? 4 : 7); i++) {
            if (i < fq || (fg && (i == 4 || i == 5)))
                continue;
            if (upload_weight(b, src[i], dst[i], true, err, errlen) != 0)
                return -1;
        }
        if (moe && upload_moe(b, L, D, err, errlen) != 0)
            return -1;
    }
    if (c->n_experts > 0) { /* the MoE FFN's buffers for a batch's tokens, and the GEMVs' prepared x for them */
        b->moe = cuda_moe_scratch_init(b->ctx, &b->layers[0].moe, base->cfg.max_batch_tokens);
        for (uint32_t l = 1; l < c->n_layers; l++)
            cuda_moe_reserve(b->ctx, &b->layers[l].moe, base->cfg.max_batch_tokens);
    }
    b->out_norm = upload_vec(b, m->out_norm, c->dim);
    if (upload_weight(b, &m->output, &b->output, false, err, errlen) != 0)
        return -1;
    /* the embedding for the decode step's device gather: the output weight's
     * bytes when tied and stored as in the file, else a copy */
    const struct model_weight *e = &m->tok_embd;
    if (!e->block_scale && e->cols == c->dim && cuda_embed_supported(e->dtype, c->dim)) {
        if (c->tied_embeddings && b->output.dtype == e->dtype && e->dtype != DTYPE_F32) {
            b->d_embd = b->output.d;
        } else {
            void *d = cuda_be_dev_alloc(b, e->rows * e->row_bytes);
            cuda_upload(b->ctx, d, e->data, e->rows * e->row_bytes);
            b->d_embd = d;
        }
        b->embd_scale = e->scale * c->embed_scale;
    }
    if (cuda_be_gemm_setup(b, err, errlen) != 0) /* before the KV pool takes the free memory */
        return -1;
    cuda_ctx_sync(b->ctx);
    if (cuda_be_alloc_kv_pool(b, err, errlen) != 0)
        return -1;
    cuda_be_decode_capture_all(b);
    return 0;
}

