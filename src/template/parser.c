/* template/parser.c — tokens → syntax tree (struct node), by recursive descent
 * with jinja2's grammar and precedence:
 *   condexpr: or ['if' or ['else' condexpr]]     or: and ('or' and)*
 *   and: not ('and' not)*    not: 'not' not | compare
 *   compare: add (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not' 'in') add)*
 *   add: concat (('+'|'-') concat)*    concat: mul ('~' mul)*
 *   mul: pow (('*'|'/'|'//'|'%') pow)*  pow: unary ('**' unary)*
 *   unary: ('-'|'+') unary | primary postfix* (('|' filter) | ('is' test) | call)*
 * Statements: if/elif/else, for (targets, `if` filter, else), set (name, tuple,
 * namespace attribute, block), macro, filter, generation (transformers'
 * AssistantTracker tag: renders its body), break, continue. Tags outside this
 * subset (include, extends, import, raw, call, do, with, ...) are parse errors.
 *
 * After parsing, a pass checks that every filter and test exists. As in jinja2,
 * one that is unknown is an error at parse time, except inside an {% if %} or an
 * inline if-expression (without a loop or macro in between), where it fails only
 * when it runs.
 */
#include "template/tpl_internal.h"

#include "core/log.h"

#include <string.h>

#define PARSE_MAX_DEPTH 200

struct parser {
    struct arena *a;
    const struct token *t;
    size_t pos, n;
    int depth;      /* expression / block nesting, bounded against stack overflow */
    int loops;      /* enclosing for-loops (break/continue are only valid inside one) */
    char *err;
    size_t errlen;
};

static const struct token *cur(struct parser *p) { return &p->t[p->pos]; }
static void adv(struct parser *p)
{
    if (p->pos + 1 < p->n)
        p->pos++;
}

static bool is_name(const struct token *t, const char *s)
{
    return t->type == T_NAME && t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}
static bool is_op(const struct token *t, const char *op) { return t->type == T_OP && strcmp(t->op, op) == 0; }

static const char *tok_desc(const struct token *t, char *buf, size_t n)
{
    switch (t->type) {
    case T_EOF: return "end of template";
    case T_TEXT: return "template text";
    case T_BLOCK_BEGIN: return "'{%'";
    case T_BLOCK_END: return "'%}'";
    case T_VAR_BEGIN: return "'{{'";
    case T_VAR_END: return "'}}'";
    case T_NAME: snprintf(buf, n, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s); return buf;
    case T_STRING: return "string literal";
    case T_INT: case T_FLOAT: return "number";
    default: snprintf(buf, n, "'%s'", t->op); return buf;
    }
}

static int perr_unexpected(struct parser *p, const char *what)
{
    char buf[64];
    return err_set(p->err, p->errlen, "template line %d: expected %s, got %s", cur(p)->line, what,
                   tok_desc(cur(p), buf, sizeof(buf)));
}

static struct node *mk(struct parser *p, int kind, int line)
{
    struct node *nd = arena_alloc(p->a, sizeof(*nd));
    if (!nd) {
        err_set(p->err, p->errlen, "template: out of memory");
        return NULL;
    }
    nd->kind = (uint8_t)kind;
    nd->line = line;
    nd->fid = -1;
    return nd;
}

static int push(struct parser *p, struct node_list *l, struct node *nd)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        struct node **v = arena_alloc(p->a, (size_t)cap * sizeof(*v));
        if (!v)
            return err_set(p->err, p->errlen, "template: out of memory");
        if (l->n)
            memcpy(v, l->v, (size_t)l->n * sizeof(*v));
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = nd;
    return 0;
}

static int push_name(struct parser *p, struct node *nd, const char *s, uint32_t n)
{
    const char **names = arena_alloc(p->a, (size_t)(nd->nnames + 1) * sizeof(*names));
    uint32_t *lens = arena_alloc(p->a, (size_t)(nd->nnames + 1) * sizeof(*lens));
    if (!names || !lens)
        return err_set(p->err, p->errlen, "template: out of memory");
    if (nd->nnames) {
        memcpy(names, nd->names, (size_t)nd->nnames * sizeof(*names));
        memcpy(lens, nd->name_lens, (size_t)nd->nnames * sizeof(*lens));
    }
    names[nd->nnames] = s;
    lens[nd->nnames] = n;
    nd->names = names;
    nd->name_lens = lens;
    nd->nnames++;
    return 0;
}

