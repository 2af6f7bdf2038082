/* sample/sampler.c — the token sampler (pipeline and semantics in sample.h).
 *
 * Non-obvious choices:
 * - Every ordering of tokens is the total order (value descending, id
 *   ascending), so selections and sorts give one answer whatever the algorithm.
 * - Top-k comes from a bounded min-heap (O(n log k), no bad case). Top-p
 *   without top-k buckets the weights by their float bits and orders only the
 *   bucket where the mass crosses p, sorting just the parts of it the walk
 *   reaches (top_p_unsorted), so a flat distribution over 150k tokens does
 *   not pay for a full sort.
 * - Sampling weights are w = e^(z − z_max) in float by our own exp (exp_neg:
 *   the same bits on every machine, vectorised), summed in double; min-p keeps
 *   w ≥ min_p, which is p ≥ min_p · p_max with the very numbers drawn from.
 * - The draw: u = 53 random bits / 2^53, pick the first candidate whose running
 *   sum exceeds u · Σw (candidates in their current, deterministic order).
 */
#include "sample/sample.h"
#include "sample/sample_internal.h"

#include "core/log.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Same bits on every machine: no fused multiply-add contraction (gcc in ISO C
 * mode does not contract; clang does unless told). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define SAMPLE_GREEDY_EPS 1e-5f /* temperatures below this are greedy (vLLM's rule) */

/* ---- PRNG: xoshiro256**, seeded by splitmix64 ----------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t *s)
{
    const uint64_t result = rotl64(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

double sample_rng_uniform(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

/* ---- arithmetic that vectorises and is the same on every machine ----------- */

/* max of l[0..n), in SAMPLE_LANES independent lanes (vectorises; max is exact,
 * so the lane split does not change the answer). −inf when n == 0. */
float sample_max_lanes(const float *l, uint32_t n)
{
    float m[SAMPLE_LANES];
    for (int k = 0; k < SAMPLE_LANES; k++)
        m[k] = -INFINITY;
    size_t i = 0;
    for (; i + SAMPLE_LANES <= n; i += SAMPLE_LANES)
        for (int k = 0; k < SAMPLE_LANES; k++)
            m[k] = l[i + k] > m[k] ? l[i + k] : m[k];
    for (; i < n; i++)
        m[0] = l[i] > m[0] ? l[i] : m[0];
    float mx = m[0];
    for (int k = 1; k < SAMPLE_LANES; k++)
        mx = m[k] > mx ? m[k] : mx;
    return mx;
}

/* ---- parameters ------------------------------------------------------------ */

void sample_params_default(struct sample_params *p)
{
    memset(p, 0, sizeof(*p));
    p->temperature = 1.0f;
    p->top_p = 1.0f;
    p->repetition_penalty = 1.0f;
}

int sample_work_init(struct sample_work *w, uint32_t n_vocab, char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    if (n_vocab == 0 || n_vocab > INT32_MAX)
        return err_set(err, errlen, "sampler: vocabulary size %u out of range", n_vocab);
    w->n_vocab = n_vocab;
    w->logits = malloc((size_t)n_vocab * sizeof(float));
    w->idx = malloc((size_t)n_vocab * sizeof(int32_t));
    w->val = malloc((size_t)n_vocab * sizeof(float));
    w->idx2 = malloc((size_t)n_vocab * sizeof(int32_t));
    w->val2 = malloc((size_t)n_vocab * sizeof(float));
    if (!w->logits || !w->idx || !w->val || !w->idx2 || !w->val2) {
        sample_work_free(w);
        return err_set(err, errlen, "sampler: out of memory for a vocabulary of %u", n_vocab);
    }
    return 0;
}

void sample_work_free(struct sample_work *w)
{
    free(w->logits);
    free(w->idx);
    free(w->val);
    free(w->idx2);
    free(w->val2);
    memset(w, 0, sizeof(*w));
}

