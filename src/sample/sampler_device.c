/* sample/sampler_device.c — the sampler's side of draws a backend prepares
 * where the logits are (engine/backend.h: backend_draw): which samplers
 * qualify, and the replays that make sampler_sample's very choice (token and
 * PRNG) from what the backend hands back instead of the logit row —
 *  - the plain greedy pick and the plain temperature draw (made whole on the
 *    device; the sampler only lends its uniform),
 *  - top-k candidates (the k best tokens with their z),
 *  - nucleus candidates for top-p / min-p without top-k (the best
 *    SAMPLER_NUCLEUS_MAX tokens, the row's total weight within a stated
 *    bound, and a bound on every other token's weight): replayed exactly
 *    when they decide the draw, else the caller fetches the row
 *    (SAMPLER_NEED_ROW, sampler_sample_z).
 */
#include "sample/sample.h"
#include "sample/sample_internal.h"

#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

bool sampler_plain_greedy(const struct sampler *s)
{
    return s->params.temperature == 0 && !s->penalties && s->params.n_logit_bias == 0 && !s->params.logprobs;
}

bool sampler_plain_temperature(const struct sampler *s)
{
    const struct sample_params *p = &s->params;
    return p->temperature > 0 && (p->top_k <= 0 || (uint32_t)p->top_k >= s->n_vocab) && p->top_p >= 1.0f &&
           p->min_p <= 0 && !s->penalties && p->n_logit_bias == 0 && !p->logprobs;
}

double sampler_draw_begin(struct sampler *s, uint64_t saved[4])
{
    memcpy(saved, s->rng, sizeof s->rng);
    return sample_rng_uniform(s->rng);
}

void sampler_draw_end(struct sampler *s, const uint64_t saved[4], bool used)
{
    if (!used)
        memcpy(s->rng, saved, sizeof s->rng);
}

bool sampler_topk_candidates(const struct sampler *s, uint32_t max_k)
{
    const struct sample_params *p = &s->params;
    return p->temperature > 0 && p->top_k > 0 && (uint32_t)p->top_k < s->n_vocab && (uint32_t)p->top_k <= max_k &&
           !s->penalties && p->n_logit_bias == 0 && !p->logprobs;
}

int32_t sampler_sample_candidates(struct sampler *s, int32_t *idx, float *val, uint32_t k, int32_t greedy)
{
    MEMRA_ASSERT(k == (uint32_t)s->params.top_k && k > 0);
    /* val[0] is the largest z of the vocabulary (the candidates are sorted) */
    if (val[0] == INFINITY || val[0] == -INFINITY)
        return greedy;
    return sample_candidates(s, idx, val, k, true, val[0], NULL, NULL);
}

/* ---- nucleus candidates ------------------------------------------------------
 *
 * sampler_sample without top-k (sampler.c: sample_stochastic) walks the whole
 * vocabulary in token order: weights w = exp_neg(z − zmax), total T = the
 * 16-lane double sum; top-p buckets the weights (top_p_unsorted), finds the
 * bucket kc where the running sum of bucket masses (from the top) reaches
 * p·T, keeps the buckets above kc in token order and the best of bucket kc by
 * (w desc, id asc) until the running sum reaches p·T; min-p then keeps
 * w ≥ min_p; the draw walks what is left. Everything there but T is exact
 * given the weights of the kept buckets: a bucket's mass is an exact sum, and
 * the running sums are replayed in the sampler's order. So the replay needs
 * every token of the buckets down to kc (all of them are candidates when
 * every other token's weight is below bucket kc: `rest`), and T only where it
 * is compared with a running sum: every such comparison must clear T's error
 * bound, else the row decides (SAMPLER_NEED_ROW). */

bool sampler_nucleus_candidates(const struct sampler *s)
{
    const struct sample_params *p = &s->params;
    return p->temperature > 0 && (p->top_k <= 0 || (uint32_t)p->top_k >= s->n_vocab) &&
           (p->top_p < 1.0f || p->min_p > 0) && !s->penalties && p->n_logit_bias == 0 && !p->logprobs;
}

struct nuc_item {
    int32_t id;
    float w;
};

static int nuc_by_id(const void *a, const void *b)
{
    const int32_t x = ((const struct nuc_item *)a)->id, y = ((const struct nuc_item *)b)->id;
    return (x > y) - (x < y);
}

/* Whether running sum `at` is certainly on one side of target (|at − target|
 * beyond the margin; a margin of 0: target is the sampler's own). */
static bool nuc_clear(double at, double target, double margin)
{
    return margin == 0 || fabs(at - target) > margin;
}

