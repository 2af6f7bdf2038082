/* template/methods.c — Python methods that templates call on values
 * ("x".startswith(...), d.items(), d.get(k), s.split(), '{}'.format(x), ...),
 * and the globals: range, namespace, dict, raise_exception, strftime_now.
 *
 * The sandbox rules follow jinja2's ImmutableSandboxedEnvironment: methods that
 * change a list or dict (append, pop, update, ...) are looked up as "unsafe" and
 * fail when called, as they do under transformers.
 *
 * Strings are UTF-8; positions returned to templates (find, index) count code
 * points like Python. The string algorithms themselves are in pystr.c.
 */
#include "template/tpl_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum method_id {
    M_STARTSWITH, M_ENDSWITH, M_SPLIT, M_RSPLIT, M_STRIP, M_LSTRIP, M_RSTRIP, M_LOWER, M_UPPER, M_TITLE,
    M_CAPITALIZE, M_REPLACE, M_FIND, M_RFIND, M_COUNT, M_JOIN, M_FORMAT, M_SPLITLINES, M_ISDIGIT, M_ISALPHA,
    M_ISALNUM, M_ISSPACE, M_ISLOWER, M_ISUPPER,
    M_ITEMS, M_KEYS, M_VALUES, M_GET, M_COPY,
    M_INDEX, M_LCOUNT,
};

struct mdef {
    const char *name;
    int id;
    bool unsafe;
};

static const struct mdef STR_METHODS[] = {
    {"startswith", M_STARTSWITH, 0}, {"endswith", M_ENDSWITH, 0}, {"split", M_SPLIT, 0}, {"rsplit", M_RSPLIT, 0},
    {"strip", M_STRIP, 0}, {"lstrip", M_LSTRIP, 0}, {"rstrip", M_RSTRIP, 0}, {"lower", M_LOWER, 0},
    {"upper", M_UPPER, 0}, {"title", M_TITLE, 0}, {"capitalize", M_CAPITALIZE, 0}, {"replace", M_REPLACE, 0},
    {"find", M_FIND, 0}, {"rfind", M_RFIND, 0}, {"count", M_COUNT, 0}, {"join", M_JOIN, 0},
    {"format", M_FORMAT, 0}, {"splitlines", M_SPLITLINES, 0}, {"isdigit", M_ISDIGIT, 0},
    {"isalpha", M_ISALPHA, 0}, {"isalnum", M_ISALNUM, 0}, {"isspace", M_ISSPACE, 0}, {"islower", M_ISLOWER, 0},
    {"isupper", M_ISUPPER, 0}, {NULL, 0, 0},
};
static const struct mdef DICT_METHODS[] = {
    {"items", M_ITEMS, 0}, {"keys", M_KEYS, 0}, {"values", M_VALUES, 0}, {"get", M_GET, 0}, {"copy", M_COPY, 0},
    {"pop", -1, 1}, {"popitem", -1, 1}, {"setdefault", -1, 1}, {"update", -1, 1}, {"clear", -1, 1},
    {"fromkeys", -1, 1}, {NULL, 0, 0},
};
static const struct mdef LIST_METHODS[] = {
    {"index", M_INDEX, 0}, {"count", M_LCOUNT, 0}, {"copy", M_COPY, 0},
    {"append", -1, 1}, {"extend", -1, 1}, {"insert", -1, 1}, {"pop", -1, 1}, {"remove", -1, 1},
    {"reverse", -1, 1}, {"sort", -1, 1}, {"clear", -1, 1}, {NULL, 0, 0},
};

int method_lookup(struct value self, const char *name, size_t n, int *id, bool *unsafe)
{
    const struct mdef *t = self.type == V_STR ? STR_METHODS : self.type == V_DICT ? DICT_METHODS
                         : self.type == V_LIST ? LIST_METHODS : NULL;
    if (!t)
        return -1;
    if (self.type == V_LIST && (self.flags & VF_TUPLE))
        t = LIST_METHODS; /* tuples: index/count only; mutators are not there at all, but fail the same way */
    for (; t->name; t++)
        if (strlen(t->name) == n && memcmp(t->name, name, n) == 0) {
            *id = t->id;
            *unsafe = t->unsafe;
            return 0;
        }
    return -1;
}

static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

static int nargs_check(struct render *r, const char *name, int nargs, int lo, int hi, int nkw)
{
    if (nkw)
        return rerr(r, "%s() takes no keyword arguments", name);
    if (nargs < lo || nargs > hi)
        return rerr(r, "%s() takes %d to %d arguments (%d given)", name, lo, hi, nargs);
    return 0;
}

