/* template/lexer.c — template source → tokens, with jinja2's whitespace rules as
 * transformers configures them (trim_blocks, lstrip_blocks):
 *   - newlines are normalized to "\n" and one trailing newline is dropped;
 *   - `{%-`/`{{-`/`{#-` strip all whitespace before the tag, `-%}`/`-}}`/`-#}`
 *     all whitespace after it;
 *   - lstrip_blocks: spaces/tabs between a line start and `{%` or `{#` go,
 *     unless the tag is `{%+`;
 *   - trim_blocks: the first newline right after `%}` or `#}` goes (not `}}`,
 *     not `+%}`).
 * A tag ends only where its brackets are balanced, so `{{ {'a': 1} }}` works.
 * String literals are decoded here (Python escapes); numbers are parsed here.
 * {% raw %} blocks become plain text here.
 */
#include "template/tpl_internal.h"

#include "core/log.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LEX_MAX_TOKENS ((size_t)1 << 22)

struct lexer {
    struct arena *a;
    const char *s; /* normalized source */
    size_t n, pos;
    int line;
    struct token_list *out;
    char *err;
    size_t errlen;
};

static int line_at(const char *s, size_t from, size_t to, int line)
{
    for (size_t i = from; i < to; i++)
        line += s[i] == '\n';
    return line;
}

static struct token *lex_push(struct lexer *lx, int type, int line)
{
    struct token_list *o = lx->out;
    if (o->n == o->cap) {
        if (o->cap >= LEX_MAX_TOKENS) {
            err_set(lx->err, lx->errlen, "template line %d: too many tokens", line);
            return NULL;
        }
        size_t cap = o->cap ? o->cap * 2 : 256;
        struct token *v = arena_alloc(lx->a, cap * sizeof(*v));
        if (!v) {
            err_set(lx->err, lx->errlen, "template: out of memory");
            return NULL;
        }
        if (o->n)
            memcpy(v, o->v, o->n * sizeof(*v));
        o->v = v;
        o->cap = cap;
    }
    struct token *t = &o->v[o->n++];
    memset(t, 0, sizeof(*t));
    t->type = (uint8_t)type;
    t->line = line;
    return t;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Python str.rstrip() on template data (ASCII whitespace and \x1c-\x1f). */
static size_t rstrip_len(const char *s, size_t n)
{
    while (n && (is_ws(s[n - 1]) || ((unsigned char)s[n - 1] >= 0x1c && (unsigned char)s[n - 1] <= 0x1f)))
        n--;
    return n;
}

static int emit_text(struct lexer *lx, const char *s, size_t n, int line)
{
    if (!n)
        return 0;
    struct token *t = lex_push(lx, T_TEXT, line);
    if (!t)
        return -1;
    t->s = s;
    t->n = (uint32_t)n;
    return 0;
}

/* Decode a quoted literal s[0..n) (quotes included) with Python's escapes. */
static int lex_string(struct lexer *lx, const char *s, size_t n, struct token *t)
{
    char *o = arena_alloc(lx->a, n + 1);
    if (!o)
        return err_set(lx->err, lx->errlen, "template: out of memory");
    size_t k = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = s[i];
        if (c != '\\') {
            o[k++] = c;
            continue;
        }
        if (i + 2 >= n) {
            o[k++] = c;
            continue;
        }
        char e = s[++i];
        switch (e) {
        case 'n': o[k++] = '\n'; break;
        case 't': o[k++] = '\t'; break;
        case 'r': o[k++] = '\r'; break;
        case '0': o[k++] = '\0'; break;
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'v': o[k++] = '\v'; break;
        case '\\': o[k++] = '\\'; break;
        case '\'': o[k++] = '\''; break;
        case '"': o[k++] = '"'; break;
        case '\n': break;
        case 'x': case 'u': case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            if (i + (size_t)digits >= n - 1)
                return err_set(lx->err, lx->errlen, "template line %d: truncated \\%c escape", t->line, e);
            for (int d = 0; d < digits; d++) {
                char h = s[i + 1 + (size_t)d];
                if (!isxdigit((unsigned char)h))
                    return err_set(lx->err, lx->errlen, "template line %d: bad \\%c escape", t->line, e);
                cp = cp * 16 + (uint32_t)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
            }
            i += (size_t)digits;
            if (cp > 0x10ffff)
                return err_set(lx->err, lx->errlen, "template line %d: bad \\%c escape", t->line, e);
            /* UTF-8 encode (at most 4 bytes; the escape text was at least 4 bytes long) */
            if (cp < 0x80) o[k++] = (char)cp;
            else if (cp < 0x800) { o[k++] = (char)(0xc0 | (cp >> 6)); o[k++] = (char)(0x80 | (cp & 63)); }
            else if (cp < 0x10000) {
                o[k++] = (char)(0xe0 | (cp >> 12)); o[k++] = (char)(0x80 | ((cp >> 6) & 63));
                o[k++] = (char)(0x80 | (cp & 63));
            } else {
                o[k++] = (char)(0xf0 | (cp >> 18)); o[k++] = (char)(0x80 | ((cp >> 12) & 63));
                o[k++] = (char)(0x80 | ((cp >> 6) & 63)); o[k++] = (char)(0x80 | (cp & 63));
            }
            break;
        }
        default: o[k++] = '\\'; o[k++] = e; break;
        }
    }
    t->s = o;
    t->n = (uint32_t)k;
    return 0;
}

