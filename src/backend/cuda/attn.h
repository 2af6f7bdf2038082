/* backend/cuda/attn.h — attention over the paged KV cache on the GPU: the
 * split-K decode kernel (attn_decode.cu) and the tensor-core prefill kernel
 * (attn_prefill.cu). Plain C declarations (no CUDA types) for the backend's C files
 * and the kernel tests.
 *
 * Paged KV (one layer): K and V each (kv_blocks, CUDA_ATTN_BLOCK, kv_dim) f32,
 * or bf16 (kv.bf16), kv_dim = n_kv_heads·head_dim; the row of position p of a
 * sequence whose block table is `tab` is (tab[p / 16]·16 + p % 16)·kv_dim
 * elements from the base. A bf16 element is read as the f32 it is exactly, and
 * every operation after the load is the f32 path's: a bf16 cache gives the
 * bits an f32 cache holding the same (rounded) values gives (kernel_attn). Block tables are rows of one device array: table r starts at
 * tables + r·table_stride.
 *
 * Attention of a query row at position p: softmax_s(scale · q·K[s]) · V[s] over
 * s in [p0, p], p0 = p + 1 − window when window > 0 and p + 1 > window, else 0;
 * query head h reads kv head h / (n_heads / n_kv_heads) (GQA).
 *
 * Batch invariance: every output row is computed by the same float operations
 * in the same order whatever else is in the launch (the split of positions is
 * fixed by position, the combine runs in a fixed order): a sequence's bits do
 * not depend on the batch. Numerics and measured speeds: bench/FORWARD.md.
 */
#ifndef MEMRA_BACKEND_CUDA_ATTN_H
#define MEMRA_BACKEND_CUDA_ATTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cuda_ctx;

#define CUDA_ATTN_BLOCK 16u      /* positions per KV block */
#define CUDA_ATTN_MAX_HEAD_DIM 256u
#define CUDA_ATTN_SPLITS 32u     /* decode: fixed number of position splits */
#define CUDA_ATTN_CHUNK 32u      /* decode: positions a split takes at a time */
#define CUDA_ATTN_SPLIT_CHUNKS_DEFAULT 2u /* decode: the fewest chunks a split takes (cuda_attn_decode_set_split_chunks) */

struct cuda_attn_dims {
    uint32_t n_heads, n_kv_heads, head_dim; /* head_dim even, ≤ 256; n_heads % n_kv_heads == 0 */
};

/* One layer's paged KV and the block tables of the launch (device memory). */
struct cuda_attn_kv {
    const void *k, *v;        /* (kv_blocks, 16, kv_dim) each, f32 or bf16 */
    const uint32_t *tables;   /* (n_tables, table_stride) block ids */
    uint32_t table_stride;
    /* decode: nonzero when every row's keys and values before its own position
     * were written before the kernel launched ahead of this one (the decode
     * step: one token a sequence), so the kernel may read them before its PDL
     * wait (cuda_common.cuh); 0 (the safe default) when a launch's rows may
     * include earlier positions written just before (prefill spans run as rows) */
    uint32_t settled;
    uint32_t bf16;            /* nonzero: K and V elements are bfloat16 */
    /* positions K (and V) hold, kv_blocks·16: the extent of the TMA maps of the prefill's ws128 form
     * (attn_prefill_ws.cu); 0 (unknown) sends that form's launches to OVERLAP128 */
    uint32_t rows;
    /* decode: a position every row of the launch is at or past (0: none
     * known); a launch of < 8 rows whose pos_min reaches the head-split bound
     * (cuda_attn_decode_hsplit_below) takes the kv-head grid — no one-head
     * CTAs that would exit at once (~1 µs at depth 4096, H200) — with the
     * same bits. The decode step captures a graph for each side. */
    uint32_t pos_min;
};

