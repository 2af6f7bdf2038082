/* tests/unit/test_backend_cpu_paged.c — the CPU backend's paged KV: block
 * placement never changes a bit of the logits, and batch_check refuses
 * tables that would corrupt the pool.
 *
 * For a few fixture models (tests/fixtures/engine: plain llama, qwen2 with
 * biases, gemma3 with sliding-window layers and q/k norms, a MoE) three token
 * sequences are first run alone, each in one prefill through a linear table
 * (backend_blocks_linear), keeping the logits of every position: that is the
 * reference. Then they run again through scattered tables in a pool of 40
 * blocks, in this order:
 *   1. A (41 tokens) prefilled in two chunks through table {17, 3, 29};
 *   2. kv_copy(31 ← 29): C takes A's partially filled third block (positions
 *      32..39, of which C keeps 32..35);
 *   3. one batch of three: A decodes position 40 (writes block 29), B — A's
 *      first 16 tokens then its own 24 — prefills 16..39 through {17, 8, 35}
 *      sharing A's full block 17 read-only, and C — A's first 36 tokens then
 *      its own 16 — prefills 36..51 through {17, 3, 31, 12}, sharing A's blocks
 *      17 and 3 and overwriting rows 4.. of the copied block.
 * Every logit of every step must equal the reference bit for bit (the CPU
 * backend is deterministic under any placement and batch composition).
 *
 * batch_check: a written block in another sequence's table, a written block
 * twice in one's own table, an id past the pool, are refused with messages
 * naming the sequence and block; read-only sharing is accepted (step 3).
 */
#include "test.h"

#include "backend/cpu/backend_cpu.h"
#include "model/model.h"

#define MAX_CTX 64u
#define POOL 40u
#define LEN_A 41u
#define LEN_B 40u
#define LEN_C 52u

static int32_t g_a[LEN_A], g_b[LEN_B], g_c[LEN_C];

static struct backend *open_backend(const struct model *m, uint32_t kv_blocks)
{
    char err[512];
    struct backend *b = NULL;
    struct backend_config cfg = {.max_seqs = 3, .max_ctx = MAX_CTX, .kv_blocks = kv_blocks, .max_batch_tokens = 256,
                                 .n_threads = 2};
    if (backend_cpu_ops.init(&b, m, &cfg, err, sizeof(err)) != 0 || b->ops->load_weights(b, err, sizeof(err)) != 0) {
        fprintf(stderr, "backend: %s\n", err);
        return NULL;
    }
    return b;
}

static int run(struct backend *b, struct backend_seq *seqs, uint32_t n)
{
    char err[512];
    struct backend_batch batch = {n, seqs};
    int rc = b->ops->forward(b, &batch, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "forward: %s\n", err);
    return rc;
}

/* logits (n, V) of positions [pos, pos + n) equal ref's rows there */
static int same_rows(const float *got, const float *ref, uint32_t pos, uint32_t n, uint32_t V)
{
    return memcmp(got, ref + (size_t)pos * V, sizeof(float) * n * V) == 0;
}