static int64_t cp_index(struct value s, size_t byte_off) { return (int64_t)utf8_count(s.s, byte_off); }

static int method_call_inner(struct render *r, struct method *m, struct value *args, int nargs, const char **kwn,
                             const uint32_t *kwl, struct value *kwv, int nkw, struct value *out);

/* Methods of a Markup string return Markup (strings, and the items of split lists). */
int method_call(struct render *r, struct method *m, struct value *args, int nargs, const char **kwn,
                const uint32_t *kwl, struct value *kwv, int nkw, struct value *out)
{
    if (method_call_inner(r, m, args, nargs, kwn, kwl, kwv, nkw, out) < 0)
        return -1;
    if (m->id >= 0 && m->self.type == V_STR && (m->self.flags & VF_SAFE)) {
        if (out->type == V_STR)
            out->flags |= VF_SAFE;
        else if (out->type == V_LIST && (m->id == M_SPLIT || m->id == M_RSPLIT || m->id == M_SPLITLINES))
            for (uint32_t i = 0; i < out->l->n; i++)
                out->l->v[i].flags |= VF_SAFE;
    }
    return 0;
}

static int method_call_inner(struct render *r, struct method *m, struct value *args, int nargs, const char **kwn,
                             const uint32_t *kwl, struct value *kwv, int nkw, struct value *out)
{
    struct value s = m->self;
    struct value a0 = nargs > 0 ? args[0] : v_none(), a1 = nargs > 1 ? args[1] : v_none();
    bool b;
    if (m->id == -1) { /* loop.cycle(a, b, ...) */
        if (nargs == 0)
            return rerr(r, "no items for cycling given");
        *out = args[s.loop->index0 % nargs];
        return 0;
    }
    switch (m->id) {
    case M_STARTSWITH: case M_ENDSWITH:
        if (nargs_check(r, m->id == M_STARTSWITH ? "startswith" : "endswith", nargs, 1, 1, nkw) < 0 ||
            str_affix_match(r, s, a0, m->id == M_ENDSWITH, &b) < 0)
            return -1;
        *out = v_bool(b);
        return 0;
    case M_SPLIT: case M_RSPLIT: {
        struct value sep = v_none(), maxs = v_int(-1);
        if (nargs > 2)
            return rerr(r, "split() takes at most 2 arguments");
        if (nargs > 0) sep = a0;
        if (nargs > 1) maxs = a1;
        for (int k = 0; k < nkw; k++) {
            if (kwl[k] == 3 && !memcmp(kwn[k], "sep", 3)) sep = kwv[k];
            else if (kwl[k] == 8 && !memcmp(kwn[k], "maxsplit", 8)) maxs = kwv[k];
            else return rerr(r, "split() got an unexpected keyword argument '%.*s'", (int)kwl[k], kwn[k]);
        }
        if (maxs.type != V_INT)
            return rerr(r, "split(): maxsplit must be an integer");
        return str_split(r, s, sep, maxs.i, m->id == M_RSPLIT, out);
    }
    case M_STRIP: case M_LSTRIP: case M_RSTRIP:
        if (nargs_check(r, "strip", nargs, 0, 1, nkw) < 0)
            return -1;
        return str_strip(r, s, a0, m->id == M_STRIP ? 0 : m->id == M_LSTRIP ? 1 : 2, out);
    case M_LOWER: case M_UPPER: case M_TITLE: case M_CAPITALIZE:
        if (nargs_check(r, "lower", nargs, 0, 0, nkw) < 0)
            return -1;
        return str_case(r, s, m->id - M_LOWER, out);
    case M_REPLACE:
        if (nargs_check(r, "replace", nargs, 2, 3, nkw) < 0)
            return -1;
        if (a0.type != V_STR || a1.type != V_STR || (nargs > 2 && args[2].type != V_INT))
            return rerr(r, "replace() arguments must be (str, str[, int])");
        return str_replace(r, s, a0, a1, nargs > 2 ? args[2].i : -1, out);
    case M_FIND: case M_RFIND: case M_COUNT: {
        if (nargs_check(r, "find", nargs, 1, 1, nkw) < 0)
            return -1;
        if (a0.type != V_STR)
            return rerr(r, "must be str, not %s", v_type_name(a0));
        if (m->id == M_COUNT) {
            int64_t c = 0;
            if (a0.n == 0) {
                c = (int64_t)utf8_count(s.s, s.n) + 1;
            } else {
                for (size_t i = 0; i + a0.n <= s.n;) {
                    const char *hit = memmem(s.s + i, s.n - i, a0.s, a0.n);
                    if (!hit)
                        break;
                    c++;
                    i = (size_t)(hit - s.s) + a0.n;
                }
            }
            *out = v_int(c);
            return 0;
        }
        int64_t pos = -1;
        if (m->id == M_FIND) {
            const char *hit = memmem(s.s, s.n, a0.s, a0.n);
            if (hit || a0.n == 0)
                pos = cp_index(s, hit ? (size_t)(hit - s.s) : 0);
        } else {
            for (size_t j = s.n >= a0.n ? s.n - a0.n + 1 : 0; j-- > 0;)
                if (memcmp(s.s + j, a0.s, a0.n) == 0) {
                    pos = cp_index(s, j);
                    break;
                }
        }
        *out = v_int(pos);
        return 0;
    }
    case M_JOIN: {
        if (nargs_check(r, "join", nargs, 1, 1, nkw) < 0)
            return -1;
        struct vlist *l;
        if (interp_iterate(r, a0, &l) < 0)
            return -1;
        struct sbuf sb = {0};
        for (uint32_t i = 0; i < l->n; i++) {
            if (l->v[i].type != V_STR)
                return rerr(r, "sequence item %u: expected str instance, %s found", i, v_type_name(l->v[i]));
            if ((i && sb_put(r, &sb, s.s, s.n) < 0) || sb_put(r, &sb, l->v[i].s, l->v[i].n) < 0)
                return -1;
        }
        *out = v_str(sb.p ? sb.p : "", sb.n);
        return 0;
    }
    case M_FORMAT: return str_format(r, s, args, nargs, kwn, kwl, kwv, nkw, out);
    case M_SPLITLINES: {
        struct vlist *l;
        if (nargs_check(r, "splitlines", nargs, 0, 0, nkw) < 0 || str_splitlines(r, s, &l) < 0)
            return -1;
        *out = v_list(l);
        return 0;
    }
    case M_ISDIGIT: case M_ISALPHA: case M_ISALNUM: case M_ISSPACE: case M_ISLOWER: case M_ISUPPER: {
        bool ok = s.n > 0, any_cased = false;
        for (uint32_t i = 0; i < s.n && ok; i++) {
            char c = s.s[i];
            bool d = c >= '0' && c <= '9', al = is_lower(c) || is_upper(c);
            switch (m->id) {
            case M_ISDIGIT: ok = d; break;
            case M_ISALPHA: ok = al; break;
            case M_ISALNUM: ok = al || d; break;
            case M_ISSPACE: ok = py_isspace((unsigned char)c); break;
            case M_ISLOWER: ok = !is_upper(c); any_cased |= is_lower(c); break;
            default: ok = !is_lower(c); any_cased |= is_upper(c); break;
            }
        }
        if (m->id == M_ISLOWER || m->id == M_ISUPPER)
            ok = str_is_case(s, m->id == M_ISLOWER);
        (void)any_cased;
        *out = v_bool(ok);
        return 0;
    }
    case M_ITEMS: case M_KEYS: case M_VALUES: {
        if (nargs_check(r, "items", nargs, 0, 0, nkw) < 0)
            return -1;
        struct vlist *l = vlist_new(r, s.d->n);
        if (!l)
            return -1;
        for (uint32_t i = 0; i < s.d->n; i++) {
            if (m->id == M_ITEMS) {
                struct vlist *pair = vlist_new(r, 2);
                if (!pair)
                    return -1;
                pair->v[0] = s.d->keys[i];
                pair->v[1] = s.d->vals[i];
                pair->n = 2;
                l->v[l->n] = v_list(pair);
                l->v[l->n++].flags = VF_TUPLE;
            } else {
                l->v[l->n++] = m->id == M_KEYS ? s.d->keys[i] : s.d->vals[i];
            }
        }
        *out = v_list(l);
        out->flags = VF_VIEW;
        out->n = m->id == M_ITEMS ? 1 : m->id == M_KEYS ? 2 : 3;
        return 0;
    }
    case M_GET: {
        if (nargs_check(r, "get", nargs, 1, 2, nkw) < 0)
            return -1;
        struct value *v = vdict_get(s.d, a0);
        *out = v ? *v : a1;
        return 0;
    }
    case M_COPY: *out = s; return 0; /* values are immutable: sharing is a copy */
    case M_INDEX: case M_LCOUNT: {
        if (nargs_check(r, m->id == M_INDEX ? "index" : "count", nargs, 1, 1, nkw) < 0)
            return -1;
        int64_t c = 0;
        for (uint32_t i = 0; i < s.l->n; i++)
            if (v_equal(s.l->v[i], a0)) {
                if (m->id == M_INDEX) {
                    *out = v_int(i);
                    return 0;
                }
                c++;
            }
        if (m->id == M_INDEX)
            return rerr(r, "value is not in list");
        *out = v_int(c);
        return 0;
    }
    default: return rerr(r, "internal error: unknown method");
    }
}

