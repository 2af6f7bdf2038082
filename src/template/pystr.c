/* template/pystr.c — Python's str behaviour on UTF-8 strings, for methods.c and
 * filters.c: strip/split/rsplit/splitlines with Python's whitespace and line
 * breaks, replace (including the empty pattern), case mapping (ASCII, Latin-1,
 * Latin Extended-A, Greek with final sigma, Cyrillic; other code points are left
 * as they are), islower/isupper, startswith/endswith with tuples, str.format
 * ({} {0} {name} with !r/!s, no format specs), printf-style % and
 * markupsafe's escape.
 */
#include "template/tpl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool in_chars(uint32_t cp, struct value chars)
{
    for (size_t i = 0; i < chars.n;) {
        size_t a;
        if (utf8_decode(chars.s + i, chars.n - i, &a) == cp)
            return true;
        i += a;
    }
    return false;
}

/* mode: 0 both, 1 left, 2 right; chars V_NONE: whitespace */
int str_strip(struct render *r, struct value s, struct value chars, int mode, struct value *out)
{
    if (chars.type != V_NONE && chars.type != V_STR)
        return rerr(r, "strip arg must be None or str");
    size_t lo = 0, hi = s.n;
    if (mode != 2)
        while (lo < hi) {
            size_t a;
            uint32_t cp = utf8_decode(s.s + lo, hi - lo, &a);
            if (!(chars.type == V_NONE ? py_isspace(cp) : in_chars(cp, chars)))
                break;
            lo += a;
        }
    if (mode != 1)
        while (hi > lo) {
            size_t st = hi - 1;
            while (st > lo && ((unsigned char)s.s[st] & 0xc0) == 0x80)
                st--;
            size_t a;
            uint32_t cp = utf8_decode(s.s + st, hi - st, &a);
            if (!(chars.type == V_NONE ? py_isspace(cp) : in_chars(cp, chars)))
                break;
            hi = st;
        }
    *out = v_str(s.s + lo, hi - lo);
    return 0;
}

int str_replace(struct render *r, struct value s, struct value old, struct value new_, int64_t count,
                struct value *out)
{
    struct sbuf b = {0};
    int64_t done = 0;
    if (old.n == 0) {
        /* Python inserts `new` before every code point and at the end */
        for (size_t i = 0; i <= s.n;) {
            if (count < 0 || done < count) {
                if (sb_put(r, &b, new_.s, new_.n) < 0)
                    return -1;
                done++;
            }
            if (i == s.n)
                break;
            size_t a;
            utf8_decode(s.s + i, s.n - i, &a);
            if (sb_put(r, &b, s.s + i, a) < 0)
                return -1;
            i += a;
        }
        *out = v_str(b.p ? b.p : "", b.n);
        return 0;
    }
    size_t i = 0;
    while (i < s.n) {
        const char *hit = (count < 0 || done < count) ? memmem(s.s + i, s.n - i, old.s, old.n) : NULL;
        if (!hit) {
            if (sb_put(r, &b, s.s + i, s.n - i) < 0)
                return -1;
            break;
        }
        size_t at = (size_t)(hit - s.s);
        if (sb_put(r, &b, s.s + i, at - i) < 0 || sb_put(r, &b, new_.s, new_.n) < 0)
            return -1;
        i = at + old.n;
        done++;
    }
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
}

/* Python's printf-style `fmt % args`: %[(key)][flags][width][.prec]type with
 * types s r a d i u x X o c e E f F g G and %%; args is a tuple, a dict (for
 * %(key)s) or a single value. Numbers format as C printf does, which matches
 * Python for these types. */
