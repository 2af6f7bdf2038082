/* tests/kernels/kernel_attn.c — the paged-KV attention kernels (attn.h) checked
 * against a CPU reference, then timed at the Llama-3-8B shape.
 *
 * Checks (exit status 1 if any fails), fresh random inputs for every case: a
 * KV pool of random K and V in [-1, 1), the sequences' blocks scattered over
 * it by a random permutation (plus unused blocks), q in [-2, 2), outputs
 * poisoned with NaN before each launch; the reference is the softmax-weighted
 * sum in double over the visible positions [p0, p] read through the block
 * table. Shapes: (heads, kv heads, head_dim) = (32, 8, 128) the 8B model,
 * (9, 3, 64) SmolLM2-135M, (8, 1, 256) + window (gemma-like), (12, 1, 96)
 * (GQA 12: two head groups), (2, 2, 34) (head_dim not a multiple of 4: the
 * float2 path), (16, 2, 32), (8, 8, 64) (no GQA: one head a group); depths 1, 15, 16, 17, 33, 1000, 4100, 16400.
 *   decode: max|Δ| / max|ref| ≤ 1e-4 (f32, another summation order), every
 *           output finite; the first sequence run alone gives the same bits
 *           as in the batch (batch invariance); a second run gives the same
 *           bits (determinism); the backend's table layout (tables
 *           concatenated, offsets as table ids, stride 1) gives the same bits.
 *   prefill (head_dim 64, 128): spans with and without a cached prefix,
 *           lengths not multiples of the 64-row tile, windows, short spans
 *           deep in their sequence (split over CTAs by the backend's rule,
 *           then every short span split 16 ways — empty splits, one key tile
 *           a split — and none), scratch NaN-poisoned; bf16 mode (q, K, P, V
 *           rounded): max|Δ| / max|ref| ≤ 2e-2 (2^-8 relative rounding of each
 *           operand); exact mode (each operand bf16 high + low): ≤ 1e-4, the
 *           decode kernel's bound; a span alone gives the same bits as in the
 *           batch.
 *   bf16 KV: pools of bf16 values read from a bf16 copy give the bits of
 *           their f32 copy, in both decode kernels (the tensor cores' rows
 *           form and split form of ≥ 8 rows with q in registers and in
 *           shared memory) and both prefill modes on the mma.sync kernel.
 *   wgmma prefill (attn_prefill_wg.cu, attn_prefill_ws.cu: the bf16 mode on a
 *           bf16 cache at head_dim 128; test_prefill_wg and test_kv_bf16's bf16
 *           check), every form: overlap, pipe, serial the mma.sync kernel's
 *           bits, overlap128 (128-key tiles) within TOL_PREFILL of f64, ws128
 *           and ws128pp (its producer-warp forms) overlap128's bits; every
 *           span alone (one warpgroup a CTA for ≤ 64 rows, two in the batch)
 *           the bits of its rows in the batch, split spans beside it on the
 *           mma.sync kernel; launches of unsplit spans also with the bf16
 *           output (cuda_attn_prefill_bf16): att's values rounded, bit for bit.
 *   tensor-core decode (attn_decode_tc.cu): every decode check above again
 *           with CUDA_ATTN_DECODE_TC (same tolerance; its error is ≤ 4e-6),
 *           plus shapes of 12 and 16 query heads a kv head (f32 and bf16
 *           pools), and AUTO giving the tensor cores' bits for a bf16 pool
 *           and the f32 kernels' for an f32 one. The other checks name the
 *           f32 kernels (or the tensor cores with MEMRA_ATTN_DECODE=tc).
 *   split chunks (cuda_attn_decode_set_split_chunks): the decode checks
 *           again with a row's chunks dealt over other numbers of splits
 *           (1 and 3 besides the context's value) on the 8B shape — f32
 *           kernels, tensor cores with f32 and bf16 pools, 8 rows — and a
 *           windowed shape.
 * Each case prints its measured error.
 *
 * Timing (8B shape: 32 heads, 8 kv heads, head_dim 128): decode at depths
 * 512 / 4096 / 16384, batch 1 and 16, as CUDA-graph replays of launches that
 * rotate over KV copies (working set ≥ 4× L2), median per launch, GB/s of KV
 * read against 4.3 TB/s; prefill of one span of T rows after pos0 cached
 * positions — (0, 512), (0, 4096), (6000, 32), (6000, 128), (3584, 512) — in
 * bf16 and exact mode (median of event-timed launches, FLOPs 4·hd·heads·Σ
 * visible keys against 790 TFLOP/s bf16 dense; exact mode does 3× the mma
 * work) and through the f32 decode kernel 64 rows a launch (MEMRA_ATTN=rows),
 * 32 sampled rows of each checked. Each decode and prefill check line ends with a
 * digest of the output bits (the inputs are seeded): equal digests of two builds
 * = same bits.
 *
 * Usage: kernel_attn [--quick]   (--quick: checks only)
 *        kernel_attn --one DEPTH BATCH [KV [warm|cold [H:KVH]]]   (the decode
 *                                        timing rows of that shape, one a
 *                                        kernel, and nothing else: for a
 *                                        profiler; KV f32 or bf16: that cache's
 *                                        rows only, default all; warm: one copy
 *                                        of the KV, from L2; H:KVH: query and kv
 *                                        heads instead of the 8B shape's 32:8 —
 *                                        8 rows of 4:1 read what one row of 32:8
 *                                        reads, each block's 16 positions of a
 *                                        kv head one 4 KB piece)
 *        kernel_attn --prefill   (the prefill checks, an f32 and a bf16 cache,
 *                                and the prefill table only; > 300 s on the H200)
 *        kernel_attn --prefill-wg   (test_prefill_wg, the wgmma prefill kernel's
 *                                   checks, and the prefill table)
 *        kernel_attn --decode-one   (test_decode_one only: the one-part decode numerics)
 *        kernel_attn --decode-tc   (test_decode_tc only: the tensor-core decode checks and digests)
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/attn.h"
#include "backend/cuda/cuda_ops.h"
#include "test.h"

#define KERNEL_RNG_SEED 0x2545F4914F6CDD1Dull
#include "kernel_rng.h"
#define KERNEL_NAME "kernel_attn"
#include "kernel_util.h"
#include "kernel_time.h"

#define TOL_DECODE 1e-4
#define TOL_DECODE_ONE 2e-2 /* cuda_attn_decode_set_one: q and P rounded once to bf16 (as TOL_PREFILL) */
#define TOL_PREFILL 2e-2
#define TOL_PREFILL_EXACT 1e-4
#define BW_REF_GBS 4300.0
#define TF_REF 790.0

static struct cuda_ctx *g_ctx;

/* ---- a paged KV pool with scattered block tables ----------------------- */

struct pool {
    struct cuda_attn_dims d;
    uint32_t n_seqs, stride, kv_blocks;
    uint32_t *len;      /* (n_seqs) positions held */
    uint32_t *tables;   /* (n_seqs, stride) */
    float *k, *v;       /* host (kv_blocks, 16, kv_dim) */
    float *dk, *dv;     /* device copies */
    uint16_t *dk16, *dv16; /* with g_bf16: bf16 device copies (k and v hold bf16 values then) */
    uint32_t *dtables;
};

/* Pools made while set hold bf16 values, also as a bf16 copy (KV type bf16). */
static bool g_bf16;
static bool g_tc; /* decode launches on the tensor cores (MEMRA_ATTN_DECODE=tc, or test_decode_tc) */
static double g_tol_decode = TOL_DECODE; /* check_decode's bound against f64 (test_decode_one: TOL_DECODE_ONE) */

