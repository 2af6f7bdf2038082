/* template/filters_seq.c — jinja2's sequence filters: items, dictsort, join,
 * list, first, last, reverse, map, select/reject(attr), sort, min, max, unique,
 * sum, batch. Attribute paths ("a.b", "0") walk items like jinja2's
 * make_attrgetter; sorting is stable and case-insensitive unless asked, like
 * Python's sorted() over jinja2's ignore_case keys; filters that return
 * iterators in jinja2 return VF_GEN lists (see filters.c).
 */
#include "template/filters.h"

#include <string.h>

static int get_attr_path(struct render *r, struct value v, struct value attr, struct value *out)
{
    /* jinja's make_attrgetter: "a.b" walks items; integer parts index */
    if (attr.type != V_STR) {
        return interp_getitem(r, v, attr, out);
    }
    const char *s = attr.s, *end = attr.s + attr.n;
    *out = v;
    while (s <= end) {
        const char *dot = memchr(s, '.', (size_t)(end - s));
        if (!dot)
            dot = end;
        struct value key = v_str(s, (size_t)(dot - s));
        bool num = dot > s;
        for (const char *c = s; c < dot; c++)
            num = num && *c >= '0' && *c <= '9';
        if (num)
            key = v_int(strtoll(s, NULL, 10));
        if (interp_getitem(r, *out, key, out) < 0) /* undefined items fail, as in jinja2 */
            return -1;
        s = dot + 1;
    }
    return 0;
}

/* case-insensitive key for sorting/comparing (jinja's ignore_case: str.lower) */
static int sort_key(struct render *r, struct value v, bool case_sensitive, struct value *out)
{
    if (!case_sensitive && v.type == V_STR)
        return str_case(r, v, 0, out);
    *out = v;
    return 0;
}

struct sort_item {
    struct value key, val;
};

/* Stable merge sort (Python's sort is stable); comparison errors abort. */
static int sort_items(struct render *r, struct sort_item *a, uint32_t n, bool reverse)
{
    if (n < 2)
        return 0;
    struct sort_item *tmp = ralloc(r, (size_t)n * sizeof(*tmp));
    if (!tmp)
        return -1;
    for (uint32_t width = 1; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int c;
                if (v_compare(r, a[j].key, a[i].key, &c) < 0)
                    return -1;
                bool take_right = reverse ? c > 0 : c < 0;
                tmp[k++] = take_right ? a[j++] : a[i++];
            }
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof(*a));
    }
    return 0;
}

static int list_of(struct render *r, struct value v, struct vlist **out) { return interp_iterate(r, v, out); }

int filter_items(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    if (v.type == V_UNDEF) {
        struct vlist *l = vlist_new(r, 0);
        *out = v_list(l);
        return l ? 0 : -1;
    }
    if (v.type != V_DICT)
        return rerr(r, "Can only get item pairs from a mapping.");
    struct vlist *l = vlist_new(r, v.d->n);
    if (!l)
        return -1;
    for (uint32_t i = 0; i < v.d->n; i++) {
        struct vlist *pair = vlist_new(r, 2);
        if (!pair)
            return -1;
        pair->v[0] = v.d->keys[i];
        pair->v[1] = v.d->vals[i];
        pair->n = 2;
        l->v[l->n] = v_list(pair);
        l->v[l->n++].flags = VF_TUPLE;
    }
    *out = v_list(l);
    out->flags = VF_GEN;
    return 0;
}

int filter_dictsort(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    if (v.type != V_DICT)
        return rerr(r, "dictsort: expected a mapping, got '%s'", v_type_name(v));
    bool by_value = false;
    if (!missing(p[1])) {
        if (p[1].type == V_STR && p[1].n == 5 && memcmp(p[1].s, "value", 5) == 0)
            by_value = true;
        else if (!(p[1].type == V_STR && p[1].n == 3 && memcmp(p[1].s, "key", 3) == 0))
            return rerr(r, "You can only sort by either \"key\" or \"value\"");
    }
    struct value items;
    if (filter_items(r, v, p, x, nx, &items) < 0)
        return -1;
    items.flags = 0;
    uint32_t n = items.l->n;
    struct sort_item *a = ralloc(r, ((size_t)n + 1) * sizeof(*a));
    if (!a)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        a[i].val = items.l->v[i];
        if (sort_key(r, a[i].val.l->v[by_value], opt_true(p[0]), &a[i].key) < 0)
            return -1;
    }
    if (sort_items(r, a, n, opt_true(p[2])) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        items.l->v[i] = a[i].val;
    *out = items;
    return 0;
}