int str_percent_format(struct render *r, struct value fmt, struct value args, struct value *out)
{
    struct sbuf b = {0};
    bool tuple = args.type == V_LIST && (args.flags & VF_TUPLE);
    uint32_t argi = 0, nargs = tuple ? args.l->n : 1;
    bool used_mapping = false;
    for (uint32_t i = 0; i < fmt.n; i++) {
        char c = fmt.s[i];
        if (c != '%') {
            if (sb_putc(r, &b, c) < 0)
                return -1;
            continue;
        }
        if (++i >= fmt.n)
            return rerr(r, "incomplete format");
        struct value v;
        bool have = false;
        if (fmt.s[i] == '(') {
            uint32_t j = i + 1;
            while (j < fmt.n && fmt.s[j] != ')')
                j++;
            if (j >= fmt.n)
                return rerr(r, "incomplete format key");
            if (args.type != V_DICT)
                return rerr(r, "format requires a mapping");
            struct value *pv = vdict_get_str(args.d, fmt.s + i + 1, j - i - 1);
            if (!pv)
                return rerr(r, "format key '%.*s' not found", (int)(j - i - 1), fmt.s + i + 1);
            v = *pv;
            have = used_mapping = true;
            i = j + 1;
        }
        char spec[32];
        size_t k = 0;
        spec[k++] = '%';
        while (i < fmt.n && fmt.s[i] && strchr("-+ 0#", fmt.s[i]) && k < 8)
            spec[k++] = fmt.s[i++];
        while (i < fmt.n && fmt.s[i] >= '0' && fmt.s[i] <= '9' && k < 14)
            spec[k++] = fmt.s[i++];
        if (i < fmt.n && fmt.s[i] == '.') {
            spec[k++] = fmt.s[i++];
            while (i < fmt.n && fmt.s[i] >= '0' && fmt.s[i] <= '9' && k < 20)
                spec[k++] = fmt.s[i++];
        }
        if (i >= fmt.n)
            return rerr(r, "incomplete format");
        char type = fmt.s[i];
        if (type == '%') {
            if (sb_putc(r, &b, '%') < 0)
                return -1;
            continue;
        }
        if (!have) {
            if (argi >= nargs)
                return rerr(r, "not enough arguments for format string");
            v = tuple ? args.l->v[argi] : args;
            argi++;
        }
        char buf[512];
        int n;
        switch (type) {
        case 's': case 'r': case 'a': {
            struct sbuf t = {0};
            if ((type == 's' ? v_str_append(r, &t, v) : v_repr_append(r, &t, v)) < 0)
                return -1;
            spec[k++] = 's';
            spec[k] = 0;
            /* width/precision count code points in Python; only ASCII padding is exact here */
            char *tmp = ralloc(r, t.n + 512);
            if (!tmp)
                return -1;
            n = snprintf(tmp, t.n + 512, spec, t.p ? t.p : "");
            if (n < 0)
                return rerr(r, "bad format specification");
            if (sb_put(r, &b, tmp, (size_t)n < t.n + 512 ? (size_t)n : t.n + 511) < 0)
                return -1;
            continue;
        }
        case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': {
            if (!v_is_number(v))
                return rerr(r, "%%%c format: a number is required, not %s", type, v_type_name(v));
            long long iv = v.type == V_FLOAT ? (long long)v.f : v.type == V_BOOL ? v.b : v.i;
            if (type == 'c') {
                spec[k++] = 'c';
                spec[k] = 0;
                n = snprintf(buf, sizeof(buf), spec, (int)(iv & 0x7f));
            } else {
                spec[k++] = 'l';
                spec[k++] = 'l';
                spec[k++] = type == 'i' || type == 'u' ? 'd' : type;
                spec[k] = 0;
                n = snprintf(buf, sizeof(buf), spec, iv);
            }
            break;
        }
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G':
            if (!v_is_number(v))
                return rerr(r, "must be real number, not %s", v_type_name(v));
            spec[k++] = type;
            spec[k] = 0;
            n = snprintf(buf, sizeof(buf), spec, v_as_double(v));
            break;
        default: return rerr(r, "unsupported format character 0x%02x", (unsigned char)type);
        }
        if (n < 0)
            return rerr(r, "bad format specification");
        if (sb_put(r, &b, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1) < 0)
            return -1;
    }
    /* Python skips this check when args is a mapping-like non-tuple (dict, list) */
    if (!used_mapping && args.type != V_DICT && args.type != V_UNDEF && !(args.type == V_LIST && !tuple) &&
        argi < nargs)
        return rerr(r, "not all arguments converted during string formatting");
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
}

