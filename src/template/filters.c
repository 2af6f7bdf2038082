/* template/filters.c — jinja2's builtin filters that chat templates use,
 * with their parameter names (so keyword arguments work) and Python results;
 * `tojson` is transformers' json.dumps version (ensure_ascii=False, indent,
 * separators, no HTML escaping). Filters that return generators in jinja2 (map,
 * select*, reject*, unique, items) return lists flagged VF_GEN, which iterate once,
 * have no length and cannot be printed or serialized, as in Python. The tests
 * (`is defined`, ...) are in jinja_tests.c.
 */
#include "template/tpl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 6
#define MISSING 0xffffffffu

typedef int (*filter_fn)(struct render *r, struct value v, struct value *p, struct value *extra, int nextra,
                         struct value *out);

struct fdef {
    const char *name;
    filter_fn fn;
    const char *params[MAXP]; /* NULL-terminated; "*" collects the remaining positionals */
};

static bool missing(struct value v) { return v.type == V_UNDEF && v.n == MISSING; }
static bool opt_true(struct value v) { return !missing(v) && v_truthy(v); }

static int need_str(struct render *r, struct value v, struct value *out)
{
    return v_to_str(r, v, out); /* soft_str: undefined → "" */
}

/* ---- helpers */

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

/* ---- filters */

static int f_default(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    bool use = v.type == V_UNDEF || (opt_true(p[1]) && !v_truthy(v));
    *out = use ? (missing(p[0]) ? v_str("", 0) : p[0]) : v;
    (void)r;
    return 0;
}

static int f_length(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    switch (v.type) {
    case V_STR: *out = v_int((int64_t)utf8_count(v.s, v.n)); return 0;
    case V_LIST:
        if (v.flags & VF_GEN)
            return rerr(r, "object of type 'generator' has no len()");
        *out = v_int(v.l->n);
        return 0;
    case V_DICT: *out = v_int(v.d->n); return 0;
    case V_UNDEF: *out = v_int(0); return 0;
    default: return rerr(r, "object of type '%s' has no len()", v_type_name(v));
    }
}

static int f_string(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return need_str(r, v, out); /* a Markup stays Markup (soft_str) */
}

static int f_trim(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct value s;
    if (need_str(r, v, &s) < 0)
        return -1;
    return str_strip(r, s, missing(p[0]) ? v_none() : p[0], 0, out);
}

static int f_case(struct render *r, struct value v, int mode, struct value *out)
{
    struct value s;
    if (need_str(r, v, &s) < 0)
        return -1;
    return str_case(r, s, mode, out);
}
static int f_lower(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_case(r, v, 0, out);
}
static int f_upper(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_case(r, v, 1, out);
}
/* jinja2's title filter (not str.title): split before runs of whitespace, '-',
 * '(', '{', '[', '<'; each piece gets its first character upper-cased and the
 * rest lower-cased, so "3rd" stays "3rd". */
static int f_title(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_case(r, v, 4, out);
}
static int f_capitalize(struct render *r, struct value v, struct value *p, struct value *x, int nx,
                        struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_case(r, v, 3, out);
}

static int f_tojson(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct json_opts o = {.ascii = opt_true(p[0])};
    char spaces[64];
    if (!missing(p[1]) && p[1].type != V_NONE) {
        if (p[1].type == V_INT) {
            int64_t w = p[1].i < 0 ? 0 : p[1].i > 60 ? 60 : p[1].i;
            memset(spaces, ' ', (size_t)w);
            o.indent = spaces;
            o.indent_len = (size_t)w;
        } else if (p[1].type == V_STR) {
            o.indent = p[1].s;
            o.indent_len = p[1].n;
        } else {
            return rerr(r, "tojson: indent must be an integer or a string");
        }
    }
    o.item_sep = o.indent ? "," : ", ";
    o.key_sep = ": ";
    if (!missing(p[2]) && p[2].type != V_NONE) {
        struct value a, b;
        if (p[2].type != V_LIST || p[2].l->n != 2 || (a = p[2].l->v[0]).type != V_STR ||
            (b = p[2].l->v[1]).type != V_STR)
            return rerr(r, "tojson: separators must be a pair of strings");
        char *is = ralloc(r, a.n + 1), *ks = ralloc(r, b.n + 1);
        if (!is || !ks)
            return -1;
        memcpy(is, a.s, a.n);
        memcpy(ks, b.s, b.n);
        o.item_sep = is;
        o.key_sep = ks;
    }
    if (opt_true(p[3]))
        return rerr(r, "tojson: sort_keys=True is not supported");
    struct sbuf b = {0};
    if (v_tojson(r, &b, v, &o, 0) < 0)
        return -1;
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
}

