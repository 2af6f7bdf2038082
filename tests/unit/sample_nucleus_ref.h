/* tests/unit/sample_nucleus_ref.h — what a backend hands back for a nucleus
 * draw (sample.h: sampler_sample_nucleus), computed the slow obvious way: the
 * best k = min(SAMPLER_NUCLEUS_MAX, n) tokens by (z desc, id asc) with their
 * z (sample_topk_ref.h), the row's total weight summed in another order than
 * the sampler's (backwards, one double add a token), and rest = the largest
 * weight among the tokens whose z is ≤ the last candidate's. Shared by the
 * sampler's unit test and the GPU kernel test (kernel_sample.c), which checks
 * the device's total against this one's bound and its rest for equality.
 * Header-only. */
#ifndef MEMRA_TESTS_SAMPLE_NUCLEUS_REF_H
#define MEMRA_TESTS_SAMPLE_NUCLEUS_REF_H

#include "sample/sample.h"
#include "sample/sample_internal.h"
#include "sample_topk_ref.h"

/* The same with k candidates (1 ≤ k ≤ n; the backend's k is nucleus_ref's:
 * other values exercise the replay's bounds on small vocabularies). */
static inline int32_t nucleus_ref_k(const float *l, uint32_t n, float temp, uint32_t k, int32_t *idx, float *val,
                                    double *total, float *rest)
{
    const int32_t g = topk_ref(l, n, temp, k, idx, val);
    const float zmax = val[0], zlast = val[k - 1];
    double t = 0;
    float r = -1.0f;
    for (uint32_t i = n; i-- > 0;) {
        const float z = topk_ref_clean(l[i]) / temp;
        const float w = exp_neg(z - zmax);
        t += w;
        if (z <= zlast && w > r)
            r = w;
    }
    *total = t;
    *rest = r;
    return g;
}

/* Returns the greedy token; k = min(SAMPLER_NUCLEUS_MAX, n) entries of idx / val. */
static inline int32_t nucleus_ref(const float *l, uint32_t n, float temp, int32_t *idx, float *val, double *total,
                                  float *rest)
{
    return nucleus_ref_k(l, n, temp, n < SAMPLER_NUCLEUS_MAX ? n : SAMPLER_NUCLEUS_MAX, idx, val, total, rest);
}

#endif