int str_html_escape(struct render *r, struct value s, struct value *out)
{
    struct sbuf b = {0};
    for (uint32_t i = 0; i < s.n; i++) {
        char c = s.s[i];
        const char *e = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&#34;"
                      : c == '\'' ? "&#39;" : NULL;
        if (e ? sb_put(r, &b, e, strlen(e)) < 0 : sb_putc(r, &b, c) < 0)
            return -1;
    }
    *out = v_str(b.p ? b.p : "", b.n);
    out->flags = VF_SAFE;
    return 0;
}


/* Simple case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic
 * (what chat templates meet in role names and tokens); other code points are
 * left as they are. */
static uint32_t cp_upper(uint32_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 0xe0 && c <= 0xfe && c != 0xf7) || (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) ||
        (c >= 0x430 && c <= 0x44f))
        return c - 32;
    if (c == 0xb5) return 0x39c;
    if (c == 0xff) return 0x178;
    if (c == 0x131) return 'I';
    if (c == 0x17f) return 'S';
    if (c == 0x3c2) return 0x3a3;
    if (c == 0x3ac) return 0x386;
    if (c >= 0x3ad && c <= 0x3af) return c - 37;
    if (c == 0x3cc) return 0x38c;
    if (c == 0x3cd || c == 0x3ce) return c - 63;
    if (c >= 0x450 && c <= 0x45f) return c - 80;
    if ((c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return c & ~1u;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
        return (c & 1u) ? c : c - 1;
    return c;
}

static uint32_t cp_lower(uint32_t c)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7) || (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) ||
        (c >= 0x410 && c <= 0x42f))
        return c + 32;
    if (c == 0x178) return 0xff;
    if (c == 0x386) return 0x3ac;
    if (c >= 0x388 && c <= 0x38a) return c + 37;
    if (c == 0x38c) return 0x3cc;
    if (c == 0x38e || c == 0x38f) return c + 63;
    if (c >= 0x400 && c <= 0x40f) return c + 80;
    if ((c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return c | 1u;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
        return (c & 1u) ? c + 1 : c;
    return c;
}

static int put_cp(struct render *r, struct sbuf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xc0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 63)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 63)); u[2] = (char)(0x80 | (cp & 63));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 63));
        u[2] = (char)(0x80 | ((cp >> 6) & 63)); u[3] = (char)(0x80 | (cp & 63));
        n = 4;
    }
    return sb_put(r, b, u, n);
}

/* mode: 0 lower, 1 upper, 2 title (str.title), 3 capitalize, 4 jinja2's title
 * filter (upper after whitespace, '-', '(', '{', '[', '<'; lower elsewhere) */
int str_case(struct render *r, struct value s, int mode, struct value *out)
{
    struct sbuf b = {0};
    bool prev_cased = false, first = true, prev_sep = true;
    for (size_t i = 0; i < s.n;) {
        size_t a;
        uint32_t cp = utf8_decode(s.s + i, s.n - i, &a);
        bool cased = cp_upper(cp) != cp || cp_lower(cp) != cp || cp == 0xdf;
        bool sep = py_isspace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
        bool up = mode == 1 || (mode == 2 && !prev_cased) || (mode == 3 && first) || (mode == 4 && prev_sep && !sep);
        prev_sep = sep;
        if (cp == 0x3a3 && !up && prev_cased) { /* final sigma: ς when no cased letter follows */
            bool next_cased = false;
            if (i + a < s.n) {
                size_t a2;
                uint32_t nc = utf8_decode(s.s + i + a, s.n - i - a, &a2);
                next_cased = cp_upper(nc) != nc || cp_lower(nc) != nc;
            }
            if (!next_cased) {
                if (sb_put(r, &b, "\xcf\x82", 2) < 0)
                    return -1;
                prev_cased = true;
                first = false;
                i += a;
                continue;
            }
        }
        int rc;
        if (!cased) /* keep the bytes as they were (also invalid UTF-8) */
            rc = sb_put(r, &b, s.s + i, a);
        else if (cp == 0xdf && up) /* sharp s: "SS" in upper case, "Ss" in title case */
            rc = sb_put(r, &b, mode == 1 ? "SS" : "Ss", 2);
        else
            rc = put_cp(r, &b, up ? cp_upper(cp) : cp_lower(cp));
        if (rc < 0)
            return -1;
        prev_cased = cased;
        first = false;
        i += a;
    }
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
}

