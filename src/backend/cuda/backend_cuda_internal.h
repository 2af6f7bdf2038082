/* backend/cuda/backend_cuda_internal.h — the CUDA backend's private state,
 * shared by its host C files: backend_cuda.c (lifecycle: init, the KV pool,
 * free; the header comment there describes the whole backend),
 * cuda_weights.c (load_weights: the weights onto the device),
 * cuda_gemm_setup.c (the prefill GEMM's setup at load), cuda_forward.c (the
 * general forward path: per-span matmuls, the attention plan),
 * cuda_decode_step.c (the decode step: graphs, device embedding gather) and
 * cuda_logits_out.c (what both hand back for their logit rows: picks, draws,
 * top-k candidates, rows). Plain C; the GPU is reached only through
 * cuda_ops.h, cuda_fwd.h, cuda_decode.h and attn.h.
 */
#ifndef MEMRA_BACKEND_CUDA_INTERNAL_H
#define MEMRA_BACKEND_CUDA_INTERNAL_H

#include "backend/cuda/attn.h"
#include "backend/cuda/backend_cuda.h"
#include "backend/cuda/cuda_decode.h"
#include "backend/cuda/cuda_fwd.h"
#include "backend/cuda/cuda_ops.h"
#include "engine/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* A weight on the device: the file's bytes (GEMV types), or float32. */
struct cuda_weight {
    enum dtype dtype; /* DTYPE_F32: expanded, read by cuda_fwd_matmul_f32 */
    uint32_t rows, cols;
    float scale;
    uint32_t gemm_min; /* spans of ≥ gemm_min tokens take the GEMM; 0: never (cuda_be_gemm_setup) */
    bool mmv;          /* the tensor-core batched GEMV takes it (BF16, cols % 32 == 0) */
    uint8_t mmv_slices; /* its K slices there (0: its shape's; q, k, v: q|k|v's, cuda_layer.qkv_join) */
    void *d; /* (rows, row bytes) */
    const float *bs; /* F8_E4M3 with a scale a 128 × 128 block: ((rows + 127) / 128, (cols + 127) / 128) f32, else
                      * NULL (cuda_gemv_bs, cuda_gemm_run_bs) */
    void *kept; /* FP8 / GGUF: the prefill GEMM's dequantized copy (cuda_gemm_keep; MEMRA_GEMM_KEEP), or NULL */
};

/* Spans of ≥ 2 tokens (MEMRA_ATTN): the tensor-core prefill kernel split into
 * bf16 high + low parts (exact), the same kernel in plain bf16 (fast), or the
 * f32 decode kernel row by row (rows). Head dims the prefill kernel lacks
 * always run rows. */
enum cuda_be_attn { CUDA_BE_ATTN_MODE_EXACT, CUDA_BE_ATTN_MODE_FAST, CUDA_BE_ATTN_MODE_ROWS };

struct cuda_layer {
    float *attn_norm, *ffn_norm, *post_attn_norm, *post_ffn_norm; /* (dim) or NULL */
    float *bq, *bk, *bv;                                           /* qwen2 biases or NULL */
    float *q_norm, *k_norm;                                        /* (head_dim) or NULL */
    float *inv_freq;                                               /* (head_dim/2) */
    struct cuda_weight wq, wk, wv, wo, w_gate, w_up, w_down;
    /* q/k/v (or q/k when v's type differs) and gate/up as one matrix each
     * (rows 0: not fused), for the lone decode token's GEMV: the members'
     * bytes lie back to back in one allocation (their d point into it) when
     * they share type, width and scale, so one launch computes them all
     * (same bits: a row's sum does not depend on its neighbours) */
    struct cuda_weight qkv, gu;
    /* k|v and gate|up for decode batches (rows 0: not joined): one
     * tensor-core GEMV over both members where they are fused, take the mmv
     * and the joined launch gives each row the bits of its member's own
     * (cuda_mmv_rows_join; cuda_decode_step.c) */
    struct cuda_weight kv_join, gu_join;
    /* q|k|v for decode batches (rows 0: not joined; MEMRA_DECODE_QKV): one
     * wgmma GEMV over the fused q|k|v, whose K slices q, k and v take alone
     * too (their mmv_slices: cuda_mmv_join_slices), so that every row has
     * the same bits either way; taken instead of q beside k|v */
    struct cuda_weight qkv_join;
    /* mixture-of-experts layers (Qwen3-MoE) instead of w_gate / w_up / w_down:
     * the router (n_experts, dim) and the stacked experts (cuda_ops.h) */
    struct cuda_weight router;
    struct cuda_moe_weights moe;
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