static const char *const OPS2[] = {"//", "**", "==", "!=", ">=", "<=", NULL};
static const char OPS1[] = "+-/*%~[](){}><=.:|,;";

/* Tokens inside a tag, up to its end marker. kind: 0 block, 1 variable. */
static int lex_tag(struct lexer *lx, int kind, int open_line)
{
    char stack[256];
    int depth = 0;
    const char *s = lx->s;
    size_t n = lx->n;
    for (;;) {
        size_t p = lx->pos;
        if (p >= n)
            return err_set(lx->err, lx->errlen, "template line %d: unterminated '%s' tag (missing '%s')", open_line,
                           kind ? "{{" : "{%", kind ? "}}" : "%}");
        if (depth == 0) {
            char c1 = kind ? '}' : '%', c2 = '}';
            size_t q = p, end = 0;
            bool minus = false, plus = false;
            /* "-%}" "+%}" "-}}" (there is no "+}}": that is an operator, then "}}") */
            if ((s[q] == '-' || (s[q] == '+' && kind == 0)) && q + 2 < n && s[q + 1] == c1 && s[q + 2] == c2) {
                minus = s[q] == '-';
                plus = s[q] == '+';
                end = q + 3;
            }
            if (!end && q + 1 < n && s[q] == c1 && s[q + 1] == c2)
                end = q + 2;
            if (end) {
                if (minus)
                    while (end < n && is_ws(s[end]))
                        end++;
                else if (!plus && kind == 0 && end < n && s[end] == '\n')
                    end++;
                struct token *t = lex_push(lx, kind ? T_VAR_END : T_BLOCK_END, lx->line);
                if (!t)
                    return -1;
                lx->line = line_at(s, p, end, lx->line);
                lx->pos = end;
                return 0;
            }
        }
        char c = s[p];
        if (is_ws(c)) {
            lx->line += c == '\n';
            lx->pos++;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80) {
            size_t q = p;
            while (q < n && (isalnum((unsigned char)s[q]) || s[q] == '_' || (unsigned char)s[q] >= 0x80))
                q++;
            struct token *t = lex_push(lx, T_NAME, lx->line);
            if (!t)
                return -1;
            t->s = s + p;
            t->n = (uint32_t)(q - p);
            lx->pos = q;
            continue;
        }
        if (isdigit((unsigned char)c)) {
            size_t q = p;
            while (q < n && (isdigit((unsigned char)s[q]) || s[q] == '_'))
                q++;
            bool is_float = false;
            bool after_dot = p > 0 && s[p - 1] == '.';
            if (!after_dot && q + 1 < n && s[q] == '.' && isdigit((unsigned char)s[q + 1])) {
                is_float = true;
                q++;
                while (q < n && (isdigit((unsigned char)s[q]) || s[q] == '_'))
                    q++;
            }
            if (!after_dot && q < n && (s[q] == 'e' || s[q] == 'E')) {
                size_t e = q + 1;
                if (e < n && (s[e] == '+' || s[e] == '-'))
                    e++;
                if (e < n && isdigit((unsigned char)s[e])) {
                    is_float = true;
                    q = e;
                    while (q < n && isdigit((unsigned char)s[q]))
                        q++;
                }
            }
            char buf[64];
            size_t k = 0;
            for (size_t i = p; i < q && k + 1 < sizeof(buf); i++)
                if (s[i] != '_')
                    buf[k++] = s[i];
            buf[k] = 0;
            struct token *t = lex_push(lx, is_float ? T_FLOAT : T_INT, lx->line);
            if (!t)
                return -1;
            errno = 0;
            if (is_float)
                t->f = strtod(buf, NULL);
            else
                t->i = strtoll(buf, NULL, 10);
            if (errno || q - p >= sizeof(buf))
                return err_set(lx->err, lx->errlen, "template line %d: number out of range", lx->line);
            lx->pos = q;
            continue;
        }
        if (c == '\'' || c == '"') {
            size_t q = p + 1;
            while (q < n && s[q] != c) {
                if (s[q] == '\\' && q + 1 < n)
                    q++;
                q++;
            }
            if (q >= n)
                return err_set(lx->err, lx->errlen, "template line %d: unterminated string literal", lx->line);
            struct token *t = lex_push(lx, T_STRING, lx->line);
            if (!t || lex_string(lx, s + p, q + 1 - p, t) < 0)
                return -1;
            lx->line = line_at(s, p, q + 1, lx->line);
            lx->pos = q + 1;
            continue;
        }
        const char *op = NULL;
        for (int i = 0; OPS2[i]; i++)
            if (p + 1 < n && s[p] == OPS2[i][0] && s[p + 1] == OPS2[i][1])
                op = OPS2[i];
        char one[2] = {c, 0};
        if (!op && strchr(OPS1, c) && c)
            op = one;
        if (!op)
            return err_set(lx->err, lx->errlen, "template line %d: unexpected character '%c'", lx->line, c);
        size_t ol = strlen(op);
        if (ol == 1 && (c == '(' || c == '[' || c == '{')) {
            if (depth >= (int)sizeof(stack))
                return err_set(lx->err, lx->errlen, "template line %d: brackets nested too deeply", lx->line);
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (ol == 1 && (c == ')' || c == ']' || c == '}')) {
            if (!depth)
                return err_set(lx->err, lx->errlen, "template line %d: unexpected '%c'", lx->line, c);
            if (stack[depth - 1] != c)
                return err_set(lx->err, lx->errlen, "template line %d: unexpected '%c', expected '%c'", lx->line,
                               c, stack[depth - 1]);
            depth--;
        }
        struct token *t = lex_push(lx, T_OP, lx->line);
        if (!t)
            return -1;
        memcpy(t->op, op, ol);
        lx->pos = p + ol;
    }
}

/* {% raw %}...{% endraw %}: the text between is data. As in jinja2, the opening
 * tag may end with "-%}" (eats the whitespace after) but gets no trim_blocks
 * newline; "{%- endraw", lstrip_blocks and "endraw -%}"/"%}\n" apply as for any
 * block. Returns 1 when a raw block was consumed, 0 when the tag is not "raw". */
static int lex_raw(struct lexer *lx, size_t body, bool *line_starting)
{
    const char *s = lx->s;
    size_t n = lx->n, q = body;
    while (q < n && is_ws(s[q]))
        q++;
    if (q + 3 > n || memcmp(s + q, "raw", 3) != 0)
        return 0;
    q += 3;
    while (q < n && is_ws(s[q]))
        q++;
    size_t start;
    if (q + 2 < n && s[q] == '-' && s[q + 1] == '%' && s[q + 2] == '}') {
        start = q + 3;
        while (start < n && is_ws(s[start]))
            start++;
    } else if (q + 1 < n && s[q] == '%' && s[q + 1] == '}') {
        start = q + 2;
    } else {
        return 0;
    }
    int open_line = lx->line;
    for (size_t e = start; e + 1 < n; e++) {
        if (s[e] != '{' || s[e + 1] != '%')
            continue;
        size_t k = e + 2;
        char sign = k < n && (s[k] == '-' || s[k] == '+') ? s[k] : 0;
        k += sign != 0;
        while (k < n && is_ws(s[k]))
            k++;
        if (k + 6 > n || memcmp(s + k, "endraw", 6) != 0)
            continue;
        k += 6;
        while (k < n && is_ws(s[k]))
            k++;
        size_t end;
        if (k + 2 < n && (s[k] == '+' || s[k] == '-') && s[k + 1] == '%' && s[k + 2] == '}') {
            end = k + 3;
            if (s[k] == '-')
                while (end < n && is_ws(s[end]))
                    end++;
        } else if (k + 1 < n && s[k] == '%' && s[k + 1] == '}') {
            end = k + 2;
            if (end < n && s[end] == '\n')
                end++;
        } else {
            continue;
        }
        size_t tl = e - start;
        if (sign == '-') {
            tl = rstrip_len(s + start, tl);
        } else if (sign != '+') {
            size_t l_pos = tl;
            while (l_pos > 0 && s[start + l_pos - 1] != '\n')
                l_pos--;
            bool all_ws = l_pos < tl;
            for (size_t i = l_pos; i < tl; i++)
                all_ws = all_ws && is_ws(s[start + i]);
            if (all_ws && (l_pos > 0 || (start > 0 && s[start - 1] == '\n')))
                tl = l_pos;
        }
        lx->line = line_at(s, body, start, lx->line);
        if (emit_text(lx, s + start, tl, lx->line) < 0)
            return -1;
        lx->line = line_at(s, start, end, lx->line);
        lx->pos = end;
        *line_starting = end > 0 && s[end - 1] == '\n';
        return 1;
    }
    return err_set(lx->err, lx->errlen, "template line %d: '{%% raw %%}' is never closed (missing '{%% endraw %%}')",
                   open_line);
}

int tpl_lex(struct arena *a, const char *src, size_t len, struct token_list *out, char *err, size_t errlen)
{
    /* normalize newlines; drop one trailing newline (keep_trailing_newline=False) */
    char *s = arena_alloc(a, len + 1);
    if (!s)
        return err_set(err, errlen, "template: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else {
            s[n++] = src[i];
        }
    }
    if (n && s[n - 1] == '\n')
        n--;
    s[n] = 0;
    struct lexer lx = {.a = a, .s = s, .n = n, .pos = 0, .line = 1, .out = out, .err = err, .errlen = errlen};
    memset(out, 0, sizeof(*out));
    bool line_starting = true;
    while (lx.pos < n) {
        size_t p = lx.pos, q = p;
        int kind = -1; /* 0 block, 1 variable, 2 comment */
        for (; q + 1 < n; q++) {
            if (s[q] == '{' && (s[q + 1] == '%' || s[q + 1] == '{' || s[q + 1] == '#')) {
                kind = s[q + 1] == '%' ? 0 : s[q + 1] == '{' ? 1 : 2;
                break;
            }
        }
        if (kind < 0) {
            if (emit_text(&lx, s + p, n - p, lx.line) < 0)
                return -1;
            break;
        }
        char sign = q + 2 < n ? s[q + 2] : 0;
        size_t tl = q - p;
        if (sign == '-') {
            tl = rstrip_len(s + p, tl);
        } else if (sign != '+' && kind != 1) {
            size_t l_pos = tl;
            while (l_pos > 0 && s[p + l_pos - 1] != '\n')
                l_pos--;
            if (l_pos > 0 || line_starting) {
                bool all_ws = l_pos < tl;
                for (size_t i = l_pos; i < tl; i++)
                    if (!is_ws(s[p + i]))
                        all_ws = false;
                if (all_ws)
                    tl = l_pos;
            }
        }
        if (emit_text(&lx, s + p, tl, lx.line) < 0)
            return -1;
        lx.line = line_at(s, p, q, lx.line);
        int open_line = lx.line;
        size_t body = q + 2 + (sign == '-' || sign == '+');
        if (kind == 2) {
            /* comment: up to the first "+#}", "-#}" (eats whitespace after) or "#}" (eats one newline) */
            size_t e = body;
            while (e + 1 < n && !(s[e] == '#' && s[e + 1] == '}'))
                e++;
            if (e + 1 >= n)
                return err_set(err, errlen, "template line %d: unterminated comment (missing '#}')", open_line);
            size_t end = e + 2;
            if (e > body && s[e - 1] == '-') {
                while (end < n && is_ws(s[end]))
                    end++;
            } else if (!(e > body && s[e - 1] == '+') && end < n && s[end] == '\n') {
                end++;
            }
            lx.line = line_at(s, q, end, lx.line);
            lx.pos = end;
            line_starting = end > 0 && s[end - 1] == '\n';
            continue;
        }
        if (kind == 0) {
            int rc = lex_raw(&lx, body, &line_starting);
            if (rc < 0)
                return -1;
            if (rc > 0)
                continue;
        }
        struct token *t = lex_push(&lx, kind ? T_VAR_BEGIN : T_BLOCK_BEGIN, open_line);
        if (!t)
            return -1;
        lx.pos = body;
        if (lex_tag(&lx, kind, open_line) < 0)
            return -1;
        line_starting = lx.pos > 0 && s[lx.pos - 1] == '\n';
    }
    struct token *t = lex_push(&lx, T_EOF, lx.line);
    return t ? 0 : -1;
}