/* ---- globals */

static const char *const BUILTINS[] = {"range", "namespace", "raise_exception", "strftime_now", "dict"};

int builtin_lookup(const char *name, size_t n)
{
    for (int i = 0; i < (int)(sizeof(BUILTINS) / sizeof(BUILTINS[0])); i++)
        if (strlen(BUILTINS[i]) == n && memcmp(BUILTINS[i], name, n) == 0)
            return i;
    return -1;
}

int builtin_call(struct render *r, int id, struct value self, struct value *args, int nargs, const char **kwn,
                 const uint32_t *kwl, struct value *kwv, int nkw, struct value *out)
{
    (void)self;
    switch (id) {
    case FN_RANGE: {
        if (nargs_check(r, "range", nargs, 1, 3, nkw) < 0)
            return -1;
        int64_t v[3] = {0, 0, 1};
        for (int i = 0; i < nargs; i++) {
            if (args[i].type != V_INT && args[i].type != V_BOOL)
                return rerr(r, "'%s' object cannot be interpreted as an integer", v_type_name(args[i]));
            v[i] = args[i].type == V_BOOL ? args[i].b : args[i].i;
        }
        int64_t lo = nargs == 1 ? 0 : v[0], hi = nargs == 1 ? v[0] : v[1], st = nargs == 3 ? v[2] : 1;
        if (st == 0)
            return rerr(r, "range() arg 3 must not be zero");
        struct vlist *l = vlist_new(r, 0);
        if (!l)
            return -1;
        /* jinja's sandbox caps range() at 100000 items */
        int64_t count = st > 0 ? (hi > lo ? (hi - lo + st - 1) / st : 0) : (lo > hi ? (lo - hi - st - 1) / -st : 0);
        if (count > 100000)
            return rerr(r, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        for (int64_t i = 0; i < count; i++)
            if (vlist_push(r, l, v_int(lo + i * st)) < 0)
                return -1;
        *out = v_list(l);
        return 0;
    }
    case FN_NAMESPACE: case FN_DICT: {
        struct vdict *d = vdict_new(r, 0);
        if (!d)
            return -1;
        if (nargs > 1)
            return rerr(r, "%s() takes at most 1 positional argument", BUILTINS[id]);
        if (nargs == 1) {
            if (args[0].type != V_DICT)
                return rerr(r, "%s(): the positional argument must be a mapping", BUILTINS[id]);
            for (uint32_t i = 0; i < args[0].d->n; i++)
                if (vdict_set(r, d, args[0].d->keys[i], args[0].d->vals[i]) < 0)
                    return -1;
        }
        for (int k = 0; k < nkw; k++)
            if (vdict_set(r, d, v_str(kwn[k], kwl[k]), kwv[k]) < 0)
                return -1;
        *out = v_dict(d);
        if (id == FN_NAMESPACE)
            out->type = V_NS;
        return 0;
    }
    case FN_RAISE: {
        struct value msg = nargs ? args[0] : v_str("", 0);
        if (nargs_check(r, "raise_exception", nargs, 1, 1, nkw) < 0 || v_to_str(r, msg, &msg) < 0)
            return -1;
        return rerr(r, "raise_exception: %.*s", (int)(msg.n > 800 ? 800 : msg.n), msg.s);
    }
    case FN_STRFTIME: {
        if (nargs_check(r, "strftime_now", nargs, 1, 1, nkw) < 0)
            return -1;
        if (args[0].type != V_STR)
            return rerr(r, "strftime_now: the format must be a string");
        char fmt[256], buf[512];
        if (args[0].n >= sizeof(fmt))
            return rerr(r, "strftime_now: format too long");
        memcpy(fmt, args[0].s, args[0].n);
        fmt[args[0].n] = 0;
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        size_t k = strftime(buf, sizeof(buf), fmt, &tm);
        if (k == 0 && fmt[0])
            return rerr(r, "strftime_now: result too long");
        *out = v_str_copy(r, buf, k);
        return r->failed ? -1 : 0;
    }
    default: return rerr(r, "internal error: unknown builtin");
    }
}