    /* KV pool: layer l, kind k (0 keys, 1 values), block n, row r → element
     * (((l·2 + k)·kv_blocks + n)·16 + r)·kv_dim of kv (cuda_fwd.h), each
     * cuda_be_kv_elem bytes */
    void *kv;           /* device (n_layers, 2, kv_blocks, 16, kv_dim) */
    uint32_t tables_max; /* max_seqs · ceil(max_ctx / 16): the most block ids a batch brings */

    /* device scratch, T = cfg.max_batch_tokens */
    uint32_t *d_meta;   /* (3T + tables_max): positions, table offsets, the concatenated tables, the token ids */
    float *x, *xb, *xb2; /* (T, dim) */
    float *q, *att;     /* (T, q_dim) */
    float *k, *v;       /* (T, kv_dim) */
    float *hb, *hb2;    /* (T, ffn_dim) */
    float *qkv1, *gu1;  /* a lone decode token's fused outputs: (q_dim + 2 kv_dim), (2 ffn_dim) */
    float *kv_dec, *gu_dec; /* (DEC_G, 2 kv_dim), (DEC_G, 2 ffn_dim): a decode batch's joined k|v, gate|up rows
                             * (allocated when a layer joins them, else NULL) */
    float *qkv_dec;         /* (DEC_G, q_dim + 2 kv_dim): a decode batch's joined q|k|v rows (or NULL) */
    float *logits;      /* (max(dec_g, CUDA_GEMV_MAX_BATCH), vocab) */
    struct cuda_gemm *gemm; /* prefill GEMM (NULL: MEMRA_GEMM=off) */
    float *moe_logits;      /* (T, n_experts) router logits, MoE models */
    struct cuda_moe_scratch *moe; /* the MoE FFN's buffers for T tokens (NULL: dense model) */
    uint32_t moe_gemm_min;  /* spans of ≥ this many tokens run the experts as GEMMs (0: never; cuda_be_gemm_setup) */
    uint32_t *spans;    /* host (max_seqs): tokens of each sequence of the batch being run */
    bool dec_mixed;     /* MEMRA_DECODE_MIXED (default on): a mixed batch's one-token sequences take the
                           decode step after the general path has run its spans */
    struct backend_seq *mixed_seqs; /* (max_seqs) such a batch reordered: the spans, then the decode rows */
    /* attention (attn_plan): decode rows go attn_rows a launch */
    enum cuda_be_attn attn_mode; /* MEMRA_ATTN: how spans of ≥ 2 tokens run */
    uint32_t attn_rows;      /* min(CUDA_BE_ATTN_ROWS, max_batch_tokens) */
    float *attn_part;        /* cuda_attn_decode_scratch_floats(attn_rows): the splits' partials (decode rows,
                                and the split prefill spans as attn_rows·CUDA_ATTN_SPLITS row-splits) */
    struct cuda_attn_span *d_attn_spans, *h_attn_spans; /* (max_seqs) this batch's prefill-kernel spans */
    uint32_t *h_attn_launch; /* (max_seqs, 4) prefill launches: first span, spans, max n, max splits */
    uint32_t *h_attn_runs;   /* (max_seqs, 2) this batch's runs of decode-kernel rows: first token, count */
    uint32_t n_attn_launches, n_attn_runs;
    /* the next GEMM input whose bf16 parts its producer wrote (cuda_gemm_x_claim; cuda_forward.c), for x_claim_T
     * tokens; NULL: none. Taken or dropped by the next matmul_multi. */
    const float *x_claim;
    uint32_t x_claim_T;
    /* host staging */
    uint32_t *h_meta;   /* (3T + tables_max) */
    float *h_x;         /* (T, dim) embedding rows made on the host (when d_embd is NULL) */

