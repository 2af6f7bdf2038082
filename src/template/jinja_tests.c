/* template/jinja_tests.c — jinja2's builtin tests (`x is defined`, `is string`,
 * `is mapping`, `is sequence`, `equalto`, `divisibleby`, ...) with Python's
 * answers: bools are numbers but not integers, strings and dicts are sequences,
 * generators are iterable but not sequences, undefined is iterable. Unknown tests
 * are refused at parse time (see parser_stmt.c for the jinja2 exception). */
#include "template/tpl_internal.h"

#include <math.h>
#include <string.h>


enum {
    TS_DEFINED, TS_UNDEFINED, TS_NONE, TS_STRING, TS_MAPPING, TS_ITERABLE, TS_SEQUENCE, TS_NUMBER, TS_INTEGER, TS_FLOAT,
    TS_BOOLEAN, TS_FALSE, TS_TRUE, TS_CALLABLE, TS_EQ, TS_NE, TS_LT, TS_LE, TS_GT, TS_GE, TS_IN, TS_ODD, TS_EVEN,
    TS_DIVISIBLEBY, TS_SAMEAS, TS_LOWER, TS_UPPER, TS_FILTER, TS_TEST, TS_ESCAPED, TS_COUNT
};
static const char *const TESTS[] = {
    "defined", "undefined", "none", "string", "mapping", "iterable", "sequence", "number", "integer", "float",
    "boolean", "false", "true", "callable", "eq", "ne", "lt", "le", "gt", "ge", "in", "odd", "even",
    "divisibleby", "sameas", "lower", "upper", "filter", "test", "escaped",
};

int test_lookup(const char *name, size_t n)
{
    static const struct { const char *alias; int id; } aliases[] = {
        {"equalto", TS_EQ}, {"==", TS_EQ}, {"!=", TS_NE}, {"lessthan", TS_LT}, {"<", TS_LT}, {"<=", TS_LE},
        {"greaterthan", TS_GT}, {">", TS_GT}, {">=", TS_GE},
    };
    for (int i = 0; i < TS_COUNT; i++)
        if (strlen(TESTS[i]) == n && memcmp(TESTS[i], name, n) == 0)
            return i;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strlen(aliases[i].alias) == n && memcmp(aliases[i].alias, name, n) == 0)
            return aliases[i].id;
    return -1;
}

int test_apply(struct render *r, int tid, struct value v, struct value *args, int nargs, bool *out)
{
    int want = (tid >= TS_EQ && tid <= TS_IN) || tid == TS_DIVISIBLEBY || tid == TS_SAMEAS ? 1 : 0;
    if (nargs != want)
        return rerr(r, "test '%s' takes %d argument(s), got %d", TESTS[tid], want, nargs);
    struct value a = nargs ? args[0] : v_none();
    int c;
    switch (tid) {
    case TS_DEFINED: *out = v.type != V_UNDEF; return 0;
    case TS_UNDEFINED: *out = v.type == V_UNDEF; return 0;
    case TS_NONE: *out = v.type == V_NONE; return 0;
    case TS_STRING: *out = v.type == V_STR; return 0;
    case TS_MAPPING: *out = v.type == V_DICT; return 0;
    case TS_ITERABLE: *out = v.type == V_STR || v.type == V_LIST || v.type == V_DICT || v.type == V_UNDEF; return 0;
    case TS_SEQUENCE:
        /* len() and __getitem__ exist: Undefined has both */
        *out = v.type == V_STR || (v.type == V_LIST && !(v.flags & (VF_GEN | VF_VIEW))) || v.type == V_DICT ||
               v.type == V_UNDEF;
        return 0;
    case TS_NUMBER: *out = v_is_number(v); return 0;
    case TS_INTEGER: *out = v.type == V_INT; return 0;
    case TS_FLOAT: *out = v.type == V_FLOAT; return 0;
    case TS_BOOLEAN: *out = v.type == V_BOOL; return 0;
    case TS_FALSE: *out = v.type == V_BOOL && !v.b; return 0;
    case TS_TRUE: *out = v.type == V_BOOL && v.b; return 0;
    case TS_CALLABLE: *out = v.type == V_MACRO || v.type == V_FUNC || v.type == V_METHOD; return 0;
    case TS_EQ: *out = v_equal(v, a); return 0;
    case TS_NE: *out = !v_equal(v, a); return 0;
    case TS_LT: case TS_LE: case TS_GT: case TS_GE:
        if (v_compare(r, v, a, &c) < 0)
            return -1;
        *out = tid == TS_LT ? c < 0 : tid == TS_LE ? c <= 0 : tid == TS_GT ? c > 0 : c >= 0;
        return 0;
    case TS_IN:
        if (a.type == V_STR) {
            if (v.type != V_STR)
                return rerr(r, "'in <string>' requires string as left operand");
            *out = v.n == 0 || memmem(a.s, a.n, v.s, v.n) != NULL;
            return 0;
        }
        if (a.type == V_DICT) {
            *out = vdict_get(a.d, v) != NULL;
            return 0;
        }
        if (a.type == V_LIST) {
            struct vlist *l;
            if (interp_iterate(r, a, &l) < 0)
                return -1;
            *out = false;
            for (uint32_t i = 0; i < l->n && !*out; i++)
                *out = v_equal(l->v[i], v);
            return 0;
        }
        return rerr(r, "argument of type '%s' is not iterable", v_type_name(a));
    case TS_ODD: case TS_EVEN: case TS_DIVISIBLEBY: { /* value % n == 0 (or == 1 for odd), Python's % */
        struct value n = tid == TS_DIVISIBLEBY ? a : v_int(2);
        if (!v_is_number(v) || !v_is_number(n))
            return rerr(r, "test '%s' needs numbers, got '%s'", TESTS[tid], v_type_name(v));
        if (v_as_double(n) == 0.0)
            return rerr(r, "integer division or modulo by zero");
        double m;
        if (v.type != V_FLOAT && n.type != V_FLOAT) {
            int64_t x = v.type == V_BOOL ? v.b : v.i, y = n.type == V_BOOL ? n.b : n.i;
            int64_t q = (y == -1) ? 0 : x % y;
            if (q && ((q < 0) != (y < 0)))
                q += y;
            m = (double)q;
        } else {
            double x = v_as_double(v), y = v_as_double(n);
            m = fmod(x, y);
            if (m != 0.0 && ((m < 0) != (y < 0)))
                m += y;
        }
        *out = tid == TS_ODD ? m == 1.0 : m == 0.0;
        return 0;
    }
    case TS_SAMEAS:
        *out = v.type == a.type && (v.type == V_NONE || v.type == V_UNDEF || (v.type == V_BOOL && v.b == a.b) ||
                                    (v.type == V_LIST && v.l == a.l) || ((v.type == V_DICT || v.type == V_NS) &&
                                    v.d == a.d) || (v.type == V_INT && v.i == a.i && v.i >= -5 && v.i <= 256));
        return 0;
    case TS_LOWER: case TS_UPPER: { /* str(value).islower() / .isupper() */
        struct value sv;
        if (v_to_str(r, v, &sv) < 0)
            return -1;
        *out = str_is_case(sv, tid == TS_LOWER);
        return 0;
    }
    case TS_FILTER: *out = v.type == V_STR && filter_lookup(v.s, v.n) >= 0; return 0;
    case TS_TEST: *out = v.type == V_STR && test_lookup(v.s, v.n) >= 0; return 0;
    case TS_ESCAPED: *out = false; return 0;
    default: return rerr(r, "no such test");
    }
}
