/* engine/backend.h — the backend vtable and the batch it computes.
 *
 * The engine (and the server's scheduler) talk to a backend only through this
 * header; the CPU backend (src/backend/cpu/) and the CUDA backend implement the
 * same ops, and the engine never knows which one runs.
 *
 * The unit of work is a batch of sequences. A sequence in a batch brings a
 * span of new tokens — a prefill chunk or one decode token (or a few draft
 * tokens) — placed at positions [pos, pos + n_tokens), and a block table: the
 * ids of the KV blocks (BACKEND_KV_BLOCK positions each) that hold its keys
 * and values, position p in block blocks[p / BACKEND_KV_BLOCK], row
 * p % BACKEND_KV_BLOCK. The backend writes the span's K/V through the table
 * and returns logits for the LAST n_logits tokens of the span (1 for sampling,
 * 0 for a prefill chunk that is not the last, n_tokens for perplexity or draft
 * verification).
 *
 * KV rules: the backend owns one pool of cfg.kv_blocks blocks (every layer's
 * K and V); which blocks belong to which sequence, and how many positions of
 * them are filled, is the caller's business (the engine's KV pool): the
 * backend keeps no per-sequence lengths. Positions [0, pos) must already hold
 * KV written by earlier forwards through the same table (or copied with
 * kv_copy); the backend cannot check it. A span starting below what was
 * written before simply overwrites (rollback needs nothing else). Blocks may
 * be shared read-only between sequences (a common prefix); a block that a
 * sequence writes must not appear in another table of the same batch.
 * The layout inside a block is private to each backend.
 *
 * Determinism: a sequence's logits depend only on its own tokens and the KV
 * values it reads, never on which blocks hold them or on what else is in the
 * batch (the CPU backend is bit-exact under any block placement, batch
 * composition and thread count).
 *
 * Threading: one thread (the engine thread) calls a backend; the backend may
 * use its own worker threads inside forward.
 */
#ifndef MEMRA_ENGINE_BACKEND_H
#define MEMRA_ENGINE_BACKEND_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/log.h"
#include "model/model.h"

/* Positions per KV block. */
#define BACKEND_KV_BLOCK 16u

/* A temperature draw made by the backend where the logits are (the
 * sampler's full-vocabulary rule, sample.h: sampler_plain_temperature), so
 * that only the token crosses to the host. Honoured only by a backend whose
 * struct backend has device_draw set, for a sequence with n_logits == 1 and
 * no argmax. */
struct backend_draw {
    float temperature; /* > 0 */
    double u;          /* the sampler's uniform in [0, 1) (sampler_draw_begin); unused with top_k */
    int32_t token;     /* out: sampler_sample's choice from these logits and u; with top_k the greedy rule's token */
    bool used;         /* out: whether u was used (false: the greedy case, max z = ±inf) */
    /* top_k > 0 (a backend with device_topk, top_k ≤ BACKEND_TOPK_MAX): instead of drawing, the backend
     * writes the top_k tokens by (z desc, id asc), z = l / temperature, and their z into cand_idx / cand_val
     * (sample.h: sampler_topk_candidates / sampler_sample_candidates, which the caller then runs) */
    uint32_t top_k;
    int32_t *cand_idx; /* (top_k, or BACKEND_TOPK_MAX with nucleus) caller-owned */
    float *cand_val;   /* (same) caller-owned */
    /* nucleus (top_k 0, a backend with device_topk; sample.h: sampler_nucleus_candidates, top-p / min-p
     * without top-k): the backend writes the n_cand = min(BACKEND_TOPK_MAX, vocab) best tokens the same way,
     * the row's total weight and `rest` as sampler_sample_nucleus describes them, and `token` as with top_k;
     * when the sampler cannot decide from them, backend_draw_z brings the row */
    bool nucleus;
    uint32_t n_cand; /* out */
    double total;    /* out: Σ e^(z − max z) over the vocabulary, any order, each term rounded once */
    float rest;      /* out: the largest e^(z − max z) among the tokens whose z ≤ the last candidate's */
    uint32_t row;    /* out, the backend's own: where backend_draw_z finds the row */
};
#define BACKEND_TOPK_MAX 1024u

