/* tokenizer/load_hf.c — a tokenizer from a Hugging Face tokenizer.json (the
 * `tokenizers` library's serialisation) plus tokenizer_config.json.
 *
 * Supported components (anything else is refused with a message naming it):
 *   model: BPE (vocab, merges as "a b" strings or [a, b] pairs, byte_fallback,
 *          ignore_merges, unk_token);
 *   normalizer: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace (string
 *          pattern), Strip, Sequence;
 *   pre_tokenizer: Split (regex or string; every behaviour; invert),
 *          ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit,
 *          Punctuation, Sequence;
 *   post_processor: TemplateProcessing, RobertaProcessing, BertProcessing,
 *          ByteLevel, Sequence — only the ids around a single sequence matter;
 *   decoder: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence.
 * Pre-tokenizers that edit the text (ByteLevel's add_prefix_space, Metaspace)
 * become normalizer steps, which is exact when no split runs before them.
 * Added tokens are matched on the raw text (the "normalized" flag is ignored).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "format/model_file.h"
#include "tokenizer/tok_internal.h"

#define HF_MAX_JSON_BYTES ((size_t)512 << 20)
#define HF_MAX_TEMPLATE_BYTES ((size_t)4 << 20)

#define RX_HF_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

struct hf_ctx {
    struct tok_model *m;
    const char *path;
    char *err;
    size_t errlen;
    bool had_split; /* a split step ran: text-editing pre-tokenizers can no longer become normalizer steps */
};

static const char *jstr(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool jbool(const json_t *o, const char *key, bool dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *astr(struct hf_ctx *c, const char *s)
{
    return s ? arena_strdup(&c->m->arena, s) : NULL;
}

static int add_norm(struct hf_ctx *c, enum tok_norm_op op, const char *a, const char *b, int mode, bool uncond)
{
    struct tok_model *m = c->m;
    if (m->n_norm >= TOK_MAX_NORM_STEPS)
        return err_set(c->err, c->errlen, "%s: more than %d normalizer steps", c->path, TOK_MAX_NORM_STEPS);
    struct tok_norm_step *st = &m->norm[m->n_norm++];
    st->op = op;
    st->a = astr(c, a);
    st->b = astr(c, b);
    if ((a && !st->a) || (b && !st->b))
        return err_set(c->err, c->errlen, "%s: out of memory", c->path);
    st->a_len = a ? (uint32_t)strlen(a) : 0;
    st->b_len = b ? (uint32_t)strlen(b) : 0;
    st->mode = mode;
    st->unconditional = uncond;
    return 0;
}

/* s as a PCRE2 pattern that matches it literally: \Q...\E, with any "\E"
 * inside s split out. malloc'd; NULL when out of memory. */
static char *quote_literal(const char *s)
{
    size_t n = strlen(s);
    char *q = malloc(n * 6 + 8);
    if (!q)
        return NULL;
    char *p = q;
    p += sprintf(p, "\\Q");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && s[i + 1] == 'E') {
            p += sprintf(p, "\\E\\\\E\\Q");
            i++;
        } else {
            *p++ = s[i];
        }
    }
    p += sprintf(p, "\\E");
    *p = '\0';
    return q;
}

/* {"String": s} or {"Regex": r} → a PCRE2 pattern (strings quoted). */
static int pattern_of(struct hf_ctx *c, const json_t *pat, const char *where, char **out, bool *is_regex)
{
    const char *s = jstr(pat, "String"), *r = jstr(pat, "Regex");
    if (!s && !r)
        return err_set(c->err, c->errlen, "%s: %s.pattern must be {\"String\": ...} or {\"Regex\": ...}", c->path,
                       where);
    *is_regex = r != NULL;
    *out = r ? strdup(r) : quote_literal(s);
    return *out ? 0 : err_set(c->err, c->errlen, "%s: out of memory", c->path);
}

