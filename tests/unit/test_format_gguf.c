/* test_format_gguf.c — the GGUF reader (src/format/gguf.c).
 *
 * Files are built byte by byte with gguf_writer.h: one with every value type,
 * nested arrays and four tensors (v2 and v3, default and explicit alignment)
 * whose values are read back; then one broken file per error path, each checking
 * the message; then every prefix of a valid file, which must fail cleanly.
 * The real vocabulary GGUFs in ../shared/testdata/vocab are read and compared to
 * values printed by the Python gguf package (GGUFReader, gguf==0.19.0).
 */
#include "format/model_file.h"
#include "gguf_writer.h"
#include "test.h"

#include <time.h>

#define GGML_F32 0
#define GGML_F16 1
#define GGML_Q4_0 2
#define GGML_I8 24

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* The four tensors of the full file: ne innermost first, their byte sizes and
 * the offsets they get for a given alignment. */
struct tinfo {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;
    uint64_t n_bytes;
};
static const struct tinfo g_tensors[4] = {
    {"w.f32", 2, {3, 2, 1, 1}, GGML_F32, 2 * 3 * 4},
    {"w.q4", 2, {64, 2, 1, 1}, GGML_Q4_0, 2 * 2 * 18},
    {"w.i8", 1, {5, 1, 1, 1}, GGML_I8, 5},
    {"blk.0.w4d", 4, {2, 3, 4, 5}, GGML_F16, 120 * 2},
};

static uint8_t data_byte(int t, uint64_t i) { return (uint8_t)(t * 37 + i * 7 + 1); }

/* A nest of `levels` arrays whose innermost holds one U8 (7). */
static void write_deep(struct gw *w, int levels)
{
    for (int l = 1; l < levels; l++)
        gw_arr(w, GW_ARR, 1);
    gw_arr(w, GW_U8, 1);
    gw_u8(w, 7);
}

#define N_FULL_KVS 29

/* Every value type; align == 0 leaves general.alignment out (default 32). */
static void make_full(struct gw *w, uint32_t version, uint32_t align)
{
    gw_init(w);
    gw_header(w, version, 4, N_FULL_KVS + (align ? 1 : 0));
    gw_key(w, "t.u8", GW_U8), gw_u8(w, 255);
    gw_key(w, "t.i8", GW_I8), gw_u8(w, 0x80);
    gw_key(w, "t.u16", GW_U16), gw_u16(w, 65535);
    gw_key(w, "t.i16", GW_I16), gw_u16(w, 0x8000);
    gw_key(w, "t.u32", GW_U32), gw_u32(w, 4000000000u);
    gw_key(w, "t.i32", GW_I32), gw_u32(w, (uint32_t)-2000000000);
    gw_key(w, "t.f32", GW_F32), gw_f32(w, 1.5f);
    gw_key(w, "t.bool", GW_BOOL), gw_u8(w, 1);
    gw_key(w, "t.str", GW_STR), gw_strn(w, "h\xc3\xa9llo\0x", 8);
    gw_key(w, "t.empty", GW_STR), gw_str(w, "");
    gw_key(w, "t.u64", GW_U64), gw_u64(w, UINT64_MAX);
    gw_key(w, "t.i64", GW_I64), gw_u64(w, (uint64_t)INT64_MIN);
    gw_key(w, "t.f64", GW_F64), gw_f64(w, -2.25e300);
    gw_key(w, "a.u8", GW_ARR), gw_arr(w, GW_U8, 3), gw_u8(w, 1), gw_u8(w, 2), gw_u8(w, 255);
    gw_key(w, "a.i8", GW_ARR), gw_arr(w, GW_I8, 2), gw_u8(w, 0xff), gw_u8(w, 127);
    gw_key(w, "a.u16", GW_ARR), gw_arr(w, GW_U16, 2), gw_u16(w, 1), gw_u16(w, 65535);
    gw_key(w, "a.i16", GW_ARR), gw_arr(w, GW_I16, 2), gw_u16(w, 0x8000), gw_u16(w, 5);
    gw_key(w, "a.u32", GW_ARR), gw_arr(w, GW_U32, 2), gw_u32(w, 7), gw_u32(w, 0xffffffffu);
    gw_key(w, "a.i32", GW_ARR), gw_arr(w, GW_I32, 3), gw_u32(w, (uint32_t)-1), gw_u32(w, 0), gw_u32(w, 42);
    gw_key(w, "a.f32", GW_ARR), gw_arr(w, GW_F32, 2), gw_f32(w, -0.5f), gw_f32(w, 3.25f);
    gw_key(w, "a.bool", GW_ARR), gw_arr(w, GW_BOOL, 3), gw_u8(w, 1), gw_u8(w, 0), gw_u8(w, 1);
    gw_key(w, "a.u64", GW_ARR), gw_arr(w, GW_U64, 1), gw_u64(w, 1ull << 60);
    gw_key(w, "a.i64", GW_ARR), gw_arr(w, GW_I64, 1), gw_u64(w, (uint64_t)-5);
    gw_key(w, "a.f64", GW_ARR), gw_arr(w, GW_F64, 2), gw_f64(w, 0.125), gw_f64(w, -1e-300);
    gw_key(w, "a.str", GW_ARR), gw_arr(w, GW_STR, 3), gw_str(w, "a"), gw_str(w, ""), gw_str(w, "\xc3\xbcn");
    gw_key(w, "a.empty", GW_ARR), gw_arr(w, GW_I32, 0);
    gw_key(w, "a.nested", GW_ARR), gw_arr(w, GW_ARR, 2);
    gw_arr(w, GW_I32, 2), gw_u32(w, 1), gw_u32(w, 2);
    gw_arr(w, GW_STR, 1), gw_str(w, "x");
    gw_key(w, "a.deep", GW_ARR), write_deep(w, MF_MAX_NESTING);
    gw_key(w, "t.unicode.ключ", GW_STR), gw_str(w, "v");
    if (align)
        gw_key(w, "general.alignment", GW_U32), gw_u32(w, align);
    uint64_t a = align ? align : 32, off = 0, offs[4];
    for (int t = 0; t < 4; t++) {
        offs[t] = off;
        gw_tensor(w, g_tensors[t].name, g_tensors[t].n_dims, g_tensors[t].ne, g_tensors[t].type, off);
        off = align_up(off + g_tensors[t].n_bytes, a);
    }
    gw_pad(w, a);
    size_t data_start = w->len;
    for (int t = 0; t < 4; t++) {
        gw_zeros(w, data_start + offs[t] - w->len);
        for (uint64_t i = 0; i < g_tensors[t].n_bytes; i++)
            gw_u8(w, data_byte(t, i));
    }
}