/* ---- decode (attn_decode.cu): any number of independent query rows --------
 * Row t has position tok_pos[t] and block table tok_table[t] (both device
 * arrays of T). Flash-decoding: the grid is (kv heads × head groups of 8,
 * CUDA_ATTN_SPLITS, T) whatever the lengths — split s takes the chunks of
 * CUDA_ATTN_CHUNK positions c ≡ s (mod ns), ns ≤ CUDA_ATTN_SPLITS fixed by
 * the row's own length (cuda_attn_decode_set_split_chunks) — so the launch does
 * not depend on the current lengths (CUDA-graph safe); one CTA serves all the
 * query heads of a kv head (each K/V byte read once), 16-byte loads when
 * head_dim % 4 == 0. A combine kernel merges the splits' (max, sum, acc) in
 * split order. f32 throughout (exp2f with log2(e) folded into the scale).
 * q, att: (T, n_heads·head_dim). scratch: cuda_attn_decode_scratch_floats(T)
 * floats of device memory (nothing else may use it during the call). */
size_t cuda_attn_decode_scratch_floats(uint32_t T, struct cuda_attn_dims d);
/* Launches of ≥ rows_min rows (head_dim ≤ 128, % 4 == 0) run one CTA a (kv
 * head, row) that computes the row's splits one after the other and merges
 * them itself: the same partials by the same operations, so the same bits,
 * without the 32 CTAs a row and the combine launch (0: never). The context's
 * value comes from MEMRA_ATTN_ROWS at cuda_ctx_init, default below; tests and
 * benchmarks set it to compare the two. */
#define CUDA_ATTN_ROWS_MIN_DEFAULT 64u
/* rows_min's default (MEMRA_ATTN_ROWS=auto): CUDA_ATTN_ROWS_MIN_DEFAULT rows
 * for the f32 kernels, CUDA_ATTN_TC_ROWS_MIN for the tensor-core ones (their
 * rows form is ahead from 32 rows: 47.8 against 67.7 µs at 32 rows of depth
 * 640 with bf16 keys, H200, bench/RESULTS.md nineteenth run). */
#define CUDA_ATTN_ROWS_AUTO 0xFFFFFFFFu
#define CUDA_ATTN_TC_ROWS_MIN 32u
void cuda_attn_decode_set_rows(struct cuda_ctx *ctx, uint32_t rows_min);
/* Launches of < 8 rows (the split kernel with prefetch) run one CTA a query
 * head instead of one a kv head's group of query heads; a row at a position
 * below `below` then takes one head a CTA — at short depths few splits have
 * work, and a CTA's 4 heads were computed one after the other — and a deeper
 * row its usual groups (its other CTAs exit). A head's operations do not
 * depend on the heads beside it, so the same bits either way (kernel_attn).
 * 0: never; UINT32_MAX: always; CUDA_ATTN_HSPLIT_AUTO (the default, from
 * MEMRA_ATTN_HSPLIT at cuda_ctx_init): while the launch's one-head CTAs
 * with work fit in one wave of 2 CTAs an SM (the prefetching kernel's
 * shared memory allows 2 with f32 keys and values; 4 with bf16, where the
 * bound is cautious): CUDA_ATTN_CHUNK × ⌊2·SMs / (heads · rows)⌋ positions,
 * 256 for one row of 32 heads on 132 SMs. Past one wave it loses: at depth
 * 768, 14.8 µs against 7.8 with 1024 as the bound (H200, bench/RESULTS.md
 * 2026-12-02). */
#define CUDA_ATTN_HSPLIT_AUTO 0xFFFFFFFEu
void cuda_attn_decode_set_hsplit(struct cuda_ctx *ctx, uint32_t below);
/* Which kernels run the decode launches of a shape with head_dim 64 or 128 and
 * at most 16 query heads a kv head: the f32 kernels above, or the bf16 tensor
 * cores (attn_decode_tc.cu: q, K, P and V split into bf16 high + low parts,
 * ~2e-6 of the largest output off against f64 instead of ~1e-7). AUTO (the
 * default) takes the tensor cores for a bf16 KV cache — faster there at every
 * batch and depth measured — and the f32 kernels for an f32 cache, where the
 * tensor cores lose at batches (bench/RESULTS.md nineteenth run). Both keep a
 * row's bits independent of the batch; the two give different bits, so a
 * model's launches all take one (its KV type is fixed; the context's choice
 * is set before its first launch: MEMRA_ATTN_DECODE=auto|f32|tc at
 * cuda_ctx_init). */
