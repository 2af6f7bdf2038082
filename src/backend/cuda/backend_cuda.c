/* backend/cuda/backend_cuda.c — the CUDA backend's lifecycle and forward driver
 * (host C; the GPU is reached only through cuda_ops.h and cuda_fwd.h).
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
 * GGUF weights, which pay a dequantization) runs the cuBLASLt GEMM (gemm.cu)
 * on its own rows; shorter spans (decode tokens) run the decode GEMV of the
 * weight's type, 8 tokens a launch, or for BF16 weights the tensor-core
 * batched GEMV (mmv.cu), 64 tokens a launch, when a run has 2 or more tokens
 * (use_mmv; MEMRA_DECODE_MMV=auto|all|off). Quantized GEMVs always run with
 * ksplit 1, the shape whose summation order does not depend on the batch
 * size, the mmv's slices depend only on the weight's shape, and a GEMM's
 * algorithm is fixed per shape, so a sequence's result is the same alone or
 * in any batch (with MEMRA_DECODE_MMV=auto a lone decode token takes the
 * CUDA-core GEMV instead: logits within ~1e-6, greedy the same). MEMRA_GEMM = exact (default) | fast | off picks the
 * GEMM's numerics (cuda_ops.h), MEMRA_GEMM_MIN_TOKENS sets one threshold for
 * every weight. Weights with no GEMV kernel are float32.
 *
 * Embedding: on the general path the token rows are dequantized on the host
 * from the model's map (as the CPU backend does) and uploaded with the batch —
 * T·dim floats per forward, negligible next to the weights.
 *
 * Attention (attn.h), chosen per span too: a one-token span (decode) runs the
 * split-K decode kernel (f32) on either path; a longer span runs the bf16
 * tensor-core prefill kernel when MEMRA_ATTN=fast (default: fast when
 * MEMRA_GEMM=fast) and the head_dim is 64 or 128, else the decode kernel on each
 * of its rows (f32, exact: the default).
 *
 * Decode: batches of sequences × 1 token take decode_step instead, in groups of
 * 64 (BF16 models) or 8 (its section below): device-side embedding gather, one CUDA graph per batch size,
 * fused norm / activation preparation, async I/O through pinned memory — the
 * same bits as the general path, less per-token overhead (bench/FORWARD.md).
 */
#include "backend/cuda/backend_cuda.h"
#include "backend/cuda/attn.h"
#include "backend/cuda/cuda_decode.h"
#include "backend/cuda/cuda_fwd.h"
#include "backend/cuda/cuda_ops.h"
#include "core/checked.h"
#include "core/log.h"
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A weight on the device: the file's bytes (GEMV types), or float32. */
struct cuda_weight {
    enum dtype dtype; /* DTYPE_F32: expanded, read by cuda_fwd_matmul_f32 */
    uint32_t rows, cols;
    float scale;
    uint32_t gemm_min; /* spans of ≥ gemm_min tokens take the GEMM; 0: never (gemm_setup) */
    bool mmv;          /* the tensor-core batched GEMV takes it (BF16, cols % 32 == 0) */
    void *d; /* (rows, row bytes) */
};

struct cuda_layer {
    float *attn_norm, *ffn_norm, *post_attn_norm, *post_ffn_norm; /* (dim) or NULL */
    float *bq, *bk, *bv;                                           /* qwen2 biases or NULL */
    float *q_norm, *k_norm;                                        /* (head_dim) or NULL */
    float *inv_freq;                                               /* (head_dim/2) */
    struct cuda_weight wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct cuda_backend {
    struct backend base;
    struct cuda_ctx *ctx;
    uint32_t q_dim, kv_dim;
    struct cuda_layer *layers; /* (n_layers) host array of device pointers */
    float *out_norm;           /* (dim) */
    struct cuda_weight output; /* (vocab, dim) */
    void **allocs;             /* every weight / vector allocation, for free */
    size_t n_allocs, cap_allocs;

    /* KV pool: layer l, kind k (0 keys, 1 values), block n, row r →
     * kv + (((l·2 + k)·kv_blocks + n)·16 + r)·kv_dim (cuda_fwd.h) */
    float *kv;          /* device (n_layers, 2, kv_blocks, 16, kv_dim) */
    uint32_t tables_max; /* max_seqs · ceil(max_ctx / 16): the most block ids a batch brings */

    /* device scratch, T = cfg.max_batch_tokens */
    uint32_t *d_meta;   /* (2T + tables_max): positions, table offsets, then the concatenated tables */
    float *x, *xb, *xb2; /* (T, dim) */
    float *q, *att;     /* (T, q_dim) */
    float *k, *v;       /* (T, kv_dim) */
    float *hb, *hb2;    /* (T, ffn_dim) */
    float *logits;      /* (max(dec_g, CUDA_GEMV_MAX_BATCH), vocab) */
    struct cuda_gemm *gemm; /* prefill GEMM (NULL: MEMRA_GEMM=off) */
    uint32_t *spans;    /* host (max_seqs): tokens of each sequence of the batch being run */
    /* attention (attn_plan): decode rows go attn_rows a launch */
    bool attn_fast;          /* spans of ≥ 2 tokens on the bf16 tensor-core prefill kernel */
    uint32_t attn_rows;      /* min(CUDA_BE_ATTN_ROWS, max_batch_tokens) */
    float *attn_part;        /* cuda_attn_decode_scratch_floats(attn_rows): the splits' partials */
    struct cuda_attn_span *d_attn_spans, *h_attn_spans; /* (max_seqs) this batch's prefill-kernel spans */
    uint32_t *h_attn_runs;   /* (max_seqs, 2) this batch's runs of decode-kernel rows: first token, count */
    uint32_t n_attn_spans, max_attn_span, n_attn_runs;
    /* host staging */
    uint32_t *h_meta;   /* (2T + tables_max) */
    float *h_x;         /* (T, dim) embedding rows */

