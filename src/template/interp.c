/* template/interp.c — runs a parsed template: statements, scopes, macros, loops,
 * and the public parse/render entry points (expressions are in expr.c).
 *
 * Scopes follow jinja2: the template's top level is one frame; each for-loop
 * iteration and each macro call gets a fresh frame whose parent is where the loop
 * or macro was written, so `set` inside a loop does not leak out of it (use a
 * namespace for that) while `set` inside an if does. Names resolve through the
 * frames, then the context, then the globals (range, namespace, dict,
 * raise_exception, strftime_now).
 *
 * Every statement and expression evaluated counts a step; loop iterations, macro
 * depth, output size and memory are bounded (struct chat_template_limits), and
 * each error names the template line being run.
 */
#include "template/tpl_internal.h"

#include "core/log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rerr(struct render *r, const char *fmt, ...)
{
    if (r->failed)
        return -1;
    r->failed = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(r->err, r->errlen, "template line %d: %s", r->line, msg);
}

int interp_step(struct render *r, int line)
{
    r->line = line;
    if (r->failed)
        return -1;
    if (++r->steps > r->lim->max_steps)
        return rerr(r, "step limit of %llu exceeded (the template loops too long)",
                    (unsigned long long)r->lim->max_steps);
    return 0;
}

static int out_put(struct render *r, const char *s, size_t n)
{
    if (r->out->n + n > r->lim->max_output_bytes)
        return rerr(r, "output limit of %zu bytes exceeded", r->lim->max_output_bytes);
    return sb_put(r, r->out, s, n);
}

/* A value's string form onto the output ({{ … }} and filter blocks), within the
 * output limit (the output is left as it was when it would pass it). */
static int out_value(struct render *r, struct value v)
{
    const size_t before = r->out->n;
    if (v_str_append(r, r->out, v) < 0)
        return -1;
    if (r->out->n > r->lim->max_output_bytes) {
        r->out->n = before;
        return rerr(r, "output limit of %zu bytes exceeded", r->lim->max_output_bytes);
    }
    return 0;
}

/* ---- frames */

static struct frame *frame_new(struct render *r, struct frame *parent)
{
    struct frame *f = ralloc(r, sizeof(*f));
    if (f)
        f->parent = parent;
    return f;
}

static int frame_set(struct render *r, struct frame *f, const char *name, uint32_t n, struct value v)
{
    for (int i = 0; i < f->n; i++)
        if (f->lens[i] == n && memcmp(f->names[i], name, n) == 0) {
            f->vals[i] = v;
            return 0;
        }
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 8;
        const char **names = ralloc(r, (size_t)cap * sizeof(*names));
        uint32_t *lens = ralloc(r, (size_t)cap * sizeof(*lens));
        struct value *vals = ralloc(r, (size_t)cap * sizeof(*vals));
        if (!names || !lens || !vals)
            return -1;
        if (f->n) {
            memcpy(names, f->names, (size_t)f->n * sizeof(*names));
            memcpy(lens, f->lens, (size_t)f->n * sizeof(*lens));
            memcpy(vals, f->vals, (size_t)f->n * sizeof(*vals));
        }
        f->names = names;
        f->lens = lens;
        f->vals = vals;
        f->cap = cap;
    }
    f->names[f->n] = name;
    f->lens[f->n] = n;
    f->vals[f->n++] = v;
    return 0;
}

struct value interp_lookup(struct render *r, const char *name, uint32_t n)
{
    for (struct frame *f = r->cur; f; f = f->parent)
        for (int i = f->n - 1; i >= 0; i--)
            if (f->lens[i] == n && memcmp(f->names[i], name, n) == 0)
                return f->vals[i];
    struct value *v = vdict_get_str(r->ctx.d, name, n);
    if (v)
        return *v;
    int id = builtin_lookup(name, n);
    if (id >= 0) {
        struct value fv = {.type = V_FUNC, .n = (uint32_t)id};
        return fv;
    }
    char *hint = ralloc(r, n + 1);
    if (hint)
        memcpy(hint, name, n);
    return v_undef(hint);
}

