/* template/tpl_internal.h — shared by the template interpreter's files: tokens
 * (lexer.c), the syntax tree (parser_expr.c, parser_stmt.c), values (value.c),
 * the render state (interp.c, expr.c) and the builtins (filters.c,
 * jinja_tests.c, methods.c).
 *
 * Values are 16-byte structs passed by value. Strings are (pointer, length)
 * slices that point into the template, the context copy or the render arena;
 * lists, dicts and namespaces live in the render arena. Lists and dicts are never
 * changed after they are built (the sandbox forbids append/update), so they are
 * shared freely; a namespace is the only mutable object. Everything made during a
 * render is freed at once with its arena.
 */
#ifndef MEMRA_TEMPLATE_INTERNAL_H
#define MEMRA_TEMPLATE_INTERNAL_H

#include "core/arena.h"
#include "template/template.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- values */
enum vtype {
    V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT, V_NS, V_MACRO, V_FUNC, V_METHOD, V_LOOP,
};

#define VF_TUPLE 1u /* a list that prints as a Python tuple */
#define VF_UNSAFE 2u /* V_UNDEF standing for a forbidden (mutating) method */
#define VF_SAFE 4u   /* V_STR that is markupsafe.Markup (from |safe): `+` escapes the other operand */
#define VF_GEN 8u    /* V_LIST that is a Python generator (map, select, ...): iterates once, no len() */
#define VF_VIEW 16u  /* V_LIST that is d.items()/keys()/values(): n = 1, 2, 3; prints as dict_items([...]) */

struct vlist;
struct vdict;
struct node;
struct loopstate;
struct macroval;
struct method;
struct frame;

struct value {
    uint8_t type;
    uint8_t flags;
    uint32_t n; /* V_STR: byte length; V_FUNC: builtin id; V_LIST with VF_VIEW: view kind */
    union {
        bool b;
        int64_t i;
        double f;
        const char *s;             /* V_STR: n bytes, UTF-8; V_UNDEF: the missing name or NULL */
        struct vlist *l;           /* V_LIST */
        struct vdict *d;           /* V_DICT, V_NS */
        struct macroval *mac;      /* V_MACRO */
        struct method *m;          /* V_METHOD */
        struct loopstate *loop;    /* V_LOOP */
    };
};

struct vlist {
    struct value *v; /* (n) */
    uint32_t n, cap;
    bool consumed;   /* VF_GEN: already iterated (a generator yields its items once) */
};

struct vdict {
    struct value *keys, *vals; /* (n), insertion order */
    uint32_t n, cap;
};

struct method {
    struct value self;
    int id; /* enum method_id (methods.c); -1: loop.cycle */
};

struct macroval {
    const struct node *def; /* N_MACRO */
    struct frame *frame;    /* where it was defined: free names resolve from there */
};

struct loopstate {
    struct vlist *items;
    int64_t index0;
    int depth;
};

/* ---- tokens */
enum tok {
    T_EOF, T_TEXT, T_BLOCK_BEGIN, T_BLOCK_END, T_VAR_BEGIN, T_VAR_END,
    T_NAME, T_STRING, T_INT, T_FLOAT, T_OP,
};

struct token {
    uint8_t type;
    char op[3];        /* T_OP: the operator, NUL-terminated */
    int line;
    const char *s;     /* T_TEXT, T_NAME, T_STRING: bytes (decoded for strings) */
    uint32_t n;
    int64_t i;         /* T_INT */
    double f;          /* T_FLOAT */
};

struct token_list {
    struct token *v;
    size_t n, cap;
};

/* Split normalized source into tokens, applying whitespace control. */
int tpl_lex(struct arena *a, const char *src, size_t len, struct token_list *out, char *err, size_t errlen);

/* ---- syntax tree */
enum node_kind {
    /* statements */
    N_TEXT, N_OUTPUT, N_IF, N_FOR, N_SET, N_SET_NS, N_SET_BLOCK, N_MACRO, N_BREAK, N_CONTINUE, N_FILTER_BLOCK,
    N_GENERATION,
    /* expressions */
    E_CONST, E_NAME, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_NEG, E_POS, E_NOT, E_BIN, E_AND, E_OR,
    E_COMPARE, E_COND, E_LIST, E_TUPLE, E_DICT,
};

enum binop { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_CONCAT };
enum cmpop { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_IN, CMP_NOTIN };

struct node_list {
    struct node **v;
    int n, cap;
};