    /* decode step (decode_step below), G = dec_g */
    bool dec_on, dec_graphs; /* MEMRA_CUDA_DECODE / MEMRA_CUDA_GRAPH not 0 */
    enum { MMV_OFF, MMV_AUTO, MMV_ALL } mmv_mode; /* MEMRA_DECODE_MMV (see use_mmv) */
    uint32_t dec_g;          /* sequences a decode step takes: 64 when every matmul has the mmv, else 8 */
    bool dec_fuse;           /* dim, ffn_dim % 32 == 0, dim ≤ 16384: the _prep kernels apply */
    const void *d_embd;      /* token embedding rows as in the file, on the device (NULL: host rows) */
    float embd_scale;        /* its tensor scale × the model's embedding scale */
    uint32_t *d_dec;         /* (3G + tables_max) token ids, positions, table offsets (G each), tables */
    uint32_t *h_dec;         /* pinned, the same layout */
    float *h_xdec;           /* pinned (G, dim) embedding rows when d_embd is NULL */
    float *h_logits;         /* pinned (G, vocab) */
    int32_t *d_argmax;       /* (DEC_G) each row's greedy pick (sample.cu), written by the step's graph */
    int32_t *h_argmax;       /* pinned (DEC_G) */
    struct cuda_graph *graphs[CUDA_MMV_MAX_BATCH + 1]; /* by T, captured on first use */
};

/* Room for the decode step's per-sequence inputs: the largest dec_g. */
#define DEC_G CUDA_MMV_MAX_BATCH

/* Block ids fit 24 bits (the CPU backend's limit too); headroom left free
 * when the pool is sized from the free memory. */
#define CUDA_MAX_KV_BLOCKS (1u << 24)
#define CUDA_KV_HEADROOM ((uint64_t)1 << 30)
#define CUDA_BE_ATTN_ROWS 64u /* decode-attention rows a launch (sizes its partials' scratch) */
_Static_assert(CUDA_KV_BLOCK == BACKEND_KV_BLOCK, "cuda_fwd.h and engine/backend.h agree on the block size");

bool backend_cuda_usable(void) { return cuda_fwd_device_usable(); }

static void cuda_be_free(struct backend *base)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    if (!b)
        return;
    if (b->ctx) {
        cuda_ctx_sync(b->ctx);
        for (uint32_t t = 0; t <= CUDA_MMV_MAX_BATCH; t++)
            if (b->graphs[t])
                cuda_graph_free(b->graphs[t]);
        cuda_host_free(b->h_dec);
        cuda_host_free(b->h_xdec);
        cuda_host_free(b->h_logits);
        cuda_host_free(b->h_argmax);
        for (size_t i = 0; i < b->n_allocs; i++)
            cuda_free(b->allocs[i]);
        cuda_gemm_free(b->gemm);
        cuda_ctx_free(b->ctx);
    }
    free(b->allocs);
    free(b->layers);
    free(b->spans);
    free(b->h_attn_spans);
    free(b->h_attn_runs);
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
    if (c->n_experts > 0)
        return err_set(err, errlen, "cuda backend: architecture %s not yet supported, use MEMRA_BACKEND=cpu",
                       m->arch_name ? m->arch_name : model_arch_name(c->arch));
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
    if (bc->max_seqs == 0)
        bc->max_seqs = 1;
    if (bc->max_ctx == 0)
        bc->max_ctx = c->max_ctx;
    if (bc->max_batch_tokens == 0)
        bc->max_batch_tokens = 512;
    bc->n_threads = 1;
    if (bc->kv_blocks == 0) {
        const char *env = getenv("MEMRA_KV_BLOCKS");
        if (env && *env) {
            char *end = NULL;
            const unsigned long long v = strtoull(env, &end, 10);
            if (*end || v == 0 || v > CUDA_MAX_KV_BLOCKS) {
                cuda_be_free(&b->base);
                return err_set(err, errlen, "cuda backend: MEMRA_KV_BLOCKS '%s' is not a block count in 1..%u",
                               env, CUDA_MAX_KV_BLOCKS);
            }
            bc->kv_blocks = (uint32_t)v;
        }
    }
    if (bc->max_seqs > 4096 || bc->max_ctx > MODEL_MAX_CTX || bc->max_batch_tokens > (1u << 20) ||
        bc->kv_blocks > CUDA_MAX_KV_BLOCKS) {
        cuda_be_free(&b->base);
        return err_set(err, errlen, "cuda backend: max_seqs %u / max_ctx %u / max_batch_tokens %u / kv_blocks %u "
                       "out of range", bc->max_seqs, bc->max_ctx, bc->max_batch_tokens, bc->kv_blocks);
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
    b->d_meta = (uint32_t *)dev_floats(b, 2 * T + b->tables_max, 1, &ok);
    b->x = dev_floats(b, T, c->dim, &ok);
    b->xb = dev_floats(b, T, c->dim, &ok);
    b->xb2 = dev_floats(b, T, c->dim, &ok);
    b->q = dev_floats(b, T, b->q_dim, &ok);
    b->att = dev_floats(b, T, b->q_dim, &ok);
    b->k = dev_floats(b, T, b->kv_dim, &ok);
    b->v = dev_floats(b, T, b->kv_dim, &ok);
    b->hb = dev_floats(b, T, c->ffn_dim, &ok);
    b->hb2 = dev_floats(b, T, c->ffn_dim, &ok);
    {
        /* MEMRA_DECODE_MMV = auto (default) | all | off; the decode step takes
         * 64 sequences when every matmul of a decode token has the mmv */
        const char *mv = getenv("MEMRA_DECODE_MMV");
        if (mv && *mv && strcmp(mv, "auto") != 0 && strcmp(mv, "all") != 0 && strcmp(mv, "off") != 0) {
            cuda_be_free(&b->base);
            return err_set(err, errlen, "cuda backend: MEMRA_DECODE_MMV=%s: expected auto, all or off", mv);
        }
        b->mmv_mode = !mv || !*mv || strcmp(mv, "auto") == 0 ? MMV_AUTO : strcmp(mv, "all") == 0 ? MMV_ALL : MMV_OFF;
        bool all = b->mmv_mode != MMV_OFF && model_weight_mmv(&m->output);
        for (uint32_t l = 0; l < c->n_layers && all; l++) {
            const struct model_layer *L = &m->layers[l];
            const struct model_weight *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
            for (int i = 0; i < 7; i++)
                all = all && model_weight_mmv(ws[i]);
        }
        b->dec_g = all ? CUDA_MMV_MAX_BATCH : CUDA_GEMV_MAX_BATCH;
        b->dec_g = b->dec_g < T ? b->dec_g : (uint32_t)T;
    }
    b->logits = dev_floats(b, b->dec_g > CUDA_GEMV_MAX_BATCH ? b->dec_g : CUDA_GEMV_MAX_BATCH, c->vocab, &ok);
    b->h_meta = calloc(2 * T + b->tables_max, sizeof(uint32_t));
    b->spans = calloc(bc->max_seqs, sizeof(uint32_t));
    b->h_x = calloc(T * c->dim, sizeof(float));
    b->layers = calloc(c->n_layers, sizeof(*b->layers));
    b->d_dec = (uint32_t *)dev_floats(b, 3 * DEC_G + b->tables_max, 1, &ok);
    b->d_argmax = (int32_t *)dev_floats(b, DEC_G, 1, &ok);
    {
        /* MEMRA_ATTN=fast|exact; unset: fast when MEMRA_GEMM=fast (the same numerics trade) */
        const char *am = getenv("MEMRA_ATTN"), *gm = getenv("MEMRA_GEMM");
        b->attn_fast = am ? strcmp(am, "fast") == 0 : gm != NULL && strcmp(gm, "fast") == 0;
        const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
        b->attn_rows = T < CUDA_BE_ATTN_ROWS ? (uint32_t)T : CUDA_BE_ATTN_ROWS;
        b->attn_part = dev_floats(b, cuda_attn_decode_scratch_floats(b->attn_rows, ad), 1, &ok);
        b->d_attn_spans = (struct cuda_attn_span *)dev_floats(b, bc->max_seqs, sizeof(struct cuda_attn_span) / 4, &ok);
        b->h_attn_spans = calloc(bc->max_seqs, sizeof(struct cuda_attn_span));
        b->h_attn_runs = calloc(2 * (size_t)bc->max_seqs, sizeof(uint32_t));
        ok = ok && b->h_attn_spans && b->h_attn_runs;
    }
    if (ok) {
        b->h_dec = cuda_host_alloc(((size_t)3 * DEC_G + b->tables_max) * sizeof(uint32_t));
        b->h_xdec = cuda_host_alloc((size_t)b->dec_g * c->dim * sizeof(float));
        b->h_logits = cuda_host_alloc((size_t)b->dec_g * c->vocab * sizeof(float));
        b->h_argmax = cuda_host_alloc((size_t)DEC_G * sizeof(int32_t));
    }
    const char *env_dec = getenv("MEMRA_CUDA_DECODE"), *env_graph = getenv("MEMRA_CUDA_GRAPH");
    b->dec_on = !(env_dec && strcmp(env_dec, "0") == 0);
    b->dec_graphs = !(env_graph && strcmp(env_graph, "0") == 0);
    b->dec_fuse = c->dim % 32 == 0 && c->dim <= 16384 && c->ffn_dim % 32 == 0;
    if (!ok || !b->h_meta || !b->spans || !b->h_x || !b->layers) {
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

static int upload_weight(struct cuda_backend *b, const struct model_weight *w, struct cuda_weight *o, char *err,
                         size_t errlen)
{
    if (w->rows > UINT32_MAX / 4 || w->cols > UINT32_MAX / 4)
        return err_set(err, errlen, "cuda backend: tensor '%s' too large", w->name);
    o->rows = (uint32_t)w->rows;
    o->cols = (uint32_t)w->cols;
    o->gemm_min = 0; /* set by gemm_setup */
    if (!w->block_scale && w->dtype != DTYPE_F32 && cuda_gemv_supported(w->dtype, w->rows, w->cols)) {
        o->dtype = w->dtype;
        o->scale = w->scale;
        o->d = dev_alloc(b, w->rows * w->row_bytes);
        cuda_upload(b->ctx, o->d, w->data, w->rows * w->row_bytes);
        o->mmv = b->mmv_mode != MMV_OFF && model_weight_mmv(w);
        if (o->mmv)
            cuda_mmv_reserve(b->ctx, w->rows, w->cols);
        return 0;
    }
    /* float32 path, expanded in slices of ≤ 16 MiB */
    o->mmv = false;
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

/* The KV pool, after the weights: cfg.kv_blocks if set, else what the free
 * memory holds minus CUDA_KV_HEADROOM (at most CUDA_MAX_KV_BLOCKS). */
static int alloc_kv_pool(struct cuda_backend *b, char *err, size_t errlen)
{
    struct backend_config *bc = &b->base.cfg;
    const uint32_t n_layers = b->base.model->cfg.n_layers;
    const uint64_t block_bytes = (uint64_t)n_layers * 2 * BACKEND_KV_BLOCK * b->kv_dim * sizeof(float);
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
    log_info("cuda backend: KV pool of %u blocks × %u positions (%llu MiB, %llu MiB were free)", bc->kv_blocks,
             BACKEND_KV_BLOCK, (unsigned long long)(((uint64_t)bc->kv_blocks * block_bytes) >> 20),
             (unsigned long long)(free_b >> 20));
    return 0;
}

/* Span lengths from which the GEMM runs, from kernel_gemm's crossover table
 * on the 8B shapes (bench/FORWARD.md, H200): BF16 GEMMs beat the GEMVs from
 * 8 tokens on in both modes; weights the GEMM dequantizes first (FP8, GGUF)
 * from 16 (FAST) and about 40 (EXACT, three GEMMs) on. */
#define GEMM_MIN_PLAIN 8u
#define GEMM_MIN_DEQ_FAST 16u
#define GEMM_MIN_DEQ_EXACT 48u

/* The prefill GEMM (gemm.cu) for the layer weights it takes, its scratch sized
 * now (no allocation in forward): x of one span (≤ max_batch_tokens rows of
 * the widest input) and the largest FP8 / GGUF layer matrix dequantized. The
 * logits stay on the GEMV (n_logits rows, 8 at a time). MEMRA_GEMM: exact
 * (default: greedy output identical to the CPU's, see cuda_ops.h) | fast |
 * off; MEMRA_GEMM_MIN_TOKENS: one threshold for every weight. */
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
    uint32_t min_all = 0;
    if (mt && *mt) {
        char *end;
        const unsigned long v = strtoul(mt, &end, 10);
        if (*end || v < 1 || v > (1ul << 20))
            return err_set(err, errlen, "cuda backend: MEMRA_GEMM_MIN_TOKENS=%s: expected 1..%lu", mt, 1ul << 20);
        min_all = (uint32_t)v;
    }
    uint64_t max_w = 0;
    for (uint32_t l = 0; l < c->n_layers; l++) {
        struct cuda_layer *D = &b->layers[l];
        struct cuda_weight *ws[7] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->w_gate, &D->w_up, &D->w_down};
        for (int i = 0; i < 7; i++) {
            struct cuda_weight *w = ws[i];
            if (!cuda_gemm_supported(w->dtype, w->rows, w->cols))
                continue;
            const uint64_t e = cuda_gemm_scratch_w_elems(w->dtype, w->rows, w->cols);
            max_w = e > max_w ? e : max_w;
            w->gemm_min = min_all ? min_all
                          : e == 0 ? GEMM_MIN_PLAIN
                          : gm == CUDA_GEMM_EXACT ? GEMM_MIN_DEQ_EXACT : GEMM_MIN_DEQ_FAST;
        }
    }
    uint64_t wide = c->dim > c->ffn_dim ? c->dim : c->ffn_dim;
    wide = wide > b->q_dim ? wide : b->q_dim;
    b->gemm = cuda_gemm_init(b->ctx, gm, (uint64_t)b->base.cfg.max_batch_tokens * wide, max_w);
    return 0;
}

static int cuda_be_load_weights(struct backend *base, char *err, size_t errlen)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    const struct model *m = base->model;
    const struct model_config *c = &m->cfg;
    uint64_t n_max = c->dim > c->ffn_dim ? c->dim : c->ffn_dim;
    n_max = n_max > b->q_dim ? n_max : b->q_dim;
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
        for (int i = 0; i < 7; i++)
            if (upload_weight(b, src[i], dst[i], err, errlen) != 0)
                return -1;
    }
    b->out_norm = upload_vec(b, m->out_norm, c->dim);
    if (upload_weight(b, &m->output, &b->output, err, errlen) != 0)
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
    return alloc_kv_pool(b, err, errlen);
}

