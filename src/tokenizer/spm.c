/* tokenizer/spm.c — SentencePiece-style BPE by token scores (GGUF "llama"
 * vocabularies: Llama 2, Phi-3, ...).
 *
 * The escaped fragment ("▁Hello▁world") starts as one symbol per UTF-8
 * character. Repeatedly, the adjacent pair whose concatenation is a token with
 * the highest score (ties: leftmost) is merged. Adjacent symbols are always a
 * contiguous substring of the fragment, so a pair's token is found by looking
 * the substring up directly. Symbols that are not tokens at the end (characters
 * outside the vocabulary) fall back to <0xXX> byte tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

struct spm_entry {
    float score;
    uint32_t left, right, size;
    int32_t id;
};

struct spm_heap {
    struct spm_entry *e;
    size_t n, cap;
};

static bool spm_before(const struct spm_entry *a, const struct spm_entry *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static int spm_push(struct spm_heap *h, struct spm_entry x)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct spm_entry *e = realloc(h->e, cap * sizeof(*e));
        if (!e)
            return -1;
        h->e = e;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!spm_before(&x, &h->e[p]))
            break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = x;
    return 0;
}

static struct spm_entry spm_pop(struct spm_heap *h)
{
    struct spm_entry top = h->e[0], last = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && spm_before(&h->e[c + 1], &h->e[c]))
            c++;
        if (!spm_before(&h->e[c], &last))
            break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n)
        h->e[i] = last;
    return top;
}

static int spm_try(const struct tok_model *m, struct bpe_scratch *s, struct spm_heap *h, const char *w,
                   int32_t l)
{
    if (l < 0)
        return 0;
    int32_t r = s->next[l];
    if (r < 0)
        return 0;
    uint32_t size = s->len[l] + s->len[r];
    int32_t id = vocab_key_lookup(m, w + s->start[l], size);
    if (id < 0)
        return 0;
    struct spm_entry e = {m->tokens[id].score, (uint32_t)l, (uint32_t)r, size, id};
    return spm_push(h, e);
}

int spm_encode(const struct tok_model *m, struct bpe_scratch *s, const char *w, size_t n, struct tok_ids *out)
{
    if (n == 0)
        return 0;
    /* reuse the BPE scratch arrays: id, prev, next, start, len */
    if (n > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < n)
            cap *= 2;
        int32_t *a = realloc(s->id, cap * sizeof(*a));
        if (!a) return -1;
        s->id = a;
        a = realloc(s->prev, cap * sizeof(*a));
        if (!a) return -1;
        s->prev = a;
        a = realloc(s->next, cap * sizeof(*a));
        if (!a) return -1;
        s->next = a;
        uint32_t *b = realloc(s->start, cap * sizeof(*b));
        if (!b) return -1;
        s->start = b;
        b = realloc(s->len, cap * sizeof(*b));
        if (!b) return -1;
        s->len = b;
        s->cap = cap;
    }
    int32_t ns = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq_len((unsigned char)w[i]);
        if (k > n - i)
            k = n - i;
        s->start[ns] = (uint32_t)i;
        s->len[ns] = (uint32_t)k;
        s->id[ns] = -2; /* not looked up yet */
        s->prev[ns] = ns - 1;
        s->next[ns] = ns + 1;
        ns++;
        i += k;
    }
    s->next[ns - 1] = -1;

    struct spm_heap h = {0};
    int rc = 0;
    for (int32_t i = 0; i + 1 < ns && rc == 0; i++)
        rc = spm_try(m, s, &h, w, i);
    while (rc == 0 && h.n) {
        struct spm_entry e = spm_pop(&h);
        int32_t l = (int32_t)e.left, r = (int32_t)e.right;
        if (s->len[l] == 0 || s->len[r] == 0 || s->next[l] != r || s->len[l] + s->len[r] != e.size)
            continue;
        s->len[l] += s->len[r];
        s->len[r] = 0;
        s->id[l] = e.id;
        s->next[l] = s->next[r];
        if (s->next[r] >= 0)
            s->prev[s->next[r]] = l;
        rc = spm_try(m, s, &h, w, s->prev[l]);
        if (rc == 0)
            rc = spm_try(m, s, &h, w, l);
    }
    free(h.e);
    if (rc != 0)
        return -1;
    for (int32_t i = 0; i >= 0; i = s->next[i]) {
        int32_t id = s->id[i];
        if (id == -2)
            id = vocab_key_lookup(m, w + s->start[i], s->len[i]);
        if (id >= 0) {
            if (tok_ids_push(out, id) != 0)
                return -1;
        } else if (tok_emit_bytes(m, w + s->start[i], s->len[i], out) != 0) {
            return -1;
        }
    }
    return 0;
}
