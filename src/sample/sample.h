/* sample/sample.h — the token sampler every backend shares, stop tokens, and the
 * stop-string matcher for streamed text.
 *
 * One `struct sampler` per sequence: it owns its PRNG state (xoshiro256**,
 * seeded through splitmix64 from params.seed) and its penalty history. The
 * vocabulary-sized scratch lives in a `struct sample_work`, one per sampling
 * thread, allocated once from the vocabulary size: sampler_sample never
 * allocates. Same params, same prompt, same logits → same
 * tokens, on any machine (the arithmetic is plain IEEE float/double in a fixed
 * order; ties are broken by the lowest token id everywhere).
 *
 * The pipeline, per step, over the backend's logits l (n_vocab floats):
 *   1. NaN logits count as −inf, +inf as FLT_MAX.
 *   2. repetition penalty (HF / llama.cpp): for every distinct token of
 *      prompt + generated, l > 0 → l / r, else l · r.
 *   3. frequency / presence penalties (OpenAI): for every token generated so far
 *      (prompt tokens do not count), l −= count · frequency + presence.
 *   4. logit_bias: l += bias[token] (−100 or −inf effectively bans a token).
 *   → the "processed logits". Log-probabilities reported to the user are the
 *     log-softmax of these (after penalties and bias, before temperature, top-k,
 *     top-p, min-p), as OpenAI and vLLM report them.
 *   5. temperature 0 → greedy: the argmax of the processed logits (lowest id on
 *      ties); steps 6–8 are skipped.
 *   6. z = l / temperature.
 *   7. top-k (k > 0: keep the k largest z), then top-p (p < 1: keep the smallest
 *      prefix of the tokens sorted by descending probability whose probability,
 *      renormalised over the top-k survivors, sums to ≥ p), then min-p (keep
 *      tokens with prob ≥ min_p · max prob) — the order of HF's warpers.
 *   8. draw one token from softmax(z) over the survivors with the sequence's PRNG.
 *
 * Penalty history: sampler_add_prompt() records the prompt; sampler_accept()
 * records each generated token. sampler_sample() itself does not change the
 * history (only the PRNG), so speculative decoding can sample and reject; the
 * engine calls sampler_accept for every token it keeps.
 */
#ifndef MEMRA_SAMPLE_SAMPLE_H
#define MEMRA_SAMPLE_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* OpenAI allows top_logprobs ≤ 20. */
#define SAMPLE_MAX_LOGPROBS 20
/* Bounds on the stop lists a request may give (OpenAI allows 4 stop strings). */
#define SAMPLE_MAX_STOP_TOKENS 64
#define STOP_MATCHER_MAX_STOPS 16
#define STOP_MATCHER_MAX_LEN 1024 /* bytes per stop string */

struct sample_bias {
    int32_t token; /* in [0, n_vocab) */
    float bias;    /* added to the logit; may be -INFINITY */
};

struct sample_params {
    float temperature;        /* 0 → greedy; must be ≥ 0 and finite */
    int32_t top_k;            /* ≤ 0 → off */
    float top_p;              /* in (0, 1]; 1 → off */
    float min_p;              /* in [0, 1]; 0 → off */
    float repetition_penalty; /* > 0; 1 → off */
    float presence_penalty;   /* OpenAI range [-2, 2]; 0 → off */
    float frequency_penalty;  /* OpenAI range [-2, 2]; 0 → off */
    uint64_t seed;            /* the engine picks one when the request gives none */
    bool logprobs;            /* fill sample_result.logprob */
    int32_t top_logprobs;     /* alternatives to report, 0..SAMPLE_MAX_LOGPROBS (needs logprobs) */
    const struct sample_bias *logit_bias; /* (n_logit_bias), copied by sampler_init */
    uint32_t n_logit_bias;
    const int32_t *stop_tokens; /* (n_stop_tokens): EOS and any others; copied */
    uint32_t n_stop_tokens;
};

/* Defaults: temperature 1, everything else off (top_p 1, repetition 1), seed 0. */
void sample_params_default(struct sample_params *p);

struct sample_result {
    int32_t token;   /* the chosen token, or -1 when every logit is −inf/NaN */
    float logprob;   /* log-prob of token in the processed distribution (if params.logprobs) */
    int32_t n_top;   /* entries in top_tokens / top_logprobs (= params.top_logprobs, or fewer
                        when fewer tokens have a finite logit) */
    int32_t top_tokens[SAMPLE_MAX_LOGPROBS];  /* descending log-prob, ties: lowest id first */
    float top_logprobs[SAMPLE_MAX_LOGPROBS];
};

/* Scratch buffers for sampler_sample, sized from the vocabulary once: one per
 * thread that samples (the engine thread), shared by all its sequences. */