static void cuda_be_kv_copy(struct backend *base, uint32_t dst, uint32_t src)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    MEMRA_ASSERT(b->kv && dst < base->cfg.kv_blocks && src < base->cfg.kv_blocks);
    cuda_fwd_kv_copy(b->ctx, b->kv, base->model->cfg.n_layers, base->cfg.kv_blocks, b->kv_dim, dst, src);
}

static bool is_quantized(enum dtype t)
{
    return t != DTYPE_F32 && t != DTYPE_BF16 && t != DTYPE_F16 && t != DTYPE_F8_E4M3;
}

/* Whether T tokens run through weight w on the tensor-core batched GEMV
 * (mmv.cu) rather than the CUDA-core GEMV: MEMRA_DECODE_MMV=auto (default)
 * takes it for 2 or more tokens (1 token: the GEMV, ~15 % faster alone),
 * all for any T (then a sequence's bits never depend on the batch: the mmv
 * gives each token the same bits whatever T), off never. */
static bool use_mmv(const struct cuda_backend *b, const struct cuda_weight *w, uint32_t T)
{
    return w->mmv && (T >= 2 || b->mmv_mode == MMV_ALL);
}

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
                cuda_mmv(b->ctx, ws[i]->dtype, ws[i]->d, ws[i]->rows, cols, x + (uint64_t)c0 * cols, nb,
                         ys[i] + (uint64_t)c0 * ws[i]->rows, ws[i]->scale);
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
            const bool q = is_quantized(w->dtype);
            /* ksplit 1 for quantized types: batch-independent summation order */
            cuda_gemv_variant(b->ctx, w->dtype, w->d, w->rows, cols, xc, nb, ys[i] + (uint64_t)c0 * w->rows,
                              w->scale, 0, q ? 1 : 0, q ? CUDA_GEMV_X_PREPARED : 0);
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

