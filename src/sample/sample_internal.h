/* sample/sample_internal.h — what the sampler's two files share (sampler.c:
 * the sampler over a whole row; sampler_device.c: the replays of draws a
 * backend prepares where the logits are). Not for use outside src/sample/:
 * the arithmetic here is the sampler's contract (sample.h), and the CUDA
 * backend repeats exp_neg operation for operation (backend/cuda/exp_neg.cuh).
 */
#ifndef MEMRA_SAMPLE_SAMPLE_INTERNAL_H
#define MEMRA_SAMPLE_SAMPLE_INTERNAL_H

#include "sample/sample.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- arithmetic that vectorises and is the same on every machine ----------- */

#define SAMPLE_LANES 16

/* e^x for x ≤ 0 (sampling weights and log-sum-exp), our own so that results do
 * not depend on the libm of the machine. x = k·ln2 + r with |r| ≤ ln2/2 (k by
 * the 1.5·2^23 rounding trick, which also leaves k in the low bits of t), e^r by
 * a degree-6 Taylor polynomial (relative error < 2e-7), 2^k put into the
 * exponent; x < −87 (and −inf) gives 0. The selects are done on the bit
 * patterns so that gcc -O2 vectorises it (no float compare-and-branch). */
static inline float exp_neg(float x)
{
    uint32_t xb;
    memcpy(&xb, &x, 4);
    /* for x ≤ 0 the bit pattern grows with |x|: x < −87 ⇔ bits > bits(−87) */
    const uint32_t under = (uint32_t) - (int32_t)(xb > 0xC2AE0000u);
    const uint32_t xcb = (xb & ~under) | (0xC2AE0000u & under);
    float xc;
    memcpy(&xc, &xcb, 4);
    const float t = xc * 1.44269504f + 12582912.0f;
    const float kf = t - 12582912.0f;                                /* round(x / ln2) */
    const float r = (xc - kf * 0.693145752f) - kf * 1.42860677e-6f; /* ln2 split hi + lo */
    float pl = 1.0f / 720;
    pl = pl * r + 1.0f / 120;
    pl = pl * r + 1.0f / 24;
    pl = pl * r + 1.0f / 6;
    pl = pl * r + 0.5f;
    pl = pl * r + 1.0f;
    pl = pl * r + 1.0f;
    uint32_t tb;
    memcpy(&tb, &t, 4);
    const uint32_t sbits = (tb - 0x4B400000u + 127u) << 23; /* 2^k, k ∈ [−126, 0] */
    float scale;
    memcpy(&scale, &sbits, 4);
    const float y = pl * scale;
    uint32_t yb;
    memcpy(&yb, &y, 4);
    yb &= ~under;
    float out;
    memcpy(&out, &yb, 4);
    return out;
}

/* Top-p without top-k buckets weights by their float bits: bits >> 20 is the
 * exponent and 3 mantissa bits (1017 buckets over [0, 1]). All weights of a
 * bucket are multiples of one power of two and < 2^18 of them fit a
 * vocabulary, so a bucket's double sum is exact in any order. */
#define SAMPLE_TOPP_BUCKETS 1024
static inline uint32_t sample_bucket(float w)
{
    uint32_t bits;
    memcpy(&bits, &w, 4);
    return bits >> 20;
}

/* The order of every selection and sort: value descending, id ascending. */
static inline bool better(float va, int32_t ia, float vb, int32_t ib)
{
    return va > vb || (va == vb && ia < ib);
}

/* 53 random bits / 2^53 from the PRNG. */
double sample_rng_uniform(uint64_t *s);
/* max of l[0..n) (−inf when n == 0). */
float sample_max_lanes(const float *l, uint32_t n);
/* Reorder idx/val[0..m) so that [0..k) holds the k best, sorted best first. */
void sample_select_top_sorted(int32_t *idx, float *val, uint32_t m, uint32_t k);
/* Σ e^(v[i] − mx) over i < n, summed in double in SAMPLE_LANES lanes (lane k
 * the i ≡ k mod 16 in order, then the lanes in order); the weights are also
 * stored to w_out when it is not NULL (may equal v). */
double sample_sum_exp(const float *v, uint32_t n, float mx, float *w_out);
/* The draw over m candidates idx/val (z = l / T; sorted: (z desc, id asc),
 * as top-k leaves them; else in token order), zmax the largest z of the whole
 * vocabulary (finite): weights, top-p, min-p, then the uniform. val is
 * overwritten; idx2 / val2: scratch of m for top-p over unsorted candidates
 * (NULL when sorted). */
int32_t sample_candidates(struct sampler *s, int32_t *idx, float *val, uint32_t m, bool sorted, float zmax,
                          int32_t *idx2, float *val2);
/* Keep the weights ≥ min_p, in order; returns how many. */
uint32_t sample_min_p(int32_t *idx, float *val, uint32_t m, float min_p);
/* Σ val[0..m) in double, in order. */
double sample_mass(const float *val, uint32_t m);
/* The uniform u·total, and the first of the m candidates (in order) whose
 * running double sum of weights exceeds it (the last with a weight if none). */
int32_t sample_draw(struct sampler *s, const int32_t *idx, const float *val, uint32_t m, double total);

#endif