static int expect_op(struct parser *p, const char *op)
{
    if (!is_op(cur(p), op)) {
        char what[16];
        snprintf(what, sizeof(what), "'%s'", op);
        return perr_unexpected(p, what);
    }
    adv(p);
    return 0;
}

static struct node *parse_expr(struct parser *p, bool with_cond);
static struct node *parse_tuple(struct parser *p, bool with_cond);
static struct node *parse_unary(struct parser *p, bool with_filter);

static int enter(struct parser *p)
{
    if (++p->depth > PARSE_MAX_DEPTH)
        return err_set(p->err, p->errlen, "template line %d: nesting deeper than %d", cur(p)->line,
                       PARSE_MAX_DEPTH);
    return 0;
}

/* Call arguments after '(' : positional into nd->body, keywords into names/alt. */
static int parse_call_args(struct parser *p, struct node *nd)
{
    if (expect_op(p, "(") < 0)
        return -1;
    while (!is_op(cur(p), ")")) {
        if (nd->body.n + nd->alt.n > 0 && expect_op(p, ",") < 0)
            return -1;
        if (is_op(cur(p), ")"))
            break;
        if (is_op(cur(p), "*") || is_op(cur(p), "**"))
            return err_set(p->err, p->errlen, "template line %d: *args / **kwargs in calls are not supported",
                           cur(p)->line);
        if (cur(p)->type == T_NAME && p->pos + 1 < p->n && is_op(&p->t[p->pos + 1], "=")) {
            const struct token *k = cur(p);
            adv(p);
            adv(p);
            struct node *v = parse_expr(p, true);
            if (!v || push_name(p, nd, k->s, k->n) < 0 || push(p, &nd->alt, v) < 0)
                return -1;
        } else {
            if (nd->alt.n)
                return err_set(p->err, p->errlen, "template line %d: positional argument after keyword argument",
                               cur(p)->line);
            struct node *v = parse_expr(p, true);
            if (!v || push(p, &nd->body, v) < 0)
                return -1;
        }
    }
    adv(p);
    return 0;
}

static struct node *parse_primary(struct parser *p)
{
    const struct token *t = cur(p);
    struct node *nd;
    if (t->type == T_NAME) {
        adv(p);
        nd = mk(p, E_CONST, t->line);
        if (!nd)
            return NULL;
        if (is_name(t, "true") || is_name(t, "True"))
            nd->cval = v_bool(true);
        else if (is_name(t, "false") || is_name(t, "False"))
            nd->cval = v_bool(false);
        else if (is_name(t, "none") || is_name(t, "None"))
            nd->cval = v_none();
        else {
            nd->kind = E_NAME;
            nd->name = t->s;
            nd->name_len = t->n;
        }
        return nd;
    }
    if (t->type == T_STRING) {
        /* adjacent literals concatenate */
        size_t total = 0, k = p->pos;
        while (k < p->n && p->t[k].type == T_STRING)
            total += p->t[k++].n;
        char *s = arena_alloc(p->a, total + 1);
        if (!s || !(nd = mk(p, E_CONST, t->line)))
            return NULL;
        size_t off = 0;
        while (cur(p)->type == T_STRING) {
            memcpy(s + off, cur(p)->s, cur(p)->n);
            off += cur(p)->n;
            adv(p);
        }
        nd->cval = v_str(s, total);
        return nd;
    }
    if (t->type == T_INT || t->type == T_FLOAT) {
        adv(p);
        if (!(nd = mk(p, E_CONST, t->line)))
            return NULL;
        nd->cval = t->type == T_INT ? v_int(t->i) : v_float(t->f);
        return nd;
    }
    if (is_op(t, "(")) {
        adv(p);
        if (is_op(cur(p), ")")) { /* empty tuple */
            adv(p);
            return mk(p, E_TUPLE, t->line);
        }
        nd = parse_tuple(p, true);
        if (!nd || expect_op(p, ")") < 0)
            return NULL;
        return nd;
    }
    if (is_op(t, "[") || is_op(t, "{")) {
        bool dict = is_op(t, "{");
        adv(p);
        if (!(nd = mk(p, dict ? E_DICT : E_LIST, t->line)))
            return NULL;
        const char *close = dict ? "}" : "]";
        while (!is_op(cur(p), close)) {
            if (nd->body.n && expect_op(p, ",") < 0)
                return NULL;
            if (is_op(cur(p), close))
                break;
            struct node *k = parse_expr(p, true);
            if (!k || push(p, &nd->body, k) < 0)
                return NULL;
            if (dict) {
                struct node *v;
                if (expect_op(p, ":") < 0 || !(v = parse_expr(p, true)) || push(p, &nd->alt, v) < 0)
                    return NULL;
            }
        }
        adv(p);
        return nd;
    }
    perr_unexpected(p, "an expression");
    return NULL;
}