static void check_full(const char *name, uint32_t version, uint32_t align)
{
    struct gw w;
    make_full(&w, version, align);
    const char *path = test_tmp_path(name);
    CHECK(gw_save(&w, path) == 0);
    struct model_file mf;
    char err[512] = "";
    int rc = model_file_open(&mf, path, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc != 0) {
        gw_free(&w);
        return;
    }
    CHECK_EQ_INT(mf.format, MF_FORMAT_GGUF);
    CHECK_EQ_INT(mf.gguf_version, version);
    CHECK_EQ_U64(mf.gguf_alignment, align ? align : 32);
    CHECK_EQ_U64(mf.n_kvs, N_FULL_KVS + (align ? 1 : 0));
    CHECK_EQ_U64(mf.n_files, 1);
    CHECK_EQ_STR(mf.kvs[0].key, "t.u8");

    uint64_t u;
    int64_t i;
    double f;
    bool b;
    struct mf_str s;
    CHECK(model_file_get_u64(&mf, "t.u8", &u, err, sizeof(err)) == 0 && u == 255);
    CHECK(model_file_get_i64(&mf, "t.i8", &i, err, sizeof(err)) == 0 && i == -128);
    CHECK(model_file_get_u64(&mf, "t.u16", &u, err, sizeof(err)) == 0 && u == 65535);
    CHECK(model_file_get_i64(&mf, "t.i16", &i, err, sizeof(err)) == 0 && i == -32768);
    CHECK(model_file_get_u64(&mf, "t.u32", &u, err, sizeof(err)) == 0 && u == 4000000000u);
    CHECK(model_file_get_i64(&mf, "t.i32", &i, err, sizeof(err)) == 0 && i == -2000000000);
    CHECK(model_file_get_f64(&mf, "t.f32", &f, err, sizeof(err)) == 0 && f == 1.5);
    CHECK(model_file_get_bool(&mf, "t.bool", &b, err, sizeof(err)) == 0 && b);
    CHECK(model_file_get_str(&mf, "t.str", &s, err, sizeof(err)) == 0 && s.len == 8 &&
          memcmp(s.ptr, "h\xc3\xa9llo\0x", 9) == 0);
    CHECK(model_file_get_str(&mf, "t.empty", &s, err, sizeof(err)) == 0 && s.len == 0 && s.ptr[0] == 0);
    CHECK(model_file_get_u64(&mf, "t.u64", &u, err, sizeof(err)) == 0 && u == UINT64_MAX);
    CHECK(model_file_get_i64(&mf, "t.i64", &i, err, sizeof(err)) == 0 && i == INT64_MIN);
    CHECK(model_file_get_f64(&mf, "t.f64", &f, err, sizeof(err)) == 0 && f == -2.25e300);
    CHECK(model_file_get_str(&mf, "t.unicode.ключ", &s, err, sizeof(err)) == 0 && strcmp(s.ptr, "v") == 0);
    CHECK(model_file_find_kv(&mf, "t.missing") == NULL);

    const struct mf_value *v;
    CHECK(model_file_get_arr(&mf, "a.u8", MF_VT_U8, &v, err, sizeof(err)) == 0 && v->v.arr.n == 3 &&
          ((const uint8_t *)v->v.arr.data)[2] == 255);
    CHECK(model_file_get_arr(&mf, "a.i8", MF_VT_I8, &v, err, sizeof(err)) == 0 && v->v.arr.n == 2 &&
          ((const int8_t *)v->v.arr.data)[0] == -1 && ((const int8_t *)v->v.arr.data)[1] == 127);
    CHECK(model_file_get_arr(&mf, "a.u16", MF_VT_U16, &v, err, sizeof(err)) == 0 &&
          ((const uint16_t *)v->v.arr.data)[1] == 65535);
    CHECK(model_file_get_arr(&mf, "a.i16", MF_VT_I16, &v, err, sizeof(err)) == 0 &&
          ((const int16_t *)v->v.arr.data)[0] == -32768 && ((const int16_t *)v->v.arr.data)[1] == 5);
    CHECK(model_file_get_arr(&mf, "a.u32", MF_VT_U32, &v, err, sizeof(err)) == 0 &&
          ((const uint32_t *)v->v.arr.data)[1] == 0xffffffffu);
    CHECK(model_file_get_arr(&mf, "a.i32", MF_VT_I32, &v, err, sizeof(err)) == 0 && v->v.arr.n == 3 &&
          ((const int32_t *)v->v.arr.data)[0] == -1 && ((const int32_t *)v->v.arr.data)[2] == 42);
    CHECK(model_file_get_arr(&mf, "a.f32", MF_VT_F32, &v, err, sizeof(err)) == 0 &&
          ((const float *)v->v.arr.data)[0] == -0.5f && ((const float *)v->v.arr.data)[1] == 3.25f);
    CHECK(model_file_get_arr(&mf, "a.bool", MF_VT_BOOL, &v, err, sizeof(err)) == 0 &&
          ((const bool *)v->v.arr.data)[0] && !((const bool *)v->v.arr.data)[1]);
    CHECK(model_file_get_arr(&mf, "a.u64", MF_VT_U64, &v, err, sizeof(err)) == 0 &&
          ((const uint64_t *)v->v.arr.data)[0] == 1ull << 60);
    CHECK(model_file_get_arr(&mf, "a.i64", MF_VT_I64, &v, err, sizeof(err)) == 0 &&
          ((const int64_t *)v->v.arr.data)[0] == -5);
    CHECK(model_file_get_arr(&mf, "a.f64", MF_VT_F64, &v, err, sizeof(err)) == 0 &&
          ((const double *)v->v.arr.data)[1] == -1e-300);
    CHECK(model_file_get_arr(&mf, "a.str", MF_VT_STR, &v, err, sizeof(err)) == 0 && v->v.arr.n == 3);
    if (v && v->type == MF_VT_ARR && v->v.arr.type == MF_VT_STR) {
        const struct mf_str *ss = v->v.arr.data;
        CHECK_EQ_STR(ss[0].ptr, "a");
        CHECK(ss[1].len == 0 && ss[1].ptr[0] == 0);
        CHECK(ss[2].len == 3);
        CHECK_EQ_STR(ss[2].ptr, "\xc3\xbcn");
    }
    CHECK(model_file_get_arr(&mf, "a.empty", MF_VT_I32, &v, err, sizeof(err)) == 0 && v->v.arr.n == 0);
    CHECK(model_file_get_arr(&mf, "a.nested", MF_VT_ARR, &v, err, sizeof(err)) == 0 && v->v.arr.n == 2);
    if (v && v->type == MF_VT_ARR && v->v.arr.type == MF_VT_ARR) {
        const struct mf_value *in = v->v.arr.data;
        CHECK(in[0].type == MF_VT_ARR && in[0].v.arr.type == MF_VT_I32 && in[0].v.arr.n == 2 &&
              ((const int32_t *)in[0].v.arr.data)[1] == 2);
        CHECK(in[1].type == MF_VT_ARR && in[1].v.arr.type == MF_VT_STR && in[1].v.arr.n == 1 &&
              strcmp(((const struct mf_str *)in[1].v.arr.data)[0].ptr, "x") == 0);
    }
    /* a.deep: MF_MAX_NESTING arrays, the innermost holding the U8 7 */
    v = model_file_find_kv(&mf, "a.deep");
    int levels = 0;
    while (v && v->type == MF_VT_ARR && v->v.arr.n == 1) {
        levels++;
        if (v->v.arr.type != MF_VT_ARR) {
            CHECK(v->v.arr.type == MF_VT_U8 && ((const uint8_t *)v->v.arr.data)[0] == 7);
            break;
        }
        v = v->v.arr.data;
    }
    CHECK_EQ_INT(levels, MF_MAX_NESTING);
    /* getters refuse the wrong type with the key in the message */
    CHECK(model_file_get_str(&mf, "t.u8", &s, err, sizeof(err)) != 0);
    CHECK_CONTAINS(err, "t.u8");

    /* tensors: shapes reversed, sizes, data pointing at the right bytes */
    CHECK_EQ_U64(mf.n_tensors, 4);
    const struct mf_tensor *t = model_file_find_tensor(&mf, "w.f32");
    CHECK(t && t->dtype == DTYPE_F32 && t->n_dims == 2 && t->shape[0] == 2 && t->shape[1] == 3 &&
          t->shape[2] == 1 && t->n_elements == 6 && t->n_bytes == 24);
    t = model_file_find_tensor(&mf, "w.q4");
    CHECK(t && t->dtype == DTYPE_Q4_0 && t->shape[0] == 2 && t->shape[1] == 64 && t->n_bytes == 72);
    t = model_file_find_tensor(&mf, "w.i8");
    CHECK(t && t->dtype == DTYPE_I8 && t->n_dims == 1 && t->shape[0] == 5 && t->n_bytes == 5);
    t = model_file_find_tensor(&mf, "blk.0.w4d");
    CHECK(t && t->dtype == DTYPE_F16 && t->n_dims == 4 && t->shape[0] == 5 && t->shape[1] == 4 &&
          t->shape[2] == 3 && t->shape[3] == 2 && t->n_elements == 120 && t->n_bytes == 240);
    uint64_t a = align ? align : 32;
    for (int k = 0; k < 4; k++) {
        const struct mf_tensor *tk = &mf.tensors[k];
        CHECK_EQ_STR(tk->name, g_tensors[k].name);
        CHECK(tk->file_index == 0);
        CHECK((uint64_t)(tk->data - mf.files[0].data) % a == 0);
        bool same = true;
        for (uint64_t j = 0; j < tk->n_bytes; j++)
            same = same && tk->data[j] == data_byte(k, j);
        CHECK_MSG(same, "tensor %s bytes", tk->name);
    }
    /* the file ends with the last tensor's bytes */
    CHECK(mf.tensors[3].data + mf.tensors[3].n_bytes == mf.files[0].data + mf.files[0].size);
    model_file_close(&mf);
    gw_free(&w);
}

