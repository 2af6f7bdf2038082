/* engine/backend.h — the backend vtable and the batch it computes.
 *
 * The engine (and the server's scheduler) talk to a backend only through this
 * header; the CPU backend (src/backend/cpu/) and the CUDA backend implement the
 * same ops, and the engine never knows which one runs.
 *
 * The unit of work is a batch of sequences. Each sequence owns a KV slot (a
 * numbered KV state of up to max_ctx positions, allocated at init). A sequence
 * in a batch brings a span of new tokens — a prefill chunk or one decode token
 * (or a few draft tokens) — placed at positions [pos, pos + n_tokens). The
 * backend appends their keys/values to the slot and returns logits for the
 * LAST n_logits tokens of the span (1 for sampling, 0 for a prefill chunk that
 * is not the last, n_tokens for perplexity or draft verification).
 *
 * KV rules: a slot holds positions [0, len). A span must start at pos ≤ len;
 * starting below len overwrites (rolls back) the slot from pos on, so
 * re-prefilling a slot from 0 needs no explicit reset. backend_kv_reset()
 * forgets a slot (len = 0). The KV layout is private to each backend (the CPU
 * one is contiguous per slot today; it will become paged), so nothing outside
 * reads it.
 *
 * Determinism: a sequence's logits depend only on its own tokens and KV state,
 * never on what else is in the batch (the CPU backend is bit-exact under any
 * batch composition and thread count).
 *
 * Threading: one thread (the engine thread) calls a backend; the backend may
 * use its own worker threads inside forward.
 */
#ifndef MEMRA_ENGINE_BACKEND_H
#define MEMRA_ENGINE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "model/model.h"

struct backend_seq {
    uint32_t slot;          /* KV slot, < backend_config.n_slots */
    uint32_t pos;           /* position of tokens[0]; ≤ the slot's current length */
    uint32_t n_tokens;      /* ≥ 1 */
    const int32_t *tokens;  /* (n_tokens) token ids, each < vocab */
    uint32_t n_logits;      /* logits for the last n_logits tokens (0..n_tokens) */
    float *logits;          /* (n_logits, vocab) written by forward; caller-owned */
};

struct backend_batch {
    uint32_t n_seqs;
    const struct backend_seq *seqs; /* (n_seqs); slots distinct within a batch */
};

struct backend_config {
    uint32_t n_slots;          /* KV slots (concurrent sequences) */
    uint32_t max_ctx;          /* positions per slot (0: the model's trained context) */
    uint32_t max_batch_tokens; /* Σ n_tokens of one batch (scratch is sized for it) */
    uint32_t n_threads;        /* CPU worker threads (0: all cores) */
};

struct backend;

struct backend_ops {
    const char *name; /* "cpu", "cuda" */
    /* Allocate the backend for model m (which must outlive it): KV slots,
     * scratch, threads. 0, or -1 with the reason in err. */
    int (*init)(struct backend **out, const struct model *m, const struct backend_config *cfg, char *err,
                size_t errlen);
    /* Make the weights usable (CPU: check and pre-touch the map; CUDA: upload). */
    int (*load_weights)(struct backend *b, char *err, size_t errlen);
    /* Compute one batch. -1 with the reason in err for a batch breaking the
     * rules above (bad slot, token id, position, size); no state changes then. */
    int (*forward)(struct backend *b, const struct backend_batch *batch, char *err, size_t errlen);
    /* Forget slot's KV state. */
    void (*kv_reset)(struct backend *b, uint32_t slot);
    /* Current length of slot's KV state. */
    uint32_t (*kv_len)(const struct backend *b, uint32_t slot);
    void (*free)(struct backend *b);
};

/* Every backend struct begins with this header. */
struct backend {
    const struct backend_ops *ops;
    const struct model *model;
    struct backend_config cfg; /* resolved: no zeros left */
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
static inline void backend_kv_reset(struct backend *b, uint32_t slot) { b->ops->kv_reset(b, slot); }
static inline uint32_t backend_kv_len(const struct backend *b, uint32_t slot) { return b->ops->kv_len(b, slot); }
void backend_close(struct backend *b);

/* Check a batch against the rules above; every backend's forward calls it
 * first (inline: backends do not link the engine). slot_len: (n_slots). */
static inline int backend_batch_check(const struct backend *b, const struct backend_batch *batch,
                                      const uint32_t *slot_len, char *err, size_t errlen)
{
    uint64_t total = 0;
    if (batch->n_seqs == 0 || batch->n_seqs > b->cfg.n_slots)
        return err_set(err, errlen, "batch: %u sequences (1..%u allowed)", batch->n_seqs, b->cfg.n_slots);
    for (uint32_t i = 0; i < batch->n_seqs; i++) {
        const struct backend_seq *s = &batch->seqs[i];
        if (s->slot >= b->cfg.n_slots)
            return err_set(err, errlen, "batch: sequence %u: slot %u >= %u slots", i, s->slot, b->cfg.n_slots);
        for (uint32_t j = 0; j < i; j++)
            if (batch->seqs[j].slot == s->slot)
                return err_set(err, errlen, "batch: sequences %u and %u share slot %u", j, i, s->slot);
        if (s->n_tokens == 0 || !s->tokens)
            return err_set(err, errlen, "batch: sequence %u has no tokens", i);
        if (s->pos > slot_len[s->slot])
            return err_set(err, errlen, "batch: sequence %u starts at position %u but slot %u holds %u", i,
                           s->pos, s->slot, slot_len[s->slot]);
        if ((uint64_t)s->pos + s->n_tokens > b->cfg.max_ctx)
            return err_set(err, errlen, "batch: sequence %u: positions up to %llu exceed the context of %u", i,
                           (unsigned long long)s->pos + s->n_tokens, b->cfg.max_ctx);
        if (s->n_logits > s->n_tokens || (s->n_logits > 0 && !s->logits))
            return err_set(err, errlen, "batch: sequence %u: n_logits %u with %u tokens", i, s->n_logits,
                           s->n_tokens);
        for (uint32_t t = 0; t < s->n_tokens; t++)
            if (s->tokens[t] < 0 || (uint32_t)s->tokens[t] >= b->model->cfg.vocab)
                return err_set(err, errlen, "batch: sequence %u: token id %d at %u is outside the vocabulary "
                               "(%u)", i, s->tokens[t], t, b->model->cfg.vocab);
        total += s->n_tokens;
    }
    if (total > b->cfg.max_batch_tokens)
        return err_set(err, errlen, "batch: %llu tokens exceed max_batch_tokens %u", (unsigned long long)total,
                       b->cfg.max_batch_tokens);
    return 0;
}

#endif
