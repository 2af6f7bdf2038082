/* template/value.c — the value type of the template interpreter: construction in
 * the render arena, Python's truthiness/equality/ordering, and the three ways a
 * value becomes text, each byte-compatible with Python:
 *   - str(): what `{{ x }}` prints (True, None, 1.0, 1e-05, lists/dicts as repr);
 *   - repr(): strings quoted Python's way, used inside containers;
 *   - json.dumps(ensure_ascii=False, ...): transformers' `tojson` filter.
 * Also the conversion of the jansson context into values, and UTF-8 helpers
 * (Python indexes and measures strings by code point).
 */
#include "template/tpl_internal.h"

#include "core/log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *ralloc(struct render *r, size_t n)
{
    if (r->failed)
        return NULL;
    if (n > r->lim->max_memory_bytes || r->arena.total > r->lim->max_memory_bytes - n) {
        rerr(r, "memory limit of %zu bytes exceeded", r->lim->max_memory_bytes);
        return NULL;
    }
    void *p = arena_alloc(&r->arena, n ? n : 1);
    if (!p)
        rerr(r, "out of memory");
    return p;
}

struct value v_str_copy(struct render *r, const char *s, size_t n)
{
    if (n > UINT32_MAX - 1) {
        rerr(r, "string too long");
        return v_undef(NULL);
    }
    char *p = ralloc(r, n + 1);
    if (!p)
        return v_undef(NULL);
    if (n)
        memcpy(p, s, n);
    return v_str(p, n);
}

struct vlist *vlist_new(struct render *r, uint32_t cap)
{
    struct vlist *l = ralloc(r, sizeof(*l));
    if (!l)
        return NULL;
    if (cap && !(l->v = ralloc(r, (size_t)cap * sizeof(struct value))))
        return NULL;
    l->cap = cap;
    return l;
}

