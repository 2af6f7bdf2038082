/* tokenizer/bpe.c — byte-pair encoding of one pre-token by merge ranks.
 *
 * The word starts as one symbol per byte (byte-level models) or per UTF-8
 * character (others), kept in a doubly linked list. A binary heap holds every
 * adjacent pair that has a merge, ordered by (rank, left position) — the order
 * both references use; popped entries whose symbols changed since they were
 * pushed are skipped. Each merge adds at most two new pairs, so a word of n
 * symbols costs O(n log n) hash probes, whatever its length.
 *
 * A per-call cache maps words already encoded in this call to their ids, so
 * the common words of a long text are merged once.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

struct bpe_heap_entry {
    uint32_t rank;
    uint32_t left;     /* symbol index */
    int32_t lid, rid;  /* the pair's ids when pushed */
    int32_t mid;       /* the merged id */
};

struct bpe_cache_entry {
    uint64_t hash;     /* 0: empty */
    uint32_t key_off, key_len, ids_off, n_ids;
};

#define BPE_CACHE_MAX_WORD 256
#define BPE_CACHE_MAX_ENTRIES (1u << 20)

void bpe_scratch_free(struct bpe_scratch *s)
{
    free(s->id);
    free(s->prev);
    free(s->next);
    free(s->start);
    free(s->len);
    free(s->heap);
    free(s->cache);
    free(s->cache_keys.p);
    free(s->cache_ids.p);
    memset(s, 0, sizeof(*s));
}

static int scratch_reserve(struct bpe_scratch *s, size_t n)
{
    if (n <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n)
        cap *= 2;
    int32_t *id = realloc(s->id, cap * sizeof(*id));
    if (!id) return -1;
    s->id = id;
    int32_t *prev = realloc(s->prev, cap * sizeof(*prev));
    if (!prev) return -1;
    s->prev = prev;
    int32_t *next = realloc(s->next, cap * sizeof(*next));
    if (!next) return -1;
    s->next = next;
    uint32_t *start = realloc(s->start, cap * sizeof(*start));
    if (!start) return -1;
    s->start = start;
    uint32_t *len = realloc(s->len, cap * sizeof(*len));
    if (!len) return -1;
    s->len = len;
    s->cap = cap;
    return 0;
}

static bool heap_less(const struct bpe_heap_entry *a, const struct bpe_heap_entry *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int heap_push(struct bpe_scratch *s, struct bpe_heap_entry e)
{
    if (s->heap_n == s->heap_cap) {
        size_t cap = s->heap_cap ? s->heap_cap * 2 : 64;
        struct bpe_heap_entry *h = realloc(s->heap, cap * sizeof(*h));
        if (!h)
            return -1;
        s->heap = h;
        s->heap_cap = cap;
    }
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
    return 0;
}

static struct bpe_heap_entry heap_pop(struct bpe_scratch *s)
{
    struct bpe_heap_entry top = s->heap[0], last = s->heap[--s->heap_n];
    size_t i = 0, n = s->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!heap_less(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n)
        s->heap[i] = last;
    return top;
}

static int try_pair(const struct tok_model *m, struct bpe_scratch *s, int32_t l)
{
    if (l < 0)
        return 0;
    int32_t r = s->next[l];
    if (r < 0 || s->id[l] < 0 || s->id[r] < 0)
        return 0;
    uint64_t v;
    if (!u64map_get(&m->merges, (uint64_t)(uint32_t)s->id[l] << 32 | (uint32_t)s->id[r], &v))
        return 0;
    struct bpe_heap_entry e = {(uint32_t)(v >> 32), (uint32_t)l, s->id[l], s->id[r], (int32_t)(uint32_t)v};
    return heap_push(s, e);
}

int tok_emit_bytes(const struct tok_model *m, const char *p, size_t n, struct tok_ids *out)
{
    for (size_t i = 0; i < n; i++) {
        int32_t id = m->byte_id[(unsigned char)p[i]];
        if (id < 0)
            id = m->unk;
        if (id >= 0 && tok_ids_push(out, id) != 0)
            return -1;
    }
    return 0;
}

static uint64_t hash_word(const char *w, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)w[i];
        h *= 1099511628211ull;
    }
    return h | 1; /* never 0, which marks an empty slot */
}

static struct bpe_cache_entry *cache_find(struct bpe_scratch *s, const char *w, size_t n, uint64_t h)
{
    size_t mask = s->cache_cap - 1, i = (size_t)(h >> 7) & mask;
    for (;;) {
        struct bpe_cache_entry *e = &s->cache[i];
        if (e->hash == 0)
            return e;
        if (e->hash == h && e->key_len == n && memcmp(s->cache_keys.p + e->key_off, w, n) == 0)
            return e;
        i = (i + 1) & mask;
    }
}

static int cache_grow(struct bpe_scratch *s)
{
    size_t cap = s->cache_cap ? s->cache_cap * 2 : 64; /* grows with the text: short prompts stay cheap */
    struct bpe_cache_entry *old = s->cache;
    size_t old_cap = s->cache_cap;
    s->cache = calloc(cap, sizeof(*s->cache));
    if (!s->cache) {
        s->cache = old;
        return -1;
    }
    s->cache_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].hash)
            continue;
        size_t j = (size_t)(old[i].hash >> 7) & (cap - 1);
        while (s->cache[j].hash)
            j = (j + 1) & (cap - 1);
        s->cache[j] = old[i];
    }
    free(old);
    return 0;
}