/* ys[i] (T, ws[i].rows) = x (T, cols) · ws[i]ᵀ for weights sharing the input,
 * T = Σ spans: each span (a sequence's tokens, consecutive in x) of enough
 * tokens runs the GEMM on its own rows; the others, gathered into runs of
 * consecutive spans, run the GEMVs. */
static void matmul_multi(struct cuda_backend *b, const struct cuda_weight *const *ws, float *const *ys, int n,
                         const float *x, const uint32_t *spans, uint32_t n_spans)
{
    const uint32_t cols = ws[0]->cols;
    for (int i = 0; i < n; i++)
        MEMRA_ASSERT(ws[i]->cols == cols);
    uint32_t t = 0, run0 = 0; /* run0: first token of the pending GEMV run [run0, t) */
    for (uint32_t s = 0; s < n_spans; s++) {
        const uint32_t len = spans[s];
        if (!span_takes_gemm(b, ws, n, len)) {
            t += len;
            continue;
        }
        if (t > run0)
            matmul_gemv(b, ws, ys, n, x, run0, t - run0);
        bool converted = false; /* x of this span converted by an earlier weight of the group (f32 ones read x
                                   as is): the others reuse it when their input type is the same */
        for (int i = 0; i < n; i++) {
            cuda_gemm_run(b->gemm, ws[i]->dtype, ws[i]->d, ws[i]->rows, cols, x + (uint64_t)t * cols, len,
                          ys[i] + (uint64_t)t * ws[i]->rows, ws[i]->scale, converted ? CUDA_GEMM_X_PREPARED : 0);
            converted |= ws[i]->dtype != DTYPE_F32;
        }
        t += len;
        run0 = t;
    }
    if (t > run0)
        matmul_gemv(b, ws, ys, n, x, run0, t - run0);
}