static struct node *parse_subscript(struct parser *p, struct node *obj)
{
    const struct token *t = cur(p);
    if (is_op(t, ".")) {
        adv(p);
        const struct token *k = cur(p);
        struct node *nd;
        if (k->type == T_NAME) {
            if (!(nd = mk(p, E_ATTR, k->line)))
                return NULL;
            nd->a = obj;
            nd->name = k->s;
            nd->name_len = k->n;
        } else if (k->type == T_INT) {
            struct node *idx = mk(p, E_CONST, k->line);
            if (!idx || !(nd = mk(p, E_ITEM, k->line)))
                return NULL;
            idx->cval = v_int(k->i);
            nd->a = obj;
            nd->b = idx;
        } else {
            perr_unexpected(p, "an attribute name");
            return NULL;
        }
        adv(p);
        return nd;
    }
    /* '[' : index, slice or tuple key */
    adv(p);
    struct node *parts[3] = {NULL, NULL, NULL};
    int colons = 0;
    bool any = false;
    while (!is_op(cur(p), "]")) {
        if (is_op(cur(p), ":")) {
            if (++colons > 2) {
                perr_unexpected(p, "']'");
                return NULL;
            }
            adv(p);
            continue;
        }
        if (parts[colons]) {
            perr_unexpected(p, "']'");
            return NULL;
        }
        parts[colons] = colons ? parse_expr(p, true) : parse_tuple(p, true);
        if (!parts[colons])
            return NULL;
        any = true;
    }
    adv(p);
    struct node *nd;
    if (colons == 0) {
        if (!any) {
            err_set(p->err, p->errlen, "template line %d: empty subscript", t->line);
            return NULL;
        }
        if (!(nd = mk(p, E_ITEM, t->line)))
            return NULL;
        nd->a = obj;
        nd->b = parts[0];
        return nd;
    }
    if (!(nd = mk(p, E_SLICE, t->line)))
        return NULL;
    nd->a = obj;
    nd->b = parts[0];
    nd->c = parts[1];
    if (parts[2] && push(p, &nd->body, parts[2]) < 0)
        return NULL;
    return nd;
}

static struct node *parse_filter_or_test(struct parser *p, struct node *obj, bool test)
{
    const struct token *t = cur(p);
    struct node *nd = mk(p, test ? E_TEST : E_FILTER, t->line);
    if (!nd)
        return NULL;
    adv(p);
    nd->a = obj;
    if (test && is_name(cur(p), "not")) {
        nd->op = 1;
        adv(p);
    }
    const struct token *k = cur(p);
    if (k->type != T_NAME) {
        perr_unexpected(p, test ? "a test name" : "a filter name");
        return NULL;
    }
    /* `is none`/`is true`/`is false` arrive as names too */
    nd->name = k->s;
    nd->name_len = k->n;
    adv(p);
    nd->fid = test ? test_lookup(nd->name, nd->name_len) : filter_lookup(nd->name, nd->name_len);
    if (is_op(cur(p), "(")) {
        if (parse_call_args(p, nd) < 0)
            return NULL;
    } else if (test) {
        const struct token *c = cur(p);
        bool arg = c->type == T_NAME || c->type == T_STRING || c->type == T_INT || c->type == T_FLOAT ||
                   is_op(c, "[") || is_op(c, "{");
        if (is_name(c, "else") || is_name(c, "or") || is_name(c, "and") || is_name(c, "is") ||
            is_name(c, "if") || is_name(c, "in") || is_name(c, "not"))
            arg = false;
        if (arg) {
            struct node *v = parse_primary(p);
            while (v && (is_op(cur(p), ".") || is_op(cur(p), "[")))
                v = parse_subscript(p, v);
            if (!v || push(p, &nd->body, v) < 0)
                return NULL;
        }
    }
    return nd;
}