int sampler_init(struct sampler *s, uint32_t n_vocab, const struct sample_params *p, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    if (n_vocab == 0 || n_vocab > INT32_MAX)
        return err_set(err, errlen, "sampler: vocabulary size %u out of range", n_vocab);
    if (!isfinite(p->temperature) || p->temperature < 0)
        return err_set(err, errlen, "temperature must be a finite number >= 0");
    if (!(p->top_p > 0 && p->top_p <= 1))
        return err_set(err, errlen, "top_p must be in (0, 1]");
    if (!(p->min_p >= 0 && p->min_p <= 1))
        return err_set(err, errlen, "min_p must be in [0, 1]");
    if (!isfinite(p->repetition_penalty) || p->repetition_penalty <= 0)
        return err_set(err, errlen, "repetition_penalty must be a finite number > 0");
    if (!isfinite(p->presence_penalty) || !isfinite(p->frequency_penalty))
        return err_set(err, errlen, "presence_penalty and frequency_penalty must be finite");
    if (p->top_logprobs < 0 || p->top_logprobs > SAMPLE_MAX_LOGPROBS)
        return err_set(err, errlen, "top_logprobs must be in [0, %d]", SAMPLE_MAX_LOGPROBS);
    if (p->n_logit_bias > 0 && !p->logit_bias)
        return err_set(err, errlen, "logit_bias: missing entries");
    for (uint32_t i = 0; i < p->n_logit_bias; i++) {
        const struct sample_bias *b = &p->logit_bias[i];
        if (b->token < 0 || (uint32_t)b->token >= n_vocab)
            return err_set(err, errlen, "logit_bias: token %d out of range [0, %u)", b->token, n_vocab);
        if (isnan(b->bias) || b->bias == INFINITY)
            return err_set(err, errlen, "logit_bias: token %d: bias must be a number or -inf", b->token);
    }
    if (p->n_stop_tokens > SAMPLE_MAX_STOP_TOKENS)
        return err_set(err, errlen, "stop tokens: %u given, at most %d", p->n_stop_tokens, SAMPLE_MAX_STOP_TOKENS);
    if (p->n_stop_tokens > 0 && !p->stop_tokens)
        return err_set(err, errlen, "stop tokens: missing entries");
    for (uint32_t i = 0; i < p->n_stop_tokens; i++)
        if (p->stop_tokens[i] < 0 || (uint32_t)p->stop_tokens[i] >= n_vocab)
            return err_set(err, errlen, "stop token %d out of range [0, %u)", p->stop_tokens[i], n_vocab);

    s->n_vocab = n_vocab;
    s->params = *p;
    if (s->params.temperature < SAMPLE_GREEDY_EPS)
        s->params.temperature = 0;
    if (!p->logprobs)
        s->params.top_logprobs = 0;
    s->penalties = p->repetition_penalty != 1.0f || p->presence_penalty != 0 || p->frequency_penalty != 0;
    if (p->n_logit_bias) {
        s->bias = malloc(p->n_logit_bias * sizeof(*s->bias));
        if (!s->bias)
            goto oom;
        memcpy(s->bias, p->logit_bias, p->n_logit_bias * sizeof(*s->bias));
    }
    if (p->n_stop_tokens) {
        s->stops = malloc(p->n_stop_tokens * sizeof(*s->stops));
        if (!s->stops)
            goto oom;
        memcpy(s->stops, p->stop_tokens, p->n_stop_tokens * sizeof(*s->stops));
    }
    s->params.logit_bias = s->bias;
    s->params.stop_tokens = s->stops;
    if (s->penalties) {
        s->gen_count = calloc(n_vocab, sizeof(uint32_t));
        s->seen = calloc(n_vocab, 1);
        s->seen_list = malloc((size_t)n_vocab * sizeof(int32_t));
        if (!s->gen_count || !s->seen || !s->seen_list)
            goto oom;
    }
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
    return 0;
oom:
    sampler_free(s);
    return err_set(err, errlen, "sampler: out of memory");
}

void sampler_free(struct sampler *s)
{
    free(s->gen_count);
    free(s->seen);
    free(s->seen_list);
    free(s->bias);
    free(s->stops);
    memset(s, 0, sizeof(*s));
}

