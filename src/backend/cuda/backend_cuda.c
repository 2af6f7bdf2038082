/* backend/cuda/backend_cuda.c — the CUDA backend's lifecycle (host C; the GPU
 * is reached only through cuda_ops.h, cuda_fwd.h, cuda_decode.h and attn.h):
 * init, weight upload, the KV pool, free, and the ops table. The forward
 * passes live in cuda_forward.c (general path) and cuda_decode_step.c (decode
 * step); backend_cuda_internal.h holds the state they share. This comment
 * describes the backend as a whole.
 *
 * Same structure as the CPU backend (src/backend/cpu/cpu_backend.c): the
 * batch's tokens are laid out one after another, every kernel works on that
 * (T, ·) layout, and only the attention kernels look up each token's position
 * and block table (uploaded per batch with the embedding rows; the paged KV
 * layout is documented in cuda_fwd.h).
 *
 * KV pool: allocated at the end of load_weights, once the weights and the
 * scratch are on the device: cfg.kv_blocks (or MEMRA_KV_BLOCKS when that is 0)
 * blocks, else as many as the free memory holds minus 1 GiB of headroom
 * (cuBLAS workspaces, fragmentation). b->cfg.kv_blocks is therefore final
 * only after load_weights (backend_open does both).
 *
 * Matmuls, chosen per span (a sequence's tokens in the batch), never per
 * batch: a span of at least the weight's gemm_min tokens (higher for FP8 and
 * GGUF weights, which pay a dequantization — once at load when the copies
 * fit, gemm_keep_decide) runs the cuBLASLt GEMM (gemm.cu) on its own rows;
 * shorter spans (decode tokens) run the decode GEMV of the weight's type, 8
 * tokens a launch, or for BF16 weights the tensor-core
 * batched GEMV, 64 tokens a launch, when a run has 2 or more tokens (use_mmv;
 * MEMRA_DECODE_MMV=auto|all|off): the wgmma kernel (mmv_wg.cu, n % 64 == 0)
 * or with MEMRA_MMV=sync the mma.sync one (mmv.cu, also the fallback).
 * Quantized GEMVs run at one K split for the layer matrices and one for the
 * head (cuda_gemv_engine_ksplit; MEMRA_GEMV_KSPLIT) at every batch size, so their
 * summation order does not depend on the batch, the mmv's slices depend only on the
 * weight's shape, and a GEMM's
 * algorithm is fixed per shape, so a sequence's result is the same alone or
 * in any batch (with MEMRA_DECODE_MMV=auto a lone decode token takes the
 * CUDA-core GEMV instead: logits within ~1e-6, greedy the same). The output
 * matmul is the exception to "per span": the rows of a step that want logits
 * run it together on the decode kernels (on either path), so with
 * MEMRA_DECODE_MMV=auto a row's logits take the CUDA-core GEMV when it is the
 * only one of its step, the mmv otherwise — the same ~1e-6 caveat, and none
 * with MEMRA_DECODE_MMV=all. MEMRA_GEMM = exact (default) | fast | off picks the
 * GEMM's numerics (cuda_ops.h), MEMRA_GEMM_MIN_TOKENS sets one threshold for
 * every weight. Weights with no GEMV kernel are float32.
 *
 * Activations (cfg.act_type): f32 by default, or with BACKEND_ACT_BF16 every
 * matmul's input rounded to bf16 by the kernel that writes it
 * (cuda_ctx_set_act_bf16: the input RMSNorms, the GLUs, the decode attention;
 * the prefill attention's output by cuda_be_round_act), the CPU's values; the
 * GEMM then runs gemm.cu's XBF16 mode (no low part of x) and mmv_wg.cu one A
 * row a token.
 *
 * Embedding: on the general path the token rows are dequantized on the host
 * from the model's map (as the CPU backend does) and uploaded with the batch —
 * T·dim floats per forward, negligible next to the weights.
 *
 * Attention (attn.h), chosen per span too: a one-token span (decode) runs the
 * split-K decode kernel (f32) on either path; a longer span runs the
 * tensor-core prefill kernel when the head_dim is 64 or 128 — with every
 * operand split into bf16 high + low parts (MEMRA_ATTN=exact, the default) or
 * in plain bf16 (fast; the default when MEMRA_GEMM=fast or with bf16
 * activations; on a bf16 cache at head_dim 128 its unsplit spans run on
 * wgmma, attn_prefill_wg.cu, the same bits) — with its keys
 * split over CTAs when the span is short and deep (cuda_attn_prefill_splits,
 * a function of the span alone); else (or MEMRA_ATTN=rows) the decode kernel
 * on each of its rows.
 *
 * Decode: batches of sequences × 1 token take the decode step instead
 * (cuda_decode_step.c), in groups of 64 (BF16 models) or 8: device-side embedding gather, one CUDA graph per batch size,
 * fused norm / activation preparation, async I/O through pinned memory — the
 * same bits as the general path, less per-token overhead (bench/FORWARD.md).
 * For it, load_weights uploads each layer's q/k/v (and gate/up) back to back
 * into one allocation when they share type, width and scale (upload_fused),
 * so that a lone token runs each group as one GEMV.
 */
#include "backend/cuda/backend_cuda_internal.h"
#include "core/checked.h"
#include "core/log.h"
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool backend_cuda_usable(void) { return cuda_fwd_device_usable(); }

