/* backend/cuda/backend_cuda.h — the CUDA backend (engine/backend.h ops).
 *
 * Weights are uploaded as stored (GGUF blocks unchanged, read by the GEMV
 * kernels of cuda_ops.h); a weight no GEMV kernel reads (F32, FP8 with
 * 128×128 block scales, odd shapes) is expanded to float32 at load. KV slots in
 * float32, contiguous per slot, and all scratch are allocated at init; forward
 * allocates nothing. Dense architectures (llama, qwen2, qwen3, gemma3);
 * qwen3_moe is refused at init. Plain C header: no CUDA types.
 */
#ifndef MEMRA_BACKEND_CUDA_BACKEND_CUDA_H
#define MEMRA_BACKEND_CUDA_BACKEND_CUDA_H

#include <stdbool.h>

#include "engine/backend.h"

extern const struct backend_ops backend_cuda_ops;

/* True when a CUDA device is present and the runtime can talk to it (never
 * aborts): the engine's default backend is "cuda" only then. */
bool backend_cuda_usable(void);

#endif