static int parse_normalizer(struct hf_ctx *c, const json_t *n)
{
    if (!n || json_is_null(n))
        return 0;
    const char *type = jstr(n, "type");
    if (!type)
        return err_set(c->err, c->errlen, "%s: normalizer has no \"type\"", c->path);
    if (!strcmp(type, "Sequence")) {
        const json_t *arr = json_object_get(n, "normalizers");
        if (!json_is_array(arr))
            return err_set(c->err, c->errlen, "%s: normalizer Sequence without a \"normalizers\" array", c->path);
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (parse_normalizer(c, json_array_get(arr, i)) != 0)
                return -1;
        return 0;
    }
    if (!strcmp(type, "NFC")) return add_norm(c, NORM_NFC, NULL, NULL, 0, false);
    if (!strcmp(type, "NFD")) return add_norm(c, NORM_NFD, NULL, NULL, 0, false);
    if (!strcmp(type, "NFKC")) return add_norm(c, NORM_NFKC, NULL, NULL, 0, false);
    if (!strcmp(type, "NFKD")) return add_norm(c, NORM_NFKD, NULL, NULL, 0, false);
    if (!strcmp(type, "Lowercase")) return add_norm(c, NORM_LOWERCASE, NULL, NULL, 0, false);
    if (!strcmp(type, "Prepend")) {
        const char *p = jstr(n, "prepend");
        if (!p)
            return err_set(c->err, c->errlen, "%s: normalizer Prepend without a \"prepend\" string", c->path);
        return add_norm(c, NORM_PREPEND, p, NULL, 0, false);
    }
    if (!strcmp(type, "Replace")) {
        const json_t *pat = json_object_get(n, "pattern");
        const char *s = jstr(pat, "String"), *content = jstr(n, "content");
        if (!s || !content)
            return err_set(c->err, c->errlen, "%s: normalizer Replace needs a String pattern and a content "
                           "(regex patterns are not supported)", c->path);
        return add_norm(c, NORM_REPLACE, s, content, 0, false);
    }
    if (!strcmp(type, "Strip")) {
        int mode = (jbool(n, "strip_left", true) ? 1 : 0) | (jbool(n, "strip_right", true) ? 2 : 0);
        return add_norm(c, NORM_STRIP, NULL, NULL, mode, false);
    }
    return err_set(c->err, c->errlen, "%s: unsupported normalizer type \"%s\"", c->path, type);
}

static int add_split(struct hf_ctx *c, const char *rx, enum tok_split_behavior b, bool invert)
{
    c->had_split = true;
    return pretok_add_regex(c->m, rx, strlen(rx), b, invert, true, c->err, c->errlen);
}

static int parse_behavior(struct hf_ctx *c, const char *s, enum tok_split_behavior *b)
{
    if (!s || !strcmp(s, "Isolated")) *b = SPLIT_ISOLATED;
    else if (!strcmp(s, "Removed")) *b = SPLIT_REMOVED;
    else if (!strcmp(s, "MergedWithPrevious")) *b = SPLIT_MERGED_PREV;
    else if (!strcmp(s, "MergedWithNext")) *b = SPLIT_MERGED_NEXT;
    else if (!strcmp(s, "Contiguous")) *b = SPLIT_CONTIGUOUS;
    else return err_set(c->err, c->errlen, "%s: unknown split behavior \"%s\"", c->path, s);
    return 0;
}