static void test_all_types_v3(void) { check_full("gguf-full-v3.gguf", 3, 0); }
static void test_all_types_v2(void) { check_full("gguf-full-v2.gguf", 2, 0); }
static void test_alignment_64(void) { check_full("gguf-align64.gguf", 3, 64); }
static void test_alignment_1(void) { check_full("gguf-align1.gguf", 3, 1); }

/* Open the bytes in w as NAME; the open must fail with NEEDLE and the path in
 * the message. */
static void expect_fail(struct gw *w, const char *name, const char *needle)
{
    const char *path = test_tmp_path(name);
    CHECK(gw_save(w, path) == 0);
    struct model_file mf;
    char err[512] = "";
    int rc = model_file_open(&mf, path, err, sizeof(err));
    CHECK_MSG(rc != 0, "%s opened but should not", name);
    if (rc == 0)
        model_file_close(&mf);
    CHECK_CONTAINS(err, path);
    CHECK_CONTAINS(err, needle);
    gw_free(w);
}

/* A file with one U32 key and one F32 tensor; pieces can be swapped by the
 * callers below, which build their own bytes when they need to. */
static void make_one(struct gw *w, uint32_t version, const char *key, const char *tname, const uint64_t *ne,
                     uint32_t n_dims, uint32_t type, uint64_t offset, size_t data_bytes)
{
    gw_init(w);
    gw_header(w, version, 1, 1);
    gw_key(w, key, GW_U32), gw_u32(w, 1);
    gw_tensor(w, tname, n_dims, ne, type, offset);
    gw_pad(w, 32);
    gw_zeros(w, data_bytes);
}