static struct node *parse_postfix(struct parser *p, struct node *nd, bool with_filter)
{
    for (;;) {
        if (!nd)
            return NULL;
        const struct token *t = cur(p);
        if (is_op(t, ".") || is_op(t, "[")) {
            nd = parse_subscript(p, nd);
        } else if (is_op(t, "(")) {
            struct node *c = mk(p, E_CALL, t->line);
            if (!c)
                return NULL;
            c->a = nd;
            if (parse_call_args(p, c) < 0)
                return NULL;
            nd = c;
        } else if (with_filter && is_op(t, "|")) {
            nd = parse_filter_or_test(p, nd, false);
        } else if (with_filter && is_name(t, "is")) {
            nd = parse_filter_or_test(p, nd, true);
        } else {
            return nd;
        }
    }
}

static struct node *parse_unary(struct parser *p, bool with_filter)
{
    const struct token *t = cur(p);
    if (enter(p) < 0)
        return NULL;
    struct node *nd;
    if (is_op(t, "-") || is_op(t, "+")) {
        adv(p);
        if (!(nd = mk(p, is_op(t, "-") ? E_NEG : E_POS, t->line)) || !(nd->a = parse_unary(p, false)))
            return NULL;
    } else {
        nd = parse_primary(p);
    }
    nd = parse_postfix(p, nd, with_filter);
    p->depth--;
    return nd;
}

static struct node *mk_bin(struct parser *p, int kind, int op, struct node *a, struct node *b, int line)
{
    struct node *nd = mk(p, kind, line);
    if (!nd)
        return NULL;
    nd->op = (uint8_t)op;
    nd->a = a;
    nd->b = b;
    return nd;
}

static struct node *parse_pow(struct parser *p)
{
    struct node *l = parse_unary(p, true);
    while (l && is_op(cur(p), "**")) {
        int line = cur(p)->line;
        adv(p);
        struct node *r = parse_unary(p, true);
        l = r ? mk_bin(p, E_BIN, OP_POW, l, r, line) : NULL;
    }
    return l;
}

static struct node *parse_mul(struct parser *p)
{
    struct node *l = parse_pow(p);
    for (;;) {
        const struct token *t = cur(p);
        int op = is_op(t, "*") ? OP_MUL : is_op(t, "/") ? OP_DIV : is_op(t, "//") ? OP_FLOORDIV
               : is_op(t, "%") ? OP_MOD : -1;
        if (!l || op < 0)
            return l;
        adv(p);
        struct node *r = parse_pow(p);
        l = r ? mk_bin(p, E_BIN, op, l, r, t->line) : NULL;
    }
}

static struct node *parse_concat(struct parser *p)
{
    struct node *l = parse_mul(p);
    while (l && is_op(cur(p), "~")) {
        int line = cur(p)->line;
        adv(p);
        struct node *r = parse_mul(p);
        l = r ? mk_bin(p, E_BIN, OP_CONCAT, l, r, line) : NULL;
    }
    return l;
}

static struct node *parse_add(struct parser *p)
{
    struct node *l = parse_concat(p);
    for (;;) {
        const struct token *t = cur(p);
        int op = is_op(t, "+") ? OP_ADD : is_op(t, "-") ? OP_SUB : -1;
        if (!l || op < 0)
            return l;
        adv(p);
        struct node *r = parse_concat(p);
        l = r ? mk_bin(p, E_BIN, op, l, r, t->line) : NULL;
    }
}

static int cmp_op(struct parser *p)
{
    const struct token *t = cur(p);
    if (t->type == T_OP) {
        static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
        for (int i = 0; i < 6; i++)
            if (strcmp(t->op, ops[i]) == 0) {
                adv(p);
                return i;
            }
        return -1;
    }
    if (is_name(t, "in")) {
        adv(p);
        return CMP_IN;
    }
    if (is_name(t, "not") && p->pos + 1 < p->n && is_name(&p->t[p->pos + 1], "in")) {
        adv(p);
        adv(p);
        return CMP_NOTIN;
    }
    return -1;
}