bool str_is_case(struct value s, bool lower)
{
    bool any = false;
    for (size_t i = 0; i < s.n;) {
        size_t a;
        uint32_t cp = utf8_decode(s.s + i, s.n - i, &a);
        bool is_lo = cp_upper(cp) != cp || cp == 0xdf, is_up = cp_lower(cp) != cp;
        if (lower ? is_up : is_lo)
            return false;
        any = any || (lower ? is_lo : is_up);
        i += a;
    }
    return any;
}

int str_splitlines(struct render *r, struct value s, struct vlist **out)
{
    struct vlist *l = vlist_new(r, 0);
    if (!l)
        return -1;
    size_t start = 0;
    for (size_t i = 0; i < s.n;) {
        size_t a;
        uint32_t cp = utf8_decode(s.s + i, s.n - i, &a);
        bool brk = cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) ||
                   cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!brk) {
            i += a;
            continue;
        }
        if (vlist_push(r, l, v_str(s.s + start, i - start)) < 0)
            return -1;
        i += a;
        if (cp == '\r' && i < s.n && s.s[i] == '\n')
            i++;
        start = i;
    }
    if (start < s.n && vlist_push(r, l, v_str(s.s + start, s.n - start)) < 0)
        return -1;
    *out = l;
    return 0;
}

int str_split(struct render *r, struct value s, struct value sep, int64_t maxsplit, bool right,
                     struct value *out)
{
    struct vlist *l = vlist_new(r, 0);
    if (!l)
        return -1;
    if (sep.type == V_STR && sep.n == 0)
        return rerr(r, "empty separator");
    if (sep.type == V_STR) {
        if (!right) {
            size_t i = 0;
            int64_t k = 0;
            for (;;) {
                const char *hit = (maxsplit < 0 || k < maxsplit) ? memmem(s.s + i, s.n - i, sep.s, sep.n) : NULL;
                if (!hit)
                    break;
                if (vlist_push(r, l, v_str(s.s + i, (size_t)(hit - s.s) - i)) < 0)
                    return -1;
                i = (size_t)(hit - s.s) + sep.n;
                k++;
            }
            if (vlist_push(r, l, v_str(s.s + i, s.n - i)) < 0)
                return -1;
        } else {
            /* collect from the right, then reverse */
            size_t end = s.n;
            int64_t k = 0;
            struct vlist *rev = vlist_new(r, 0);
            if (!rev)
                return -1;
            while (maxsplit < 0 || k < maxsplit) {
                size_t found = SIZE_MAX;
                for (size_t j = end >= sep.n ? end - sep.n + 1 : 0; j-- > 0;)
                    if (memcmp(s.s + j, sep.s, sep.n) == 0) {
                        found = j;
                        break;
                    }
                if (found == SIZE_MAX)
                    break;
                if (vlist_push(r, rev, v_str(s.s + found + sep.n, end - found - sep.n)) < 0)
                    return -1;
                end = found;
                k++;
            }
            if (vlist_push(r, rev, v_str(s.s, end)) < 0)
                return -1;
            for (uint32_t i = rev->n; i-- > 0;)
                if (vlist_push(r, l, rev->v[i]) < 0)
                    return -1;
        }
        *out = v_list(l);
        return 0;
    }
    if (sep.type != V_NONE)
        return rerr(r, "split: separator must be a string or None");
    /* whitespace split: runs of whitespace, no empty strings */
    if (right && maxsplit >= 0) {
        struct vlist *rev = vlist_new(r, 0);
        if (!rev)
            return -1;
        size_t end = s.n;
        int64_t k = 0;
        for (;;) {
            while (end > 0 && py_isspace((unsigned char)s.s[end - 1]))
                end--;
            if (end == 0)
                break;
            size_t st = end;
            while (st > 0 && !py_isspace((unsigned char)s.s[st - 1]))
                st--;
            if (k == maxsplit) {
                if (vlist_push(r, rev, v_str(s.s, end)) < 0)
                    return -1;
                break;
            }
            if (vlist_push(r, rev, v_str(s.s + st, end - st)) < 0)
                return -1;
            k++;
            end = st;
        }
        for (uint32_t i = rev->n; i-- > 0;)
            if (vlist_push(r, l, rev->v[i]) < 0)
                return -1;
        *out = v_list(l);
        return 0;
    }
    size_t i = 0;
    int64_t k = 0;
    for (;;) {
        while (i < s.n) {
            size_t a;
            uint32_t cp = utf8_decode(s.s + i, s.n - i, &a);
            if (!py_isspace(cp))
                break;
            i += a;
        }
        if (i >= s.n)
            break;
        if (maxsplit >= 0 && k == maxsplit) {
            size_t e = s.n;
            while (e > i && py_isspace((unsigned char)s.s[e - 1]))
                e--;
            if (vlist_push(r, l, v_str(s.s + i, e - i)) < 0)
                return -1;
            break;
        }
        size_t st = i;
        while (i < s.n) {
            size_t a;
            uint32_t cp = utf8_decode(s.s + i, s.n - i, &a);
            if (py_isspace(cp))
                break;
            i += a;
        }
        if (vlist_push(r, l, v_str(s.s + st, i - st)) < 0)
            return -1;
        k++;
    }
    *out = v_list(l);
    return 0;
}

