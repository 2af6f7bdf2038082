/* backend/cuda/cuda_decode.h — what the CUDA backend's decode step needs
 * beyond the kernels of cuda_ops.h / cuda_fwd.h: the embedding gather on the
 * device (embed.cu) and pinned host staging with asynchronous copies
 * (staging.cu), so that a decode step crosses the bus once each way with no
 * synchronisation but the final one. Plain C declarations (no CUDA types).
 */
#ifndef MEMRA_BACKEND_CUDA_DECODE_H
#define MEMRA_BACKEND_CUDA_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/dtype.h"

struct cuda_ctx;

/* ---- embedding gather (embed.cu) -------------------------------------------
 * x[t] (dim floats) = scale · dequant(table row tokens[t]) for t < T, the row
 * decoded by the same float operations as the CPU's quant_dequantize_row
 * (no contraction into FMAs), so the result equals model_embed_row bit for bit
 * for the types below (tests/kernels/kernel_embed.c). table: (vocab, row_bytes)
 * as in the model file, device memory; tokens: (T) device int32, already
 * checked against the vocabulary by the caller; x: (T, dim) device.
 * Types: F32, BF16, F16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K (dim a multiple of
 * the block size); others (and FP8 with block scales) stay on the host path. */
bool cuda_embed_supported(enum dtype t, uint64_t dim);
void cuda_embed_gather(struct cuda_ctx *ctx, enum dtype t, const void *table, uint64_t row_bytes, uint32_t dim,
                       const int32_t *tokens, uint32_t T, float scale, float *x);

/* ---- greedy sampling on the device (sample.cu) ------------------------------
 * out[r] = backend_logits_argmax(logits row r) (engine/backend.h's rule, bit
 * for bit) for r < rows; logits (rows, vocab), out (rows) int32, device. */
void cuda_argmax_rows(struct cuda_ctx *ctx, const float *logits, uint32_t rows, uint32_t vocab, int32_t *out);

/* ---- temperature draws on the device (sample.cu) --------------------------
 * For each row r < rows with params[r].on: out[2r] = the token sampler_sample
 * picks from logits row r for a sampler with sampler_plain_temperature true,
 * params[r].temperature, and the uniform params[r].u (sampler_draw_begin);
 * out[2r + 1] = 1 when u was used, 0 when the sampler's greedy case took the
 * pick (sampler_draw_end). Rows that are on are overwritten (scratch); rows
 * that are off are not touched, nor their out. logits (rows, vocab), params
 * (rows), out (2·rows) int32: device memory. */
struct cuda_draw_params {
    float temperature;
    uint32_t on; /* 0: leave the row; else 1, | CUDA_DRAW_WALK to always walk the running sum one token at a
                    time (the path sample.cu takes only near a boundary; for the tests) */
    double u;
};
#define CUDA_DRAW_WALK 2u
void cuda_draw_rows(struct cuda_ctx *ctx, float *logits, uint32_t rows, uint32_t vocab,
                    const struct cuda_draw_params *params, int32_t *out);

/* ---- top-k candidates on the device (topk.cu) -------------------------------
 * For each row r < rows with params[r].k > 0: out_idx / out_val row r
 * (CUDA_TOPK_MAX apart) ← the min(k, CUDA_TOPK_MAX, vocab) tokens with the
 * largest z = l / temperature in the order (z desc, id asc) and their z (l:
 * the logit with NaN as −inf, +inf as FLT_MAX; −0 and +0 equal, a zero z
 * comes back +0), out_greedy[r] ← the greedy rule's token over l (−1: no
 * finite l) — what sampler_sample_candidates (sample.h) replays. Rows with k
 * 0 are not touched; the others are overwritten (scratch), those with stats
 * by their z (a zero z +0). Device memory. */
#define CUDA_TOPK_MAX 1024u
struct cuda_topk_params {
    float temperature; /* > 0 */
    uint32_t k;        /* 0: leave the row */
    uint32_t stats;    /* 1: also out_stats[r] (a nucleus draw) */
};
/* What sampler_sample_nucleus (sample.h) wants besides the candidates, with
 * w_i = e^(z_i − zmax) by the sampler's exp_neg and zmax the first
 * candidate's z: total = Σ w_i over the row (each term rounded once), rest =
 * the largest w_i over the tokens whose z ≤ the last candidate's (meaningless
 * when zmax is ±inf: the sampler takes the greedy pick then). */
struct cuda_topk_stats {
    double total;
    float rest;
    uint32_t pad;
};
void cuda_topk_rows(struct cuda_ctx *ctx, float *logits, uint32_t rows, uint32_t vocab,
                    const struct cuda_topk_params *params, int32_t *out_idx, float *out_val, int32_t *out_greedy,
                    struct cuda_topk_stats *out_stats);

/* ---- pinned host memory and asynchronous copies (staging.cu) ---------------
 * cuda_host_alloc: page-locked host memory (cudaHostAlloc) or abort; the async
 * copies are queued on the context's stream and return at once: the host
 * buffer must stay untouched until a later cuda_ctx_sync. */
void *cuda_host_alloc(size_t bytes);
void cuda_host_free(void *p);
void cuda_upload_async(struct cuda_ctx *ctx, void *dst_dev, const void *src_host, size_t bytes);
void cuda_download_async(struct cuda_ctx *ctx, void *dst_host, const void *src_dev, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
