/* template/expr.c — expression evaluation: names, attribute and item access
 * (jinja2's sandboxed getattr/getitem: dict keys, then Python methods; mutating
 * methods are "unsafe"), slicing by code point, iteration, Python operators
 * (int/float arithmetic with floor division and modulo signs as in Python,
 * str/list concatenation and repetition, Markup escaping on `+`, comparison
 * chains, `in`), calls of macros, methods and globals, filters and tests.
 * Statements, scopes and the public API are in interp.c.
 */
#include "template/tpl_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- attribute and item access (jinja2's sandboxed getattr / getitem) */


static struct value undef_attr(struct render *r, struct value obj, const char *name, size_t n)
{
    char *hint = ralloc(r, n + 64);
    if (hint)
        snprintf(hint, n + 64, "%s object' has no attribute '%.*s", v_type_name(obj), (int)n, name);
    return v_undef(hint);
}

static int loop_attr(struct render *r, struct loopstate *ls, const char *name, size_t n, struct value *out)
{
#define IS(s) (n == sizeof(s) - 1 && memcmp(name, s, n) == 0)
    int64_t len = ls->items->n, i = ls->index0;
    if (IS("index0")) *out = v_int(i);
    else if (IS("index")) *out = v_int(i + 1);
    else if (IS("revindex")) *out = v_int(len - i);
    else if (IS("revindex0")) *out = v_int(len - i - 1);
    else if (IS("first")) *out = v_bool(i == 0);
    else if (IS("last")) *out = v_bool(i == len - 1);
    else if (IS("length")) *out = v_int(len);
    else if (IS("depth")) *out = v_int(ls->depth);
    else if (IS("depth0")) *out = v_int(ls->depth - 1);
    else if (IS("previtem")) *out = i > 0 ? ls->items->v[i - 1] : v_undef("there is no previous item");
    else if (IS("nextitem")) *out = i + 1 < len ? ls->items->v[i + 1] : v_undef("there is no next item");
    else if (IS("cycle")) {
        struct method *m = ralloc(r, sizeof(*m));
        if (!m)
            return -1;
        m->self.type = V_LOOP;
        m->self.loop = ls;
        m->id = -1; /* loop.cycle */
        out->type = V_METHOD;
        out->m = m;
    } else {
        struct value lv = {.type = V_LOOP};
        lv.loop = ls;
        *out = undef_attr(r, lv, name, n);
    }
    return r->failed ? -1 : 0;
#undef IS
}

int interp_getattr(struct render *r, struct value obj, const char *name, size_t n, struct value *out)
{
    if (obj.type == V_UNDEF)
        return interp_undefined_error(r, obj);
    if (obj.type == V_LOOP)
        return loop_attr(r, obj.loop, name, n, out);
    if (obj.type == V_NS) {
        struct value *v = vdict_get_str(obj.d, name, n);
        *out = v ? *v : undef_attr(r, obj, name, n);
        return r->failed ? -1 : 0;
    }
    int id;
    bool unsafe;
    if (method_lookup(obj, name, n, &id, &unsafe) == 0) {
        if (unsafe) {
            char *hint = ralloc(r, n + 1);
            if (!hint)
                return -1;
            memcpy(hint, name, n);
            *out = v_undef(hint);
            out->flags = VF_UNSAFE;
            return 0;
        }
        struct method *m = ralloc(r, sizeof(*m));
        if (!m)
            return -1;
        m->self = obj;
        m->id = id;
        out->type = V_METHOD;
        out->flags = 0;
        out->m = m;
        return 0;
    }
    if (obj.type == V_DICT) {
        struct value *v = vdict_get_str(obj.d, name, n);
        if (v) {
            *out = *v;
            return 0;
        }
    }
    *out = undef_attr(r, obj, name, n);
    return r->failed ? -1 : 0;
}