int str_affix_match(struct render *r, struct value s, struct value affix, bool end, bool *out)
{
    if (affix.type == V_LIST && (affix.flags & VF_TUPLE)) {
        *out = false;
        for (uint32_t i = 0; i < affix.l->n && !*out; i++)
            if (str_affix_match(r, s, affix.l->v[i], end, out) < 0)
                return -1;
        return 0;
    }
    if (affix.type != V_STR)
        return rerr(r, "%s first arg must be str or a tuple of str, not %s", end ? "endswith" : "startswith",
                    v_type_name(affix));
    *out = affix.n <= s.n && memcmp(end ? s.s + s.n - affix.n : s.s, affix.s, affix.n) == 0;
    return 0;
}

/* '{} {0} {name}'.format(...): fields with an optional !r/!s conversion, no format spec. */
int str_format(struct render *r, struct value fmt, struct value *args, int nargs, const char **kwn,
                      const uint32_t *kwl, struct value *kwv, int nkw, struct value *out)
{
    struct sbuf b = {0};
    int auto_idx = 0;
    for (uint32_t i = 0; i < fmt.n; i++) {
        char c = fmt.s[i];
        if ((c == '{' || c == '}') && i + 1 < fmt.n && fmt.s[i + 1] == c) {
            if (sb_putc(r, &b, c) < 0)
                return -1;
            i++;
            continue;
        }
        if (c == '}')
            return rerr(r, "Single '}' encountered in format string");
        if (c != '{') {
            if (sb_putc(r, &b, c) < 0)
                return -1;
            continue;
        }
        uint32_t j = i + 1;
        while (j < fmt.n && fmt.s[j] != '}')
            j++;
        if (j >= fmt.n)
            return rerr(r, "Single '{' encountered in format string");
        const char *f = fmt.s + i + 1;
        uint32_t fl = j - i - 1, name_len = fl;
        char conv = 0;
        for (uint32_t k = 0; k < fl; k++) {
            if (f[k] == ':')
                return rerr(r, "str.format: format specs are not supported");
            if (f[k] == '!' && k + 1 < fl) {
                conv = f[k + 1];
                name_len = k;
                break;
            }
        }
        struct value v;
        if (name_len == 0) {
            if (auto_idx >= nargs)
                return rerr(r, "Replacement index %d out of range for positional args tuple", auto_idx);
            v = args[auto_idx++];
        } else if (f[0] >= '0' && f[0] <= '9') {
            int idx = atoi(f);
            if (idx >= nargs)
                return rerr(r, "Replacement index %d out of range for positional args tuple", idx);
            v = args[idx];
        } else {
            int k;
            for (k = 0; k < nkw; k++)
                if (kwl[k] == name_len && memcmp(kwn[k], f, name_len) == 0)
                    break;
            if (k == nkw)
                return rerr(r, "str.format: no argument '%.*s'", (int)name_len, f);
            v = kwv[k];
        }
        if ((conv == 'r' ? v_repr_append(r, &b, v) : v_str_append(r, &b, v)) < 0)
            return -1;
        i = j;
    }
    *out = v_str(b.p ? b.p : "", b.n);
    return 0;
}
