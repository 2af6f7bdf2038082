/* model/weights.c — binding the file's tensors to the per-layer weight structs.
 *
 * One table (g_names) lists every tensor role with its GGUF name and its
 * Hugging Face name; "%u" is the layer (and for per-expert HF tensors, the
 * expert). Each bound tensor is checked: present, of a dtype the kernels
 * compute, of exactly the expected shape, its byte count consistent. Errors
 * name the tensor: "PATH: tensor 'blk.3.attn_q.weight' has shape (64, 32),
 * expected (64, 64)".
 *
 * Layout differences between the two formats handled here:
 * - Gemma's HF norm weights are w with the norm computing (1 + w); GGUF stores
 *   1 + w. Vectors are converted to float32 and the 1 is added for HF files.
 * - MoE experts: GGUF stacks them in one 3-D tensor per projection (n_expert,
 *   rows, cols); transformers ≥ 5 saves "experts.gate_up_proj" (n_expert,
 *   2·ffn, dim, gate rows first) and "experts.down_proj"; older checkpoints one
 *   2-D tensor per expert. Each expert becomes a view into the bytes.
 * - FP8 (F8_E4M3) safetensors weights carry a scale tensor next to them:
 *   "<name>_scale" (a per-tensor float) or "<name>_scale_inv" (one float per
 *   128×128 block); both multiply the weights.
 */
#include "model/model.h"
#include "core/checked.h"
#include "core/log.h"
#include "quant/quant.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum name_role {
    N_TOK_EMBD, N_OUT_NORM, N_OUTPUT,
    N_ATTN_NORM, N_WQ, N_WK, N_WV, N_WO, N_BQ, N_BK, N_BV, N_Q_NORM, N_K_NORM, N_POST_ATTN_NORM,
    N_FFN_NORM, N_PRE_FFN_NORM, N_POST_FFN_NORM, N_GATE, N_UP, N_DOWN,
    N_ROUTER, N_GATE_EXPS, N_UP_EXPS, N_DOWN_EXPS, N_GATE_UP_EXPS_HF, N_EXPERT_GATE_HF, N_EXPERT_UP_HF,
    N_EXPERT_DOWN_HF,
    N_COUNT
};