static void test_err_magic(void)
{
    struct gw w;
    gw_init(&w), gw_bytes(&w, "hello world\n", 12);
    expect_fail(&w, "bad-magic.gguf", "not a GGUF file (magic 68 65 6c 6c 'hell'");
    gw_init(&w), gw_bytes(&w, "GG", 2);
    expect_fail(&w, "short.gguf", "not a GGUF file: only 2 bytes");
    gw_init(&w);
    expect_fail(&w, "empty.gguf", "not a GGUF file: only 0 bytes");
    gw_init(&w), gw_bytes(&w, "  {\"a\": 1}", 10);
    expect_fail(&w, "json.gguf", "looks like JSON");
    /* safetensors: 8-byte header length, then JSON */
    gw_init(&w), gw_u64(&w, 2), gw_bytes(&w, "{}", 2);
    expect_fail(&w, "st.gguf", "looks like a safetensors file");
    gw_init(&w), gw_bytes(&w, "PK\x03\x04rest", 8);
    expect_fail(&w, "zip.gguf", "zip archive");
    gw_init(&w), gw_u32(&w, 0x67676a74), gw_u32(&w, 3); /* ggjt v3, as llama.cpp wrote it */
    expect_fail(&w, "ggjt.gguf", "an older GGML/GGJT file (magic 'ggjt')");
}