static int parse_pretok(struct hf_ctx *c, const json_t *p)
{
    struct tok_model *m = c->m;
    if (!p || json_is_null(p))
        return 0;
    const char *type = jstr(p, "type");
    if (!type)
        return err_set(c->err, c->errlen, "%s: pre_tokenizer has no \"type\"", c->path);
    if (!strcmp(type, "Sequence")) {
        const json_t *arr = json_object_get(p, "pretokenizers");
        if (!json_is_array(arr))
            return err_set(c->err, c->errlen, "%s: pre_tokenizer Sequence without a \"pretokenizers\" array", c->path);
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (parse_pretok(c, json_array_get(arr, i)) != 0)
                return -1;
        return 0;
    }
    if (!strcmp(type, "Split")) {
        enum tok_split_behavior b;
        if (parse_behavior(c, jstr(p, "behavior"), &b) != 0)
            return -1;
        char *rx;
        bool is_regex;
        if (pattern_of(c, json_object_get(p, "pattern"), "pre_tokenizer Split", &rx, &is_regex) != 0)
            return -1;
        int rc = add_split(c, rx, b, jbool(p, "invert", false));
        free(rx);
        return rc;
    }
    if (!strcmp(type, "ByteLevel")) {
        m->byte_level = true;
        if (jbool(p, "add_prefix_space", false)) {
            if (c->had_split)
                return err_set(c->err, c->errlen, "%s: ByteLevel add_prefix_space after a split is not supported",
                               c->path);
            if (add_norm(c, NORM_PREFIX_SPACE, " ", NULL, PREPEND_ALWAYS, false) != 0)
                return -1;
        }
        if (jbool(p, "use_regex", true))
            return add_split(c, RX_HF_GPT2, SPLIT_ISOLATED, false);
        return 0;
    }
    if (!strcmp(type, "Metaspace")) {
        const char *rep = jstr(p, "replacement");
        if (!rep)
            rep = "\xE2\x96\x81";
        const char *scheme = jstr(p, "prepend_scheme");
        int mode = -1;
        if (scheme) {
            if (!strcmp(scheme, "always")) mode = PREPEND_ALWAYS;
            else if (!strcmp(scheme, "first")) mode = PREPEND_FIRST;
            else if (strcmp(scheme, "never") != 0)
                return err_set(c->err, c->errlen, "%s: unknown Metaspace prepend_scheme \"%s\"", c->path, scheme);
        } else if (jbool(p, "add_prefix_space", true)) {
            mode = PREPEND_ALWAYS;
        }
        if (c->had_split)
            return err_set(c->err, c->errlen, "%s: Metaspace after a split is not supported", c->path);
        if (add_norm(c, NORM_REPLACE, " ", rep, 0, false) != 0)
            return -1;
        if (mode >= 0 && add_norm(c, NORM_PREFIX_SPACE, rep, NULL, mode, false) != 0)
            return -1;
        if (jbool(p, "split", true)) {
            char *rx = quote_literal(rep);
            if (!rx)
                return err_set(c->err, c->errlen, "%s: out of memory", c->path);
            int rc = add_split(c, rx, SPLIT_MERGED_NEXT, false);
            free(rx);
            return rc;
        }
        return 0;
    }
    if (!strcmp(type, "Digits"))
        return add_split(c, jbool(p, "individual_digits", false) ? "\\p{N}" : "\\p{N}+", SPLIT_ISOLATED, false);
    if (!strcmp(type, "Whitespace")) /* keep the matches, drop what lies between */
        return add_split(c, "\\w+|[^\\w\\s]+", SPLIT_REMOVED, true);
    if (!strcmp(type, "WhitespaceSplit"))
        return add_split(c, "\\s+", SPLIT_REMOVED, false);
    if (!strcmp(type, "Punctuation")) {
        enum tok_split_behavior b;
        if (parse_behavior(c, jstr(p, "behavior"), &b) != 0)
            return -1;
        return add_split(c, "[\\p{P}!-/:-@\\[-`{-~]", b, false);
    }
    return err_set(c->err, c->errlen, "%s: unsupported pre_tokenizer type \"%s\"", c->path, type);
}

/* Ids of a special token named in a post-processor. */
static int post_ids(struct hf_ctx *c, const json_t *special_tokens, const char *name, bool prefix)
{
    struct tok_model *m = c->m;
    const json_t *st = json_object_get(special_tokens, name);
    const json_t *ids = json_object_get(st, "ids");
    if (!json_is_array(ids))
        return err_set(c->err, c->errlen, "%s: post_processor special token \"%s\" has no ids", c->path, name);
    for (size_t i = 0; i < json_array_size(ids); i++) {
        json_int_t id = json_integer_value(json_array_get(ids, i));
        if (id < 0 || (uint64_t)id >= m->n_vocab)
            return err_set(c->err, c->errlen, "%s: post_processor id %lld out of range", c->path, (long long)id);
        uint32_t *n = prefix ? &m->n_post_prefix : &m->n_post_suffix;
        if (*n >= TOK_MAX_POST)
            return err_set(c->err, c->errlen, "%s: post_processor adds too many tokens", c->path);
        (prefix ? m->post_prefix : m->post_suffix)[(*n)++] = (int32_t)id;
    }
    return 0;
}

static int pair_id(struct hf_ctx *c, const json_t *pair, const char *what, int32_t *out)
{
    json_int_t id = json_integer_value(json_array_get(pair, 1));
    if (!json_is_array(pair) || id < 0 || (uint64_t)id >= c->m->n_vocab)
        return err_set(c->err, c->errlen, "%s: post_processor %s must be [token, id]", c->path, what);
    *out = (int32_t)id;
    return 0;
}