enum cuda_attn_decode_kernels { CUDA_ATTN_DECODE_AUTO = 0, CUDA_ATTN_DECODE_F32, CUDA_ATTN_DECODE_TC };
void cuda_attn_decode_set_kernels(struct cuda_ctx *ctx, enum cuda_attn_decode_kernels k);
/* Where the tensor-core kernels (bf16 keys) keep q's bf16 parts in the rows
 * form and in split launches of ≥ 8 rows: in registers, or in shared memory
 * (fewer registers: more CTAs an SM or no spills; slower a CTA), or AUTO (the
 * default, from MEMRA_ATTN_TC_Q=auto|regs|smem at cuda_ctx_init): shared
 * memory for a rows launch whose CTAs do not fit in one wave of the register
 * kernel, and for split launches of ≥ 8 rows where the register kernel
 * spills (attn_decode_tc.cu). The same values and products, so the same bits
 * (kernel_attn checks both on every shape). */
enum cuda_attn_tc_q { CUDA_ATTN_TC_Q_AUTO = 0, CUDA_ATTN_TC_Q_REGS, CUDA_ATTN_TC_Q_SMEM };
void cuda_attn_decode_set_tc_q(struct cuda_ctx *ctx, enum cuda_attn_tc_q where);
/* How a decode row's chunks are dealt over the splits: chunk c to split c mod
 * ns, ns = min(CUDA_ATTN_SPLITS, ceil(the row's chunks / chunks)), so each
 * split takes at least `chunks` chunks where the row has them (1: ns = all
 * CUDA_ATTN_SPLITS, one chunk a split below 32 chunks). Fewer splits, fewer
 * partials to merge — in the rows form each split's end is a CTA-wide merge of
 * its warps and a partial through L2 — but fewer CTAs for a split launch.
 * Each value has its own bits (another grouping of the sums), the same for a
 * row whatever its batch. Set before a model's first launch
 * (MEMRA_ATTN_SPLIT_CHUNKS=1..64 at cuda_ctx_init). Default 2, from the H200
 * (bench/RESULTS.md twenty-ninth run; 8B shape, bf16 KV, µs a layer for 1 /
 * 2 / 4 / 8): 64 rows × 640 67.5 / 53.4 / 52.3 / 51.1, 16 × 640 26.8 / 23.4
 * / 22.4 / 22.8, one row at 512 5.6 / 5.7 / 7.7 / 10.7, at 4096 8.8 / 8.8 /
 * 8.8 / 12.5: 2 takes most of the batches' gain and costs a lone row
 * nothing measurable. */
void cuda_attn_decode_set_split_chunks(struct cuda_ctx *ctx, uint32_t chunks);
/* The tensor-core decode kernels' numerics: off (the default) splits q
 * (pre-scaled by scale·log2(e)) and P into bf16 high + low parts, two
 * products a pair against a bf16 cache (~1e-6 of the largest output off);
 * on rounds each once to bf16, one product a pair (the prefill attention's
 * fast mode; transformers' flash kernels on a bf16 model) — half the mma of
 * a chunk. Every launch form takes the same setting: a row's bits stay the
 * same in any batch. Only the tensor-core kernels on a bf16 cache take it
 * (the f32 kernels and the f32-key ones keep the split). Set before a model's first
 * launch (graphs keep what was set when they were captured). */
void cuda_attn_decode_set_one(struct cuda_ctx *ctx, bool on);
uint32_t cuda_attn_decode_split_chunks(const struct cuda_ctx *ctx); /* the context's value */
/* The position below which a decode launch of T rows takes one head a CTA
 * (0: this launch shape never does). */