static void cuda_be_free(struct backend *base)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    if (!b)
        return;
    if (b->ctx) {
        cuda_ctx_sync(b->ctx);
        for (uint32_t t = 0; t <= CUDA_MMV_MAX_BATCH; t++) {
            if (b->graphs[t])
                cuda_graph_free(b->graphs[t]);
            if (b->graphs_deep[t])
                cuda_graph_free(b->graphs_deep[t]);
        }
        cuda_host_free(b->h_dec);
        cuda_host_free(b->h_xdec);
        cuda_host_free(b->h_logits);
        cuda_host_free(b->h_argmax);
        cuda_host_free(b->h_draw);
        cuda_host_free(b->h_draw_out);
        cuda_host_free(b->h_topk);
        cuda_host_free(b->h_topk_idx);
        cuda_host_free(b->h_topk_val);
        cuda_host_free(b->h_topk_greedy);
        cuda_host_free(b->h_topk_stats);
        for (size_t i = 0; i < b->n_allocs; i++)
            cuda_free(b->allocs[i]);
        cuda_gemm_free(b->gemm);
        cuda_moe_scratch_free(b->moe);
        cuda_ctx_free(b->ctx);
    }
    free(b->allocs);
    free(b->layers);
    free(b->spans);
    free(b->mixed_seqs);
    free(b->h_attn_spans);
    free(b->h_attn_runs);
    free(b->h_attn_launch);
    free(b->h_meta);
    free(b->h_x);
    free(base->batch_mark);
    free(b);
}

/* cuda_alloc that remembers the pointer for free; bytes already checked. */
static void *dev_alloc(struct cuda_backend *b, uint64_t bytes)
{
    if (b->n_allocs == b->cap_allocs) {
        size_t cap = b->cap_allocs ? 2 * b->cap_allocs : 64;
        void **p = realloc(b->allocs, cap * sizeof(*p));
        if (!p)
            die("cuda backend: out of host memory");
        b->allocs = p;
        b->cap_allocs = cap;
    }
    void *p = cuda_alloc((size_t)bytes);
    b->allocs[b->n_allocs++] = p;
    return p;
}

static float *dev_floats(struct cuda_backend *b, uint64_t a, uint64_t c, bool *ok)
{
    uint64_t n;
    if (checked_mul_u64(a, c, &n) || checked_mul_u64(n, 4, &n) || n > ((uint64_t)1 << 40)) {
        *ok = false;
        return NULL;
    }
    return *ok ? dev_alloc(b, n) : NULL;
}

/* Whether a weight as stored goes to the tensor-core batched GEMV. */
static bool model_weight_mmv(const struct model_weight *w)
{
    return !w->block_scale && w->scale == 1.0f && cuda_mmv_supported(w->dtype, w->rows, w->cols) &&
           w->rows <= UINT32_MAX / 4 && w->cols <= UINT32_MAX / 4;
}