static void history_mark(struct sampler *s, int32_t t)
{
    if (!s->seen[t]) {
        s->seen[t] = 1;
        s->seen_list[s->n_seen++] = t;
    }
}

void sampler_add_prompt(struct sampler *s, const int32_t *tokens, uint32_t n)
{
    if (!s->penalties)
        return;
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] >= 0 && (uint32_t)tokens[i] < s->n_vocab)
            history_mark(s, tokens[i]);
}

void sampler_accept(struct sampler *s, int32_t token)
{
    if (!s->penalties || token < 0 || (uint32_t)token >= s->n_vocab)
        return;
    history_mark(s, token);
    if (s->gen_count[token] < UINT32_MAX)
        s->gen_count[token]++;
}

bool sampler_is_stop_token(const struct sampler *s, int32_t token)
{
    for (uint32_t i = 0; i < s->params.n_stop_tokens; i++)
        if (s->stops[i] == token)
            return true;
    return false;
}

/* ---- processed logits ----------------------------------------------------- */

static inline float logit_clean_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    const uint32_t nan = (uint32_t) - (int32_t)((b & 0x7fffffffu) > 0x7f800000u);
    const uint32_t pinf = (uint32_t) - (int32_t)(b == 0x7f800000u);
    b = (b & ~(nan | pinf)) | (0xff800000u & nan) | (0x7f7fffffu & pinf);
    memcpy(&v, &b, 4);
    return v;
}

static inline float logit_clean(float v)
{
    if (isnan(v))
        return -INFINITY;
    return v == INFINITY ? FLT_MAX : v;
}

/* Steps 1–4 of sample.h into w->logits. */
static void process_logits(const struct sampler *s, float *restrict l, const float *restrict logits)
{
    const uint32_t n = s->n_vocab;
    /* NaN → −inf, +inf → FLT_MAX, on the bit patterns (vectorises) */
    size_t i = 0; /* size_t indices: affine addresses for the vectoriser */
    for (; i + SAMPLE_LANES <= n; i += SAMPLE_LANES)
        for (int k = 0; k < SAMPLE_LANES; k++)
            l[i + k] = logit_clean_bits(logits[i + k]);
    for (; i < n; i++)
        l[i] = logit_clean_bits(logits[i]);
    if (s->penalties) {
        const float r = s->params.repetition_penalty;
        const float pres = s->params.presence_penalty, freq = s->params.frequency_penalty;
        for (uint32_t k = 0; k < s->n_seen; k++) {
            const int32_t t = s->seen_list[k];
            float v = l[t];
            if (r != 1.0f)
                v = v > 0 ? v / r : v * r;
            const uint32_t c = s->gen_count[t];
            if (c > 0)
                v -= (float)c * freq + pres;
            l[t] = logit_clean(v);
        }
    }
    for (uint32_t k = 0; k < s->params.n_logit_bias; k++) {
        const int32_t t = s->bias[k].token;
        l[t] = logit_clean(l[t] + s->bias[k].bias);
    }
}

/* ---- ordering helpers: (value desc, id asc) ------------------------------- */

/* Min-heap on "better": the root is the worst of the kept k. */
static void heap_sift_down(int32_t *hi, float *hv, uint32_t k, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < k && better(hv[w], hi[w], hv[l], hi[l]))
            w = l;
        if (r < k && better(hv[w], hi[w], hv[r], hi[r]))
            w = r;
        if (w == i)
            return;
        int32_t ti = hi[i]; hi[i] = hi[w]; hi[w] = ti;
        float tv = hv[i]; hv[i] = hv[w]; hv[w] = tv;
        i = w;
    }
}

