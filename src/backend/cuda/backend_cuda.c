/* backend/cuda/backend_cuda.c — the CUDA backend's lifecycle (host C; the GPU
 * is reached only through cuda_ops.h, cuda_fwd.h, cuda_decode.h and attn.h):
 * init, the KV pool, free, and the ops table. The weights go up in
 * cuda_weights.c (load_weights), the prefill GEMM is set up in
 * cuda_gemm_setup.c, the forward passes live in cuda_forward.c (general path)
 * and cuda_decode_step.c (decode step); backend_cuda_internal.h holds the
 * state they share. This comment describes the backend as a whole.
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
 * fit, cuda_gemm_setup.c) runs the cuBLASLt GEMM (gemm.cu) on its own rows;
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
 * (cuda_decode_step.c), in groups of 64 (BF16 models) or 8: device-side
 * embedding gather, one CUDA graph per batch size, fused norm / activation
 * preparation, async I/O through pinned memory — the same bits as the
 * general path, less per-token overhead (bench/FORWARD.md). For it,
 * load_weights (cuda_weights.c) uploads each layer's q/k/v (and gate/up) back
 * to back into one allocation when they share type, width and scale
 * (upload_fused), so that a lone token runs each group as one GEMV.
 */
#include "backend/cuda/backend_cuda_internal.h"
#include "core/checked.h"
#include "core/log.h"

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

void *cuda_be_dev_alloc(struct cuda_backend *b, uint64_t bytes)
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

/* An on/off setting read from the environment: on unless it is "off" (docs/FLAGS.md). */
static bool env_not_off(const char *name)
{
    const char *v = getenv(name);
    return !(v && strcmp(v, "off") == 0);
}

static float *dev_floats(struct cuda_backend *b, uint64_t a, uint64_t c, bool *ok)
{
    uint64_t n;
    if (checked_mul_u64(a, c, &n) || checked_mul_u64(n, 4, &n) || n > ((uint64_t)1 << 40)) {
        *ok = false;
        return NULL;
    }
    return *ok ? cuda_be_dev_alloc(b, n) : NULL;
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
        bool all = b->mmv_mode != MMV_OFF && cuda_be_weight_mmv(&m->output);
        for (uint32_t l = 0; l < c->n_layers && all; l++) {
            /* (a MoE layer's experts run the grouped GEMVs at any batch) */
            const struct model_layer *L = &m->layers[l];
            const struct model_weight *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
            if (c->n_experts > 0)
                ws[4] = &L->router;
            for (int i = 0; i < (c->n_experts > 0 ? 5 : 7); i++)
                all = all && cuda_be_weight_mmv(ws[i]);
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
    b->fuse_w = env_not_off("MEMRA_DECODE_FUSE");
    b->dec_fuse = c->dim % 32 == 0 && c->dim <= 16384 && c->ffn_dim % 32 == 0;
    b->dec_side = env_not_off("MEMRA_DECODE_SIDE");
    static const char *const rope_modes[] = {"off", "on", "all"}; /* b->dec_rope's values */
    b->dec_rope = 2;
    if (!cuda_env_pick("MEMRA_DECODE_ROPE", rope_modes, 3, &b->dec_rope, err, errlen)) {
        cuda_be_free(&b->base);
        return -1;
    }
    b->dec_qkv = env_not_off("MEMRA_DECODE_QKV");
    const char *env_fp8b = getenv("MEMRA_FP8_BLOCK");
    if (env_fp8b && *env_fp8b && strcmp(env_fp8b, "native") != 0 && strcmp(env_fp8b, "f32") != 0) {
        cuda_be_free(&b->base);
        return err_set(err, errlen, "cuda backend: MEMRA_FP8_BLOCK=%s: expected native or f32", env_fp8b);
    }
    b->fp8_block = !(env_fp8b && strcmp(env_fp8b, "f32") == 0);
    b->dec_glu = env_not_off("MEMRA_DECODE_GLU");
    b->x_producers = env_not_off("MEMRA_GEMM_X_PRODUCERS");
    b->gemm_accum = env_not_off("MEMRA_GEMM_ACCUM");
    b->gu_bf16 = env_not_off("MEMRA_GEMM_GU_BF16");
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

int cuda_be_alloc_kv_pool(struct cuda_backend *b, char *err, size_t errlen)
{
    struct backend_config *bc = &b->base.cfg;
    const uint64_t block_bytes = cuda_be_kv_block_bytes(b);
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
    b->kv = cuda_be_dev_alloc(b, (uint64_t)bc->kv_blocks * block_bytes);
    log_info("cuda backend: KV pool of %u blocks × %u positions, %s (%llu MiB, %llu MiB were free); %s activations",
             bc->kv_blocks, BACKEND_KV_BLOCK, backend_kv_type_name(bc->kv_type),
             (unsigned long long)(((uint64_t)bc->kv_blocks * block_bytes) >> 20),
             (unsigned long long)(free_b >> 20), backend_act_type_name(bc->act_type));
    return 0;
}

static void cuda_be_kv_copy(struct backend *base, uint32_t dst, uint32_t src)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    MEMRA_ASSERT(b->kv && dst < base->cfg.kv_blocks && src < base->cfg.kv_blocks);
    cuda_fwd_kv_copy(b->ctx, b->kv, base->model->cfg.n_layers, base->cfg.kv_blocks, b->kv_dim, cuda_be_kv_elem(b),
                     dst, src);
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
    .load_weights = cuda_be_load_weights, /* cuda_weights.c */
    .forward = cuda_be_forward,
    .kv_copy = cuda_be_kv_copy,
    .draw_z = cuda_be_draw_z,
    .free = cuda_be_free,
};