static int cuda_be_init(struct backend **out, const struct model *m, const struct backend_config *cfg, char *err,
                        size_t errlen)
{
    *out = NULL;
    const struct model_config *c = &m->cfg;
    if (c->n_experts > 0 && (c->n_experts > CUDA_MOE_MAX_EXPERTS || c->n_experts_used > CUDA_MOE_MAX_K ||
                             c->act != MODEL_ACT_SILU || c->dim % 32 || c->moe_ffn_dim % 32))
        return err_set(err, errlen, "cuda backend: mixture of experts with %u experts, %u a token, expert size %u, "
                       "hidden size %u not supported (at most %u and %u, SiLU, sizes multiples of 32), use "
                       "MEMRA_BACKEND=cpu", c->n_experts, c->n_experts_used, c->moe_ffn_dim, c->dim,
                       CUDA_MOE_MAX_EXPERTS, CUDA_MOE_MAX_K);
    if (c->head_dim == 0 || c->head_dim % 2 || c->head_dim > CUDA_FWD_MAX_HEAD_DIM)
        return err_set(err, errlen, "cuda backend: head_dim %u not supported (even, at most %u), use "
                       "MEMRA_BACKEND=cpu", c->head_dim, CUDA_FWD_MAX_HEAD_DIM);
    if (!cuda_fwd_device_usable())
        return err_set(err, errlen, "cuda backend: no usable CUDA device, use MEMRA_BACKEND=cpu");
    struct cuda_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return err_set(err, errlen, "cuda backend: out of memory");
    b->base.ops = &backend_cuda_ops;
    b->base.model = m;
    b->base.cfg = *cfg;
    struct backend_config *bc = &b->base.cfg;
    backend_config_defaults(bc, c);
    bc->n_threads = 1;
    if (bc->kv_blocks == 0) {
        const char *env = getenv("MEMRA_KV_BLOCKS");
        if (env && *env && checked_parse_u32(env, 1, CUDA_MAX_KV_BLOCKS, &bc->kv_blocks) != 0) {
            cuda_be_free(&b->base);
            return err_set(err, errlen, "cuda backend: MEMRA_KV_BLOCKS '%s' is not a block count in 1..%u", env,
                           CUDA_MAX_KV_BLOCKS);
        }
    }
    if (bc->max_seqs > 4096 || bc->max_ctx > MODEL_MAX_CTX || bc->max_batch_tokens > (1u << 20) ||
        bc->kv_blocks > CUDA_MAX_KV_BLOCKS) {
        cuda_be_free(&b->base);
        return err_set(err, errlen, "cuda backend: max_seqs %u / max_ctx %u / max_batch_tokens %u / kv_blocks %u "
                       "out of range", bc->max_seqs, bc->max_ctx, bc->max_batch_tokens, bc->kv_blocks);
    }
    if (c->n_experts > 0 && !cuda_moe_tokens_ok(c->n_experts, c->n_experts_used, bc->max_batch_tokens)) {
        cuda_be_free(&b->base);
        return err_set(err, errlen, "cuda backend: %u batch tokens × %u experts a token are more than a mixture-of-"
                       "experts step takes; lower the batch token budget (memra-server: MEMRA_BATCH_TOKENS)",
                       bc->max_batch_tokens, c->n_experts_used);
    }
    b->ctx = cuda_ctx_init(0, err, errlen);
    if (!b->ctx) {
        cuda_be_free(&b->base);
        return -1;
    }
    b->q_dim = c->n_heads * c->head_dim;
    b->kv_dim = c->n_kv_heads * c->head_dim;
    const uint64_t T = bc->max_batch_tokens;
    bool ok = true;
    b->tables_max = bc->max_seqs * backend_kv_blocks_for(bc->max_ctx);
    b->d_meta = (uint32_t *)dev_floats(b, 3 * T + b->tables_max, 1, &ok);
    b->x = dev_floats(b, T, c->dim, &ok);
    b->xb = dev_floats(b, T, c->dim, &ok);
    b->xb2 = dev_floats(b, T, c->dim, &ok);
    b->q = dev_floats(b, T, b->q_dim, &ok);
    b->att = dev_floats(b, T, b->q_dim, &ok);
    b->k = dev_floats(b, T, b->kv_dim, &ok);
    b->v = dev_floats(b, T, b->kv_dim, &ok);
    b->hb = dev_floats(b, T, c->ffn_dim, &ok);
    b->hb2 = dev_floats(b, T, c->ffn_dim, &ok);
    if (c->n_experts > 0)
        b->moe_logits = dev_floats(b, T, c->n_experts, &ok);
    b->qkv1 = dev_floats(b, 1, b->q_dim + 2 * (uint64_t)b->kv_dim, &ok);
    b->gu1 = dev_floats(b, 2, c->ffn_dim, &ok);
    {
        /* MEMRA_DECODE_MMV = auto (default) | all | off; the decode step takes
         * 64 sequences when every matmul of a decode token has the mmv */
        const char *mv = getenv("MEMRA_DECODE_MMV");
        if (mv && *mv && strcmp(mv, "auto") != 0 && strcmp(mv, "all") != 0 && strcmp(mv, "off") != 0) {
            cuda_be_free(&b->base);
            return err_set(err, errlen, "cuda backend: MEMRA_DECODE_MMV=%s: expected auto, all or off", mv);
        }
        b->mmv_mode = !mv || !*mv || strcmp(mv, "auto") == 0 ? MMV_AUTO : strcmp(mv, "all") == 0 ? MMV_ALL : MMV_OFF;
        /* MEMRA_MMV = wg (default: mmv_wg.cu) | sync (mmv.cu, the mma.sync kernel) */
        const char *mk = getenv("MEMRA_MMV");
        if (mk && *mk && strcmp(mk, "wg") != 0 && strcmp(mk, "sync") != 0) {
            cuda_be_free(&b->base);
            return err_set(err, errlen, "cuda backend: MEMRA_MMV=%s: expected wg or sync", mk);
        }
        cuda_mmv_set_kernel(b->ctx, mk && strcmp(mk, "sync") == 0 ? CUDA_MMV_SYNC : CUDA_MMV_WG);
        cuda_ctx_set_act_bf16(b->ctx, bc->act_type == BACKEND_ACT_BF16); /* producers round matmul inputs */
        bool all = b->mmv_mode != MMV_OFF && model_weight_mmv(&m->output);
        for (uint32_t l = 0; l < c->n_layers && all; l++) {
            /* (a MoE layer's experts run the grouped GEMVs at any batch) */
            const struct model_layer *L = &m->layers[l];
            const struct model_weight *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
            if (c->n_experts > 0)
                ws[4] = &L->router;
            for (int i = 0; i < (c->n_experts > 0 ? 5 : 7); i++)
                all = all && model_weight_mmv(ws[i]);
        }
        b->dec_g = all ? CUDA_MMV_MAX_BATCH : CUDA_GEMV_MAX_BATCH;
        b->dec_g = b->dec_g < T ? b->dec_g : (uint32_t)T;
    }
    b->logits = dev_floats(b, b->dec_g > CUDA_GEMV_MAX_BATCH ? b->dec_g : CUDA_GEMV_MAX_BATCH, c->vocab, &ok);
    b->h_meta = calloc(3 * T + b->tables_max, sizeof(uint32_t));
    b->spans = calloc(bc->max_seqs, sizeof(uint32_t));
    b->h_x = calloc(T * c->dim, sizeof(float));
    b->layers = calloc(c->n_layers, sizeof(*b->layers));
    b->d_dec = (uint32_t *)dev_floats(b, 3 * DEC_G + b->tables_max, 1, &ok);
    b->d_argmax = (int32_t *)dev_floats(b, DEC_G, 1, &ok);
    b->d_draw = (struct cuda_draw_params *)dev_floats(b, DEC_G, sizeof(struct cuda_draw_params) / 4, &ok);
    b->d_draw_out = (int32_t *)dev_floats(b, DEC_G, 2, &ok);
    b->d_topk = (struct cuda_topk_params *)dev_floats(b, DEC_G, sizeof(struct cuda_topk_params) / 4, &ok);
    b->d_topk_idx = (int32_t *)dev_floats(b, DEC_G, CUDA_TOPK_MAX, &ok);
    b->d_topk_val = dev_floats(b, DEC_G, CUDA_TOPK_MAX, &ok);
    b->d_topk_greedy = (int32_t *)dev_floats(b, DEC_G, 1, &ok);
    b->d_topk_stats = (struct cuda_topk_stats *)dev_floats(b, DEC_G, sizeof(struct cuda_topk_stats) / 4, &ok);
    {
        /* MEMRA_ATTN=exact|fast|rows; unset: fast when MEMRA_GEMM=fast (the same numerics trade) or with
         * bf16 activations (a bf16 model's own numerics: transformers' flash kernels take q and P in bf16;
         * kernel_forward's bf16 fixtures stay within their 5e-3 of the CPU, greedy 64/64; pp4096 +7 %,
         * bench/RESULTS.md thirty-first run) */
        const char *am = getenv("MEMRA_ATTN"), *gm = getenv("MEMRA_GEMM");
        const bool fast = am ? strcmp(am, "fast") == 0
                             : (gm != NULL && strcmp(gm, "fast") == 0) || bc->act_type == BACKEND_ACT_BF16;
        /* MEMRA_ATTN_DECODE_ONE unset: the tensor-core decode attention takes q and P in one bf16 part with
         * bf16 activations (the prefill's fast numerics; 64 rows × 640 51.6 → 49.4 µs a layer, tg32x64@d512
         * +1.6 %, bench/RESULTS.md thirty-second run); set, cuda_ctx_init has read it */
        if (!getenv("MEMRA_ATTN_DECODE_ONE"))
            cuda_attn_decode_set_one(b->ctx, bc->act_type == BACKEND_ACT_BF16);
        b->attn_mode = fast ? CUDA_BE_ATTN_MODE_FAST
                       : am && strcmp(am, "rows") == 0 ? CUDA_BE_ATTN_MODE_ROWS
                                                      : CUDA_BE_ATTN_MODE_EXACT;
        const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
        b->attn_rows = T < CUDA_BE_ATTN_ROWS ? (uint32_t)T : CUDA_BE_ATTN_ROWS;
        b->attn_part = dev_floats(b, cuda_attn_decode_scratch_floats(b->attn_rows, ad), 1, &ok);
        b->d_attn_spans = (struct cuda_attn_span *)dev_floats(b, bc->max_seqs, sizeof(struct cuda_attn_span) / 4, &ok);
        b->h_attn_spans = calloc(bc->max_seqs, sizeof(struct cuda_attn_span));
        b->h_attn_runs = calloc(2 * (size_t)bc->max_seqs, sizeof(uint32_t));
        b->h_attn_launch = calloc(4 * (size_t)bc->max_seqs, sizeof(uint32_t));
        ok = ok && b->h_attn_spans && b->h_attn_runs && b->h_attn_launch;
    }
    if (ok) {
        b->h_dec = cuda_host_alloc(((size_t)3 * DEC_G + b->tables_max) * sizeof(uint32_t));
        b->h_xdec = cuda_host_alloc((size_t)b->dec_g * c->dim * sizeof(float));
        b->h_logits = cuda_host_alloc((size_t)b->dec_g * c->vocab * sizeof(float));
        b->h_argmax = cuda_host_alloc((size_t)DEC_G * sizeof(int32_t));
        b->h_draw = cuda_host_alloc((size_t)DEC_G * sizeof(struct cuda_draw_params));
        b->h_draw_out = cuda_host_alloc((size_t)DEC_G * 2 * sizeof(int32_t));
        memset(b->h_draw, 0, (size_t)DEC_G * sizeof(struct cuda_draw_params));
        b->h_topk = cuda_host_alloc((size_t)DEC_G * sizeof(struct cuda_topk_params));
        b->h_topk_idx = cuda_host_alloc((size_t)DEC_G * CUDA_TOPK_MAX * sizeof(int32_t));
        b->h_topk_val = cuda_host_alloc((size_t)DEC_G * CUDA_TOPK_MAX * sizeof(float));
        b->h_topk_greedy = cuda_host_alloc((size_t)DEC_G * sizeof(int32_t));
        b->h_topk_stats = cuda_host_alloc((size_t)DEC_G * sizeof(struct cuda_topk_stats));
        memset(b->h_topk, 0, (size_t)DEC_G * sizeof(struct cuda_topk_params));
    }
    /* temperature draws on the device (backend_seq.draw), but not of softcapped logits (capped on the host),
     * nor with MEMRA_SAMPLE_DEVICE=off (every sampled row to the host: the same tokens, for comparisons) */
    bool sample_dev = true;
    if (!cuda_env_on_off("MEMRA_SAMPLE_DEVICE", &sample_dev, err, errlen)) {
        cuda_be_free(&b->base);
        return -1;
    }
    /* a mixed step's one-token sequences on the decode step's graphs (cuda_forward.c) */
    b->dec_mixed = true;
    if (!cuda_env_on_off("MEMRA_DECODE_MIXED", &b->dec_mixed, err, errlen)) {
        cuda_be_free(&b->base);
        return -1;
    }
    b->base.device_draw = c->final_softcap <= 0.0f && sample_dev;
    b->base.device_topk = b->base.device_draw; /* and the top-k and nucleus candidates (topk.cu) */
    if (b->base.device_topk) { /* nucleus rows' z kept past a later group's logits (cuda_logits_out.c) */
        b->z_rows = bc->max_seqs;
        b->z_stash = dev_floats(b, b->z_rows, c->vocab, &ok);
    }
    const char *env_dec = getenv("MEMRA_CUDA_DECODE"), *env_graph = getenv("MEMRA_CUDA_GRAPH");
    b->dec_on = !(env_dec && strcmp(env_dec, "0") == 0);
    b->dec_graphs = !(env_graph && strcmp(env_graph, "0") == 0);
    const char *env_fuse = getenv("MEMRA_DECODE_FUSE");
    b->fuse_w = !(env_fuse && strcmp(env_fuse, "off") == 0);
    b->dec_fuse = c->dim % 32 == 0 && c->dim <= 16384 && c->ffn_dim % 32 == 0;
    const char *env_side = getenv("MEMRA_DECODE_SIDE"), *env_qkv = getenv("MEMRA_DECODE_QKV");
    b->dec_side = !(env_side && strcmp(env_side, "off") == 0);
    b->dec_qkv = !(env_qkv && strcmp(env_qkv, "off") == 0);
    const char *env_fp8b = getenv("MEMRA_FP8_BLOCK");
    if (env_fp8b && *env_fp8b && strcmp(env_fp8b, "native") != 0 && strcmp(env_fp8b, "f32") != 0) {
        cuda_be_free(&b->base);
        return err_set(err, errlen, "cuda backend: MEMRA_FP8_BLOCK=%s: expected native or f32", env_fp8b);
    }
    b->fp8_block = !(env_fp8b && strcmp(env_fp8b, "f32") == 0);
    const char *env_glu = getenv("MEMRA_DECODE_GLU");
    b->dec_glu = !(env_glu && strcmp(env_glu, "off") == 0);
    const char *env_xp = getenv("MEMRA_GEMM_X_PRODUCERS");
    b->x_producers = !(env_xp && strcmp(env_xp, "off") == 0);
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    b->attn_prep = b->dec_fuse && cuda_attn_decode_prep_supported(ad);
    b->mixed_seqs = calloc(bc->max_seqs ? bc->max_seqs : 1, sizeof(*b->mixed_seqs));
    if (!ok || !b->h_meta || !b->spans || !b->h_x || !b->layers || !b->mixed_seqs) {
        cuda_be_free(&b->base);
        return err_set(err, errlen, "cuda backend: out of memory for scratch of %u sequences × %u positions, "
                       "%u batch tokens", bc->max_seqs, bc->max_ctx, bc->max_batch_tokens);
    }
    *out = &b->base;
    return 0;
}