static int parse_post(struct hf_ctx *c, const json_t *p)
{
    struct tok_model *m = c->m;
    if (!p || json_is_null(p))
        return 0;
    const char *type = jstr(p, "type");
    if (!type)
        return err_set(c->err, c->errlen, "%s: post_processor has no \"type\"", c->path);
    if (!strcmp(type, "ByteLevel"))
        return 0;
    if (!strcmp(type, "Sequence")) {
        const json_t *arr = json_object_get(p, "processors");
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (parse_post(c, json_array_get(arr, i)) != 0)
                return -1;
        return 0;
    }
    if (!strcmp(type, "TemplateProcessing")) {
        const json_t *single = json_object_get(p, "single"), *special = json_object_get(p, "special_tokens");
        if (!json_is_array(single))
            return err_set(c->err, c->errlen, "%s: TemplateProcessing without a \"single\" array", c->path);
        bool seen_seq = false;
        for (size_t i = 0; i < json_array_size(single); i++) {
            const json_t *it = json_array_get(single, i);
            const json_t *sp = json_object_get(it, "SpecialToken");
            if (json_object_get(it, "Sequence")) {
                seen_seq = true;
            } else if (sp) {
                const char *name = jstr(sp, "id");
                if (!name || post_ids(c, special, name, !seen_seq) != 0)
                    return name ? -1 : err_set(c->err, c->errlen, "%s: TemplateProcessing item without id", c->path);
            }
        }
        return 0;
    }
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        int32_t cls, sep;
        if (pair_id(c, json_object_get(p, "cls"), "cls", &cls) != 0 ||
            pair_id(c, json_object_get(p, "sep"), "sep", &sep) != 0)
            return -1;
        if (m->n_post_prefix >= TOK_MAX_POST || m->n_post_suffix >= TOK_MAX_POST)
            return err_set(c->err, c->errlen, "%s: post_processor adds too many tokens", c->path);
        m->post_prefix[m->n_post_prefix++] = cls;
        m->post_suffix[m->n_post_suffix++] = sep;
        return 0;
    }
    return err_set(c->err, c->errlen, "%s: unsupported post_processor type \"%s\"", c->path, type);
}

static int parse_decoder(struct hf_ctx *c, const json_t *d)
{
    struct tok_model *m = c->m;
    if (!d || json_is_null(d))
        return 0;
    const char *type = jstr(d, "type");
    if (!type)
        return err_set(c->err, c->errlen, "%s: decoder has no \"type\"", c->path);
    if (!strcmp(type, "Sequence")) {
        const json_t *arr = json_object_get(d, "decoders");
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (parse_decoder(c, json_array_get(arr, i)) != 0)
                return -1;
        return 0;
    }
    if (!strcmp(type, "ByteLevel")) { m->dec_bytelevel = true; return 0; }
    if (!strcmp(type, "ByteFallback")) { m->dec_bytes = true; return 0; }
    if (!strcmp(type, "Fuse")) return 0;
    if (!strcmp(type, "Replace")) {
        const char *s = jstr(json_object_get(d, "pattern"), "String"), *content = jstr(d, "content");
        if (s && content && !strcmp(s, "\xE2\x96\x81") && !strcmp(content, " ")) {
            m->dec_unescape = true;
            return 0;
        }
        return err_set(c->err, c->errlen, "%s: unsupported decoder Replace (only \"▁\" → \" \" is)", c->path);
    }
    if (!strcmp(type, "Strip")) {
        const char *content = jstr(d, "content");
        json_int_t start = json_integer_value(json_object_get(d, "start"));
        if (content && !strcmp(content, " ") && start >= 0 && start < 16) {
            m->dec_strip = (uint32_t)start;
            return 0;
        }
        return err_set(c->err, c->errlen, "%s: unsupported decoder Strip (only leading spaces are)", c->path);
    }
    if (!strcmp(type, "Metaspace")) {
        m->dec_unescape = true;
        const char *scheme = jstr(d, "prepend_scheme");
        bool prepend = scheme ? strcmp(scheme, "never") != 0 : jbool(d, "add_prefix_space", true);
        if (prepend)
            m->dec_strip = 1;
        return 0;
    }
    return err_set(c->err, c->errlen, "%s: unsupported decoder type \"%s\"", c->path, type);
}

