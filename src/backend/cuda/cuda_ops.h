/* backend/cuda/cuda_ops.h — the one door from host C into the CUDA backend.
 *
 * Everything host C may call on the GPU is declared here as a plain C function;
 * the definitions live in the .cu files of this folder, which are the only
 * place CUDA headers appear (DESIGN.md §2). No CUDA type leaks through: streams
 * and events are carried inside the opaque struct cuda_ctx.
 *
 * Errors: a failing CUDA / cuBLAS call prints "file:line: statement: reason" and
 * aborts (CUDA_CHECK in cuda_common.cuh) — device errors are programming or
 * hardware errors, not bad input. Shape preconditions of the launchers are
 * checked with cuda_gemv_supported() by the caller at load time; a launcher
 * given an unsupported shape aborts with the reason.
 *
 * Activations and outputs of the GEMVs are float32. Rationale: the decode GEMV
 * is bound by reading the weights (n·rows weight bytes against 4·n activation
 * bytes, which stay in L1/L2), so f32 activations cost nothing measurable and
 * keep the result within f32 rounding of the CPU reference (quant_matvec_f32,
 * which also takes f32 activations): tolerance max|Δ| / max|ref| ≤ 1e-4
 * (tests/kernels/kernel_gemv.c; seen ≤ 4e-7). The quantized types convert x
 * internally to 24-bit integers (see cuda_gemv_prep_x), which keeps that.
 * Measured speeds: bench/GEMV.md.
 */
#ifndef MEMRA_BACKEND_CUDA_OPS_H
#define MEMRA_BACKEND_CUDA_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* core/dtype.h has C linkage but no guards of its own */
#endif

#include "core/dtype.h"

/* ---- device context (cuda_ctx.cu) ---------------------------------------- */

struct cuda_ctx; /* opaque: device ordinal, properties, one stream, cuBLAS handle */

/* Select `device`, read its properties and create the stream the launchers
 * use. Returns NULL with the reason in err when there is no such device (or
 * MEMRA_PDL has a value it does not know). MEMRA_PDL=on (default) | off:
 * whether the decode-path kernels are launched with programmatic dependent
 * launch (cuda_common.cuh): each kernel's blocks may start, and ask for their
 * first weights, while the kernel before it finishes; both give the same bits. */
struct cuda_ctx *cuda_ctx_init(int device, char *err, size_t errlen);
/* An on/off switch from the environment (docs/FLAGS.md): on when unset or
 * empty, off for "off"; false, with the reason in err, for any other value. */
bool cuda_env_on_off(const char *name, bool *on, char *err, size_t errlen);
/* An environment variable naming one of n choices: *out = its index, left as
 * it is when the variable is unset or empty; false with "NAME=v: expected a,
 * b or c" in err for anything else. */
bool cuda_env_pick(const char *name, const char *const *choices, int n, int *out, char *err, size_t errlen);
void cuda_ctx_free(struct cuda_ctx *ctx);
/* Quantized GEMVs of ksplit 1 (every one the engine runs): the staged kernel
 * (weights bulk-copied into shared memory several steps ahead, the first ones
 * while the kernel before still runs; the default, MEMRA_GEMV_STAGED=on) or
 * the register kernel (off). Same bits either way. */
void cuda_ctx_set_gemv_staged(struct cuda_ctx *ctx, bool on);
/* Which quantized GEMVs run on the int8 tensor cores (gemv_mma.cu;
 * MEMRA_GEMV_MMA off / on / all, default on) when the caller leaves the
 * launch shape to the library (rows per warp 0): none, Q4_K, or Q4_K and
 * Q6_K (rows of a multiple of 2048 elements). ks 0 = the K split by shape,
 * else 1, 2, 4 or 8 warps a row tile (tests). */
enum { CUDA_GEMV_MMA_OFF = 0, CUDA_GEMV_MMA_Q4K = 1, CUDA_GEMV_MMA_ALL = 2 };
void cuda_ctx_set_gemv_mma(struct cuda_ctx *ctx, int mode, int ks);
/* The tensor-core GEMV's grid (MEMRA_GEMV_MMA_GRID auto / tiles / resident):
 * one block a group of row tiles (TILES), or at most as many blocks as fit
 * the SMs at once, each looping over groups with its weight ring running on
 * from one tile into the next (RESIDENT); AUTO, the default, takes RESIDENT
 * where the groups fill more than one and at most CUDA_GEMV_MMA_RESIDENT_WAVES
 * waves of resident blocks (H100: gate+up alone, 3.4 waves, +3.5 %, gate/up
 * at batch 8, 6.8 waves, +5 %; a 15-wave Q4_K lm_head −6 %: bench/RESULTS.md
 * forty-first run). Same bits in every mode (kernel_gemv). */
enum { CUDA_GEMV_MMA_GRID_AUTO = 0, CUDA_GEMV_MMA_GRID_TILES = 1, CUDA_GEMV_MMA_GRID_RESIDENT = 2 };
#define CUDA_GEMV_MMA_RESIDENT_WAVES 8
void cuda_ctx_set_gemv_mma_grid(struct cuda_ctx *ctx, int mode);

const char *cuda_ctx_device_name(const struct cuda_ctx *ctx); /* "NVIDIA H200" */
int cuda_ctx_sm_count(const struct cuda_ctx *ctx);
size_t cuda_ctx_l2_bytes(const struct cuda_ctx *ctx);
size_t cuda_ctx_mem_bytes(const struct cuda_ctx *ctx);
/* Block until all work queued on the context's stream is done (aborts on a
 * pending kernel error, naming it). */