static float *upload_vec(struct cuda_backend *b, const float *h, uint64_t n)
{
    if (!h)
        return NULL;
    float *d = dev_alloc(b, n * 4);
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
    o->gemm_min = 0; /* set by gemm_setup, with kept */
    o->kept = NULL;
    o->dtype = w->dtype;
    o->scale = w->scale;
    o->d = d;
    o->bs = NULL;
    cuda_upload(b->ctx, o->d, w->data, w->rows * w->row_bytes);
    o->mmv = b->mmv_mode != MMV_OFF && model_weight_mmv(w);
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
    uint8_t *d = dev_alloc(b, rows * src[0]->row_bytes);
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
        *out = dev_alloc(b, (uint64_t)DEC_G * j->rows * sizeof(float));
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
        b->qkv_dec = dev_alloc(b, (uint64_t)DEC_G * rows * sizeof(float));
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
        weight_init(b, w, o, dev_alloc(b, w->rows * w->row_bytes));
        return 0;
    }
    if (layer && weight_fp8_block(b, w)) {
        weight_init(b, w, o, dev_alloc(b, w->rows * w->row_bytes));
        const uint64_t nbs = (w->rows + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK *
                             ((w->cols + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK);
        float *bs = dev_alloc(b, nbs * 4);
        cuda_upload(b->ctx, bs, w->block_scale, nbs * 4);
        o->bs = bs;
        return 0;
    }
    o->bs = NULL;
    o->rows = (uint32_t)w->rows;
    o->cols = (uint32_t)w->cols;
    o->gemm_min = 0; /* set by gemm_setup, with kept */
    o->kept = NULL;
    /* float32 path, expanded in slices of ≤ 16 MiB */
    o->mmv = false;
    o->mmv_slices = 0;
    o->dtype = DTYPE_F32;
    o->scale = 1.0f;
    o->d = dev_alloc(b, w->rows * w->cols * 4);
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
    uint8_t *d = dev_alloc(b, stride * E);
    float *bs = blocks ? dev_alloc(b, E * per * tab * 4) : NULL;
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
        upload_expert_kind(b, L, 0, &D->moe, err, errlen) != 0 || upload_expert_kind(b, L, 1, &D->moe, err, errlen) != 0)
        return -1;
    if (!cuda_moe_supported(&D->moe, why, sizeof(why)))
        return err_set(err, errlen, "cuda backend: experts of '%s': %s, use MEMRA_BACKEND=cpu", L->experts[0].gate.name,
                       why);
    return 0;
}