struct node {
    uint8_t kind;
    uint8_t op;        /* E_BIN: binop; E_TEST: 1 when negated */
    int line;
    struct node *a, *b, *c;     /* children: operands, condition, iterable, value */
    struct node_list body;      /* statements: body; expressions: args / items / keys */
    struct node_list alt;       /* statements: else body; E_CALL/E_FILTER: keyword values; E_DICT: values */
    const char **names;         /* targets, macro parameters, keyword names; (nnames) */
    uint32_t *name_lens;
    int nnames;
    uint8_t *cmp_ops;           /* E_COMPARE: (body.n) operators, operands in body */
    const char *name;           /* E_NAME/E_ATTR/N_SET_NS attribute, filter/test/macro name */
    uint32_t name_len;
    int fid;                    /* E_FILTER/E_TEST: builtin index, -1 unknown (fails when run) */
    struct value cval;          /* E_CONST */
};

struct chat_template {
    struct arena arena; /* source copy, tokens, tree */
    struct node_list root;
};

int tpl_parse(struct arena *a, const struct token_list *toks, struct node_list *root, char *err, size_t errlen);

/* ---- render state */
/* Growable string builder in the render arena. */
struct sbuf {
    char *p;
    size_t n, cap;
};

struct frame {
    struct frame *parent;
    const char **names;
    uint32_t *lens;
    struct value *vals;
    int n, cap;
};

struct render {
    struct arena arena;
    struct sbuf *out;   /* where output goes now (the result, or a macro/set-block capture) */
    struct frame *cur;  /* innermost scope */
    struct value block_value; /* input of a {% filter %} / {% set x | f %} chain */
    int nest;           /* C recursion (statements + expressions), hard-capped */
    const struct chat_template_limits *lim;
    struct frame *root;
    struct value ctx;   /* V_DICT: the context */
    uint64_t steps;
    int depth;          /* macro calls */
    int line;           /* line of the statement or expression being evaluated */
    int brk;            /* 1 break, 2 continue pending */
    char *err;
    size_t errlen;
    bool failed;
};