void cuda_ctx_sync(struct cuda_ctx *ctx);
/* A launch beside the main stream's (the decode step's k|v GEMV beside q's):
 * cuda_ctx_side_begin makes a second stream current, waiting for what the
 * main one has queued so far; launches go there (without PDL) until
 * cuda_ctx_side_end makes the main stream current again, whose next launches
 * run alongside; cuda_ctx_side_join makes the main stream wait for the side
 * launches. Works eagerly and under graph capture (a fork and a join). */
void cuda_ctx_side_begin(struct cuda_ctx *ctx);
void cuda_ctx_side_end(struct cuda_ctx *ctx);
void cuda_ctx_side_join(struct cuda_ctx *ctx);
/* The next wgmma GEMV launches share the SMs with a side-stream launch: the
 * launcher's pick takes a smaller shared-memory ring where that lets a block
 * of each fit on one SM (mmv_wg.cu; the same bits). */
void cuda_mmv_set_narrow(struct cuda_ctx *ctx, bool on);

/* Device memory: cudaMalloc'd (256-byte aligned, 16 readable bytes past the
 * end) or abort. */
void *cuda_alloc(size_t bytes);
void cuda_free(void *p);
void cuda_upload(struct cuda_ctx *ctx, void *dst_dev, const void *src_host, size_t bytes);
void cuda_download(struct cuda_ctx *ctx, void *dst_host, const void *src_dev, size_t bytes);
/* Fill n floats with a quiet NaN (poison outputs before a kernel test). */
void cuda_fill_nan_f32(struct cuda_ctx *ctx, float *p_dev, size_t n);
/* Device-to-device copy on the context's stream (bandwidth floor measurement). */
void cuda_copy_d2d(struct cuda_ctx *ctx, void *dst_dev, const void *src_dev, size_t bytes);

/* Timing with CUDA events on the context's stream: mark a start, mark a stop,
 * read the elapsed milliseconds (synchronises on the stop event). */
struct cuda_timer;
struct cuda_timer *cuda_timer_new(void);
void cuda_timer_free(struct cuda_timer *t);
void cuda_timer_start(struct cuda_ctx *ctx, struct cuda_timer *t);
void cuda_timer_stop(struct cuda_ctx *ctx, struct cuda_timer *t);
float cuda_timer_ms(struct cuda_timer *t);

/* Graph capture of the context's stream: everything queued between
 * cuda_graph_begin and cuda_graph_end is recorded (not run) and replayed by
 * cuda_graph_launch with one launch's overhead — how the decode step is meant
 * to run, and how the benchmark times kernels shorter than a launch. */
struct cuda_graph;
void cuda_graph_begin(struct cuda_ctx *ctx);
struct cuda_graph *cuda_graph_end(struct cuda_ctx *ctx);
void cuda_graph_launch(struct cuda_ctx *ctx, struct cuda_graph *g);
void cuda_graph_free(struct cuda_graph *g);

/* ---- GEMV: y[b][r] = scale · Σ_i W[r, i] · x[b][i] (gemv_plain.cu, gemv_quant.cu)
 *
 * w: the weight matrix exactly as stored in the model file — (rows, n)
 *    row-major, row r at byte r · dtype_row_bytes(t, n), GGUF block layouts for
 *    quantized types — in device memory, 16-byte aligned, and for the
 *    quantized types readable 16 bytes past the last row (all of it holds for
 *    memory from cuda_alloc, at any whole-row offset into it).
 * x: (batch, n) f32, y: (batch, rows) f32, both device memory.
 * batch: 1..CUDA_GEMV_MAX_BATCH activation vectors sharing one read of W.
 * scale: multiplies the result; 1.0f except for FP8 checkpoints with a
 *    per-tensor weight scale.
 */
#define CUDA_GEMV_MAX_BATCH 8

/* Types with a GEMV kernel: BF16, F16, F8_E4M3, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
 * IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS. n must be a multiple of the block size (8 for BF16/F16, 16 for
 * F8_E4M3, 32 / 256 for the block types); rows ≥ 1, rows·n < 2^40. */
bool cuda_gemv_supported(enum dtype t, uint64_t rows, uint64_t n);

void cuda_gemv(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
               const float *x /* (batch, n) */, uint32_t batch, float *y /* (batch, rows) */, float scale);
/* FP8 E4M3 with a scale a 128 × 128 block (model_weight.block_scale: Qwen3's and DeepSeek's FP8 checkpoints):
 *   y[b][r] = scale · Σ_cb bs[r / 128][cb] · Σ_{i in cb} W[r, i] · x[b][i]
 * bs ((rows + 127) / 128, (n + 127) / 128) f32 on the device; the fp8 kernel's shape (gemv_plain.cu), each 16-value
 * chunk's dot scaled by its block's scale: a row's bits depend on the shape only, not the batch. */
void cuda_gemv_bs(struct cuda_ctx *ctx, const void *w, const float *bs, uint64_t rows, uint64_t n,
                  const float *x /* (batch, n) */, uint32_t batch, float *y /* (batch, rows) */, float scale);