struct backend_seq {
    const uint32_t *blocks; /* (ceil((pos + n_tokens) / BACKEND_KV_BLOCK)) block ids, each < kv_blocks */
    uint32_t pos;           /* position of tokens[0]; [0, pos) already hold KV in blocks */
    uint32_t n_tokens;      /* ≥ 1 */
    const int32_t *tokens;  /* (n_tokens) token ids, each < vocab */
    uint32_t n_logits;      /* logits for the last n_logits tokens (0..n_tokens) */
    float *logits;          /* (n_logits, vocab) written by forward; caller-owned */
    int32_t *argmax;        /* (n_logits) or NULL: when set, forward writes each row's
                               backend_logits_argmax here instead, and logits (still
                               required, as room) holds nothing defined: greedy
                               sampling without moving the rows off the device */
    struct backend_draw *draw; /* or NULL: when set (backend device_draw, n_logits 1, no argmax), forward
                                  fills it instead, and logits (still required, as room) hold nothing defined */
};

/* The greedy token of one row of logits, as the sampler's greedy rule picks
 * it (sample/sampler.c): NaN counts as −inf, +inf as FLT_MAX, the lowest
 * index among equal maxima; −1 when every logit is −inf or NaN. Every backend
 * honouring backend_seq.argmax computes exactly this. */
static inline int32_t backend_logits_argmax(const float *l, uint32_t n)
{
    float best = -INFINITY;
    int32_t at = -1;
    for (uint32_t i = 0; i < n; i++) {
        float v = l[i];
        v = isnan(v) ? -INFINITY : v == INFINITY ? FLT_MAX : v;
        if (v > best) {
            best = v;
            at = (int32_t)i;
        }
    }
    return at;
}

/* The host's last touch on `rows` rows of logits a backend computed: the
 * model's final softcap (cfg.final_softcap > 0: l = cap·tanh(l / cap)) in
 * place, then, when argmax is set, each row's greedy pick into argmax[r].
 * Every backend finishes its host-side rows through here. */
static inline void backend_logits_finish(const struct model_config *c, float *logits, uint32_t rows,
                                         int32_t *argmax)
{
    if (c->final_softcap > 0.0f)
        for (uint64_t k = 0; k < (uint64_t)rows * c->vocab; k++)
            logits[k] = c->final_softcap * tanhf(logits[k] / c->final_softcap);
    for (uint32_t r = 0; argmax && r < rows; r++)
        argmax[r] = backend_logits_argmax(logits + (uint64_t)r * c->vocab, c->vocab);
}

struct backend_batch {
    uint32_t n_seqs;
    const struct backend_seq *seqs; /* (n_seqs); written blocks not shared within a batch */
};

/* The KV cache's element type. BF16: each key and value is rounded to
 * bfloat16 (nearest even) when written and read back exactly — half the
 * bytes an attention step reads, keys and values within 2^-9 of f32's. Both
 * backends round the same values the same way, so CPU and GPU still agree
 * (the CPU keeps f32 storage holding the rounded values). */
enum backend_kv_type {
    BACKEND_KV_DEFAULT = 0, /* backend_open: MEMRA_KV_TYPE, else bf16 */
    BACKEND_KV_F32 = 1,
    BACKEND_KV_BF16 = 2,
};

/* "f32" / "bf16": 0 and the type in *out; else −1 with an error naming the
 * value. */
int backend_kv_type_parse(const char *s, enum backend_kv_type *out, char *err, size_t errlen);
const char *backend_kv_type_name(enum backend_kv_type t);

/* What a matmul's activation input holds. F32: x as computed (the GPU splits
 * it into bf16 high + low parts to keep ~16 bits: two tensor-core products a
 * matmul). BF16: every matmul's x is rounded to bfloat16 (nearest even) at
 * its entry, as a bf16 model in transformers computes, and a dense FFN's
 * gate and up outputs are rounded to bf16 before the activation (as
 * transformers' bf16 linear layers store them; MoE experts keep them f32) —
 * the weights stay exact, products are accumulated in f32, so a GPU GEMM needs one product for
 * BF16/FP8 weights (two for GGUF, whose dequantized values need a high and a
 * low part) and its batched GEMVs one pass. Both backends round at the same
 * places the same way; but where their f32 values differ by an ulp, the two
 * roundings can land on neighbouring bf16 values, so CPU and GPU agree to a
 * few 1e-3 of the logit range rather than ~1e-6, and greedy text may part at
 * a near tie (docs/FLAGS.md, MEMRA_ACT_TYPE: why f32 stays the default). */
