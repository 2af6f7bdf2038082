/* backend/cuda/gemm_q.h — the promoted GGUF prefill GEMM (gemm_q.cu) for gemm.cu: the weight's packed form (its
 * quantized values as bf16 tiles with the 32-blocks' scales and mins), x's tiles, and the GEMM on them. Internal to
 * src/backend/cuda (C++ linkage, CUDA types); gemm.cu's header says when it is taken (MEMRA_GEMM_PROMOTE).
 *
 *   y (T, rows) f32 = scale · x (T, n) · Wᵀ,  W of type t read from its packed form
 *
 * Shapes: rows % 128 == 0, n % 64 and % the type's block == 0, types Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, IQ4_XS (one scale a 32 elements). x
 * arrives as its bf16 parts (gemm.cu's conversion or the producers' claim): hi, and lo unless NULL (two parts, one
 * partial sum). All launches on ctx's stream; buffers are the caller's (sizes below), allocated once. */
#ifndef MEMRA_BACKEND_CUDA_GEMM_Q_H
#define MEMRA_BACKEND_CUDA_GEMM_Q_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"

struct cuda_ctx;

bool gemm_q_supported(enum dtype t, uint64_t rows, uint64_t n);
/* Whether type t's blocks carry a min (Q4_1, Q4_K, Q5_K): its packed weight and x tiles then add the min GEMM's
 * k tiles (m's and Σx's parts, gemm_q.cu). */
bool gemm_q_has_mins(enum dtype t);
/* Bytes of the packed weight (0 where not supported), and of x's tiles for T tokens. */
uint64_t gemm_q_packed_bytes(enum dtype t, uint64_t rows, uint64_t n);
uint64_t gemm_q_x_bytes(uint32_t T, uint64_t n, bool mins, int parts);
/* The most those take for any supported weight of rows · n ≤ max_w elements, or x of T · n ≤ max_x, both with
 * n ≤ max_n. */
uint64_t gemm_q_packed_cap(uint64_t max_w, uint64_t max_n);
uint64_t gemm_q_x_cap(uint64_t max_x, uint64_t max_n, int parts);
/* w (rows, n) as stored → packed (gemm_q_packed_bytes, 16-byte aligned). */
void gemm_q_pack(const struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, void *packed);
/* x's parts (T, n) bf16 → xt (gemm_q_x_bytes(T, n, mins, xlo ? 2 : 1), 16-byte aligned): every tile
 * (gemm_q_tile_x), or the min tiles alone (gemm_q_tile_mins: for gemm_q_run given x's rows; fewer bytes). */
void gemm_q_tile_x(const struct cuda_ctx *ctx, const uint16_t *xhi, const uint16_t *xlo, uint32_t T, uint64_t n,
                   bool mins, void *xt);
void gemm_q_tile_mins(const struct cuda_ctx *ctx, const uint16_t *xhi, const uint16_t *xlo, uint32_t T, uint64_t n,
                      void *xt);
/* y (T, rows): f32, or with y16 bf16 (each f32 value rounded once to nearest even). xhi NULL: every x tile from
 * xt (gemm_q_tile_x's); else x's own k tiles read from its parts' rows xhi (and xlo with two parts; 16-byte
 * aligned) by TMA, the mins' from xt (gemm_q_tile_mins's, unused without mins): the same tiles, the same bits. */
void gemm_q_run(const struct cuda_ctx *ctx, enum dtype t, const void *packed, const void *xt, int parts,
                uint64_t rows, uint64_t n, uint32_t T, void *y, bool y16, float scale, const uint16_t *xhi,
                const uint16_t *xlo);

#endif