/* f32 → bf16, round to nearest even (finite inputs), as __float2bfloat16_rn. */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void pool_init(struct pool *p, struct cuda_attn_dims d, uint32_t n_seqs, const uint32_t *len)
{
    memset(p, 0, sizeof *p);
    p->d = d;
    p->n_seqs = n_seqs;
    p->len = xmalloc(n_seqs * sizeof *p->len);
    uint32_t total = 0;
    for (uint32_t s = 0; s < n_seqs; s++) {
        p->len[s] = len[s];
        uint32_t nb = (len[s] + 15) / 16;
        total += nb;
        if (nb > p->stride)
            p->stride = nb;
    }
    p->kv_blocks = total + 5; /* some never used */
    uint32_t *perm = xmalloc(p->kv_blocks * sizeof *perm);
    for (uint32_t i = 0; i < p->kv_blocks; i++)
        perm[i] = i;
    for (uint32_t i = p->kv_blocks - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(rng_u64() % (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    p->tables = xmalloc((size_t)n_seqs * p->stride * sizeof *p->tables);
    uint32_t next = 0;
    for (uint32_t s = 0; s < n_seqs; s++)
        for (uint32_t b = 0; b < p->stride; b++)
            p->tables[(size_t)s * p->stride + b] = b < (len[s] + 15) / 16 ? perm[next++] : 0xFFFFFFFFu;
    free(perm);
    const size_t n = (size_t)p->kv_blocks * 16 * d.n_kv_heads * d.head_dim;
    p->k = xmalloc(n * sizeof(float));
    p->v = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        p->k[i] = rng_unit();
        p->v[i] = rng_unit();
    }
    if (g_bf16) {
        uint16_t *k16 = xmalloc(n * 2), *v16 = xmalloc(n * 2);
        for (size_t i = 0; i < n; i++) {
            k16[i] = to_bf16(p->k[i]), v16[i] = to_bf16(p->v[i]);
            p->k[i] = from_bf16(k16[i]), p->v[i] = from_bf16(v16[i]);
        }
        p->dk16 = cuda_alloc(n * 2);
        p->dv16 = cuda_alloc(n * 2);
        cuda_upload(g_ctx, p->dk16, k16, n * 2);
        cuda_upload(g_ctx, p->dv16, v16, n * 2);
        free(k16);
        free(v16);
    }
    p->dk = cuda_alloc(n * sizeof(float));
    p->dv = cuda_alloc(n * sizeof(float));
    p->dtables = cuda_alloc((size_t)n_seqs * p->stride * sizeof(uint32_t));
    cuda_upload(g_ctx, p->dk, p->k, n * sizeof(float));
    cuda_upload(g_ctx, p->dv, p->v, n * sizeof(float));
    cuda_upload(g_ctx, p->dtables, p->tables, (size_t)n_seqs * p->stride * sizeof(uint32_t));
}

static void pool_free(struct pool *p)
{
    cuda_free(p->dk);
    cuda_free(p->dv);
    if (p->dk16) {
        cuda_free(p->dk16);
        cuda_free(p->dv16);
    }
    cuda_free(p->dtables);
    free(p->k);
    free(p->v);
    free(p->tables);
    free(p->len);
}

/* The pool's bf16 copy (pools made with g_bf16). */
static struct cuda_attn_kv pool_kv16(const struct pool *p)
{
    return (struct cuda_attn_kv){.k = p->dk16, .v = p->dv16, .tables = p->dtables, .table_stride = p->stride,
                                 .bf16 = 1, .rows = p->kv_blocks * 16};
}

/* test_decode_one: check_decode's launches all on the bf16 copy (the one-part numerics are a bf16 cache's only:
 * an f32 cache keeps the split, so the two no longer share bits) */
static bool g_kv16_ref;

static struct cuda_attn_kv pool_kv(const struct pool *p)
{
    if (g_kv16_ref && p->dk16)
        return pool_kv16(p);
    return (struct cuda_attn_kv){.k = p->dk, .v = p->dv, .tables = p->dtables, .table_stride = p->stride};
}

/* out (hd) = attention of query qh (hd) of head h at position pos of seq s, in double. */
static void ref_attn(const struct pool *p, uint32_t s, uint32_t h, uint32_t pos, const float *qh, float scale,
                     uint32_t window, double *out, double *w /* (pos + 1) scratch */)
{
    const uint32_t hd = p->d.head_dim, kv_dim = p->d.n_kv_heads * hd, kvh = h / (p->d.n_heads / p->d.n_kv_heads);
    const uint32_t p0 = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    double mx = -INFINITY;
    for (uint32_t j = p0; j <= pos; j++) {
        const float *kr = p->k + ((size_t)p->tables[(size_t)s * p->stride + j / 16] * 16 + j % 16) * kv_dim +
                          (size_t)kvh * hd;
        double dot = 0;
        for (uint32_t i = 0; i < hd; i++)
            dot += (double)qh[i] * kr[i];
        w[j] = dot * scale;
        if (w[j] > mx)
            mx = w[j];
    }
    double sum = 0;
    for (uint32_t i = 0; i < hd; i++)
        out[i] = 0;
    for (uint32_t j = p0; j <= pos; j++) {
        const double e = exp(w[j] - mx);
        sum += e;
        const float *vr = p->v + ((size_t)p->tables[(size_t)s * p->stride + j / 16] * 16 + j % 16) * kv_dim +
                          (size_t)kvh * hd;
        for (uint32_t i = 0; i < hd; i++)
            out[i] += e * vr[i];
    }
    for (uint32_t i = 0; i < hd; i++)
        out[i] /= sum;
}

/* max|got − ref| / max|ref| over the rows listed (row r of got/ref is query
 * row rows[r] of seq seqs[r] at position poss[r]); also checks finiteness. */
static double compare_rows(const struct pool *p, const float *q, const float *got, uint32_t n_rows,
                           const uint32_t *row_of, const uint32_t *seq_of, const uint32_t *pos_of, float scale,
                           uint32_t window, int *nonfinite)
{
    const uint32_t hd = p->d.head_dim, q_dim = p->d.n_heads * hd;
    uint32_t maxlen = 0;
    for (uint32_t s = 0; s < p->n_seqs; s++)
        if (p->len[s] > maxlen)
            maxlen = p->len[s];
    double *w = xmalloc((maxlen + 1) * sizeof *w), *out = xmalloc(hd * sizeof *out);
    double max_err = 0, max_ref = 0;
    *nonfinite = 0;
    for (uint32_t r = 0; r < n_rows; r++)
        for (uint32_t h = 0; h < p->d.n_heads; h++) {
            const size_t off = (size_t)row_of[r] * q_dim + (size_t)h * hd;
            ref_attn(p, seq_of[r], h, pos_of[r], q + off, scale, window, out, w);
            for (uint32_t i = 0; i < hd; i++) {
                const float g = got[off + i];
                if (!isfinite(g))
                    (*nonfinite)++;
                if (fabs(out[i]) > max_ref)
                    max_ref = fabs(out[i]);
                if (fabs(g - out[i]) > max_err || !isfinite(g))
                    max_err = isfinite(g) ? fabs(g - out[i]) : INFINITY;
            }
        }
    free(w);
    free(out);
    return max_ref > 0 ? max_err / max_ref : max_err;
}

static float *rand_dev(size_t n, float amp, float **host)
{
    float *h = xmalloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = amp * rng_unit();
    float *dp = cuda_alloc(n * sizeof *dp);
    cuda_upload(g_ctx, dp, h, n * sizeof *h);
    *host = h;
    return dp;
}

/* ---- decode checks ------------------------------------------------------ */

/* The launch (as the context's rows setting makes it) with its output also
 * prepared for a quantized GEMV (cuda_attn_decode's prep): att keeps its bits
 * (want), and a Q8_0 GEMV reading the prepared output gives exactly what
 * cuda_gemv gives from att with its own prep (the same prepared bytes). */
static void check_prep(const float *dq, float *datt, uint32_t n, const uint32_t *dpos, const uint32_t *dseq,
                       struct cuda_attn_dims d, struct cuda_attn_kv kv, float scale, uint32_t window, float *scr,
                       const float *want, const char *what)
{
    const uint32_t q_dim = d.n_heads * d.head_dim;
    const uint64_t rows = 48, rb = row_bytes_of(DTYPE_Q8_0, q_dim);
    uint8_t *hw = xmalloc(rows * rb);
    fill_random(DTYPE_Q8_0, hw, rows * rb);
    void *dw = cuda_alloc(rows * rb);
    cuda_upload(g_ctx, dw, hw, rows * rb);
    float *dy = cuda_alloc(rows * n * sizeof(float));
    float *att = xmalloc((size_t)n * q_dim * sizeof(float));
    float *y1 = xmalloc(rows * n * sizeof(float)), *y2 = xmalloc(rows * n * sizeof(float));
    cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
    cuda_attn_decode(g_ctx, dq, datt, n, dpos, dseq, d, kv, scale, window, scr, true);
    cuda_fill_nan_f32(g_ctx, dy, rows * n);
    cuda_gemv_variant(g_ctx, DTYPE_Q8_0, dw, rows, q_dim, datt, n, dy, 1.0f, 0, 0, CUDA_GEMV_X_PREPARED);
    cuda_download(g_ctx, y1, dy, rows * n * sizeof(float));
    cuda_download(g_ctx, att, datt, (size_t)n * q_dim * sizeof(float));
    cuda_fill_nan_f32(g_ctx, dy, rows * n);
    cuda_gemv(g_ctx, DTYPE_Q8_0, dw, rows, q_dim, datt, n, dy, 1.0f); /* its own prep of att */
    cuda_download(g_ctx, y2, dy, rows * n * sizeof(float));
    const bool same_att = memcmp(att, want, (size_t)n * q_dim * sizeof(float)) == 0;
    const bool same_y = memcmp(y1, y2, rows * n * sizeof(float)) == 0;
    CHECK_MSG(same_att, "decode hd %u, %s: preparing the output changes its bits", d.head_dim, what);
    CHECK_MSG(same_y, "decode hd %u, %s: the prepared output differs from cuda_gemv_prep_x's", d.head_dim, what);
    printf("decode  heads %2u/%u hd %3u, %s, output prepared in passing: att %s, Q8_0 GEMV on it %s\n",
           d.n_heads, d.n_kv_heads, d.head_dim, what, same_att ? "same bits" : "DIFFERS",
           same_y ? "= cuda_gemv's" : "DIFFERS");
    cuda_free(dw);
    cuda_free(dy);
    free(hw);
    free(att);
    free(y1);
    free(y2);
}

/* FNV-1a of the output's bytes: the inputs are the same on every run (kernel_rng.h's
 * fixed seed), so two builds whose decode lines print the same digest computed the
 * same bits (how a change meant to keep them is checked against the build before it). */
static uint64_t bits_digest(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void check_decode(struct cuda_attn_dims d, uint32_t window, const uint32_t *depths, uint32_t n)
{
    struct pool p;
    pool_init(&p, d, n, depths);
    const uint32_t hd = d.head_dim, q_dim = d.n_heads * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float *hq, *hatt = xmalloc((size_t)n * q_dim * sizeof(float)), *hone = xmalloc((size_t)q_dim * sizeof(float));
    float *dq = rand_dev((size_t)n * q_dim, 2.0f, &hq);
    float *datt = cuda_alloc((size_t)n * q_dim * sizeof(float));
    float *scr = cuda_alloc(cuda_attn_decode_scratch_floats(n, d) * sizeof(float));
    uint32_t *pos = xmalloc(n * sizeof *pos), *seq = xmalloc(n * sizeof *seq), *row = xmalloc(n * sizeof *row);
    for (uint32_t i = 0; i < n; i++) {
        pos[i] = depths[i] - 1;
        seq[i] = row[i] = i;
    }
    uint32_t *dpos = cuda_alloc(n * sizeof *dpos), *dseq = cuda_alloc(n * sizeof *dseq);
    cuda_upload(g_ctx, dpos, pos, n * sizeof *pos);
    cuda_upload(g_ctx, dseq, seq, n * sizeof *seq);

    cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
    cuda_attn_decode(g_ctx, dq, datt, n, dpos, dseq, d, pool_kv(&p), scale, window, scr, false);
    cuda_download(g_ctx, hatt, datt, (size_t)n * q_dim * sizeof(float));
    int nonfinite;
    const double err = compare_rows(&p, hq, hatt, n, row, seq, pos, scale, window, &nonfinite);
    printf("decode  heads %2u/%u hd %3u window %4u rows %u depths %u..%u%s%s: max|d|/max|ref| %.2e, digest %016" PRIx64
           "\n", d.n_heads, d.n_kv_heads, hd, window, n, depths[0], depths[n - 1], g_bf16 ? " bf16 KV" : "",
           g_tc ? " tc" : "", err,
           bits_digest(hatt, (size_t)n * q_dim * sizeof(float)));
    CHECK_MSG(err <= g_tol_decode && nonfinite == 0, "decode hd %u: error %.3g, %d non-finite", hd, err, nonfinite);

    /* the same launch again: same bits */
    float *hatt2 = xmalloc((size_t)n * q_dim * sizeof(float));
    cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
    cuda_attn_decode(g_ctx, dq, datt, n, dpos, dseq, d, pool_kv(&p), scale, window, scr, false);
    cuda_download(g_ctx, hatt2, datt, (size_t)n * q_dim * sizeof(float));
    CHECK_MSG(memcmp(hatt, hatt2, (size_t)n * q_dim * sizeof(float)) == 0, "decode not deterministic");
    if (p.dk16) { /* the bf16 cache: the f32 cache's bits (it holds the same values): split kernels, rows kernels
                   * with q in registers and (tensor cores) in shared memory */
        static const char *const what[] = {"split CTAs", "one CTA a row", "one CTA a row, q in shared memory",
                                           "split CTAs, q in shared memory (from 8 rows)"};
        for (uint32_t mode = 0; mode < (g_tc ? 4u : 2u); mode++) {
            cuda_attn_decode_set_rows(g_ctx, mode % 3 ? 1 : 0);
            cuda_attn_decode_set_tc_q(g_ctx, mode >= 2 ? CUDA_ATTN_TC_Q_SMEM : CUDA_ATTN_TC_Q_REGS);
            cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
            cuda_attn_decode(g_ctx, dq, datt, n, dpos, dseq, d, pool_kv16(&p), scale, window, scr, false);
            cuda_download(g_ctx, hatt2, datt, (size_t)n * q_dim * sizeof(float));
            CHECK_MSG(memcmp(hatt, hatt2, (size_t)n * q_dim * sizeof(float)) == 0,
                      "decode hd %u: a bf16 cache (%s) differs from the f32 cache of its values", hd, what[mode]);
        }
        cuda_attn_decode_set_rows(g_ctx, CUDA_ATTN_ROWS_AUTO);
        cuda_attn_decode_set_tc_q(g_ctx, CUDA_ATTN_TC_Q_AUTO);
    }
    /* settled KV (the decode step's promise): the first chunk's loads go ahead of the PDL wait, same bits */
    {
        struct cuda_attn_kv skv = pool_kv(&p);
        skv.settled = 1;
        cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
        cuda_attn_decode(g_ctx, dq, datt, n, dpos, dseq, d, skv, scale, window, scr, false);
        cuda_download(g_ctx, hatt2, datt, (size_t)n * q_dim * sizeof(float));
        CHECK_MSG(memcmp(hatt, hatt2, (size_t)n * q_dim * sizeof(float)) == 0, "decode: settled KV changes the bits");
    }
    /* the backend's layout: tables concatenated, tok_table = each one's offset, stride 1: same bits */
    {
        uint32_t *flat = xmalloc((size_t)n * p.stride * sizeof *flat), *offs = xmalloc(n * sizeof *offs), nf = 0;
        for (uint32_t i = 0; i < n; i++) {
            offs[i] = nf;
            for (uint32_t k = 0; k < (depths[i] + 15) / 16; k++)
                flat[nf++] = p.tables[(size_t)i * p.stride + k];
        }
        uint32_t *dflat = cuda_alloc(nf * sizeof *dflat), *doffs = cuda_alloc(n * sizeof *doffs);
        cuda_upload(g_ctx, dflat, flat, nf * sizeof *flat);
        cuda_upload(g_ctx, doffs, offs, n * sizeof *offs);
        struct cuda_attn_kv fkv = pool_kv(&p); /* the same cache through the flat tables */
        fkv.tables = dflat, fkv.table_stride = 1;
        cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
        cuda_attn_decode(g_ctx, dq, datt, n, dpos, doffs, d, fkv, scale, window, scr, false);
        cuda_download(g_ctx, hatt2, datt, (size_t)n * q_dim * sizeof(float));
        CHECK_MSG(memcmp(hatt, hatt2, (size_t)n * q_dim * sizeof(float)) == 0,
                  "decode: concatenated tables (stride 1) differ from strided ones");
        cuda_free(dflat);
        cuda_free(doffs);
        free(flat);
        free(offs);
    }
    /* the launch as one CTA a row and as 32 split CTAs a row + combine: same bits */
    {
        static const struct {
            uint32_t rows_min;
            const char *what;
        } modes[] = {{1, "one CTA a row"}, {0, "split CTAs"}};
        for (int i = 0; i < 2; i++) {
            cuda_attn_decode_set_rows(g_ctx, modes[i].rows_min);
            cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
            cuda_attn_decode(g_ctx, dq, datt, n, dpos, dseq, d, pool_kv(&p), scale, window, scr, false);
            cuda_download(g_ctx, hatt2, datt, (size_t)n * q_dim * sizeof(float));
            CHECK_MSG(memcmp(hatt, hatt2, (size_t)n * q_dim * sizeof(float)) == 0,
                      "decode hd %u: %s changes the bits", hd, modes[i].what);
            if (cuda_attn_decode_prep_supported(d))
                check_prep(dq, datt, n, dpos, dseq, d, pool_kv(&p), scale, window, scr, hatt, modes[i].what);
        }
        cuda_attn_decode_set_rows(g_ctx, CUDA_ATTN_ROWS_AUTO);
    }
    /* short rows one query head a CTA: never, below 100 (mixed), always, auto: same bits. The head split
     * applies to launches of < 8 rows only, so the first min(n, 7) rows run as their own launch (a row's
     * bits do not depend on the rows beside it: the row-alone check below) */
    {
        static const uint32_t hs[] = {0, 100, UINT32_MAX, CUDA_ATTN_HSPLIT_AUTO};
        const uint32_t ns = n < 8 ? n : 7;
        for (int i = 0; i < 4; i++) {
            cuda_attn_decode_set_hsplit(g_ctx, hs[i]);
            cuda_fill_nan_f32(g_ctx, datt, (size_t)ns * q_dim);
            cuda_attn_decode(g_ctx, dq, datt, ns, dpos, dseq, d, pool_kv(&p), scale, window, scr, false);
            cuda_download(g_ctx, hatt2, datt, (size_t)ns * q_dim * sizeof(float));
            CHECK_MSG(memcmp(hatt, hatt2, (size_t)ns * q_dim * sizeof(float)) == 0,
                      "decode hd %u: %u rows, one head a CTA below position %u changes the bits", hd, ns, hs[i]);
        }
        /* every row at or past the bound, and the launch told so (cuda_attn_kv.pos_min, the decode step's deep
         * graph): the kv-head grid, same bits */
        uint32_t pmin = UINT32_MAX;
        for (uint32_t i = 0; i < ns; i++)
            pmin = pos[i] < pmin ? pos[i] : pmin;
        if (pmin > 0) {
            cuda_attn_decode_set_hsplit(g_ctx, pmin);
            struct cuda_attn_kv dkv = pool_kv(&p);
            dkv.pos_min = pmin;
            cuda_fill_nan_f32(g_ctx, datt, (size_t)ns * q_dim);
            cuda_attn_decode(g_ctx, dq, datt, ns, dpos, dseq, d, dkv, scale, window, scr, false);
            cuda_download(g_ctx, hatt2, datt, (size_t)ns * q_dim * sizeof(float));
            CHECK_MSG(memcmp(hatt, hatt2, (size_t)ns * q_dim * sizeof(float)) == 0,
                      "decode hd %u: %u rows past the head split's bound %u, told so, change the bits", hd, ns, pmin);
        }
        cuda_attn_decode_set_hsplit(g_ctx, CUDA_ATTN_HSPLIT_AUTO);
    }
    /* the last row alone (row 0 of the launch, q row n-1): same bits */
    cuda_fill_nan_f32(g_ctx, datt, q_dim);
    cuda_attn_decode(g_ctx, dq + (size_t)(n - 1) * q_dim, datt, 1, dpos + (n - 1), dseq + (n - 1), d, pool_kv(&p),
                     scale, window, scr, false);
    cuda_download(g_ctx, hone, datt, (size_t)q_dim * sizeof(float));
    CHECK_MSG(memcmp(hone, hatt + (size_t)(n - 1) * q_dim, (size_t)q_dim * sizeof(float)) == 0,
              "decode: a row alone differs from the same row in the batch");

    free(hatt2);
    free(hq);
    free(hatt);
    free(hone);
    free(pos);
    free(seq);
    free(row);
    cuda_free(dq);
    cuda_free(datt);
    cuda_free(scr);
    cuda_free(dpos);
    cuda_free(dseq);
    pool_free(&p);
}

/* ---- prefill checks ----------------------------------------------------- */

/* What check_prefill_wg compares a form's output with: the mma.sync kernel's bits (bits), or for OVERLAP128 the
 * f64 reference of the rows (q on the host; row, sequence and position of each) — its output then kept in ovl,
 * the bits WS128 must give. */
struct prefill_ref {
    const float *bits;
    const float *hq;
    const uint32_t *row, *seq, *pos;
    float *ovl;
};

/* The wgmma prefill kernel (attn_prefill_wg.cu, the context's form) on check_prefill's launch over the bf16
 * cache: the bits of the mma.sync kernel's launch (ref: the same operations in the same order — the tensor cores
 * sum a k16 step alike in both instructions; so its error against f64 is the one check_prefill printed) — for
 * OVERLAP128 (softmax steps of 128 keys) its own error against f64, within TOL_PREFILL — and each span alone (one
 * warpgroup a CTA where it has ≤ 64 rows, two in the batch) the bits of its rows in the batch. */
static void check_prefill_wg(const struct pool *p, const float *dq, float *datt, const struct prefill_ref *ref,
                             const struct cuda_attn_span *spans, const struct cuda_attn_span *dspans,
                             uint32_t n_spans, uint32_t max_n, uint32_t max_splits, uint32_t window, float *scr,
                             uint32_t part)
{
    const struct cuda_attn_dims d = p->d;
    const uint32_t q_dim = d.n_heads * d.head_dim;
    const float scale = 1.0f / sqrtf((float)d.head_dim);
    uint32_t T = 0, n_wg = 0;
    const enum cuda_attn_prefill_wg form = cuda_attn_prefill_wg_mode(g_ctx);
    const char *name = form == CUDA_ATTN_PREFILL_WG_PIPE         ? "pipe"
                       : form == CUDA_ATTN_PREFILL_WG_OVERLAP    ? "overlap"
                       : form == CUDA_ATTN_PREFILL_WG_OVERLAP128 ? "ovl128"
                       : form == CUDA_ATTN_PREFILL_WG_WS128      ? "ws128"
                       : form == CUDA_ATTN_PREFILL_WG_WS128PP    ? "ws128pp"
                                                                 : "serial";
    for (uint32_t i = 0; i < n_spans; i++) {
        T += spans[i].n;
        n_wg += spans[i].splits <= 1;
    }
    cuda_fill_nan_f32(g_ctx, datt, (size_t)T * q_dim);
    float *h = xmalloc((size_t)T * q_dim * sizeof(float));
    cuda_attn_prefill(g_ctx, dq, datt, dspans, n_spans, max_n, max_splits, d, pool_kv16(p), scale, window, false, scr,
                      part);
    cuda_download(g_ctx, h, datt, (size_t)T * q_dim * sizeof(float));
    printf("prefill wgmma %-7s heads %2u/%u hd %3u window %4u spans %u (%u on wgmma, ≤ %u splits) rows %u bf16 KV: "
           "digest %016" PRIx64 "\n",
           name, d.n_heads, d.n_kv_heads, d.head_dim, window, n_spans, n_wg, max_splits, T,
           bits_digest(h, (size_t)T * q_dim * sizeof(float)));
    if (form == CUDA_ATTN_PREFILL_WG_OVERLAP128) {
        int nonfinite;
        const double err = compare_rows(p, ref->hq, h, T, ref->row, ref->seq, ref->pos, scale, window, &nonfinite);
        printf("prefill wgmma %-7s max|d|/max|ref| %.2e\n", name, err);
        CHECK_MSG(err <= TOL_PREFILL && nonfinite == 0, "prefill wgmma %s: error %.3g (tolerance %.0e), %d non-finite",
                  name, err, TOL_PREFILL, nonfinite);
        memcpy(ref->ovl, h, (size_t)T * q_dim * sizeof(float));
    } else if (form == CUDA_ATTN_PREFILL_WG_WS128 || form == CUDA_ATTN_PREFILL_WG_WS128PP) {
        CHECK_MSG(memcmp(h, ref->ovl, (size_t)T * q_dim * sizeof(float)) == 0,
                  "prefill wgmma %s: not OVERLAP128's bits", name);
    } else {
        CHECK_MSG(memcmp(h, ref->bits, (size_t)T * q_dim * sizeof(float)) == 0,
                  "prefill wgmma %s: not the mma.sync kernel's bits", name);
    }
    if (max_splits == 1) { /* the bf16 output (cuda_attn_prefill_bf16): att's values rounded, bit for bit */
        const size_t ne = (size_t)T * q_dim;
        uint16_t *d16 = cuda_alloc(ne * 2 + 4), *h16 = xmalloc(ne * 2);
        cuda_fill_nan_f32(g_ctx, (float *)d16, ne / 2 + 1);
        cuda_attn_prefill_bf16(g_ctx, dq, d16, dspans, n_spans, max_n, d, pool_kv16(p), scale, window);
        cuda_download(g_ctx, h16, d16, ne * 2);
        size_t bad = 0;
        for (size_t i = 0; i < ne; i++)
            bad += h16[i] != to_bf16(h[i]);
        CHECK_MSG(bad == 0, "prefill wgmma %s: the bf16 output differs from att rounded at %zu of %zu", name, bad, ne);
        printf("prefill wgmma %-7s bf16 output: %s\n", name, bad ? "DIFFERENT" : "att rounded, bit-identical");
        cuda_free(d16), free(h16);
    }
    float *hone = xmalloc((size_t)max_n * q_dim * sizeof(float));
    int differ = 0;
    for (uint32_t i = 0; i < n_spans; i++) {
        const size_t bytes = (size_t)spans[i].n * q_dim * sizeof(float);
        cuda_fill_nan_f32(g_ctx, datt, (size_t)T * q_dim);
        (spans[i].splits > 1 ? cuda_attn_prefill_split : cuda_attn_prefill)(
            g_ctx, dq, datt, dspans + i, 1, spans[i].n, spans[i].splits, d, pool_kv16(p), scale, window, false, scr,
            part); /* a split span alone: without the wgmma launch */
        cuda_download(g_ctx, hone, datt + (size_t)spans[i].q0 * q_dim, bytes);
        differ += memcmp(hone, h + (size_t)spans[i].q0 * q_dim, bytes) != 0;
    }
    CHECK_MSG(differ == 0, "prefill wgmma %s: %d of %u spans alone differ from the same span in the batch",
              name, differ, n_spans);
    free(hone);
    free(h);
}

/* spans: (pos0, n) pairs; sequence i holds pos0 + n positions. splits: 0 →
 * cuda_attn_prefill_splits (the backend's rule), else that many for every span
 * of ≤ CUDA_ATTN_PREFILL_SPLIT_ROWS rows (1: none split). */
static void check_prefill(struct cuda_attn_dims d, uint32_t window, const uint32_t (*sp)[2], uint32_t n_spans,
                          bool exact, uint32_t splits)
{
    uint32_t *len = xmalloc(n_spans * sizeof *len), T = 0, max_n = 0, max_splits = 1, part = 0, n_split = 0;
    for (uint32_t i = 0; i < n_spans; i++) {
        len[i] = sp[i][0] + sp[i][1];
        T += sp[i][1];
        if (sp[i][1] > max_n)
            max_n = sp[i][1];
    }
    struct pool p;
    pool_init(&p, d, n_spans, len);
    const uint32_t hd = d.head_dim, q_dim = d.n_heads * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float *hq, *hatt = xmalloc((size_t)T * q_dim * sizeof(float));
    float *dq = rand_dev((size_t)T * q_dim, 2.0f, &hq);
    float *datt = cuda_alloc((size_t)T * q_dim * sizeof(float));
    struct cuda_attn_span *spans = xmalloc(n_spans * sizeof *spans);
    uint32_t *row = xmalloc(T * sizeof *row), *seq = xmalloc(T * sizeof *seq), *pos = xmalloc(T * sizeof *pos);
    uint32_t r = 0;
    for (uint32_t i = 0; i < n_spans; i++) {
        uint32_t ns = cuda_attn_prefill_splits(sp[i][0], sp[i][1]);
        if (splits > 0 && sp[i][1] <= CUDA_ATTN_PREFILL_SPLIT_ROWS)
            ns = splits;
        spans[i] = (struct cuda_attn_span){.q0 = r, .n = sp[i][1], .pos0 = sp[i][0], .table = i, .splits = ns};
        if (ns > 1) {
            spans[i].part0 = part;
            part += sp[i][1] * ns;
            n_split++;
        }
        max_splits = ns > max_splits ? ns : max_splits;
        for (uint32_t j = 0; j < sp[i][1]; j++, r++) {
            row[r] = r;
            seq[r] = i;
            pos[r] = sp[i][0] + j;
        }
    }
    float *scr = part ? cuda_alloc(cuda_attn_prefill_scratch_floats(part, d) * sizeof(float)) : NULL;
    if (scr) /* partials never written must never be read */
        cuda_fill_nan_f32(g_ctx, scr, cuda_attn_prefill_scratch_floats(part, d));
    struct cuda_attn_span *dspans = cuda_alloc(n_spans * sizeof *dspans);
    cuda_upload(g_ctx, dspans, spans, n_spans * sizeof *spans);
    cuda_fill_nan_f32(g_ctx, datt, (size_t)T * q_dim);
    cuda_attn_prefill(g_ctx, dq, datt, dspans, n_spans, max_n, max_splits, d, pool_kv(&p), scale, window, exact, scr,
                      part);
    cuda_download(g_ctx, hatt, datt, (size_t)T * q_dim * sizeof(float));
    int nonfinite;
    const double err = compare_rows(&p, hq, hatt, T, row, seq, pos, scale, window, &nonfinite);
    const double tol = exact ? TOL_PREFILL_EXACT : TOL_PREFILL;
    printf("prefill %s heads %2u/%u hd %3u window %4u spans %u (%u split, ≤ %u splits) rows %u%s: max|d|/max|ref| "
           "%.2e, digest %016" PRIx64 "\n",
           exact ? "exact" : "bf16 ", d.n_heads, d.n_kv_heads, hd, window, n_spans, n_split, max_splits, T,
           g_bf16 ? " bf16 KV" : "", err, bits_digest(hatt, (size_t)T * q_dim * sizeof(float)));
    CHECK_MSG(err <= tol && nonfinite == 0, "prefill %s hd %u splits %u: error %.3g (tolerance %.0e), %d non-finite",
              exact ? "exact" : "bf16", hd, splits, err, tol, nonfinite);
    /* the last span alone: same bits */
    const struct cuda_attn_span *last = &spans[n_spans - 1];
    float *hone = xmalloc((size_t)last->n * q_dim * sizeof(float));
    cuda_fill_nan_f32(g_ctx, datt, (size_t)T * q_dim);
    cuda_attn_prefill(g_ctx, dq, datt, dspans + (n_spans - 1), 1, last->n, last->splits, d, pool_kv(&p), scale,
                      window, exact, scr, part);
    cuda_download(g_ctx, hone, datt + (size_t)last->q0 * q_dim, (size_t)last->n * q_dim * sizeof(float));
    CHECK_MSG(memcmp(hone, hatt + (size_t)last->q0 * q_dim, (size_t)last->n * q_dim * sizeof(float)) == 0,
              "prefill: a span alone differs from the same span in the batch");
    if (p.dk16) { /* the bf16 cache on the mma.sync kernel: the f32 cache's bits */
        float *h16 = xmalloc((size_t)T * q_dim * sizeof(float));
        const enum cuda_attn_prefill_wg wg = cuda_attn_prefill_wg_mode(g_ctx);
        cuda_attn_prefill_set_wg(g_ctx, CUDA_ATTN_PREFILL_WG_OFF);
        cuda_fill_nan_f32(g_ctx, datt, (size_t)T * q_dim);
        cuda_attn_prefill(g_ctx, dq, datt, dspans, n_spans, max_n, max_splits, d, pool_kv16(&p), scale, window, exact,
                          scr, part);
        cuda_download(g_ctx, h16, datt, (size_t)T * q_dim * sizeof(float));
        CHECK_MSG(memcmp(h16, hatt, (size_t)T * q_dim * sizeof(float)) == 0,
                  "prefill %s hd %u: a bf16 cache differs from the f32 cache of its values", exact ? "exact" : "bf16",
                  hd);
        static const enum cuda_attn_prefill_wg forms[] = {CUDA_ATTN_PREFILL_WG_PIPE, CUDA_ATTN_PREFILL_WG_SERIAL,
                                                          CUDA_ATTN_PREFILL_WG_OVERLAP,
                                                          CUDA_ATTN_PREFILL_WG_OVERLAP128, /* before WS128*: */
                                                          CUDA_ATTN_PREFILL_WG_WS128,      /* its bits */
                                                          CUDA_ATTN_PREFILL_WG_WS128PP};
        float *ovl = xmalloc((size_t)T * q_dim * sizeof(float));
        const struct prefill_ref ref = {.bits = h16, .hq = hq, .row = row, .seq = seq, .pos = pos, .ovl = ovl};
        if (!exact && hd == 128) /* the wgmma kernel's shape (MEMRA_ATTN_PREFILL_WG): each of its forms */
            for (size_t m = 0; m < sizeof forms / sizeof *forms; m++) {
                cuda_attn_prefill_set_wg(g_ctx, forms[m]);
                check_prefill_wg(&p, dq, datt, &ref, spans, dspans, n_spans, max_n, max_splits, window, scr, part);
            }
        cuda_attn_prefill_set_wg(g_ctx, wg);
        free(ovl);
        free(h16);
    }
    free(hone);
    free(hq);
    free(hatt);
    free(spans);
    free(row);
    free(seq);
    free(pos);
    free(len);
    cuda_free(dq);
    cuda_free(datt);
    cuda_free(dspans);
    cuda_free(scr);
    pool_free(&p);
}

static void test_decode(void)
{
    static const uint32_t dep8b[] = {1, 15, 16, 17, 33, 1000, 4100, 16400};
    static const uint32_t dep[] = {1, 15, 16, 17, 33, 1000, 4100};
    check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep8b, 8);
    check_decode((struct cuda_attn_dims){9, 3, 64}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){8, 1, 256}, 512, dep, 7);
    check_decode((struct cuda_attn_dims){8, 1, 256}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){12, 1, 96}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){2, 2, 34}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){16, 2, 32}, 100, dep, 7);
    check_decode((struct cuda_attn_dims){8, 8, 64}, 0, dep, 7); /* no GQA: the kernels' one-head groups */
}