/* Quantized types (Q*, IQ4_XS) do not read x directly: cuda_gemv first
 * converts it (one small kernel, kernel_gemv_prep_x: 24-bit integers in byte
 * planes + a scale per 128 elements (32 where n % 128 ≠ 0), exact to ~2^-24 of
 * each block's max |x|) into a scratch buffer of the context, and the GEMV's
 * dot products then run on integers (dp4a; Q4_K on the int8 tensor cores).
 * When several GEMVs read the same x (q, k, v; gate, up), call
 * cuda_gemv_prep_x once and pass CUDA_GEMV_X_PREPARED to each. The scratch
 * grows on first use at a larger n·batch: make that first call outside a
 * graph capture. Plain types (BF16, F16, F8_E4M3) read x as is. */
void cuda_gemv_prep_x(struct cuda_ctx *ctx, const float *x /* (batch, n) */, uint64_t n, uint32_t batch);

#define CUDA_GEMV_X_PREPARED 1u /* flag: x was prepared by cuda_gemv_prep_x (same x, n, batch) */
/* The most rows one preparation takes (the mixture-of-experts FFN prepares a
 * whole step's token × expert rows at once; the GEMVs themselves take ≤ 8). */
#define CUDA_GEMV_MAX_ROWS (1u << 22)

/* cuda_gemv with explicit launch shape and flags, for the benchmark's sweep and
 * for callers that share a prepared x: rows_per_block 1, 2 or 4 rows per
 * thread block (plain types) or per warp (quantized); ksplit (quantized) 1 =
 * a warp walks whole rows, 4 = the 4 warps of a block split each row; 0 = the
 * launcher's choice for either. A row's bits depend on ksplit alone, not on
 * the rows a warp takes or the batch: batch > 1 ignores rows_per_block and
 * runs ksplit 4 where asked, else 1. Aborts on other values. */
void cuda_gemv_variant(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                       const float *x, uint32_t batch, float *y, float scale, int rows_per_block, int ksplit,
                       unsigned flags);
/* The K split the engine gives a quantized weight on the dp4a GEMVs, at every
 * batch size, so that a sequence's bits do not depend on its batch; head: the
 * weight is the output head (lm_head), which is never fused with another. MEMRA_GEMV_KSPLIT auto (the default,
 * CUDA_GEMV_KS_AUTO): 4 for the layer matrices, 1 for the head (its 128 k
 * rows stream best on the staged kernel: H100, 8B shapes, Q6_K 153 against
 * 174 µs a lone token, 528 against 709 at 8; layers' Q8_0 shapes 3-30 %
 * faster at 4; no type or row length measured to want another); 1 or 4:
 * every matrix. Never a function of the rows: a fused matrix (q|k|v,
 * gate|up: a lone token's) and its parts (a batch's) must split alike. The tensor-core
 * kernels (MEMRA_GEMV_MMA) ignore it. */
int cuda_gemv_engine_ksplit(const struct cuda_ctx *ctx, bool head);
#define CUDA_GEMV_KS_AUTO (-1) /* cuda_ctx.gemv_ks for MEMRA_GEMV_KSPLIT=auto */

/* ---- mixture-of-experts FFN (moe.cu), Qwen3-MoE ---------------------------
 *   y (T, dim) = Σ_k w[t,k] · down_e(silu(gate_e(x_t)) · up_e(x_t)),  e = topk[t,k]
 * with the routing rule of model_moe_route (model/model.h, the CPU's): softmax of
 * the router logits over all experts, the top k (ties to the lower index),
 * renormalised to sum 1 when norm_topk, and the weighted sum taken in rank
 * order. Every kernel runs on the device — no host sync, so the decode step's
 * graph holds it: one block routes every token and sorts the (token, k) pairs
 * by expert into a work list of ≤ 8 rows a slot, each expert's GEMVs (the
 * decode GEMV kernels of the weight's type, grouped: blockIdx.y a slot) run
 * over its rows, reading the tokens' x in place, and a last kernel sums each
 * token's k outputs. A row's result never depends on which
 * other rows share its expert or its slot, so a token's bits are the same
 * alone or in any batch, on either forward path. Each expert's matrices are
 * read once per slot (per 8 of its tokens in a step): right for decode, a
 * GEMM per expert would pay for long prefills.
 * Experts of one kind are stacked on the device, w_stride bytes apart (a
 * multiple of 256): gate_up holds each expert's gate rows then its up rows,
 * (2·ffn, dim); down (dim, ffn). Types: any cuda_gemv type, or F32 (the
 * expanded form, as cuda_fwd_matmul_f32 reads). n_experts ≤ CUDA_MOE_MAX_EXPERTS,
 * k ≤ CUDA_MOE_MAX_K, dim and ffn multiples of 32 (the quantized types' prep). */
#define CUDA_MOE_MAX_EXPERTS 1024
#define CUDA_MOE_MAX_K 16
struct cuda_moe_weights {
    uint32_t n_experts, k, dim, ffn;
    bool norm_topk;
    enum dtype gu_type, down_type;
    const void *gate_up, *down;
    uint64_t gu_stride, down_stride; /* bytes from one expert's matrix to the next */
    float gu_scale, down_scale;      /* per-tensor FP8 scales, else 1 */
    /* F8_E4M3 with 128 × 128 block scales (cuda_gemv_bs): each expert's scale table (gate|up: gate's rows' then up's,
     * whole 128-row blocks), gu_bs_stride / down_bs_stride floats apart; NULL otherwise */
    const float *gu_bs, *down_bs;
    uint64_t gu_bs_stride, down_bs_stride;
};
struct cuda_moe_scratch; /* device buffers for max_tokens tokens (token × k rows), made at load */
/* Whether a step of max_tokens tokens fits the grouped launches (token × k
 * rows ≤ CUDA_GEMV_MAX_ROWS, their work slots ≤ 65535 blocks; ~65 k tokens
 * at 8 experts a token). */