int interp_getitem(struct render *r, struct value obj, struct value key, struct value *out)
{
    if (obj.type == V_UNDEF)
        return interp_undefined_error(r, obj);
    if (obj.type == V_DICT) {
        struct value *v = vdict_get(obj.d, key);
        if (v) {
            *out = *v;
            return 0;
        }
    } else if (((obj.type == V_LIST && !(obj.flags & (VF_GEN | VF_VIEW))) || obj.type == V_STR) &&
               (key.type == V_INT || key.type == V_BOOL)) {
        int64_t i = key.type == V_BOOL ? key.b : key.i;
        if (obj.type == V_LIST) {
            if (i < 0)
                i += obj.l->n;
            if (i >= 0 && i < (int64_t)obj.l->n) {
                *out = obj.l->v[i];
                return 0;
            }
        } else {
            int64_t len = (int64_t)utf8_count(obj.s, obj.n);
            if (i < 0)
                i += len;
            if (i >= 0 && i < len) {
                size_t off = utf8_offset(obj.s, obj.n, i), adv;
                utf8_decode(obj.s + off, obj.n - off, &adv);
                *out = v_str(obj.s + off, adv);
                return 0;
            }
        }
    }
    if (key.type == V_STR && obj.type != V_LIST)
        return interp_getattr(r, obj, key.s, key.n, out);
    char *hint = ralloc(r, 64);
    if (hint)
        snprintf(hint, 64, "%s object' has no such item", v_type_name(obj));
    *out = v_undef(hint);
    return r->failed ? -1 : 0;
}

static int slice_index(struct render *r, struct value v, int64_t len, int64_t step, bool start, int64_t *out)
{
    if (v.type == V_UNDEF || v.type == V_NONE) {
        *out = step > 0 ? (start ? 0 : len) : (start ? len - 1 : -1);
        return 0;
    }
    if (v.type != V_INT && v.type != V_BOOL)
        return rerr(r, "slice indices must be integers or None");
    int64_t i = v.type == V_BOOL ? v.b : v.i;
    if (i < 0) {
        i += len;
        if (i < 0)
            i = step > 0 ? 0 : -1;
    } else if (i >= len) {
        i = step > 0 ? len : len - 1;
    }
    *out = i;
    return 0;
}

static int eval_slice(struct render *r, const struct node *e, struct value *out)
{
    struct value obj, a = v_none(), b = v_none(), c = v_none();
    if (interp_eval(r, e->a, &obj) < 0 || (e->b && interp_eval(r, e->b, &a) < 0) ||
        (e->c && interp_eval(r, e->c, &b) < 0) || (e->body.n && interp_eval(r, e->body.v[0], &c) < 0))
        return -1;
    int64_t stepv = 1;
    if (c.type == V_INT)
        stepv = c.i;
    else if (c.type != V_NONE && c.type != V_UNDEF)
        return rerr(r, "slice step must be an integer");
    if (stepv == 0)
        return rerr(r, "slice step cannot be zero");
    if (obj.type == V_UNDEF)
        return interp_undefined_error(r, obj);
    bool is_str = obj.type == V_STR;
    if (!is_str && (obj.type != V_LIST || (obj.flags & (VF_GEN | VF_VIEW)))) /* jinja2 slices directly */
        return rerr(r, "'%s' object is not subscriptable", v_type_name(obj));
    /* strings: work on code point offsets */
    int64_t len = is_str ? (int64_t)utf8_count(obj.s, obj.n) : obj.l->n;
    int64_t lo = 0, hi = 0;
    if (slice_index(r, a, len, stepv, true, &lo) < 0 || slice_index(r, b, len, stepv, false, &hi) < 0)
        return -1;
    if (is_str && stepv == 1) {
        size_t x = utf8_offset(obj.s, obj.n, lo), y = hi > lo ? utf8_offset(obj.s, obj.n, hi) : x;
        *out = v_str(obj.s + x, y - x);
        return 0;
    }
    struct vlist *src = NULL;
    if (is_str && interp_iterate(r, obj, &src) < 0)
        return -1;
    if (!is_str)
        src = obj.l;
    struct vlist *l = vlist_new(r, 0);
    struct sbuf sb = {0};
    if (!l)
        return -1;
    for (int64_t i = lo; stepv > 0 ? i < hi : i > hi; i += stepv) {
        if (is_str ? sb_put(r, &sb, src->v[i].s, src->v[i].n) < 0 : vlist_push(r, l, src->v[i]) < 0)
            return -1;
    }
    if (is_str)
        *out = v_str(sb.p ? sb.p : "", sb.n);
    else {
        *out = v_list(l);
        out->flags = obj.flags & VF_TUPLE;
    }
    return 0;
}