int vlist_push(struct render *r, struct vlist *l, struct value v)
{
    if (l->n == l->cap) {
        if (l->cap >= (1u << 28))
            return rerr(r, "list too long");
        uint32_t cap = l->cap ? l->cap * 2 : 4;
        struct value *nv = ralloc(r, (size_t)cap * sizeof(*nv));
        if (!nv)
            return -1;
        if (l->n)
            memcpy(nv, l->v, (size_t)l->n * sizeof(*nv));
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

struct vdict *vdict_new(struct render *r, uint32_t cap)
{
    struct vdict *d = ralloc(r, sizeof(*d));
    if (!d)
        return NULL;
    if (cap && (!(d->keys = ralloc(r, (size_t)cap * sizeof(struct value))) ||
                !(d->vals = ralloc(r, (size_t)cap * sizeof(struct value)))))
        return NULL;
    d->cap = cap;
    return d;
}

struct value *vdict_get_str(const struct vdict *d, const char *s, size_t n)
{
    for (uint32_t i = 0; i < d->n; i++)
        if (d->keys[i].type == V_STR && d->keys[i].n == n && memcmp(d->keys[i].s, s, n) == 0)
            return &d->vals[i];
    return NULL;
}

struct value *vdict_get(const struct vdict *d, struct value k)
{
    if (k.type == V_STR)
        return vdict_get_str(d, k.s, k.n);
    for (uint32_t i = 0; i < d->n; i++)
        if (v_equal(d->keys[i], k))
            return &d->vals[i];
    return NULL;
}

int vdict_set(struct render *r, struct vdict *d, struct value k, struct value v)
{
    struct value *slot = vdict_get(d, k);
    if (slot) {
        *slot = v;
        return 0;
    }
    if (d->n == d->cap) {
        if (d->cap >= (1u << 26))
            return rerr(r, "dict too large");
        uint32_t cap = d->cap ? d->cap * 2 : 4;
        struct value *nk = ralloc(r, (size_t)cap * sizeof(*nk)), *nv = ralloc(r, (size_t)cap * sizeof(*nv));
        if (!nk || !nv)
            return -1;
        if (d->n) {
            memcpy(nk, d->keys, (size_t)d->n * sizeof(*nk));
            memcpy(nv, d->vals, (size_t)d->n * sizeof(*nv));
        }
        d->keys = nk;
        d->vals = nv;
        d->cap = cap;
    }
    d->keys[d->n] = k;
    d->vals[d->n++] = v;
    return 0;
}

/* ---- Python semantics */

bool v_is_number(struct value v) { return v.type == V_INT || v.type == V_FLOAT || v.type == V_BOOL; }

double v_as_double(struct value v)
{
    return v.type == V_FLOAT ? v.f : v.type == V_INT ? (double)v.i : v.type == V_BOOL ? (double)v.b : 0.0;
}

bool v_truthy(struct value v)
{
    switch (v.type) {
    case V_UNDEF: case V_NONE: return false;
    case V_BOOL: return v.b;
    case V_INT: return v.i != 0;
    case V_FLOAT: return v.f != 0.0;
    case V_STR: return v.n != 0;
    case V_LIST: return (v.flags & VF_GEN) || v.l->n != 0;
    case V_DICT: return v.d->n != 0;
    default: return true;
    }
}

bool v_equal(struct value a, struct value b)
{
    if (v_is_number(a) && v_is_number(b)) {
        if (a.type != V_FLOAT && b.type != V_FLOAT) {
            int64_t x = a.type == V_BOOL ? a.b : a.i, y = b.type == V_BOOL ? b.b : b.i;
            return x == y;
        }
        return v_as_double(a) == v_as_double(b);
    }
    if (a.type != b.type)
        return false;
    switch (a.type) {
    case V_UNDEF: case V_NONE: return true;
    case V_STR: return a.n == b.n && memcmp(a.s, b.s, a.n) == 0;
    case V_LIST:
        if ((a.flags | b.flags) & (VF_GEN | VF_VIEW))
            return a.l == b.l;
        if ((a.flags & VF_TUPLE) != (b.flags & VF_TUPLE) || a.l->n != b.l->n)
            return false;
        for (uint32_t i = 0; i < a.l->n; i++)
            if (!v_equal(a.l->v[i], b.l->v[i]))
                return false;
        return true;
    case V_DICT:
        if (a.d->n != b.d->n)
            return false;
        for (uint32_t i = 0; i < a.d->n; i++) {
            struct value *o = vdict_get(b.d, a.d->keys[i]);
            if (!o || !v_equal(a.d->vals[i], *o))
                return false;
        }
        return true;
    case V_NS: return a.d == b.d;
    case V_MACRO: return a.mac == b.mac;
    case V_FUNC: return a.n == b.n;
    default: return false;
    }
}

const char *v_type_name(struct value v)
{
    switch (v.type) {
    case V_UNDEF: return "Undefined";
    case V_NONE: return "NoneType";
    case V_BOOL: return "bool";
    case V_INT: return "int";
    case V_FLOAT: return "float";
    case V_STR: return "str";
    case V_LIST:
        if (v.flags & VF_VIEW)
            return v.n == 1 ? "dict_items" : v.n == 2 ? "dict_keys" : "dict_values";
        return v.flags & VF_GEN ? "generator" : v.flags & VF_TUPLE ? "tuple" : "list";
    case V_DICT: return "dict";
    case V_NS: return "Namespace";
    case V_MACRO: return "Macro";
    case V_LOOP: return "LoopContext";
    default: return "function";
    }
}

int v_compare(struct render *r, struct value a, struct value b, int *cmp)
{
    if (v_is_number(a) && v_is_number(b)) {
        if (a.type != V_FLOAT && b.type != V_FLOAT) {
            int64_t x = a.type == V_BOOL ? a.b : a.i, y = b.type == V_BOOL ? b.b : b.i;
            *cmp = x < y ? -1 : x > y;
        } else {
            double x = v_as_double(a), y = v_as_double(b);
            *cmp = x < y ? -1 : x > y;
        }
        return 0;
    }
    if (a.type == V_STR && b.type == V_STR) {
        size_t m = a.n < b.n ? a.n : b.n;
        int c = memcmp(a.s, b.s, m);
        *cmp = c < 0 ? -1 : c > 0 ? 1 : a.n < b.n ? -1 : a.n > b.n;
        return 0;
    }
    if (a.type == V_LIST && b.type == V_LIST && (a.flags & VF_TUPLE) == (b.flags & VF_TUPLE)) {
        uint32_t m = a.l->n < b.l->n ? a.l->n : b.l->n;
        for (uint32_t i = 0; i < m; i++) {
            if (v_equal(a.l->v[i], b.l->v[i]))
                continue;
            return v_compare(r, a.l->v[i], b.l->v[i], cmp);
        }
        *cmp = a.l->n < b.l->n ? -1 : a.l->n > b.l->n;
        return 0;
    }
    return rerr(r, "'<' not supported between instances of '%s' and '%s'", v_type_name(a), v_type_name(b));
}

/* ---- string builder */

static int sb_grow(struct render *r, struct sbuf *b, size_t add)
{
    if (b->n + add + 1 <= b->cap)
        return 0;
    if (add > r->lim->max_memory_bytes || b->n + add > UINT32_MAX - 2)
        return rerr(r, "string too long");
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->n + add + 1)
        cap *= 2;
    char *p = ralloc(r, cap);
    if (!p)
        return -1;
    if (b->n)
        memcpy(p, b->p, b->n);
    b->p = p;
    b->cap = cap;
    return 0;
}

int sb_put(struct render *r, struct sbuf *b, const char *s, size_t n)
{
    if (sb_grow(r, b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

int sb_putc(struct render *r, struct sbuf *b, char c) { return sb_put(r, b, &c, 1); }

int sb_printf(struct render *r, struct sbuf *b, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (k < 0)
        return rerr(r, "format error");
    return sb_put(r, b, buf, (size_t)k < sizeof(buf) ? (size_t)k : sizeof(buf) - 1);
}

/* ---- numbers as Python prints them */

/* repr(float): the shortest digits that round-trip; fixed notation for
 * exponents -4..15, scientific otherwise ("1e-05", "1e+16"). */
void fmt_py_float(double f, char *buf, size_t n)
{
    if (isnan(f)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, n, f < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    /* tmp: [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && nd < 20)
            digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    char *o = buf;
    size_t left = n;
#define EMIT(...) do { int _k = snprintf(o, left, __VA_ARGS__); if (_k < 0 || (size_t)_k >= left) return; o += _k; left -= (size_t)_k; } while (0)
    if (neg)
        EMIT("-");
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            EMIT("0.");
            for (int i = 0; i < -exp - 1; i++)
                EMIT("0");
            EMIT("%.*s", nd, digits);
        } else {
            for (int i = 0; i <= exp; i++)
                EMIT("%c", i < nd ? digits[i] : '0');
            EMIT(".");
            if (nd > exp + 1)
                EMIT("%.*s", nd - exp - 1, digits + exp + 1);
            else
                EMIT("0");
        }
    } else {
        EMIT("%c", digits[0]);
        if (nd > 1)
            EMIT(".%.*s", nd - 1, digits + 1);
        EMIT("e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
#undef EMIT
}

/* ---- UTF-8 */

uint32_t utf8_decode(const char *s, size_t n, size_t *adv)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80 || n < 2) {
        *adv = 1;
        return u[0];
    }
    int len = u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3 : u[0] >= 0xc0 ? 2 : 1;
    if ((size_t)len > n || len == 1) {
        *adv = 1;
        return u[0];
    }
    uint32_t cp = u[0] & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xc0) != 0x80) {
            *adv = 1;
            return u[0];
        }
        cp = (cp << 6) | (u[i] & 0x3f);
    }
    *adv = (size_t)len;
    return cp;
}

size_t utf8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n;) {
        size_t a;
        utf8_decode(s + i, n - i, &a);
        i += a;
        c++;
    }
    return c;
}