static const struct {
    const char *gguf;
    const char *hf;
} g_names[N_COUNT] = {
    [N_TOK_EMBD] = {"token_embd.weight", "model.embed_tokens.weight"},
    [N_OUT_NORM] = {"output_norm.weight", "model.norm.weight"},
    [N_OUTPUT] = {"output.weight", "lm_head.weight"},
    [N_ATTN_NORM] = {"blk.%u.attn_norm.weight", "model.layers.%u.input_layernorm.weight"},
    [N_WQ] = {"blk.%u.attn_q.weight", "model.layers.%u.self_attn.q_proj.weight"},
    [N_WK] = {"blk.%u.attn_k.weight", "model.layers.%u.self_attn.k_proj.weight"},
    [N_WV] = {"blk.%u.attn_v.weight", "model.layers.%u.self_attn.v_proj.weight"},
    [N_WO] = {"blk.%u.attn_output.weight", "model.layers.%u.self_attn.o_proj.weight"},
    [N_BQ] = {"blk.%u.attn_q.bias", "model.layers.%u.self_attn.q_proj.bias"},
    [N_BK] = {"blk.%u.attn_k.bias", "model.layers.%u.self_attn.k_proj.bias"},
    [N_BV] = {"blk.%u.attn_v.bias", "model.layers.%u.self_attn.v_proj.bias"},
    [N_Q_NORM] = {"blk.%u.attn_q_norm.weight", "model.layers.%u.self_attn.q_norm.weight"},
    [N_K_NORM] = {"blk.%u.attn_k_norm.weight", "model.layers.%u.self_attn.k_norm.weight"},
    /* gemma3's HF post_attention_layernorm really follows attention */
    [N_POST_ATTN_NORM] = {"blk.%u.post_attention_norm.weight", "model.layers.%u.post_attention_layernorm.weight"},
    /* llama/qwen's HF post_attention_layernorm is the pre-FFN norm; gemma3 has its own (below) */
    [N_FFN_NORM] = {"blk.%u.ffn_norm.weight", "model.layers.%u.post_attention_layernorm.weight"},
    [N_PRE_FFN_NORM] = {"blk.%u.ffn_norm.weight", "model.layers.%u.pre_feedforward_layernorm.weight"},
    [N_POST_FFN_NORM] = {"blk.%u.post_ffw_norm.weight", "model.layers.%u.post_feedforward_layernorm.weight"},
    [N_GATE] = {"blk.%u.ffn_gate.weight", "model.layers.%u.mlp.gate_proj.weight"},
    [N_UP] = {"blk.%u.ffn_up.weight", "model.layers.%u.mlp.up_proj.weight"},
    [N_DOWN] = {"blk.%u.ffn_down.weight", "model.layers.%u.mlp.down_proj.weight"},
    [N_ROUTER] = {"blk.%u.ffn_gate_inp.weight", "model.layers.%u.mlp.gate.weight"},
    [N_GATE_EXPS] = {"blk.%u.ffn_gate_exps.weight", NULL},
    [N_UP_EXPS] = {"blk.%u.ffn_up_exps.weight", NULL},
    [N_DOWN_EXPS] = {"blk.%u.ffn_down_exps.weight", "model.layers.%u.mlp.experts.down_proj"},
    [N_GATE_UP_EXPS_HF] = {NULL, "model.layers.%u.mlp.experts.gate_up_proj"},
    [N_EXPERT_GATE_HF] = {NULL, "model.layers.%u.mlp.experts.%u.gate_proj.weight"},
    [N_EXPERT_UP_HF] = {NULL, "model.layers.%u.mlp.experts.%u.up_proj.weight"},
    [N_EXPERT_DOWN_HF] = {NULL, "model.layers.%u.mlp.experts.%u.down_proj.weight"},
};

struct binder {
    struct model *m;
    bool gguf;
    char name[256];
    char *err;
    size_t errlen;
    bool warned_align; /* weight_align has said that this model's plain weights are copied */
};

static const char *bind_name(struct binder *b, enum name_role r, uint32_t layer, uint32_t expert)
{
    const char *fmt = b->gguf ? g_names[r].gguf : g_names[r].hf;
    MEMRA_ASSERT(fmt != NULL);
    snprintf(b->name, sizeof(b->name), fmt, layer, expert);
    return b->name;
}

static int shape_err(struct binder *b, const struct mf_tensor *t, const char *want)
{
    char got[160] = "(";
    size_t n = 1;
    for (uint32_t d = 0; d < t->n_dims && n < sizeof(got) - 24; d++)
        n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    snprintf(got + n, sizeof(got) - n, ")");
    return err_set(b->err, b->errlen, "%s: tensor '%s' has shape %s, expected %s", b->m->file.path, t->name, got,
                   want);
}

static const struct mf_tensor *find_required(struct binder *b, const char *name, const char *what)
{
    const struct mf_tensor *t = model_file_find_tensor(&b->m->file, name);
    if (!t)
        err_set(b->err, b->errlen, "%s: tensor '%s' is missing (%s %s)", b->m->file.path, name,
                model_arch_name(b->m->cfg.arch), what);
    return t;
}

