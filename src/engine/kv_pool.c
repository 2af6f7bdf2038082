/* engine/kv_pool.c — the paged KV pool and its prefix tree; see kv_pool.h.
 *
 * Lists: the free list is singly linked through blk[].next; the LRU list of
 * cached blocks is doubly linked (prev/next), oldest at the head. A block whose
 * refcount drops to 0 goes to the LRU tail when it is a tree node, else to the
 * free list.
 *
 * Why only leaves ever reach the LRU head: a sequence's table is a path from the
 * root, so a referenced node's parent is referenced too (by the same table);
 * and a release drops references last block first, so a parent enters the LRU
 * after its children. Eviction still asserts the head has no children.
 *
 * Namespaces are interned in a table of max_seqs + KV_NS_SPARE entries; an
 * entry is referenced by its open sequences and its first-level tree nodes.
 * When a new namespace finds the table full, cached blocks are evicted (oldest
 * first) until an entry frees; one always does, because at most max_seqs
 * entries have open sequences and the others hold only cached nodes.
 */
#include "engine/kv_pool.h"

#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#define KV_NS_SPARE 64u          /* namespaces kept beyond the open sequences' */
#define KV_NS_BIT 0x80000000u    /* a tree parent with this bit is a namespace id */

struct kv_block {
    uint32_t refs;
    uint32_t prev, next;         /* LRU links, or next on the free list; KV_POOL_NONE ends */
    uint32_t parent;             /* tree key: the previous block, or KV_NS_BIT | namespace */
    uint32_t hash;               /* of (parent, tokens) */
    uint32_t n_children;         /* tree nodes whose parent is this block */
    bool in_tree;
    int32_t tokens[KV_POOL_BLOCK]; /* the tokens whose KV the block holds (valid in_tree) */
};

struct kv_ns {
    uint32_t refs;               /* 0: free entry */
    uint32_t hash, len;
    char key[KV_POOL_NS_MAX];    /* (len) three length-prefixed strings */
};

struct kv_seq {
    bool open;
    uint32_t ns;
    uint32_t n_blocks;           /* table entries */
    uint32_t n_pub;              /* table[0, n_pub) are tree nodes forming a path */
    uint32_t len;                /* positions holding KV */
    uint32_t *blocks;            /* (max_seq_blocks) */
};

struct kv_pool {
    struct kv_pool_config cfg;
    uint32_t max_seq_blocks;
    struct kv_block *blk;        /* (n_blocks) */
    uint32_t free_head, n_free;
    uint32_t lru_head, lru_tail, n_lru;
    uint32_t *table;             /* (table_mask + 1) node table: block id + 1, 0 empty */
    uint32_t table_mask;
    struct kv_ns *ns;            /* (n_ns) */
    uint32_t n_ns;
    struct kv_seq *seq;          /* (max_seqs) */
    uint32_t *seq_blocks;        /* (max_seqs, max_seq_blocks) the tables' storage */
    uint32_t n_open;
    uint64_t lookups, hit_tokens, evictions;
};

/* ---- hashing ---- */

static uint32_t mix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

static uint32_t node_hash(uint32_t parent, const int32_t *tokens)
{
    uint32_t h = mix32(parent ^ 0x9e3779b9U);
    for (uint32_t i = 0; i < KV_POOL_BLOCK; i++)
        h = mix32(h ^ (uint32_t)tokens[i]) + i;
    return h;
}

static uint32_t bytes_hash(const char *s, uint32_t n)
{
    uint32_t h = 2166136261U;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619U;
    return h;
}

/* ---- lists ---- */

static void lru_remove(struct kv_pool *p, uint32_t b)
{
    struct kv_block *k = &p->blk[b];
    if (k->prev != KV_POOL_NONE)
        p->blk[k->prev].next = k->next;
    else
        p->lru_head = k->next;
    if (k->next != KV_POOL_NONE)
        p->blk[k->next].prev = k->prev;
    else
        p->lru_tail = k->prev;
    k->prev = k->next = KV_POOL_NONE;
    p->n_lru--;
}

static void lru_push(struct kv_pool *p, uint32_t b)
{
    struct kv_block *k = &p->blk[b];
    k->next = KV_POOL_NONE;
    k->prev = p->lru_tail;
    if (p->lru_tail != KV_POOL_NONE)
        p->blk[p->lru_tail].next = b;
    else
        p->lru_head = b;
    p->lru_tail = b;
    p->n_lru++;
}