bool cuda_moe_tokens_ok(uint32_t n_experts, uint32_t k, uint32_t max_tokens);
bool cuda_moe_supported(const struct cuda_moe_weights *w, char *why, size_t whylen);
struct cuda_moe_scratch *cuda_moe_scratch_init(struct cuda_ctx *ctx, const struct cuda_moe_weights *w,
                                               uint32_t max_tokens);
void cuda_moe_scratch_free(struct cuda_moe_scratch *s);
/* Reserve the context's prepared-x scratch for another layer's expert types
 * (cuda_moe_scratch_init does it for the weights it is given). */
void cuda_moe_reserve(struct cuda_ctx *ctx, const struct cuda_moe_weights *w, uint32_t max_tokens);
/* logits: (T, n_experts) router logits, overwritten with the softmax; x, y:
 * (T, dim), 16-byte aligned, y may not alias x. T ≤ max_tokens. flags:
 * CUDA_GEMV_X_PREPARED when x's T rows are already prepared for a quantized
 * gate_up (cuda_rmsnorm_prep, cuda_gemv_prep_x). */
void cuda_moe_ffn(struct cuda_ctx *ctx, const struct cuda_moe_weights *w, struct cuda_moe_scratch *s, float *logits,
                  const float *x, uint32_t T, float *y, unsigned flags);
/* cuda_moe_ffn for a long span of one sequence's tokens (prefill): the same
 * routing, then (one host sync for the experts' row counts) each expert's
 * gate|up and down as the prefill GEMM (cuda_gemm_run) over its rows, the
 * experts read once. The GEMMs' shapes follow the span's own routing, so a
 * sequence's bits do not depend on the rest of the batch; within ~1e-6 of
 * cuda_moe_ffn's (the GEMM's numerics, cuda_gemm_mode). Needs
 * cuda_moe_gemm_supported and a gemm whose scratch holds max_tokens rows of
 * the experts' widths and, for types it dequantizes, an expert matrix. */
bool cuda_moe_gemm_supported(const struct cuda_moe_weights *w);
struct cuda_gemm;
void cuda_moe_ffn_gemm(struct cuda_ctx *ctx, struct cuda_gemm *gemm, const struct cuda_moe_weights *w,
                       struct cuda_moe_scratch *s, float *logits, const float *x, uint32_t T, float *y);
/* The routing of the last cuda_moe_ffn, for tests: (T, k) expert ids and weights (device pointers). */
const uint32_t *cuda_moe_topk_ids(const struct cuda_moe_scratch *s);
const float *cuda_moe_topk_weights(const struct cuda_moe_scratch *s);

/* ---- batched decode GEMV on the tensor cores (mmv.cu, mmv_wg.cu), BF16 -----
 *   y (T, rows) f32 = scale · x (T, n) f32 · Wᵀ,  T = 1..CUDA_MMV_MAX_BATCH
 * W read once for all T tokens; x split into bf16 hi + lo in the kernel (exact
 * to ~2^-17 of each element); each output's bits are the same for any T and
 * any position in the batch (mmv.cu's header says why). n % 32 == 0, w and x
 * 16-byte aligned. cuda_mmv_reserve(rows, n) sizes the context's scratch for a
 * weight shape at the largest batch: call it for every shape at load, outside
 * graph capture. */
#define CUDA_MMV_MAX_BATCH 64
bool cuda_mmv_supported(enum dtype t, uint64_t rows, uint64_t n);
void cuda_mmv_reserve(struct cuda_ctx *ctx, uint64_t rows, uint64_t n);
void cuda_mmv(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n,
              const float *x /* (T, n) */, uint32_t T, float *y /* (T, rows) */, float scale);
/* cuda_mmv for the next weight of a group that reads the same x (pointer, T,
 * n and contents unchanged since the call before it on this context): the
 * wgmma kernel's split of x into bf16 hi/lo rows is not redone. */
void cuda_mmv_next(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x,
                   uint32_t T, float *y, float scale);
/* The wgmma kernel's A rows written by the kernel that makes x instead of a
 * split launch before the GEMV (cuda_rmsnorm_in_split, cuda_fwd_glu_rows_split):
 * cuda_mmv_takes_split says whether cuda_mmv takes that kernel (and so reads
 * such rows) for a weight; cuda_mmv_split_claim returns the scratch the rows
 * go to (NULL: it cannot hold x (T, n), so the caller makes x alone) and
 * records them as x's, so that cuda_mmv_next's of x (pointer, T, n) read them
 * — the producer's launch must follow the claim. The rows are the split
 * kernel's bits (mmv_split_store4 on the same values). */
bool cuda_mmv_takes_split(const struct cuda_ctx *ctx, enum dtype t, uint64_t rows, uint64_t n);
uint8_t *cuda_mmv_split_claim(struct cuda_ctx *ctx, const float *x, uint32_t T, uint64_t n);
/* Whether one launch over two weights stored one after the other (ra then rb
 * rows, n columns) gives every row the bits the two launches give: the same
 * kernel takes all three shapes with the same K slices (a row's sum never
 * depends on its neighbours or on the number of rows otherwise). */