/* A scale tensor of an FP8 weight, converted to float32 in the arena. */
static int bind_fp8_scales(struct binder *b, const struct mf_tensor *t, struct model_weight *w)
{
    char sname[300];
    snprintf(sname, sizeof(sname), "%s_scale", t->name);
    const struct mf_tensor *s = model_file_find_tensor(&b->m->file, sname);
    uint64_t want = 1;
    if (!s) {
        snprintf(sname, sizeof(sname), "%s_scale_inv", t->name);
        s = model_file_find_tensor(&b->m->file, sname);
        if (!s)
            return 0; /* unscaled FP8 */
        uint64_t br = (w->rows + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK;
        uint64_t bc = (w->cols + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK;
        if (s->n_dims != 2 || s->shape[0] != br || s->shape[1] != bc)
            return err_set(b->err, b->errlen, "%s: tensor '%s' must have shape (%llu, %llu) (block-128 scales of "
                           "'%s')", b->m->file.path, sname, (unsigned long long)br, (unsigned long long)bc, t->name);
        want = br * bc;
    } else if (s->n_elements != 1) {
        return err_set(b->err, b->errlen, "%s: tensor '%s' must hold one per-tensor scale", b->m->file.path, sname);
    }
    if (s->dtype != DTYPE_F32 && s->dtype != DTYPE_BF16 && s->dtype != DTYPE_F16)
        return err_set(b->err, b->errlen, "%s: tensor '%s' has dtype %s, expected F32, BF16 or F16",
                       b->m->file.path, sname, dtype_name(s->dtype));
    if (s->n_bytes != want * dtype_info(s->dtype)->type_size)
        return err_set(b->err, b->errlen, "%s: tensor '%s' byte count is inconsistent", b->m->file.path, sname);
    float *f = arena_alloc(&b->m->arena, want * sizeof(float));
    if (!f)
        return err_set(b->err, b->errlen, "%s: out of memory", b->m->file.path);
    if (quant_dequantize_row(s->dtype, s->data, f, want) != 0)
        return err_set(b->err, b->errlen, "%s: tensor '%s' cannot be read", b->m->file.path, sname);
    if (want == 1)
        w->scale = f[0];
    else
        w->block_scale = f;
    return 0;
}

/* A plain float weight (F32, F16, BF16) is read as an array of its element
 * type, but a safetensors file may place tensor data at any byte
 * (model_file.h): a view whose first byte is not on its element size is
 * copied into the arena (16-byte aligned). Files as written by transformers or
 * safetensors pad their header so that this never happens; a file that does
 * not pays the copy and a warning, instead of misaligned loads. */
static int weight_align(struct binder *b, const struct mf_tensor *t, struct model_weight *w)
{
    const struct dtype_info *di = dtype_info(w->dtype);
    if (di->block_size != 1 || di->type_size <= 1 || (uintptr_t)w->data % di->type_size == 0)
        return 0;
    uint64_t bytes;
    if (checked_mul_u64(w->rows, w->row_bytes, &bytes) || bytes > SIZE_MAX / 2)
        return err_set(b->err, b->errlen, "%s: tensor '%s' is too large", b->m->file.path, t->name);
    uint8_t *p = arena_alloc(&b->m->arena, (size_t)bytes);
    if (!p)
        return err_set(b->err, b->errlen, "%s: out of memory copying tensor '%s' (%llu bytes) to an aligned buffer",
                       b->m->file.path, t->name, (unsigned long long)bytes);
    memcpy(p, w->data, (size_t)bytes);
    if (!b->warned_align) /* once a model: a file misaligned at all is misaligned throughout */
        log_warn("%s: tensor '%s' (%s) is not %u-byte aligned in the file: it and any others like it are copied "
                 "into memory (re-save the file with safetensors to map it instead)",
                 b->m->file.path, t->name, dtype_name(w->dtype), (unsigned)di->type_size);
    b->warned_align = true;
    w->data = p;
    return 0;
}

/* Check a tensor's dtype and byte count and fill w for rows×cols starting at
 * row `row0` of the tensor's (flattened) rows. */
static int weight_view(struct binder *b, const struct mf_tensor *t, uint64_t row0, uint64_t rows, uint64_t cols,
                       struct model_weight *w)
{
    if (!quant_can_compute(t->dtype))
        return err_set(b->err, b->errlen, "%s: tensor '%s' has dtype %s, which memra does not compute",
                       b->m->file.path, t->name, dtype_name(t->dtype));
    uint64_t rb, total, off;
    if (dtype_row_bytes(t->dtype, cols, &rb) != 0)
        return err_set(b->err, b->errlen, "%s: tensor '%s': row length %llu is not a multiple of the %s block size "
                       "%u", b->m->file.path, t->name, (unsigned long long)cols, dtype_name(t->dtype),
                       dtype_info(t->dtype)->block_size);
    if (checked_mul_u64(rb, t->n_elements / cols, &total) || total != t->n_bytes ||
        checked_mul_u64(row0, rb, &off) || row0 + rows > t->n_elements / cols)
        return err_set(b->err, b->errlen, "%s: tensor '%s' holds %llu bytes, inconsistent with its shape and dtype",
                       b->m->file.path, t->name, (unsigned long long)t->n_bytes);
    w->name = t->name;
    w->dtype = t->dtype;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = rb;
    w->data = t->data + off;
    w->scale = 1.0f;
    w->block_scale = NULL;
    if (weight_align(b, t, w) != 0)
        return -1;
    if (t->dtype == DTYPE_F8_E4M3 || t->dtype == DTYPE_F8_E5M2) {
        if (row0 != 0 || rows * cols != t->n_elements)
            return err_set(b->err, b->errlen, "%s: tensor '%s': FP8 expert stacks are not supported",
                           b->m->file.path, t->name);
        if (bind_fp8_scales(b, t, w) != 0)
            return -1;
    }
    return 0;
}

static int bind_matrix(struct binder *b, enum name_role r, uint32_t layer, uint64_t rows, uint64_t cols,
                       const char *what, struct model_weight *w)
{
    const struct mf_tensor *t = find_required(b, bind_name(b, r, layer, 0), what);
    if (!t)
        return -1;
    if (t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != cols) {
        char want[64];
        snprintf(want, sizeof(want), "(%llu, %llu)", (unsigned long long)rows, (unsigned long long)cols);
        return shape_err(b, t, want);
    }
    if (weight_view(b, t, 0, rows, cols, w) != 0)
        return -1;
    b->m->weight_bytes += t->n_bytes;
    return 0;
}

/* A stack of n matrices (n, rows, cols) → n views, written to w[i*stride]. */
static int bind_stack(struct binder *b, enum name_role r, uint32_t layer, uint64_t n, uint64_t rows,
                      uint64_t row_skip, uint64_t cols, const char *what, struct model_weight *w, size_t stride)
{
    const struct mf_tensor *t = find_required(b, bind_name(b, r, layer, 0), what);
    if (!t)
        return -1;
    uint64_t all_rows = rows + row_skip;
    if (r == N_GATE_UP_EXPS_HF)
        all_rows = 2 * rows;
    if (t->n_dims != 3 || t->shape[0] != n || t->shape[1] != all_rows || t->shape[2] != cols) {
        char want[96];
        snprintf(want, sizeof(want), "(%llu, %llu, %llu)", (unsigned long long)n, (unsigned long long)all_rows,
                 (unsigned long long)cols);
        return shape_err(b, t, want);
    }
    for (uint64_t e = 0; e < n; e++) {
        struct model_weight *we = (struct model_weight *)((char *)w + e * stride);
        if (weight_view(b, t, e * all_rows + row_skip, rows, cols, we) != 0)
            return -1;
    }
    if (row_skip == 0)
        b->m->weight_bytes += t->n_bytes;
    return 0;
}

/* A vector of n floats (any float or block type), converted into the arena. */
static int bind_vector(struct binder *b, enum name_role r, uint32_t layer, uint64_t n, bool add_one,
                       const char *what, const float **out)
{
    const struct mf_tensor *t = find_required(b, bind_name(b, r, layer, 0), what);
    if (!t)
        return -1;
    if (t->n_elements != n || (t->n_dims != 1 && !(t->n_dims == 2 && t->shape[0] == 1))) {
        char want[32];
        snprintf(want, sizeof(want), "(%llu)", (unsigned long long)n);
        return shape_err(b, t, want);
    }
    uint64_t rb;
    if (!quant_can_compute(t->dtype) || t->dtype == DTYPE_F8_E4M3 || t->dtype == DTYPE_F8_E5M2)
        return err_set(b->err, b->errlen, "%s: tensor '%s' has dtype %s, not supported for a vector",
                       b->m->file.path, t->name, dtype_name(t->dtype));
    if (dtype_row_bytes(t->dtype, n, &rb) != 0 || rb != t->n_bytes)
        return err_set(b->err, b->errlen, "%s: tensor '%s' holds %llu bytes, inconsistent with its shape and dtype",
                       b->m->file.path, t->name, (unsigned long long)t->n_bytes);
    float *f = arena_alloc(&b->m->arena, n * sizeof(float));
    if (!f)
        return err_set(b->err, b->errlen, "%s: out of memory", b->m->file.path);
    if (quant_dequantize_row(t->dtype, t->data, f, n) != 0)
        return err_set(b->err, b->errlen, "%s: tensor '%s' cannot be read", b->m->file.path, t->name);
    if (add_one)
        for (uint64_t i = 0; i < n; i++)
            f[i] = 1.0f + f[i];
    b->m->weight_bytes += t->n_bytes;
    *out = f;
    return 0;
}

static int bind_moe(struct binder *b, uint32_t l)
{
    const struct model_config *c = &b->m->cfg;
    struct model_layer *L = &b->m->layers[l];
    L->experts = arena_alloc(&b->m->arena, sizeof(struct model_expert) * c->n_experts);
    if (!L->experts)
        return err_set(b->err, b->errlen, "%s: out of memory", b->m->file.path);
    if (bind_matrix(b, N_ROUTER, l, c->n_experts, c->dim, "router", &L->router))
        return -1;
    const size_t st = sizeof(struct model_expert);
    if (b->gguf) {
        if (bind_stack(b, N_GATE_EXPS, l, c->n_experts, c->moe_ffn_dim, 0, c->dim, "expert gate", &L->experts[0].gate,
                       st) ||
            bind_stack(b, N_UP_EXPS, l, c->n_experts, c->moe_ffn_dim, 0, c->dim, "expert up", &L->experts[0].up, st) ||
            bind_stack(b, N_DOWN_EXPS, l, c->n_experts, c->dim, 0, c->moe_ffn_dim, "expert down",
                       &L->experts[0].down, st))
            return -1;
        return 0;
    }
    if (model_file_find_tensor(&b->m->file, bind_name(b, N_GATE_UP_EXPS_HF, l, 0))) {
        /* transformers ≥ 5: fused gate_up (gate rows first) and a down stack */
        if (bind_stack(b, N_GATE_UP_EXPS_HF, l, c->n_experts, c->moe_ffn_dim, 0, c->dim, "expert gate_up",
                       &L->experts[0].gate, st) ||
            bind_stack(b, N_GATE_UP_EXPS_HF, l, c->n_experts, c->moe_ffn_dim, c->moe_ffn_dim, c->dim,
                       "expert gate_up", &L->experts[0].up, st) ||
            bind_stack(b, N_DOWN_EXPS, l, c->n_experts, c->dim, 0, c->moe_ffn_dim, "expert down",
                       &L->experts[0].down, st))
            return -1;
        return 0;
    }
    for (uint32_t e = 0; e < c->n_experts; e++) {
        struct model_expert *E = &L->experts[e];
        const struct {
            enum name_role r;
            uint64_t rows, cols;
            struct model_weight *w;
        } parts[3] = {{N_EXPERT_GATE_HF, c->moe_ffn_dim, c->dim, &E->gate},
                      {N_EXPERT_UP_HF, c->moe_ffn_dim, c->dim, &E->up},
                      {N_EXPERT_DOWN_HF, c->dim, c->moe_ffn_dim, &E->down}};
        for (int p = 0; p < 3; p++) {
            const char *name = bind_name(b, parts[p].r, l, e);
            const struct mf_tensor *t = find_required(b, name, "expert projection");
            if (!t)
                return -1;
            if (t->n_dims != 2 || t->shape[0] != parts[p].rows || t->shape[1] != parts[p].cols) {
                char want[64];
                snprintf(want, sizeof(want), "(%llu, %llu)", (unsigned long long)parts[p].rows,
                         (unsigned long long)parts[p].cols);
                return shape_err(b, t, want);
            }
            if (weight_view(b, t, 0, parts[p].rows, parts[p].cols, parts[p].w))
                return -1;
            b->m->weight_bytes += t->n_bytes;
        }
    }
    return 0;
}

static int bind_layer(struct binder *b, uint32_t l)
{
    const struct model_config *c = &b->m->cfg;
    struct model_layer *L = &b->m->layers[l];
    const uint64_t q_dim = (uint64_t)c->n_heads * c->head_dim, kv_dim = (uint64_t)c->n_kv_heads * c->head_dim;
    const bool one = !b->gguf && c->arch == MODEL_ARCH_GEMMA3; /* HF Gemma norms hold w, compute 1 + w */

    if (bind_vector(b, N_ATTN_NORM, l, c->dim, one, "attention norm", &L->attn_norm) ||
        bind_matrix(b, N_WQ, l, q_dim, c->dim, "attention query", &L->wq) ||
        bind_matrix(b, N_WK, l, kv_dim, c->dim, "attention key", &L->wk) ||
        bind_matrix(b, N_WV, l, kv_dim, c->dim, "attention value", &L->wv) ||
        bind_matrix(b, N_WO, l, c->dim, q_dim, "attention output", &L->wo))
        return -1;
    if (c->qkv_bias &&
        (bind_vector(b, N_BQ, l, q_dim, false, "query bias", &L->bq) ||
         bind_vector(b, N_BK, l, kv_dim, false, "key bias", &L->bk) ||
         bind_vector(b, N_BV, l, kv_dim, false, "value bias", &L->bv)))
        return -1;
    if (c->qk_norm &&
        (bind_vector(b, N_Q_NORM, l, c->head_dim, one, "query norm", &L->q_norm) ||
         bind_vector(b, N_K_NORM, l, c->head_dim, one, "key norm", &L->k_norm)))
        return -1;
    if (c->sandwich_norm) {
        if (bind_vector(b, N_POST_ATTN_NORM, l, c->dim, one, "post-attention norm", &L->post_attn_norm) ||
            bind_vector(b, N_PRE_FFN_NORM, l, c->dim, one, "pre-feed-forward norm", &L->ffn_norm) ||
            bind_vector(b, N_POST_FFN_NORM, l, c->dim, one, "post-feed-forward norm", &L->post_ffn_norm))
            return -1;
    } else if (bind_vector(b, N_FFN_NORM, l, c->dim, false, "feed-forward norm", &L->ffn_norm)) {
        return -1;
    }
    if (c->n_experts > 0)
        return bind_moe(b, l);
    if (bind_matrix(b, N_GATE, l, c->ffn_dim, c->dim, "feed-forward gate", &L->w_gate) ||
        bind_matrix(b, N_UP, l, c->ffn_dim, c->dim, "feed-forward up", &L->w_up) ||
        bind_matrix(b, N_DOWN, l, c->dim, c->ffn_dim, "feed-forward down", &L->w_down))
        return -1;
    return 0;
}

int model_bind_weights(struct model *m, char *err, size_t errlen)
{
    struct binder b = {.m = m, .gguf = m->file.format == MF_FORMAT_GGUF, .err = err, .errlen = errlen};
    const struct model_config *c = &m->cfg;
    const bool one = !b.gguf && c->arch == MODEL_ARCH_GEMMA3;
    if (bind_matrix(&b, N_TOK_EMBD, 0, c->vocab, c->dim, "token embedding", &m->tok_embd) ||
        bind_vector(&b, N_OUT_NORM, 0, c->dim, one, "output norm", &m->out_norm))
        return -1;
    if (c->tied_embeddings) {
        m->output = m->tok_embd;
    } else if (bind_matrix(&b, N_OUTPUT, 0, c->vocab, c->dim, "output projection", &m->output)) {
        return -1;
    }
    for (uint32_t l = 0; l < c->n_layers; l++)
        if (bind_layer(&b, l) != 0)
            return -1;
    return 0;
}