    /* decode step (decode_step below), G = dec_g */
    bool dec_on, dec_graphs; /* MEMRA_CUDA_DECODE / MEMRA_CUDA_GRAPH not 0 */
    enum { MMV_OFF, MMV_AUTO, MMV_ALL } mmv_mode; /* MEMRA_DECODE_MMV (see use_mmv) */
    bool fuse_w; /* MEMRA_DECODE_FUSE (default on): a lone decode token's q/k/v and gate/up as one GEMV each, a
                  * batch's k|v as one tensor-core GEMV */
    uint32_t dec_g;          /* sequences a decode step takes: 64 when every matmul has the mmv, else 8 */
    bool dec_fuse;           /* dim, ffn_dim % 32 == 0, dim ≤ 16384: the _prep kernels apply */
    bool dec_side;           /* MEMRA_DECODE_SIDE (default on): a batch's k|v GEMV beside q's, a lone token's v
                              * beside q|k's where their types differ (cuda_decode_step.c) */
    int dec_rope;            /* MEMRA_DECODE_ROPE: a lone token's RoPE and KV write in its quantized q|k[|v] GEMV's
                              * epilogue (cuda_fwd_gemv_rope_kv) where the model and the kernel allow: 0 off, 1 on
                              * (the tensor-core GEMV only), 2 all (default: the dp4a GEMVs too) */
    bool fp8_block;          /* MEMRA_FP8_BLOCK (default native): FP8 layer weights with 128 × 128 block scales kept
                              * as stored (cuda_gemv_bs, cuda_gemm_run_bs); f32: expanded as before */
    bool dec_qkv;            /* MEMRA_DECODE_QKV (default on): a batch's q|k|v as one GEMV (cuda_layer.qkv_join) */
    bool dec_glu;            /* MEMRA_DECODE_GLU (default on): a batch's activation in the gate|up GEMV's epilogue,
                                written as down's A rows (cuda_mmv_glu) */
    bool x_producers;        /* MEMRA_GEMM_X_PRODUCERS (default on): a prefill GEMM's bf16 parts of x written by
                                the kernel that makes x (cuda_forward.c x_claim_ok) */
    bool gu_bf16;            /* MEMRA_GEMM_GU_BF16 (default on): under bf16 activations a prefill's gate and up
                                GEMMs write bf16 for the GLU (cuda_forward.c gu_bf16_ok) */
    bool gemm_accum;         /* MEMRA_GEMM_ACCUM (default on): a prefill's o and down GEMMs add into the residual
                                themselves (CUDA_GEMM_ACCUM; cuda_forward.c accum_ok): the same bits, one pass over
                                it fewer */
    bool attn_prep;          /* dec_fuse and cuda_attn_decode_prep_supported: the attention prepares its output */
    const void *d_embd;      /* token embedding rows as in the file, on the device (NULL: host rows) */
    float embd_scale;        /* its tensor scale × the model's embedding scale */
    uint32_t *d_dec;         /* (3G + tables_max) token ids, positions, table offsets (G each), tables */
    uint32_t *h_dec;         /* pinned, the same layout */
    float *h_xdec;           /* pinned (G, dim) embedding rows when d_embd is NULL */
    float *h_logits;         /* pinned (G, vocab) */
    int32_t *d_argmax;       /* (DEC_G) each row's greedy pick (sample.cu), written by the step's graph */
    int32_t *h_argmax;       /* pinned (DEC_G) */
    struct cuda_draw_params *d_draw, *h_draw; /* (DEC_G) each row's temperature draw, off when not asked
                                               * (backend_seq.draw; sample.cu), device and pinned */
    int32_t *d_draw_out, *h_draw_out;         /* (DEC_G × 2) its {token, u used} */
    /* top-k and nucleus candidates (backend_draw.top_k / nucleus; topk.cu): each row's parameters (k 0:
     * none), its candidates (DEC_G × CUDA_TOPK_MAX ids and z) and greedy token, device and pinned */
    struct cuda_topk_params *d_topk, *h_topk;
    int32_t *d_topk_idx, *h_topk_idx, *d_topk_greedy, *h_topk_greedy;
    float *d_topk_val, *h_topk_val;
    struct cuda_topk_stats *d_topk_stats, *h_topk_stats; /* (DEC_G) a nucleus row's total and rest */
    /* A nucleus row's z (left in its logit row by topk.cu) must outlive the forward for backend_draw_z; a
     * forward that makes its logit rows in several groups (decode groups of dec_g, the general path's chunks)
     * overwrites b->logits, so every group but the last copies its nucleus rows' z here first, and
     * backend_draw.row says where (CUDA_BE_Z_STASHED | slot) */
    float *z_stash;   /* (max_seqs, vocab), device_topk only */
    uint32_t z_rows;  /* its rows (max_seqs) */
    uint32_t n_z;     /* slots this forward used (cuda_be_forward resets it) */
    bool out_stash;   /* the group cuda_be_out_finish is handing back is followed by another in this forward */
    struct cuda_graph *graphs[CUDA_MMV_MAX_BATCH + 1]; /* by T, captured at load (cuda_be_decode_capture_all) */
    /* by T, for steps whose every row is at or past the attention's head-split
     * bound (cuda_attn_kv.pos_min): the kv-head grid, no exiting CTAs */
    struct cuda_graph *graphs_deep[CUDA_MMV_MAX_BATCH + 1];
};