/* The KV pool, after the weights: cfg.kv_blocks if set, else what the free
 * memory holds minus CUDA_KV_HEADROOM (at most CUDA_MAX_KV_BLOCKS). */
static uint64_t kv_block_bytes(const struct cuda_backend *b)
{
    return (uint64_t)b->base.model->cfg.n_layers * 2 * BACKEND_KV_BLOCK * b->kv_dim * cuda_be_kv_elem(b);
}

static int alloc_kv_pool(struct cuda_backend *b, char *err, size_t errlen)
{
    struct backend_config *bc = &b->base.cfg;
    const uint64_t block_bytes = kv_block_bytes(b);
    const uint64_t free_b = cuda_fwd_mem_free();
    if (bc->kv_blocks == 0) {
        const uint64_t avail = free_b > CUDA_KV_HEADROOM ? free_b - CUDA_KV_HEADROOM : 0;
        uint64_t n = avail / block_bytes;
        bc->kv_blocks = (uint32_t)(n > CUDA_MAX_KV_BLOCKS ? CUDA_MAX_KV_BLOCKS : n);
        if (bc->kv_blocks < backend_kv_blocks_for(bc->max_ctx))
            return err_set(err, errlen, "cuda backend: %llu MiB of device memory left after the weights hold %u KV "
                           "blocks (%llu KiB each), fewer than one sequence of %u positions needs",
                           (unsigned long long)(free_b >> 20), bc->kv_blocks,
                           (unsigned long long)(block_bytes >> 10), bc->max_ctx);
    } else if ((uint64_t)bc->kv_blocks * block_bytes > free_b) {
        return err_set(err, errlen, "cuda backend: %u KV blocks need %llu MiB, %llu MiB of device memory are free",
                       bc->kv_blocks, (unsigned long long)(((uint64_t)bc->kv_blocks * block_bytes) >> 20),
                       (unsigned long long)(free_b >> 20));
    }
    b->kv = dev_alloc(b, (uint64_t)bc->kv_blocks * block_bytes);
    log_info("cuda backend: KV pool of %u blocks × %u positions, %s (%llu MiB, %llu MiB were free); %s activations",
             bc->kv_blocks, BACKEND_KV_BLOCK, backend_kv_type_name(bc->kv_type),
             (unsigned long long)(((uint64_t)bc->kv_blocks * block_bytes) >> 20),
             (unsigned long long)(free_b >> 20), backend_act_type_name(bc->act_type));
    return 0;
}