static void check_model(const char *rel)
{
    char path[256], err[512];
    snprintf(path, sizeof(path), "tests/fixtures/engine/%s", rel);
    struct model m;
    int rc = model_open(&m, path, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s: %s", rel, err);
    if (rc != 0)
        return;
    const uint32_t V = m.cfg.vocab;
    for (uint32_t i = 0; i < LEN_C; i++) { /* B and C share prefixes of A, then diverge */
        const int32_t own = (int32_t)((11 + 7919u * (i + 1)) % V), other = (int32_t)((5 + 104729u * (i + 3)) % V);
        if (i < LEN_A)
            g_a[i] = own;
        if (i < LEN_B)
            g_b[i] = i < 16 ? own : other;
        g_c[i] = i < 36 ? own : (int32_t)((other + 1) % V);
    }
    float *ref_a = malloc(sizeof(float) * LEN_A * V), *ref_b = malloc(sizeof(float) * LEN_B * V);
    float *ref_c = malloc(sizeof(float) * LEN_C * V), *got = malloc(sizeof(float) * 3 * 32 * V);
    CHECK(ref_a && ref_b && ref_c && got);

    /* reference: each sequence alone, one prefill, linear tables of a default pool */
    struct backend *b = open_backend(&m, 0);
    CHECK(b != NULL);
    if (!b)
        goto out;
    CHECK_EQ_INT(b->cfg.kv_blocks, 3 * MAX_CTX / BACKEND_KV_BLOCK);
    uint32_t lin[3][MAX_CTX / BACKEND_KV_BLOCK];
    for (uint32_t s = 0; s < 3; s++)
        backend_blocks_linear(lin[s], s, MAX_CTX);
    CHECK_EQ_INT(lin[2][1], 9);
    struct backend_seq r[3] = {{lin[0], 0, LEN_A, g_a, LEN_A, ref_a, NULL, NULL},
                               {lin[1], 0, LEN_B, g_b, LEN_B, ref_b, NULL, NULL},
                               {lin[2], 0, LEN_C, g_c, LEN_C, ref_c, NULL, NULL}};
    for (uint32_t s = 0; s < 3; s++)
        CHECK(run(b, &r[s], 1) == 0);
    b->ops->free(b);

    /* scattered tables in a pool of 40 blocks */
    b = open_backend(&m, POOL);
    CHECK(b != NULL);
    if (!b)
        goto out;
    CHECK_EQ_INT(b->cfg.kv_blocks, POOL);
    const uint32_t ta[] = {17, 3, 29}, tb[] = {17, 8, 35}, tc[] = {17, 3, 31, 12};
    /* 1. A in two chunks */
    struct backend_seq s1 = {ta, 0, 21, g_a, 21, got, NULL, NULL};
    CHECK(run(b, &s1, 1) == 0);
    CHECK(same_rows(got, ref_a, 0, 21, V));
    s1 = (struct backend_seq){ta, 21, 19, g_a + 21, 19, got, NULL, NULL};
    CHECK(run(b, &s1, 1) == 0);
    CHECK(same_rows(got, ref_a, 21, 19, V));
    /* 2. copy-on-write of A's partial block for C */
    b->ops->kv_copy(b, 31, 29);
    /* 3. A decodes, B and C prefill, sharing A's blocks read-only */
    float *ga = got, *gb = got + (size_t)32 * V, *gc = got + (size_t)64 * V;
    struct backend_seq s3[3] = {{ta, 40, 1, g_a + 40, 1, ga, NULL, NULL},
                                {tb, 16, LEN_B - 16, g_b + 16, LEN_B - 16, gb, NULL, NULL},
                                {tc, 36, LEN_C - 36, g_c + 36, LEN_C - 36, gc, NULL, NULL}};
    CHECK(run(b, s3, 3) == 0);
    CHECK_MSG(same_rows(ga, ref_a, 40, 1, V), "%s: A's decode through a scattered table differs", rel);
    CHECK_MSG(same_rows(gb, ref_b, 16, LEN_B - 16, V), "%s: B on A's shared block differs", rel);
    CHECK_MSG(same_rows(gc, ref_c, 36, LEN_C - 36, V), "%s: C after kv_copy differs", rel);
    /* rollback: B re-run from 20 through the same table gives the same rows */
    struct backend_seq s4 = {tb, 20, LEN_B - 20, g_b + 20, LEN_B - 20, gb, NULL, NULL};
    CHECK(run(b, &s4, 1) == 0);
    CHECK(same_rows(gb, ref_b, 20, LEN_B - 20, V));
    fprintf(stderr, "  %-20s scattered tables, shared prefix, kv_copy: bit-identical\n", rel);
    b->ops->free(b);
out:
    free(ref_a);
    free(ref_b);
    free(ref_c);
    free(got);
    model_close(&m);
}

static void test_placement_is_invisible(void)
{
    const char *models[] = {"llama/hf-f32", "qwen2/hf-f32", "gemma3/hf-f32", "qwen3_moe/hf-f32"};
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
        check_model(models[i]);
}

static void test_bad_tables(void)
{
    char err[512];
    struct model m;
    CHECK(model_open(&m, "tests/fixtures/engine/llama/hf-f32", err, sizeof(err)) == 0);
    struct backend *b = open_backend(&m, POOL);
    CHECK(b != NULL);
    if (!b)
        return;
    float *lg = malloc(sizeof(float) * m.cfg.vocab * 2);
    int32_t toks[20] = {0};
    for (uint32_t i = 0; i < 20; i++)
        toks[i] = (int32_t)(i + 3);
    const uint32_t ta[] = {5, 6}, tb[] = {5, 7}, tc[] = {9, 9}, td[] = {1, POOL}, te[] = {POOL + 7};
    struct backend_batch batch;
    /* A writes block 5 (positions 0..17) while B reads it */
    struct backend_seq two[2] = {{ta, 0, 18, toks, 1, lg, NULL, NULL}, {tb, 16, 1, toks, 1, lg + m.cfg.vocab, NULL, NULL}};
    batch = (struct backend_batch){2, two};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "sequence 0 writes block 5, which sequence 1's table also holds");
    /* the same block written by both: refused too, the other way round */
    two[0] = (struct backend_seq){tb, 17, 1, toks, 1, lg, NULL, NULL};
    two[1] = (struct backend_seq){ta, 0, 18, toks, 1, lg + m.cfg.vocab, NULL, NULL};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "sequence 1 writes block 5, which sequence 0's table also holds");
    /* a block twice in one table */
    struct backend_seq one = {tc, 10, 10, toks, 1, lg, NULL, NULL};
    batch = (struct backend_batch){1, &one};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "sequence 0 writes block 9, which its table also holds at index");
    /* ids past the pool */
    one = (struct backend_seq){td, 15, 2, toks, 1, lg, NULL, NULL};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "sequence 0: block 1 of its table is id 40, outside the pool of 40 blocks");
    one = (struct backend_seq){te, 0, 1, toks, 1, lg, NULL, NULL};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "is id 47, outside the pool of 40 blocks");
    /* read-only sharing is fine: A fills block 5, then B and A' both read it */
    one = (struct backend_seq){ta, 0, 16, toks, 1, lg, NULL, NULL};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == 0);
    two[0] = (struct backend_seq){ta, 16, 2, toks + 16, 1, lg, NULL, NULL};
    two[1] = (struct backend_seq){tb, 16, 1, toks + 16, 1, lg + m.cfg.vocab, NULL, NULL};
    batch = (struct backend_batch){2, two};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == 0);
    /* B's logits (position 16 after the 16 tokens of the shared block) equal a
     * fresh run of the same 17 tokens through blocks of its own */
    float *want = malloc(sizeof(float) * m.cfg.vocab);
    const uint32_t tf[] = {20, 21};
    one = (struct backend_seq){tf, 0, 17, toks, 1, want, NULL, NULL};
    batch = (struct backend_batch){1, &one};
    CHECK(b->ops->forward(b, &batch, err, sizeof(err)) == 0);
    CHECK(memcmp(want, lg + m.cfg.vocab, sizeof(float) * m.cfg.vocab) == 0);
    free(want);
    free(lg);
    b->ops->free(b);
    model_close(&m);
}

int main(void)
{
    RUN(test_placement_is_invisible);
    RUN(test_bad_tables);
    return test_summary();
}