/* Room for the decode step's per-sequence inputs: the largest dec_g. */
#define DEC_G CUDA_MMV_MAX_BATCH

/* Block ids fit 24 bits (the CPU backend's limit too); headroom left free
 * when the pool is sized from the free memory. */
#define CUDA_MAX_KV_BLOCKS (1u << 24)
#define CUDA_KV_HEADROOM ((uint64_t)1 << 30)
#define CUDA_BE_ATTN_ROWS 64u /* decode-attention rows a launch (sizes its partials' scratch) */
_Static_assert(CUDA_KV_BLOCK == BACKEND_KV_BLOCK, "cuda_fwd.h and engine/backend.h agree on the block size");
_Static_assert(CUDA_TOPK_MAX == BACKEND_TOPK_MAX, "cuda_decode.h and engine/backend.h agree on the top-k bound");


static inline bool is_quantized(enum dtype t)
{
    return t != DTYPE_F32 && t != DTYPE_BF16 && t != DTYPE_F16 && t != DTYPE_F8_E4M3;
}

/* Whether T tokens run through weight w on the tensor-core batched GEMV
 * (cuda_mmv: mmv_wg.cu, or mmv.cu with MEMRA_MMV=sync) rather than the
 * CUDA-core GEMV: MEMRA_DECODE_MMV=auto (default) takes it for 2 or more
 * tokens (1 token: the GEMV, ~15-30 % faster alone),
 * all for any T (then a sequence's bits never depend on the batch: the mmv
 * gives each token the same bits whatever T), off never. */
static inline bool use_mmv(const struct cuda_backend *b, const struct cuda_weight *w, uint32_t T)
{
    return w->mmv && (T >= 2 || b->mmv_mode == MMV_ALL);
}

/* x (n floats, a matmul's input) rounded to bf16 in place when the backend runs
 * bf16 activations (backend.h BACKEND_ACT_BF16; the CPU rounds at its matmul's
 * entry, the same bits). The producers of matmul inputs round as they write
 * under cuda_ctx_set_act_bf16 (cuda_rmsnorm_in / _prep, the GLUs, the decode
 * attention); this is for the one that does not: the prefill attention. */
static inline void cuda_be_round_act(const struct cuda_backend *b, float *x, uint64_t n)
{
    if (b->base.cfg.act_type == BACKEND_ACT_BF16)
        cuda_fwd_round_bf16(b->ctx, x, n);
}

/* ---- backend_cuda.c, cuda_weights.c, cuda_gemm_setup.c: the lifecycle -------- */
/* Bytes a KV element: 2 with cfg.kv_type BACKEND_KV_BF16, else 4 (f32). */
static inline uint32_t cuda_be_kv_elem(const struct cuda_backend *b)
{
    return b->base.cfg.kv_type == BACKEND_KV_BF16 ? 2 : 4;
}
/* cuda_alloc that remembers the pointer for free (backend_cuda.c); bytes already checked. */
void *cuda_be_dev_alloc(struct cuda_backend *b, uint64_t bytes);
/* Whether a weight as stored goes to the tensor-core batched GEMV. */
static inline bool cuda_be_weight_mmv(const struct model_weight *w)
{
    return !w->block_scale && w->scale == 1.0f && cuda_mmv_supported(w->dtype, w->rows, w->cols) &&
           w->rows <= UINT32_MAX / 4 && w->cols <= UINT32_MAX / 4;
}
/* Bytes a KV block takes over all layers, keys and values. */
static inline uint64_t cuda_be_kv_block_bytes(const struct cuda_backend *b)
{
    return (uint64_t)b->base.model->cfg.n_layers * 2 * BACKEND_KV_BLOCK * b->kv_dim * cuda_be_kv_elem(b);
}
/* The KV pool, after the weights (backend_cuda.c): cfg.kv_blocks if set, else what the free memory holds minus
 * CUDA_KV_HEADROOM (at most CUDA_MAX_KV_BLOCKS). */
int cuda_be_alloc_kv_pool(struct cuda_backend *b, char *err, size_t errlen);
/* backend_ops.load_weights (cuda_weights.c): the weights, the GEMM's setup, the KV pool, the decode graphs. */
int cuda_be_load_weights(struct backend *base, char *err, size_t errlen);
/* The prefill GEMM's setup (cuda_gemm_setup.c), before the KV pool takes the free memory. */
int cuda_be_gemm_setup(struct cuda_backend *b, char *err, size_t errlen);