/* Span lengths from which the GEMM runs, from kernel_gemm's crossover table
 * on the 8B shapes (bench/FORWARD.md, H200): BF16 GEMMs beat the GEMVs from
 * 8 tokens on in both modes; weights the GEMM dequantizes first (FP8, GGUF)
 * from 16 (FAST) and about 40 (EXACT, three GEMMs) on. The promoted GGUF
 * types (gemm_q.cu) whose packed copy is kept from 16 tokens with f32
 * activations and 12 with bf16 ones (H100, random 8B Q8_0, memra-bench ppN,
 * GEMV → GEMM: pp16 843-854 → 878-892 tok/s exact, pp12 775 → 917 and pp10
 * 715 → 765 with bf16 activations, pp8 798 → 612; bench/RESULTS.md,
 * thirty-ninth run). A dequantized copy kept on the device, the plans of short
 * spans timed (MEMRA_GEMM_PICK=time), from 32 (H100, random 8B Q4_K_M, pp32
 * GEMV 1431 → GEMM 2343 tok/s with bf16 activations, 1443 → 2204 exact). */
#define GEMM_MIN_PLAIN 8u
#define GEMM_MIN_DEQ_FAST 16u
#define GEMM_MIN_DEQ_EXACT 48u
#define GEMM_MIN_DEQ_KEPT 32u
#define GEMM_MIN_PROMOTED_EXACT 16u
#define GEMM_MIN_PROMOTED_XBF16 12u
#define GEMM_MIN_PROMOTED_MINS 32u
/* The promoted types' threshold: the types with a min (Q4_K, Q5_K, Q4_1) from 32 tokens whatever the activations
 * (H100, random 8B Q4_K_M with bf16 activations, cuBLASLt on the kept dequantized copy → promoted: pp16 1363-1373 →
 * 1178-1183 tok/s, the GEMV's 16 tokens against the GEMM's; pp32 2375 → 2369-2385, level; bench/RESULTS.md,
 * fortieth run). */
static uint32_t gemm_min_promoted(enum cuda_gemm_mode gm, const struct cuda_weight *w)
{
    if (cuda_gemm_promote_has_mins(w->dtype))
        return GEMM_MIN_PROMOTED_MINS;
    return gm == CUDA_GEMM_EXACT ? GEMM_MIN_PROMOTED_EXACT : GEMM_MIN_PROMOTED_XBF16;
}
/* A MoE span of ≥ 64 tokens gives each of Qwen3-MoE's 128 experts ~4 rows on
 * average (8 a token): from there one GEMM an expert beats reading it once
 * per 8 rows on the grouped GEMVs (not measured finer yet). */
#define MOE_GEMM_MIN 64u

/* Whether the FP8 / GGUF layer weights the GEMM takes stay dequantized on the
 * device (cuda_gemm_keep), so that a prefill chunk does not dequantize every
 * matrix again (~8 ms a pass over an 8B model on an H200, 29-42 % of a GGUF
 * pp4096 at ubatch 512: bench/RESULTS.md, twenty-seventh run). MEMRA_GEMM_KEEP:
 * auto (default: when the copies, `bytes` in all, leave free the KV blocks
 * every slot needs at full context and the headroom), on (whenever they fit
 * in the free memory), off; `scratch`: what the GEMM's own buffers will take
 * besides. The copies hold the values the dequantization scratch would get, so
 * a token's bits are the same either way. */
static int gemm_keep_decide(struct cuda_backend *b, uint64_t bytes, uint64_t scratch, bool *keep, char *err,
                            size_t errlen)
{
    const char *v = getenv("MEMRA_GEMM_KEEP");
    *keep = false;
    if (bytes == 0 || (v && strcmp(v, "off") == 0))
        return 0;
    const bool on = v && strcmp(v, "on") == 0;
    if (!on && v && *v && strcmp(v, "auto") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_KEEP=%s: expected auto, on or off", v);
    const struct backend_config *bc = &b->base.cfg;
    const uint64_t free_b = cuda_fwd_mem_free();
    const uint64_t blocks = bc->kv_blocks ? bc->kv_blocks : (uint64_t)bc->max_seqs * backend_kv_blocks_for(bc->max_ctx);
    const uint64_t need = bytes + scratch + CUDA_KV_HEADROOM + (on ? 0 : blocks * kv_block_bytes(b));
    *keep = need <= free_b;
    if (!*keep && on)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_KEEP=on: the dequantized weights need %llu MiB, %llu MiB "
                       "of device memory are free (set MEMRA_GEMM_KEEP=auto or off)",
                       (unsigned long long)(bytes >> 20), (unsigned long long)(free_b >> 20));
    log_info("cuda backend: the prefill GEMM's dequantized weights (%llu MiB) %s (MEMRA_GEMM_KEEP=%s, %llu MiB free)",
             (unsigned long long)(bytes >> 20),
             *keep ? "kept on the device" : "made again each chunk: too little memory", on ? "on" : "auto",
             (unsigned long long)(free_b >> 20));
    return 0;
}