static void matmul(struct cuda_backend *b, const struct cuda_weight *w, const float *x, float *y,
                   const uint32_t *spans, uint32_t n_spans)
{
    matmul_multi(b, &w, &y, 1, x, spans, n_spans);
}

/* Embedding rows, positions, table offsets and the concatenated block tables
 * of the batch into the staging buffers, then up to the device (d_meta:
 * [0, T) positions, [T, 2T) offsets into [2T, 2T + n_ids) block ids). */
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
            model_embed_row(m, s->tokens[t], b->h_x + (uint64_t)g * dim);
            b->h_meta[g] = s->pos + t;
            b->h_meta[T + g] = n_ids;
        }
        n_ids += nb;
    }
    cuda_upload(b->ctx, b->x, b->h_x, (size_t)T * dim * 4);
    cuda_upload(b->ctx, b->d_meta, b->h_meta, ((size_t)T * 2 + n_ids) * 4);
}

/* ---- attention ----------------------------------------------------------------
 * How each sequence's attention runs is decided from its own span only, so a
 * sequence's bits never depend on the rest of the batch or on the path (the
 * decode step's rows and the general path's one-token spans run the same
 * kernel). */

/* Rows [t0, t0 + n) through the split-K decode kernel, attn_rows a launch;
 * tok_pos, tok_table: device (≥ t0 + n), table offsets into kv->tables. */
static void attn_decode_rows(struct cuda_backend *b, const struct cuda_attn_kv *kv, const uint32_t *tok_pos,
                             const uint32_t *tok_table, uint32_t t0, uint32_t n, float scale, uint32_t window)
{
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    for (uint32_t o = 0; o < n; o += b->attn_rows) {
        const uint32_t t = t0 + o, nr = n - o < b->attn_rows ? n - o : b->attn_rows;
        cuda_attn_decode(b->ctx, b->q + (uint64_t)t * b->q_dim, b->att + (uint64_t)t * b->q_dim, nr, tok_pos + t,
                         tok_table + t, ad, *kv, scale, window, b->attn_part);
    }
}

/* The general path's plan: one token → a decode row; a longer span → the
 * prefill kernel when attn_fast and the head_dim is one it takes, else decode
 * rows. Consecutive decode rows form runs; the prefill spans go up once per
 * forward. Needs h_meta filled by embed_upload (table offsets at [T, 2T)). */