/* ---- cuda_forward.c ---------------------------------------------------------- */
int cuda_be_forward(struct backend *base, const struct backend_batch *batch, char *err, size_t errlen);

/* Layer l's keys and values in the pool, as the RoPE kernel's view and the
 * attention's (settled: cuda_attn_kv.settled) over the batch's tables. */
static inline void cuda_be_kv_layer(const struct cuda_backend *b, uint32_t l, const uint32_t *blocks,
                                    const uint32_t *tok_table, uint32_t settled, struct cuda_kv_view *kv,
                                    struct cuda_attn_kv *akv)
{
    const uint64_t kind_bytes = (uint64_t)b->base.cfg.kv_blocks * BACKEND_KV_BLOCK * b->kv_dim * cuda_be_kv_elem(b);
    char *kl = (char *)b->kv + (uint64_t)l * 2 * kind_bytes;
    const uint32_t bf16 = b->base.cfg.kv_type == BACKEND_KV_BF16;
    *kv = (struct cuda_kv_view){.k = kl, .v = kl + kind_bytes, .blocks = blocks, .tok_table = tok_table, .bf16 = bf16};
    /* tok_table: offsets into blocks */
    *akv = (struct cuda_attn_kv){.k = kl, .v = kl + kind_bytes, .tables = blocks, .table_stride = 1,
                                 .settled = settled, .bf16 = bf16,
                                 .rows = b->base.cfg.kv_blocks * BACKEND_KV_BLOCK};
}

/* Rows [t0, t0 + n) of q ((T, q_dim): b->q, or the fused q/k/v output)
 * through the split-K decode attention kernel into b->att, attn_rows a launch
 * (the decode step's rows and the general path's one-token spans run the same
 * kernel). prep (n ≤ attn_rows, t0 = 0, cuda_attn_decode_prep_supported):
 * b->att's rows also in the quantized GEMVs' prepared form (the decode step's
 * o-projection then runs with CUDA_GEMV_X_PREPARED). */
void cuda_be_attn_rows(struct cuda_backend *b, const float *q, const struct cuda_attn_kv *kv, const uint32_t *tok_pos,
                       const uint32_t *tok_table, uint32_t t0, uint32_t n, float scale, uint32_t window, bool prep);

/* ---- cuda_logits_out.c: what a step hands back for its logit rows ---------- */
#define CUDA_BE_Z_STASHED 0x80000000u /* backend_draw.row: z_stash slot (row & ~this), else a b->logits row */
enum cuda_be_out_kind { CUDA_BE_OUT_NONE, CUDA_BE_OUT_ARGMAX, CUDA_BE_OUT_DRAW, CUDA_BE_OUT_TOPK, CUDA_BE_OUT_ROW };
/* The step's logit rows [0, n) of b->logits: row k is the row[k]-th logit row of seq[k]. */
struct cuda_be_out {
    const struct backend_seq *seq[DEC_G];
    uint32_t row[DEC_G];
    uint32_t n;
    enum cuda_be_out_kind kind[DEC_G]; /* set by cuda_be_out_plan */
    bool any[CUDA_BE_OUT_ROW + 1];
};
/* Each row's kind, and the draw / top-k parameters of rows [0, n) into
 * h_draw / h_topk (off where not asked). */
void cuda_be_out_plan(struct cuda_backend *b, struct cuda_be_out *o);
/* Those parameters up (async): the draws' when any row draws or all_draws
 * (the decode graph's draw kernel reads every row), the top-k's when any. */
void cuda_be_out_params_up(struct cuda_backend *b, const struct cuda_be_out *o, bool all_draws);
/* After the logits (and, unless queue_picks, the greedy picks and draws: the
 * decode graph makes them): the picks, draws and top-k candidates made on the
 * device, everything asked for brought down, one sync, each sequence filled. */
void cuda_be_out_finish(struct cuda_backend *b, const struct cuda_be_out *o, bool queue_picks);

/* ---- cuda_decode_step.c ------------------------------------------------------ */
/* Whether a batch is decode-shaped (every sequence one token) and the decode step is on. */
bool cuda_be_decode_shaped(const struct cuda_backend *b, const struct backend_batch *batch);
/* One decode step of batch->n_seqs ≤ b->dec_g sequences. */
void cuda_be_decode_step(struct cuda_backend *b, const struct backend_batch *batch);
/* At load (after the KV pool): every decode graph a step may replay, 1 to dec_g sequences (and the deep graph
 * of each T that has one), captured now rather than by the first step of each size (logged with its time). */
void cuda_be_decode_capture_all(struct cuda_backend *b);

#endif