static struct node *parse_compare(struct parser *p)
{
    int line = cur(p)->line;
    struct node *l = parse_add(p);
    if (!l)
        return NULL;
    struct node *nd = NULL;
    int op;
    while ((op = cmp_op(p)) >= 0) {
        if (!nd) {
            if (!(nd = mk(p, E_COMPARE, line)))
                return NULL;
            nd->a = l;
        }
        struct node *r = parse_add(p);
        uint8_t *ops = arena_alloc(p->a, (size_t)nd->body.n + 1);
        if (!r || !ops)
            return NULL;
        if (nd->body.n)
            memcpy(ops, nd->cmp_ops, (size_t)nd->body.n);
        ops[nd->body.n] = (uint8_t)op;
        nd->cmp_ops = ops;
        if (push(p, &nd->body, r) < 0)
            return NULL;
    }
    return nd ? nd : l;
}

static struct node *parse_not(struct parser *p)
{
    if (is_name(cur(p), "not")) {
        int line = cur(p)->line;
        adv(p);
        if (enter(p) < 0)
            return NULL;
        struct node *a = parse_not(p);
        p->depth--;
        return a ? mk_bin(p, E_NOT, 0, a, NULL, line) : NULL;
    }
    return parse_compare(p);
}

static struct node *parse_and(struct parser *p)
{
    struct node *l = parse_not(p);
    while (l && is_name(cur(p), "and")) {
        int line = cur(p)->line;
        adv(p);
        struct node *r = parse_not(p);
        l = r ? mk_bin(p, E_AND, 0, l, r, line) : NULL;
    }
    return l;
}

static struct node *parse_or(struct parser *p)
{
    struct node *l = parse_and(p);
    while (l && is_name(cur(p), "or")) {
        int line = cur(p)->line;
        adv(p);
        struct node *r = parse_and(p);
        l = r ? mk_bin(p, E_OR, 0, l, r, line) : NULL;
    }
    return l;
}

static struct node *parse_expr(struct parser *p, bool with_cond)
{
    if (enter(p) < 0)
        return NULL;
    struct node *l = parse_or(p);
    while (with_cond && l && is_name(cur(p), "if")) {
        struct node *nd = mk(p, E_COND, cur(p)->line);
        adv(p);
        if (!nd || !(nd->a = parse_or(p)))
            return NULL;
        nd->b = l;
        if (is_name(cur(p), "else")) {
            adv(p);
            if (!(nd->c = parse_expr(p, true)))
                return NULL;
        }
        l = nd;
    }
    p->depth--;
    return l;
}

static bool tuple_end(struct parser *p)
{
    const struct token *t = cur(p);
    return t->type == T_VAR_END || t->type == T_BLOCK_END || t->type == T_EOF || is_op(t, ")") ||
           is_op(t, "]") || is_op(t, ":") || (t->type == T_NAME && (is_name(t, "if") || is_name(t, "in")));
}

static struct node *parse_tuple(struct parser *p, bool with_cond)
{
    int line = cur(p)->line;
    struct node *first = parse_expr(p, with_cond);
    if (!first || !is_op(cur(p), ","))
        return first;
    struct node *nd = mk(p, E_TUPLE, line);
    if (!nd || push(p, &nd->body, first) < 0)
        return NULL;
    while (is_op(cur(p), ",")) {
        adv(p);
        if (tuple_end(p))
            break;
        struct node *e = parse_expr(p, with_cond);
        if (!e || push(p, &nd->body, e) < 0)
            return NULL;
    }
    return nd;
}

/* ---- statements */

static int parse_body(struct parser *p, struct node_list *out, const char *const *ends, int open_line,
                      const char *opener, int *which);

static int expect_block_end(struct parser *p)
{
    if (cur(p)->type != T_BLOCK_END)
        return perr_unexpected(p, "'%}'");
    adv(p);
    return 0;
}

/* for/set targets: name, or names separated by commas, optionally in parentheses. */
static int parse_targets(struct parser *p, struct node *nd)
{
    bool paren = is_op(cur(p), "(");
    if (paren)
        adv(p);
    for (;;) {
        if (cur(p)->type != T_NAME)
            return perr_unexpected(p, "a variable name");
        if (push_name(p, nd, cur(p)->s, cur(p)->n) < 0)
            return -1;
        adv(p);
        if (!is_op(cur(p), ","))
            break;
        adv(p);
        if (paren && is_op(cur(p), ")"))
            break;
    }
    if (paren && expect_op(p, ")") < 0)
        return -1;
    return 0;
}

