/* template/parser_stmt.c — statements of the template language (see
 * parser_expr.c for the grammar), the body/end-tag structure with errors that
 * name the line where an unclosed block was opened, and the check of filter and
 * test names after parsing (jinja2's rule: unknown names are errors, except inside
 * an if or inline if-expression, where they fail only when run). Tags outside the
 * subset (include, extends, import, call, do, with, ...) are errors; raw
 * blocks are turned into text by the lexer.
 */
#include "template/parser.h"

#include "core/log.h"

/* ---- statements */

static int parse_body(struct parser *p, struct node_list *out, const char *const *ends, int open_line,
                      const char *opener, int *which);

static int expect_block_end(struct parser *p)
{
    if (cur(p)->type != T_BLOCK_END)
        return parser_unexpected(p, "'%}'");
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
            return parser_unexpected(p, "a variable name");
        if (parser_push_name(p, nd, cur(p)->s, cur(p)->n) < 0)
            return -1;
        adv(p);
        if (!is_op(cur(p), ","))
            break;
        adv(p);
        if (paren && is_op(cur(p), ")"))
            break;
    }
    if (paren && parser_expect_op(p, ")") < 0)
        return -1;
    return 0;
}

static struct node *parse_if(struct parser *p, int line)
{
    struct node *nd = parser_node(p, N_IF, line);
    if (!nd || !(nd->a = parser_tuple(p, true)) || expect_block_end(p) < 0)
        return NULL;
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    int which;
    if (parse_body(p, &nd->body, ends, line, "if", &which) < 0)
        return NULL;
    if (which == 0) { /* elif: a nested if in the else branch */
        struct node *el = parse_if(p, p->t[p->pos - 1].line);
        if (!el || parser_push(p, &nd->alt, el) < 0)
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
    struct node *nd = parser_node(p, N_FOR, line);
    if (!nd || parse_targets(p, nd) < 0)
        return NULL;
    if (!is_name(cur(p), "in")) {
        parser_unexpected(p, "'in'");
        return NULL;
    }
    adv(p);
    if (!(nd->a = parser_tuple(p, false)))
        return NULL;
    if (is_name(cur(p), "if")) {
        adv(p);
        if (!(nd->b = parser_expr(p, true)))
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
        struct node *nd = parser_node(p, N_SET_NS, line);
        if (!nd || parser_push_name(p, nd, t->s, t->n) < 0)
            return NULL;
        adv(p);
        adv(p);
        if (cur(p)->type != T_NAME) {
            parser_unexpected(p, "an attribute name");
            return NULL;
        }
        nd->name = cur(p)->s;
        nd->name_len = cur(p)->n;
        adv(p);
        if (parser_expect_op(p, "=") < 0 || !(nd->a = parser_tuple(p, true)) || expect_block_end(p) < 0)
            return NULL;
        return nd;
    }
    struct node *nd = parser_node(p, N_SET, line);
    if (!nd || parse_targets(p, nd) < 0)
        return NULL;
    if (is_op(cur(p), "=")) {
        adv(p);
        if (!(nd->a = parser_tuple(p, true)) || expect_block_end(p) < 0)
            return NULL;
        return nd;
    }
    /* block set, optionally filtered: {% set x | trim %}...{% endset %} */
    if (nd->nnames != 1) {
        parser_unexpected(p, "'='");
        return NULL;
    }
    nd->kind = N_SET_BLOCK;
    struct node *chain = NULL;
    while (is_op(cur(p), "|")) {
        struct node *f = parser_filter_or_test(p, chain, false);
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
    struct node *nd = parser_node(p, N_MACRO, line);
    if (!nd)
        return NULL;
    if (cur(p)->type != T_NAME) {
        parser_unexpected(p, "a macro name");
        return NULL;
    }
    nd->name = cur(p)->s;
    nd->name_len = cur(p)->n;
    adv(p);
    if (parser_expect_op(p, "(") < 0)
        return NULL;
    while (!is_op(cur(p), ")")) {
        if (nd->nnames && parser_expect_op(p, ",") < 0)
            return NULL;
        if (cur(p)->type != T_NAME) {
            parser_unexpected(p, "a parameter name");
            return NULL;
        }
        if (parser_push_name(p, nd, cur(p)->s, cur(p)->n) < 0)
            return NULL;
        adv(p);
        struct node *def = NULL;
        if (is_op(cur(p), "=")) {
            adv(p);
            if (!(def = parser_expr(p, true)))
                return NULL;
        } else if (nd->alt.n && nd->alt.v[nd->alt.n - 1]) {
            err_set(p->err, p->errlen, "template line %d: parameter without a default after one with a default",
                    line);
            return NULL;
        }
        if (parser_push(p, &nd->alt, def) < 0)
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
        parser_unexpected(p, "a tag name");
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
        struct node *nd = parser_node(p, is_name(t, "break") ? N_BREAK : N_CONTINUE, line);
        return nd && expect_block_end(p) == 0 ? nd : NULL;
    }
    if (is_name(t, "generation") || is_name(t, "filter")) {
        bool gen = is_name(t, "generation");
        struct node *nd = parser_node(p, gen ? N_GENERATION : N_FILTER_BLOCK, line);
        if (!nd)
            return NULL;
        if (!gen) {
            p->pos--; /* parse "name(args)|name2" as a filter chain on nothing */
            struct node *chain = NULL;
            do {
                struct node *f = parser_filter_or_test(p, chain, false);
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
    if (parser_enter(p) < 0)
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
            struct node *nd = parser_node(p, N_TEXT, t->line);
            if (!nd || parser_push(p, out, nd) < 0)
                return -1;
            nd->cval = v_str(t->s, t->n);
            adv(p);
            continue;
        }
        if (t->type == T_VAR_BEGIN) {
            adv(p);
            struct node *nd = parser_node(p, N_OUTPUT, t->line);
            if (!nd || !(nd->a = parser_tuple(p, true)))
                return -1;
            if (cur(p)->type != T_VAR_END)
                return parser_unexpected(p, "'}}'");
            adv(p);
            if (parser_push(p, out, nd) < 0)
                return -1;
            continue;
        }
        if (t->type != T_BLOCK_BEGIN)
            return parser_unexpected(p, "template text or a tag");
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
        if (!nd || parser_push(p, out, nd) < 0)
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