/* Sets the error (prefixed with the current template line) and returns -1. */
int rerr(struct render *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *ralloc(struct render *r, size_t n);

/* value.c */
static inline struct value v_undef(const char *name) { struct value v = {.type = V_UNDEF}; v.s = name; return v; }
static inline struct value v_none(void) { struct value v = {.type = V_NONE}; return v; }
static inline struct value v_bool(bool b) { struct value v = {.type = V_BOOL}; v.b = b; return v; }
static inline struct value v_int(int64_t i) { struct value v = {.type = V_INT}; v.i = i; return v; }
static inline struct value v_float(double f) { struct value v = {.type = V_FLOAT}; v.f = f; return v; }
static inline struct value v_str(const char *s, size_t n) { struct value v = {.type = V_STR, .n = (uint32_t)n}; v.s = s; return v; }
struct value v_str_copy(struct render *r, const char *s, size_t n); /* V_UNDEF on alloc failure (error set) */
struct vlist *vlist_new(struct render *r, uint32_t cap);
int vlist_push(struct render *r, struct vlist *l, struct value v);
struct vdict *vdict_new(struct render *r, uint32_t cap);
int vdict_set(struct render *r, struct vdict *d, struct value k, struct value v);
struct value *vdict_get(const struct vdict *d, struct value k);
struct value *vdict_get_str(const struct vdict *d, const char *s, size_t n);
static inline struct value v_list(struct vlist *l) { struct value v = {.type = V_LIST}; v.l = l; return v; }
static inline struct value v_dict(struct vdict *d) { struct value v = {.type = V_DICT}; v.d = d; return v; }

bool v_truthy(struct value v);
bool v_equal(struct value a, struct value b);
/* Python ordering: numbers, strings, lists. Returns -1 (error set) when not comparable. */
int v_compare(struct render *r, struct value a, struct value b, int *cmp);
bool v_is_number(struct value v);
double v_as_double(struct value v);
const char *v_type_name(struct value v);
int sb_put(struct render *r, struct sbuf *b, const char *s, size_t n);
int sb_putc(struct render *r, struct sbuf *b, char c);
int sb_printf(struct render *r, struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* str(v) as Python prints it (repr inside containers); undefined is "". */
int v_to_str(struct render *r, struct value v, struct value *out);
int v_str_append(struct render *r, struct sbuf *b, struct value v);
int v_repr_append(struct render *r, struct sbuf *b, struct value v);
/* json.dumps(v, ensure_ascii, indent, separators, sort_keys). */
struct json_opts {
    const char *indent; /* NULL: one line */
    size_t indent_len;
    const char *item_sep, *key_sep;
    bool ascii;         /* ensure_ascii: non-ASCII as \uXXXX */
    bool sort_keys;     /* objects in key order */
};
int v_tojson(struct render *r, struct sbuf *b, struct value v, const struct json_opts *o, int level);
void fmt_py_float(double f, char *buf, size_t n);
int v_from_json(struct render *r, const json_t *j, struct value *out, int depth);
/* UTF-8 helpers (strings index and measure by code point, as Python does). */
size_t utf8_count(const char *s, size_t n);
size_t utf8_offset(const char *s, size_t n, int64_t cp_index); /* byte offset of code point, clamped */
uint32_t utf8_decode(const char *s, size_t n, size_t *adv);
bool py_isspace(uint32_t cp);

/* interp.c: scopes, statements, macros; expr.c: expressions */
#define INTERP_MAX_NEST 3000 /* C recursion (statements inside expressions inside macros), hard-capped */
int interp_step(struct render *r, int line); /* count a step, note the line; -1 past the limit */
struct value interp_lookup(struct render *r, const char *name, uint32_t n);
int interp_undefined_error(struct render *r, struct value v);
int interp_call_macro(struct render *r, struct macroval *mv, struct value *args, int nargs, const char **kwn,
                      const uint32_t *kwl, struct value *kwv, int nkw, struct value *out);
int interp_eval(struct render *r, const struct node *e, struct value *out);
int interp_call(struct render *r, struct value fn, struct value *args, int nargs, const char **kwn,
                const uint32_t *kwl, struct value *kwv, int nkw, struct value *out);
int interp_getattr(struct render *r, struct value obj, const char *name, size_t n, struct value *out);
int interp_getitem(struct render *r, struct value obj, struct value key, struct value *out);
int interp_iterate(struct render *r, struct value v, struct vlist **out);

/* filters.c, jinja_tests.c: builtin filters and tests, looked up by name at parse time. */
int filter_lookup(const char *name, size_t n);
int test_lookup(const char *name, size_t n);
int filter_apply(struct render *r, int fid, struct value v, struct value *args, int nargs, const char **kwn,
                 const uint32_t *kwl, struct value *kwv, int nkw, struct value *out);
int test_apply(struct render *r, int tid, struct value v, struct value *args, int nargs, bool *out);

/* methods.c: str/dict/list methods, global functions. */
enum builtin_fn { FN_RANGE, FN_NAMESPACE, FN_RAISE, FN_STRFTIME, FN_DICT }; /* globals, in BUILTINS order */
int method_lookup(struct value self, const char *name, size_t n, int *id, bool *unsafe);
int method_call(struct render *r, struct method *m, struct value *args, int nargs, const char **kwn,
                const uint32_t *kwl, struct value *kwv, int nkw, struct value *out);
int builtin_lookup(const char *name, size_t n);
int builtin_call(struct render *r, int id, struct value self, struct value *args, int nargs, const char **kwn,
                 const uint32_t *kwl, struct value *kwv, int nkw, struct value *out);
/* pystr.c: Python str behaviour shared by methods and filters. */
int str_strip(struct render *r, struct value s, struct value chars, int mode, struct value *out);
int str_replace(struct render *r, struct value s, struct value old, struct value new_, int64_t count,
                struct value *out);
/* mode: 0 lower, 1 upper, 2 str.title, 3 capitalize, 4 jinja2's |title */
int str_case(struct render *r, struct value s, int mode, struct value *out);
int str_splitlines(struct render *r, struct value s, struct vlist **out);
bool str_is_case(struct value s, bool lower); /* str.islower() / str.isupper() */
int str_html_escape(struct render *r, struct value s, struct value *out); /* markupsafe.escape */
int str_percent_format(struct render *r, struct value fmt, struct value args, struct value *out);
int str_split(struct render *r, struct value s, struct value sep, int64_t maxsplit, bool right, struct value *out);
int str_affix_match(struct render *r, struct value s, struct value affix, bool end, bool *out);
int str_format(struct render *r, struct value fmt, struct value *args, int nargs, const char **kwn,
               const uint32_t *kwl, struct value *kwv, int nkw, struct value *out);

#endif