/* The prefill GEMM (gemm.cu) for the layer weights it takes, its scratch sized
 * now (no allocation in forward): x of one span (≤ max_batch_tokens rows of
 * the widest input) and the largest FP8 / GGUF layer matrix dequantized that
 * is not kept (gemm_keep_decide). The logits stay on the GEMV (n_logits rows,
 * 8 at a time). MEMRA_GEMM: exact (default: greedy output identical to the
 * CPU's, see cuda_ops.h) | fast | off; MEMRA_GEMM_MIN_TOKENS: one threshold
 * for every weight. */
/* The size of a layer weight's kept copy for the prefill GEMM in mode gm with the promote set p (0: it needs none). */
static uint64_t weight_kept_bytes(enum cuda_gemm_mode gm, enum cuda_gemm_promote p, const struct cuda_weight *w)
{
    if (w->bs) /* FP8 with block scales */
        return cuda_gemm_kept_bytes_bs(gm, w->rows, w->cols);
    const bool pr = cuda_gemm_promote_takes(p, gm, w->dtype, w->rows, w->cols);
    return cuda_gemm_kept_bytes(gm, pr, w->dtype, w->rows, w->cols);
}

static int gemm_setup(struct cuda_backend *b, char *err, size_t errlen)
{
    const struct model_config *c = &b->base.model->cfg;
    const char *mode = getenv("MEMRA_GEMM"), *mt = getenv("MEMRA_GEMM_MIN_TOKENS");
    enum cuda_gemm_mode gm = CUDA_GEMM_EXACT;
    if (mode && strcmp(mode, "off") == 0)
        return 0;
    if (mode && strcmp(mode, "fast") == 0)
        gm = CUDA_GEMM_FAST;
    else if (mode && *mode && strcmp(mode, "exact") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM=%s: expected exact, fast or off", mode);
    if (gm == CUDA_GEMM_EXACT && b->base.cfg.act_type == BACKEND_ACT_BF16) /* x arrives rounded: no low part */
        gm = CUDA_GEMM_XBF16;
    /* MEMRA_GEMM_PROMOTE: auto (unset, empty) every type it takes at ≥ 2048 rows, on every weight it takes, plain
     * the types without a min, off none (cuda_ops.h says when) */
    const char *pv = getenv("MEMRA_GEMM_PROMOTE");
    enum cuda_gemm_promote promote = CUDA_GEMM_PROMOTE_AUTO;
    if (pv && strcmp(pv, "on") == 0)
        promote = CUDA_GEMM_PROMOTE_ALL;
    else if (pv && strcmp(pv, "plain") == 0)
        promote = CUDA_GEMM_PROMOTE_PLAIN;
    else if (pv && strcmp(pv, "off") == 0)
        promote = CUDA_GEMM_PROMOTE_OFF;
    else if (pv && *pv && strcmp(pv, "auto") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_PROMOTE=%s: expected auto, on, plain or off", pv);
    bool promoted_any = false; /* whether a layer weight takes it: its scratches only then */
    const char *pick = getenv("MEMRA_GEMM_PICK"); /* time (unset, empty) or first: cuda_gemm_set_timed */
    if (pick && *pick && strcmp(pick, "time") != 0 && strcmp(pick, "first") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_PICK=%s: expected time or first", pick);
    uint32_t min_all = 0;
    if (mt && *mt && checked_parse_u32(mt, 1, 1u << 20, &min_all) != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_MIN_TOKENS=%s: expected 1..%u", mt, 1u << 20);
    uint64_t wide = c->dim > c->ffn_dim ? c->dim : c->ffn_dim;
    wide = wide > b->q_dim ? wide : b->q_dim;
    wide = wide > c->moe_ffn_dim ? wide : c->moe_ffn_dim;
    uint64_t kept_bytes = 0, max_w = 0; /* max_w: the largest matrix to dequantize, unless the copies are kept */
    for (uint32_t l = 0; l < c->n_layers; l++) {
        struct cuda_layer *D = &b->layers[l];
        struct cuda_weight *ws[7] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->w_gate, &D->w_up, &D->w_down};
        for (int i = 0; i < 7; i++) {
            struct cuda_weight *w = ws[i];
            if (w->rows == 0 || !cuda_gemm_supported(w->dtype, w->rows, w->cols)) /* rows 0: a MoE layer's FFN */
                continue;
            const uint64_t e = cuda_gemm_scratch_w_elems(w->dtype, w->rows, w->cols);
            max_w = e > max_w ? e : max_w;
            promoted_any |= !w->bs && cuda_gemm_promote_takes(promote, gm, w->dtype, w->rows, w->cols);
            w->gemm_min = min_all ? min_all
                          : e == 0 ? GEMM_MIN_PLAIN
                          : gm != CUDA_GEMM_FAST ? GEMM_MIN_DEQ_EXACT : GEMM_MIN_DEQ_FAST; /* promoted: below */
            kept_bytes += weight_kept_bytes(gm, promote, w); /* 0 exactly where e is */
        }
    }
    bool keep;
    uint64_t x_bytes = (uint64_t)b->base.cfg.max_batch_tokens * wide * 4; /* x's bf16 parts, both at most */
    if (!promoted_any)
        promote = CUDA_GEMM_PROMOTE_OFF;
    if (promote) /* and their tiles (cuda_gemm_promote): ≤ 4.4 bytes an element with two parts and a min's k
                  * tiles (3 columns a 32), a last token tile and a last min tile a tile row */
        x_bytes += x_bytes * 35 / 32 + wide * 560 + ((uint64_t)b->base.cfg.max_batch_tokens / 128 + 1) * 32768;
    if (gemm_keep_decide(b, kept_bytes, x_bytes, &keep, err, errlen) != 0)
        return -1;
    if (keep)
        max_w = 0; /* every matrix that needs one has its copy */
    /* MoE: a long span's experts as GEMMs (cuda_moe_ffn_gemm) when every layer's have one */
    bool moe_gemm = c->n_experts > 0;
    for (uint32_t l = 0; l < c->n_layers && moe_gemm; l++) {
        const struct cuda_moe_weights *w = &b->layers[l].moe;
        moe_gemm = cuda_moe_gemm_supported(w);
        if (!moe_gemm)
            break;
        const uint64_t e1 = cuda_gemm_scratch_w_elems(w->gu_type, 2 * (uint64_t)w->ffn, w->dim),
                       e2 = cuda_gemm_scratch_w_elems(w->down_type, w->dim, w->ffn);
        max_w = e1 > max_w ? e1 : max_w;
        max_w = e2 > max_w ? e2 : max_w;
    }
    b->moe_gemm_min = !moe_gemm ? 0 : min_all ? min_all : MOE_GEMM_MIN;
    b->gemm = cuda_gemm_init(b->ctx, gm, (uint64_t)b->base.cfg.max_batch_tokens * wide, max_w);
    cuda_gemm_promote(b->gemm, wide, promote);
    const bool timed = !pick || strcmp(pick, "first") != 0;
    cuda_gemm_set_timed(b->gemm, timed);
    for (uint32_t l = 0; l < c->n_layers && keep; l++) {
        struct cuda_layer *D = &b->layers[l];
        struct cuda_weight *ws[7] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->w_gate, &D->w_up, &D->w_down};
        for (int i = 0; i < 7; i++) {
            struct cuda_weight *w = ws[i];
            const uint64_t kb = w->gemm_min ? weight_kept_bytes(gm, promote, w) : 0;
            if (kb && !min_all && cuda_gemm_promoted(b->gemm, w->dtype, w->rows, w->cols)) /* its packed copy kept */
                w->gemm_min = gemm_min_promoted(gm, w);
            else if (kb && !min_all && gm != CUDA_GEMM_FAST && timed) /* its dequantized copy kept */
                w->gemm_min = GEMM_MIN_DEQ_KEPT;
            if (kb) {
                w->kept = dev_alloc(b, kb);
                if (w->bs)
                    cuda_gemm_keep_bs(b->gemm, w->d, w->bs, w->rows, w->cols, w->kept);
                else
                    cuda_gemm_keep(b->gemm, w->dtype, w->d, w->rows, w->cols, w->kept);
            }
        }
    }
    return 0;
}

static int cuda_be_load_weights(struct backend *base, char *err, size_t errlen)
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
            void *d = dev_alloc(b, e->rows * e->row_bytes);
            cuda_upload(b->ctx, d, e->data, e->rows * e->row_bytes);
            b->d_embd = d;
        }
        b->embd_scale = e->scale * c->embed_scale;
    }
    if (gemm_setup(b, err, errlen) != 0) /* before the KV pool takes the free memory */
        return -1;
    cuda_ctx_sync(b->ctx);
    if (alloc_kv_pool(b, err, errlen) != 0)
        return -1;
    cuda_be_decode_capture_all(b);
    return 0;
}

