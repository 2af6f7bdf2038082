/* backend/cpu/cpu_internal.h — the CPU backend's state, shared by its files
 * (cpu_backend.c: lifecycle and the forward driver; cpu_ops.c: the threaded
 * kernels; cpu_dot.c: the f32 dots they are made of; cpu_moe.c: the expert FFN). Not for use outside src/backend/cpu/. */
#ifndef MEMRA_BACKEND_CPU_CPU_INTERNAL_H
#define MEMRA_BACKEND_CPU_CPU_INTERNAL_H

#include "backend/cpu/backend_cpu.h"
#include "core/threadpool.h"
#include "model/model.h"

struct cpu_backend {
    struct backend base;
    struct threadpool pool;
    uint32_t q_dim, kv_dim, ffn_max;

    /* KV pool: layer l, keys (0) or values (1), block k, row r →
     * kv + ((((l * 2 + kind) * kv_blocks + k) * BACKEND_KV_BLOCK + r) * kv_dim;
     * a position reaches its row only through cpu_kv_row() and the sequence's
     * block table. */
    float *kv;              /* (n_layers, 2, kv_blocks, BACKEND_KV_BLOCK, kv_dim) */

    /* per-batch scratch; T = cfg.max_batch_tokens */
    uint32_t *tok_pos;      /* (T) position of each batch token */
    const uint32_t **tok_blocks; /* (T) its sequence's block table (caller-owned, valid during forward) */
    float *x;               /* (T, dim) residual stream */
    float *xb;              /* (T, dim) normalised block input */
    float *xb2;             /* (T, dim) block output */
    float *q;               /* (T, q_dim) */
    float *k;               /* (T, kv_dim) */
    float *v;               /* (T, kv_dim) */
    float *att;             /* (T, q_dim) attention output (heads concatenated) */
    float *hb;              /* (T, ffn_max) gate / activation */
    float *hb2;             /* (T, ffn_max) up */
    float *scores;          /* (n_threads, max_ctx) attention weights, one row per thread */
    float *rowbuf;          /* (n_threads, 4, rowbuf_len) four weight rows expanded to float32 */
    uint64_t rowbuf_len;    /* the widest matrix row */

    /* MoE scratch (n_experts > 0), E = n_experts, K = n_experts_used */
    float *router;          /* (T, E) router logits, then probabilities */
    uint32_t *topk_idx;     /* (T, K) chosen experts, best first */
    float *topk_w;          /* (T, K) their weights */
    uint32_t *exp_start;    /* (E + 1) offsets into exp_pairs */
    uint32_t *exp_pairs;    /* (T * K) token * K + k, grouped by expert */
    float *ex_in;           /* (T, dim) inputs gathered for one expert */
    float *ex_tmp;          /* (T, dim) that expert's outputs */
    float *ex_out;          /* (T * K, dim) output of each (token, k) */
};

/* Block k's first row of layer's keys (kind 0) or values (kind 1). */
static inline float *cpu_kv_block(const struct cpu_backend *b, uint32_t layer, int kind, uint32_t k)
{
    const uint64_t i = ((uint64_t)layer * 2 + (uint64_t)kind) * b->base.cfg.kv_blocks + k;
    return b->kv + i * BACKEND_KV_BLOCK * b->kv_dim;
}

/* The row of position pos of the sequence with block table blocks. */
static inline float *cpu_kv_row(const struct cpu_backend *b, const uint32_t *blocks, uint32_t layer, int kind,
                                uint32_t pos)
{
    return cpu_kv_block(b, layer, kind, blocks[pos / BACKEND_KV_BLOCK]) +
           (uint64_t)(pos % BACKEND_KV_BLOCK) * b->kv_dim;
}

/* Σ a[i]·b[i] in a fixed summation order (cpu_dot.c; the widest SIMD the CPU
 * has, same bits). */
float cpu_dot_f32(const float *a, const float *b, uint64_t n);
/* out[r] = cpu_dot_f32(a[r], b, n) for r < 4, bit for bit, in one pass. */
void cpu_dot4_f32(const float *const a[4], const float *b, uint64_t n, float out[4]);
/* y[i] += a·x[i] for i < n. */
void cpu_axpy_f32(float *y, float a, const float *x, uint64_t n);
/* Four cpu_axpy_f32 calls (a[0], x[0]) .. (a[3], x[3]) in order, bit for bit, in one pass. */
void cpu_axpy4_f32(float *y, const float a[4], const float *const x[4], uint64_t n);
/* y (T, w->rows) = x (T, w->cols) · wᵀ, rows split across the pool; with
 * cfg.act_type BF16, x is first rounded to bf16 in place. */
void cpu_matmul(struct cpu_backend *b, const struct model_weight *w, float *x, float *y, uint32_t T);
/* The same for two or three weights sharing the input (q/k/v, gate/up) in one
 * pool job; ys[i] is (T, ws[i]->rows). */
void cpu_matmul_multi(struct cpu_backend *b, const struct model_weight *const *ws, float *const *ys, int n,
                      float *x, uint32_t T);
/* out (T, n) = x / rms(x) · w, per row of n; out may equal x. */
void cpu_rmsnorm(struct cpu_backend *b, float *out, const float *x, const float *w, uint32_t n, uint32_t T);
/* One layer's attention block input→att (biases, q/k norms, RoPE, KV append,
 * scaled-dot-product with causal / sliding-window masking). */
void cpu_attention(struct cpu_backend *b, uint32_t layer, uint32_t T);
/* hb = act(hb) · hb2 over T rows of n; round_in: gate and up rounded to bf16 first (a dense FFN under
 * BACKEND_ACT_BF16 — the CUDA backend's prefill GEMMs write them as bf16 there; MoE experts keep f32). */
void cpu_glu(struct cpu_backend *b, float *hb, const float *hb2, uint32_t n, uint32_t T, bool round_in);
/* The MoE FFN of layer: xb (T, dim) → xb2 (T, dim). */
void cpu_moe(struct cpu_backend *b, uint32_t layer, uint32_t T);

#endif
