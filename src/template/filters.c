/* template/filters.c — jinja2's builtin filters that chat templates use,
 * with their parameter names (so keyword arguments work) and Python results;
 * `tojson` is transformers' json.dumps version (ensure_ascii=False, indent,
 * separators, no HTML escaping). Filters that return generators in jinja2 (map,
 * select*, reject*, unique, items) return lists flagged VF_GEN, which iterate once,
 * have no length and cannot be printed or serialized, as in Python. The tests
 * (`is defined`, ...) are in jinja_tests.c.
 */
#include "template/filters.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- text and number filters (sequence filters are in filters_seq.c) */

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
    o.sort_keys = opt_true(p[3]);
    struct sbuf b = {0};
    if (v_tojson(r, &b, v, &o, 0) < 0)
        return -1;
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
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
    {"items", filter_items, {NULL}},
    {"dictsort", filter_dictsort, {"case_sensitive", "by", "reverse", NULL}},
    {"join", filter_join, {"d", "attribute", NULL}},
    {"list", filter_list, {NULL}},
    {"first", filter_first, {NULL}},
    {"last", filter_last, {NULL}},
    {"reverse", filter_reverse, {NULL}},
    {"map", filter_map, {"*", "attribute", "default", NULL}},
    {"select", filter_select, {"*", NULL}},
    {"reject", filter_reject, {"*", NULL}},
    {"selectattr", filter_selectattr, {"*", NULL}},
    {"rejectattr", filter_rejectattr, {"*", NULL}},
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
    {"min", filter_min, {"case_sensitive", "attribute", NULL}},
    {"max", filter_max, {"case_sensitive", "attribute", NULL}},
    {"sort", filter_sort, {"reverse", "case_sensitive", "attribute", NULL}},
    {"unique", filter_unique, {"case_sensitive", "attribute", NULL}},
    {"sum", filter_sum, {"attribute", "start", NULL}},
    {"wordcount", f_wordcount, {NULL}},
    {"batch", filter_batch, {"linecount", "fill_with", NULL}},
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
