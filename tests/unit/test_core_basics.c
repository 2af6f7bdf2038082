/* test_core_basics.c — dtype table, arena, string map, checked arithmetic. */
#include "core/arena.h"
#include "core/checked.h"
#include "core/dtype.h"
#include "core/strmap.h"
#include "test.h"

static void test_dtype_table(void)
{
    /* block sizes and ids as in gguf-py's GGML_QUANT_SIZES / GGMLQuantizationType */
    static const struct { uint32_t id; const char *name; uint32_t block, size; } want[] = {
        {0, "F32", 1, 4},      {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},   {3, "Q4_1", 32, 20},
        {6, "Q5_0", 32, 22},   {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},   {9, "Q8_1", 32, 40},
        {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
        {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
        {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18}, {21, "IQ3_S", 256, 110},
        {22, "IQ2_S", 256, 82}, {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1}, {25, "I16", 1, 2},
        {26, "I32", 1, 4},     {27, "I64", 1, 8},      {28, "F64", 1, 8},     {29, "IQ1_M", 256, 56},
        {30, "BF16", 1, 2},    {34, "TQ1_0", 256, 54}, {35, "TQ2_0", 256, 66}, {39, "MXFP4", 32, 17},
        {40, "NVFP4", 64, 36}, {41, "Q1_0", 128, 18},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        enum dtype t;
        CHECK_MSG(dtype_from_ggml(want[i].id, &t), "ggml id %u", want[i].id);
        CHECK_EQ_STR(dtype_name(t), want[i].name);
        CHECK_EQ_INT(dtype_info(t)->block_size, want[i].block);
        CHECK_EQ_INT(dtype_info(t)->type_size, want[i].size);
    }
    enum dtype t;
    CHECK(!dtype_from_ggml(4, &t));  /* removed Q4_2 */
    CHECK(!dtype_from_ggml(31, &t)); /* removed Q4_0_4_4 */
    CHECK(!dtype_from_ggml(1000, &t));
    CHECK(dtype_from_safetensors("F8_E4M3", &t) && t == DTYPE_F8_E4M3);
    CHECK(dtype_from_safetensors("BF16", &t) && t == DTYPE_BF16);
    CHECK(!dtype_from_safetensors("Q4_K", &t));
    uint64_t n;
    CHECK(dtype_row_bytes(DTYPE_Q4_K, 4096, &n) == 0 && n == 16 * 144);
    CHECK(dtype_row_bytes(DTYPE_Q4_K, 100, &n) != 0);
    CHECK(dtype_row_bytes(DTYPE_F32, UINT64_MAX / 2, &n) != 0);
}

static void test_arena(void)
{
    struct arena a;
    arena_init(&a, 64);
    char *s = arena_strdup(&a, "hello");
    CHECK_EQ_STR(s, "hello");
    void *big = arena_alloc(&a, 1000);
    CHECK(big != NULL && ((uintptr_t)big & 15) == 0);
    unsigned char *z = big;
    int zero = 1;
    for (int i = 0; i < 1000; i++)
        zero &= z[i] == 0;
    CHECK(zero);
    CHECK(arena_alloc(&a, SIZE_MAX) == NULL);
    CHECK_EQ_STR(s, "hello");
    arena_free(&a);
}

static void test_strmap(void)
{
    struct strmap m;
    strmap_init(&m);
    char keys[2000][16];
    for (int i = 0; i < 2000; i++) {
        snprintf(keys[i], sizeof(keys[i]), "key%d", i);
        CHECK_EQ_INT(strmap_put(&m, keys[i], strlen(keys[i]), (uint64_t)i * 7), 1);
    }
    CHECK_EQ_INT(strmap_put(&m, "key5", 4, 99), 0);
    uint64_t v = 0;
    CHECK(strmap_get(&m, "key5", 4, &v) && v == 35);
    CHECK(strmap_get(&m, "key1999", 7, &v) && v == 1999 * 7);
    CHECK(!strmap_get(&m, "key2000", 7, &v));
    CHECK(!strmap_get(&m, "key", 3, &v));
    CHECK_EQ_U64(m.count, 2000);
    strmap_free(&m);
}

static void test_checked(void)
{
    uint64_t r;
    CHECK(checked_mul_u64(1ull << 32, 1ull << 31, &r) == 0 && r == 1ull << 63);
    CHECK(checked_mul_u64(1ull << 32, 1ull << 32, &r) != 0);
    CHECK(checked_add_u64(UINT64_MAX, 1, &r) != 0);
}

int main(void)
{
    RUN(test_dtype_table);
    RUN(test_arena);
    RUN(test_strmap);
    RUN(test_checked);
    return test_summary();
}