bool cuda_mmv_rows_join(const struct cuda_ctx *ctx, enum dtype t, uint64_t ra, uint64_t rb, uint64_t n);
/* The gated FFN's gate|up GEMV with the activation in its epilogue: W = [gate; up] (rows = 2F, n), and
 * out (T, F) = act(x·gateᵀ)·(x·upᵀ) (silu, or gelu-tanh) is left as the A rows of the next wgmma GEMV of out
 * (as cuda_mmv_split_claim records them: that GEMV's cuda_mmv_next reads them) — out itself is not written.
 * The bits of cuda_mmv into (T, 2F) then cuda_fwd_glu_rows_split (the same float operations). same_x: the
 * scratch holds x's rows (cuda_mmv_next's sense); slices as cuda_mmv_sliced's. Returns false, launching
 * nothing, where it does not apply (not the wgmma kernel, F % 64, K slices, a launch shape without the
 * epilogue): then the caller runs the two. */
bool cuda_mmv_glu(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x,
                  uint32_t T, const float *out, float scale, bool gelu, bool same_x, uint32_t slices);
/* Members of other shapes (q, k and v within q|k|v) join another way: each
 * member, alone too, takes the K slices of the joined launch
 * (cuda_mmv_sliced with slices = cuda_mmv_join_slices of the joined shape;
 * 0 = the shape's own), so that every row has one set of bits. Only the
 * wgmma kernel takes given slices: cuda_mmv_join_slices returns 0 when it
 * does not take the joined shape (every member must take it too:
 * cuda_mmv_takes_split). */
uint32_t cuda_mmv_join_slices(const struct cuda_ctx *ctx, enum dtype t, uint64_t rows, uint64_t n);
void cuda_mmv_sliced(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x,
                     uint32_t T, float *y, float scale, bool same_x, uint32_t slices);
/* For the kernel test's sweep: the launch shapes (all give the same bits),
 * their largest batch in max_t (may be NULL); variant −1 = the launcher's. */
int cuda_mmv_variants(uint32_t *max_t);
void cuda_mmv_variant(struct cuda_ctx *ctx, enum dtype t, const void *w, uint64_t rows, uint64_t n, const float *x,
                      uint32_t T, float *y, float scale, int variant);
/* The same product on wgmma (mmv_wg.cu; n % 64 == 0): batch-invariant as
 * well, but other bits than mmv.cu's. cuda_mmv takes it when the context's
 * mmv kernel is CUDA_MMV_WG (the default) and the shape fits; the scratch is
 * the same (cuda_mmv_reserve sizes it for both). */
enum cuda_mmv_kernel { CUDA_MMV_WG, CUDA_MMV_SYNC };
void cuda_mmv_set_kernel(struct cuda_ctx *ctx, enum cuda_mmv_kernel k);
/* bf16 activations (the backend's BACKEND_ACT_BF16): the kernels that write a
 * matmul's input round it to bf16 (nearest even) as they write it —
 * cuda_rmsnorm_in and cuda_rmsnorm_prep, every GLU (cuda_fwd_glu,
 * cuda_fwd_glu_rows, cuda_glu_prep, cuda_swiglu, cuda_swiglu_prep; so the MoE
 * experts' too) and the decode attention's merged rows (cuda_attn_decode;
 * the prefill attention's output is rounded by the caller: cuda_fwd_round_bf16)
 * — and the prepared forms are made from the rounded values. And since every
 * x the mmv reads is then bf16-valued, mmv_wg.cu puts one A row a token
 * instead of a high and a low row: the same bits (the low rows would be
 * zeros), half the products, 64 tokens in one A tile (mmv.cu computes the
 * same with its zero low parts). Off by default; set once, before the first
 * launch (graphs hold what was set when they were captured). */
void cuda_ctx_set_act_bf16(struct cuda_ctx *ctx, bool on);
bool cuda_mmv_wg_supported(uint64_t rows, uint64_t n);
uint32_t cuda_mmv_wg_slices(uint64_t rows, uint64_t n, int sms);
int cuda_mmv_wg_variants(uint32_t *max_t);
int cuda_mmv_wg_max_clusters(const struct cuda_ctx *ctx, int variant, uint32_t S); /* -1: unknown */
void cuda_mmv_wg_variant(struct cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x, uint32_t T,
                         float *y, float scale, int variant);

/* ---- baseline (cublas_ref.cu): cuBLAS bf16 GEMV through cublasGemmEx,
 * y (rows) f32 = W (rows, n) bf16 · x (n) bf16, f32 accumulation. For the
 * benchmark's comparison column, and for prefill GEMMs later. */
void cuda_blas_gemv_bf16(struct cuda_ctx *ctx, const uint16_t *w, uint64_t rows, uint64_t n,
                         const uint16_t *x, float *y);

