/* tests/unit/test_engine_kv_pool.c — the paged KV pool and its prefix cache.
 *
 * Direct cases (hits in the same namespace only, copy-on-write of a fully
 * cached prompt, a reserve that fails changes nothing, LRU eviction order,
 * forks, namespace interning under pressure), then a randomized model check:
 * thousands of random open/attach/reserve/commit/rollback/fork/release steps
 * against a shadow KV — every block row remembers which token and which
 * namespace wrote it, the test applies the pool's copies like kv_copy would —
 * so after every step the whole KV every open sequence can read must be
 * exactly its own tokens written in its own namespace, and the refcounts must
 * equal the table references the test sees.
 */
#include "engine/kv_pool.h"

#include "test.h"

#include <stdint.h>

#define B KV_POOL_BLOCK

static struct kv_pool *pool_new(uint32_t n_blocks, uint32_t max_seqs, uint32_t max_ctx)
{
    struct kv_pool *p = NULL;
    char err[256];
    struct kv_pool_config cfg = {.n_blocks = n_blocks, .max_seqs = max_seqs, .max_ctx = max_ctx};
    int rc = kv_pool_init(&p, &cfg, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    return p;
}

static void pool_ok(const struct kv_pool *p)
{
    char err[256] = "";
    int rc = kv_pool_check(p, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
}

static uint32_t seq_open(struct kv_pool *p, const char *model, const char *tenant, const char *salt)
{
    uint32_t s = KV_POOL_NONE;
    char err[256];
    struct kv_pool_ns ns = {model, tenant, salt};
    int rc = kv_pool_seq_open(p, &ns, &s, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    return s;
}

/* Reserve [pos, n) and commit n (no KV to write here: the direct cases check the tables). */
static int seq_fill(struct kv_pool *p, uint32_t s, const int32_t *toks, uint32_t pos, uint32_t n,
                    struct kv_pool_copy *copies, uint32_t *n_copies)
{
    *n_copies = 0;
    if (kv_pool_seq_reserve(p, s, pos, n, copies, n_copies))
        return -1;
    kv_pool_seq_commit(p, s, toks, n);
    return 0;
}

static void make_tokens(int32_t *t, uint32_t n, int32_t base)
{
    for (uint32_t i = 0; i < n; i++)
        t[i] = base + (int32_t)i;
}

static void test_hit_same_namespace_only(void)
{
    struct kv_pool *p = pool_new(64, 4, 256);
    int32_t t[40];
    make_tokens(t, 40, 100);
    struct kv_pool_copy c[16];
    uint32_t nc;
    uint32_t a = seq_open(p, "m", "alice", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, a, t, 40), 0);
    CHECK_EQ_INT(seq_fill(p, a, t, 0, 40, c, &nc), 0);
    CHECK_EQ_INT(nc, 0);
    CHECK_EQ_INT(kv_pool_seq_len(p, a), 40);
    kv_pool_seq_release(p, a);
    pool_ok(p);
    struct kv_pool_stats st;
    kv_pool_get_stats(p, &st);
    CHECK_EQ_INT(st.used, 0);
    CHECK_EQ_INT(st.cached, 2); /* two full blocks published; the partial third went back free */
    CHECK_EQ_INT(st.free, 62);

    uint32_t b = seq_open(p, "m", "alice", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, b, t, 40), 32);
    CHECK_EQ_INT(kv_pool_seq_attach(p, seq_open(p, "m", "bob", ""), t, 40), 0);
    CHECK_EQ_INT(kv_pool_seq_attach(p, seq_open(p, "m", "alice", "salt"), t, 40), 0);
    CHECK_EQ_INT(kv_pool_seq_attach(p, seq_open(p, "m2", "alice", ""), t, 40), 0);
    pool_ok(p);
    for (uint32_t s = 0; s < 4; s++)
        kv_pool_seq_release(p, s);
    /* the string boundaries count: ("m","alicex","") is not ("m","alice","x") */
    uint32_t d = seq_open(p, "m", "alice", "x");
    CHECK_EQ_INT(seq_fill(p, d, t, 0, 32, c, &nc), 0);
    kv_pool_seq_release(p, d);
    CHECK_EQ_INT(kv_pool_seq_attach(p, seq_open(p, "m", "alicex", ""), t, 32), 0);
    CHECK_EQ_INT(kv_pool_seq_attach(p, seq_open(p, "m", "alice", "x"), t, 33), 32);
    /* a different first block misses even when the second matches */
    int32_t u[32];
    make_tokens(u, 32, 100);
    u[3] = 7;
    CHECK_EQ_INT(kv_pool_seq_attach(p, seq_open(p, "m", "alice", "x"), u, 32), 0);
    pool_ok(p);
    kv_pool_get_stats(p, &st);
    CHECK_EQ_U64(st.hit_tokens, 64);
    kv_pool_free(p);
}

static void test_cow_fully_cached_prompt(void)
{
    struct kv_pool *p = pool_new(16, 2, 128);
    int32_t t[32];
    make_tokens(t, 32, 5);
    struct kv_pool_copy c[8];
    uint32_t nc, nb;
    uint32_t a = seq_open(p, "m", "", "");
    CHECK_EQ_INT(seq_fill(p, a, t, 0, 32, c, &nc), 0);
    kv_pool_seq_release(p, a);
    uint32_t s = seq_open(p, "m", "", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, s, t, 32), 32);
    const uint32_t *bl = kv_pool_seq_blocks(p, s, &nb);
    uint32_t b0 = bl[0], b1 = bl[1];
    CHECK_EQ_INT(nb, 2);
    /* recompute the last prompt token for its logits: block 1 is shared, so it is copied */
    CHECK_EQ_INT(kv_pool_seq_need(p, s, 31, 32), 1);
    nc = 0;
    CHECK_EQ_INT(kv_pool_seq_reserve(p, s, 31, 32, c, &nc), 0);
    CHECK_EQ_INT(nc, 1);
    CHECK_EQ_INT(c[0].src, b1);
    CHECK(c[0].dst != b1 && c[0].dst != b0);
    bl = kv_pool_seq_blocks(p, s, &nb);
    CHECK_EQ_INT(bl[0], b0);
    CHECK_EQ_INT(bl[1], c[0].dst);
    CHECK_EQ_INT(kv_pool_seq_len(p, s), 31);
    CHECK_EQ_INT(kv_pool_block_refs(p, b1), 0); /* cached again, still in the tree */
    pool_ok(p);
    /* commit finds the same key cached and shares that block again; the copy is freed */
    kv_pool_seq_commit(p, s, t, 32);
    bl = kv_pool_seq_blocks(p, s, &nb);
    CHECK_EQ_INT(bl[1], b1);
    CHECK_EQ_INT(kv_pool_block_refs(p, b1), 1);
    struct kv_pool_stats st;
    kv_pool_get_stats(p, &st);
    CHECK_EQ_INT(st.used, 2);
    CHECK_EQ_INT(st.free, 14);
    /* decode past it: a fresh block, no copy */
    nc = 0;
    CHECK_EQ_INT(kv_pool_seq_reserve(p, s, 32, 33, c, &nc), 0);
    CHECK_EQ_INT(nc, 0);
    pool_ok(p);
    kv_pool_free(p);
}

