/* backend/cuda/cuda_fwd.h — the forward-pass kernels of the CUDA backend that
 * are not GEMVs (those are in cuda_ops.h): the float32 matmul for weights no
 * GEMV kernel reads, the per-token attention prologue (bias, q/k RMSNorm, RoPE,
 * KV write), attention over a sequence's paged KV, the gated activation and the
 * residual add. Plain C declarations (no CUDA types); the definitions are in
 * fwd.cu (cuda_fwd_gemv_rope_kv, a GEMV with the RoPE in its epilogue: in
 * gemv.cu). The C driver (cuda_forward.c, cuda_decode_step.c) calls these.
 *
 * Every kernel computes each output element by the same float operations
 * whatever T (the number of batch tokens) is and wherever the token sits in the
 * batch: a sequence's results do not depend on the rest of the batch.
 *
 * Device-side buffers are named with their shapes; all are device memory.
 */
#ifndef MEMRA_BACKEND_CUDA_FWD_H
#define MEMRA_BACKEND_CUDA_FWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* core/dtype.h has C linkage but no guards of its own */
#endif

#include "core/dtype.h"

struct cuda_ctx;
struct cuda_gemm;

/* Largest head_dim the attention kernels take. */
#define CUDA_FWD_MAX_HEAD_DIM 256u

/* True when the CUDA runtime sees at least one device; never aborts (the
 * engine asks this to pick its default backend on machines without a GPU). */
bool cuda_fwd_device_usable(void);

/* Grow the quantized-GEMV activation scratch now, for vectors up to n_max and
 * a batch of CUDA_GEMV_MAX_BATCH, so that forward never allocates. */
void cuda_fwd_reserve_gemv_scratch(struct cuda_ctx *ctx, uint64_t n_max);

/* y (T, rows) = scale · x (T, n) · wᵀ, w (rows, n) float32 row-major: the path
 * for weights stored (or expanded at load) as float32. One warp per (row,
 * token), lane-strided products, warp-shuffle sum. */
void cuda_fwd_matmul_f32(struct cuda_ctx *ctx, const float *w, uint32_t rows, uint32_t n, const float *x, uint32_t T,
                         float *y, float scale);

/* Free device memory now (cudaMemGetInfo), bytes. */
size_t cuda_fwd_mem_free(void);

/* The paged KV layout (engine/backend.h: BACKEND_KV_BLOCK = 16 positions per
 * block). Per layer, keys and values are two separate arrays, each
 * (kv_blocks, 16, kv_dim) float32 — or bfloat16 when the backend's KV type is
 * bf16 (kv.bf16: written rounded to nearest even, read back exactly) —
 * kv_dim = n_kv_heads·head_dim: element
 * (block, row, c) is at base + ((block·16 + row)·kv_dim + c). The backend
 * allocates one pool (n_layers, 2, kv_blocks, 16, kv_dim) — layer l's keys at
 * pool + (2l)·kv_blocks·16·kv_dim, its values at pool + (2l+1)·kv_blocks·16·kv_dim
 * — but kernels only see the two per-layer pointers.
 *
 * Block tables, per batch (uploaded with the batch into scratch allocated at
 * init): blocks is the batch's sequences' tables concatenated (Σ over
 * sequences of ceil((pos + n_tokens)/16) ids); tok_table (T) gives, per batch
 * token, the offset in blocks where its sequence's table starts. Position s of
 * token t's sequence therefore lives in block blocks[tok_table[t] + s/16],
 * row s % 16: CUDA_KV_ROW(kv.k or kv.v, kv, t, s, kv_dim) in device code. */
#define CUDA_KV_BLOCK 16u
struct cuda_kv_view {
    void *k, *v;                /* (kv_blocks, 16, kv_dim) this layer's keys, values: f32, or bf16 */
    const uint32_t *blocks;     /* (Σ blocks) the batch's block tables, concatenated */
    const uint32_t *tok_table;  /* (T) offset of each token's table in blocks */
    uint32_t bf16;              /* nonzero: elements are bfloat16 */
};
/* The row (kv_dim elements: a void *) of position s of token t's sequence in
 * base (kv.k or kv.v). */
#define CUDA_KV_ROW(base, kv, t, s, kv_dim)                                                                       \
    ((void *)((char *)(base) + ((uint64_t)(kv).blocks[(kv).tok_table[t] + (s) / CUDA_KV_BLOCK] * CUDA_KV_BLOCK + \
                                (s) % CUDA_KV_BLOCK) * (uint64_t)(kv_dim) * ((kv).bf16 ? 2u : 4u)))