static void attn_plan(struct cuda_backend *b, const struct backend_batch *batch, uint32_t T)
{
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    const bool prefill = b->attn_fast && cuda_attn_prefill_supported(ad);
    uint32_t *runs = b->h_attn_runs, nr = 0, ns = 0, max_n = 0, g = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t n = s->n_tokens;
        if (prefill && n > 1) {
            b->h_attn_spans[ns++] = (struct cuda_attn_span){.q0 = g, .n = n, .pos0 = s->pos, .table = b->h_meta[T + g]};
            max_n = n > max_n ? n : max_n;
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
    b->n_attn_spans = ns;
    b->max_attn_span = max_n;
    if (ns > 0)
        cuda_upload(b->ctx, b->d_attn_spans, b->h_attn_spans, ns * sizeof(*b->h_attn_spans));
}

/* att (T, q_dim) = attention of q over one layer's KV as attn_plan decided. */
static void attention(struct cuda_backend *b, const struct cuda_attn_kv *kv, const uint32_t *tok_pos,
                      const uint32_t *tok_table, float scale, uint32_t window)
{
    const struct model_config *c = &b->base.model->cfg;
    const struct cuda_attn_dims ad = {c->n_heads, c->n_kv_heads, c->head_dim};
    for (uint32_t r = 0; r < b->n_attn_runs; r++)
        attn_decode_rows(b, kv, tok_pos, tok_table, b->h_attn_runs[2 * r], b->h_attn_runs[2 * r + 1], scale, window);
    if (b->n_attn_spans > 0)
        cuda_attn_prefill(b->ctx, b->q, b->att, b->d_attn_spans, b->n_attn_spans, b->max_attn_span, ad, *kv, scale,
                          window);
}

/* ---- decode step ------------------------------------------------------------
 * A batch of T ≤ dec_g sequences × 1 token (the steady state of generation)
 * runs here instead of the general path: the step's inputs (token ids,
 * positions, block-table offsets, block tables) go up in ONE async copy from
 * pinned memory into fixed device buffers (d_dec), the whole forward — the
 * embedding gather (embed.cu), every layer, the final norm and the logits
 * GEMV — replays as a CUDA graph captured on the first step of each T, and
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
 * MEMRA_CUDA_GRAPH=0 runs the same step eagerly (no graph); MEMRA_CUDA_DECODE=0
 * sends decode batches down the general path (both for measurements). */

static bool group_quantized(const struct cuda_weight *const *ws, int n)
{
    for (int i = 0; i < n; i++)
        if (is_quantized(ws[i]->dtype))
            return true;
    return false;
}

/* ys[i] (T, rows) = x (T, cols) · ws[i]ᵀ, T ≤ dec_g: one GEMV per weight;
 * prepared: x's quantized form is already in the context's scratch. */
static void decode_matmul(struct cuda_backend *b, const struct cuda_weight *const *ws, float *const *ys, int n,
                          const float *x, uint32_t T, bool prepared)
{
    if (!prepared && group_quantized(ws, n))
        cuda_gemv_prep_x(b->ctx, x, ws[0]->cols, T);
    for (int i = 0; i < n; i++) {
        const struct cuda_weight *w = ws[i];
        if (w->dtype == DTYPE_F32) {
            cuda_fwd_matmul_f32(b->ctx, w->d, w->rows, w->cols, x, T, ys[i], w->scale);
            continue;
        }
        if (use_mmv(b, w, T)) {
            cuda_mmv(b->ctx, w->dtype, w->d, w->rows, w->cols, x, T, ys[i], w->scale);
            continue;
        }
        const bool q = is_quantized(w->dtype);
        cuda_gemv_variant(b->ctx, w->dtype, w->d, w->rows, w->cols, x, T, ys[i], w->scale, 0, q ? 1 : 0,
                          q ? CUDA_GEMV_X_PREPARED : 0);
    }
}

/* xb (T, dim) = rmsnorm(x += add) · w (add NULL: x as is), preparing xb for the
 * quantized GEMVs when prep and the shapes allow; returns whether it did. */
static bool decode_norm(struct cuda_backend *b, const float *add, const float *w, uint32_t T, bool prep)
{
    const struct model_config *c = &b->base.model->cfg;
    prep = prep && b->dec_fuse;
    if (prep)
        cuda_rmsnorm_prep(b->ctx, add ? add : b->x, add ? b->x : NULL, w, b->xb, T, c->dim, c->norm_eps);
    else
        cuda_rmsnorm(b->ctx, add ? add : b->x, add ? b->x : NULL, w, b->xb, T, c->dim, c->norm_eps);
    return prep;
}

/* Everything a decode step queues on the stream after its input copy: what the
 * graph of T holds. Logits of the T tokens → b->logits (T, vocab). */
static void decode_body(struct cuda_backend *b, uint32_t T)
{
    const struct model *m = b->base.model;
    const struct model_config *c = &m->cfg;
    const uint32_t *tok = b->d_dec, *tok_pos = b->d_dec + DEC_G, *tok_table = b->d_dec + 2 * DEC_G;
    const uint32_t *blocks = b->d_dec + 3 * DEC_G;
    if (b->d_embd) /* else the caller uploaded the rows into x */
        cuda_embed_gather(b->ctx, m->tok_embd.dtype, b->d_embd, m->tok_embd.row_bytes, c->dim, (const int32_t *)tok,
                          T, b->embd_scale, b->x);
    const struct cuda_attn_shape sh = {c->n_heads, c->n_kv_heads, c->head_dim};
    const uint64_t kind_stride = (uint64_t)b->base.cfg.kv_blocks * BACKEND_KV_BLOCK * b->kv_dim;
    const bool gelu = c->act == MODEL_ACT_GELU_TANH;
    const float *pending = NULL; /* the last block's output, added into x by the next norm */
    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        const struct cuda_layer *D = &b->layers[l];
        const struct cuda_weight *qkv[3] = {&D->wq, &D->wk, &D->wv};
        float *qkv_out[3] = {b->q, b->k, b->v};
        bool prep = decode_norm(b, pending, D->attn_norm, T, group_quantized(qkv, 3));
        decode_matmul(b, qkv, qkv_out, 3, b->xb, T, prep);
        float *kl = b->kv + (uint64_t)l * 2 * kind_stride;
        const struct cuda_kv_view kv = {kl, kl + kind_stride, blocks, tok_table};
        cuda_fwd_qk_rope_kv(b->ctx, b->q, b->k, b->v, T, tok_pos, D->bq, D->bk, D->bv, D->q_norm, D->k_norm,
                            D->inv_freq, c->rope_style == MODEL_ROPE_NEOX, c->norm_eps, sh, kv);
        const struct cuda_attn_kv akv = {kv.k, kv.v, blocks, 1}; /* tok_table: offsets into blocks */
        attn_decode_rows(b, &akv, tok_pos, tok_table, 0, T, c->attn_scale, L->sliding ? c->sliding_window : 0);
        const struct cuda_weight *wo = &D->wo;
        decode_matmul(b, &wo, &b->xb2, 1, b->att, T, false);
        if (D->post_attn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_attn_norm, b->xb2, T, c->dim, c->norm_eps);
        const struct cuda_weight *gu[2] = {&D->w_gate, &D->w_up};
        float *gu_out[2] = {b->hb, b->hb2};
        prep = decode_norm(b, b->xb2, D->ffn_norm, T, group_quantized(gu, 2));
        decode_matmul(b, gu, gu_out, 2, b->xb, T, prep);
        const struct cuda_weight *wd = &D->w_down;
        prep = b->dec_fuse && is_quantized(wd->dtype);
        if (prep)
            cuda_glu_prep(b->ctx, b->hb, b->hb2, T, c->ffn_dim, gelu);
        else
            cuda_fwd_glu(b->ctx, b->hb, b->hb2, (uint64_t)T * c->ffn_dim, gelu);
        decode_matmul(b, &wd, &b->xb2, 1, b->hb, T, prep);
        if (D->post_ffn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_ffn_norm, b->xb2, T, c->dim, c->norm_eps);
        pending = b->xb2;
    }
    const struct cuda_weight *out = &b->output;
    const bool prep = decode_norm(b, pending, b->out_norm, T, is_quantized(out->dtype));
    decode_matmul(b, &out, &b->logits, 1, b->xb, T, prep);
    if (c->final_softcap <= 0.0f) /* softcapped rows: the host caps, then picks */
        cuda_argmax_rows(b->ctx, b->logits, T, c->vocab, b->d_argmax);
}