static void test_prefill(void)
{
    /* (6000, 32), (2000, 100), (1000, 17): split by the rule (12, 5, 2 splits) */
    static const uint32_t sp[][2] = {{0, 1},      {0, 15},      {0, 64},     {0, 100},  {1000, 17},
                                     {16, 200},   {4000, 130},  {37, 65},    {6000, 32}, {2000, 100}};
    static const struct cuda_attn_dims dims[] = {{32, 8, 128}, {9, 3, 64}, {8, 2, 128}, {8, 8, 64}};
    static const uint32_t windows[] = {0, 0, 100, 64};
    for (int exact = 1; exact >= 0; exact--)
        for (int i = 0; i < 4; i++)
            check_prefill(dims[i], windows[i], sp, 10, exact, 0);
    /* every short span split the most (empty splits, one key tile a split), or none */
    check_prefill(dims[0], 0, sp, 10, true, CUDA_ATTN_PREFILL_MAX_SPLITS);
    check_prefill(dims[2], 100, sp, 10, true, CUDA_ATTN_PREFILL_MAX_SPLITS);
    check_prefill(dims[0], 0, sp, 10, true, 1);
}

/* A bf16 cache (MEMRA_KV_TYPE=bf16): pools of bf16 values, every launch also
 * on their bf16 copy, which must give the f32 copy's bits (and the errors
 * above against the reference of those values) — the 16-byte f32 loads, the
 * 8-byte and the 4-byte (head_dim 34) paths, both decode kernels, both
 * prefill modes, split spans. */