enum backend_act_type {
    BACKEND_ACT_DEFAULT = 0, /* backend_open: MEMRA_ACT_TYPE, else f32 */
    BACKEND_ACT_F32 = 1,
    BACKEND_ACT_BF16 = 2,
};

/* "f32" / "bf16": 0 and the type in *out; else −1 with an error naming the
 * value. */
int backend_act_type_parse(const char *s, enum backend_act_type *out, char *err, size_t errlen);
const char *backend_act_type_name(enum backend_act_type t);

struct backend_config {
    uint32_t max_seqs;         /* sequences per batch (0: 1) */
    uint32_t max_ctx;          /* positions per sequence (0: the model's trained context) */
    uint32_t kv_blocks;        /* blocks in the KV pool (0: CPU max_seqs × ceil(max_ctx / 16); CUDA: what
                                  the free device memory holds after weights, scratch and headroom,
                                  MEMRA_KV_BLOCKS overriding) */
    uint32_t max_batch_tokens; /* Σ n_tokens of one batch (scratch is sized for it) */
    uint32_t n_threads;        /* CPU worker threads (0: all cores) */
    enum backend_kv_type kv_type; /* what a KV row holds (0: from MEMRA_KV_TYPE, bf16 when unset) */
    enum backend_act_type act_type; /* what a matmul's x holds (0: from MEMRA_ACT_TYPE, f32 when unset) */
};

/* The defaults of a backend_config's zero fields, the same on every backend:
 * one sequence, the model's trained context, 512 batch tokens (kv_blocks and
 * n_threads are each backend's own). */
static inline void backend_config_defaults(struct backend_config *bc, const struct model_config *c)
{
    if (bc->max_seqs == 0)
        bc->max_seqs = 1;
    if (bc->max_ctx == 0)
        bc->max_ctx = c->max_ctx;
    if (bc->max_batch_tokens == 0)
        bc->max_batch_tokens = 512;
}

struct backend;

struct backend_ops {
    const char *name; /* "cpu", "cuda" */
    /* Allocate the backend for model m (which must outlive it): the KV pool,
     * scratch, threads. 0, or -1 with the reason in err. */
    int (*init)(struct backend **out, const struct model *m, const struct backend_config *cfg, char *err,
                size_t errlen);
    /* Make the weights usable (CPU: check and pre-touch the map; CUDA: upload). */
    int (*load_weights)(struct backend *b, char *err, size_t errlen);
    /* Compute one batch. -1 with the reason in err for a batch breaking the
     * rules above (bad block id, token id, position, size); no state changes then. */
    int (*forward)(struct backend *b, const struct backend_batch *batch, char *err, size_t errlen);
    /* Copy every layer's K and V rows of block src into block dst (both
     * < kv_blocks): copy-on-write of a shared, partially filled block. */
    void (*kv_copy)(struct backend *b, uint32_t dst, uint32_t src);
    /* After a forward and before the next: the rows of z = l / temperature
     * (vocab floats each; l the logit with NaN as −inf, +inf as FLT_MAX, a
     * zero z +0) behind backend_draws d[0..n) of that forward, made with
     * nucleus, into z[0..n). Needed by backends that set device_topk. */
    void (*draw_z)(struct backend *b, const struct backend_draw *const *d, float *const *z, uint32_t n);
    void (*free)(struct backend *b);
};

/* Every backend struct begins with this header. */
struct backend {
    const struct backend_ops *ops;
    const struct model *model;
    struct backend_config cfg; /* resolved: no zeros left */
    uint64_t *batch_mark;      /* ((kv_blocks + 63) / 64) scratch of backend_batch_check, all zero between
                                  calls; allocated at its first call, freed by the backend's free */
    bool device_draw;          /* forward honours backend_seq.draw (set by the backend at init) */
    bool device_topk;          /* ... and its top_k and nucleus candidates (and draw_z) */
};

/* The backends built into this binary: "cpu", and "cuda" when built with CUDA. */
const struct backend_ops *backend_find(const char *name);
/* "cuda" when built with it and a device is usable, else "cpu"; MEMRA_BACKEND overrides. */
const char *backend_default_name(void);