int interp_iterate(struct render *r, struct value v, struct vlist **out)
{
    switch (v.type) {
    case V_LIST:
        if (v.flags & VF_GEN) {
            if (v.l->consumed)
                return (*out = vlist_new(r, 0)) ? 0 : -1;
            v.l->consumed = true;
        }
        *out = v.l;
        return 0;
    case V_UNDEF: return (*out = vlist_new(r, 0)) ? 0 : -1;
    case V_DICT: {
        struct vlist *l = vlist_new(r, v.d->n);
        if (!l)
            return -1;
        for (uint32_t i = 0; i < v.d->n; i++)
            l->v[l->n++] = v.d->keys[i];
        *out = l;
        return 0;
    }
    case V_STR: {
        struct vlist *l = vlist_new(r, v.n);
        if (!l)
            return -1;
        for (size_t i = 0; i < v.n;) {
            size_t a;
            utf8_decode(v.s + i, v.n - i, &a);
            l->v[l->n++] = v_str(v.s + i, a);
            i += a;
        }
        *out = l;
        return 0;
    }
    default: return rerr(r, "'%s' object is not iterable", v_type_name(v));
    }
}

/* ---- operators */

static int arith_int(struct render *r, int op, int64_t x, int64_t y, struct value *out)
{
    int64_t z;
    switch (op) {
    case OP_ADD: if (__builtin_add_overflow(x, y, &z)) goto ovf; break;
    case OP_SUB: if (__builtin_sub_overflow(x, y, &z)) goto ovf; break;
    case OP_MUL: if (__builtin_mul_overflow(x, y, &z)) goto ovf; break;
    case OP_DIV:
        if (!y)
            return rerr(r, "division by zero");
        *out = v_float((double)x / (double)y);
        return 0;
    case OP_FLOORDIV: case OP_MOD:
        if (!y)
            return rerr(r, "integer division or modulo by zero");
        if (x == INT64_MIN && y == -1)
            goto ovf;
        z = op == OP_FLOORDIV ? x / y : x % y;
        if (op == OP_FLOORDIV && (x % y) && ((x < 0) != (y < 0)))
            z--;
        if (op == OP_MOD && z && ((z < 0) != (y < 0)))
            z += y;
        break;
    case OP_POW:
        if (y < 0) {
            *out = v_float(pow((double)x, (double)y));
            return 0;
        }
        /* 0, 1 and -1 to any power without a loop (the count may be huge; -1's sign follows y's parity); any
         * other base overflows within 63 multiplications */
        if (x == 0 || x == 1)
            z = y == 0 ? 1 : x;
        else if (x == -1)
            z = y % 2 ? -1 : 1;
        else
            for (z = 1; y > 0; y--)
                if (__builtin_mul_overflow(z, x, &z))
                    goto ovf;
        break;
    default: return rerr(r, "bad operator");
    }
    *out = v_int(z);
    return 0;
ovf:
    return rerr(r, "integer overflow");
}

static int repeat_value(struct render *r, struct value seq, int64_t times, struct value *out)
{
    /* an empty sequence repeated is empty however large the count: no loop over it (a count of 81 ** 5 once spun
     * for billions of steps) */
    if (times < 0 || (seq.type == V_STR ? seq.n == 0 : seq.l->n == 0))
        times = 0;
    if (seq.type == V_STR) {
        if (times && (uint64_t)seq.n * (uint64_t)times > r->lim->max_output_bytes)
            return rerr(r, "string repetition too large");
        struct sbuf b = {0};
        for (int64_t i = 0; i < times; i++)
            if (sb_put(r, &b, seq.s, seq.n) < 0)
                return -1;
        *out = v_str(b.p ? b.p : "", b.n);
        return 0;
    }
    if (times && (uint64_t)seq.l->n * (uint64_t)times > (1u << 24))
        return rerr(r, "list repetition too large");
    struct vlist *l = vlist_new(r, 0);
    if (!l)
        return -1;
    for (int64_t i = 0; i < times; i++)
        for (uint32_t k = 0; k < seq.l->n; k++)
            if (vlist_push(r, l, seq.l->v[k]) < 0)
                return -1;
    *out = v_list(l);
    out->flags = seq.flags & VF_TUPLE;
    return 0;
}

static const char *const BINOP_SYM[] = {"+", "-", "*", "/", "//", "%", "**", "~"};