static void test_kv_bf16(void)
{
    static const uint32_t dep8b[] = {1, 15, 16, 17, 33, 1000, 4100, 16400};
    static const uint32_t dep[] = {1, 15, 16, 17, 33, 1000, 4100};
    static const uint32_t sp[][2] = {{0, 1},    {0, 15},    {0, 64},  {0, 100},   {1000, 17},
                                     {16, 200}, {4000, 130}, {37, 65}, {6000, 32}, {2000, 100}};
    g_bf16 = true;
    check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep8b, 8);
    check_decode((struct cuda_attn_dims){9, 3, 64}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){8, 1, 256}, 512, dep, 7);
    check_decode((struct cuda_attn_dims){2, 2, 34}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){8, 8, 64}, 0, dep, 7);
    check_prefill((struct cuda_attn_dims){32, 8, 128}, 0, sp, 10, true, 0);
    check_prefill((struct cuda_attn_dims){9, 3, 64}, 0, sp, 10, true, 0);
    check_prefill((struct cuda_attn_dims){8, 2, 128}, 100, sp, 10, false, 0);
    check_prefill((struct cuda_attn_dims){32, 8, 128}, 0, sp, 10, true, CUDA_ATTN_PREFILL_MAX_SPLITS);
    g_bf16 = false;
}