/* Reorder idx/val[0..m) so that [0..k) holds the k best, sorted best first. */
void sample_select_top_sorted(int32_t *idx, float *val, uint32_t m, uint32_t k)
{
    if (k == 0)
        return;
    for (uint32_t i = k / 2; i-- > 0;)
        heap_sift_down(idx, val, k, i);
    for (uint32_t j = k; j < m; j++) {
        if (better(val[j], idx[j], val[0], idx[0])) {
            int32_t ti = idx[0]; idx[0] = idx[j]; idx[j] = ti;
            float tv = val[0]; val[0] = val[j]; val[j] = tv;
            heap_sift_down(idx, val, k, 0);
        }
    }
    /* heap sort: pop the worst to the end → best first */
    for (uint32_t e = k; e-- > 1;) {
        int32_t ti = idx[0]; idx[0] = idx[e]; idx[e] = ti;
        float tv = val[0]; val[0] = val[e]; val[e] = tv;
        heap_sift_down(idx, val, e, 0);
    }
}

/* Σ e^(v[i] − mx) over i < n, summed in double in SAMPLE_LANES lanes; the
 * weights are also stored to w_out when it is not NULL (may equal v). */
double sample_sum_exp(const float *v, uint32_t n, float mx, float *w_out)
{
    double acc[SAMPLE_LANES] = {0};
    size_t i = 0;
    for (; i + SAMPLE_LANES <= n; i += SAMPLE_LANES) {
        float e[SAMPLE_LANES];
        for (int k = 0; k < SAMPLE_LANES; k++)
            e[k] = exp_neg(v[i + k] - mx);
        for (int k = 0; k < SAMPLE_LANES; k++)
            acc[k] += (double)e[k];
        if (w_out)
            memcpy(w_out + i, e, sizeof(e));
    }
    for (; i < n; i++) {
        const float e = exp_neg(v[i] - mx);
        acc[i % SAMPLE_LANES] += (double)e;
        if (w_out)
            w_out[i] = e;
    }
    double sum = 0;
    for (int k = 0; k < SAMPLE_LANES; k++)
        sum += acc[k];
    return sum;
}

/* ---- log-probabilities ---------------------------------------------------- */

static void fill_logprobs(const struct sampler *s, const float *l, int32_t token, struct sample_result *out)
{
    const uint32_t n = s->n_vocab;
    const float mx = sample_max_lanes(l, n);
    const double lse = (double)mx + log(sample_sum_exp(l, n, mx, NULL));
    out->logprob = (float)((double)l[token] - lse);

    /* top N by one pass of insertion into a sorted list of ≤ 20 */
    const int32_t want = s->params.top_logprobs;
    int32_t nt = 0;
    for (uint32_t i = 0; i < n && want > 0; i++) {
        const float v = l[i];
        if (v == -INFINITY)
            continue;
        if (nt == want && !better(v, (int32_t)i, out->top_logprobs[nt - 1], out->top_tokens[nt - 1]))
            continue;
        int32_t j = nt < want ? nt++ : want - 1;
        while (j > 0 && better(v, (int32_t)i, out->top_logprobs[j - 1], out->top_tokens[j - 1])) {
            out->top_logprobs[j] = out->top_logprobs[j - 1];
            out->top_tokens[j] = out->top_tokens[j - 1];
            j--;
        }
        out->top_logprobs[j] = v;
        out->top_tokens[j] = (int32_t)i;
    }
    for (int32_t j = 0; j < nt; j++)
        out->top_logprobs[j] = (float)((double)out->top_logprobs[j] - lse);
    out->n_top = nt;
}

/* ---- the sampler ---------------------------------------------------------- */

static int32_t sample_greedy(const float *l, uint32_t n)
{
    const float mx = sample_max_lanes(l, n);
    if (mx == -INFINITY)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        if (l[i] == mx)
            return (int32_t)i;
    return -1;
}

/* val = l / temperature, idx = 0..n−1 (restrict: the buffers never overlap). */
static void temper(const float *restrict l, float *restrict val, int32_t *restrict idx, size_t n, float temp)
{
    size_t i = 0;
    for (; i + SAMPLE_LANES <= n; i += SAMPLE_LANES)
        for (int k = 0; k < SAMPLE_LANES; k++) {
            idx[i + k] = (int32_t)(i + k);
            val[i + k] = l[i + k] / temp;
        }
    for (; i < n; i++) {
        idx[i] = (int32_t)i;
        val[i] = l[i] / temp;
    }
}