static struct node *parse_if(struct parser *p, int line)
{
    struct node *nd = mk(p, N_IF, line);
    if (!nd || !(nd->a = parse_tuple(p, true)) || expect_block_end(p) < 0)
        return NULL;
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    int which;
    if (parse_body(p, &nd->body, ends, line, "if", &which) < 0)
        return NULL;
    if (which == 0) { /* elif: a nested if in the else branch */
        struct node *el = parse_if(p, p->t[p->pos - 1].line);
        if (!el || push(p, &nd->alt, el) < 0)
            return NULL;
        return nd;
    }
    if (expect_block_end(p) < 0)
        return NULL;
    if (which == 1) {
        static const char *const ends2[] = {"endif", NULL};
        if (parse_body(p, &nd->alt, ends2, line, "if", &which) < 0 || expect_block_end(p) < 0)
            return NULL;
    }
    return nd;
}

static struct node *parse_for(struct parser *p, int line)
{
    struct node *nd = mk(p, N_FOR, line);
    if (!nd || parse_targets(p, nd) < 0)
        return NULL;
    if (!is_name(cur(p), "in")) {
        perr_unexpected(p, "'in'");
        return NULL;
    }
    adv(p);
    if (!(nd->a = parse_tuple(p, false)))
        return NULL;
    if (is_name(cur(p), "if")) {
        adv(p);
        if (!(nd->b = parse_expr(p, true)))
            return NULL;
    }
    if (is_name(cur(p), "recursive")) {
        err_set(p->err, p->errlen, "template line %d: recursive loops are not supported", line);
        return NULL;
    }
    if (expect_block_end(p) < 0)
        return NULL;
    static const char *const ends[] = {"else", "endfor", NULL};
    int which;
    p->loops++;
    if (parse_body(p, &nd->body, ends, line, "for", &which) < 0 || expect_block_end(p) < 0)
        return NULL;
    p->loops--;
    if (which == 0) {
        static const char *const ends2[] = {"endfor", NULL};
        if (parse_body(p, &nd->alt, ends2, line, "for", &which) < 0 || expect_block_end(p) < 0)
            return NULL;
    }
    return nd;
}

static struct node *parse_set(struct parser *p, int line)
{
    const struct token *t = cur(p);
    if (t->type == T_NAME && p->pos + 2 < p->n && is_op(&p->t[p->pos + 1], ".")) {
        /* namespace attribute: {% set ns.attr = value %} */
        struct node *nd = mk(p, N_SET_NS, line);
        if (!nd || push_name(p, nd, t->s, t->n) < 0)
            return NULL;
        adv(p);
        adv(p);
        if (cur(p)->type != T_NAME) {
            perr_unexpected(p, "an attribute name");
            return NULL;
        }
        nd->name = cur(p)->s;
        nd->name_len = cur(p)->n;
        adv(p);
        if (expect_op(p, "=") < 0 || !(nd->a = parse_tuple(p, true)) || expect_block_end(p) < 0)
            return NULL;
        return nd;
    }
    struct node *nd = mk(p, N_SET, line);
    if (!nd || parse_targets(p, nd) < 0)
        return NULL;
    if (is_op(cur(p), "=")) {
        adv(p);
        if (!(nd->a = parse_tuple(p, true)) || expect_block_end(p) < 0)
            return NULL;
        return nd;
    }
    /* block set, optionally filtered: {% set x | trim %}...{% endset %} */
    if (nd->nnames != 1) {
        perr_unexpected(p, "'='");
        return NULL;
    }
    nd->kind = N_SET_BLOCK;
    struct node *chain = NULL;
    while (is_op(cur(p), "|")) {
        struct node *f = parse_filter_or_test(p, chain, false);
        if (!f)
            return NULL;
        chain = f;
    }
    nd->a = chain;
    if (expect_block_end(p) < 0)
        return NULL;
    static const char *const ends[] = {"endset", NULL};
    int which;
    int loops = p->loops;
    p->loops = 0;
    if (parse_body(p, &nd->body, ends, line, "set", &which) < 0 || expect_block_end(p) < 0)
        return NULL;
    p->loops = loops;
    return nd;
}