struct cuda_attn_shape {
    uint32_t n_heads, n_kv_heads, head_dim; /* head_dim even, ≤ CUDA_FWD_MAX_HEAD_DIM */
};

/* Per token t: q += bq, k += bk, v += bv (biases may be NULL); RMSNorm of each
 * q head with q_norm and each k head with k_norm (NULL: none); RoPE on q and k
 * at position tok_pos[t] with inv_freq (head_dim/2), adjacent pairs (neox
 * false) or halves (neox true); then k and v are stored in the paged KV at
 * that position of token t's sequence (kv's block table). q is read from
 * q_in (rows q_ld floats apart, ≥ n_heads·hd: the decode step's q|k|v rows of
 * one launch) and written to q (T, n_heads·hd) — q_in may be q with q_ld =
 * n_heads·hd: in place; k and v are only read (their results are the cache's
 * rows). k and v (T, n_kv_heads·hd) with rows kv_ld floats apart
 * (≥ n_kv_heads·hd: the decode step's k | v rows of one launch); tok_pos (T).
 * From CUDA_FWD_ROPE_MANY_TOKENS tokens (head dims ≤ 128) a block takes four,
 * the same bits. */
/* A lone token's RoPE and KV write done by the GEMV that computes its q|k (or q|k|v) rows, in the GEMV's epilogue
 * (the decode step, MEMRA_DECODE_ROPE): no RoPE launch between that GEMV and the attention. The rows are q (q_rows),
 * k (k_rows) and, when the matrix has them, v (k_rows more); q is written RoPE'd to q, k RoPE'd and v as is into kv's
 * rows at tok_pos[0] of token 0's table. Adjacent pairs only, no biases, no q/k norms: cuda_fwd_qk_rope_kv's
 * operations for that case (rope_rotate, cuda_common.cuh), so the same bits as the GEMV then the RoPE kernel. */
struct cuda_rope_epi {
    float *q;                  /* (q_rows) RoPE'd q; NULL: no epilogue (the GEMV writes y) */
    uint32_t q_rows, k_rows;   /* k_rows = kv_dim */
    uint32_t head_dim;         /* even; q_rows, k_rows multiples of it */
    const uint32_t *tok_pos;   /* (1) the token's position */
    const float *inv_freq;     /* (head_dim / 2) */
    struct cuda_kv_view kv;
    bool dp4a;                 /* the dp4a GEMVs may take it too (else only the tensor-core one) */
};
/* y = W x for a lone token's x prepared by cuda_gemv_prep_x (n, batch 1), through r's epilogue instead of into a y:
 * W (rows, n) of quantized type t is q|k (rows q_rows + k_rows) or q|k|v (+ k_rows); ks the dp4a GEMVs' K split
 * (cuda_gemv_engine_ksplit). The GEMV is the one cuda_gemv_variant(.., 0, ks, CUDA_GEMV_X_PREPARED) runs, and
 * takes the epilogue where that kernel keeps a rotation pair in one thread or in adjacent lanes (the int8
 * tensor-core GEMV; with r->dp4a the dp4a ones at ≥ 2 rows a warp, not the staged one): returns false, having
 * launched nothing, where it does not — the caller then runs the GEMV and cuda_fwd_qk_rope_kv. */
bool cuda_fwd_gemv_rope_kv(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, float scale,
                           int ks, const struct cuda_rope_epi *r);
/* A lone token's v row (kv_dim floats, no bias) into kv's values at tok_pos[0]: what cuda_fwd_qk_rope_kv does
 * with v, for a v GEMV that runs apart from a q|k that took cuda_fwd_gemv_rope_kv. */
void cuda_fwd_v_cache(struct cuda_ctx *ctx, const float *v, const uint32_t *tok_pos, struct cuda_kv_view kv,
                      uint32_t kv_dim);

#define CUDA_FWD_ROPE_MANY_TOKENS 2048u /* (at 512 tokens four a block filled too few SMs: pp512 −0.7-1.1 %) */
void cuda_fwd_qk_rope_kv(struct cuda_ctx *ctx, float *q, const float *q_in, uint32_t q_ld, const float *k,
                         const float *v, uint32_t kv_ld, uint32_t T,
                         const uint32_t *tok_pos,
                         const float *bq, const float *bk, const float *bv,
                         const float *q_norm, const float *k_norm, const float *inv_freq, bool neox, float eps,
                         struct cuda_attn_shape sh, struct cuda_kv_view kv);