/* The wgmma prefill kernel (attn_prefill_wg.cu: the fast mode on a bf16 cache at head_dim 128; test_kv_bf16's
 * fast check runs it too): the 8B shape with its short spans split by the rule, every short span split the most
 * (the rest on wgmma beside the mma.sync kernel's partials), none split with a window and no GQA. Last in the
 * list: its random draws leave the other tests' digests as they were. */
static void test_prefill_wg(void)
{
    static const uint32_t sp[][2] = {{0, 1},    {0, 15},    {0, 64},  {0, 100},   {1000, 17},
                                     {16, 200}, {4000, 130}, {37, 65}, {6000, 32}, {2000, 100}};
    g_bf16 = true;
    check_prefill((struct cuda_attn_dims){32, 8, 128}, 0, sp, 10, false, 0);
    check_prefill((struct cuda_attn_dims){32, 8, 128}, 0, sp, 10, false, CUDA_ATTN_PREFILL_MAX_SPLITS);
    check_prefill((struct cuda_attn_dims){16, 16, 128}, 64, sp, 10, false, 1);
    check_prefill((struct cuda_attn_dims){32, 8, 128}, 0, sp, 10, false, 1); /* (the bf16 output's GQA shape) */
    g_bf16 = false;
}

/* The decode checks above with every launch of a supported shape on the
 * tensor cores (CUDA_ATTN_DECODE_TC: MEMRA_ATTN_DECODE=tc), plus shapes of
 * more than 8 query heads a kv head (two 8-row halves of the mma) with f32 and
 * bf16 keys: the same tolerance (their error is ~2e-6), the same bit checks
 * (alone = in a batch, split = rows form, one head a CTA = the group's, bf16
 * cache = its f32 copy). Shapes it does not take run the f32 kernels. Then
 * AUTO (the default): the tensor cores' bits for a bf16 cache, the f32
 * kernels' for an f32 one. */