/* Top-p over m candidates whose weights (val) are not sorted: keep the
 * smallest set, in the order (weight desc, id asc), whose mass reaches target.
 * One pass buckets the weights by their top bits (a float's bit pattern orders
 * like its value; bits >> 20 = exponent + 3 mantissa bits: 1017 buckets over
 * [0, 1]), a walk from the top finds the bucket kc where the mass crosses
 * target; the buckets above it are kept whole, in the order they come (token
 * order: the draw walks them so, and sampler_sample_nucleus replays it), and
 * bucket kc is walked best first until the running sum reaches target. The
 * kept set ends up in [0, result). idx2 / val2: scratch of m.
 *
 * Cost (a flat row of 128256, top-p 0.9: bench/RESULTS.md): the kept and the
 * crossing bucket's entries are gathered in one branch-free pass (kept ones
 * compacted in place, a write behind the read; bucket kc's into the scratch),
 * and bucket kc is ordered by a counting sort on its next 8 bits (256
 * sub-buckets, all of a sub-bucket above all of the next) so that only the
 * sub-buckets the walk reaches are sorted: the same order and the same
 * running sums as sorting the whole bucket. */
/* Slot of weight w (of bucket kc) in that bucket's order from the top: its
 * next 8 bits after the bucket's, reversed (255 − sub-bucket). */
static inline uint32_t top_p_slot(float w)
{
    uint32_t bits;
    memcpy(&bits, &w, 4);
    return 255 - ((bits >> 12) & 0xFF);
}

static uint32_t top_p_unsorted(int32_t *idx, float *val, uint32_t m, double target, int32_t *idx2, float *val2)
{
    /* a bucket's mass is exact in any order and any split (sample_internal.h):
     * four interleaved partial masses keep a run of one bucket from being one
     * chain of dependent adds */
    double mass4[4][SAMPLE_TOPP_BUCKETS], mass[SAMPLE_TOPP_BUCKETS];
    memset(mass4, 0, sizeof(mass4));
    uint32_t j = 0;
    for (; j + 4 <= m; j += 4)
        for (int q = 0; q < 4; q++)
            mass4[q][sample_bucket(val[j + q])] += val[j + q];
    for (; j < m; j++)
        mass4[0][sample_bucket(val[j])] += val[j];
    for (int k = 0; k < SAMPLE_TOPP_BUCKETS; k++)
        mass[k] = (mass4[0][k] + mass4[1][k]) + (mass4[2][k] + mass4[3][k]);
    double cum = 0;
    int kc = -1;
    for (int k = SAMPLE_TOPP_BUCKETS - 1; k >= 0; k--) {
        if (cum + mass[k] >= target && mass[k] > 0) {
            kc = k;
            break;
        }
        cum += mass[k];
    }
    if (kc < 0) /* rounding kept the total below p·Σ: keep everything */
        return m;
    uint32_t a = 0, nb = 0;
    for (uint32_t j = 0; j < m; j++) {
        const int32_t id = idx[j];
        const float v = val[j];
        const int bk = (int)sample_bucket(v);
        idx[a] = id, val[a] = v; /* a ≤ j: only entries already read are overwritten */
        a += bk > kc;
        idx2[nb] = id, val2[nb] = v;
        nb += bk == kc;
    }
    /* bucket kc after them, by its next 8 bits from the top (stable counting sort) */
    uint32_t start[257];
    memset(start, 0, sizeof(start));
    for (uint32_t j = 0; j < nb; j++)
        start[top_p_slot(val2[j]) + 1]++;
    for (uint32_t k = 1; k <= 256; k++)
        start[k] += start[k - 1]; /* start[k]: where slot k begins */
    uint32_t fill[256];
    memcpy(fill, start, sizeof(fill));
    for (uint32_t j = 0; j < nb; j++) {
        const uint32_t at = a + fill[top_p_slot(val2[j])]++;
        idx[at] = idx2[j], val[at] = val2[j];
    }
    for (uint32_t k = 0; k < 256; k++) { /* sub-buckets from the top: each sorted, then walked */
        const uint32_t s0 = a + start[k], s1 = a + start[k + 1];
        sample_select_top_sorted(idx + s0, val + s0, s1 - s0, s1 - s0);
        for (uint32_t j = s0; j < s1; j++) {
            cum += val[j];
            if (cum >= target)
                return j + 1;
        }
    }
    return a + nb;
}