/* ---- GEMM for spans of many tokens (gemm.cu): cuBLASLt on the tensor cores
 *
 *   y (T, rows) f32 = scale · x (T, n) f32 · Wᵀ,  W as stored (same as cuda_gemv)
 *
 * Modes (gemm.cu's header has the numerics):
 *   CUDA_GEMM_FAST  x rounded to bf16 (f16 for F16 weights), one GEMM; GGUF
 *                   quants dequantized to bf16; f32 weights in TF32.
 *   CUDA_GEMM_EXACT x split into bf16 hi + lo (two GEMMs), GGUF weights split
 *                   too (a third); f32 weights in f32. ~2× / 3× the FLOPs.
 *   CUDA_GEMM_XBF16 x already bf16-valued (the backend's BACKEND_ACT_BF16):
 *                   EXACT without x's low part — one GEMM (BF16, FP8), two
 *                   for GGUF (w hi, w lo), F16 weights as EXACT.
 * Measured on the H200 (bench/FORWARD.md, 2026-11-30): per GEMM max|Δ|/max|ref|
 * FAST 1.8e-4 (F16) .. 3.2e-3 (Q5_K), EXACT ≤ 4.9e-6; whole fixture models
 * (all prefill spans on the GEMM) FAST 2.9e-4 .. 4.9e-3 of the logit range,
 * over the 1e-3 bound for BF16/FP8/GGUF, greedy diverging from the CPU on 2 of
 * 19 fixtures; EXACT ≤ 6.7e-6 and greedy identical on all. Speed, one 8B
 * layer's GEMMs at 4096 tokens, BF16: FAST 710 TFLOP/s, EXACT 360. The CUDA
 * backend defaults to EXACT (MEMRA_GEMM=fast|exact|off picks).
 * A struct cuda_gemm owns the cuBLASLt handle, a fixed 32 MiB workspace, the
 * per-shape algorithm cache and its scratches, all allocated at init:
 * max_x elements of converted activations (T·n of the largest call) and
 * max_w of dequantized weight (rows·n of the largest FP8 / GGUF matrix, see
 * cuda_gemm_scratch_w_elems; 0 when there is none). A call beyond them aborts.
 * The same (dtype, rows, n, T) always runs the same algorithm, and never one
 * with a split K: a span's bits depend neither on where it sits in a batch nor
 * on the other spans of a GEMM over several (kernel_gemm checks both; the
 * backend runs a step's consecutive GEMM spans as one call, max_x covering the
 * step's token budget). w 256-byte aligned (cudaMalloc),
 * x and y 16-byte aligned, and y's offset from an aligned base a multiple of
 * rows floats. */
enum cuda_gemm_mode { CUDA_GEMM_FAST = 0, CUDA_GEMM_EXACT = 1, CUDA_GEMM_XBF16 = 2 };
struct cuda_gemm;
struct cuda_gemm *cuda_gemm_init(struct cuda_ctx *ctx, enum cuda_gemm_mode mode, uint64_t max_x, uint64_t max_w);
void cuda_gemm_free(struct cuda_gemm *g);
enum cuda_gemm_mode cuda_gemm_mode_of(const struct cuda_gemm *g);
/* MEMRA_GEMM_PICK (gemm_plan.cu plan_time_pick): true (the default) = a plan of ≤ 128 columns times its algorithms
 * without a split K (GEMM_PICK_REPS runs each) and keeps the fastest (the same bits, another speed); false = the
 * heuristic's first.
 * Returns the setting before (the MoE experts' GEMMs, whose row counts vary call to call, run untimed). */
bool cuda_gemm_set_timed(struct cuda_gemm *g, bool timed);
/* MEMRA_GEMM_PROMOTE (gemm_q.cu): the GGUF types with one scale a 32 elements (Q8_0, Q4_0, Q4_1, Q4_K, Q5_K,
 * IQ4_XS) at rows % 128 == 0 and n % 64 == 0 multiply their quantized values (exact in bf16) by x's bf16 parts,
 * one product a part, each 32-block's scale applied to its partial sum, the mins' term as extra k tiles: no weight
 * low part (EXACT: two products instead of three; XBF16: one instead of two), a kept copy of 2.1-2.3 bytes an
 * element instead of 4. Which weights take it (cuda_gemm_promote_takes, the rule for a weight): PLAIN the types
 * without a min (Q8_0, Q4_0, IQ4_XS), ALL every one, AUTO (the backend's default) every one of ≥ 2048 rows — a
 * matrix of fewer (the 8B's k and v) gives the kernel's 128-row tiles too few CTAs, and cuBLASLt's narrower tiles
 * on the dequantized copy run it faster (kernel_gemm's timing table). cuda_gemm_promote
 * turns it on (EXACT / XBF16; a no-op in FAST), allocating its scratches for inputs of up to max_n columns; before
 * any cuda_gemm_keep, whose copies then take the packed form for those weights (cuda_gemm_kept_bytes with
 * promote). cuda_gemm_promoted: whether a weight takes it in g. */
enum cuda_gemm_promote {
    CUDA_GEMM_PROMOTE_OFF,
    CUDA_GEMM_PROMOTE_PLAIN,
    CUDA_GEMM_PROMOTE_AUTO,
    CUDA_GEMM_PROMOTE_ALL,
};
#define CUDA_GEMM_PROMOTE_MIN_ROWS 2048u /* AUTO's */
bool cuda_gemm_promote_takes(enum cuda_gemm_promote p, enum cuda_gemm_mode mode, enum dtype t, uint64_t rows,
                             uint64_t n);
void cuda_gemm_promote(struct cuda_gemm *g, uint64_t max_n, enum cuda_gemm_promote p);
bool cuda_gemm_promoted(const struct cuda_gemm *g, enum dtype t, uint64_t rows, uint64_t n);
/* MEMRA_GEMM_X_TILES (the promoted GEMM's x): false (the default) = x's own k tiles read by the GEMM from x's bf16
 * rows by TMA (only the mins' tiles made beforehand); true = every tile made by a pass before the GEMM (the form
 * before 2026-12-07). The same tiles in shared memory: the same bits (kernel_gemm checks). Returns the setting
 * before. */