/* Convenience: find + init + load_weights; 0 or -1 with the reason in err. */
int backend_open(struct backend **out, const char *name, const struct model *m, const struct backend_config *cfg,
                 char *err, size_t errlen);
static inline int backend_forward(struct backend *b, const struct backend_batch *batch, char *err, size_t errlen)
{
    return b->ops->forward(b, batch, err, errlen);
}
static inline void backend_kv_copy(struct backend *b, uint32_t dst, uint32_t src) { b->ops->kv_copy(b, dst, src); }
static inline void backend_draw_z(struct backend *b, const struct backend_draw *const *d, float *const *z,
                                  uint32_t n)
{
    b->ops->draw_z(b, d, z, n);
}
void backend_close(struct backend *b);

/* Blocks of a sequence of n positions. */
static inline uint32_t backend_kv_blocks_for(uint64_t n)
{
    return (uint32_t)((n + BACKEND_KV_BLOCK - 1) / BACKEND_KV_BLOCK);
}

/* The table of programs that give each sequence a fixed region of the pool
 * (run-gen, memra-ppl, memra-bench, tests): block k of sequence seq is
 * seq · ceil(max_ctx / 16) + k, k < ceil(max_ctx / 16). blocks: (ceil(max_ctx / 16)). */
static inline void backend_blocks_linear(uint32_t *blocks, uint32_t seq, uint32_t max_ctx)
{
    const uint32_t n = backend_kv_blocks_for(max_ctx);
    for (uint32_t k = 0; k < n; k++)
        blocks[k] = seq * n + k;
}

/* Find a block that sequence i writes (one covering [pos, pos + n_tokens))
 * and that another table of the batch — or another entry of its own — also
 * holds; 0 if none, else -1 with both named in err. Quadratic: only run to
 * name the culprit once backend_batch_check's bitmap pass saw a clash. */
static inline int backend_batch_find_shared(const struct backend_batch *batch, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t w0 = s->pos / BACKEND_KV_BLOCK, w1 = backend_kv_blocks_for((uint64_t)s->pos + s->n_tokens);
        for (uint32_t j = 0; j < batch->n_seqs; j++) {
            const struct backend_seq *o = &batch->seqs[j];
            const uint32_t ob = backend_kv_blocks_for((uint64_t)o->pos + o->n_tokens);
            for (uint32_t w = w0; w < w1; w++)
                for (uint32_t k = 0; k < ob; k++) {
                    if (o->blocks[k] != s->blocks[w] || (j == i && k == w))
                        continue;
                    if (j == i)
                        return err_set(err, errlen, "batch: sequence %u writes block %u, which its table also "
                                       "holds at index %u", i, s->blocks[w], k);
                    return err_set(err, errlen, "batch: sequence %u writes block %u, which sequence %u's table "
                                   "also holds", i, s->blocks[w], j);
                }
        }
    }
    return 0;
}

/* Check a batch against the rules above; every backend's forward calls it
 * first (inline: backends do not link the engine). The sharing rule uses a
 * bitmap of kv_blocks bits (b->batch_mark, allocated once, the bits a call sets
 * cleared before it returns; the quadratic search above only when the bitmap
 * could not be allocated or saw a clash). */