static int f_items(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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

static int f_dictsort(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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
    if (f_items(r, v, p, x, nx, &items) < 0)
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

static int f_join(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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

static int f_list(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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
static int f_first(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_first_last(r, v, false, out);
}
static int f_last(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    return f_first_last(r, v, true, out);
}

static int f_reverse(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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

static int f_map(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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
static int f_select(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 0, o);
}
static int f_reject(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 1, o);
}
static int f_selectattr(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 2, o);
}
static int f_rejectattr(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *o)
{
    (void)p;
    return select_common(r, v, x, nx, 3, o);
}

static int f_replace(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct value s, a, b;
    if (need_str(r, v, &s) < 0 || need_str(r, p[0], &a) < 0 || need_str(r, p[1], &b) < 0)
        return -1;
    int64_t count = -1;
    if (!missing(p[2]) && p[2].type != V_NONE) {
        if (p[2].type != V_INT)
            return rerr(r, "replace: count must be an integer");
        count = p[2].i;
    }
    return str_replace(r, s, a, b, count, out);
}

static int f_safe(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    if (need_str(r, v, out) < 0)
        return -1;
    out->flags = VF_SAFE;
    return 0;
}

static int f_escape(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    if (v.type == V_STR && (v.flags & VF_SAFE)) {
        *out = v;
        return 0;
    }
    struct value s;
    if (need_str(r, v, &s) < 0)
        return -1;
    return str_html_escape(r, s, out);
}

static int parse_number(struct value s, bool want_int, int base, struct value *out)
{
    char buf[64];
    if (s.n == 0 || s.n >= sizeof(buf))
        return -1;
    size_t k = 0;
    for (uint32_t i = 0; i < s.n; i++)
        if (s.s[i] != '_')
            buf[k++] = s.s[i];
    buf[k] = 0;
    char *end;
    if (want_int) {
        long long v = strtoll(buf, &end, base);
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (*end == 0 && end != buf) {
            *out = v_int(v);
            return 0;
        }
    }
    double d = strtod(buf, &end);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (*end != 0 || end == buf)
        return -1;
    if (want_int) {
        if (!(fabs(d) < 9.2e18))
            return -1;
        *out = v_int((int64_t)d);
    } else {
        *out = v_float(d);
    }
    return 0;
}

static int f_int(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx, (void)r;
    if (v.type == V_UNDEF) /* int(Undefined) raises in jinja2 */
        return interp_undefined_error(r, v);
    struct value def = missing(p[0]) ? v_int(0) : p[0];
    int base = !missing(p[1]) && p[1].type == V_INT ? (int)p[1].i : 10;
    if (v.type == V_INT) *out = v;
    else if (v.type == V_BOOL) *out = v_int(v.b);
    else if (v.type == V_FLOAT) *out = fabs(v.f) < 9.2e18 ? v_int((int64_t)v.f) : def;
    else if (v.type == V_STR) {
        if (parse_number(v, true, base, out) < 0)
            *out = def;
    } else *out = def;
    return 0;
}

static int f_float(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx, (void)r;
    if (v.type == V_UNDEF)
        return interp_undefined_error(r, v);
    struct value def = missing(p[0]) ? v_float(0.0) : p[0];
    if (v_is_number(v)) *out = v_float(v_as_double(v));
    else if (v.type == V_STR) {
        if (parse_number(v, false, 10, out) < 0)
            *out = def;
    } else *out = def;
    return 0;
}

static int f_abs(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)p, (void)x, (void)nx;
    if (v.type == V_FLOAT) *out = v_float(fabs(v.f));
    else if (v.type == V_INT) {
        if (v.i == INT64_MIN)
            return rerr(r, "integer overflow");
        *out = v_int(v.i < 0 ? -v.i : v.i);
    } else if (v.type == V_BOOL) *out = v_int(v.b);
    else return rerr(r, "bad operand type for abs(): '%s'", v_type_name(v));
    return 0;
}

static int f_round(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    if (!v_is_number(v))
        return rerr(r, "round: expected a number, got '%s'", v_type_name(v));
    int prec = !missing(p[0]) && p[0].type == V_INT ? (int)p[0].i : 0;
    if (prec < -20 || prec > 20)
        return rerr(r, "round: precision out of range");
    double f = v_as_double(v), m = pow(10.0, prec), y;
    const char *method = !missing(p[1]) && p[1].type == V_STR ? p[1].s : "common";
    size_t ml = !missing(p[1]) && p[1].type == V_STR ? p[1].n : 6;
    bool common = ml == 6 && memcmp(method, "common", 6) == 0;
    if (common && v.type != V_FLOAT) { /* round(int, n) stays an int (half to even for n < 0) */
        int64_t i = v.type == V_BOOL ? v.b : v.i, unit = 1;
        for (int k = 0; k < -prec && unit <= INT64_MAX / 10; k++)
            unit *= 10;
        if (unit > 1) {
            int64_t q = i / unit, rem = i % unit;
            if (rem < 0) {
                rem += unit;
                q--;
            }
            if (rem * 2 > unit || (rem * 2 == unit && (q & 1)))
                q++;
            i = q * unit;
        }
        *out = v_int(i);
        return 0;
    }
    if (common) {
        /* Python round(): half to even, on the exact decimal value */
        char buf[64];
        snprintf(buf, sizeof(buf), "%.*f", prec > 0 ? prec : 0, f);
        y = prec >= 0 ? strtod(buf, NULL) : nearbyint(f * m) / m;
    } else if (ml == 4 && memcmp(method, "ceil", 4) == 0) {
        y = ceil(f * m) / m;
    } else if (ml == 5 && memcmp(method, "floor", 5) == 0) {
        y = floor(f * m) / m;
    } else {
        return rerr(r, "method must be common, ceil or floor");
    }
    *out = v_float(y);
    return 0;
}

static int f_indent(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    struct value s = v, ind;
    if (v.type != V_STR) /* jinja2 does `s += "\n"` on the value itself */
        return v.type == V_UNDEF ? interp_undefined_error(r, v)
                                 : rerr(r, "unsupported operand type(s) for +=: '%s' and 'str'", v_type_name(v));
    char spaces[256];
    if (missing(p[0])) {
        ind = v_str("    ", 4);
    } else if (p[0].type == V_STR) {
        ind = p[0];
    } else if (p[0].type == V_INT) {
        int64_t w = p[0].i < 0 ? 0 : p[0].i > 255 ? 255 : p[0].i;
        memset(spaces, ' ', (size_t)w);
        ind = v_str(spaces, (size_t)w);
    } else {
        return rerr(r, "indent: width must be an integer or a string");
    }
    /* s + "\n", split into lines (str.splitlines), rejoin */
    struct sbuf tmp = {0};
    if (sb_put(r, &tmp, s.s, s.n) < 0 || sb_putc(r, &tmp, '\n') < 0)
        return -1;
    struct vlist *lines;
    if (str_splitlines(r, v_str(tmp.p, tmp.n), &lines) < 0)
        return -1;
    struct sbuf b = {0};
    bool blank = opt_true(p[2]);
    if (opt_true(p[1]) && sb_put(r, &b, ind.s, ind.n) < 0)
        return -1;
    for (uint32_t i = 0; i < lines->n; i++) {
        struct value ln = lines->v[i];
        if (i) {
            if (sb_putc(r, &b, '\n') < 0)
                return -1;
            if ((blank || ln.n) && sb_put(r, &b, ind.s, ind.n) < 0)
                return -1;
        }
        if (sb_put(r, &b, ln.s, ln.n) < 0)
            return -1;
    }
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
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
static int f_min(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    return f_minmax(r, v, p, false, out);
}
static int f_max(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    return f_minmax(r, v, p, true, out);
}

static int f_sort(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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

static int f_unique(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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

static int f_sum(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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

static int f_wordcount(struct render *r, struct value v, struct value *p, struct value *x, int nx,
                       struct value *out)
{
    (void)p, (void)x, (void)nx;
    struct value s;
    if (need_str(r, v, &s) < 0)
        return -1;
    int64_t words = 0;
    bool in = false;
    for (uint32_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.s[i];
        bool w = c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        words += w && !in;
        in = w;
    }
    *out = v_int(words);
    return 0;
}

static int f_batch(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
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

static int f_attr(struct render *r, struct value v, struct value *p, struct value *x, int nx, struct value *out)
{
    (void)x, (void)nx;
    if (p[0].type != V_STR)
        return rerr(r, "attr: name must be a string");
    return interp_getattr(r, v, p[0].s, p[0].n, out);
}

static const struct fdef FILTERS[] = {
    {"default", f_default, {"default_value", "boolean", NULL}},
    {"d", f_default, {"default_value", "boolean", NULL}},
    {"length", f_length, {NULL}},
    {"count", f_length, {NULL}},
    {"string", f_string, {NULL}},
    {"trim", f_trim, {"chars", NULL}},
    {"lower", f_lower, {NULL}},
    {"upper", f_upper, {NULL}},
    {"title", f_title, {NULL}},
    {"capitalize", f_capitalize, {NULL}},
    {"tojson", f_tojson, {"ensure_ascii", "indent", "separators", "sort_keys", NULL}},
    {"items", f_items, {NULL}},
    {"dictsort", f_dictsort, {"case_sensitive", "by", "reverse", NULL}},
    {"join", f_join, {"d", "attribute", NULL}},
    {"list", f_list, {NULL}},
    {"first", f_first, {NULL}},
    {"last", f_last, {NULL}},
    {"reverse", f_reverse, {NULL}},
    {"map", f_map, {"*", "attribute", "default", NULL}},
    {"select", f_select, {"*", NULL}},
    {"reject", f_reject, {"*", NULL}},
    {"selectattr", f_selectattr, {"*", NULL}},
    {"rejectattr", f_rejectattr, {"*", NULL}},
    {"replace", f_replace, {"old", "new", "count", NULL}},
    {"safe", f_safe, {NULL}},
    {"e", f_escape, {NULL}},
    {"escape", f_escape, {NULL}},
    {"forceescape", f_escape, {NULL}},
    {"int", f_int, {"default", "base", NULL}},
    {"float", f_float, {"default", NULL}},
    {"abs", f_abs, {NULL}},
    {"round", f_round, {"precision", "method", NULL}},
    {"indent", f_indent, {"width", "first", "blank", NULL}},
    {"min", f_min, {"case_sensitive", "attribute", NULL}},
    {"max", f_max, {"case_sensitive", "attribute", NULL}},
    {"sort", f_sort, {"reverse", "case_sensitive", "attribute", NULL}},
    {"unique", f_unique, {"case_sensitive", "attribute", NULL}},
    {"sum", f_sum, {"attribute", "start", NULL}},
    {"wordcount", f_wordcount, {NULL}},
    {"batch", f_batch, {"linecount", "fill_with", NULL}},
    {"attr", f_attr, {"name", NULL}},
};
#define NFILTERS ((int)(sizeof(FILTERS) / sizeof(FILTERS[0])))

int filter_lookup(const char *name, size_t n)
{
    for (int i = 0; i < NFILTERS; i++)
        if (strlen(FILTERS[i].name) == n && memcmp(FILTERS[i].name, name, n) == 0)
            return i;
    return -1;
}

int filter_apply(struct render *r, int fid, struct value v, struct value *args, int nargs, const char **kwn,
                 const uint32_t *kwl, struct value *kwv, int nkw, struct value *out)
{
    if (fid < 0 || fid >= NFILTERS)
        return rerr(r, "no such filter");
    const struct fdef *f = &FILTERS[fid];
    struct value p[MAXP];
    for (int i = 0; i < MAXP; i++) {
        p[i] = v_undef(NULL);
        p[i].n = MISSING;
    }
    int np = 0;
    bool star = f->params[0] && strcmp(f->params[0], "*") == 0;
    while (np < MAXP && f->params[np])
        np++;
    struct value *extra = NULL;
    int nextra = 0;
    if (star) {
        extra = args;
        nextra = nargs;
    } else {
        if (nargs > np)
            return rerr(r, "filter '%s' takes at most %d argument(s), got %d", f->name, np, nargs);
        for (int i = 0; i < nargs; i++)
            p[i] = args[i];
    }
    for (int k = 0; k < nkw; k++) {
        int i;
        for (i = star ? 1 : 0; i < np; i++)
            if (strlen(f->params[i]) == kwl[k] && memcmp(f->params[i], kwn[k], kwl[k]) == 0)
                break;
        if (i >= np)
            return rerr(r, "filter '%s' got an unexpected keyword argument '%.*s'", f->name, (int)kwl[k], kwn[k]);
        p[i] = kwv[k];
    }
    if (!star && !strcmp(f->name, "replace") && (missing(p[0]) || missing(p[1])))
        return rerr(r, "filter 'replace' needs 'old' and 'new'");
    if (!strcmp(f->name, "batch") && missing(p[0]))
        return rerr(r, "filter 'batch' needs 'linecount'");
    if (!strcmp(f->name, "attr") && missing(p[0]))
        return rerr(r, "filter 'attr' needs a name");
    return f->fn(r, v, p, extra, nextra, out);
}
