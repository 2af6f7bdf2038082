/* quant/quant.h — weight-format arithmetic: scalar conversions, row dequantization
 * and fused dequantize+dot for every weight type the CPU backend computes.
 *
 * Layouts are those of the GGUF format (ggml block structs) and of safetensors
 * (plain little-endian scalars). Bit-exactness reference: the Python `gguf`
 * package's gguf.quants.dequantize, checked by tests/py/test_quant_reference.py
 * on random blocks and on the default model's real tensors
 * (quant_dequantize_row returns exactly the float32 values that gguf-py
 * produces, bit for bit, whenever the f16 scale fields are finite).
 *
 * Types computed (quant_can_compute() is true):
 *   F32, F16, BF16, F8_E4M3, F8_E5M2,
 *   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS.
 *
 * FP8 carries NO scale here: an F8 row is converted element by element
 * (OCP FP8 as PyTorch float8_e4m3fn / float8_e5m2). Per-tensor scales
 * ("weight_scale") and block-128 scales ("weight_scale_inv", DeepSeek/Qwen FP8)
 * are the caller's job: apply them to the dot result or to the dequantized row.
 *
 * Rows: `n` is the number of elements of one row and must be a multiple of the
 * type's block size (dtype_info(t)->block_size: 1 for scalars, 32 for Q*_0/1 and
 * IQ4_NL, 256 for the K types and IQ4_XS); a row occupies
 * n / block_size * type_size bytes (dtype_row_bytes). Rows need no alignment.
 *
 * Inner loops are plain C written so that gcc -O2 vectorises them (fixed-width
 * lane loops, integer selects instead of float branches, no subnormal operands,
 * compile-time tables for FP8); no intrinsics, and -ffp-contract=off keeps every
 * multiply and add separately rounded (bit-exactness). Results are the same
 * bits for any -march. One-core speed: `memra-quant-check --bench TYPE`.
 * Thread safety: every function is pure (reads its inputs, writes only its
 * outputs); call from any thread — a multithreaded matmul splits the rows.
 */
#ifndef MEMRA_QUANT_QUANT_H
#define MEMRA_QUANT_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"

/* ---- scalar conversions ------------------------------------------------- */

/* IEEE binary16 → binary32; exact for every input (subnormals, ±inf, NaN with
 * its payload shifted into the f32 mantissa, as numpy/ml_dtypes do). */
float quant_f16_to_f32(uint16_t h);
/* binary32 → binary16, round to nearest even; overflow gives ±inf; a NaN stays
 * a NaN with its sign (payload truncated to 10 bits, made non-zero), exactly as
 * numpy's software float32→float16 cast. */
uint16_t quant_f32_to_f16(float f);
/* bfloat16 → binary32: exact (the upper 16 bits of a float). */
float quant_bf16_to_f32(uint16_t h);
/* binary32 → bfloat16, round to nearest even; a NaN becomes the canonical quiet
 * NaN 0x7fc0 with its sign (as ml_dtypes / torch). */
uint16_t quant_f32_to_bf16(float f);
/* OCP FP8 E4M3 ("fn": no infinities; S.1111.111 is NaN, max ±448) → f32, exact;
 * NaN → the canonical quiet NaN with its sign (as ml_dtypes / torch). */
float quant_f8e4m3_to_f32(uint8_t v);
/* OCP FP8 E5M2 (IEEE-like: S.11111.00 is ±inf, S.11111.xx NaN) → f32, exact;
 * NaN → the canonical quiet NaN with its sign (as ml_dtypes / torch). */
float quant_f8e5m2_to_f32(uint8_t v);

/* Row conversions for activations / KV caches (n any length). */
void quant_row_f32_to_f16(const float *src /* (n) */, uint16_t *dst /* (n) */, uint64_t n);
void quant_row_f32_to_bf16(const float *src /* (n) */, uint16_t *dst /* (n) */, uint64_t n);

/* ---- rows ---------------------------------------------------------------- */

/* True when the functions below accept type t. */
bool quant_can_compute(enum dtype t);

/* Expand one row of n elements of type t into dst (n floats). Returns 0, or -1
 * when t is not computed or n is not a multiple of t's block size (dst is then
 * untouched). Bit-exact with gguf.quants.dequantize (see the top of this file). */
int quant_dequantize_row(enum dtype t, const void *src, float *dst /* (n) */, uint64_t n);

/* Σ_i w_i·x_i over one row of type t, dequantizing on the fly, f32 arithmetic.
 * The w_i are exactly quant_dequantize_row's values, and the summation order is
 * fixed (so the result is the same on every x86 vector width):
 *     acc[l] = Σ over i ≡ l (mod 16), i increasing, of fl(w_i·x_i), from 0;
 *     then acc[l] += acc[l+8] (l < 8), += acc[l+4] (l < 4), += acc[l+2], += acc[l+1];
 *     result acc[0].
 * Tolerance against the exact dot of the dequantized row (checked by
 * tests/unit/test_quant_dot.c against a double-precision dot, and the order
 * above bit for bit):
 *     |result − Σ w_i·x_i| ≤ (n/16 + 5)·2^-24·Σ_i |w_i·x_i| + n·2^-149
 * Preconditions (asserted, abort on violation — validate at load time with
 * quant_can_compute and dtype_row_bytes): t computed, n a multiple of the block
 * size. Non-finite weights or inputs propagate as IEEE arithmetic does. */
float quant_dot_row_f32(enum dtype t, const void *row, const float *x /* (n) */, uint64_t n);

/* y[r] = quant_dot_row_f32(t, row r, x, n) for r in [0, rows): the matrix–vector
 * product of the CPU matmul. w is (rows, n) row-major, rows contiguous (row r
 * starts at byte r · row_bytes). Same results, bit for bit, as calling
 * quant_dot_row_f32 per row; same preconditions. Single-threaded: the caller
 * splits rows across threads (any split gives identical results). */
void quant_matvec_f32(enum dtype t, const void *w /* (rows, n) row-major */, uint64_t rows, uint64_t n,
                      const float *x /* (n) */, float *y /* (rows) */);

/* Whether quant_dot_row_f32 / quant_matvec_f32 run a fused SIMD form for t on
 * this CPU (AVX2: Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS), so that they beat quant_dequantize_row and
 * a separate dot for one input vector (the CPU backend's one-token decode). */
bool quant_dot_fused_fast(enum dtype t);

#endif