uint32_t cuda_attn_decode_hsplit_below(const struct cuda_ctx *ctx, struct cuda_attn_dims d, uint32_t T);
/* prep: also write att's rows in the quantized GEMVs' prepared form
 * (gemv_prep_x4, the bytes cuda_gemv_prep_x(att, n_heads·head_dim, T) would
 * write), so the o-projection needs no prep kernel; only for the shapes
 * cuda_attn_decode_prep_supported accepts (head_dim a whole number of the
 * prepared form's blocks). */
bool cuda_attn_decode_prep_supported(struct cuda_attn_dims d);
void cuda_attn_decode(struct cuda_ctx *ctx, const float *q, float *att, uint32_t T, const uint32_t *tok_pos,
                      const uint32_t *tok_table, struct cuda_attn_dims d, struct cuda_attn_kv kv, float scale,
                      uint32_t window, float *scratch, bool prep);

/* ---- prefill (attn_prefill.cu): spans of consecutive query rows ------------
 * Span i: query rows q0 .. q0 + n − 1 of q/att at positions pos0 .. pos0 + n −
 * 1 of the sequence of block table `table` (positions below pos0 are the
 * cached prefix, already in the KV; the span's own K/V are written before the
 * call). Flash attention on the tensor cores (mma.sync m16n8k16, f32
 * accumulation and softmax), 64 query rows a CTA (tokens × the query heads
 * of one kv head), causal mask + window. Two precisions:
 *   exact = false: q, K, P and V rounded to bf16 (8-bit mantissa);
 *   exact = true:  each operand split into bf16 high + low parts and every
 *                  product taken as hi·hi + hi·lo + lo·hi (three mma), which
 *                  keeps ~16 bits of each operand: the numerics of the exact
 *                  GEMM, ~1e-5 of the largest value off.
 * Key splits: a short span deep in its sequence would give too few CTAs, so
 * its key tiles are split (flash-decoding) into `splits` ranges fixed by the
 * span alone (cuda_attn_prefill_splits); each writes a partial into the
 * scratch at row-splits part0 .. part0 + n·splits − 1 and a combine merges
 * them in split order. Whatever is in the launch, a span's bits are the same.
 * head_dim 64 and 128 only (cuda_attn_prefill_supported); other head dims
 * run the decode kernel per row. spans: device array of n_spans; max_n ≥ every
 * span's n and max_splits ≥ every span's splits (they size the grid).
 * scratch: part_cap row-splits, cuda_attn_prefill_scratch_floats(part_cap)
 * floats (may be NULL when every span has splits = 1).
 * Tolerance against an f64 reference: see tests/kernels/kernel_attn.c. */
struct cuda_attn_span {
    uint32_t q0, n, pos0, table;
    uint32_t splits; /* 1 ≤ splits ≤ CUDA_ATTN_PREFILL_MAX_SPLITS */
    uint32_t part0;  /* first row-split of the scratch (splits > 1) */
};
#define CUDA_ATTN_PREFILL_MAX_SPLITS 16u
#define CUDA_ATTN_PREFILL_SPLIT_ROWS 128u /* longer spans never split */
bool cuda_attn_prefill_supported(struct cuda_attn_dims d);
/* The key splits of a span of n rows at pos0 (a function of the span only). */
uint32_t cuda_attn_prefill_splits(uint32_t pos0, uint32_t n);
size_t cuda_attn_prefill_scratch_floats(uint32_t part_cap, struct cuda_attn_dims d);
void cuda_attn_prefill(struct cuda_ctx *ctx, const float *q, float *att, const struct cuda_attn_span *spans,
                       uint32_t n_spans, uint32_t max_n, uint32_t max_splits, struct cuda_attn_dims d,
                       struct cuda_attn_kv kv, float scale, uint32_t window, bool exact, float *scratch,
                       uint32_t part_cap);
/* cuda_attn_prefill for a launch whose every span is split (splits > 1; the backend's launches after the first):
 * the same work and bits without the wgmma kernel's launch, whose CTAs would all find split spans and return
 * (~4 µs a layer: 6000 + 32 tokens 38 → 42 µs, thirty-second run). */