static int32_t sample_stochastic(struct sampler *s, struct sample_work *w)
{
    const struct sample_params *p = &s->params;
    int32_t *idx = w->idx;
    float *val = w->val;
    const float temp = p->temperature;
    /* every token is a candidate; −inf ones get weight 0 and are never drawn */
    uint32_t m = s->n_vocab;
    temper(w->logits, val, idx, m, temp);
    const float zmax = sample_max_lanes(val, m);
    if (zmax == INFINITY || zmax == -INFINITY) /* no finite logit, or z overflowed: greedy */
        return sample_greedy(w->logits, s->n_vocab);

    bool sorted = false;
    if (p->top_k > 0 && (uint32_t)p->top_k < m) {
        sample_select_top_sorted(idx, val, m, (uint32_t)p->top_k);
        m = (uint32_t)p->top_k;
        sorted = true;
    }
    return sample_candidates(s, idx, val, m, sorted, zmax, w->idx2, w->val2);
}

int32_t sample_candidates(struct sampler *s, int32_t *idx, float *val, uint32_t m, bool sorted, float zmax,
                          int32_t *idx2, float *val2)
{
    const struct sample_params *p = &s->params;
    double total = sample_sum_exp(val, m, zmax, val);
    bool filtered = false;
    if (p->top_p < 1.0f) {
        const double target = (double)p->top_p * total;
        if (sorted) {
            double cum = 0;
            uint32_t j = 0;
            while (j < m) {
                cum += val[j++];
                if (cum >= target)
                    break;
            }
            m = j;
        } else {
            m = top_p_unsorted(idx, val, m, target, idx2, val2);
        }
        filtered = true;
    }
    if (p->min_p > 0) {
        m = sample_min_p(idx, val, m, p->min_p);
        filtered = true;
    }
    return sample_draw(s, idx, val, m, filtered ? sample_mass(val, m) : total);
}

uint32_t sample_min_p(int32_t *idx, float *val, uint32_t m, float min_p)
{
    uint32_t k = 0;
    for (uint32_t j = 0; j < m; j++) {
        idx[k] = idx[j];
        val[k] = val[j];
        k += val[j] >= min_p;
    }
    return k; /* the best token has weight 1 ≥ min_p: ≥ 1 when it was among the m */
}

double sample_mass(const float *val, uint32_t m)
{
    double total = 0;
    for (uint32_t j = 0; j < m; j++)
        total += val[j];
    return total;
}

int32_t sample_draw(struct sampler *s, const int32_t *idx, const float *val, uint32_t m, double total)
{
    const double u = sample_rng_uniform(s->rng) * total;
    double cum = 0;
    int32_t last = idx[0];
    for (uint32_t j = 0; j < m; j++) {
        if (val[j] <= 0)
            continue;
        cum += val[j];
        last = idx[j];
        if (cum > u)
            return idx[j];
    }
    return last;
}

int32_t sampler_sample(struct sampler *s, struct sample_work *w, const float *logits, struct sample_result *out)
{
    MEMRA_ASSERT(w->n_vocab == s->n_vocab);
    process_logits(s, w->logits, logits);
    int32_t token = s->params.temperature == 0 ? sample_greedy(w->logits, s->n_vocab) : sample_stochastic(s, w);
    if (out) {
        out->token = token;
        out->logprob = 0;
        out->n_top = 0;
        if (token >= 0 && s->params.logprobs)
            fill_logprobs(s, w->logits, token, out);
    }
    return token;
}
