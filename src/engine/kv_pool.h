/* engine/kv_pool.h — the paged KV pool: blocks, per-sequence block tables and
 * the tenant-isolated prefix cache.
 *
 * A pure data structure (no backend calls, no allocation after kv_pool_init):
 * it decides WHICH block holds which positions; the caller (the scheduler) runs
 * the forwards that fill them and applies the copy-on-write copies it hands out
 * with the backend's kv_copy.
 *
 * Blocks: n_blocks blocks of KV_POOL_BLOCK (16) positions. Each block is in
 * exactly one state:
 *   free    — refcount 0, on the free list;
 *   used    — refcount > 0 (held by that many sequence tables);
 *   cached  — refcount 0 but published in the prefix tree, on the LRU list
 *             (oldest first); evicted only when the free list is empty.
 *
 * Prefix tree (radix tree over full blocks): a node is a block; its key is
 * (parent, the block's 16 tokens) where the parent is the previous block of the
 * path, or, at the first level, the sequence's namespace. A namespace is the
 * triple (model alias, tenant, cache_salt), interned and compared as full
 * strings (a hash only picks the bucket), so two tenants never share a node.
 * Nodes live in an open-addressing table sized at init (linear probing,
 * backward-shift deletion); a lookup compares the stored parent and tokens.
 * A block is a node at most once. Only leaves are evicted (a cached block's
 * children are never referenced, see kv_pool.c), so no key ever names a
 * reused parent.
 *
 * Sequence life: kv_pool_seq_open (namespace) → kv_pool_seq_attach (the longest
 * cached prefix of the prompt, full blocks only) → kv_pool_seq_reserve (blocks
 * for [pos, end) before each forward; copy-on-write of a shared or published
 * block that [pos, end) writes) → forward → kv_pool_seq_commit (the positions
 * now hold KV; newly full blocks join the tree) → … → kv_pool_seq_release.
 *
 * Threading: one thread (the engine thread) owns a pool.
 */
#ifndef MEMRA_ENGINE_KV_POOL_H
#define MEMRA_ENGINE_KV_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KV_POOL_BLOCK 16u    /* positions per block (= BACKEND_KV_BLOCK) */
#define KV_POOL_NS_MAX 1024u /* bytes of one namespace: the three strings and their lengths */
#define KV_POOL_NONE UINT32_MAX

struct kv_pool;

struct kv_pool_config {
    uint32_t n_blocks; /* blocks in the pool (≥ 1) */
    uint32_t max_seqs; /* sequences open at once (≥ 1) */
    uint32_t max_ctx;  /* positions per sequence (≥ 1) */
};

/* The prefix cache's namespace; NULL reads as "". */
struct kv_pool_ns {
    const char *model;  /* model alias */
    const char *tenant; /* tenant name from auth ("" when the server is open) */
    const char *salt;   /* the request's cache_salt ("" when none) */
};

/* One copy-on-write: copy block src's K/V into block dst before the next forward. */
struct kv_pool_copy {
    uint32_t dst, src;
};

struct kv_pool_stats {
    uint32_t n_blocks;
    uint32_t used;       /* refcount > 0 */
    uint32_t free;       /* on the free list */
    uint32_t cached;     /* unreferenced, in the tree, evictable */
    uint32_t seqs;       /* open sequences */
    uint64_t lookups;    /* kv_pool_seq_attach calls */
    uint64_t hit_tokens; /* tokens those attaches found cached */
    uint64_t evictions;  /* cached blocks taken back for reuse */
};

/* 0, or -1 with the reason in err (bad config, out of memory). */
int kv_pool_init(struct kv_pool **out, const struct kv_pool_config *cfg, char *err, size_t errlen);
void kv_pool_free(struct kv_pool *p);

/* Blocks a sequence's table can hold: ceil(max_ctx / 16). */
uint32_t kv_pool_max_seq_blocks(const struct kv_pool *p);

/* Open an empty sequence in namespace ns. -1 (reason in err) when max_seqs are
 * open or the namespace is longer than KV_POOL_NS_MAX. */
int kv_pool_seq_open(struct kv_pool *p, const struct kv_pool_ns *ns, uint32_t *seq, char *err, size_t errlen);

/* On a freshly opened sequence: take the longest cached prefix of tokens[0, n)
 * in the sequence's namespace, in full blocks. Returns the positions it holds
 * (a multiple of 16, ≤ n); they hold the KV of exactly those tokens. */
uint32_t kv_pool_seq_attach(struct kv_pool *p, uint32_t seq, const int32_t *tokens, uint32_t n);

/* Blocks kv_pool_seq_reserve(seq, pos, end) would take from the pool. */
uint32_t kv_pool_seq_need(const struct kv_pool *p, uint32_t seq, uint32_t pos, uint32_t end);
/* Blocks the pool can hand out now (free + cached). */
uint32_t kv_pool_available(const struct kv_pool *p);

/* Make positions [pos, end) writable: pos ≤ the sequence's length, end ≤ max_ctx.
 * pos below the length rolls the sequence back to pos (blocks past it are
 * dropped). A block that [pos, end) writes and that is shared or published is
 * replaced by a fresh one, and the pair lands in copies[*n_copies++] (room for
 * kv_pool_max_seq_blocks entries): apply the copies of every reserve, in call
 * order, before the next forward. Returns 0, or -1 when the pool has too few
 * blocks — then nothing changed. */
int kv_pool_seq_reserve(struct kv_pool *p, uint32_t seq, uint32_t pos, uint32_t end, struct kv_pool_copy *copies,
                        uint32_t *n_copies);

/* After a forward: positions [0, n) hold the KV of tokens[0, n) (n ≤ the
 * reserved end). Newly full blocks are published in the tree; one whose key is
 * already there is swapped for the cached node (same tokens, same prefix). */
void kv_pool_seq_commit(struct kv_pool *p, uint32_t seq, const int32_t *tokens, uint32_t n);

/* A new sequence sharing src's KV (n > 1 choices): same namespace, same blocks
 * (refcounts +1); the first write into a shared block copies it. -1 when
 * max_seqs are open. */
int kv_pool_seq_fork(struct kv_pool *p, uint32_t src, uint32_t *seq, char *err, size_t errlen);

/* Drop the sequence's references; published blocks stay cached. */
void kv_pool_seq_release(struct kv_pool *p, uint32_t seq);

/* The block table ((*n_blocks) ids, positions p in blocks[p / 16]) and length. */
const uint32_t *kv_pool_seq_blocks(const struct kv_pool *p, uint32_t seq, uint32_t *n_blocks);
uint32_t kv_pool_seq_len(const struct kv_pool *p, uint32_t seq);

void kv_pool_get_stats(const struct kv_pool *p, struct kv_pool_stats *out);
uint32_t kv_pool_block_refs(const struct kv_pool *p, uint32_t block);

/* Check every internal invariant (states partition the blocks, refcounts equal
 * table references, tree keys and child counts, namespace references); 0 or -1
 * with the first violation in err. O(n_blocks + max_seqs × table). For tests. */
int kv_pool_check(const struct kv_pool *p, char *err, size_t errlen);

#endif