bool cuda_gemm_set_x_tiled(struct cuda_gemm *g, bool tiled);
/* Whether type t's blocks carry a min (Q4_1, Q4_K, Q5_K): the promoted GEMM adds their term's k tiles. */
bool cuda_gemm_promote_has_mins(enum dtype t);

/* Types with a GEMM: BF16, F16 (n % 8 == 0), F8_E4M3 (n % 8), F32 (n % 4),
 * and the GGUF block types the GEMV reads (whole blocks a row). */
bool cuda_gemm_supported(enum dtype t, uint64_t rows, uint64_t n);
/* Dequantization scratch elements a weight needs (rows·n for FP8 / GGUF, else 0). */
uint64_t cuda_gemm_scratch_w_elems(enum dtype t, uint64_t rows, uint64_t n);

void cuda_gemm_run(struct cuda_gemm *g, enum dtype t, const void *w, uint64_t rows, uint64_t n,
                   const float *x /* (T, n) */, uint32_t T, float *y /* (T, rows) */, float scale, unsigned flags);
#define CUDA_GEMM_X_PREPARED 1u /* flag: reuse the conversion of this x (same pointer, n, T) made by the last
                                   cuda_gemm_prep_x / cuda_gemm_run of a weight type with the same input type */
#define CUDA_GEMM_ACCUM 2u /* flag: y += the product instead of y = it, each element fl(y + product) — the bits of
                              the product stored, then added to y by a separate f32 add; where
                              cuda_gemm_accum_takes */
/* Whether a weight's GEMM (bs: FP8 with block scales, cuda_gemm_run_bs) can add into y (CUDA_GEMM_ACCUM) with
 * those bits: one cuBLASLt product (no low part of x or of the weight) at scale 1, whose D = alpha·acc + beta·y is
 * then acc + y rounded once; not the promoted GEMM (its epilogue reading y measured slower than the add after it). */
bool cuda_gemm_accum_takes(const struct cuda_gemm *g, enum dtype t, bool bs, uint64_t rows, uint64_t n, float scale);
#define CUDA_GEMM_Y_BF16 4u /* flag: y (T, rows) is written as bf16 (uint16_t), each element the f32 product rounded
                               once to nearest even — its bits as the f32 y's rounded; where cuda_gemm_y_bf16_takes;
                               not with CUDA_GEMM_ACCUM */
/* Whether a weight's GEMM (cuda_gemm_run_kept; not the block-scaled FP8's) can write a bf16 y (CUDA_GEMM_Y_BF16): the
 * promoted GEMM (gemm_q.cu: its epilogue rounds its one accumulator), else one cuBLASLt product on bf16 inputs (no
 * low part of x or of the weight; not F16 or F32 weights): BF16, and FP8 / GGUF dequantized to bf16 where the mode
 * keeps no low part. */
bool cuda_gemm_y_bf16_takes(const struct cuda_gemm *g, enum dtype t, uint64_t rows, uint64_t n);
/* Convert x for the weights of type t now (so that several GEMMs reading the
 * same x — q/k/v, gate/up — convert it once); and the weight dequantization
 * step alone (for the benchmark). */
void cuda_gemm_prep_x(struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n, uint32_t T);
void cuda_gemm_dequant(struct cuda_gemm *g, enum dtype t, const void *w, uint64_t rows, uint64_t n);
/* The parts of x (T, n) a producer kernel writes in place of cuda_gemm_prep_x:
 * returns hi (T, n) bf16 and sets *lo to the low part's (T, n) when the mode
 * splits x (else NULL); the next cuda_gemm_run of this x, n, T with
 * CUDA_GEMM_X_PREPARED reads them. The producer must write them with
 * tile_copy.cuh's gemm_x_split (the bits of cuda_gemm_prep_x) before that run,
 * on the context's stream. NULL (nothing claimed) when weights of type t do
 * not take a bf16 x, or x exceeds the scratch or is not 16-byte aligned with
 * n % 4 == 0. The producers (cuda_rmsnorm_in_gemm, cuda_fwd_glu_gemm,
 * cuda_fwd_round_bf16_gemm) then write the parts only, not x itself: no
 * reader of x but that GEMM may follow, and cuda_gemm_x_ready must hold when
 * it runs (cuda_forward.c asserts it). */
uint16_t *cuda_gemm_x_claim(struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n, uint32_t T,
                            uint16_t **lo);
/* Whether cuda_gemm_x_claim of these arguments would claim (it changes nothing). */
bool cuda_gemm_x_claim_takes(const struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n, uint32_t T);
/* Whether the scratch holds x's parts (x, n, T and t's input kind as the last
 * conversion or claim): a CUDA_GEMM_X_PREPARED run of x then reads no x. */
bool cuda_gemm_x_ready(const struct cuda_gemm *g, enum dtype t, const float *x, uint64_t n, uint32_t T);
/* A weight kept dequantized on the device (MEMRA_GEMM_KEEP, cuda_gemm_setup.c):
 * cuda_gemm_kept_bytes is the size of its copy in a mode (0: the type needs
 * none; promote: the weight takes the promoted GEMM, cuda_gemm_promote_takes), cuda_gemm_keep writes it (kept: 256-byte aligned) with the kernels
 * cuda_gemm_dequant runs, and cuda_gemm_run_kept is cuda_gemm_run reading it
 * instead of dequantizing w again (kept NULL: as cuda_gemm_run) — the same
 * values, the same algorithm, so the same bits (kernel_gemm checks). */