static void test_err_version(void)
{
    struct gw w;
    uint64_t ne[1] = {8};
    make_one(&w, 1, "k", "t", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "v1.gguf", "GGUF version 1 is not supported");
    make_one(&w, 4, "k", "t", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "v4.gguf", "unsupported GGUF version 4");
    make_one(&w, 0x03000000u, "k", "t", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "vswap.gguf", "big-endian");
}

static void test_err_counts(void)
{
    struct gw w;
    gw_init(&w), gw_header(&w, 3, (uint64_t)MF_MAX_TENSORS + 1, 0);
    expect_fail(&w, "many-tensors.gguf", "tensor count 1048577 exceeds the limit");
    gw_init(&w), gw_header(&w, 3, 0, UINT64_MAX);
    expect_fail(&w, "many-kvs.gguf", "metadata count 18446744073709551615 exceeds the limit");
    /* under the limits but far more than the bytes left could hold */
    gw_init(&w), gw_header(&w, 3, 1000, 1000), gw_zeros(&w, 100);
    expect_fail(&w, "counts-vs-size.gguf", "1000 metadata entries and 1000 tensors cannot fit in the 100 bytes left");
    /* an array count that cannot fit */
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "arr", GW_ARR), gw_arr(&w, GW_U32, 1ull << 62), gw_zeros(&w, 16);
    expect_fail(&w, "arr-count.gguf", "array of 4611686018427387904 U32 elements");
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "arr", GW_ARR), gw_arr(&w, GW_STR, 3), gw_zeros(&w, 16);
    expect_fail(&w, "str-arr-count.gguf", "array of 3 STR elements");
    /* a string length past the end */
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "s", GW_STR), gw_u64(&w, 1000), gw_zeros(&w, 16);
    expect_fail(&w, "str-len.gguf", "metadata key 's': string length 1000");
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "s", GW_ARR), gw_arr(&w, GW_STR, 2), gw_str(&w, "ab"),
        gw_u64(&w, UINT64_MAX), gw_zeros(&w, 8);
    expect_fail(&w, "str-arr-len.gguf", "string 1 of 2: length 18446744073709551615");
}

static void test_err_keys(void)
{
    struct gw w;
    uint64_t ne[1] = {8};
    make_one(&w, 3, "bad\xff" "key", "t", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "key-utf8.gguf", "key at offset 32 is not valid UTF-8");
    make_one(&w, 3, "over\xc0\xafong", "t", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "key-overlong.gguf", "not valid UTF-8");
    make_one(&w, 3, "surrogate\xed\xa0\x80", "t", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "key-surrogate.gguf", "not valid UTF-8");
    make_one(&w, 3, "k", "name\xe2\x82", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "name-utf8.gguf", "tensor 0: tensor name at offset");
    make_one(&w, 3, "", "t", ne, 1, GGML_F32, 0, 32);
    expect_fail(&w, "key-empty.gguf", "metadata entry 0: empty key");
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_strn(&w, "a\0b", 3), gw_u32(&w, GW_U8), gw_u8(&w, 1);
    expect_fail(&w, "key-nul.gguf", "contains a NUL byte");
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_u64(&w, MF_MAX_NAME_LEN + 1), gw_zeros(&w, MF_MAX_NAME_LEN + 16);
    expect_fail(&w, "key-long.gguf", "key length 4097 at offset 24 exceeds the limit of 4096 bytes");
    /* duplicates are refused */
    gw_init(&w), gw_header(&w, 3, 0, 2), gw_key(&w, "dup", GW_U8), gw_u8(&w, 1), gw_key(&w, "dup", GW_I32),
        gw_u32(&w, 2);
    expect_fail(&w, "dup-key.gguf", "duplicate metadata key 'dup'");
    gw_init(&w), gw_header(&w, 3, 2, 0), gw_tensor(&w, "w", 1, ne, GGML_F32, 0),
        gw_tensor(&w, "w", 1, ne, GGML_F32, 32), gw_pad(&w, 32), gw_zeros(&w, 64);
    expect_fail(&w, "dup-tensor.gguf", "duplicate tensor name 'w'");
    /* unknown value types, at the top and inside an array */
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "k", 13), gw_u64(&w, 0);
    expect_fail(&w, "vtype.gguf", "metadata key 'k': unknown value type 13");
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "k", GW_ARR), gw_arr(&w, 99, 1), gw_u64(&w, 0);
    expect_fail(&w, "arr-vtype.gguf", "unknown array element type 99");
    /* nesting one level beyond the limit */
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "deep", GW_ARR), write_deep(&w, MF_MAX_NESTING + 1);
    expect_fail(&w, "too-deep.gguf", "metadata key 'deep': arrays nested deeper than 8 levels");
}