int interp_undefined_error(struct render *r, struct value v)
{
    if (v.flags & VF_UNSAFE)
        return rerr(r, "access to attribute '%s' is unsafe (the sandbox forbids changing objects)",
                    v.s ? v.s : "?");
    return rerr(r, "'%s' is undefined", v.s ? v.s : "value");
}



static int exec_list(struct render *r, const struct node_list *l);

static int capture(struct render *r, const struct node_list *body, struct frame *f, struct value *out)
{
    struct sbuf buf = {0}, *saved_out = r->out;
    struct frame *saved = r->cur;
    r->out = &buf;
    r->cur = f;
    int rc = exec_list(r, body);
    r->out = saved_out;
    r->cur = saved;
    if (rc < 0)
        return -1;
    *out = v_str(buf.p ? buf.p : "", buf.n);
    return 0;
}

int interp_call_macro(struct render *r, struct macroval *mv, struct value *args, int nargs, const char **kwn,
                      const uint32_t *kwl, struct value *kwv, int nkw, struct value *out)
{
    const struct node *def = mv->def;
    if (r->depth >= r->lim->max_depth)
        return rerr(r, "recursion limit of %d nested macro calls exceeded (in macro '%.*s')", r->lim->max_depth,
                    (int)def->name_len, def->name);
    if (nargs > def->nnames)
        return rerr(r, "macro '%.*s' takes not more than %d argument(s)", (int)def->name_len, def->name,
                    def->nnames);
    struct frame *f = frame_new(r, mv->frame);
    if (!f)
        return -1;
    bool *set = ralloc(r, (size_t)def->nnames + 1);
    if (!set)
        return -1;
    for (int i = 0; i < nargs; i++) {
        if (frame_set(r, f, def->names[i], def->name_lens[i], args[i]) < 0)
            return -1;
        set[i] = true;
    }
    for (int k = 0; k < nkw; k++) {
        int i;
        for (i = 0; i < def->nnames; i++)
            if (def->name_lens[i] == kwl[k] && memcmp(def->names[i], kwn[k], kwl[k]) == 0)
                break;
        if (i == def->nnames)
            return rerr(r, "macro '%.*s' takes no keyword argument '%.*s'", (int)def->name_len, def->name,
                        (int)kwl[k], kwn[k]);
        if (set[i])
            return rerr(r, "macro '%.*s' got multiple values for argument '%.*s'", (int)def->name_len, def->name,
                        (int)kwl[k], kwn[k]);
        if (frame_set(r, f, def->names[i], def->name_lens[i], kwv[k]) < 0)
            return -1;
        set[i] = true;
    }
    int line = r->line;
    struct frame *saved = r->cur;
    r->cur = f;
    for (int i = 0; i < def->nnames; i++) {
        if (set[i])
            continue;
        struct value dv = v_undef(def->names[i]);
        if (i < def->alt.n && def->alt.v[i] && interp_eval(r, def->alt.v[i], &dv) < 0) {
            r->cur = saved;
            return -1;
        }
        if (frame_set(r, f, def->names[i], def->name_lens[i], dv) < 0) {
            r->cur = saved;
            return -1;
        }
    }
    r->cur = saved;
    r->depth++;
    int rc = capture(r, &def->body, f, out);
    r->depth--;
    r->line = line;
    return rc;
}

/* ---- statements */

static int assign_targets(struct render *r, struct frame *f, const struct node *s, struct value v)
{
    if (s->nnames == 1)
        return frame_set(r, f, s->names[0], s->name_lens[0], v);
    struct vlist *items;
    if (interp_iterate(r, v, &items) < 0)
        return -1;
    if (items->n != (uint32_t)s->nnames)
        return rerr(r, "%s values to unpack (expected %d, got %u)", items->n > (uint32_t)s->nnames ?
                    "too many" : "not enough", s->nnames, items->n);
    for (int i = 0; i < s->nnames; i++)
        if (frame_set(r, f, s->names[i], s->name_lens[i], items->v[i]) < 0)
            return -1;
    return 0;
}

