/* tokenizer/encode.c — the encode pipeline of one call:
 *   repair invalid UTF-8 → split out added/special tokens (leftmost-longest,
 *   through the byte trie, honouring lstrip/rstrip) → per text fragment:
 *   normalize → pre-tokenize → BPE or SPM → BOS/EOS around it all.
 * Everything mutable lives in this call's scratch, so calls run concurrently.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "tokenizer/tok_internal.h"

struct enc_call {
    const struct tok_model *m;
    struct tok_buf b1, b2;
    struct pretok_scratch ps;
    bool ps_ready;
    struct bpe_scratch bs;
    struct tok_ids out;
};

static void enc_call_free(struct enc_call *c)
{
    free(c->b1.p);
    free(c->b2.p);
    if (c->ps_ready)
        pretok_scratch_free(&c->ps);
    bpe_scratch_free(&c->bs);
}

/* Longest added/special token starting at s; 0 when none (or none allowed). */
static size_t trie_match(const struct tok_model *m, const char *s, size_t n, bool parse_special, int32_t *tok)
{
    uint64_t node = 0;
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t child;
        if (!u64map_get(&m->trie, node << 8 | (unsigned char)s[i], &child))
            break;
        node = child;
        int32_t t = m->trie_term[node];
        if (t >= 0 && (parse_special || !(m->tokens[t].flags & TOK_F_SPECIAL))) {
            best = i + 1;
            *tok = t;
        }
    }
    return best;
}

static int encode_fragment(struct enc_call *c, const char *s, size_t n, bool at_start, bool after_special,
                           char *err, size_t errlen)
{
    const struct tok_model *m = c->m;
    if (n == 0)
        return 0;
    const char *p;
    size_t len;
    if (normalize_fragment(m, s, n, at_start, after_special, &c->b1, &c->b2, &p, &len, err, errlen) != 0)
        return -1;
    if (len == 0)
        return 0;
    if (m->algo == TOK_ALGO_SPM) {
        if (spm_encode(m, &c->bs, p, len, &c->out) != 0)
            return err_set(err, errlen, "tokenizer: out of memory");
        return 0;
    }
    if (m->n_split == 0) {
        if (bpe_encode_word(m, &c->bs, p, len, &c->out) != 0)
            return err_set(err, errlen, "tokenizer: out of memory");
        return 0;
    }
    if (!c->ps_ready) {
        if (pretok_scratch_init(&c->ps) != 0) {
            pretok_scratch_free(&c->ps);
            return err_set(err, errlen, "tokenizer: out of memory");
        }
        c->ps_ready = true;
    }
    if (pretok_split(m, &c->ps, p, len, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < c->ps.a.n; i++)
        if (bpe_encode_word(m, &c->bs, p + c->ps.a.off[i], c->ps.a.len[i], &c->out) != 0)
            return err_set(err, errlen, "tokenizer: out of memory");
    return 0;
}

static int encode_all(struct enc_call *c, const char *text, size_t len, bool add_special, bool parse_special,
                      char *err, size_t errlen)
{
    const struct tok_model *m = c->m;
    if (len > TOK_MAX_TEXT)
        return err_set(err, errlen, "tokenizer: text of %zu bytes is too long (max %zu)", len, TOK_MAX_TEXT);
    if (!utf8_valid(text, len)) {
        /* encode a repaired private copy instead */
        struct tok_buf fixed = {0};
        if (utf8_repair(text, len, &fixed) != 0) {
            free(fixed.p);
            return err_set(err, errlen, "tokenizer: out of memory");
        }
        int rc = encode_all(c, fixed.p, fixed.len, add_special, parse_special, err, errlen);
        free(fixed.p);
        return rc;
    }
    if (add_special)
        for (uint32_t i = 0; i < m->n_post_prefix; i++)
            if (tok_ids_push(&c->out, m->post_prefix[i]) != 0)
                return err_set(err, errlen, "tokenizer: out of memory");
    size_t frag = 0, i = 0;
    bool after_special = false;
    if (m->n_trie) {
        while (i < len) {
            unsigned char b = (unsigned char)text[i];
            if (!(m->trie_first[b >> 3] & (1u << (b & 7)))) {
                i++;
                continue;
            }
            int32_t tok = -1;
            size_t ml = trie_match(m, text + i, len - i, parse_special, &tok);
            if (!ml) {
                i++;
                continue;
            }
            size_t end = i;
            if (m->tokens[tok].flags & TOK_F_LSTRIP)
                while (end > frag && isspace((unsigned char)text[end - 1]))
                    end--;
            if (encode_fragment(c, text + frag, end - frag, frag == 0, after_special, err, errlen) != 0)
                return -1;
            if (tok_ids_push(&c->out, tok) != 0)
                return err_set(err, errlen, "tokenizer: out of memory");
            i += ml;
            if (m->tokens[tok].flags & TOK_F_RSTRIP)
                while (i < len && isspace((unsigned char)text[i]))
                    i++;
            frag = i;
            after_special = true;
        }
    }
    if (encode_fragment(c, text + frag, len - frag, frag == 0, after_special, err, errlen) != 0)
        return -1;
    if (add_special)
        for (uint32_t k = 0; k < m->n_post_suffix; k++)
            if (tok_ids_push(&c->out, m->post_suffix[k]) != 0)
                return err_set(err, errlen, "tokenizer: out of memory");
    return 0;
}

int tokenizer_encode_alloc(const struct tokenizer *tok, const char *text, size_t len, bool add_special,
                           bool parse_special, int32_t **ids, size_t *n_out, char *err, size_t errlen)
{
    *ids = NULL;
    *n_out = 0;
    if (!tok || !tok->m)
        return err_set(err, errlen, "tokenizer: not loaded");
    if (!text && len)
        return err_set(err, errlen, "tokenizer: NULL text");
    struct enc_call c = {.m = tok->m};
    int rc = encode_all(&c, text ? text : "", len, add_special, parse_special, err, errlen);
    enc_call_free(&c);
    if (rc != 0) {
        free(c.out.p);
        return -1;
    }
    if (!c.out.p) { /* nothing encoded: hand out a valid empty array */
        c.out.p = malloc(sizeof(int32_t));
        if (!c.out.p)
            return err_set(err, errlen, "tokenizer: out of memory");
    }
    *ids = c.out.p;
    *n_out = c.out.len;
    return 0;
}

int tokenizer_encode(const struct tokenizer *tok, const char *text, size_t len, bool add_special,
                     bool parse_special, int32_t *ids, size_t cap, size_t *n_out, char *err, size_t errlen)
{
    int32_t *all;
    size_t n;
    if (tokenizer_encode_alloc(tok, text, len, add_special, parse_special, &all, &n, err, errlen) != 0) {
        *n_out = 0;
        return -1;
    }
    *n_out = n;
    if (cap && n)
        memcpy(ids, all, (n < cap ? n : cap) * sizeof(*ids));
    free(all);
    if (n > cap)
        return err_set(err, errlen, "tokenizer: output buffer too small (%zu ids, need %zu)", cap, n);
    return 0;
}