static void test_err_tensors(void)
{
    struct gw w;
    uint64_t ne1[1] = {8};
    make_one(&w, 3, "k", "t", ne1, 1, 4, 0, 32);
    expect_fail(&w, "type4.gguf", "tensor 't': unknown ggml tensor type id 4");
    make_one(&w, 3, "k", "t", ne1, 1, 1000, 0, 32);
    expect_fail(&w, "type1000.gguf", "tensor 't': unknown ggml tensor type id 1000");
    uint64_t ne5[5] = {1, 1, 1, 1, 1};
    make_one(&w, 3, "k", "t", ne5, 5, GGML_F32, 0, 32);
    expect_fail(&w, "5dims.gguf", "tensor 't': 5 dimensions, GGUF allows at most 4");
    uint64_t ne0[2] = {8, 0};
    make_one(&w, 3, "k", "t", ne0, 2, GGML_F32, 0, 32);
    expect_fail(&w, "dim0.gguf", "tensor 't': dimension 1 is 0, must be > 0");
    uint64_t neneg[1] = {UINT64_MAX};
    make_one(&w, 3, "k", "t", neneg, 1, GGML_F32, 0, 32);
    expect_fail(&w, "dimneg.gguf", "dimension 0 is -1, must be > 0");
    uint64_t nebig[2] = {1ull << 40, 1ull << 40};
    make_one(&w, 3, "k", "t", nebig, 2, GGML_F32, 0, 32);
    expect_fail(&w, "shape-overflow.gguf", "tensor 't': element count overflows");
    uint64_t nebytes[1] = {1ull << 62}; /* 2^62 elements fit, 2^64 bytes do not */
    make_one(&w, 3, "k", "t", nebytes, 1, GGML_F32, 0, 32);
    expect_fail(&w, "bytes-overflow.gguf", "tensor 't': byte size overflows");
    uint64_t neq[1] = {48};
    make_one(&w, 3, "k", "t", neq, 1, GGML_Q4_0, 0, 64);
    expect_fail(&w, "block.gguf", "tensor 't': row length 48 is not a multiple of Q4_0's block size 32");
    make_one(&w, 3, "k", "t", ne1, 1, GGML_F32, 64, 64);
    expect_fail(&w, "past-end.gguf", "tensor 't': data [offset 64 + 32 bytes] runs past the end of the file");
    make_one(&w, 3, "k", "t", ne1, 1, GGML_F32, 0, 31);
    expect_fail(&w, "short-data.gguf", "runs past the end of the file");
    make_one(&w, 3, "k", "t", ne1, 1, GGML_F32, UINT64_MAX - 31, 32);
    expect_fail(&w, "offset-overflow.gguf", "runs past the end of the file");
    make_one(&w, 3, "k", "t", ne1, 1, GGML_F32, 16, 64);
    expect_fail(&w, "unaligned.gguf", "tensor 't': data offset 16 is not a multiple of the alignment 32");
}

static void test_err_alignment(void)
{
    static const uint32_t bad[] = {0, 3, 48};
    static const char *needle[] = {"general.alignment 0 is not a power of two",
                                   "general.alignment 3 is not a power of two",
                                   "general.alignment 48 is not a power of two"};
    for (int k = 0; k < 3; k++) {
        struct gw w;
        gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "general.alignment", GW_U32), gw_u32(&w, bad[k]);
        expect_fail(&w, "align-bad.gguf", needle[k]);
    }
    struct gw w;
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "general.alignment", GW_I32), gw_u32(&w, (uint32_t)-32);
    expect_fail(&w, "align-neg.gguf", "general.alignment -32 is not a power of two");
    gw_init(&w), gw_header(&w, 3, 0, 1), gw_key(&w, "general.alignment", GW_STR), gw_str(&w, "32");
    expect_fail(&w, "align-str.gguf", "general.alignment has type STR, expected an integer");
}

