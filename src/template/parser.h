/* template/parser.h — the parser's state and helpers, shared by parser_expr.c
 * (expressions) and parser_stmt.c (statements and the name check). Internal to
 * src/template. */
#ifndef MEMRA_TEMPLATE_PARSER_H
#define MEMRA_TEMPLATE_PARSER_H

#include "template/tpl_internal.h"

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

static inline const struct token *cur(struct parser *p) { return &p->t[p->pos]; }
static inline void adv(struct parser *p)
{
    if (p->pos + 1 < p->n)
        p->pos++;
}

static inline bool is_name(const struct token *t, const char *s)
{
    return t->type == T_NAME && t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}
static inline bool is_op(const struct token *t, const char *op) { return t->type == T_OP && strcmp(t->op, op) == 0; }

int parser_unexpected(struct parser *p, const char *what);
struct node *parser_node(struct parser *p, int kind, int line);
int parser_push(struct parser *p, struct node_list *l, struct node *nd);
int parser_push_name(struct parser *p, struct node *nd, const char *s, uint32_t n);
int parser_expect_op(struct parser *p, const char *op);
int parser_enter(struct parser *p);
struct node *parser_expr(struct parser *p, bool with_cond);
struct node *parser_tuple(struct parser *p, bool with_cond);
struct node *parser_filter_or_test(struct parser *p, struct node *obj, bool test);

#endif
