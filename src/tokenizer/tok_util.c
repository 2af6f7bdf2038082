/* tokenizer/tok_util.c — small containers for the tokenizer: the u64 → u64
 * hash used for merges and the special-token trie, and the per-call growable
 * buffers (bytes, ids, spans). Load factor of u64map kept under 1/2. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

void u64map_init(struct u64map *m) { memset(m, 0, sizeof(*m)); }

void u64map_free(struct u64map *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

static int u64map_grow(struct u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    struct u64map_slot *slots = malloc(cap * sizeof(*slots));
    if (!slots)
        return -1;
    memset(slots, 0xff, cap * sizeof(*slots));
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key == UINT64_MAX)
            continue;
        size_t j = (size_t)u64map_hash(m->slots[i].key) & (cap - 1);
        while (slots[j].key != UINT64_MAX)
            j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
    if ((m->count + 1) * 2 > m->cap && u64map_grow(m) != 0)
        return -1;
    size_t mask = m->cap - 1, i = (size_t)u64map_hash(key) & mask;
    while (m->slots[i].key != UINT64_MAX) {
        if (m->slots[i].key == key)
            return 0;
        i = (i + 1) & mask;
    }
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->count++;
    return 1;
}

int tok_buf_reserve(struct tok_buf *b, size_t n)
{
    if (n <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < n) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int tok_buf_append(struct tok_buf *b, const void *s, size_t n)
{
    if (n > SIZE_MAX - b->len - 1 || tok_buf_reserve(b, b->len + n + 1) != 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int tok_ids_push(struct tok_ids *v, int32_t id)
{
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        int32_t *p = realloc(v->p, cap * sizeof(*p));
        if (!p)
            return -1;
        v->p = p;
        v->cap = cap;
    }
    v->p[v->len++] = id;
    return 0;
}

int tok_spans_push(struct tok_spans *s, uint32_t off, uint32_t len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        uint32_t *o = realloc(s->off, cap * sizeof(*o));
        if (!o)
            return -1;
        s->off = o;
        uint32_t *l = realloc(s->len, cap * sizeof(*l));
        if (!l)
            return -1;
        s->len = l;
        s->cap = cap;
    }
    s->off[s->n] = off;
    s->len[s->n] = len;
    s->n++;
    return 0;
}