/* Every proper prefix of a valid file fails with a message naming the file. */
static void test_truncated_prefixes(void)
{
    struct gw w;
    make_full(&w, 3, 0);
    const char *path = test_tmp_path("gguf-prefix.gguf");
    int opened = 0, no_path = 0;
    for (size_t n = 0; n < w.len; n++) {
        CHECK(gw_save_prefix(&w, path, n) == 0);
        struct model_file mf;
        char err[512] = "";
        if (model_file_open(&mf, path, err, sizeof(err)) == 0) {
            opened++;
            model_file_close(&mf);
        } else if (strncmp(err, path, strlen(path)) != 0) {
            no_path++;
        }
    }
    CHECK_EQ_INT(opened, 0);
    CHECK_EQ_INT(no_path, 0);
    /* and the whole file opens */
    CHECK(gw_save(&w, path) == 0);
    struct model_file mf;
    char err[512] = "";
    CHECK_MSG(model_file_open(&mf, path, err, sizeof(err)) == 0, "%s", err);
    model_file_close(&mf);
    /* a few prefixes with their exact messages */
    CHECK(gw_save_prefix(&w, path, 10) == 0);
    CHECK(model_file_open(&mf, path, err, sizeof(err)) != 0);
    CHECK_CONTAINS(err, "truncated: tensor count needs 8 bytes at offset 8, only 2 left");
    gw_free(&w);
}

/* Expected values below were printed by the Python gguf package (0.19.0):
 *   r = gguf.GGUFReader(path); r.fields[key].contents() */
