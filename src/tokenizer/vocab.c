/* tokenizer/vocab.c — the token table once a loader has filled it: lookup
 * keys, decoded pieces, the merge table, byte tokens, the special-token trie.
 *
 * GPT-2's byte-level alphabet maps each byte to one printable character: the
 * bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves, the other 68
 * bytes become U+0100.. in increasing byte order. Byte-level vocabularies are
 * converted back to raw bytes here, once, so encoding works on raw bytes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "tokenizer/tok_internal.h"

static int bl_byte_of_cp(uint32_t cp)
{
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp < 0x100 || cp > 0x143)
        return -1;
    /* the n-th byte (in order) that is not printable maps to 0x100 + n */
    uint32_t n = cp - 0x100, k = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        if (printable)
            continue;
        if (k == n)
            return b;
        k++;
    }
    return -1;
}

static int bl_table[0x144]; /* code point → byte, -1 outside the alphabet */
static pthread_once_t bl_once = PTHREAD_ONCE_INIT;

static void bl_table_init(void)
{
    for (uint32_t cp = 0; cp < 0x144; cp++)
        bl_table[cp] = bl_byte_of_cp(cp);
}

long bytelevel_decode(const char *text, size_t len, char *out)
{
    pthread_once(&bl_once, bl_table_init);
    const int *table = bl_table;
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        if (s[i] < 0x80) {
            cp = s[i];
            i++;
        } else if ((s[i] & 0xE0) == 0xC0 && i + 1 < len && (s[i + 1] & 0xC0) == 0x80) {
            cp = ((uint32_t)(s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F);
            i += 2;
        } else {
            return -1; /* every character of the alphabet is 1 or 2 bytes long */
        }
        if (cp >= 0x144 || table[cp] < 0)
            return -1;
        out[o++] = (char)table[cp];
    }
    return (long)o;
}

int vocab_alloc(struct tok_model *m, uint32_t n, char *err, size_t errlen)
{
    if (n == 0 || n > TOK_MAX_VOCAB)
        return err_set(err, errlen, "%s: vocabulary of %u tokens (1..%u allowed)", m->path, n, TOK_MAX_VOCAB);
    m->tokens = calloc(n, sizeof(*m->tokens));
    if (!m->tokens)
        return err_set(err, errlen, "%s: out of memory for %u tokens", m->path, n);
    m->n_vocab = n;
    m->n_model_vocab = n;
    return 0;
}

int32_t vocab_key_lookup(const struct tok_model *m, const char *s, size_t len)
{
    uint64_t v;
    return strmap_get(&m->key_map, s, len, &v) ? (int32_t)v : -1;
}

static bool is_byte_token_text(const char *t, size_t n, int *byte)
{
    if (n != 6 || memcmp(t, "<0x", 3) != 0 || t[5] != '>')
        return false;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = t[i];
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v = v * 16 + d;
    }
    *byte = v;
    return true;
}

/* Text with every "▁" (E2 96 81) replaced by a space. */
static char *unescape_spaces(struct arena *a, const char *t, size_t n, uint32_t *out_len)
{
    char *p = arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + 2 < n && (unsigned char)t[i] == 0xE2 && (unsigned char)t[i + 1] == 0x96 &&
            (unsigned char)t[i + 2] == 0x81) {
            p[o++] = ' ';
            i += 3;
        } else {
            p[o++] = t[i++];
        }
    }
    p[o] = '\0';
    *out_len = (uint32_t)o;
    return p;
}

static int trie_new_node(struct tok_model *m)
{
    if (m->n_trie == m->trie_cap) {
        uint32_t cap = m->trie_cap ? m->trie_cap * 2 : 256;
        int32_t *t = realloc(m->trie_term, cap * sizeof(*t));
        if (!t)
            return -1;
        m->trie_term = t;
        m->trie_cap = cap;
    }
    m->trie_term[m->n_trie] = -1;
    return (int)m->n_trie++;
}

static int trie_insert(struct tok_model *m, const char *s, size_t n, int32_t id)
{
    if (m->n_trie == 0 && trie_new_node(m) < 0)
        return -1;
    uint64_t node = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = node << 8 | (unsigned char)s[i], child;
        if (!u64map_get(&m->trie, key, &child)) {
            int c = trie_new_node(m);
            if (c < 0 || u64map_put(&m->trie, key, (uint64_t)c) < 0)
                return -1;
            child = (uint64_t)c;
        }
        node = child;
    }
    if (m->trie_term[node] < 0) /* first (lowest id) wins on duplicates */
        m->trie_term[node] = id;
    m->trie_first[(unsigned char)s[0] >> 3] |= (uint8_t)(1u << ((unsigned char)s[0] & 7));
    return 0;
}