static void free_push(struct kv_pool *p, uint32_t b)
{
    p->blk[b].prev = KV_POOL_NONE;
    p->blk[b].next = p->free_head;
    p->free_head = b;
    p->n_free++;
}

/* ---- node table ---- */

static uint32_t node_find(const struct kv_pool *p, uint32_t parent, const int32_t *tokens, uint32_t h)
{
    for (uint32_t i = h & p->table_mask;; i = (i + 1) & p->table_mask) {
        uint32_t e = p->table[i];
        if (!e)
            return KV_POOL_NONE;
        const struct kv_block *k = &p->blk[e - 1];
        if (k->hash == h && k->parent == parent && !memcmp(k->tokens, tokens, sizeof(k->tokens)))
            return e - 1;
    }
}

static void node_insert(struct kv_pool *p, uint32_t b)
{
    uint32_t i = p->blk[b].hash & p->table_mask;
    while (p->table[i])
        i = (i + 1) & p->table_mask;
    p->table[i] = b + 1;
}

/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
static void node_delete(struct kv_pool *p, uint32_t b)
{
    uint32_t i = p->blk[b].hash & p->table_mask;
    while (p->table[i] != b + 1) {
        MEMRA_ASSERT(p->table[i] != 0);
        i = (i + 1) & p->table_mask;
    }
    for (uint32_t j = i;;) {
        j = (j + 1) & p->table_mask;
        uint32_t e = p->table[j];
        if (!e)
            break;
        uint32_t home = p->blk[e - 1].hash & p->table_mask;
        /* e may move back to i only when its home is not cyclically in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        p->table[i] = e;
        i = j;
    }
    p->table[i] = 0;
}

/* ---- namespaces ---- */

static void ns_unref(struct kv_pool *p, uint32_t id)
{
    MEMRA_ASSERT(p->ns[id].refs > 0);
    p->ns[id].refs--;
}

/* ---- blocks ---- */

static void tree_remove(struct kv_pool *p, uint32_t b)
{
    struct kv_block *k = &p->blk[b];
    node_delete(p, b);
    if (k->parent & KV_NS_BIT)
        ns_unref(p, k->parent & ~KV_NS_BIT);
    else
        p->blk[k->parent].n_children--;
    k->in_tree = false;
}

/* Evict the oldest cached block onto the free list. */
static void evict_one(struct kv_pool *p)
{
    uint32_t b = p->lru_head;
    MEMRA_ASSERT(b != KV_POOL_NONE);
    MEMRA_ASSERT(p->blk[b].n_children == 0);
    lru_remove(p, b);
    tree_remove(p, b);
    free_push(p, b);
    p->evictions++;
}

/* A fresh block with refcount 1; the caller checked kv_pool_available. */
static uint32_t block_alloc(struct kv_pool *p)
{
    if (!p->n_free)
        evict_one(p);
    uint32_t b = p->free_head;
    MEMRA_ASSERT(b != KV_POOL_NONE);
    p->free_head = p->blk[b].next;
    p->n_free--;
    p->blk[b].next = KV_POOL_NONE;
    p->blk[b].refs = 1;
    return b;
}

static void block_ref(struct kv_pool *p, uint32_t b)
{
    if (p->blk[b].refs == 0) {
        MEMRA_ASSERT(p->blk[b].in_tree); /* only cached blocks are taken by reference */
        lru_remove(p, b);
    }
    p->blk[b].refs++;
}

static void block_unref(struct kv_pool *p, uint32_t b)
{
    MEMRA_ASSERT(p->blk[b].refs > 0);
    if (--p->blk[b].refs)
        return;
    if (p->blk[b].in_tree)
        lru_push(p, b);
    else
        free_push(p, b);
}

static bool block_shared(const struct kv_pool *p, uint32_t b)
{
    return p->blk[b].refs > 1 || p->blk[b].in_tree;
}

/* ---- pool ---- */

int kv_pool_init(struct kv_pool **out, const struct kv_pool_config *cfg, char *err, size_t errlen)
{
    *out = NULL;
    if (cfg->n_blocks == 0 || cfg->n_blocks >= KV_NS_BIT || cfg->max_seqs == 0 || cfg->max_ctx == 0)
        return err_set(err, errlen, "kv pool: %u blocks, %u sequences, context %u (each must be ≥ 1, blocks < 2^31)",
                       cfg->n_blocks, cfg->max_seqs, cfg->max_ctx);
    struct kv_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return err_set(err, errlen, "kv pool: out of memory");
    p->cfg = *cfg;
    p->max_seq_blocks = (cfg->max_ctx + KV_POOL_BLOCK - 1) / KV_POOL_BLOCK;
    uint64_t cap = 16;
    while (cap < 2ull * cfg->n_blocks)
        cap *= 2;
    p->table_mask = (uint32_t)(cap - 1);
    p->n_ns = cfg->max_seqs + KV_NS_SPARE;
    p->blk = calloc(cfg->n_blocks, sizeof(*p->blk));
    p->table = calloc(cap, sizeof(*p->table));
    p->ns = calloc(p->n_ns, sizeof(*p->ns));
    p->seq = calloc(cfg->max_seqs, sizeof(*p->seq));
    p->seq_blocks = calloc((size_t)cfg->max_seqs * p->max_seq_blocks, sizeof(*p->seq_blocks));
    if (!p->blk || !p->table || !p->ns || !p->seq || !p->seq_blocks) {
        kv_pool_free(p);
        return err_set(err, errlen, "kv pool: out of memory for %u blocks and %u sequences", cfg->n_blocks,
                       cfg->max_seqs);
    }
    p->free_head = p->lru_head = p->lru_tail = KV_POOL_NONE;
    for (uint32_t b = cfg->n_blocks; b-- > 0;) /* block 0 first out */
        free_push(p, b);
    for (uint32_t i = 0; i < cfg->max_seqs; i++)
        p->seq[i].blocks = p->seq_blocks + (size_t)i * p->max_seq_blocks;
    *out = p;
    return 0;
}

void kv_pool_free(struct kv_pool *p)
{
    if (!p)
        return;
    free(p->blk);
    free(p->table);
    free(p->ns);
    free(p->seq);
    free(p->seq_blocks);
    free(p);
}

uint32_t kv_pool_max_seq_blocks(const struct kv_pool *p) { return p->max_seq_blocks; }

uint32_t kv_pool_available(const struct kv_pool *p) { return p->n_free + p->n_lru; }

static struct kv_seq *seq_get(const struct kv_pool *p, uint32_t seq)
{
    MEMRA_ASSERT(seq < p->cfg.max_seqs && p->seq[seq].open);
    return &p->seq[seq];
}

static int ns_put(char *key, uint32_t *len, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n > KV_POOL_NS_MAX || *len + 4 + n > KV_POOL_NS_MAX)
        return -1;
    uint32_t n32 = (uint32_t)n;
    memcpy(key + *len, &n32, 4);
    memcpy(key + *len + 4, s ? s : "", n);
    *len += 4 + (uint32_t)n;
    return 0;
}

static uint32_t seq_slot_free(const struct kv_pool *p)
{
    for (uint32_t i = 0; i < p->cfg.max_seqs; i++)
        if (!p->seq[i].open)
            return i;
    return KV_POOL_NONE;
}

int kv_pool_seq_open(struct kv_pool *p, const struct kv_pool_ns *ns, uint32_t *seq, char *err, size_t errlen)
{
    uint32_t sid = seq_slot_free(p);
    if (sid == KV_POOL_NONE)
        return err_set(err, errlen, "kv pool: all %u sequences are open", p->cfg.max_seqs);
    char key[KV_POOL_NS_MAX];
    uint32_t len = 0;
    if (ns_put(key, &len, ns->model) || ns_put(key, &len, ns->tenant) || ns_put(key, &len, ns->salt))
        return err_set(err, errlen, "kv pool: the cache namespace (model, tenant, cache_salt) is longer than %u bytes",
                       KV_POOL_NS_MAX - 12);
    uint32_t h = bytes_hash(key, len), id = KV_POOL_NONE;
    for (uint32_t i = 0; i < p->n_ns && id == KV_POOL_NONE; i++)
        if (p->ns[i].refs && p->ns[i].hash == h && p->ns[i].len == len && !memcmp(p->ns[i].key, key, len))
            id = i;
    while (id == KV_POOL_NONE) {
        for (uint32_t i = 0; i < p->n_ns && id == KV_POOL_NONE; i++)
            if (!p->ns[i].refs)
                id = i;
        if (id == KV_POOL_NONE)
            evict_one(p); /* frees an entry eventually: see the file comment */
        else {
            p->ns[id].hash = h;
            p->ns[id].len = len;
            memcpy(p->ns[id].key, key, len);
        }
    }
    p->ns[id].refs++;
    struct kv_seq *s = &p->seq[sid];
    s->open = true;
    s->ns = id;
    s->n_blocks = s->n_pub = s->len = 0;
    p->n_open++;
    *seq = sid;
    return 0;
}

uint32_t kv_pool_seq_attach(struct kv_pool *p, uint32_t seq, const int32_t *tokens, uint32_t n)
{
    struct kv_seq *s = seq_get(p, seq);
    MEMRA_ASSERT(s->n_blocks == 0);
    p->lookups++;
    uint32_t parent = KV_NS_BIT | s->ns, k = 0;
    while ((k + 1) * KV_POOL_BLOCK <= n && k < p->max_seq_blocks) {
        const int32_t *t = tokens + (size_t)k * KV_POOL_BLOCK;
        uint32_t b = node_find(p, parent, t, node_hash(parent, t));
        if (b == KV_POOL_NONE)
            break;
        block_ref(p, b);
        s->blocks[k++] = b;
        parent = b;
    }
    s->n_blocks = s->n_pub = k;
    s->len = k * KV_POOL_BLOCK;
    p->hit_tokens += s->len;
    return s->len;
}

/* The table entries a reserve keeps: a rollback drops the blocks past pos. */
static uint32_t reserve_kept(const struct kv_seq *s, uint32_t pos)
{
    if (pos >= s->len)
        return s->n_blocks;
    uint32_t k = (pos + KV_POOL_BLOCK - 1) / KV_POOL_BLOCK;
    return k < s->n_blocks ? k : s->n_blocks;
}

uint32_t kv_pool_seq_need(const struct kv_pool *p, uint32_t seq, uint32_t pos, uint32_t end)
{
    const struct kv_seq *s = seq_get(p, seq);
    uint32_t kept = reserve_kept(s, pos);
    uint32_t endb = (end + KV_POOL_BLOCK - 1) / KV_POOL_BLOCK, need = endb > kept ? endb - kept : 0;
    for (uint32_t k = pos / KV_POOL_BLOCK; k < kept && k < endb; k++)
        need += block_shared(p, s->blocks[k]);
    return need;
}

int kv_pool_seq_reserve(struct kv_pool *p, uint32_t seq, uint32_t pos, uint32_t end, struct kv_pool_copy *copies,
                        uint32_t *n_copies)
{
    struct kv_seq *s = seq_get(p, seq);
    MEMRA_ASSERT(pos <= s->len && pos <= end && end <= p->cfg.max_ctx);
    if (kv_pool_seq_need(p, seq, pos, end) > kv_pool_available(p))
        return -1;
    uint32_t kept = reserve_kept(s, pos);
    if (pos < s->len) { /* roll back: drop the blocks past pos, last first */
        while (s->n_blocks > kept)
            block_unref(p, s->blocks[--s->n_blocks]);
        s->len = pos;
        if (s->n_pub > kept)
            s->n_pub = kept;
    }
    uint32_t endb = (end + KV_POOL_BLOCK - 1) / KV_POOL_BLOCK, c0 = *n_copies;
    for (uint32_t k = pos / KV_POOL_BLOCK; k < kept && k < endb; k++) {
        uint32_t src = s->blocks[k];
        if (!block_shared(p, src))
            continue;
        uint32_t dst = block_alloc(p); /* src is referenced: never the evicted one */
        copies[(*n_copies)++] = (struct kv_pool_copy){.dst = dst, .src = src};
        s->blocks[k] = dst;
        if (s->n_pub > k)
            s->n_pub = k;
    }
    for (uint32_t k = s->n_blocks; k < endb; k++)
        s->blocks[k] = block_alloc(p);
    if (endb > s->n_blocks)
        s->n_blocks = endb;
    /* the sources go last: a later reserve may reuse one, and its copies come after ours */
    for (uint32_t i = c0; i < *n_copies; i++)
        block_unref(p, copies[i].src);
    return 0;
}

void kv_pool_seq_commit(struct kv_pool *p, uint32_t seq, const int32_t *tokens, uint32_t n)
{
    struct kv_seq *s = seq_get(p, seq);
    MEMRA_ASSERT(n >= s->len && n <= s->n_blocks * KV_POOL_BLOCK);
    s->len = n;
    uint32_t full = n / KV_POOL_BLOCK;
    for (uint32_t k = s->n_pub; k < full; k++) {
        uint32_t parent = k ? s->blocks[k - 1] : (KV_NS_BIT | s->ns);
        const int32_t *t = tokens + (size_t)k * KV_POOL_BLOCK;
        uint32_t h = node_hash(parent, t), b = s->blocks[k];
        uint32_t x = node_find(p, parent, t, h);
        if (x == b) /* a fork's sibling published it */
            continue;
        if (x != KV_POOL_NONE) { /* the same prefix is cached: share it, drop ours */
            block_ref(p, x);
            s->blocks[k] = x;
            block_unref(p, b);
            continue;
        }
        struct kv_block *kb = &p->blk[b];
        MEMRA_ASSERT(!kb->in_tree);
        memcpy(kb->tokens, t, sizeof(kb->tokens));
        kb->parent = parent;
        kb->hash = h;
        kb->n_children = 0;
        kb->in_tree = true;
        node_insert(p, b);
        if (parent & KV_NS_BIT)
            p->ns[s->ns].refs++;
        else
            p->blk[parent].n_children++;
    }
    if (full > s->n_pub)
        s->n_pub = full;
}

int kv_pool_seq_fork(struct kv_pool *p, uint32_t src, uint32_t *seq, char *err, size_t errlen)
{
    const struct kv_seq *a = seq_get(p, src);
    uint32_t sid = seq_slot_free(p);
    if (sid == KV_POOL_NONE)
        return err_set(err, errlen, "kv pool: all %u sequences are open", p->cfg.max_seqs);
    struct kv_seq *s = &p->seq[sid];
    uint32_t nb = (a->len + KV_POOL_BLOCK - 1) / KV_POOL_BLOCK;
    for (uint32_t k = 0; k < nb; k++) {
        s->blocks[k] = a->blocks[k];
        block_ref(p, a->blocks[k]);
    }
    s->open = true;
    s->ns = a->ns;
    p->ns[a->ns].refs++;
    s->n_blocks = nb;
    s->n_pub = a->n_pub < nb ? a->n_pub : nb;
    s->len = a->len;
    p->n_open++;
    *seq = sid;
    return 0;
}

void kv_pool_seq_release(struct kv_pool *p, uint32_t seq)
{
    struct kv_seq *s = seq_get(p, seq);
    while (s->n_blocks) /* last first: parents enter the LRU after their children */
        block_unref(p, s->blocks[--s->n_blocks]);
    ns_unref(p, s->ns);
    s->open = false;
    s->n_pub = s->len = 0;
    p->n_open--;
}

const uint32_t *kv_pool_seq_blocks(const struct kv_pool *p, uint32_t seq, uint32_t *n_blocks)
{
    const struct kv_seq *s = seq_get(p, seq);
    *n_blocks = s->n_blocks;
    return s->blocks;
}

uint32_t kv_pool_seq_len(const struct kv_pool *p, uint32_t seq) { return seq_get(p, seq)->len; }

void kv_pool_get_stats(const struct kv_pool *p, struct kv_pool_stats *out)
{
    out->n_blocks = p->cfg.n_blocks;
    out->free = p->n_free;
    out->cached = p->n_lru;
    out->used = p->cfg.n_blocks - p->n_free - p->n_lru;
    out->seqs = p->n_open;
    out->lookups = p->lookups;
    out->hit_tokens = p->hit_tokens;
    out->evictions = p->evictions;
}

uint32_t kv_pool_block_refs(const struct kv_pool *p, uint32_t block)
{
    MEMRA_ASSERT(block < p->cfg.n_blocks);
    return p->blk[block].refs;
}

/* ---- invariants ---- */

#define CHECK_OR_FAIL(cond, ...)                                                                                       \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            err_set(err, errlen, __VA_ARGS__);                                                                         \
            goto fail;                                                                                                 \
        }                                                                                                              \
    } while (0)