static void check_auto(struct cuda_attn_dims d, const uint32_t *depths, uint32_t n)
{
    struct pool p;
    g_bf16 = true;
    pool_init(&p, d, n, depths);
    g_bf16 = false;
    const uint32_t q_dim = d.n_heads * d.head_dim;
    const size_t bytes = (size_t)n * q_dim * sizeof(float);
    const float scale = 1.0f / sqrtf((float)d.head_dim);
    float *hq, *ha = xmalloc(bytes), *hb = xmalloc(bytes);
    float *dq = rand_dev((size_t)n * q_dim, 2.0f, &hq);
    float *datt = cuda_alloc(bytes), *scr = cuda_alloc(cuda_attn_decode_scratch_floats(n, d) * sizeof(float));
    uint32_t *pos = xmalloc(n * sizeof *pos), *seq = xmalloc(n * sizeof *seq);
    for (uint32_t i = 0; i < n; i++)
        pos[i] = depths[i] - 1, seq[i] = i;
    uint32_t *dpos = cuda_alloc(n * sizeof *dpos), *dseq = cuda_alloc(n * sizeof *dseq);
    cuda_upload(g_ctx, dpos, pos, n * sizeof *pos);
    cuda_upload(g_ctx, dseq, seq, n * sizeof *seq);
    static const struct {
        bool bf16;
        enum cuda_attn_decode_kernels like;
    } cases[] = {{false, CUDA_ATTN_DECODE_F32}, {true, CUDA_ATTN_DECODE_TC}};
    for (int i = 0; i < 2; i++) {
        const struct cuda_attn_kv kv = cases[i].bf16 ? pool_kv16(&p) : pool_kv(&p);
        float *out[2] = {ha, hb};
        const enum cuda_attn_decode_kernels k[2] = {CUDA_ATTN_DECODE_AUTO, cases[i].like};
        for (int j = 0; j < 2; j++) {
            cuda_attn_decode_set_kernels(g_ctx, k[j]);
            cuda_fill_nan_f32(g_ctx, datt, (size_t)n * q_dim);
            cuda_attn_decode(g_ctx, dq, datt, n, dpos, dseq, d, kv, scale, 0, scr, false);
            cuda_download(g_ctx, out[j], datt, bytes);
        }
        CHECK_MSG(memcmp(ha, hb, bytes) == 0, "decode auto with a%s cache: not the %s kernels' bits",
                  cases[i].bf16 ? " bf16" : "n f32", cases[i].bf16 ? "tensor-core" : "f32");
    }
    cuda_attn_decode_set_kernels(g_ctx, g_tc ? CUDA_ATTN_DECODE_TC : CUDA_ATTN_DECODE_F32);
    free(hq), free(ha), free(hb), free(pos), free(seq);
    cuda_free(dq), cuda_free(datt), cuda_free(scr), cuda_free(dpos), cuda_free(dseq);
    pool_free(&p);
}

/* The tensor-core decode kernels with q and P in one bf16 part (cuda_attn_decode_set_one) on a bf16 cache:
 * within TOL_DECODE_ONE of f64, and everything else check_decode asks — every launch form and q home the
 * same bits, a row alone the same as in its batch — with every launch on the bf16 cache (g_kv16_ref). */
static void test_decode_one(void)
{
    static const uint32_t dep[] = {1, 15, 16, 17, 33, 1000, 4100};
    static const uint32_t dep8b[] = {1, 15, 16, 17, 33, 1000, 4100, 16400};
    const bool was = g_tc;
    g_tc = true;
    g_tol_decode = TOL_DECODE_ONE;
    cuda_attn_decode_set_kernels(g_ctx, CUDA_ATTN_DECODE_TC);
    cuda_attn_decode_set_one(g_ctx, true);
    printf("q and P in one bf16 part\n");
    g_bf16 = g_kv16_ref = true;
    check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep8b, 8);
    check_decode((struct cuda_attn_dims){9, 3, 64}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){16, 1, 128}, 100, dep8b, 8);
    check_decode((struct cuda_attn_dims){24, 2, 64}, 0, dep, 7);
    g_bf16 = g_kv16_ref = false;
    cuda_attn_decode_set_one(g_ctx, false);
    g_tol_decode = TOL_DECODE;
    g_tc = was;
    cuda_attn_decode_set_kernels(g_ctx, was ? CUDA_ATTN_DECODE_TC : CUDA_ATTN_DECODE_F32);
}

static void test_decode_tc(void)
{
    static const uint32_t dep[] = {1, 15, 16, 17, 33, 1000, 4100};
    const bool was = g_tc;
    g_tc = true;
    cuda_attn_decode_set_kernels(g_ctx, CUDA_ATTN_DECODE_TC);
    test_decode();
    check_decode((struct cuda_attn_dims){24, 2, 64}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){16, 1, 128}, 100, dep, 7);
    g_bf16 = true;
    check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){9, 3, 64}, 0, dep, 7);
    check_decode((struct cuda_attn_dims){16, 1, 128}, 100, dep, 7);
    check_decode((struct cuda_attn_dims){24, 2, 64}, 0, dep, 7);
    /* 8 rows: the split launches of >= 8 rows (q in shared memory by default where the register kernel spills) */
    static const uint32_t dep8b[] = {1, 15, 16, 17, 33, 1000, 4100, 16400};
    check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep8b, 8);
    check_decode((struct cuda_attn_dims){16, 1, 128}, 100, dep8b, 8);
    g_bf16 = false;
    g_tc = was;
    cuda_attn_decode_set_kernels(g_ctx, was ? CUDA_ATTN_DECODE_TC : CUDA_ATTN_DECODE_F32);
    check_auto((struct cuda_attn_dims){32, 8, 128}, dep, 7);
    check_auto((struct cuda_attn_dims){9, 3, 64}, dep, 7);
}

/* Other deals of a row's chunks over the splits (cuda_attn_decode_set_split_chunks): each is checked as the
 * default is — against f64, every launch form and q home the same bits, a row alone the same as in its batch
 * (check_decode) — on the 8B shape (f32 kernels, tensor cores with an f32 and a bf16 cache, 8 rows: the split
 * launches of >= 8 rows too) and a windowed one (a row's chunks from p0's). The context's value is restored. */
static void test_split_chunks(void)
{
    static const uint32_t dep8b[] = {1, 15, 16, 17, 33, 1000, 4100, 16400};
    static const uint32_t dep[] = {1, 15, 16, 17, 33, 1000, 4100};
    const uint32_t was = cuda_attn_decode_split_chunks(g_ctx);
    const bool tc_was = g_tc;
    static const uint32_t sc[] = {1, 3};
    for (int i = 0; i < 2; i++) {
        if (sc[i] == was)
            continue;
        printf("split chunks %u\n", sc[i]);
        cuda_attn_decode_set_split_chunks(g_ctx, sc[i]);
        g_tc = false;
        cuda_attn_decode_set_kernels(g_ctx, CUDA_ATTN_DECODE_F32);
        check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep8b, 8);
        check_decode((struct cuda_attn_dims){16, 2, 32}, 100, dep, 7);
        g_tc = true;
        cuda_attn_decode_set_kernels(g_ctx, CUDA_ATTN_DECODE_TC);
        check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep8b, 8);
        g_bf16 = true;
        check_decode((struct cuda_attn_dims){32, 8, 128}, 0, dep8b, 8);
        check_decode((struct cuda_attn_dims){16, 1, 128}, 100, dep8b, 8);
        g_bf16 = false;
    }
    g_tc = tc_was;
    cuda_attn_decode_set_kernels(g_ctx, tc_was ? CUDA_ATTN_DECODE_TC : CUDA_ATTN_DECODE_F32);
    cuda_attn_decode_set_split_chunks(g_ctx, was);
}

/* ---- timing ------------------------------------------------------------- */

/* mode: 0 the launcher's rule, 1 split CTAs + combine, 2 one CTA a row */
static const char *const k_modes[] = {"auto", "split", "rows"};

/* bench_decode's launches rotate over copies of the KV that together pass 4× l2 bytes (the L2's size: each
 * launch reads DRAM, as in a model); l2 = 0 keeps one copy (read from L2 where it fits). */