size_t utf8_offset(const char *s, size_t n, int64_t cp_index)
{
    size_t i = 0;
    for (int64_t k = 0; k < cp_index && i < n; k++) {
        size_t a;
        utf8_decode(s + i, n - i, &a);
        i += a;
    }
    return i;
}

bool py_isspace(uint32_t cp)
{
    return (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
           cp == 0x3000;
}

/* Characters Python's repr() escapes (non-printable), beyond ASCII controls. */
static bool py_unprintable(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200f) ||
           (cp >= 0x2028 && cp <= 0x202f) || (cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 || cp == 0xfeff ||
           (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0xfff9 && cp <= 0xfffb) || cp == 0x180e;
}

/* ---- str() and repr() */

static int repr_str(struct render *r, struct sbuf *b, const char *s, size_t n)
{
    bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char q = sq && !dq ? '"' : '\'';
    if (sb_putc(r, b, q) < 0)
        return -1;
    for (size_t i = 0; i < n;) {
        size_t a;
        uint32_t cp = utf8_decode(s + i, n - i, &a);
        if (cp == (uint32_t)q || cp == '\\') {
            if (sb_putc(r, b, '\\') < 0 || sb_putc(r, b, (char)cp) < 0)
                return -1;
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            if (sb_put(r, b, cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t", 2) < 0)
                return -1;
        } else if (py_unprintable(cp)) {
            if (cp < 0x100 ? sb_printf(r, b, "\\x%02x", cp) < 0 : sb_printf(r, b, "\\u%04x", cp) < 0)
                return -1;
        } else if (sb_put(r, b, s + i, a) < 0) {
            return -1;
        }
        i += a;
    }
    return sb_putc(r, b, q);
}

static int str_or_repr(struct render *r, struct sbuf *b, struct value v, bool repr)
{
    char num[48];
    switch (v.type) {
    case V_UNDEF: return repr ? sb_put(r, b, "Undefined", 9) : 0;
    case V_NONE: return sb_put(r, b, "None", 4);
    case V_BOOL: return v.b ? sb_put(r, b, "True", 4) : sb_put(r, b, "False", 5);
    case V_INT: return sb_printf(r, b, "%lld", (long long)v.i);
    case V_FLOAT: fmt_py_float(v.f, num, sizeof(num)); return sb_put(r, b, num, strlen(num));
    case V_STR:
        if (!repr)
            return sb_put(r, b, v.s, v.n);
        if (v.flags & VF_SAFE) /* Markup's repr */
            return sb_put(r, b, "Markup(", 7) < 0 || repr_str(r, b, v.s, v.n) < 0 ? -1 : sb_putc(r, b, ')');
        return repr_str(r, b, v.s, v.n);
    case V_LIST: {
        if (v.flags & VF_GEN) /* Python prints "<generator object ... at 0x...>": no stable text */
            return rerr(r, "cannot print an iterator (the result of map/select/reject/unique/reverse/batch); "
                           "add |list");
        if (v.flags & VF_VIEW) {
            const char *name = v.n == 1 ? "dict_items(" : v.n == 2 ? "dict_keys(" : "dict_values(";
            struct value plain = v;
            plain.flags = 0;
            if (sb_put(r, b, name, strlen(name)) < 0 || str_or_repr(r, b, plain, true) < 0)
                return -1;
            return sb_putc(r, b, ')');
        }
        bool tuple = v.flags & VF_TUPLE;
        if (sb_putc(r, b, tuple ? '(' : '[') < 0)
            return -1;
        for (uint32_t i = 0; i < v.l->n; i++) {
            if ((i && sb_put(r, b, ", ", 2) < 0) || str_or_repr(r, b, v.l->v[i], true) < 0)
                return -1;
        }
        if (tuple && v.l->n == 1 && sb_putc(r, b, ',') < 0)
            return -1;
        return sb_putc(r, b, tuple ? ')' : ']');
    }
    case V_DICT: case V_NS: {
        if (v.type == V_NS && sb_put(r, b, "<Namespace ", 11) < 0)
            return -1;
        if (sb_putc(r, b, '{') < 0)
            return -1;
        for (uint32_t i = 0; i < v.d->n; i++) {
            if ((i && sb_put(r, b, ", ", 2) < 0) || str_or_repr(r, b, v.d->keys[i], true) < 0 ||
                sb_put(r, b, ": ", 2) < 0 || str_or_repr(r, b, v.d->vals[i], true) < 0)
                return -1;
        }
        if (sb_putc(r, b, '}') < 0)
            return -1;
        return v.type == V_NS ? sb_putc(r, b, '>') : 0;
    }
    case V_MACRO:
        return sb_printf(r, b, "<Macro '%.*s'>", (int)v.mac->def->name_len, v.mac->def->name);
    case V_LOOP:
        return sb_printf(r, b, "<LoopContext %lld/%u>", (long long)v.loop->index0 + 1, v.loop->items->n);
    default: /* Python prints functions with their memory address: no stable text */
        return rerr(r, "cannot print a function or method object");
    }
}

int v_str_append(struct render *r, struct sbuf *b, struct value v) { return str_or_repr(r, b, v, false); }
int v_repr_append(struct render *r, struct sbuf *b, struct value v) { return str_or_repr(r, b, v, true); }

int v_to_str(struct render *r, struct value v, struct value *out)
{
    if (v.type == V_STR) {
        *out = v;
        return 0;
    }
    if (v.type == V_UNDEF) {
        *out = v_str("", 0);
        return 0;
    }
    struct sbuf b = {0};
    if (str_or_repr(r, &b, v, false) < 0)
        return -1;
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
}

/* ---- json.dumps */

static int json_str_ascii(struct render *r, struct sbuf *b, const char *s, size_t n)
{
    if (sb_putc(r, b, '"') < 0)
        return -1;
    for (size_t i = 0; i < n;) {
        size_t a;
        uint32_t cp = utf8_decode(s + i, n - i, &a);
        i += a;
        const char *e = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '\n' ? "\\n" : cp == '\r' ? "\\r"
                      : cp == '\t' ? "\\t" : cp == '\b' ? "\\b" : cp == '\f' ? "\\f" : NULL;
        int rc;
        if (e)
            rc = sb_put(r, b, e, 2);
        else if (cp >= 0x20 && cp < 0x7f)
            rc = sb_putc(r, b, (char)cp);
        else if (cp < 0x10000)
            rc = sb_printf(r, b, "\\u%04x", cp);
        else
            rc = sb_printf(r, b, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
        if (rc < 0)
            return -1;
    }
    return sb_putc(r, b, '"');
}

static int json_str(struct render *r, struct sbuf *b, const char *s, size_t n, bool ascii)
{
    if (ascii)
        return json_str_ascii(r, b, s, n);
    if (sb_putc(r, b, '"') < 0)
        return -1;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (sb_put(r, b, s + start, i - start) < 0)
            return -1;
        start = i + 1;
        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                      : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (e ? sb_put(r, b, e, 2) < 0 : sb_printf(r, b, "\\u%04x", c) < 0)
            return -1;
    }
    if (sb_put(r, b, s + start, n - start) < 0)
        return -1;
    return sb_putc(r, b, '"');
}

static int json_newline(struct render *r, struct sbuf *b, const char *indent, size_t il, int level)
{
    if (sb_putc(r, b, '\n') < 0)
        return -1;
    for (int i = 0; i < level; i++)
        if (sb_put(r, b, indent, il) < 0)
            return -1;
    return 0;
}

static int json_scalar(struct render *r, struct sbuf *b, struct value v, bool ascii)
{
    char num[48];
    switch (v.type) {
    case V_NONE: return sb_put(r, b, "null", 4);
    case V_BOOL: return v.b ? sb_put(r, b, "true", 4) : sb_put(r, b, "false", 5);
    case V_INT: return sb_printf(r, b, "%lld", (long long)v.i);
    case V_FLOAT:
        if (isnan(v.f))
            return sb_put(r, b, "NaN", 3);
        if (isinf(v.f))
            return v.f < 0 ? sb_put(r, b, "-Infinity", 9) : sb_put(r, b, "Infinity", 8);
        fmt_py_float(v.f, num, sizeof(num));
        return sb_put(r, b, num, strlen(num));
    case V_STR: return json_str(r, b, v.s, v.n, ascii);
    default: return rerr(r, "Object of type %s is not JSON serializable", v_type_name(v));
    }
}

int v_tojson(struct render *r, struct sbuf *b, struct value v, const struct json_opts *o, int level)
{
    const char *indent = o->indent, *item_sep = o->item_sep, *key_sep = o->key_sep;
    size_t indent_len = o->indent_len;
    if (level > r->lim->max_depth)
        return rerr(r, "tojson: nesting deeper than %d", r->lim->max_depth);
    if (v.type == V_LIST && (v.flags & (VF_GEN | VF_VIEW)))
        return rerr(r, "Object of type %s is not JSON serializable", v_type_name(v));
    if (v.type == V_LIST || v.type == V_DICT) {
        bool dict = v.type == V_DICT;
        uint32_t n = dict ? v.d->n : v.l->n;
        if (sb_putc(r, b, dict ? '{' : '[') < 0)
            return -1;
        if (n == 0)
            return sb_putc(r, b, dict ? '}' : ']');
        uint32_t *order = NULL; /* sort_keys: dict positions in key order (keys must all be strings) */
        if (dict && o->sort_keys) {
            if (!(order = ralloc(r, (size_t)n * sizeof(*order))))
                return -1;
            for (uint32_t i = 0; i < n; i++) {
                if (v.d->keys[i].type != V_STR)
                    return rerr(r, "tojson(sort_keys=True) needs string keys");
                uint32_t j = i; /* insertion sort: dicts in templates are small */
                while (j > 0) {
                    int c;
                    if (v_compare(r, v.d->keys[order[j - 1]], v.d->keys[i], &c) < 0)
                        return -1;
                    if (c <= 0)
                        break;
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = i;
            }
        }
        for (uint32_t idx = 0; idx < n; idx++) {
            uint32_t i = order ? order[idx] : idx;
            if (idx && sb_put(r, b, item_sep, strlen(item_sep)) < 0)
                return -1;
            if (indent && json_newline(r, b, indent, indent_len, level + 1) < 0)
                return -1;
            if (dict) {
                struct value k = v.d->keys[i];
                if (k.type == V_STR) {
                    if (json_str(r, b, k.s, k.n, o->ascii) < 0)
                        return -1;
                } else if (k.type == V_NONE || k.type == V_BOOL || k.type == V_INT || k.type == V_FLOAT) {
                    if (sb_putc(r, b, '"') < 0 || json_scalar(r, b, k, o->ascii) < 0 || sb_putc(r, b, '"') < 0)
                        return -1;
                } else {
                    return rerr(r, "keys must be str, int, float, bool or None, not %s", v_type_name(k));
                }
                if (sb_put(r, b, key_sep, strlen(key_sep)) < 0)
                    return -1;
            }
            if (v_tojson(r, b, dict ? v.d->vals[i] : v.l->v[i], o, level + 1) < 0)
                return -1;
        }
        if (indent && json_newline(r, b, indent, indent_len, level) < 0)
            return -1;
        return sb_putc(r, b, dict ? '}' : ']');
    }
    return json_scalar(r, b, v, o->ascii);
}

/* ---- the jansson context */

int v_from_json(struct render *r, const json_t *j, struct value *out, int depth)
{
    if (depth > 1000)
        return rerr(r, "context nested too deeply");
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        if (json_object_size(j) > (1u << 26))
            return rerr(r, "context object too large");
        struct vdict *d = vdict_new(r, (uint32_t)json_object_size(j));
        if (!d)
            return -1;
        const char *k;
        json_t *jv;
        json_object_foreach((json_t *)j, k, jv) {
            struct value kv = v_str(k, strlen(k)), vv;
            if (v_from_json(r, jv, &vv, depth + 1) < 0)
                return -1;
            /* jansson keeps keys unique and in insertion order */
            d->keys[d->n] = kv;
            d->vals[d->n++] = vv;
        }
        *out = v_dict(d);
        return 0;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        if (n > (1u << 26))
            return rerr(r, "context array of %zu items is too large", n);
        struct vlist *l = vlist_new(r, (uint32_t)n);
        if (!l)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (v_from_json(r, json_array_get(j, i), &l->v[l->n++], depth + 1) < 0)
                return -1;
        *out = v_list(l);
        return 0;
    }
    case JSON_STRING:
        if (json_string_length(j) > UINT32_MAX - 1)
            return rerr(r, "context string too long");
        *out = v_str(json_string_value(j), json_string_length(j));
        return 0;
    case JSON_INTEGER: *out = v_int((int64_t)json_integer_value(j)); return 0;
    case JSON_REAL: *out = v_float(json_real_value(j)); return 0;
    case JSON_TRUE: *out = v_bool(true); return 0;
    case JSON_FALSE: *out = v_bool(false); return 0;
    default: *out = v_none(); return 0;
    }
}