static int binop(struct render *r, int op, struct value a, struct value b, struct value *out)
{
    if (op == OP_CONCAT) {
        struct sbuf sb = {0};
        if (v_str_append(r, &sb, a) < 0 || v_str_append(r, &sb, b) < 0)
            return -1;
        *out = v_str(sb.p ? sb.p : "", sb.n);
        return 0;
    }
    if (op == OP_MOD && a.type == V_STR) /* printf-style; an undefined argument prints as "" */
        return str_percent_format(r, a, b, out);
    if (a.type == V_UNDEF)
        return interp_undefined_error(r, a);
    if (b.type == V_UNDEF)
        return interp_undefined_error(r, b);
    if (v_is_number(a) && v_is_number(b)) {
        if (a.type != V_FLOAT && b.type != V_FLOAT)
            return arith_int(r, op, a.type == V_BOOL ? a.b : a.i, b.type == V_BOOL ? b.b : b.i, out);
        double x = v_as_double(a), y = v_as_double(b);
        switch (op) {
        case OP_ADD: *out = v_float(x + y); return 0;
        case OP_SUB: *out = v_float(x - y); return 0;
        case OP_MUL: *out = v_float(x * y); return 0;
        case OP_POW: *out = v_float(pow(x, y)); return 0;
        case OP_DIV: case OP_FLOORDIV: case OP_MOD:
            if (y == 0.0)
                return rerr(r, "float division by zero");
            if (op == OP_DIV) {
                *out = v_float(x / y);
                return 0;
            }
            /* Python's float divmod: floor division from the fmod remainder */
            double m = fmod(x, y), div = (x - m) / y;
            if (m != 0.0 && ((y < 0) != (m < 0))) {
                m += y;
                div -= 1.0;
            }
            if (div != 0.0) {
                double fl = floor(div);
                if (div - fl > 0.5)
                    fl += 1.0;
                div = fl;
            } else {
                div = copysign(0.0, x / y);
            }
            if (m == 0.0)
                m = copysign(0.0, y);
            *out = v_float(op == OP_FLOORDIV ? div : m);
            return 0;
        }
    }
    if (op == OP_ADD && a.type == V_STR && b.type == V_STR) {
        /* Markup + str and str + Markup escape the plain side and stay Markup */
        bool safe = (a.flags | b.flags) & VF_SAFE;
        if (safe && !(a.flags & VF_SAFE) && str_html_escape(r, a, &a) < 0)
            return -1;
        if (safe && !(b.flags & VF_SAFE) && str_html_escape(r, b, &b) < 0)
            return -1;
        struct sbuf sb = {0};
        if (sb_put(r, &sb, a.s, a.n) < 0 || sb_put(r, &sb, b.s, b.n) < 0)
            return -1;
        *out = v_str(sb.p ? sb.p : "", sb.n);
        out->flags = safe ? VF_SAFE : 0;
        return 0;
    }
    if (op == OP_ADD && a.type == V_LIST && b.type == V_LIST && (a.flags & VF_TUPLE) == (b.flags & VF_TUPLE) &&
        !((a.flags | b.flags) & (VF_GEN | VF_VIEW))) {
        struct vlist *l = vlist_new(r, a.l->n + b.l->n);
        if (!l)
            return -1;
        for (uint32_t i = 0; i < a.l->n; i++)
            l->v[l->n++] = a.l->v[i];
        for (uint32_t i = 0; i < b.l->n; i++)
            l->v[l->n++] = b.l->v[i];
        *out = v_list(l);
        out->flags = a.flags & VF_TUPLE;
        return 0;
    }
    bool a_seq = a.type == V_STR || (a.type == V_LIST && !(a.flags & (VF_GEN | VF_VIEW)));
    bool b_seq = b.type == V_STR || (b.type == V_LIST && !(b.flags & (VF_GEN | VF_VIEW)));
    if (op == OP_MUL && a_seq && (b.type == V_INT || b.type == V_BOOL))
        return repeat_value(r, a, b.type == V_BOOL ? b.b : b.i, out);
    if (op == OP_MUL && b_seq && (a.type == V_INT || a.type == V_BOOL))
        return repeat_value(r, b, a.type == V_BOOL ? a.b : a.i, out);
    return rerr(r, "unsupported operand type(s) for %s: '%s' and '%s'", BINOP_SYM[op], v_type_name(a),
                v_type_name(b));
}