struct sample_work {
    uint32_t n_vocab;
    float *logits; /* (n_vocab) processed logits of the current step */
    int32_t *idx;  /* (n_vocab) candidate token ids */
    float *val;    /* (n_vocab) candidate values (z, then weights), parallel to idx */
    int32_t *idx2; /* (n_vocab) scratch of top-p without top-k */
    float *val2;   /* (n_vocab) */
};

int sample_work_init(struct sample_work *w, uint32_t n_vocab, char *err, size_t errlen);
void sample_work_free(struct sample_work *w);

/* Per-sequence state. Small unless a penalty is on: the penalty history is
 * allocated (n_vocab-sized, 9 bytes per token) only when repetition_penalty != 1
 * or presence / frequency penalty != 0. */
struct sampler {
    uint32_t n_vocab;
    struct sample_params params; /* logit_bias / stop_tokens point at the owned copies below */
    uint64_t rng[4];             /* xoshiro256** state */
    bool penalties;              /* the history below exists */
    uint32_t *gen_count;         /* (n_vocab) times each token was generated */
    uint8_t *seen;               /* (n_vocab) 1 when the token is in seen_list */
    int32_t *seen_list;          /* (n_vocab) distinct prompt+generated tokens, first-seen order */
    uint32_t n_seen;
    struct sample_bias *bias;    /* (n_logit_bias) owned copy */
    int32_t *stops;              /* (n_stop_tokens) owned copy */
};

/* Validate params against n_vocab (ranges above; bias / stop token ids in range;
 * at most SAMPLE_MAX_STOP_TOKENS stops) and allocate. Returns 0, or -1 with the
 * reason (naming the parameter) in err. On failure nothing needs freeing.
 * A temperature below 1e-5 counts as 0 (greedy), as in vLLM. */
int sampler_init(struct sampler *s, uint32_t n_vocab, const struct sample_params *p, char *err,
                 size_t errlen);
void sampler_free(struct sampler *s);

/* Record prompt tokens for the repetition penalty (ids out of range are ignored).
 * May be called several times (chunked prompts); the prompt never counts for
 * presence / frequency penalties. */
void sampler_add_prompt(struct sampler *s, const int32_t *tokens /* (n) */, uint32_t n);
/* Record a generated (kept) token: repetition + presence + frequency history. */
void sampler_accept(struct sampler *s, int32_t token);

/* True when this sampler's choice is the plain argmax of the logits (greedy,
 * no penalties, no logit bias, no logprobs): then the backend's
 * backend_seq.argmax (engine/backend.h, the same rule as sampler_sample's
 * greedy) can stand in for sampler_sample, and the logits need not leave the
 * device. */
bool sampler_plain_greedy(const struct sampler *s);
/* True when this sampler draws from the whole vocabulary with temperature
 * alone (temperature > 0; top-k, top-p, min-p, penalties, logit bias and
 * logprobs all off): then a backend that honours backend_seq.draw
 * (engine/backend.h) can make sampler_sample's choice where the logits are.
 * That choice is steps 6 and 8 above with one uniform u of the PRNG:
 * z = l / temperature; if max z is ±inf, the greedy pick of l and no u is
 * used; else w_i = e^(z_i − max z) by exp_neg in float, total = the 16-lane
 * double sum of sum_exp, and the first token (in id order) at which the
 * running double sum of the w_i > 0 exceeds u·total (the last such token if
 * none does). */
bool sampler_plain_temperature(const struct sampler *s);
/* The uniform u of the next draw, taken from the PRNG (its state before is
 * saved); sampler_draw_end puts the state back when the draw did not use u
 * (the greedy case above), so the PRNG advances exactly as sampler_sample's. */
double sampler_draw_begin(struct sampler *s, uint64_t saved[4]);
void sampler_draw_end(struct sampler *s, const uint64_t saved[4], bool used);

/* Whether sampler_sample's choice can be made from the top-k candidates a
 * backend finds where the logits are (backend_draw.top_k): temperature > 0,
 * 0 < top_k < n_vocab and top_k ≤ max_k, no penalties, no logit bias, no
 * logprobs (top-p and min-p act on the candidates alone). */
bool sampler_topk_candidates(const struct sampler *s, uint32_t max_k);
/* sampler_sample's choice (PRNG included) from those candidates: idx / val
 * the top_k tokens in the order (z desc, id asc) with their z = l / T (l: the
 * logit with NaN as −inf and +inf as FLT_MAX; −0 and +0 equal), greedy the
 * greedy rule's token over l (taken when the largest z is not finite). k must
 * be params.top_k; idx and val are overwritten. */