static inline int backend_batch_check(struct backend *b, const struct backend_batch *batch, char *err,
                                      size_t errlen)
{
    uint64_t total = 0;
    if (batch->n_seqs == 0 || batch->n_seqs > b->cfg.max_seqs || !batch->seqs)
        return err_set(err, errlen, "batch: %u sequences (1..%u allowed)", batch->n_seqs, b->cfg.max_seqs);
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        if (s->n_tokens == 0 || !s->tokens)
            return err_set(err, errlen, "batch: sequence %u has no tokens", i);
        if ((uint64_t)s->pos + s->n_tokens > b->cfg.max_ctx)
            return err_set(err, errlen, "batch: sequence %u: positions up to %llu exceed the context of %u", i,
                           (unsigned long long)s->pos + s->n_tokens, b->cfg.max_ctx);
        if (s->n_logits > s->n_tokens || (s->n_logits > 0 && !s->logits))
            return err_set(err, errlen, "batch: sequence %u: n_logits %u with %u tokens", i, s->n_logits,
                           s->n_tokens);
        if (s->draw && (!b->device_draw || s->n_logits != 1 || s->argmax || !(s->draw->temperature > 0) ||
                        !(s->draw->u >= 0 && s->draw->u < 1)))
            return err_set(err, errlen, "batch: sequence %u: a device draw needs a backend that makes them, "
                           "one logit row, no argmax, temperature > 0 and u in [0, 1)", i);
        if (s->draw && s->draw->top_k && (!b->device_topk || s->draw->top_k > BACKEND_TOPK_MAX ||
                                          s->draw->top_k >= b->model->cfg.vocab || !s->draw->cand_idx ||
                                          !s->draw->cand_val))
            return err_set(err, errlen, "batch: sequence %u: top-%u candidates need a backend that finds them, "
                           "k < the vocabulary and ≤ %u, and room for them", i, s->draw->top_k, BACKEND_TOPK_MAX);
        if (s->draw && s->draw->nucleus &&
            (!b->device_topk || s->draw->top_k || !s->draw->cand_idx || !s->draw->cand_val))
            return err_set(err, errlen, "batch: sequence %u: nucleus candidates need a backend that finds them, "
                           "no top_k, and room for %u of them", i, BACKEND_TOPK_MAX);
        if (!s->blocks)
            return err_set(err, errlen, "batch: sequence %u has no block table", i);
        const uint32_t nb = backend_kv_blocks_for((uint64_t)s->pos + s->n_tokens);
        for (uint32_t k = 0; k < nb; k++)
            if (s->blocks[k] >= b->cfg.kv_blocks)
                return err_set(err, errlen, "batch: sequence %u: block %u of its table is id %u, outside the "
                               "pool of %u blocks", i, k, s->blocks[k], b->cfg.kv_blocks);
        for (uint32_t t = 0; t < s->n_tokens; t++)
            if (s->tokens[t] < 0 || (uint32_t)s->tokens[t] >= b->model->cfg.vocab)
                return err_set(err, errlen, "batch: sequence %u: token id %d at %u is outside the vocabulary "
                               "(%u)", i, s->tokens[t], t, b->model->cfg.vocab);
        total += s->n_tokens;
    }
    if (total > b->cfg.max_batch_tokens)
        return err_set(err, errlen, "batch: %llu tokens exceed max_batch_tokens %u", (unsigned long long)total,
                       b->cfg.max_batch_tokens);
    /* a written block in no other table: mark the written blocks (a second
     * writer clashes), then look the read-only entries up */
    if (!b->batch_mark) {
        const uint32_t nw = (b->cfg.kv_blocks + 63) / 64;
        b->batch_mark = calloc(nw ? nw : 1, sizeof(uint64_t));
        if (!b->batch_mark)
            return backend_batch_find_shared(batch, err, errlen);
    }
    uint64_t *mark = b->batch_mark;
    bool clash = false;
    for (uint32_t i = 0; i < batch->n_seqs && !clash; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t w1 = backend_kv_blocks_for((uint64_t)s->pos + s->n_tokens);
        for (uint32_t w = s->pos / BACKEND_KV_BLOCK; w < w1; w++) {
            const uint32_t id = s->blocks[w];
            clash |= (mark[id / 64] >> (id % 64)) & 1u;
            mark[id / 64] |= (uint64_t)1 << (id % 64);
        }
    }
    for (uint32_t i = 0; i < batch->n_seqs && !clash; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        for (uint32_t k = 0; k < s->pos / BACKEND_KV_BLOCK; k++)
            clash |= (mark[s->blocks[k] / 64] >> (s->blocks[k] % 64)) & 1u;
    }
    for (uint32_t i = 0; i < batch->n_seqs; i++) { /* clear what was set (a clash stopped early: clear all) */
        const struct backend_seq *s = &batch->seqs[i];
        const uint32_t w1 = backend_kv_blocks_for((uint64_t)s->pos + s->n_tokens);
        for (uint32_t w = s->pos / BACKEND_KV_BLOCK; w < w1; w++)
            mark[s->blocks[w] / 64] &= ~((uint64_t)1 << (s->blocks[w] % 64));
    }
    return clash ? backend_batch_find_shared(batch, err, errlen) : 0;
}

#endif