static struct node *parse_macro(struct parser *p, int line)
{
    struct node *nd = mk(p, N_MACRO, line);
    if (!nd)
        return NULL;
    if (cur(p)->type != T_NAME) {
        perr_unexpected(p, "a macro name");
        return NULL;
    }
    nd->name = cur(p)->s;
    nd->name_len = cur(p)->n;
    adv(p);
    if (expect_op(p, "(") < 0)
        return NULL;
    while (!is_op(cur(p), ")")) {
        if (nd->nnames && expect_op(p, ",") < 0)
            return NULL;
        if (cur(p)->type != T_NAME) {
            perr_unexpected(p, "a parameter name");
            return NULL;
        }
        if (push_name(p, nd, cur(p)->s, cur(p)->n) < 0)
            return NULL;
        adv(p);
        struct node *def = NULL;
        if (is_op(cur(p), "=")) {
            adv(p);
            if (!(def = parse_expr(p, true)))
                return NULL;
        } else if (nd->alt.n && nd->alt.v[nd->alt.n - 1]) {
            err_set(p->err, p->errlen, "template line %d: parameter without a default after one with a default",
                    line);
            return NULL;
        }
        if (push(p, &nd->alt, def) < 0)
            return NULL;
    }
    adv(p);
    if (expect_block_end(p) < 0)
        return NULL;
    static const char *const ends[] = {"endmacro", NULL};
    int which;
    int loops = p->loops;
    p->loops = 0;
    if (parse_body(p, &nd->body, ends, line, "macro", &which) < 0)
        return NULL;
    p->loops = loops;
    if (cur(p)->type == T_NAME) /* {% endmacro name %} */
        adv(p);
    if (expect_block_end(p) < 0)
        return NULL;
    return nd;
}

static struct node *parse_statement(struct parser *p)
{
    const struct token *t = cur(p); /* the tag name */
    int line = t->line;
    if (t->type != T_NAME) {
        perr_unexpected(p, "a tag name");
        return NULL;
    }
    adv(p);
    if (is_name(t, "if"))
        return parse_if(p, line);
    if (is_name(t, "for"))
        return parse_for(p, line);
    if (is_name(t, "set"))
        return parse_set(p, line);
    if (is_name(t, "macro"))
        return parse_macro(p, line);
    if (is_name(t, "break") || is_name(t, "continue")) {
        if (!p->loops) {
            err_set(p->err, p->errlen, "template line %d: '%.*s' outside a loop", line, (int)t->n, t->s);
            return NULL;
        }
        struct node *nd = mk(p, is_name(t, "break") ? N_BREAK : N_CONTINUE, line);
        return nd && expect_block_end(p) == 0 ? nd : NULL;
    }
    if (is_name(t, "generation") || is_name(t, "filter")) {
        bool gen = is_name(t, "generation");
        struct node *nd = mk(p, gen ? N_GENERATION : N_FILTER_BLOCK, line);
        if (!nd)
            return NULL;
        if (!gen) {
            p->pos--; /* parse "name(args)|name2" as a filter chain on nothing */
            struct node *chain = NULL;
            do {
                struct node *f = parse_filter_or_test(p, chain, false);
                if (!f)
                    return NULL;
                chain = f;
            } while (is_op(cur(p), "|"));
            nd->a = chain;
        }
        if (expect_block_end(p) < 0)
            return NULL;
        const char *const ends_gen[] = {"endgeneration", NULL}, *const ends_filter[] = {"endfilter", NULL};
        int which;
        int loops = p->loops;
        p->loops = 0;
        if (parse_body(p, &nd->body, gen ? ends_gen : ends_filter, line, gen ? "generation" : "filter", &which) < 0 ||
            expect_block_end(p) < 0)
            return NULL;
        p->loops = loops;
        return nd;
    }
    err_set(p->err, p->errlen, "template line %d: unknown or unsupported tag '%.*s'", line,
            (int)(t->n > 40 ? 40 : t->n), t->s);
    return NULL;
}

/* Statements up to one of `ends` (NULL: up to the end of the template). On
 * return the parser stands after the end tag's name; *which is its index. */