void cuda_attn_prefill_split(struct cuda_ctx *ctx, const float *q, float *att, const struct cuda_attn_span *spans,
                             uint32_t n_spans, uint32_t max_n, uint32_t max_splits, struct cuda_attn_dims d,
                             struct cuda_attn_kv kv, float scale, uint32_t window, bool exact, float *scratch,
                             uint32_t part_cap);
/* cuda_attn_prefill writing each output as bf16 (rounded to nearest: the bits cuda_fwd_round_bf16 makes of
 * cuda_attn_prefill's att) into att16 (T, q_dim) instead of f32 att, where cuda_attn_prefill_bf16_takes: the launch
 * runs the wgmma kernel alone (the fast mode on a bf16 cache at head_dim 128, no span split). With bf16 activations
 * the backend has the attention write the o projection's bf16 input itself (cuda_forward.c att_claim). */
bool cuda_attn_prefill_bf16_takes(const struct cuda_ctx *ctx, struct cuda_attn_dims d, struct cuda_attn_kv kv,
                                  bool exact, uint32_t max_splits);
void cuda_attn_prefill_bf16(struct cuda_ctx *ctx, const float *q, uint16_t *att16, const struct cuda_attn_span *spans,
                            uint32_t n_spans, uint32_t max_n, struct cuda_attn_dims d, struct cuda_attn_kv kv,
                            float scale, uint32_t window);
/* The fast mode on a bf16 cache at head_dim 128 (MEMRA_ATTN_PREFILL_WG): the spans that are not split run
 * attn_prefill_wg.cu's wgmma kernel (FlashAttention-3's shape: a warpgroup's 64 query rows against K and V read
 * once from shared memory, P from registers) instead of the mma.sync kernel: tile i's P·V issued with tile i + 1's
 * Q·Kᵀ and that tile's softmax statistics computed meanwhile (OVERLAP), the next key tile's Q·Kᵀ issued
 * before this tile's softmax (PIPE) or each product awaited in turn (SERIAL): the same operations in the same order
 * as the mma.sync kernel, its bits (kernel_attn checks them). The 128-key forms below have their own bits; WS128PP
 * is the default (bench/RESULTS.md forty-fourth run). Set before a model's first launch (graphs keep what was set
 * at capture). */
enum cuda_attn_prefill_wg {
    CUDA_ATTN_PREFILL_WG_PIPE,
    CUDA_ATTN_PREFILL_WG_SERIAL,
    CUDA_ATTN_PREFILL_WG_OFF,
    CUDA_ATTN_PREFILL_WG_OVERLAP, /* tile i's P·V beside tile i + 1's Q·Kᵀ and softmax (FlashAttention-3's overlap) */
    /* OVERLAP on key tiles of 128 (m64n128k16 for Q·Kᵀ, half the tiles and barriers a row): not the mma.sync
     * kernel's bits (its softmax steps take 128 keys at a time), within the same tolerance of f64; a span alone
     * still gives its bits in any batch */
    CUDA_ATTN_PREFILL_WG_OVERLAP128,
    /* OVERLAP128 with a producer warp copying the tiles by TMA onto mbarriers (attn_prefill_ws.cu: no block
     * barrier in the loop, no copies in the consumer warps): OVERLAP128's bits */
    CUDA_ATTN_PREFILL_WG_WS128,
    /* WS128 with the two consumer warpgroups taking turns to issue their products (FlashAttention-3's ping-pong):
     * OVERLAP128's bits */
    CUDA_ATTN_PREFILL_WG_WS128PP
};
void cuda_attn_prefill_set_wg(struct cuda_ctx *ctx, enum cuda_attn_prefill_wg mode);
enum cuda_attn_prefill_wg cuda_attn_prefill_wg_mode(const struct cuda_ctx *ctx); /* the context's */

#ifdef __cplusplus
}
#endif

#endif
