/* tests/unit/sample_topk_ref.h — the top-k candidates sampler_sample_candidates
 * (sample/sample.h) expects, computed the slow obvious way: every token's
 * z = l / T (l: the logit with NaN as −inf, +inf as FLT_MAX), all sorted by
 * (z desc, id asc), the first k kept; and the greedy rule's token over l.
 * Shared by the sampler's unit test and the GPU kernel test (kernel_sample.c),
 * which checks the device's candidates against it. Header-only. */
#ifndef MEMRA_TESTS_SAMPLE_TOPK_REF_H
#define MEMRA_TESTS_SAMPLE_TOPK_REF_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

struct topk_ref_item {
    float z;
    int32_t id;
};

static int topk_ref_cmp(const void *a, const void *b)
{
    const struct topk_ref_item *x = a, *y = b;
    if (x->z > y->z || (x->z == y->z && x->id < y->id))
        return -1;
    return 1; /* ids are distinct: never equal */
}

static inline float topk_ref_clean(float v) { return isnan(v) ? -INFINITY : v == INFINITY ? FLT_MAX : v; }

/* idx / val (k) ← the top k; returns the greedy token (−1: no finite logit). */
static inline int32_t topk_ref(const float *l, uint32_t n, float temp, uint32_t k, int32_t *idx, float *val)
{
    struct topk_ref_item *it = malloc(sizeof(*it) * n);
    if (!it)
        abort();
    float mx = -INFINITY;
    int32_t greedy = -1;
    for (uint32_t i = 0; i < n; i++) {
        const float v = topk_ref_clean(l[i]);
        it[i] = (struct topk_ref_item){v / temp, (int32_t)i};
        if (v > mx)
            mx = v, greedy = (int32_t)i;
    }
    qsort(it, n, sizeof(*it), topk_ref_cmp);
    for (uint32_t j = 0; j < k; j++)
        idx[j] = it[j].id, val[j] = it[j].z;
    free(it);
    return mx == -INFINITY ? -1 : greedy;
}

#endif