static int parse_body(struct parser *p, struct node_list *out, const char *const *ends, int open_line,
                      const char *opener, int *which)
{
    if (enter(p) < 0)
        return -1;
    for (;;) {
        const struct token *t = cur(p);
        if (t->type == T_EOF) {
            if (ends)
                return err_set(p->err, p->errlen,
                               "template line %d: '%s' opened here is never closed (missing '{%% end%s %%}')",
                               open_line, opener, opener);
            p->depth--;
            return 0;
        }
        if (t->type == T_TEXT) {
            struct node *nd = mk(p, N_TEXT, t->line);
            if (!nd || push(p, out, nd) < 0)
                return -1;
            nd->cval = v_str(t->s, t->n);
            adv(p);
            continue;
        }
        if (t->type == T_VAR_BEGIN) {
            adv(p);
            struct node *nd = mk(p, N_OUTPUT, t->line);
            if (!nd || !(nd->a = parse_tuple(p, true)))
                return -1;
            if (cur(p)->type != T_VAR_END)
                return perr_unexpected(p, "'}}'");
            adv(p);
            if (push(p, out, nd) < 0)
                return -1;
            continue;
        }
        if (t->type != T_BLOCK_BEGIN)
            return perr_unexpected(p, "template text or a tag");
        adv(p);
        const struct token *name = cur(p);
        if (ends && name->type == T_NAME)
            for (int i = 0; ends[i]; i++)
                if (is_name(name, ends[i])) {
                    adv(p);
                    *which = i;
                    p->depth--;
                    return 0;
                }
        if (name->type == T_NAME && name->n >= 3 &&
            (memcmp(name->s, "end", 3) == 0 || is_name(name, "else") || is_name(name, "elif")))
            return err_set(p->err, p->errlen, "template line %d: unexpected '{%% %.*s %%}'%s%s%s", name->line,
                           (int)(name->n > 40 ? 40 : name->n), name->s, ends ? " (the innermost open block is '" : "",
                           ends ? opener : "", ends ? "')" : "");
        struct node *nd = parse_statement(p);
        if (!nd || push(p, out, nd) < 0)
            return -1;
    }
}

/* Unknown filters/tests: an error unless inside an if (see the file comment). */
static int check_names(struct parser *p, const struct node *nd, bool soft);

static int check_list(struct parser *p, const struct node_list *l, bool soft)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] && check_names(p, l->v[i], soft) < 0)
            return -1;
    return 0;
}

static int check_names(struct parser *p, const struct node *nd, bool soft)
{
    bool inner_soft = soft;
    switch (nd->kind) {
    case N_IF: case E_COND: inner_soft = true; soft = true; break;
    case N_FOR:
        if (nd->a && check_names(p, nd->a, soft) < 0)
            return -1;
        if (nd->b && check_names(p, nd->b, false) < 0)
            return -1;
        return check_list(p, &nd->body, false) < 0 ? -1 : check_list(p, &nd->alt, false);
    case N_MACRO: case N_GENERATION: case N_FILTER_BLOCK: case N_SET_BLOCK:
        inner_soft = false;
        soft = false;
        break;
    case E_FILTER: case E_TEST:
        if (nd->fid < 0 && !soft)
            return err_set(p->err, p->errlen, "template line %d: no %s named '%.*s'", nd->line,
                           nd->kind == E_FILTER ? "filter" : "test", (int)(nd->name_len > 40 ? 40 : nd->name_len),
                           nd->name);
        break;
    default: break;
    }
    if (nd->a && check_names(p, nd->a, soft) < 0)
        return -1;
    if (nd->b && check_names(p, nd->b, soft) < 0)
        return -1;
    if (nd->c && check_names(p, nd->c, soft) < 0)
        return -1;
    if (check_list(p, &nd->body, inner_soft) < 0)
        return -1;
    return check_list(p, &nd->alt, inner_soft);
}

int tpl_parse(struct arena *a, const struct token_list *toks, struct node_list *root, char *err, size_t errlen)
{
    struct parser p = {.a = a, .t = toks->v, .pos = 0, .n = toks->n, .err = err, .errlen = errlen};
    memset(root, 0, sizeof(*root));
    int which;
    if (parse_body(&p, root, NULL, 1, "", &which) < 0)
        return -1;
    return check_list(&p, root, false);
}