static void bench_decode_dims(uint32_t depth, uint32_t batch, size_t l2, int mode, bool bf16, uint32_t hsplit,
                              struct cuda_attn_dims d)
{
    cuda_attn_decode_set_hsplit(g_ctx, hsplit);
    const uint32_t es = bf16 ? 2 : 4; /* bytes an element (timing only: the bf16 copy holds the f32 bits' halves) */
    if (mode == 1)
        cuda_attn_decode_set_rows(g_ctx, 0);
    else if (mode == 2)
        cuda_attn_decode_set_rows(g_ctx, 1);
    const uint32_t q_dim = d.n_heads * d.head_dim, kv_dim = d.n_kv_heads * d.head_dim;
    const double bytes = (double)batch * depth * kv_dim * es * 2.0;
    uint32_t copies = (uint32_t)ceil(4.0 * (double)l2 / bytes);
    if (copies < 1)
        copies = 1;
    if (copies > 64)
        copies = 64;
    const uint32_t nseq = copies * batch, nb = (depth + 15) / 16;
    const size_t n = (size_t)nseq * nb * 16 * kv_dim;
    char *dk = cuda_alloc(n * es), *dv = cuda_alloc(n * es);
    float *hx = xmalloc((size_t)1 << 24);
    for (size_t i = 0; i < ((size_t)1 << 22); i++)
        hx[i] = rng_unit();
    for (size_t off = 0; off < n; off += (size_t)1 << 22) {
        size_t m = n - off < ((size_t)1 << 22) ? n - off : ((size_t)1 << 22);
        cuda_upload(g_ctx, dk + off * es, hx, m * es);
        cuda_upload(g_ctx, dv + off * es, hx, m * es);
    }
    free(hx);
    uint32_t *tab = xmalloc((size_t)nseq * nb * 4);
    for (uint32_t i = 0; i < nseq * nb; i++)
        tab[i] = i;
    uint32_t *dtab = cuda_alloc((size_t)nseq * nb * 4);
    cuda_upload(g_ctx, dtab, tab, (size_t)nseq * nb * 4);
    uint32_t *pos = xmalloc(nseq * 4), *seq = xmalloc(nseq * 4);
    for (uint32_t i = 0; i < nseq; i++) {
        pos[i] = depth - 1;
        seq[i] = i;
    }
    uint32_t *dpos = cuda_alloc(nseq * 4), *dseq = cuda_alloc(nseq * 4);
    cuda_upload(g_ctx, dpos, pos, nseq * 4);
    cuda_upload(g_ctx, dseq, seq, nseq * 4);
    float *hq, *dq = rand_dev((size_t)batch * q_dim, 1.0f, &hq);
    float *datt = cuda_alloc((size_t)batch * q_dim * 4);
    float *scr = cuda_alloc(cuda_attn_decode_scratch_floats(batch, d) * 4);
    /* settled, as the decode step launches it: the first chunk's loads go ahead of the PDL wait; and its rows'
     * least position known (pos_min: rows past the head split's bound take the kv-head grid) */
    const struct cuda_attn_kv kv = {.k = dk, .v = dv, .tables = dtab, .table_stride = nb, .settled = 1, .bf16 = bf16,
                                    .pos_min = depth - 1};
    const uint32_t NL = 64;
    cuda_graph_begin(g_ctx);
    for (uint32_t i = 0; i < NL; i++) {
        const uint32_t c = i % copies;
        cuda_attn_decode(g_ctx, dq, datt, batch, dpos + c * batch, dseq + c * batch, d, kv, 0.088f, 0, scr, false);
    }
    struct cuda_graph *gr = cuda_graph_end(g_ctx);
    struct cuda_timer *tm = cuda_timer_new();
    double ms[21];
    for (int w = 0; w < 3; w++)
        cuda_graph_launch(g_ctx, gr);
    for (int r = 0; r < 21; r++) {
        cuda_timer_start(g_ctx, tm);
        cuda_graph_launch(g_ctx, gr);
        cuda_timer_stop(g_ctx, tm);
        ms[r] = cuda_timer_ms(tm) / NL;
    }
    qsort(ms, 21, sizeof *ms, kernel_time_cmp);
    const double us = ms[10] * 1e3, gbs = bytes / (us * 1e-6) / 1e9;
    printf("| %u | %u | %s%s | %s | %s | %.1f | %.2f | %.0f | %.0f %% | %.2f |\n", depth, batch, k_modes[mode],
           g_tc ? " tc" : "", bf16 ? "bf16" : "f32", hsplit == CUDA_ATTN_HSPLIT_AUTO ? "auto" : hsplit ? "below" : "never", bytes / 1e6, us, gbs, 100.0 * gbs / BW_REF_GBS,
           us * 32 / 1e3);
    cuda_attn_decode_set_rows(g_ctx, CUDA_ATTN_ROWS_AUTO);
    cuda_attn_decode_set_hsplit(g_ctx, CUDA_ATTN_HSPLIT_AUTO);
    cuda_timer_free(tm);
    cuda_graph_free(gr);
    free(hq);
    free(tab);
    free(pos);
    free(seq);
    cuda_free(dk);
    cuda_free(dv);
    cuda_free(dtab);
    cuda_free(dpos);
    cuda_free(dseq);
    cuda_free(dq);
    cuda_free(datt);
    cuda_free(scr);
}

/* bench_decode_dims on the 8B shape (32 query heads, 8 kv heads, head_dim 128). */
static void bench_decode(uint32_t depth, uint32_t batch, size_t l2, int mode, bool bf16, uint32_t hsplit)
{
    bench_decode_dims(depth, batch, l2, mode, bf16, hsplit, (struct cuda_attn_dims){32, 8, 128});
}

/* Median ms of `reps` event-timed runs of one prefill launch (after 3 warm-ups). */
static float time_prefill(const float *dq, float *datt, const struct cuda_attn_span *dsp, uint32_t T,
                          uint32_t splits, const struct pool *p, bool bf16, float scale, bool exact, float *scr,
                          uint32_t cap)
{
    struct cuda_timer *tm = cuda_timer_new();
    double ms[15];
    const struct cuda_attn_dims d = p->d;
    const struct cuda_attn_kv kv = bf16 ? pool_kv16(p) : pool_kv(p);
    /* one span: split, the backend's call for it (no wgmma launch) */
    void (*fn)(struct cuda_ctx *, const float *, float *, const struct cuda_attn_span *, uint32_t, uint32_t, uint32_t,
               struct cuda_attn_dims, struct cuda_attn_kv, float, uint32_t, bool, float *, uint32_t) =
        splits > 1 ? cuda_attn_prefill_split : cuda_attn_prefill;
    for (int w = 0; w < 3; w++)
        fn(g_ctx, dq, datt, dsp, 1, T, splits, d, kv, scale, 0, exact, scr, cap);
    for (int r = 0; r < 15; r++) {
        cuda_timer_start(g_ctx, tm);
        fn(g_ctx, dq, datt, dsp, 1, T, splits, d, kv, scale, 0, exact, scr, cap);
        cuda_timer_stop(g_ctx, tm);
        ms[r] = cuda_timer_ms(tm);
    }
    qsort(ms, 15, sizeof *ms, kernel_time_cmp);
    cuda_timer_free(tm);
    return (float)ms[7];
}

/* One span of T rows at positions pos0 .. pos0 + T − 1 (8B shape): bf16, exact
 * and the f32 rows path timed on an f32 cache, bf16 and exact on the same
 * values' bf16 cache (the default), 32 sampled rows of each checked. */
static void bench_prefill(uint32_t pos0, uint32_t T)
{
    const struct cuda_attn_dims d = {32, 8, 128};
    const uint32_t q_dim = 32 * 128, len = pos0 + T;
    struct pool p;
    g_bf16 = true;
    pool_init(&p, d, 1, &len);
    g_bf16 = false;
    float *hq, *dq = rand_dev((size_t)T * q_dim, 2.0f, &hq);
    float *datt = cuda_alloc((size_t)T * q_dim * 4);
    const uint32_t splits = cuda_attn_prefill_splits(pos0, T);
    const struct cuda_attn_span sp = {.q0 = 0, .n = T, .pos0 = pos0, .table = 0, .splits = splits};
    struct cuda_attn_span *dsp = cuda_alloc(sizeof sp);
    cuda_upload(g_ctx, dsp, &sp, sizeof sp);
    float *scr = splits > 1 ? cuda_alloc(cuda_attn_prefill_scratch_floats(T * splits, d) * 4) : NULL;
    const float scale = 1.0f / sqrtf(128.0f);
    float *hatt = xmalloc((size_t)T * q_dim * 4);
    uint32_t rows[32], seqs[32], poss[32];
    for (int i = 0; i < 32; i++) {
        rows[i] = i == 0 ? T - 1 : (uint32_t)(rng_u64() % T);
        poss[i] = pos0 + rows[i];
        seqs[i] = 0;
    }
    int nonfinite;
    double err[2];
    float ms[3], ms16[2];
    test_current = "prefill bench rows";
    for (int exact = 0; exact < 2; exact++)
        for (int bf = 0; bf < 2; bf++) {
            cuda_fill_nan_f32(g_ctx, datt, (size_t)T * q_dim);
            (bf ? ms16 : ms)[exact] = time_prefill(dq, datt, dsp, T, splits, &p, bf, scale, exact, scr, T * splits);
            cuda_download(g_ctx, hatt, datt, (size_t)T * q_dim * 4);
            const double e = compare_rows(&p, hq, hatt, 32, rows, seqs, poss, scale, 0, &nonfinite);
            CHECK_MSG(e <= (exact ? TOL_PREFILL_EXACT : TOL_PREFILL) && nonfinite == 0,
                      "prefill %s pos0 %u T %u%s: error %.3g", exact ? "exact" : "bf16", pos0, T,
                      bf ? " bf16 KV" : "", e);
            if (!bf)
                err[exact] = e;
        }
    /* bf16 on the bf16 cache with the mma.sync kernel and the wgmma kernel's serial form (the context's form
     * above where it takes the shape) */
    const enum cuda_attn_prefill_wg wg = cuda_attn_prefill_wg_mode(g_ctx);
    cuda_attn_prefill_set_wg(g_ctx, CUDA_ATTN_PREFILL_WG_OFF);
    const float ms_sync = time_prefill(dq, datt, dsp, T, splits, &p, true, scale, false, scr, T * splits);
    cuda_attn_prefill_set_wg(g_ctx, CUDA_ATTN_PREFILL_WG_SERIAL);
    const float ms_serial = time_prefill(dq, datt, dsp, T, splits, &p, true, scale, false, scr, T * splits);
    cuda_attn_prefill_set_wg(g_ctx, wg);
    /* the f32 decode kernel row by row, 64 rows a launch (MEMRA_ATTN=rows) */
    const uint32_t R = 64;
    uint32_t *pos = xmalloc(T * sizeof *pos), *tabrow = xmalloc(T * sizeof *tabrow);
    for (uint32_t i = 0; i < T; i++) {
        pos[i] = pos0 + i;
        tabrow[i] = 0;
    }
    uint32_t *dpos = cuda_alloc(T * sizeof *dpos), *dtab = cuda_alloc(T * sizeof *dtab);
    cuda_upload(g_ctx, dpos, pos, T * sizeof *pos);
    cuda_upload(g_ctx, dtab, tabrow, T * sizeof *tabrow);
    float *dscr = cuda_alloc(cuda_attn_decode_scratch_floats(R, d) * 4);
    struct cuda_timer *tm = cuda_timer_new();
    double me[3];
    for (int r = 0; r < 4; r++) {
        cuda_timer_start(g_ctx, tm);
        for (uint32_t t = 0; t < T; t += R)
            cuda_attn_decode(g_ctx, dq + (size_t)t * q_dim, datt + (size_t)t * q_dim, T - t < R ? T - t : R,
                             dpos + t, dtab + t, d, pool_kv(&p), scale, 0, dscr, false);
        cuda_timer_stop(g_ctx, tm);
        if (r > 0)
            me[r - 1] = cuda_timer_ms(tm);
    }
    qsort(me, 3, sizeof *me, kernel_time_cmp);
    ms[2] = (float)me[1];
    const double flops = 4.0 * 128 * 32 * ((double)T * pos0 + (double)T * (T + 1) / 2.0);
    printf("| %u | %u | %u | %.3f | %.1f | %.1e | %.3f | %.1f | %.1e | %.3f | %.2f | %.2f | %.2f | %.3f | %.1f | "
           "%.3f | %.1f | %.3f | %.1f | %.3f | %.1f |\n",
           pos0, T, splits, ms[0], flops / (ms[0] * 1e-3) / 1e12, err[0], ms[1], flops / (ms[1] * 1e-3) / 1e12, err[1],
           ms[2], ms[1] * 32, ms[2] * 32, flops * 3 * 32 / (TF_REF * 1e12) * 1e3, ms16[0],
           flops / (ms16[0] * 1e-3) / 1e12, ms16[1], flops / (ms16[1] * 1e-3) / 1e12, ms_sync,
           flops / (ms_sync * 1e-3) / 1e12, ms_serial, flops / (ms_serial * 1e-3) / 1e12);
    free(pos);
    free(tabrow);
    cuda_free(dpos);
    cuda_free(dtab);
    cuda_free(dscr);
    cuda_free(scr);
    cuda_timer_free(tm);
    free(hq);
    free(hatt);
    cuda_free(dq);
    cuda_free(datt);
    cuda_free(dsp);
    pool_free(&p);
}