static int parse_merges(struct hf_ctx *c, const json_t *merges)
{
    if (!json_is_array(merges))
        return err_set(c->err, c->errlen, "%s: model.merges must be an array", c->path);
    size_t n = json_array_size(merges);
    if (n > TOK_MAX_MERGES)
        return err_set(c->err, c->errlen, "%s: %zu merges (max %u)", c->path, n, TOK_MAX_MERGES);
    for (size_t r = 0; r < n; r++) {
        const json_t *e = json_array_get(merges, r);
        const char *a, *b;
        size_t al, bl;
        if (json_is_string(e)) {
            const char *s = json_string_value(e);
            size_t len = json_string_length(e);
            const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
            if (!sp)
                return err_set(c->err, c->errlen, "%s: model.merges[%zu] is not \"a b\"", c->path, r);
            a = s;
            al = (size_t)(sp - s);
            b = sp + 1;
            bl = len - al - 1;
        } else if (json_is_array(e) && json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
                   json_is_string(json_array_get(e, 1))) {
            a = json_string_value(json_array_get(e, 0));
            al = json_string_length(json_array_get(e, 0));
            b = json_string_value(json_array_get(e, 1));
            bl = json_string_length(json_array_get(e, 1));
        } else {
            return err_set(c->err, c->errlen, "%s: model.merges[%zu] is neither \"a b\" nor [a, b]", c->path, r);
        }
        if (vocab_add_merge(c->m, a, al, b, bl, (uint32_t)r, c->err, c->errlen) != 0)
            return -1;
    }
    return 0;
}

/* A token named by tokenizer_config.json: "text" or {"content": "text"}. */
static int32_t config_token(const struct tok_model *m, const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    if (json_is_object(v))
        v = json_object_get(v, "content");
    if (!json_is_string(v))
        return -1;
    uint64_t id;
    return strmap_get(&m->text_map, json_string_value(v), json_string_length(v), &id) ? (int32_t)id : -1;
}

static char *read_small_file(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    char *buf = NULL;
    /* size the buffer by the file (a pipe or /proc file reports 0: grow then) */
    size_t cap = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    if (cap > max + 1)
        cap = max + 1;
    for (;;) {
        char *nb = realloc(buf, cap + 1);
        if (!nb)
            break;
        buf = nb;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || cap > max) /* EOF, or over the limit */
            break;
        cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
    }
    fclose(f);
    if (!buf || n > max) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int load_model_vocab(struct hf_ctx *c, const json_t *model, const json_t *added)
{
    struct tok_model *m = c->m;
    const json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab))
        return err_set(c->err, c->errlen, "%s: model.vocab must be an object", c->path);
    /* the id range: model vocab and added tokens together */
    json_int_t max_id = -1, max_model = -1;
    for (void *it = json_object_iter((json_t *)vocab); it; it = json_object_iter_next((json_t *)vocab, it)) {
        const char *key = json_object_iter_key(it);
        const json_t *val = json_object_iter_value(it);
        json_int_t id = json_integer_value(val);
        if (!json_is_integer(val) || id < 0 || id >= (json_int_t)TOK_MAX_VOCAB)
            return err_set(c->err, c->errlen, "%s: model.vocab[\"%.64s\"] is not an id in 0..%u", c->path, key,
                           TOK_MAX_VOCAB - 1);
        if (id > max_model)
            max_model = id;
    }
    max_id = max_model;
    for (size_t i = 0; i < json_array_size(added); i++) {
        const json_t *a = json_array_get(added, i);
        json_int_t id = json_integer_value(json_object_get(a, "id"));
        if (!json_is_integer(json_object_get(a, "id")) || id < 0 || id >= (json_int_t)TOK_MAX_VOCAB ||
            !jstr(a, "content"))
            return err_set(c->err, c->errlen, "%s: added_tokens[%zu] needs an id in 0..%u and a content", c->path, i,
                           TOK_MAX_VOCAB - 1);
        if (id > max_id)
            max_id = id;
    }
    if (max_id < 0)
        return err_set(c->err, c->errlen, "%s: empty vocabulary", c->path);
    /* ids are dense in real files; refuse a handful of tokens spread over millions of ids */
    size_t n_entries = json_object_size(vocab) + json_array_size(added);
    if ((size_t)max_id >= 2 * n_entries + 65536)
        return err_set(c->err, c->errlen, "%s: ids up to %lld for only %zu tokens", c->path, (long long)max_id,
                       n_entries);
    if (vocab_alloc(m, (uint32_t)(max_id + 1), c->err, c->errlen) != 0)
        return -1;
    m->n_model_vocab = (uint32_t)(max_model + 1);
    for (void *it = json_object_iter((json_t *)vocab); it; it = json_object_iter_next((json_t *)vocab, it)) {
        const char *key = json_object_iter_key(it);
        json_int_t id = json_integer_value(json_object_iter_value(it));
        struct tok_token *t = &m->tokens[id];
        size_t len = json_object_iter_key_len(it);
        if (t->text)
            return err_set(c->err, c->errlen, "%s: model.vocab: id %lld used twice", c->path, (long long)id);
        if (len > TOK_MAX_TOKEN_BYTES)
            return err_set(c->err, c->errlen, "%s: model.vocab token %lld is %zu bytes long", c->path,
                           (long long)id, len);
        t->text = arena_strndup(&m->arena, key, len);
        if (!t->text)
            return err_set(c->err, c->errlen, "%s: out of memory", c->path);
        t->text_len = (uint32_t)len;
        t->type = TOKENIZER_TYPE_NORMAL;
    }
    for (size_t i = 0; i < json_array_size(added); i++) {
        const json_t *a = json_array_get(added, i);
        json_int_t id = json_integer_value(json_object_get(a, "id"));
        const json_t *cv = json_object_get(a, "content");
        size_t len = json_string_length(cv);
        if (len == 0 || len > TOK_MAX_TOKEN_BYTES)
            return err_set(c->err, c->errlen, "%s: added_tokens[%zu].content has %zu bytes", c->path, i, len);
        struct tok_token *t = &m->tokens[id];
        t->text = arena_strndup(&m->arena, json_string_value(cv), len);
        if (!t->text)
            return err_set(c->err, c->errlen, "%s: out of memory", c->path);
        t->text_len = (uint32_t)len;
        bool special = jbool(a, "special", false);
        t->type = special ? TOKENIZER_TYPE_CONTROL : TOKENIZER_TYPE_USER_DEFINED;
        t->flags |= TOK_F_ADDED | (jbool(a, "lstrip", false) ? TOK_F_LSTRIP : 0) |
                    (jbool(a, "rstrip", false) ? TOK_F_RSTRIP : 0);
    }
    for (uint32_t i = 0; i < m->n_vocab; i++) {
        if (!m->tokens[i].text) { /* a hole in the id range */
            m->tokens[i].text = "";
            m->tokens[i].type = TOKENIZER_TYPE_UNUSED;
        }
    }
    return 0;
}