static void test_reserve_fails_cleanly(void)
{
    struct kv_pool *p = pool_new(4, 2, 256);
    int32_t t[64];
    make_tokens(t, 64, 1);
    struct kv_pool_copy c[16];
    uint32_t nc = 0, nb;
    uint32_t a = seq_open(p, "m", "", ""), b = seq_open(p, "m", "", "");
    CHECK_EQ_INT(kv_pool_seq_reserve(p, a, 0, 40, c, &nc), 0);
    CHECK_EQ_INT(kv_pool_available(p), 1);
    CHECK_EQ_INT(kv_pool_seq_need(p, b, 0, 20), 2);
    CHECK_EQ_INT(kv_pool_seq_reserve(p, b, 0, 20, c, &nc), -1);
    kv_pool_seq_blocks(p, b, &nb);
    CHECK_EQ_INT(nb, 0);
    CHECK_EQ_INT(kv_pool_available(p), 1);
    CHECK_EQ_INT(kv_pool_seq_reserve(p, b, 0, 16, c, &nc), 0);
    CHECK_EQ_INT(kv_pool_available(p), 0);
    CHECK_EQ_INT(kv_pool_seq_reserve(p, a, 0, 49, c, &nc), -1); /* beyond what a holds */
    kv_pool_seq_blocks(p, a, &nb);
    CHECK_EQ_INT(nb, 3);
    CHECK_EQ_INT(nc, 0);
    pool_ok(p);
    kv_pool_seq_release(p, a);
    CHECK_EQ_INT(kv_pool_available(p), 3);
    pool_ok(p);
    kv_pool_free(p);
}