/* The prefill table: both precisions on an f32 and a bf16 cache, and the f32
 * rows path, at the 8B shape. */
static void bench_prefill_table(void)
{
    printf("\n## Prefill attention, 8B shape, one causal span of T rows after pos0 cached positions "
           "(median of 15; rows: the f32 decode kernel, 64 rows a launch, median of 3)\n\n"
           "| pos0 | T | splits | bf16 ms | bf16 TFLOP/s | bf16 err | exact ms | exact TFLOP/s | exact err | "
           "rows ms | exact ms x 32 | rows ms x 32 | exact floor ms x 32 (3x FLOPs) | bf16 KV: bf16 ms | "
           "TFLOP/s | bf16 KV: exact ms | TFLOP/s | bf16 KV: bf16 mma.sync ms | TFLOP/s | bf16 KV: bf16 wgmma "
           "serial ms | TFLOP/s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    bench_prefill(0, 512);
    bench_prefill(0, 4096);
    bench_prefill(6000, 32);
    bench_prefill(6000, 128);
    bench_prefill(3584, 512);
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    g_ctx = kernel_ctx_open();
    /* the checks name their kernels: f32 unless MEMRA_ATTN_DECODE=tc (test_decode_tc runs them on the tensor
     * cores, and checks the default's choice) */
    g_tc = getenv("MEMRA_ATTN_DECODE") && strcmp(getenv("MEMRA_ATTN_DECODE"), "tc") == 0;
    cuda_attn_decode_set_kernels(g_ctx, g_tc ? CUDA_ATTN_DECODE_TC : CUDA_ATTN_DECODE_F32);
    printf("L2 %zu MB\n", cuda_ctx_l2_bytes(g_ctx) >> 20);
    if (argc == 2 && strcmp(argv[1], "--prefill") == 0) { /* the prefill checks and table only */
        RUN(test_prefill);
        RUN(test_kv_bf16);
        RUN(test_prefill_wg);
        bench_prefill_table();
        cuda_ctx_free(g_ctx);
        return test_summary();
    }
    if (argc == 2 && strcmp(argv[1], "--prefill-wg") == 0) { /* the wgmma prefill checks and the prefill table */
        RUN(test_prefill_wg);
        bench_prefill_table();
        cuda_ctx_free(g_ctx);
        return test_summary();
    }
    if (argc == 2 && strcmp(argv[1], "--decode-tc") == 0) { /* test_decode_tc alone (its digests: two builds) */
        RUN(test_decode_tc);
        cuda_ctx_free(g_ctx);
        return test_summary();
    }
    if (argc == 2 && strcmp(argv[1], "--decode-one") == 0) { /* test_decode_one alone */
        RUN(test_decode_one);
        cuda_ctx_free(g_ctx);
        return test_summary();
    }
    if (argc >= 4 && argc <= 7 && strcmp(argv[1], "--one") == 0) {
        const long depth = strtol(argv[2], NULL, 10), batch = strtol(argv[3], NULL, 10);
        /* which cache's rows: -1 both, 0 f32, 1 bf16 (2: not a cache type) */
        const char *kv = argc >= 5 ? argv[4] : "all";
        const int kv_bf = !strcmp(kv, "all") ? -1 : !strcmp(kv, "f32") ? 0 : !strcmp(kv, "bf16") ? 1 : 2;
        /* warm: one copy of the KV, read again by every launch (from L2 where it fits): what the kernel
         * costs when its keys and values need not come from DRAM; cold (the default): copies that pass 4× the L2 */
        const bool warm = argc >= 6 && !strcmp(argv[5], "warm");
        const bool temp_ok = argc < 6 || warm || !strcmp(argv[5], "cold");
        /* H:KVH: the heads (head_dim 128) */
        unsigned nh = 32, nkv = 8;
        char tail = 0;
        const bool heads_ok = argc < 7 || (sscanf(argv[6], "%u:%u%c", &nh, &nkv, &tail) == 2 && nkv >= 1 &&
                                           nh >= nkv && nh <= 128 && nh % nkv == 0);
        if (depth < 1 || depth > (1 << 20) || batch < 1 || batch > 64 || kv_bf == 2 || !temp_ok || !heads_ok) {
            fprintf(stderr, "kernel_attn --one DEPTH BATCH [all|f32|bf16 [warm|cold [H:KVH]]]: depth 1..%d, batch "
                            "1..64, H a multiple of KVH, at most 128\n",
                    1 << 20);
            return 2;
        }
        const struct cuda_attn_dims od = {nh, nkv, 128};
        printf("| depth | batch | kernel | KV | head a CTA | KV MB | us | GB/s | %% of 4.3 TB/s | ms for 32 layers |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
        for (int m = 0; m < 3; m++)
            for (int bf = 0; bf < 2; bf++)
                for (int h = 0; h < 2; h++)
                    if (kv_bf < 0 || kv_bf == bf)
                        bench_decode_dims((uint32_t)depth, (uint32_t)batch, warm ? 0 : cuda_ctx_l2_bytes(g_ctx), m,
                                          bf, h ? 0 : CUDA_ATTN_HSPLIT_AUTO, od);
        cuda_ctx_free(g_ctx);
        return 0;
    }
    RUN(test_decode);
    RUN(test_prefill);
    RUN(test_kv_bf16);
    RUN(test_decode_tc);
    RUN(test_split_chunks);
    RUN(test_decode_one); /* these two last: their random draws leave the other tests' digests as they were */
    RUN(test_prefill_wg);
    if (!quick) {
        printf("\n## Decode attention, 8B shape (32 q / 8 kv heads, hd 128, f32 and bf16 KV), split-K %u x %u "
               "positions (graph of 64 launches incl. combine, median)\n\n"
               "| depth | batch | kernel | KV | head a CTA | KV MB | us | GB/s | %% of 4.3 TB/s | ms for 32 layers |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n",
               CUDA_ATTN_SPLITS, CUDA_ATTN_CHUNK);
        const uint32_t depths[] = {64, 512, 1024, 4096, 16384};
        for (int i = 0; i < 5; i++)
            for (int bf = 0; bf < 2; bf++)
                for (int h = 0; h < 2; h++) /* short rows one head a CTA (below the default position), never */
                    bench_decode(depths[i], 1, cuda_ctx_l2_bytes(g_ctx), 0, bf, h ? 0 : CUDA_ATTN_HSPLIT_AUTO);
        /* batches: the split launch against one CTA a row */
        static const uint32_t bd[][2] = {{512, 16}, {4096, 16}, {640, 32}, {640, 48}, {640, 64}, {1024, 64}, {4096, 64}};
        for (int i = 0; i < 7; i++)
            for (int m = 1; m < 3; m++)
                for (int bf = 0; bf < 2; bf++)
                    bench_decode(bd[i][0], bd[i][1], cuda_ctx_l2_bytes(g_ctx), m, bf, CUDA_ATTN_HSPLIT_AUTO);
        bench_prefill_table();
    }
    cuda_ctx_free(g_ctx);
    return test_summary();
}
