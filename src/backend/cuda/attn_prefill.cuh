/* backend/cuda/attn_prefill.cuh — between attn_prefill.cu (cuda_attn_prefill, the mma.sync kernel) and
 * attn_prefill_wg.cu / attn_prefill_ws.cu (the wgmma kernels of the fast mode on a bf16 cache at head_dim 128):
 * whether a launch takes a wgmma kernel, and its launch (the spans that are not split; the split ones stay with the
 * mma.sync kernel's partials). Device code only (src/backend/cuda/).
 */
#ifndef MEMRA_BACKEND_CUDA_ATTN_PREFILL_CUH
#define MEMRA_BACKEND_CUDA_ATTN_PREFILL_CUH

#include "backend/cuda/attn.h"
#include "backend/cuda/cuda_common.cuh"

/* ctx->attn_prefill_wg (MEMRA_ATTN_PREFILL_WG) and the shape: the fast mode, a bf16 cache, head_dim 128. */
bool attn_prefill_wg_takes(const cuda_ctx *ctx, cuda_attn_dims d, cuda_attn_kv kv, bool exact);
/* Every span of the launch with splits ≤ 1 (scale2 = scale·log2(e)); two warpgroups a CTA where
 * ctx->attn_prefill_bm is 128 and max_n > 64, else one. */
void attn_prefill_wg(const cuda_ctx *ctx, const float *q, float *att, uint16_t *att16,
                     const cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv,
                     float scale2, uint32_t window);
/* The same launch on attn_prefill_ws.cu's warp-specialized kernel (TMA maps of kv.rows rows; pp: its two consumer
 * warpgroups' ping-pong); false, launching nothing, when kv.rows is 0. */
bool attn_prefill_ws(const cuda_ctx *ctx, const float *q, float *att, uint16_t *att16,
                     const cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv,
                     float scale2, uint32_t window, bool pp);

#endif
