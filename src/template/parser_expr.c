/* template/parser_expr.c — tokens → syntax tree (struct node), by recursive descent
 * with jinja2's grammar and precedence:
 *   condexpr: or ['if' or ['else' condexpr]]     or: and ('or' and)*
 *   and: not ('and' not)*    not: 'not' not | compare
 *   compare: add (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not' 'in') add)*
 *   add: concat (('+'|'-') concat)*    concat: mul ('~' mul)*
 *   mul: pow (('*'|'/'|'//'|'%') pow)*  pow: unary ('**' unary)*
 *   unary: ('-'|'+') unary | primary postfix* (('|' filter) | ('is' test) | call)*
 * Statements (if/elif/else, for, set, macro, filter, generation, break,
 * continue) are in parser_stmt.c. Every level counts nesting depth, so deeply
 * nested input is refused instead of exhausting the C stack.
 */
#include "template/parser.h"

#include "core/log.h"

#include <string.h>

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

int parser_unexpected(struct parser *p, const char *what)
{
    char buf[64];
    return err_set(p->err, p->errlen, "template line %d: expected %s, got %s", cur(p)->line, what,
                   tok_desc(cur(p), buf, sizeof(buf)));
}

struct node *parser_node(struct parser *p, int kind, int line)
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

int parser_push(struct parser *p, struct node_list *l, struct node *nd)
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

int parser_push_name(struct parser *p, struct node *nd, const char *s, uint32_t n)
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

int parser_expect_op(struct parser *p, const char *op)
{
    if (!is_op(cur(p), op)) {
        char what[16];
        snprintf(what, sizeof(what), "'%s'", op);
        return parser_unexpected(p, what);
    }
    adv(p);
    return 0;
}

static struct node *parse_unary(struct parser *p, bool with_filter);

int parser_enter(struct parser *p)
{
    if (++p->depth > PARSE_MAX_DEPTH)
        return err_set(p->err, p->errlen, "template line %d: nesting deeper than %d", cur(p)->line,
                       PARSE_MAX_DEPTH);
    return 0;
}

/* Call arguments after '(' : positional into nd->body, keywords into names/alt. */
static int parse_call_args(struct parser *p, struct node *nd)
{
    if (parser_expect_op(p, "(") < 0)
        return -1;
    while (!is_op(cur(p), ")")) {
        if (nd->body.n + nd->alt.n > 0 && parser_expect_op(p, ",") < 0)
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
            struct node *v = parser_expr(p, true);
            if (!v || parser_push_name(p, nd, k->s, k->n) < 0 || parser_push(p, &nd->alt, v) < 0)
                return -1;
        } else {
            if (nd->alt.n)
                return err_set(p->err, p->errlen, "template line %d: positional argument after keyword argument",
                               cur(p)->line);
            struct node *v = parser_expr(p, true);
            if (!v || parser_push(p, &nd->body, v) < 0)
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
        nd = parser_node(p, E_CONST, t->line);
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
        if (!s || !(nd = parser_node(p, E_CONST, t->line)))
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
        if (!(nd = parser_node(p, E_CONST, t->line)))
            return NULL;
        nd->cval = t->type == T_INT ? v_int(t->i) : v_float(t->f);
        return nd;
    }
    if (is_op(t, "(")) {
        adv(p);
        if (is_op(cur(p), ")")) { /* empty tuple */
            adv(p);
            return parser_node(p, E_TUPLE, t->line);
        }
        nd = parser_tuple(p, true);
        if (!nd || parser_expect_op(p, ")") < 0)
            return NULL;
        return nd;
    }
    if (is_op(t, "[") || is_op(t, "{")) {
        bool dict = is_op(t, "{");
        adv(p);
        if (!(nd = parser_node(p, dict ? E_DICT : E_LIST, t->line)))
            return NULL;
        const char *close = dict ? "}" : "]";
        while (!is_op(cur(p), close)) {
            if (nd->body.n && parser_expect_op(p, ",") < 0)
                return NULL;
            if (is_op(cur(p), close))
                break;
            struct node *k = parser_expr(p, true);
            if (!k || parser_push(p, &nd->body, k) < 0)
                return NULL;
            if (dict) {
                struct node *v;
                if (parser_expect_op(p, ":") < 0 || !(v = parser_expr(p, true)) || parser_push(p, &nd->alt, v) < 0)
                    return NULL;
            }
        }
        adv(p);
        return nd;
    }
    parser_unexpected(p, "an expression");
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
            if (!(nd = parser_node(p, E_ATTR, k->line)))
                return NULL;
            nd->a = obj;
            nd->name = k->s;
            nd->name_len = k->n;
        } else if (k->type == T_INT) {
            struct node *idx = parser_node(p, E_CONST, k->line);
            if (!idx || !(nd = parser_node(p, E_ITEM, k->line)))
                return NULL;
            idx->cval = v_int(k->i);
            nd->a = obj;
            nd->b = idx;
        } else {
            parser_unexpected(p, "an attribute name");
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
                parser_unexpected(p, "']'");
                return NULL;
            }
            adv(p);
            continue;
        }
        if (parts[colons]) {
            parser_unexpected(p, "']'");
            return NULL;
        }
        parts[colons] = colons ? parser_expr(p, true) : parser_tuple(p, true);
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
        if (!(nd = parser_node(p, E_ITEM, t->line)))
            return NULL;
        nd->a = obj;
        nd->b = parts[0];
        return nd;
    }
    if (!(nd = parser_node(p, E_SLICE, t->line)))
        return NULL;
    nd->a = obj;
    nd->b = parts[0];
    nd->c = parts[1];
    if (parts[2] && parser_push(p, &nd->body, parts[2]) < 0)
        return NULL;
    return nd;
}