static void test_lru_eviction_order(void)
{
    struct kv_pool *p = pool_new(6, 2, 256);
    int32_t x[32], y[32], z[16];
    make_tokens(x, 32, 1000);
    make_tokens(y, 32, 2000);
    make_tokens(z, 16, 3000);
    struct kv_pool_copy c[16];
    uint32_t nc;
    uint32_t s = seq_open(p, "m", "", "");
    seq_fill(p, s, x, 0, 32, c, &nc);
    kv_pool_seq_release(p, s);
    s = seq_open(p, "m", "", "");
    seq_fill(p, s, y, 0, 32, c, &nc);
    kv_pool_seq_release(p, s);
    /* touch x again: y is now the oldest */
    s = seq_open(p, "m", "", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, s, x, 32), 32);
    kv_pool_seq_release(p, s);
    /* 2 free blocks + 4 cached; take 4: both free, then y's leaf, then y's root */
    s = seq_open(p, "m", "", "");
    CHECK_EQ_INT(seq_fill(p, s, z, 0, 16, c, &nc), 0);
    uint32_t t2 = seq_open(p, "m", "t", "");
    CHECK_EQ_INT(kv_pool_seq_reserve(p, t2, 0, 48, c, &nc), 0);
    struct kv_pool_stats st;
    kv_pool_get_stats(p, &st);
    CHECK_EQ_U64(st.evictions, 2);
    CHECK_EQ_INT(st.used, 4);
    CHECK_EQ_INT(st.cached, 2);
    pool_ok(p);
    kv_pool_seq_release(p, s);
    kv_pool_seq_release(p, t2);
    s = seq_open(p, "m", "", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, s, y, 32), 0);
    kv_pool_seq_release(p, s);
    s = seq_open(p, "m", "", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, s, x, 32), 32);
    kv_pool_seq_release(p, s);
    s = seq_open(p, "m", "", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, s, z, 16), 16);
    pool_ok(p);
    kv_pool_free(p);
}

static void test_fork_copies_on_write(void)
{
    struct kv_pool *p = pool_new(8, 3, 128);
    int32_t t[24];
    make_tokens(t, 24, 50);
    struct kv_pool_copy c[8];
    uint32_t nc, f, nb;
    char err[128];
    uint32_t s = seq_open(p, "m", "", "");
    CHECK_EQ_INT(seq_fill(p, s, t, 0, 24, c, &nc), 0);
    CHECK_EQ_INT(kv_pool_seq_fork(p, s, &f, err, sizeof(err)), 0);
    const uint32_t *a = kv_pool_seq_blocks(p, s, &nb);
    uint32_t partial = a[1];
    CHECK_EQ_INT(kv_pool_block_refs(p, a[0]), 2);
    CHECK_EQ_INT(kv_pool_block_refs(p, partial), 2);
    nc = 0;
    CHECK_EQ_INT(kv_pool_seq_reserve(p, f, 24, 25, c, &nc), 0);
    CHECK_EQ_INT(nc, 1);
    CHECK_EQ_INT(c[0].src, partial);
    CHECK_EQ_INT(kv_pool_block_refs(p, partial), 1);
    pool_ok(p);
    kv_pool_seq_release(p, s);
    kv_pool_seq_release(p, f);
    pool_ok(p);
    kv_pool_free(p);
}

static void test_namespace_table_pressure(void)
{
    /* one sequence → 65 namespace entries; 100 tenants each leave a cached block */
    struct kv_pool *p = pool_new(200, 1, 64);
    int32_t t[16];
    make_tokens(t, 16, 9);
    struct kv_pool_copy c[4];
    uint32_t nc;
    char name[32];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "tenant%d", i);
        uint32_t s = seq_open(p, "m", name, "");
        CHECK_EQ_INT(kv_pool_seq_attach(p, s, t, 16), 0);
        CHECK_EQ_INT(seq_fill(p, s, t, 0, 16, c, &nc), 0);
        kv_pool_seq_release(p, s);
    }
    pool_ok(p);
    uint32_t s = seq_open(p, "m", "tenant99", "");
    CHECK_EQ_INT(kv_pool_seq_attach(p, s, t, 16), 16);
    kv_pool_seq_release(p, s);
    struct kv_pool_stats st;
    kv_pool_get_stats(p, &st);
    CHECK(st.evictions >= 100 - 65);
    /* a namespace longer than the bound is refused with a reason */
    static char big[KV_POOL_NS_MAX + 8];
    memset(big, 'a', sizeof(big) - 1);
    char err[256] = "";
    struct kv_pool_ns ns = {"m", big, ""};
    CHECK_EQ_INT(kv_pool_seq_open(p, &ns, &s, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "cache_salt");
    pool_ok(p);
    kv_pool_free(p);
}