int filter_join(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct vlist *l;
    if (list_of(r, v, &l) < 0)
        return -1;
    struct value sep = v_str("", 0);
    if (!missing(p[0]) && need_str(r, p[0], &sep) < 0)
        return -1;
    struct sbuf b = {0};
    for (uint32_t i = 0; i < l->n; i++) {
        struct value item = l->v[i];
        if (!missing(p[1]) && get_attr_path(r, item, p[1], &item) < 0)
            return -1;
        if ((i && sb_put(r, &b, sep.s, sep.n) < 0) || v_str_append(r, &b, item) < 0)
            return -1;
    }
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
}

int filter_list(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    struct vlist *l;
    if (list_of(r, v, &l) < 0)
        return -1;
    *out = v_list(l);
    return 0;
}

static int f_first_last(struct render *r, struct value v, bool last, struct value *out)
{
    struct vlist *l;
    if (last && v.type == V_LIST && (v.flags & VF_GEN))
        return rerr(r, "'generator' object is not reversible");
    if (list_of(r, v, &l) < 0)
        return -1;
    *out = l->n ? l->v[last ? l->n - 1 : 0] : v_undef("No first item, sequence was empty.");
    return 0;
}
int filter_first(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_first_last(r, v, false, out);
}
int filter_last(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_first_last(r, v, true, out);
}

int filter_reverse(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    struct vlist *l;
    if (list_of(r, v, &l) < 0)
        return -1;
    struct vlist *o = vlist_new(r, l->n);
    if (!o)
        return -1;
    for (uint32_t i = 0; i < l->n; i++)
        o->v[o->n++] = l->v[l->n - 1 - i];
    if (v.type == V_STR) {
        struct sbuf b = {0};
        for (uint32_t i = 0; i < o->n; i++)
            if (sb_put(r, &b, o->v[i].s, o->v[i].n) < 0)
                return -1;
        *out = v_str(b.p ? b.p : "", b.n);
        return 0;
    }
    *out = v_list(o);
    out->flags = VF_GEN; /* reversed(...): an iterator */
    return 0;
}

int filter_map(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    struct vlist *l;
    if (!v_truthy(v)) /* jinja2: `if value:` before iterating, so None maps to nothing */
        v = v_undef(NULL);
    if (list_of(r, v, &l) < 0)
        return -1;
    struct vlist *o = vlist_new(r, l->n);
    if (!o)
        return -1;
    int fid = -1;
    if (missing(p[1])) { /* map('filter', args...) */
        if (nx < 1 || x[0].type != V_STR)
            return rerr(r, "map: needs a filter name or attribute=");
        fid = filter_lookup(x[0].s, x[0].n);
        if (fid < 0)
            return rerr(r, "No filter named '%.*s'", (int)x[0].n, x[0].s);
    }
    for (uint32_t i = 0; i < l->n; i++) {
        struct value item = l->v[i], res;
        if (fid >= 0) {
            if (filter_apply(r, fid, item, x + 1, nx - 1, NULL, NULL, NULL, 0, &res) < 0)
                return -1;
        } else {
            if (get_attr_path(r, item, p[1], &res) < 0)
                return -1;
            if (res.type == V_UNDEF && !missing(p[2]))
                res = p[2];
        }
        o->v[o->n++] = res;
    }
    *out = v_list(o);
    out->flags = VF_GEN;
    return 0;
}

/* select/reject/selectattr/rejectattr: mode bit 1 = reject, bit 2 = by attribute */
static int select_common(struct render *r, struct value v, struct value *x, int nx, int mode, struct value *out)
{
    struct vlist *l;
    if (!v_truthy(v)) /* jinja2: `if seq:` before iterating, so None selects nothing */
        v = v_undef(NULL);
    if (list_of(r, v, &l) < 0)
        return -1;
    bool attr = mode & 2, reject = mode & 1;
    int k = 0;
    struct value attrname = v_none();
    if (attr) {
        if (nx < 1)
            return rerr(r, "selectattr/rejectattr: missing attribute name");
        attrname = x[k++];
    }
    int tid = -1;
    if (k < nx) {
        if (x[k].type != V_STR)
            return rerr(r, "select: test name must be a string");
        tid = test_lookup(x[k].s, x[k].n);
        if (tid < 0)
            return rerr(r, "No test named '%.*s'", (int)x[k].n, x[k].s);
        k++;
    }
    struct vlist *o = vlist_new(r, 0);
    if (!o)
        return -1;
    for (uint32_t i = 0; i < l->n; i++) {
        struct value item = l->v[i];
        if (attr && get_attr_path(r, item, attrname, &item) < 0)
            return -1;
        bool t;
        if (tid >= 0) {
            if (test_apply(r, tid, item, x + k, nx - k, &t) < 0)
                return -1;
        } else {
            t = v_truthy(item);
        }
        if (t != reject && vlist_push(r, o, l->v[i]) < 0)
            return -1;
    }
    *out = v_list(o);
    out->flags = VF_GEN;
    return 0;
}
int filter_select(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 0, o);
}
int filter_reject(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 1, o);
}
int filter_selectattr(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 2, o);
}
int filter_rejectattr(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 3, o);
}