int32_t sampler_sample_nucleus(struct sampler *s, int32_t *idx, float *val, uint32_t k, double total, float rest,
                               int32_t greedy)
{
    const struct sample_params *p = &s->params;
    const uint32_t n = s->n_vocab;
    MEMRA_ASSERT(k > 0 && k <= SAMPLER_NUCLEUS_MAX && k <= n);
    const float zmax = val[0]; /* the candidates are sorted: the vocabulary's largest z */
    if (zmax == INFINITY || zmax == -INFINITY)
        return greedy;
    struct nuc_item it[SAMPLER_NUCLEUS_MAX];
    double margin = 0;
    if (k == n) { /* every token a candidate: the sampler's own total (and weights), from the z in token order */
        float zw[SAMPLER_NUCLEUS_MAX];
        for (uint32_t j = 0; j < k; j++) {
            MEMRA_ASSERT(idx[j] >= 0 && (uint32_t)idx[j] < n); /* (a permutation of the vocabulary) */
            zw[idx[j]] = val[j];
        }
        total = sample_sum_exp(zw, n, zmax, zw);
        for (uint32_t j = 0; j < k; j++)
            val[j] = zw[idx[j]];
    } else {
        /* T and the backend's total are sums of ≤ n + 1024 non-negative terms
         * each rounded at 2^-53 relative: both within (n + 1024)·2^-53·T of the
         * exact sum; the margin is 4× their sum (and covers p·T's rounding) */
        margin = ldexp(total, -50) * ((double)n + 4096);
        for (uint32_t j = 0; j < k; j++)
            val[j] = exp_neg(val[j] - zmax);
    }
    /* every token outside the candidates has w ≤ rest: buckets above rest's are whole */
    const int whole_above = k == n ? -1 : (int)sample_bucket(rest);
    uint32_t m = 0;
    if (p->top_p < 1.0f) {
        const double target = (double)p->top_p * total;
        double mass[SAMPLE_TOPP_BUCKETS];
        memset(mass, 0, sizeof(mass));
        for (uint32_t j = 0; j < k; j++)
            mass[sample_bucket(val[j])] += val[j];
        double cum = 0;
        int kc = -1;
        for (int b = SAMPLE_TOPP_BUCKETS - 1; b > whole_above; b--) {
            if (mass[b] > 0 && !nuc_clear(cum + mass[b], target, margin))
                return SAMPLER_NEED_ROW;
            if (cum + mass[b] >= target && mass[b] > 0) {
                kc = b;
                break;
            }
            cum += mass[b];
        }
        if (kc < 0 && k < n) /* the crossing lies where tokens outside the candidates may be */
            return SAMPLER_NEED_ROW;
        /* the buckets above kc in token order, then bucket kc best first,
         * cut where the running sum reaches p·T (everything, in token order,
         * when rounding kept the total below p·T: then k == n) */
        uint32_t na = 0, nb = 0;
        for (uint32_t j = 0; j < k; j++)
            if ((int)sample_bucket(val[j]) > kc)
                it[na++] = (struct nuc_item){idx[j], val[j]};
        for (uint32_t j = 0; j < k && kc >= 0; j++)
            if ((int)sample_bucket(val[j]) == kc)
                it[na + nb++] = (struct nuc_item){idx[j], val[j]};
        qsort(it, na, sizeof(*it), nuc_by_id);
        for (uint32_t j = 0; j < na + nb; j++)
            idx[j] = it[j].id, val[j] = it[j].w;
        sample_select_top_sorted(idx + na, val + na, nb, nb);
        m = na + nb;
        for (uint32_t j = na; j < na + nb; j++) {
            cum += val[j];
            if (!nuc_clear(cum, target, margin))
                return SAMPLER_NEED_ROW;
            if (cum >= target) {
                m = j + 1;
                break;
            }
        }
    } else {
        /* min-p alone: every token with w ≥ min_p must be a candidate */
        if (k < n && !(rest < p->min_p))
            return SAMPLER_NEED_ROW;
        for (uint32_t j = 0; j < k; j++)
            it[j] = (struct nuc_item){idx[j], val[j]};
        qsort(it, k, sizeof(*it), nuc_by_id);
        for (uint32_t j = 0; j < k; j++)
            idx[j] = it[j].id, val[j] = it[j].w;
        m = k;
    }
    if (p->min_p > 0)
        m = sample_min_p(idx, val, m, p->min_p);
    return sample_draw(s, idx, val, m, sample_mass(val, m));
}

int32_t sampler_sample_z(struct sampler *s, struct sample_work *w, const float *z, int32_t greedy)
{
    MEMRA_ASSERT(w->n_vocab == s->n_vocab && sampler_nucleus_candidates(s));
    const uint32_t n = s->n_vocab;
    for (uint32_t i = 0; i < n; i++)
        w->idx[i] = (int32_t)i;
    memcpy(w->val, z, (size_t)n * sizeof(float));
    const float zmax = sample_max_lanes(w->val, n);
    if (zmax == INFINITY || zmax == -INFINITY)
        return greedy;
    return sample_candidates(s, w->idx, w->val, n, false, zmax, w->idx2, w->val2);
}