uint64_t cuda_gemm_kept_bytes(enum cuda_gemm_mode mode, bool promote, enum dtype t, uint64_t rows, uint64_t n);
/* The same for FP8 E4M3 with 128 × 128 block scales bs (cuda_gemv_bs): dequantized once per call (or kept) as
 * value = e4m3 · s rounded once (the f32 path's expanded values; the CPU scales each block's dot instead) split
 * into bf16 hi + lo as a GGUF weight (FAST: hi only), so
 * the same GEMMs as GGUF's; scale is the tensor's own (alpha). */
uint64_t cuda_gemm_kept_bytes_bs(enum cuda_gemm_mode mode, uint64_t rows, uint64_t n);
void cuda_gemm_keep_bs(struct cuda_gemm *g, const void *w, const float *bs, uint64_t rows, uint64_t n, void *kept);
void cuda_gemm_run_bs(struct cuda_gemm *g, const void *w, const float *bs, const void *kept, uint64_t rows, uint64_t n,
                      const float *x /* (T, n) */, uint32_t T, float *y /* (T, rows) */, float scale, unsigned flags);
void cuda_gemm_keep(struct cuda_gemm *g, enum dtype t, const void *w, uint64_t rows, uint64_t n, void *kept);
void cuda_gemm_run_kept(struct cuda_gemm *g, enum dtype t, const void *w, const void *kept, uint64_t rows, uint64_t n,
                        const float *x /* (T, n) */, uint32_t T, float *y /* (T, rows) */, float scale,
                        unsigned flags);

/* ---- elementwise (norm.cu) ------------------------------------------------
 * RMSNorm over rows of length n: out[r] = x[r] / sqrt(mean(x[r]²) + eps) · w.
 * With residual != NULL the residual is added first and written back:
 *     residual[r] += x[r];  out[r] = rmsnorm(residual[r]) · w
 * (the pre-norm transformer's "h = h + attn(...); xn = norm(h)" in one pass).
 * x, residual, out: (nrows, n) f32; w: (n) f32, constant data (weights: read
 * before the PDL wait, cuda_common.cuh). out may alias x. */
void cuda_rmsnorm(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                  uint32_t nrows, uint32_t n, float eps);
/* The same for a norm whose output is a matmul's input: rounded to bf16 under
 * cuda_ctx_set_act_bf16, else cuda_rmsnorm's bits. */
void cuda_rmsnorm_in(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                     uint32_t nrows, uint32_t n, float eps);
/* cuda_rmsnorm_in that also writes out's rows for the wgmma GEMV that reads
 * it next (cuda_mmv_split_claim), so that GEMV's cuda_mmv_next launches no
 * split; returns false (and runs cuda_rmsnorm_in) where it cannot. */
bool cuda_rmsnorm_in_split(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                           uint32_t nrows, uint32_t n, float eps);
/* cuda_rmsnorm_in that writes out's parts for the prefill GEMM of weights of
 * type t instead of out (cuda_gemm_x_claim; the bits cuda_gemm_prep_x would
 * make of out; the residual still written back): true when it did, so the
 * GEMM of out over nrows tokens may pass CUDA_GEMM_X_PREPARED (and out must not
 * be read otherwise); false after a plain cuda_rmsnorm_in. */
bool cuda_rmsnorm_in_gemm(struct cuda_ctx *ctx, struct cuda_gemm *g, enum dtype t, const float *x, float *residual,
                          const float *w, float *out, uint32_t nrows, uint32_t n, float eps);

/* cuda_rmsnorm / cuda_swiglu that also prepare their output for the quantized
 * GEMVs reading it next, bit for bit as cuda_gemv_prep_x(out) would: follow
 * with cuda_gemv_variant(..., CUDA_GEMV_X_PREPARED) and no prep kernel runs.
 * n % 32 == 0, rows ≤ CUDA_GEMV_MAX_BATCH, 16-byte aligned pointers, and for
 * rmsnorm n ≤ 16384 (aborts otherwise). */
void cuda_rmsnorm_prep(struct cuda_ctx *ctx, const float *x, float *residual, const float *w, float *out,
                       uint32_t nrows, uint32_t n, float eps);
void cuda_swiglu_prep(struct cuda_ctx *ctx, const float *gu, float *out, uint32_t rows, uint32_t n);
/* gate[r][i] = act(gate[r][i]) · up[r][i] in place (act silu, or gelu-tanh
 * when gelu; the same float operations as cuda_fwd_glu, bit for bit), gate and
 * up (rows, n) separate buffers, plus the preparation as above. */
void cuda_glu_prep(struct cuda_ctx *ctx, float *gate, const float *up, uint32_t rows, uint32_t n, bool gelu);

/* SwiGLU: out[r][i] = silu(gate[r][i]) · up[r][i], silu(g) = g / (1 + e^-g).
 * `gu` holds (rows, 2·n): per row, the n gate values then the n up values (the
 * fused gate+up GEMV's output, rows = batch); out is (rows, n). */
void cuda_swiglu(struct cuda_ctx *ctx, const float *gu /* (rows, 2n) */, float *out /* (rows, n) */,
                 uint32_t rows, uint32_t n);

#ifdef __cplusplus
}
#endif

#endif