int tok_load_hf(struct tok_model *m, const char *json_path, const char *config_path, const char *template_path,
                const struct model_file *mf, char *err, size_t errlen)
{
    struct hf_ctx c = {.m = m, .path = json_path, .err = err, .errlen = errlen};
    struct stat st;
    if (stat(json_path, &st) != 0)
        return err_set(err, errlen, "%s: cannot read", json_path);
    if ((size_t)st.st_size > HF_MAX_JSON_BYTES)
        return err_set(err, errlen, "%s: %lld bytes is too large for a tokenizer.json", json_path,
                       (long long)st.st_size);
    json_error_t je;
    size_t json_len;
    char *json_text = read_small_file(json_path, HF_MAX_JSON_BYTES, &json_len); /* json_load_file reads by fgetc */
    if (!json_text)
        return err_set(err, errlen, "%s: cannot read", json_path);
    json_t *root = json_loadb(json_text, json_len, JSON_ALLOW_NUL, &je);
    free(json_text);
    if (!root)
        return err_set(err, errlen, "%s:%d:%d: malformed JSON: %s", json_path, je.line, je.column, je.text);
    json_t *cfg = NULL;
    int rc = -1;
    if (!json_is_object(root)) {
        err_set(err, errlen, "%s: the top level must be an object", json_path);
        goto out;
    }
    const json_t *model = json_object_get(root, "model");
    const char *mtype = jstr(model, "type");
    if (!json_is_object(model)) {
        err_set(err, errlen, "%s: no \"model\" object", json_path);
        goto out;
    }
    if (mtype && strcmp(mtype, "BPE") != 0) {
        err_set(err, errlen, "%s: unsupported model type \"%s\" (BPE is supported)", json_path, mtype);
        goto out;
    }
    if (!mtype && !json_object_get(model, "merges")) {
        err_set(err, errlen, "%s: model has no type and no merges", json_path);
        goto out;
    }
    const char *csp = jstr(model, "continuing_subword_prefix"), *eows = jstr(model, "end_of_word_suffix");
    if ((csp && *csp) || (eows && *eows)) {
        err_set(err, errlen, "%s: BPE continuing_subword_prefix/end_of_word_suffix are not supported", json_path);
        goto out;
    }
    const json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_array(added) && !json_is_null(added)) {
        err_set(err, errlen, "%s: added_tokens must be an array", json_path);
        goto out;
    }
    m->algo = TOK_ALGO_BPE;
    m->byte_fallback = jbool(model, "byte_fallback", false);
    m->ignore_merges = jbool(model, "ignore_merges", false);
    if (load_model_vocab(&c, model, added) != 0 || parse_normalizer(&c, json_object_get(root, "normalizer")) != 0 ||
        parse_pretok(&c, json_object_get(root, "pre_tokenizer")) != 0 ||
        parse_decoder(&c, json_object_get(root, "decoder")) != 0)
        goto out;
    m->kind_name = m->byte_level ? "bpe-bytelevel" : "bpe";
    if (vocab_finish(m, err, errlen) != 0 || parse_merges(&c, json_object_get(model, "merges")) != 0 ||
        parse_post(&c, json_object_get(root, "post_processor")) != 0)
        goto out;
    const char *unk = jstr(model, "unk_token");
    if (unk) {
        uint64_t v;
        if (strmap_get(&m->text_map, unk, strlen(unk), &v))
            m->unk = (int32_t)v;
    }
    m->add_bos = m->n_post_prefix > 0;
    m->add_eos = m->n_post_suffix > 0;
    if (m->n_post_prefix)
        m->bos = m->post_prefix[0];
    if (m->n_post_suffix)
        m->eos = m->post_suffix[m->n_post_suffix - 1];

    if (config_path) {
        /* Only string fields are read here. Integers decode as reals because
         * transformers writes "model_max_length": 1000000000000000019884624838656
         * (its "no limit"), which overflows jansson's integers. */
        cfg = json_load_file(config_path, JSON_DECODE_INT_AS_REAL, &je);
        if (!cfg) {
            err_set(err, errlen, "%s:%d:%d: malformed JSON: %s", config_path, je.line, je.column, je.text);
            goto out;
        }
        int32_t id;
        if ((id = config_token(m, cfg, "bos_token")) >= 0) m->bos = id;
        if ((id = config_token(m, cfg, "eos_token")) >= 0) m->eos = id;
        if ((id = config_token(m, cfg, "pad_token")) >= 0) m->pad = id;
        if ((id = config_token(m, cfg, "unk_token")) >= 0) m->unk = id;
        const json_t *tmpl = json_object_get(cfg, "chat_template");
        const char *ts = json_is_string(tmpl) ? json_string_value(tmpl) : NULL;
        if (json_is_array(tmpl)) /* named templates: take "default" */
            for (size_t i = 0; i < json_array_size(tmpl); i++) {
                const json_t *e = json_array_get(tmpl, i);
                const char *name = jstr(e, "name");
                if (name && !strcmp(name, "default"))
                    ts = jstr(e, "template");
            }
        if (ts && !(m->chat_template = arena_strdup(&m->arena, ts))) {
            err_set(err, errlen, "%s: out of memory", config_path);
            goto out;
        }
    }
    if (!m->chat_template && template_path) {
        size_t len;
        char *t = read_small_file(template_path, HF_MAX_TEMPLATE_BYTES, &len);
        if (!t) {
            err_set(err, errlen, "%s: cannot read (or larger than %zu bytes)", template_path, HF_MAX_TEMPLATE_BYTES);
            goto out;
        }
        m->chat_template = arena_strndup(&m->arena, t, len);
        free(t);
        if (!m->chat_template) {
            err_set(err, errlen, "%s: out of memory", template_path);
            goto out;
        }
    }
    vocab_mark_eog_defaults(m);
    /* generation_config.json's eos_token_id: one id or a list */
    const json_t *gen = mf && mf->generation_config ? json_object_get(mf->generation_config, "eos_token_id") : NULL;
    for (size_t i = 0; gen && i < (json_is_array(gen) ? json_array_size(gen) : 1); i++) {
        const json_t *v = json_is_array(gen) ? json_array_get(gen, i) : gen;
        json_int_t id = json_integer_value(v);
        if (json_is_integer(v) && id >= 0 && (uint64_t)id < m->n_vocab)
            m->eog[id >> 3] |= (uint8_t)(1u << (id & 7));
    }
    rc = 0;
out:
    json_decref(root);
    json_decref(cfg);
    return rc;
}
