/* template/filters.h — what filters.c (text and number filters, the table)
 * and filters_seq.c (sequence filters) share. Internal to src/template. */
#ifndef MEMRA_TEMPLATE_FILTERS_H
#define MEMRA_TEMPLATE_FILTERS_H

#include "template/tpl_internal.h"

#define MAXP 6                /* most named parameters of a filter */
#define MISSING 0xffffffffu   /* value.n of a parameter the call did not pass */

typedef int (*filter_fn)(struct render *r, struct value v, struct value *p, struct value *extra, int nextra,
                         struct value *out);

struct fdef {
    const char *name;
    filter_fn fn;
    const char *params[MAXP]; /* NULL-terminated; "*" collects the remaining positionals */
};

static inline bool missing(struct value v) { return v.type == V_UNDEF && v.n == MISSING; }
static inline bool opt_true(struct value v) { return !missing(v) && v_truthy(v); }
/* soft_str: str(value), undefined → "" (a Markup stays Markup) */
static inline int need_str(struct render *r, struct value v, struct value *out)
{
    return v_to_str(r, v, out); /* soft_str: undefined → "" */
}

/* filters_seq.c */
int filter_items(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_dictsort(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_join(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_list(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_first(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_last(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_reverse(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_map(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_select(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_reject(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_selectattr(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_rejectattr(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_min(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_max(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_sort(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_unique(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_sum(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);
int filter_batch(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out);

#endif