static void test_vocab_llama_bpe(void)
{
    const char *path = test_shared_path("testdata/vocab/ggml-vocab-llama-bpe.gguf");
    struct model_file mf;
    char err[512] = "";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = model_file_open(&mf, path, err, sizeof(err));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    fprintf(stderr, "  llama-bpe vocab GGUF opened in %.2f ms\n",
            (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    CHECK_EQ_INT(mf.gguf_version, 3);
    CHECK_EQ_U64(mf.n_kvs, 20);
    CHECK_EQ_U64(mf.n_tensors, 0);
    struct mf_str s;
    uint64_t u;
    double f;
    CHECK(model_file_get_str(&mf, "tokenizer.ggml.model", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "gpt2"));
    CHECK(model_file_get_str(&mf, "tokenizer.ggml.pre", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "llama-bpe"));
    CHECK(model_file_get_str(&mf, "general.architecture", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "llama"));
    CHECK(model_file_get_u64(&mf, "llama.vocab_size", &u, err, sizeof(err)) == 0 && u == 128256);
    CHECK(model_file_get_u64(&mf, "llama.feed_forward_length", &u, err, sizeof(err)) == 0 && u == 14336);
    CHECK(model_file_get_u64(&mf, "tokenizer.ggml.bos_token_id", &u, err, sizeof(err)) == 0 && u == 128000);
    CHECK(model_file_get_u64(&mf, "tokenizer.ggml.eos_token_id", &u, err, sizeof(err)) == 0 && u == 128001);
    CHECK(model_file_get_f64(&mf, "llama.rope.freq_base", &f, err, sizeof(err)) == 0 && f == 500000.0);
    CHECK(model_file_get_f64(&mf, "llama.attention.layer_norm_rms_epsilon", &f, err, sizeof(err)) == 0 &&
          f == 9.999999747378752e-06);
    const struct mf_value *v;
    CHECK(model_file_get_arr(&mf, "tokenizer.ggml.tokens", MF_VT_STR, &v, err, sizeof(err)) == 0);
    if (v && v->type == MF_VT_ARR && v->v.arr.type == MF_VT_STR) {
        const struct mf_str *tok = v->v.arr.data;
        CHECK_EQ_U64(v->v.arr.n, 128256);
        CHECK_EQ_STR(tok[0].ptr, "!");
        CHECK_EQ_STR(tok[13].ptr, ".");
        CHECK_EQ_STR(tok[1000].ptr, "indow");
        CHECK_EQ_STR(tok[9906].ptr, "Hello");
        CHECK_EQ_STR(tok[128000].ptr, "<|begin_of_text|>");
        CHECK_EQ_STR(tok[128255].ptr, "<|reserved_special_token_250|>");
    }
    CHECK(model_file_get_arr(&mf, "tokenizer.ggml.merges", MF_VT_STR, &v, err, sizeof(err)) == 0);
    if (v && v->type == MF_VT_ARR && v->v.arr.type == MF_VT_STR) {
        const struct mf_str *m = v->v.arr.data;
        CHECK_EQ_U64(v->v.arr.n, 280147);
        CHECK_EQ_STR(m[0].ptr, "\xc4\xa0 \xc4\xa0");               /* "Ġ Ġ" */
        CHECK_EQ_STR(m[1000].ptr, "\xc4\xa0" "els e");              /* "Ġels e" */
        CHECK_EQ_STR(m[280146].ptr, "\xc3\xa9\xc4\xb6 \xc2\xa6");   /* "éĶ ¦" */
    }
    CHECK(model_file_get_arr(&mf, "tokenizer.ggml.token_type", MF_VT_I32, &v, err, sizeof(err)) == 0);
    if (v && v->type == MF_VT_ARR && v->v.arr.type == MF_VT_I32) {
        CHECK_EQ_U64(v->v.arr.n, 128256);
        CHECK_EQ_INT(((const int32_t *)v->v.arr.data)[0], 1);
        CHECK_EQ_INT(((const int32_t *)v->v.arr.data)[128255], 3);
    }
    model_file_close(&mf);
}

static void test_vocab_llama_spm(void)
{
    const char *path = test_shared_path("testdata/vocab/ggml-vocab-llama-spm.gguf");
    struct model_file mf;
    char err[512] = "";
    int rc = model_file_open(&mf, path, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK_EQ_U64(mf.n_kvs, 22);
    struct mf_str s;
    bool b;
    CHECK(model_file_get_str(&mf, "tokenizer.ggml.model", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "llama"));
    CHECK(model_file_get_str(&mf, "tokenizer.ggml.pre", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "default"));
    CHECK(model_file_get_bool(&mf, "tokenizer.ggml.add_bos_token", &b, err, sizeof(err)) == 0 && b);
    CHECK(model_file_get_bool(&mf, "tokenizer.ggml.add_eos_token", &b, err, sizeof(err)) == 0 && !b);
    const struct mf_value *tv = NULL, *sv = NULL, *yv = NULL;
    CHECK(model_file_get_arr(&mf, "tokenizer.ggml.tokens", MF_VT_STR, &tv, err, sizeof(err)) == 0);
    CHECK(model_file_get_arr(&mf, "tokenizer.ggml.scores", MF_VT_F32, &sv, err, sizeof(err)) == 0);
    CHECK(model_file_get_arr(&mf, "tokenizer.ggml.token_type", MF_VT_I32, &yv, err, sizeof(err)) == 0);
    if (tv && sv && yv && tv->v.arr.n == 32000 && sv->v.arr.n == 32000 && yv->v.arr.n == 32000) {
        const struct mf_str *tok = tv->v.arr.data;
        const float *score = sv->v.arr.data;
        const int32_t *type = yv->v.arr.data;
        CHECK_EQ_STR(tok[0].ptr, "<unk>");
        CHECK_EQ_STR(tok[3].ptr, "<0x00>");
        CHECK(type[0] == 2 && type[1] == 3 && type[3] == 6 && type[31999] == 1);
        CHECK_EQ_STR(tok[259].ptr, "\xe2\x96\x81\xe2\x96\x81"); /* "▁▁" */
        CHECK(score[259] == -1000000000.0f);
        CHECK_EQ_STR(tok[1000].ptr, "ied");
        CHECK(score[1000] == -741.0f);
        CHECK_EQ_STR(tok[31999].ptr, "\xe7\xbb\x99"); /* "给" */
        CHECK(score[31999] == -31740.0f);
    } else {
        CHECK_MSG(false, "vocab arrays missing or not 32000 long");
    }
    model_file_close(&mf);
}

/* Every vocab GGUF in the shared test data opens. */
static void test_vocab_all_open(void)
{
    static const char *names[] = {"deepseek-llm", "gemma-4", "gpt-2", "llama-bpe", "llama-spm",
                                  "phi-3", "qwen2", "qwen35"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        char rel[128];
        snprintf(rel, sizeof(rel), "testdata/vocab/ggml-vocab-%s.gguf", names[k]);
        struct model_file mf;
        char err[512] = "";
        int rc = model_file_open(&mf, test_shared_path(rel), err, sizeof(err));
        CHECK_MSG(rc == 0, "%s", err);
        if (rc == 0) {
            const struct mf_value *v;
            CHECK_MSG(model_file_get_arr(&mf, "tokenizer.ggml.tokens", MF_VT_STR, &v, err, sizeof(err)) == 0, "%s",
                      err);
            model_file_close(&mf);
        }
    }
}

int main(void)
{
    RUN(test_all_types_v3);
    RUN(test_all_types_v2);
    RUN(test_alignment_64);
    RUN(test_alignment_1);
    RUN(test_err_magic);
    RUN(test_err_version);
    RUN(test_err_counts);
    RUN(test_err_keys);
    RUN(test_err_tensors);
    RUN(test_err_alignment);
    RUN(test_truncated_prefixes);
    RUN(test_vocab_llama_bpe);
    RUN(test_vocab_llama_spm);
    RUN(test_vocab_all_open);
    return test_summary();
}