struct node *parser_filter_or_test(struct parser *p, struct node *obj, bool test)
{
    const struct token *t = cur(p);
    struct node *nd = parser_node(p, test ? E_TEST : E_FILTER, t->line);
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
        parser_unexpected(p, test ? "a test name" : "a filter name");
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
            if (!v || parser_push(p, &nd->body, v) < 0)
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
            struct node *c = parser_node(p, E_CALL, t->line);
            if (!c)
                return NULL;
            c->a = nd;
            if (parse_call_args(p, c) < 0)
                return NULL;
            nd = c;
        } else if (with_filter && is_op(t, "|")) {
            nd = parser_filter_or_test(p, nd, false);
        } else if (with_filter && is_name(t, "is")) {
            nd = parser_filter_or_test(p, nd, true);
        } else {
            return nd;
        }
    }
}

static struct node *parse_unary(struct parser *p, bool with_filter)
{
    const struct token *t = cur(p);
    if (parser_enter(p) < 0)
        return NULL;
    struct node *nd;
    if (is_op(t, "-") || is_op(t, "+")) {
        adv(p);
        if (!(nd = parser_node(p, is_op(t, "-") ? E_NEG : E_POS, t->line)) || !(nd->a = parse_unary(p, false)))
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
    struct node *nd = parser_node(p, kind, line);
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
            if (!(nd = parser_node(p, E_COMPARE, line)))
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
        if (parser_push(p, &nd->body, r) < 0)
            return NULL;
    }
    return nd ? nd : l;
}

static struct node *parse_not(struct parser *p)
{
    if (is_name(cur(p), "not")) {
        int line = cur(p)->line;
        adv(p);
        if (parser_enter(p) < 0)
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

struct node *parser_expr(struct parser *p, bool with_cond)
{
    if (parser_enter(p) < 0)
        return NULL;
    struct node *l = parse_or(p);
    while (with_cond && l && is_name(cur(p), "if")) {
        struct node *nd = parser_node(p, E_COND, cur(p)->line);
        adv(p);
        if (!nd || !(nd->a = parse_or(p)))
            return NULL;
        nd->b = l;
        if (is_name(cur(p), "else")) {
            adv(p);
            if (!(nd->c = parser_expr(p, true)))
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

struct node *parser_tuple(struct parser *p, bool with_cond)
{
    int line = cur(p)->line;
    struct node *first = parser_expr(p, with_cond);
    if (!first || !is_op(cur(p), ","))
        return first;
    struct node *nd = parser_node(p, E_TUPLE, line);
    if (!nd || parser_push(p, &nd->body, first) < 0)
        return NULL;
    while (is_op(cur(p), ",")) {
        adv(p);
        if (tuple_end(p))
            break;
        struct node *e = parser_expr(p, with_cond);
        if (!e || parser_push(p, &nd->body, e) < 0)
            return NULL;
    }
    return nd;
}