/* The merge loop proper: appends the ids of w to out. */
static int bpe_merge_word(const struct tok_model *m, struct bpe_scratch *s, const char *w, size_t n,
                          struct tok_ids *out)
{
    if (m->ignore_merges || m->newline_words_whole) {
        bool try_whole = m->ignore_merges;
        if (!try_whole) {
            try_whole = true;
            for (size_t i = 0; i < n; i++)
                if (w[i] != '\n') { try_whole = false; break; }
        }
        int32_t id = try_whole ? vocab_key_lookup(m, w, n) : -1;
        if (id >= 0)
            return tok_ids_push(out, id);
    }
    if (scratch_reserve(s, n) != 0)
        return -1;
    /* initial symbols */
    int32_t ns = 0;
    for (size_t i = 0; i < n;) {
        size_t k = m->byte_level ? 1 : utf8_seq_len((unsigned char)w[i]);
        if (k > n - i)
            k = n - i;
        s->id[ns] = m->byte_level ? m->byte_id[(unsigned char)w[i]] : vocab_key_lookup(m, w + i, k);
        s->start[ns] = (uint32_t)i;
        s->len[ns] = (uint32_t)k;
        s->prev[ns] = ns - 1;
        s->next[ns] = ns + 1;
        ns++;
        i += k;
    }
    s->next[ns - 1] = -1;
    s->heap_n = 0;
    /* start every pair's hash probe at once: the merge table is megabytes, so
     * overlapping the cache misses beats taking them one after another */
    if (m->merges.cap)
        for (int32_t i = 0; i + 1 < ns; i++) {
            uint64_t key = (uint64_t)(uint32_t)s->id[i] << 32 | (uint32_t)s->id[i + 1];
            __builtin_prefetch(&m->merges.slots[u64map_hash(key) & (m->merges.cap - 1)]);
        }
    for (int32_t i = 0; i + 1 < ns; i++)
        if (try_pair(m, s, i) != 0)
            return -1;
    while (s->heap_n) {
        struct bpe_heap_entry e = heap_pop(s);
        int32_t l = (int32_t)e.left;
        if (s->len[l] == 0 || s->id[l] != e.lid)
            continue;
        int32_t r = s->next[l];
        if (r < 0 || s->id[r] != e.rid)
            continue;
        s->id[l] = e.mid;
        s->len[l] += s->len[r];
        s->len[r] = 0;
        s->next[l] = s->next[r];
        if (s->next[r] >= 0)
            s->prev[s->next[r]] = l;
        if (try_pair(m, s, s->prev[l]) != 0 || try_pair(m, s, l) != 0)
            return -1;
    }
    for (int32_t i = 0; i >= 0; i = s->next[i]) {
        if (s->id[i] >= 0) {
            if (tok_ids_push(out, s->id[i]) != 0)
                return -1;
        } else if (m->byte_fallback || m->byte_level) {
            if (tok_emit_bytes(m, w + s->start[i], s->len[i], out) != 0)
                return -1;
        } else if (m->unk >= 0) {
            if (tok_ids_push(out, m->unk) != 0)
                return -1;
        }
    }
    return 0;
}

int bpe_encode_word(const struct tok_model *m, struct bpe_scratch *s, const char *w, size_t n,
                    struct tok_ids *out)
{
    if (n == 0)
        return 0;
    if (n > BPE_CACHE_MAX_WORD)
        return bpe_merge_word(m, s, w, n, out);
    if (s->cache_n * 2 >= s->cache_cap && s->cache_n < BPE_CACHE_MAX_ENTRIES && cache_grow(s) != 0)
        return -1;
    uint64_t h = hash_word(w, n);
    struct bpe_cache_entry *e = cache_find(s, w, n, h);
    if (e->hash) {
        for (uint32_t i = 0; i < e->n_ids; i++)
            if (tok_ids_push(out, s->cache_ids.p[e->ids_off + i]) != 0)
                return -1;
        return 0;
    }
    size_t before = out->len;
    if (bpe_merge_word(m, s, w, n, out) != 0)
        return -1;
    if (s->cache_n * 2 >= s->cache_cap || s->cache_ids.len > UINT32_MAX / 2 || s->cache_keys.len > UINT32_MAX / 2)
        return 0; /* cache full: stop remembering */
    uint32_t key_off = (uint32_t)s->cache_keys.len, ids_off = (uint32_t)s->cache_ids.len;
    if (tok_buf_append(&s->cache_keys, w, n) != 0)
        return -1;
    for (size_t i = before; i < out->len; i++)
        if (tok_ids_push(&s->cache_ids, out->p[i]) != 0)
            return -1;
    e->hash = h;
    e->key_off = key_off;
    e->key_len = (uint32_t)n;
    e->ids_off = ids_off;
    e->n_ids = (uint32_t)(out->len - before);
    s->cache_n++;
    return 0;
}