static void cuda_be_kv_copy(struct backend *base, uint32_t dst, uint32_t src)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    MEMRA_ASSERT(b->kv && dst < base->cfg.kv_blocks && src < base->cfg.kv_blocks);
    cuda_fwd_kv_copy(b->ctx, b->kv, base->model->cfg.n_layers, base->cfg.kv_blocks, b->kv_dim, cuda_be_kv_elem(b), dst, src);
}

/* The z rows behind nucleus draws of the last forward: the top-k kernel
 * left each draw's z in its logit row, copied to z_stash where a later group
 * of the forward overwrote that row (cuda_logits_out.c); one sync for all. */
static void cuda_be_draw_z(struct backend *base, const struct backend_draw *const *d, float *const *z, uint32_t n)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    const uint32_t V = base->model->cfg.vocab;
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t row = d[k]->row, slot = row & ~CUDA_BE_Z_STASHED;
        MEMRA_ASSERT(d[k]->nucleus && (row & CUDA_BE_Z_STASHED ? slot < b->n_z : row < DEC_G));
        const float *src = row & CUDA_BE_Z_STASHED ? b->z_stash + (uint64_t)slot * V : b->logits + (uint64_t)row * V;
        cuda_download_async(b->ctx, z[k], src, (size_t)V * sizeof(float));
    }
    cuda_ctx_sync(b->ctx);
}

const struct backend_ops backend_cuda_ops = {
    .name = "cuda",
    .init = cuda_be_init,
    .load_weights = cuda_be_load_weights,
    .forward = cuda_be_forward,
    .kv_copy = cuda_be_kv_copy,
    .draw_z = cuda_be_draw_z,
    .free = cuda_be_free,
};