int kv_pool_check(const struct kv_pool *p, char *err, size_t errlen)
{
    uint32_t nb = p->cfg.n_blocks;
    uint32_t *refs = calloc(nb, sizeof(*refs)), *children = calloc(nb, sizeof(*children));
    uint32_t *nsrefs = calloc(p->n_ns, sizeof(*nsrefs));
    uint8_t *where = calloc(nb, 1); /* 1 free list, 2 LRU */
    int rc = -1;
    if (!refs || !children || !nsrefs || !where) {
        err_set(err, errlen, "kv pool check: out of memory");
        goto fail;
    }
    uint32_t n_open = 0;
    for (uint32_t i = 0; i < p->cfg.max_seqs; i++) {
        const struct kv_seq *s = &p->seq[i];
        if (!s->open)
            continue;
        n_open++;
        nsrefs[s->ns]++;
        CHECK_OR_FAIL(s->n_blocks <= p->max_seq_blocks && s->len <= s->n_blocks * KV_POOL_BLOCK &&
                      s->n_pub * KV_POOL_BLOCK <= s->len, "seq %u: %u blocks, %u published, length %u", i,
                      s->n_blocks, s->n_pub, s->len);
        for (uint32_t k = 0; k < s->n_blocks; k++) {
            uint32_t b = s->blocks[k];
            CHECK_OR_FAIL(b < nb, "seq %u: block %u out of range", i, b);
            for (uint32_t m = 0; m < k; m++)
                CHECK_OR_FAIL(s->blocks[m] != b, "seq %u: block %u twice in its table", i, b);
            refs[b]++;
            if (k < s->n_pub) {
                uint32_t want = k ? s->blocks[k - 1] : (KV_NS_BIT | s->ns);
                CHECK_OR_FAIL(p->blk[b].in_tree && p->blk[b].parent == want,
                              "seq %u: published block %u (index %u) is not the tree child of its predecessor", i, b,
                              k);
            }
        }
    }
    CHECK_OR_FAIL(n_open == p->n_open, "%u sequences open, counted %u", n_open, p->n_open);
    uint32_t n = 0;
    for (uint32_t b = p->free_head; b != KV_POOL_NONE; b = p->blk[b].next, n++) {
        CHECK_OR_FAIL(n < nb && b < nb && !where[b], "free list is corrupt at block %u", b);
        where[b] = 1;
    }
    CHECK_OR_FAIL(n == p->n_free, "free list holds %u blocks, counted %u", n, p->n_free);
    n = 0;
    for (uint32_t b = p->lru_head, prev = KV_POOL_NONE; b != KV_POOL_NONE; prev = b, b = p->blk[b].next, n++) {
        CHECK_OR_FAIL(n < nb && b < nb && !where[b] && p->blk[b].prev == prev, "LRU list is corrupt at block %u", b);
        where[b] = 2;
    }
    CHECK_OR_FAIL(n == p->n_lru, "LRU list holds %u blocks, counted %u", n, p->n_lru);
    uint32_t n_tree = 0;
    for (uint32_t b = 0; b < nb; b++) {
        const struct kv_block *k = &p->blk[b];
        CHECK_OR_FAIL(k->refs == refs[b], "block %u: refcount %u but %u table references", b, k->refs, refs[b]);
        uint8_t want = k->refs ? 0 : k->in_tree ? 2 : 1;
        CHECK_OR_FAIL(where[b] == want, "block %u: refcount %u, in tree %d, but on list %u", b, k->refs,
                      k->in_tree, where[b]);
        if (!k->in_tree)
            continue;
        n_tree++;
        CHECK_OR_FAIL(k->hash == node_hash(k->parent, k->tokens) &&
                      node_find(p, k->parent, k->tokens, k->hash) == b, "block %u: not found under its key", b);
        if (k->parent & KV_NS_BIT) {
            CHECK_OR_FAIL((k->parent & ~KV_NS_BIT) < p->n_ns, "block %u: bad namespace", b);
            nsrefs[k->parent & ~KV_NS_BIT]++;
        } else {
            CHECK_OR_FAIL(k->parent < nb && p->blk[k->parent].in_tree, "block %u: parent %u not in the tree", b,
                          k->parent);
            CHECK_OR_FAIL(!k->refs || p->blk[k->parent].refs, "block %u referenced but its parent %u is not", b,
                          k->parent);
            children[k->parent]++;
        }
    }
    uint32_t n_table = 0;
    for (uint32_t i = 0; i <= p->table_mask; i++)
        n_table += p->table[i] != 0;
    CHECK_OR_FAIL(n_table == n_tree, "node table holds %u entries for %u tree blocks", n_table, n_tree);
    for (uint32_t b = 0; b < nb; b++)
        CHECK_OR_FAIL(!p->blk[b].in_tree || children[b] == p->blk[b].n_children, "block %u: %u children, counted %u",
                      b, children[b], p->blk[b].n_children);
    for (uint32_t i = 0; i < p->n_ns; i++)
        CHECK_OR_FAIL(nsrefs[i] == p->ns[i].refs, "namespace %u: %u references, counted %u", i, nsrefs[i],
                      p->ns[i].refs);
    rc = 0;
fail:
    free(refs);
    free(children);
    free(nsrefs);
    free(where);
    return rc;
}