static int contains(struct render *r, struct value item, struct value seq, bool *out)
{
    switch (seq.type) {
    case V_STR:
        if (item.type != V_STR)
            return rerr(r, "'in <string>' requires string as left operand, not %s", v_type_name(item));
        *out = item.n == 0 || memmem(seq.s, seq.n, item.s, item.n) != NULL;
        return 0;
    case V_LIST: {
        struct vlist *l;
        if (interp_iterate(r, seq, &l) < 0)
            return -1;
        *out = false;
        for (uint32_t i = 0; i < l->n && !*out; i++)
            *out = v_equal(l->v[i], item);
        return 0;
    }
    case V_DICT:
        if ((item.type == V_LIST && !(item.flags & VF_TUPLE)) || item.type == V_DICT)
            return rerr(r, "unhashable type: '%s'", v_type_name(item));
        *out = vdict_get(seq.d, item) != NULL;
        return 0;
    case V_UNDEF: *out = false; return 0;
    default: return rerr(r, "argument of type '%s' is not iterable", v_type_name(seq));
    }
}

static int compare(struct render *r, int op, struct value a, struct value b, bool *out)
{
    int c;
    switch (op) {
    case CMP_EQ: *out = v_equal(a, b); return 0;
    case CMP_NE: *out = !v_equal(a, b); return 0;
    case CMP_IN: return contains(r, a, b, out);
    case CMP_NOTIN:
        if (contains(r, a, b, out) < 0)
            return -1;
        *out = !*out;
        return 0;
    default:
        if (a.type == V_UNDEF)
            return interp_undefined_error(r, a);
        if (b.type == V_UNDEF)
            return interp_undefined_error(r, b);
        if (v_compare(r, a, b, &c) < 0)
            return -1;
        *out = op == CMP_LT ? c < 0 : op == CMP_LE ? c <= 0 : op == CMP_GT ? c > 0 : c >= 0;
        return 0;
    }
}

int interp_call(struct render *r, struct value fn, struct value *args, int nargs, const char **kwn,
                const uint32_t *kwl, struct value *kwv, int nkw, struct value *out)
{
    switch (fn.type) {
    case V_MACRO: return interp_call_macro(r, fn.mac, args, nargs, kwn, kwl, kwv, nkw, out);
    case V_METHOD: return method_call(r, fn.m, args, nargs, kwn, kwl, kwv, nkw, out);
    case V_FUNC: return builtin_call(r, (int)fn.n, v_none(), args, nargs, kwn, kwl, kwv, nkw, out);
    case V_UNDEF:
        if (fn.flags & VF_UNSAFE)
            return interp_undefined_error(r, fn);
        return rerr(r, "'%s' is undefined (called as a function)", fn.s ? fn.s : "value");
    default: return rerr(r, "'%s' object is not callable", v_type_name(fn));
    }
}

/* Evaluate call arguments: positional e->body, keyword names e->names with e->alt. */
static int eval_args(struct render *r, const struct node *e, struct value **args, struct value **kwv)
{
    *args = ralloc(r, ((size_t)e->body.n + 1) * sizeof(struct value));
    *kwv = ralloc(r, ((size_t)e->alt.n + 1) * sizeof(struct value));
    if (!*args || !*kwv)
        return -1;
    for (int i = 0; i < e->body.n; i++)
        if (interp_eval(r, e->body.v[i], &(*args)[i]) < 0)
            return -1;
    for (int i = 0; i < e->alt.n; i++)
        if (interp_eval(r, e->alt.v[i], &(*kwv)[i]) < 0)
            return -1;
    return 0;
}

/* ---- expressions */