/* ---- randomized model check ---- */

#define R_BLOCKS 30
#define R_SEQS 6
#define R_CTX 160
#define R_NS 5

static const char *const r_ns[R_NS][3] = {
    {"m", "alice", ""}, {"m", "bob", ""}, {"m", "alice", "s1"}, {"m", "alic", "es1"}, {"m2", "alice", ""},
};

struct r_seq {
    bool open;
    uint32_t id, ns;
    int32_t toks[R_CTX];
    uint32_t len;
};

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static int32_t shadow_tok[R_BLOCKS][B];
static int shadow_ns[R_BLOCKS][B];

static void r_write(struct kv_pool *p, struct r_seq *q, uint32_t from, uint32_t to, const struct kv_pool_copy *c,
                    uint32_t nc)
{
    for (uint32_t i = 0; i < nc; i++) { /* kv_copy, in order, before the forward */
        memcpy(shadow_tok[c[i].dst], shadow_tok[c[i].src], sizeof(shadow_tok[0]));
        memcpy(shadow_ns[c[i].dst], shadow_ns[c[i].src], sizeof(shadow_ns[0]));
    }
    uint32_t nb;
    const uint32_t *bl = kv_pool_seq_blocks(p, q->id, &nb);
    for (uint32_t pos = from; pos < to; pos++) {
        CHECK(pos / B < nb);
        shadow_tok[bl[pos / B]][pos % B] = q->toks[pos];
        shadow_ns[bl[pos / B]][pos % B] = (int)q->ns;
    }
}

static void r_verify(const struct kv_pool *p, const struct r_seq *seqs)
{
    static uint32_t refs[R_BLOCKS];
    memset(refs, 0, sizeof(refs));
    for (uint32_t i = 0; i < R_SEQS; i++) {
        const struct r_seq *q = &seqs[i];
        if (!q->open)
            continue;
        uint32_t nb;
        const uint32_t *bl = kv_pool_seq_blocks(p, q->id, &nb);
        CHECK_EQ_INT(kv_pool_seq_len(p, q->id), q->len);
        for (uint32_t k = 0; k < nb; k++)
            refs[bl[k]]++;
        for (uint32_t pos = 0; pos < q->len; pos++) {
            uint32_t b = bl[pos / B];
            CHECK_MSG(shadow_tok[b][pos % B] == q->toks[pos] && shadow_ns[b][pos % B] == (int)q->ns,
                      "seq %u position %u: block %u holds token %d of namespace %d, want %d of %u", i, pos, b,
                      shadow_tok[b][pos % B], shadow_ns[b][pos % B], q->toks[pos], q->ns);
        }
    }
    struct kv_pool_stats st;
    kv_pool_get_stats(p, &st);
    uint32_t used = 0;
    for (uint32_t b = 0; b < R_BLOCKS; b++) {
        CHECK_EQ_INT(kv_pool_block_refs(p, b), refs[b]);
        used += refs[b] > 0;
    }
    CHECK_EQ_INT(st.used, used);
    CHECK_EQ_INT(st.used + st.free + st.cached, R_BLOCKS);
    pool_ok(p);
}

/* A prompt from a few families so that prefixes repeat across sequences. */
static uint32_t r_prompt(int32_t *t)
{
    uint32_t fam = rnd(3), n = 1 + rnd(R_CTX / 2);
    for (uint32_t i = 0; i < n; i++)
        t[i] = (int32_t)(fam * 1000 + (i < 40 + fam * 8 ? i : 500 + rnd(4)));
    return n;
}