int vocab_finish(struct tok_model *m, char *err, size_t errlen)
{
    char tmp[TOK_MAX_TOKEN_BYTES];
    strmap_init(&m->key_map);
    strmap_init(&m->text_map);
    for (uint32_t i = 0; i < m->n_vocab; i++) {
        struct tok_token *t = &m->tokens[i];
        if (!t->text)
            return err_set(err, errlen, "%s: token %u has no text", m->path, i);
        if (t->text_len > TOK_MAX_TOKEN_BYTES)
            return err_set(err, errlen, "%s: token %u is %u bytes long (max %u)", m->path, i, t->text_len,
                           TOK_MAX_TOKEN_BYTES);
        /* lookup key */
        const char *key = t->text;
        uint32_t key_len = t->text_len;
        if (m->byte_level && t->type != TOKENIZER_TYPE_CONTROL) {
            long k = bytelevel_decode(t->text, t->text_len, tmp);
            if (k >= 0) {
                char *p = arena_strndup(&m->arena, tmp, (size_t)k);
                if (!p)
                    goto oom;
                key = p;
                key_len = (uint32_t)k;
            }
        }
        /* decoded piece */
        int byte;
        if (t->type == TOKENIZER_TYPE_CONTROL || t->type == TOKENIZER_TYPE_UNKNOWN ||
            t->type == TOKENIZER_TYPE_UNUSED) {
            t->flags |= TOK_F_SPECIAL;
            t->piece = t->text;
            t->piece_len = t->text_len;
        } else if (t->type == TOKENIZER_TYPE_USER_DEFINED) {
            t->piece = t->text;
            t->piece_len = t->text_len;
        } else if ((t->type == TOKENIZER_TYPE_BYTE || m->dec_bytes) &&
                   is_byte_token_text(t->text, t->text_len, &byte)) {
            char b = (char)byte;
            t->piece = arena_strndup(&m->arena, &b, 1);
            if (!t->piece)
                goto oom;
            t->piece_len = 1;
        } else if (m->byte_level && m->dec_bytelevel) {
            t->piece = key; /* decoded bytes, or the text when outside the alphabet */
            t->piece_len = key_len;
        } else if (m->dec_bytelevel) {
            long k = bytelevel_decode(t->text, t->text_len, tmp);
            t->piece = k >= 0 ? arena_strndup(&m->arena, tmp, (size_t)k) : t->text;
            t->piece_len = k >= 0 ? (uint32_t)k : t->text_len;
            if (!t->piece)
                goto oom;
        } else if (!m->dec_unescape) {
            t->piece = t->text;
            t->piece_len = t->text_len;
        } else {
            t->piece = unescape_spaces(&m->arena, t->text, t->text_len, &t->piece_len);
            if (!t->piece)
                goto oom;
        }
        if (t->piece_len > m->max_piece)
            m->max_piece = t->piece_len;
        if (i < m->n_model_vocab && key_len > 0 && strmap_put(&m->key_map, key, key_len, i) < 0)
            goto oom;
        if (t->text_len > 0 && strmap_put(&m->text_map, t->text, t->text_len, i) < 0)
            goto oom;
        if (t->text_len > 0 && (t->type == TOKENIZER_TYPE_CONTROL || t->type == TOKENIZER_TYPE_USER_DEFINED ||
                                t->type == TOKENIZER_TYPE_UNKNOWN || (t->flags & TOK_F_ADDED))) {
            if (trie_insert(m, t->text, t->text_len, (int32_t)i) < 0)
                goto oom;
        }
    }
    /* byte tokens */
    for (int b = 0; b < 256; b++) {
        m->byte_id[b] = -1;
        if (m->byte_level) {
            char c = (char)b;
            m->byte_id[b] = vocab_key_lookup(m, &c, 1);
        } else {
            char name[8];
            snprintf(name, sizeof(name), "<0x%02X>", b);
            uint64_t v;
            if (strmap_get(&m->text_map, name, 6, &v))
                m->byte_id[b] = (int32_t)v;
        }
    }
    m->eog = calloc((m->n_vocab + 7) / 8, 1);
    if (!m->eog)
        goto oom;
    return 0;
oom:
    return err_set(err, errlen, "%s: out of memory building the vocabulary", m->path);
}

int vocab_add_merge(struct tok_model *m, const char *a, size_t alen, const char *b, size_t blen,
                    uint32_t rank, char *err, size_t errlen)
{
    char ka[TOK_MAX_TOKEN_BYTES], kb[TOK_MAX_TOKEN_BYTES * 2];
    if (alen > TOK_MAX_TOKEN_BYTES || blen > TOK_MAX_TOKEN_BYTES)
        return 0;
    long la, lb;
    if (m->byte_level) {
        la = bytelevel_decode(a, alen, ka);
        lb = bytelevel_decode(b, blen, kb);
        if (la < 0 || lb < 0)
            return 0;
    } else {
        memcpy(ka, a, alen);
        memcpy(kb, b, blen);
        la = (long)alen;
        lb = (long)blen;
    }
    int32_t ia = vocab_key_lookup(m, ka, (size_t)la), ib = vocab_key_lookup(m, kb, (size_t)lb);
    if (ia < 0 || ib < 0)
        return 0;
    /* the merged key: ka followed by kb, built in kb's spare room */
    char *joined = kb + lb;
    memcpy(joined, ka, (size_t)la);
    memcpy(joined + la, kb, (size_t)lb);
    int32_t im = vocab_key_lookup(m, joined, (size_t)(la + lb));
    if (im < 0)
        return 0;
    if (u64map_put(&m->merges, (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib,
                   (uint64_t)rank << 32 | (uint32_t)im) < 0)
        return err_set(err, errlen, "%s: out of memory for merges", m->path);
    return 0;
}

void vocab_mark_eog_defaults(struct tok_model *m)
{
    static const char *const names[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
        "<|eom_id|>", "<EOT>", "<|return|>", "<|call|>", "<turn|>", "<eos>", "<end_of_utterance>",
        "<｜end▁of▁sentence｜>", /* DeepSeek */
    };
    if (m->eos >= 0 && (uint32_t)m->eos < m->n_vocab)
        m->eog[m->eos >> 3] |= (uint8_t)(1u << (m->eos & 7));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        uint64_t v;
        if (!strmap_get(&m->text_map, names[i], strlen(names[i]), &v))
            continue;
        uint8_t type = m->tokens[v].type;
        if (type == TOKENIZER_TYPE_CONTROL || type == TOKENIZER_TYPE_USER_DEFINED)
            m->eog[v >> 3] |= (uint8_t)(1u << (v & 7));
    }
}