/* Whether sequence s of a decode step takes its greedy pick from the device
 * instead of its logit row. */
static bool dec_wants_argmax(const struct cuda_backend *b, const struct backend_seq *s)
{
    return s->n_logits && s->argmax && b->base.model->cfg.final_softcap <= 0.0f;
}

/* A batch the decode step takes: sequences of one token each (more than
 * dec_g of them run as consecutive groups of dec_g, see cuda_be_forward). */
static bool decode_shaped(const struct cuda_backend *b, const struct backend_batch *batch)
{
    if (!b->dec_on || batch->n_seqs == 0)
        return false;
    for (uint32_t i = 0; i < batch->n_seqs; i++)
        if (batch->seqs[i].n_tokens != 1)
            return false;
    return true;
}

static void decode_step(struct cuda_backend *b, const struct backend_batch *batch)
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
    if (!b->d_embd)
        cuda_upload_async(b->ctx, b->x, b->h_xdec, (size_t)T * c->dim * sizeof(float));
    if (b->dec_graphs) {
        if (!b->graphs[T]) {
            cuda_graph_begin(b->ctx);
            decode_body(b, T);
            b->graphs[T] = cuda_graph_end(b->ctx);
        }
        cuda_graph_launch(b->ctx, b->graphs[T]);
    } else {
        decode_body(b, T);
    }
    /* the greedy picks asked for (all T: 4 bytes each), then the logit rows
     * asked for, contiguous runs in one copy each */
    bool any_argmax = false;
    for (uint32_t i = 0; i < T; i++)
        any_argmax |= dec_wants_argmax(b, &batch->seqs[i]);
    if (any_argmax)
        cuda_download_async(b->ctx, b->h_argmax, b->d_argmax, (size_t)T * sizeof(int32_t));
    for (uint32_t i = 0; i < T;) {
        if (batch->seqs[i].n_logits == 0 || dec_wants_argmax(b, &batch->seqs[i])) {
            i++;
            continue;
        }
        uint32_t j = i + 1;
        while (j < T && batch->seqs[j].n_logits && !dec_wants_argmax(b, &batch->seqs[j]))
            j++;
        cuda_download_async(b->ctx, b->h_logits + (uint64_t)i * c->vocab, b->logits + (uint64_t)i * c->vocab,
                            (size_t)(j - i) * c->vocab * sizeof(float));
        i = j;
    }
    cuda_ctx_sync(b->ctx);
    for (uint32_t i = 0; i < T; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        if (s->n_logits == 0)
            continue;
        if (dec_wants_argmax(b, s)) {
            s->argmax[0] = b->h_argmax[i];
            continue;
        }
        const float *src = b->h_logits + (uint64_t)i * c->vocab;
        if (c->final_softcap > 0.0f)
            for (uint32_t k = 0; k < c->vocab; k++)
                s->logits[k] = c->final_softcap * tanhf(src[k] / c->final_softcap);
        else
            memcpy(s->logits, src, (size_t)c->vocab * sizeof(float));
        if (s->argmax) /* softcapped: picked here, after the cap */
            s->argmax[0] = backend_logits_argmax(s->logits, c->vocab);
    }
}