int32_t sampler_sample_candidates(struct sampler *s, int32_t *idx, float *val, uint32_t k, int32_t greedy);

/* Nucleus candidates: top-p and/or min-p without top-k (temperature > 0, no
 * penalties, no logit bias, no logprobs). sampler_sample then works over the
 * whole vocabulary (sampler.c's bucketed top-p), but its choice is usually
 * decided by the best few tokens: a backend hands back the best
 * k = min(SAMPLER_NUCLEUS_MAX, n_vocab) tokens (z desc, id asc) with their z,
 * the row's total weight Σ e^(z − zmax) — any sum of the weights rounded at
 * most once a term (within 2^-50·(n_vocab + 4096) of sampler_sample's) — and
 * `rest` ≥ the weight e^(z − zmax) of every token outside the k (the largest
 * weight among the tokens whose z is ≤ the last candidate's). From those
 * sampler_sample_nucleus makes sampler_sample's choice, PRNG included, or
 * returns SAMPLER_NEED_ROW without touching the PRNG when they cannot decide
 * it (the nucleus reaches past the candidates, or a comparison with the
 * total falls within its bound); the caller then fetches the row's z and
 * calls sampler_sample_z. idx / val are overwritten. */
#define SAMPLER_NUCLEUS_MAX 1024u
#define SAMPLER_NEED_ROW (-2)
bool sampler_nucleus_candidates(const struct sampler *s);
int32_t sampler_sample_nucleus(struct sampler *s, int32_t *idx, float *val, uint32_t k, double total, float rest,
                               int32_t greedy);
/* sampler_sample's choice for a nucleus sampler from the whole row of
 * z = l / temperature (l: the logit with NaN as −inf, +inf as FLT_MAX; −0 and
 * +0 alike), greedy the greedy rule's token over l (taken when the largest z
 * is not finite). */
int32_t sampler_sample_z(struct sampler *s, struct sample_work *w, const float *z, int32_t greedy);

/* Choose the next token from logits (n_vocab floats, read only; +inf counts as
 * FLT_MAX). w must have been made for the same n_vocab. Fills *out (may be NULL)
 * and returns the token, or -1 when no token has a finite processed logit.
 * Never allocates. */
int32_t sampler_sample(struct sampler *s, struct sample_work *w, const float *logits /* (n_vocab) */,
                       struct sample_result *out);

/* True when token is one of params.stop_tokens. */
bool sampler_is_stop_token(const struct sampler *s, int32_t token);

/* ---- stop strings over a stream of text pieces ---------------------------
 *
 * Feed each decoded text piece; the matcher returns the text that may be shown
 * now and holds back any tail that could be the start of a stop string. A stop
 * is "found" at the first byte position where some stop string ends; if several
 * end there, the longest wins. The visible output is all text before that
 * match, and it does not depend on how the stream was split into pieces
 * (checked by tests/unit/test_sample_stop.c at every split point). Bytes, no
 * Unicode processing: stop strings and pieces are compared byte for byte.
 */
struct stop_matcher {
    char **stops;       /* (n_stops) owned NUL-terminated copies */
    size_t *stop_len;   /* (n_stops) */
    uint32_t n_stops;
    size_t max_len;     /* longest stop string */
    char *buf;          /* (cap) held-back tail + the current piece */
    size_t len, cap;
    size_t out_off;     /* start of the text returned by the last call, in buf */
    bool matched;       /* a stop was found; later feeds return nothing */
    int32_t match_index;/* which stop string matched, -1 before */
};

/* Copy the stop strings (each 1..STOP_MATCHER_MAX_LEN bytes, at most
 * STOP_MATCHER_MAX_STOPS; zero stops is allowed and passes text through).
 * Returns 0, or -1 with the reason in err. */
int stop_matcher_init(struct stop_matcher *m, const char *const *stops, uint32_t n_stops, char *err,
                      size_t errlen);
void stop_matcher_free(struct stop_matcher *m);
/* Forget the stream (keep the stop strings). */
void stop_matcher_reset(struct stop_matcher *m);

/* Add a piece. *out / *out_len receive the text to emit now (pointer into the
 * matcher, valid until the next call). Returns 1 when a stop string was found
 * (emit *out, then end the sequence with finish_reason "stop"), 0 otherwise,
 * -1 only when memory runs out. The internal buffer grows to the largest
 * held-tail + piece seen and is then reused (no steady-state allocation). */
int stop_matcher_feed(struct stop_matcher *m, const char *piece, size_t len, const char **out,
                      size_t *out_len);
/* End of stream without a stop: release the held-back tail. */
void stop_matcher_flush(struct stop_matcher *m, const char **out, size_t *out_len);

#endif