/* att[t, h] = softmax_s(scale · q[t, h] · K[s]) · V[s] over the positions s of
 * token t's sequence (kv's block table) from p0 to p = tok_pos[t] (causal),
 * p0 = p + 1 − window when window > 0 and p + 1 > window, else 0; kv head
 * h / (n_heads/n_kv_heads) (GQA). q, att: (T, n_heads·hd). */
void cuda_fwd_attention(struct cuda_ctx *ctx, const float *q, float *att, uint32_t T, const uint32_t *tok_pos,
                        struct cuda_attn_shape sh, struct cuda_kv_view kv, float scale,
                        uint32_t window);

/* hb[i] = act(hb[i]) · hb2[i] over n elements; act silu (gelu false) or
 * gelu-tanh (gelu true). Under cuda_ctx_set_act_bf16 every dense GLU rounds
 * gate and up to bf16 first and its output (down's input) after (glu_in). */
void cuda_fwd_glu(struct cuda_ctx *ctx, float *hb, const float *hb2, uint64_t n, bool gelu);
/* cuda_fwd_glu of hb (T, width) that writes hb's parts for the prefill GEMM of
 * weights of type t (cuda_gemm_x_claim) instead of hb: true when it did (hb
 * keeps the gate values then: only the GEMM may read the result), false after
 * a plain cuda_fwd_glu. */
bool cuda_fwd_glu_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, float *hb, const float *hb2, uint32_t T,
                       uint32_t width, bool gelu);
/* cuda_fwd_glu_gemm of gate and up stored as bf16 g16, u16 (T, width) (the GEMMs' CUDA_GEMM_Y_BF16 outputs, under
 * cuda_ctx_set_act_bf16), writing the parts of x = hb for the down GEMM of weights of type t, which
 * cuda_gemm_x_claim_takes must allow (else it fails). */
void cuda_fwd_glu16_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, float *hb, const uint16_t *g16,
                         const uint16_t *u16, uint32_t T, uint32_t width, bool gelu);
/* The same from one matrix's rows: out[t, i] = act(gu[t, i]) · gu[t, width + i]
 * for gu (T, 2·width) (the decode step's joined gate|up output), out (T, width). */
void cuda_fwd_glu_rows(struct cuda_ctx *ctx, float *out, const float *gu, uint32_t T, uint32_t width, bool gelu);
/* cuda_fwd_glu_rows that also writes out's rows for the wgmma GEMV reading it
 * next (cuda_mmv_split_claim: its cuda_mmv_next launches no split); returns
 * false (and runs cuda_fwd_glu_rows) where it cannot. */
bool cuda_fwd_glu_rows_split(struct cuda_ctx *ctx, float *out, const float *gu, uint32_t T, uint32_t width, bool gelu);

/* x[i] += y[i] over n elements. */
void cuda_fwd_add(struct cuda_ctx *ctx, float *x, const float *y, uint64_t n);

/* x[i] = x[i] rounded to bf16 (nearest even) in place, over n elements: a
 * matmul's input under BACKEND_ACT_BF16 that no producer rounded (the prefill
 * attention's output; the CPU's quant_f32_to_bf16 bits). */
void cuda_fwd_round_bf16(struct cuda_ctx *ctx, float *x, uint64_t n);
/* The same for x (T, width), writing x's rounded parts for the prefill GEMM
 * of weights of type t (cuda_gemm_x_claim) instead of x: true when it did (x
 * left unrounded: only the GEMM may read it), false after cuda_fwd_round_bf16. */
bool cuda_fwd_round_bf16_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, float *x, uint32_t T,
                              uint32_t width);

/* Copy block src to block dst in every layer's keys and values of the pool
 * (n_layers, 2, kv_blocks, 16, kv_dim) of elem_bytes (4: f32, 2: bf16) each
 * (both ids < kv_blocks). */
void cuda_fwd_kv_copy(struct cuda_ctx *ctx, void *pool, uint32_t n_layers, uint32_t kv_blocks, uint32_t kv_dim,
                      uint32_t elem_bytes, uint32_t dst, uint32_t src);

#ifdef __cplusplus
}
#endif

#endif