static int cuda_be_forward(struct backend *base, const struct backend_batch *batch, char *err, size_t errlen)
{
    struct cuda_backend *b = (struct cuda_backend *)base;
    if (!b->kv)
        return err_set(err, errlen, "cuda backend: forward before load_weights");
    if (backend_batch_check(base, batch, err, errlen) != 0)
        return -1;
    if (decode_shaped(b, batch)) {
        /* groups of dec_g: a sequence's bits are those of its group's graph,
         * which equal the sequence's alone (the GEMVs and the mmv give each
         * token the same bits whatever the batch; kernel_forward checks batch
         * vs alone) — except that MEMRA_DECODE_MMV=auto runs a group of 1 on
         * the CUDA-core GEMV and larger ones on the mmv (logits within ~1e-6) */
        for (uint32_t g0 = 0; g0 < batch->n_seqs; g0 += b->dec_g) {
            const uint32_t n = batch->n_seqs - g0 < b->dec_g ? batch->n_seqs - g0 : b->dec_g;
            const struct backend_batch sub = {.n_seqs = n, .seqs = batch->seqs + g0};
            decode_step(b, &sub);
        }
        return 0;
    }
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
    const uint64_t kind_stride = (uint64_t)base->cfg.kv_blocks * BACKEND_KV_BLOCK * b->kv_dim;
    const uint64_t nx = (uint64_t)T * c->dim;

    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        const struct cuda_layer *D = &b->layers[l];
        /* attention block */
        cuda_rmsnorm(b->ctx, b->x, NULL, D->attn_norm, b->xb, T, c->dim, c->norm_eps);
        const struct cuda_weight *qkv[3] = {&D->wq, &D->wk, &D->wv};
        float *qkv_out[3] = {b->q, b->k, b->v};
        matmul_multi(b, qkv, qkv_out, 3, b->xb, spans, n_spans);
        float *kl = b->kv + (uint64_t)l * 2 * kind_stride;
        const struct cuda_kv_view kv = {kl, kl + kind_stride, blocks, tok_table};
        cuda_fwd_qk_rope_kv(b->ctx, b->q, b->k, b->v, T, tok_pos, D->bq, D->bk, D->bv, D->q_norm,
                            D->k_norm, D->inv_freq, c->rope_style == MODEL_ROPE_NEOX, c->norm_eps, sh, kv);
        const struct cuda_attn_kv akv = {kv.k, kv.v, blocks, 1}; /* tok_table: offsets into blocks */
        attention(b, &akv, tok_pos, tok_table, c->attn_scale, L->sliding ? c->sliding_window : 0);
        matmul(b, &D->wo, b->att, b->xb2, spans, n_spans);
        if (D->post_attn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_attn_norm, b->xb2, T, c->dim, c->norm_eps);
        cuda_fwd_add(b->ctx, b->x, b->xb2, nx);
        /* feed-forward block */
        cuda_rmsnorm(b->ctx, b->x, NULL, D->ffn_norm, b->xb, T, c->dim, c->norm_eps);
        const struct cuda_weight *gu[2] = {&D->w_gate, &D->w_up};
        float *gu_out[2] = {b->hb, b->hb2};
        matmul_multi(b, gu, gu_out, 2, b->xb, spans, n_spans);
        cuda_fwd_glu(b->ctx, b->hb, b->hb2, (uint64_t)T * c->ffn_dim, c->act == MODEL_ACT_GELU_TANH);
        matmul(b, &D->w_down, b->hb, b->xb2, spans, n_spans);
        if (D->post_ffn_norm)
            cuda_rmsnorm(b->ctx, b->xb2, NULL, D->post_ffn_norm, b->xb2, T, c->dim, c->norm_eps);
        cuda_fwd_add(b->ctx, b->x, b->xb2, nx);
    }

    /* logits for the last n_logits tokens of each sequence, 8 rows at a time */
    uint32_t g = 0;
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        g += s->n_tokens;
        if (s->n_logits == 0)
            continue;
        const float *h = b->x + (uint64_t)(g - s->n_logits) * c->dim;
        cuda_rmsnorm(b->ctx, h, NULL, b->out_norm, b->xb, s->n_logits, c->dim, c->norm_eps);
        for (uint32_t r0 = 0; r0 < s->n_logits; r0 += CUDA_GEMV_MAX_BATCH) {
            const uint32_t nr = s->n_logits - r0 < CUDA_GEMV_MAX_BATCH ? s->n_logits - r0 : CUDA_GEMV_MAX_BATCH;
            matmul(b, &b->output, b->xb + (uint64_t)r0 * c->dim, b->logits, &nr, 1); /* ≤ 8 rows: GEMV */
            float *dst = s->logits + (uint64_t)r0 * c->vocab;
            cuda_download(b->ctx, dst, b->logits, (size_t)nr * c->vocab * 4);
            if (c->final_softcap > 0.0f)
                for (uint64_t k = 0; k < (uint64_t)nr * c->vocab; k++)
                    dst[k] = c->final_softcap * tanhf(dst[k] / c->final_softcap);
            if (s->argmax) /* the general path's rows come down anyway: picked on the host */
                for (uint32_t r = 0; r < nr; r++)
                    s->argmax[r0 + r] = backend_logits_argmax(dst + (uint64_t)r * c->vocab, c->vocab);
        }
    }
    cuda_ctx_sync(b->ctx);
    return 0;
}

const struct backend_ops backend_cuda_ops = {
    .name = "cuda",
    .init = cuda_be_init,
    .load_weights = cuda_be_load_weights,
    .forward = cuda_be_forward,
    .kv_copy = cuda_be_kv_copy,
    .free = cuda_be_free,
};