static int minmax_sort_prepare(struct render *r, struct value v, struct value cs, struct value attr,
                               struct sort_item **items, uint32_t *n)
{
    struct vlist *l;
    if (list_of(r, v, &l) < 0)
        return -1;
    struct sort_item *a = ralloc(r, ((size_t)l->n + 1) * sizeof(*a));
    if (!a)
        return -1;
    for (uint32_t i = 0; i < l->n; i++) {
        struct value k = l->v[i];
        if (!missing(attr) && get_attr_path(r, k, attr, &k) < 0)
            return -1;
        if (sort_key(r, k, opt_true(cs), &a[i].key) < 0)
            return -1;
        a[i].val = l->v[i];
    }
    *items = a;
    *n = l->n;
    return 0;
}

static int f_minmax(struct render *r, struct value v, struct value *p, bool max, struct value *out)
{
    struct sort_item *a;
    uint32_t n;
    if (minmax_sort_prepare(r, v, p[0], p[1], &a, &n) < 0)
        return -1;
    if (!n) {
        *out = v_undef("No aggregated item, sequence was empty.");
        return 0;
    }
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++) {
        int c;
        if (v_compare(r, a[i].key, a[best].key, &c) < 0)
            return -1;
        if (max ? c > 0 : c < 0)
            best = i;
    }
    *out = a[best].val;
    return 0;
}
int filter_min(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    return f_minmax(r, v, p, false, out);
}
int filter_max(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    return f_minmax(r, v, p, true, out);
}

int filter_sort(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct sort_item *a;
    uint32_t n;
    if (minmax_sort_prepare(r, v, p[1], p[2], &a, &n) < 0 || sort_items(r, a, n, opt_true(p[0])) < 0)
        return -1;
    struct vlist *o = vlist_new(r, n);
    if (!o)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        o->v[o->n++] = a[i].val;
    *out = v_list(o);
    return 0;
}

int filter_unique(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct sort_item *a;
    uint32_t n;
    if (minmax_sort_prepare(r, v, p[0], p[1], &a, &n) < 0)
        return -1;
    struct vlist *o = vlist_new(r, n), *seen = vlist_new(r, n);
    if (!o || !seen)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if ((a[i].key.type == V_LIST && !(a[i].key.flags & VF_TUPLE)) || a[i].key.type == V_DICT)
            return rerr(r, "unhashable type: '%s'", v_type_name(a[i].key));
        bool dup = false;
        for (uint32_t k = 0; k < seen->n && !dup; k++)
            dup = v_equal(seen->v[k], a[i].key);
        if (!dup) {
            seen->v[seen->n++] = a[i].key;
            o->v[o->n++] = a[i].val;
        }
    }
    *out = v_list(o);
    out->flags = VF_GEN;
    return 0;
}

int filter_sum(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct vlist *l;
    if (list_of(r, v, &l) < 0)
        return -1;
    struct value acc = missing(p[1]) ? v_int(0) : p[1];
    for (uint32_t i = 0; i < l->n; i++) {
        struct value item = l->v[i];
        if (!missing(p[0]) && get_attr_path(r, item, p[0], &item) < 0)
            return -1;
        if (!v_is_number(acc) || !v_is_number(item))
            return rerr(r, "sum: unsupported operand types '%s' and '%s'", v_type_name(acc), v_type_name(item));
        if (acc.type == V_FLOAT || item.type == V_FLOAT)
            acc = v_float(v_as_double(acc) + v_as_double(item));
        else {
            int64_t z;
            if (__builtin_add_overflow(acc.type == V_BOOL ? acc.b : acc.i, item.type == V_BOOL ? item.b : item.i,
                                       &z))
                return rerr(r, "integer overflow");
            acc = v_int(z);
        }
    }
    *out = acc;
    return 0;
}

int filter_batch(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct vlist *l;
    if (list_of(r, v, &l) < 0)
        return -1;
    if (p[0].type != V_INT || p[0].i <= 0)
        return rerr(r, "batch: linecount must be a positive integer");
    uint32_t size = p[0].i > (1 << 24) ? (1u << 24) : (uint32_t)p[0].i;
    struct vlist *o = vlist_new(r, 0), *cur = NULL;
    if (!o)
        return -1;
    for (uint32_t i = 0; i < l->n; i++) {
        if (!cur || cur->n == size) {
            if (!(cur = vlist_new(r, 0)) || vlist_push(r, o, v_list(cur)) < 0)
                return -1;
        }
        if (vlist_push(r, cur, l->v[i]) < 0)
            return -1;
    }
    if (cur && cur->n < size && !missing(p[1]) && p[1].type != V_NONE)
        while (cur->n < size)
            if (vlist_push(r, cur, p[1]) < 0)
                return -1;
    *out = v_list(o);
    out->flags = VF_GEN;
    return 0;
}