static int exec_for(struct render *r, const struct node *s)
{
    struct value it;
    struct vlist *items;
    if (interp_eval(r, s->a, &it) < 0 || interp_iterate(r, it, &items) < 0)
        return -1;
    struct frame *outer = r->cur;
    if (s->b) { /* {% for x in xs if cond %}: filter first, loop.* counts what passed */
        struct vlist *kept = vlist_new(r, 0);
        struct frame *f = frame_new(r, outer);
        if (!kept || !f)
            return -1;
        r->cur = f;
        for (uint32_t i = 0; i < items->n; i++) {
            struct value c;
            f->n = 0;
            if (assign_targets(r, f, s, items->v[i]) < 0 || interp_eval(r, s->b, &c) < 0 ||
                (v_truthy(c) && vlist_push(r, kept, items->v[i]) < 0)) {
                r->cur = outer;
                return -1;
            }
        }
        r->cur = outer;
        items = kept;
    }
    if (items->n == 0) {
        struct frame *f = frame_new(r, outer);
        if (!f)
            return -1;
        r->cur = f;
        int rc = exec_list(r, &s->alt);
        r->cur = outer;
        return rc;
    }
    struct loopstate *ls = ralloc(r, sizeof(*ls));
    struct frame *f = frame_new(r, outer);
    if (!ls || !f)
        return -1;
    ls->items = items;
    ls->depth = 1;
    struct value lv = {.type = V_LOOP};
    lv.loop = ls;
    int rc = 0;
    r->cur = f;
    for (uint32_t i = 0; i < items->n; i++) {
        if (interp_step(r, s->line) < 0) {
            rc = -1;
            break;
        }
        ls->index0 = i;
        f->n = 0;
        if (assign_targets(r, f, s, items->v[i]) < 0 || frame_set(r, f, "loop", 4, lv) < 0 ||
            exec_list(r, &s->body) < 0) {
            rc = -1;
            break;
        }
        if (r->brk == 1) {
            r->brk = 0;
            break;
        }
        r->brk = 0;
    }
    r->cur = outer;
    return rc;
}

static int exec_stmt(struct render *r, const struct node *s)
{
    struct value v;
    if (interp_step(r, s->line) < 0)
        return -1;
    switch (s->kind) {
    case N_TEXT: return out_put(r, s->cval.s, s->cval.n);
    case N_OUTPUT: {
        if (interp_eval(r, s->a, &v) < 0)
            return -1;
        r->line = s->line;
        return out_value(r, v);
    }
    case N_IF:
        if (interp_eval(r, s->a, &v) < 0)
            return -1;
        return exec_list(r, v_truthy(v) ? &s->body : &s->alt);
    case N_FOR: return exec_for(r, s);
    case N_SET:
        if (interp_eval(r, s->a, &v) < 0)
            return -1;
        r->line = s->line;
        return assign_targets(r, r->cur, s, v);
    case N_SET_NS: {
        struct value ns = interp_lookup(r, s->names[0], s->name_lens[0]);
        if (ns.type != V_NS)
            return rerr(r, "cannot assign attribute on non-namespace object '%.*s'", (int)s->name_lens[0],
                        s->names[0]);
        if (interp_eval(r, s->a, &v) < 0)
            return -1;
        return vdict_set(r, ns.d, v_str(s->name, s->name_len), v);
    }
    case N_SET_BLOCK: case N_FILTER_BLOCK: {
        struct frame *f = frame_new(r, r->cur);
        if (!f || capture(r, &s->body, f, &v) < 0)
            return -1;
        if (s->a) {
            struct value saved = r->block_value;
            r->block_value = v;
            int rc = interp_eval(r, s->a, &v);
            r->block_value = saved;
            if (rc < 0)
                return -1;
        }
        if (s->kind == N_SET_BLOCK)
            return frame_set(r, r->cur, s->names[0], s->name_lens[0], v);
        return out_value(r, v);
    }
    case N_MACRO: {
        struct macroval *mv = ralloc(r, sizeof(*mv));
        if (!mv)
            return -1;
        mv->def = s;
        mv->frame = r->cur;
        v.type = V_MACRO;
        v.flags = 0;
        v.mac = mv;
        return frame_set(r, r->cur, s->name, s->name_len, v);
    }
    case N_GENERATION: {
        struct frame *f = frame_new(r, r->cur), *saved = r->cur;
        if (!f)
            return -1;
        r->cur = f;
        int rc = exec_list(r, &s->body);
        r->cur = saved;
        return rc;
    }
    case N_BREAK: r->brk = 1; return 0;
    case N_CONTINUE: r->brk = 2; return 0;
    default: return rerr(r, "internal error: node %d is not a statement", s->kind);
    }
}