static int eval_inner(struct render *r, const struct node *e, struct value *out)
{
    struct value a, b;
    switch (e->kind) {
    case E_CONST: *out = e->cval; return 0;
    case E_NAME: *out = interp_lookup(r, e->name, e->name_len); return r->failed ? -1 : 0;
    case E_ATTR:
        if (interp_eval(r, e->a, &a) < 0)
            return -1;
        r->line = e->line;
        return interp_getattr(r, a, e->name, e->name_len, out);
    case E_ITEM:
        if (interp_eval(r, e->a, &a) < 0 || interp_eval(r, e->b, &b) < 0)
            return -1;
        r->line = e->line;
        return interp_getitem(r, a, b, out);
    case E_SLICE: return eval_slice(r, e, out);
    case E_CALL: {
        struct value *args, *kwv;
        if (interp_eval(r, e->a, &a) < 0 || eval_args(r, e, &args, &kwv) < 0)
            return -1;
        r->line = e->line;
        return interp_call(r, a, args, e->body.n, e->names, e->name_lens, kwv, e->nnames, out);
    }
    case E_FILTER: case E_TEST: {
        struct value *args, *kwv;
        if (e->a ? interp_eval(r, e->a, &a) < 0 : (a = r->block_value, false))
            return -1;
        if (eval_args(r, e, &args, &kwv) < 0)
            return -1;
        r->line = e->line;
        if (e->fid < 0)
            return rerr(r, "no %s named '%.*s'", e->kind == E_FILTER ? "filter" : "test", (int)e->name_len,
                        e->name);
        if (e->kind == E_FILTER)
            return filter_apply(r, e->fid, a, args, e->body.n, e->names, e->name_lens, kwv, e->nnames, out);
        if (e->nnames)
            return rerr(r, "tests take no keyword arguments");
        bool t;
        if (test_apply(r, e->fid, a, args, e->body.n, &t) < 0)
            return -1;
        *out = v_bool(e->op ? !t : t);
        return 0;
    }
    case E_NEG: case E_POS:
        if (interp_eval(r, e->a, &a) < 0)
            return -1;
        if (!v_is_number(a))
            return a.type == V_UNDEF ? interp_undefined_error(r, a)
                                     : rerr(r, "bad operand type for unary %s: '%s'", e->kind == E_NEG ? "-" : "+",
                                            v_type_name(a));
        if (e->kind == E_POS)
            *out = a.type == V_BOOL ? v_int(a.b) : a;
        else if (a.type == V_FLOAT)
            *out = v_float(-a.f);
        else
            return arith_int(r, OP_SUB, 0, a.type == V_BOOL ? a.b : a.i, out);
        return 0;
    case E_NOT:
        if (interp_eval(r, e->a, &a) < 0)
            return -1;
        *out = v_bool(!v_truthy(a));
        return 0;
    case E_AND: case E_OR:
        if (interp_eval(r, e->a, &a) < 0)
            return -1;
        if (v_truthy(a) == (e->kind == E_OR)) {
            *out = a;
            return 0;
        }
        return interp_eval(r, e->b, out);
    case E_BIN:
        if (interp_eval(r, e->a, &a) < 0 || interp_eval(r, e->b, &b) < 0)
            return -1;
        r->line = e->line;
        return binop(r, e->op, a, b, out);
    case E_COMPARE: {
        if (interp_eval(r, e->a, &a) < 0)
            return -1;
        for (int i = 0; i < e->body.n; i++) {
            bool t;
            if (interp_eval(r, e->body.v[i], &b) < 0 || compare(r, e->cmp_ops[i], a, b, &t) < 0)
                return -1;
            if (!t) {
                *out = v_bool(false);
                return 0;
            }
            a = b;
        }
        *out = v_bool(true);
        return 0;
    }
    case E_COND:
        if (interp_eval(r, e->a, &a) < 0)
            return -1;
        if (v_truthy(a))
            return interp_eval(r, e->b, out);
        if (e->c)
            return interp_eval(r, e->c, out);
        *out = v_undef("the inline if-expression evaluated to false and no else section was defined");
        return 0;
    case E_LIST: case E_TUPLE: {
        struct vlist *l = vlist_new(r, (uint32_t)e->body.n);
        if (!l)
            return -1;
        for (int i = 0; i < e->body.n; i++)
            if (interp_eval(r, e->body.v[i], &l->v[l->n++]) < 0)
                return -1;
        *out = v_list(l);
        out->flags = e->kind == E_TUPLE ? VF_TUPLE : 0;
        return 0;
    }
    case E_DICT: {
        struct vdict *d = vdict_new(r, (uint32_t)e->body.n);
        if (!d)
            return -1;
        for (int i = 0; i < e->body.n; i++) {
            if (interp_eval(r, e->body.v[i], &a) < 0 || interp_eval(r, e->alt.v[i], &b) < 0 ||
                vdict_set(r, d, a, b) < 0)
                return -1;
        }
        *out = v_dict(d);
        return 0;
    }
    default: return rerr(r, "internal error: node %d is not an expression", e->kind);
    }
}

int interp_eval(struct render *r, const struct node *e, struct value *out)
{
    if (interp_step(r, e->line) < 0)
        return -1;
    if (++r->nest > INTERP_MAX_NEST) {
        r->nest--;
        return rerr(r, "expression nesting limit exceeded");
    }
    int rc = eval_inner(r, e, out);
    r->nest--;
    if (rc == 0 && r->failed)
        rc = -1;
    return rc;
}