static void test_random_model_check(void)
{
    struct kv_pool *p = pool_new(R_BLOCKS, R_SEQS, R_CTX);
    static struct r_seq seqs[R_SEQS];
    memset(seqs, 0, sizeof(seqs));
    memset(shadow_tok, 0xff, sizeof(shadow_tok));
    memset(shadow_ns, 0xff, sizeof(shadow_ns));
    struct kv_pool_copy c[R_CTX / B + 1];
    uint64_t n_hits = 0, n_copies = 0, n_fail = 0, n_forks = 0;
    char err[128];
    for (int step = 0; step < 50000; step++) {
        uint32_t i = rnd(R_SEQS), op = rnd(10);
        struct r_seq *q = &seqs[i];
        uint32_t nc = 0;
        struct kv_pool_stats before;
        kv_pool_get_stats(p, &before);
        if (!q->open) {
            if (op < 2) { /* fork another open sequence into this record */
                uint32_t j = rnd(R_SEQS);
                if (!seqs[j].open)
                    continue;
                uint32_t id;
                CHECK_EQ_INT(kv_pool_seq_fork(p, seqs[j].id, &id, err, sizeof(err)), 0);
                *q = seqs[j];
                q->id = id;
                n_forks++;
            } else { /* open + attach + reserve the prompt (at least one token recomputed) */
                struct kv_pool_ns ns = {r_ns[op % R_NS][0], r_ns[op % R_NS][1], r_ns[op % R_NS][2]};
                q->ns = op % R_NS;
                CHECK_EQ_INT(kv_pool_seq_open(p, &ns, &q->id, err, sizeof(err)), 0);
                uint32_t n = r_prompt(q->toks);
                uint32_t got = kv_pool_seq_attach(p, q->id, q->toks, n);
                CHECK(got % B == 0 && got <= n);
                q->open = true;
                q->len = got;
                n_hits += got > 0;
                r_verify(p, seqs); /* the attached prefix holds exactly these tokens, this namespace */
                uint32_t from = got == n ? n - 1 : got;
                if (kv_pool_seq_reserve(p, q->id, from, n, c, &nc)) {
                    n_fail++;
                    CHECK_EQ_INT(kv_pool_seq_len(p, q->id), got);
                    kv_pool_seq_release(p, q->id);
                    q->open = false;
                } else {
                    r_write(p, q, from, n, c, nc);
                    kv_pool_seq_commit(p, q->id, q->toks, n);
                    q->len = n;
                    n_copies += nc;
                }
            }
        } else if (op < 2) {
            kv_pool_seq_release(p, q->id);
            q->open = false;
        } else { /* grow by a decode token or a chunk, sometimes after a rollback */
            uint32_t from = op == 2 && q->len ? rnd(q->len) : q->len;
            uint32_t grow = op < 6 ? 1 : 1 + rnd(40);
            uint32_t to = from + grow > R_CTX ? R_CTX : from + grow;
            if (to <= from)
                continue;
            uint32_t nb0;
            const uint32_t *bl0 = kv_pool_seq_blocks(p, q->id, &nb0);
            uint32_t snap[R_CTX / B + 1];
            memcpy(snap, bl0, nb0 * sizeof(uint32_t));
            if (kv_pool_seq_reserve(p, q->id, from, to, c, &nc)) {
                n_fail++;
                struct kv_pool_stats after;
                kv_pool_get_stats(p, &after);
                uint32_t nb1;
                const uint32_t *bl1 = kv_pool_seq_blocks(p, q->id, &nb1);
                CHECK(nb1 == nb0 && !memcmp(bl1, snap, nb0 * sizeof(uint32_t)));
                CHECK(after.used == before.used && after.free == before.free && after.cached == before.cached);
                CHECK_EQ_INT(kv_pool_seq_len(p, q->id), q->len);
            } else {
                for (uint32_t t = from; t < to; t++)
                    q->toks[t] = (int32_t)(q->ns * 7 + rnd(3)); /* few values: repeats across sequences */
                r_write(p, q, from, to, c, nc);
                kv_pool_seq_commit(p, q->id, q->toks, to);
                q->len = to;
                n_copies += nc;
            }
        }
        r_verify(p, seqs);
    }
    struct kv_pool_stats st;
    kv_pool_get_stats(p, &st);
    fprintf(stderr, "random: %llu hits, %llu copies, %llu failed reserves, %llu forks, %llu evictions\n",
            (unsigned long long)n_hits, (unsigned long long)n_copies, (unsigned long long)n_fail,
            (unsigned long long)n_forks, (unsigned long long)st.evictions);
    /* the run reached every path it means to test */
    CHECK(n_hits > 100 && n_copies > 50 && n_fail > 50 && n_forks > 50 && st.evictions > 100);
    for (uint32_t i = 0; i < R_SEQS; i++)
        if (seqs[i].open)
            kv_pool_seq_release(p, seqs[i].id);
    kv_pool_get_stats(p, &st);
    CHECK_EQ_INT(st.used, 0);
    CHECK_EQ_INT(st.seqs, 0);
    pool_ok(p);
    kv_pool_free(p);
}

int main(void)
{
    RUN(test_hit_same_namespace_only);
    RUN(test_cow_fully_cached_prompt);
    RUN(test_reserve_fails_cleanly);
    RUN(test_lru_eviction_order);
    RUN(test_fork_copies_on_write);
    RUN(test_namespace_table_pressure);
    RUN(test_random_model_check);
    return test_summary();
}