static int exec_list(struct render *r, const struct node_list *l)
{
    if (++r->nest > INTERP_MAX_NEST) {
        r->nest--;
        return rerr(r, "statement nesting limit exceeded");
    }
    int rc = 0;
    for (int i = 0; i < l->n && !r->brk; i++)
        if (exec_stmt(r, l->v[i]) < 0 || r->failed) {
            rc = -1;
            break;
        }
    r->nest--;
    return rc;
}

/* ---- public API */

void chat_template_limits_default(struct chat_template_limits *lim)
{
    lim->max_output_bytes = (size_t)16 << 20;
    lim->max_steps = 50000000;
    lim->max_depth = 200;
    lim->max_memory_bytes = (size_t)512 << 20;
}

int chat_template_parse(struct chat_template **out, const char *src, size_t len, char *err, size_t errlen)
{
    *out = NULL;
    if (!src && len)
        return err_set(err, errlen, "template: no source");
    if (len > ((size_t)64 << 20))
        return err_set(err, errlen, "template: source of %zu bytes is too large", len);
    struct chat_template *t = calloc(1, sizeof(*t));
    if (!t)
        return err_set(err, errlen, "template: out of memory");
    arena_init(&t->arena, 1 << 16);
    struct token_list toks;
    if (tpl_lex(&t->arena, src ? src : "", len, &toks, err, errlen) < 0 ||
        tpl_parse(&t->arena, &toks, &t->root, err, errlen) < 0) {
        chat_template_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int chat_template_render_limited(const struct chat_template *t, const json_t *context,
                                 const struct chat_template_limits *lim, char **out, size_t *out_len, char *err,
                                 size_t errlen)
{
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!t || !lim)
        return err_set(err, errlen, "template: no template");
    if (context && !json_is_object(context))
        return err_set(err, errlen, "template: the context must be a JSON object");
    struct sbuf result = {0};
    struct render r = {.lim = lim, .out = &result, .err = err, .errlen = errlen, .line = 1};
    arena_init(&r.arena, 1 << 16);
    int rc = -1;
    r.root = frame_new(&r, NULL);
    if (!r.root)
        goto done;
    r.cur = r.root;
    if (context) {
        if (v_from_json(&r, context, &r.ctx, 0) < 0)
            goto done;
    } else {
        struct vdict *d = vdict_new(&r, 0);
        if (!d)
            goto done;
        r.ctx = v_dict(d);
    }
    if (exec_list(&r, &t->root) < 0)
        goto done;
    char *s = malloc(result.n + 1);
    if (!s) {
        err_set(err, errlen, "template: out of memory");
        goto done;
    }
    if (result.n)
        memcpy(s, result.p, result.n);
    s[result.n] = 0;
    *out = s;
    if (out_len)
        *out_len = result.n;
    rc = 0;
done:
    if (rc < 0 && !r.failed) /* a path that failed without saying why: still give a message */
        err_set(err, errlen, "template line %d: internal error: failed without a message", r.line);
    arena_free(&r.arena);
    return rc;
}

int chat_template_render(const struct chat_template *t, const json_t *context, char **out, size_t *out_len,
                         char *err, size_t errlen)
{
    struct chat_template_limits lim;
    chat_template_limits_default(&lim);
    return chat_template_render_limited(t, context, &lim, out, out_len, err, errlen);
}

void chat_template_free(struct chat_template *t)
{
    if (!t)
        return;
    arena_free(&t->arena);
    free(t);
}
