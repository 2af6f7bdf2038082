/* test_format_safetensors.c — the safetensors reader (src/format/safetensors.c)
 * and the Hugging Face folder reader (src/format/hfdir.c).
 *
 * Files are written here byte by byte (u64 header length, JSON header, data), so
 * each error path can be hit exactly: single files of every dtype family,
 * sharded checkpoints with an index, HF folders in each of their weight
 * layouts, then one broken file or folder per error, each checking the message.
 * The Python side (tests/py/test_safetensors_reference.py) compares against the
 * safetensors package itself.
 */
#include "format/model_file.h"
#include "test.h"

#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

/* Write u64 len(header) + header + data to path. */
static void st_write(const char *path, const char *header, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    uint64_t hlen = strlen(header);
    fwrite(&hlen, 8, 1, f);
    fwrite(header, 1, hlen, f);
    if (n)
        fwrite(data, 1, n, f);
    fclose(f);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        if (n)
            fwrite(p, 1, n, f);
        fclose(f);
    }
}

/* A fresh empty folder under the build tree; returns its path. */
static const char *fresh_dir(const char *name)
{
    static char buf[4][4096];
    static int k;
    char *d = buf[k++ & 3];
    snprintf(d, sizeof(buf[0]), "%s", test_tmp_path(name));
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    CHECK(system(cmd) == 0);
    CHECK(mkdir(d, 0755) == 0);
    return d;
}

static const char *in_dir(const char *dir, const char *name)
{
    static char buf[8][4096];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
    return p;
}

static void expect_fail_path(const char *path, const char *needle)
{
    struct model_file mf;
    char err[512] = "";
    int rc = model_file_open(&mf, path, err, sizeof(err));
    CHECK_MSG(rc != 0, "%s opened but should not (%s)", path, needle);
    if (rc == 0)
        model_file_close(&mf);
    CHECK_CONTAINS(err, needle);
}

/* A header (JSON) and data that fail to open with needle in the message. */
static void expect_fail(const char *name, const char *header, size_t data_bytes, const char *needle)
{
    static uint8_t zeros[256];
    const char *path = test_tmp_path(name);
    st_write(path, header, zeros, data_bytes);
    expect_fail_path(path, needle);
}

static uint8_t g_data[64];

static const char *SINGLE_HEADER =
    "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"h\\u00e9\"},"
    "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b16\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
    "\"scalar\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[32,40]},"
    "\"empty\":{\"dtype\":\"U8\",\"shape\":[0,5],\"data_offsets\":[40,40]},"
    "\"f8\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,2],\"data_offsets\":[40,44]},"
    "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[1,1,3],\"data_offsets\":[44,47]}}    ";

static void test_single(void)
{
    for (int i = 0; i < 64; i++)
        g_data[i] = (uint8_t)(i * 3 + 1);
    const char *path = test_tmp_path("single.safetensors");
    st_write(path, SINGLE_HEADER, g_data, 47);
    struct model_file mf;
    char err[512] = "";
    int rc = model_file_open(&mf, path, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK_EQ_INT(mf.format, MF_FORMAT_SAFETENSORS);
    CHECK_EQ_U64(mf.n_files, 1);
    CHECK_EQ_STR(mf.file_paths[0], path);
    CHECK_EQ_U64(mf.n_tensors, 6);
    CHECK_EQ_U64(mf.n_kvs, 2);
    struct mf_str s;
    CHECK(model_file_get_str(&mf, "format", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "pt"));
    CHECK(model_file_get_str(&mf, "note", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "h\xc3\xa9") && s.len == 3);
    uint64_t hlen = strlen(SINGLE_HEADER);
    const uint8_t *data0 = mf.files[0].data + 8 + hlen;
    const struct mf_tensor *t = model_file_find_tensor(&mf, "w");
    CHECK(t && t->dtype == DTYPE_F32 && t->n_dims == 2 && t->shape[0] == 2 && t->shape[1] == 3 &&
          t->shape[2] == 1 && t->n_elements == 6 && t->n_bytes == 24 && t->data == data0 && t->data[0] == 1);
    t = model_file_find_tensor(&mf, "b16");
    CHECK(t && t->dtype == DTYPE_BF16 && t->n_dims == 1 && t->shape[0] == 4 && t->n_bytes == 8 &&
          t->data == data0 + 24 && t->data[0] == g_data[24]);
    t = model_file_find_tensor(&mf, "scalar");
    CHECK(t && t->dtype == DTYPE_I64 && t->n_dims == 0 && t->n_elements == 1 && t->n_bytes == 8);
    t = model_file_find_tensor(&mf, "empty");
    CHECK(t && t->dtype == DTYPE_U8 && t->n_dims == 2 && t->shape[0] == 0 && t->n_elements == 0 && t->n_bytes == 0);
    t = model_file_find_tensor(&mf, "f8");
    CHECK(t && t->dtype == DTYPE_F8_E4M3 && t->n_bytes == 4 && t->data == data0 + 40);
    t = model_file_find_tensor(&mf, "mask");
    CHECK(t && t->dtype == DTYPE_BOOL && t->n_dims == 3 && t->shape[2] == 3 && t->n_bytes == 3 &&
          t->data[2] == g_data[46]);
    /* header order is kept */
    CHECK_EQ_STR(mf.tensors[0].name, "w");
    CHECK_EQ_STR(mf.tensors[5].name, "mask");
    model_file_close(&mf);

    /* every proper prefix fails with the path in the message */
    FILE *f = fopen(path, "rb");
    uint8_t whole[1024];
    size_t n = f ? fread(whole, 1, sizeof(whole), f) : 0;
    if (f)
        fclose(f);
    CHECK(n == 8 + hlen + 47);
    const char *pp = test_tmp_path("prefix.safetensors");
    int opened = 0, no_path = 0;
    for (size_t k = 0; k < n; k++) {
        write_bytes(pp, whole, k);
        if (model_file_open(&mf, pp, err, sizeof(err)) == 0) {
            opened++;
            model_file_close(&mf);
        } else if (strncmp(err, pp, strlen(pp)) != 0) {
            no_path++;
        }
    }
    CHECK_EQ_INT(opened, 0);
    CHECK_EQ_INT(no_path, 0);
}

static void test_errors_single(void)
{
    write_bytes(test_tmp_path("short.safetensors"), "\x02\0\0", 3);
    expect_fail_path(test_tmp_path("short.safetensors"), "short.safetensors: not a safetensors file: 3 bytes");
    /* header length past the end of the file */
    uint8_t b[16] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    write_bytes(test_tmp_path("hlen.safetensors"), b, 10);
    expect_fail_path(test_tmp_path("hlen.safetensors"), "header length 100 runs past the end of the file (10 bytes)");
    uint64_t big = (uint64_t)MF_MAX_JSON_HEADER + 1;
    memcpy(b, &big, 8);
    write_bytes(test_tmp_path("hbig.safetensors"), b, 10);
    expect_fail_path(test_tmp_path("hbig.safetensors"), "header length 104857601 exceeds the limit");
    expect_fail("badjson.safetensors", "{\"w\": {\"dtype\": \"F32\",", 0, "header is not valid JSON");
    expect_fail("array.safetensors", "[1, 2]", 0, "header is not a JSON object");
    expect_fail("dupkey.safetensors",
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                4, "duplicate object key");
    expect_fail("notobj.safetensors", "{\"w\": 5}", 0, "tensor 'w': entry is not a JSON object");
    expect_fail("nodtype.safetensors", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': \"dtype\" is missing or not a string");
    expect_fail("q9.safetensors", "{\"w\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': unknown dtype 'Q9'");
    expect_fail("noshape.safetensors", "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': \"shape\" is missing or not an array");
    expect_fail("negshape.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': shape[0] is not a non-negative integer");
    expect_fail("floatshape.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
                "shape[0] is not a non-negative integer");
    expect_fail("9dims.safetensors",
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': 9 dimensions, at most 8 allowed");
    expect_fail("overflow.safetensors",
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': element count overflows");
    expect_fail("byteoverflow.safetensors",
                "{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': byte size overflows");
    expect_fail("offs3.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
                "tensor 'w': \"data_offsets\" must be [begin, end]");
    expect_fail("offsneg.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8,
                "\"data_offsets\" must be [begin, end]");
    expect_fail("offsrange.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 6,
                "tensor 'w': data_offsets [4, 8] out of range: the data section has 6 bytes");
    expect_fail("offsorder.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8,
                "tensor 'w': data_offsets [8, 4] out of range");
    expect_fail("sizemismatch.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8,
                "tensor 'w': data_offsets span 4 bytes, but F32 × 2 elements need 8");
    expect_fail("meta.safetensors", "{\"__metadata__\":{\"n\":5}}", 0, "__metadata__ 'n' is not a string");
    expect_fail("metaobj.safetensors", "{\"__metadata__\":[]}", 0, "\"__metadata__\" is not a JSON object");
}

/* Two shards and an index in dir; returns the index path. */
static const char *make_sharded(const char *dir, const char *weight_map)
{
    float a[4] = {1, 2, 3, 4}, c[2] = {5, 6};
    st_write(in_dir(dir, "model-00001-of-00002.safetensors"),
             "{\"__metadata__\":{\"format\":\"pt\"},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}",
             a, sizeof(a));
    st_write(in_dir(dir, "model-00002-of-00002.safetensors"),
             "{\"__metadata__\":{\"format\":\"pt\",\"extra\":\"2\"},"
             "\"c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}",
             c, sizeof(c));
    char idx[2048];
    snprintf(idx, sizeof(idx), "{\"metadata\":{\"total_size\":24},\"weight_map\":%s}", weight_map);
    const char *path = in_dir(dir, "model.safetensors.index.json");
    write_text(path, idx);
    return path;
}

static const char *GOOD_MAP = "{\"a\":\"model-00001-of-00002.safetensors\",\"c\":\"model-00002-of-00002.safetensors\","
                              "\"d\":\"model-00002-of-00002.safetensors\"}";

static void test_sharded(void)
{
    const char *dir = fresh_dir("sharded");
    const char *index = make_sharded(dir, GOOD_MAP);
    struct model_file mf;
    char err[512] = "";
    int rc = model_file_open(&mf, index, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK_EQ_INT(mf.format, MF_FORMAT_SAFETENSORS);
    CHECK_EQ_U64(mf.n_files, 2);
    CHECK_EQ_STR(mf.file_paths[0], in_dir(dir, "model-00001-of-00002.safetensors"));
    CHECK_EQ_STR(mf.file_paths[1], in_dir(dir, "model-00002-of-00002.safetensors"));
    CHECK_EQ_U64(mf.n_tensors, 3);
    const struct mf_tensor *t = model_file_find_tensor(&mf, "a");
    float x = 0; /* data is not 4-byte aligned here (header length not a multiple of 8): memcpy */
    CHECK(t && t->file_index == 0 && t->shape[0] == 2 && t->shape[1] == 2);
    if (t)
        memcpy(&x, t->data + 12, 4);
    CHECK(x == 4.0f);
    t = model_file_find_tensor(&mf, "c");
    CHECK(t && t->file_index == 1 && t->n_bytes == 8);
    if (t)
        memcpy(&x, t->data + 4, 4);
    CHECK(x == 6.0f);
    /* shards' __metadata__ merged, the first value of a key kept */
    CHECK_EQ_U64(mf.n_kvs, 2);
    struct mf_str s;
    CHECK(model_file_get_str(&mf, "format", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "pt"));
    CHECK(model_file_get_str(&mf, "extra", &s, err, sizeof(err)) == 0 && !strcmp(s.ptr, "2"));
    model_file_close(&mf);
}

static void test_errors_sharded(void)
{
    const char *dir = fresh_dir("shard-errs");
    const char *index = make_sharded(dir, "{\"a\":\"model-00001-of-00002.safetensors\",\"x\":\"missing.safetensors\"}");
    expect_fail_path(index, "model.safetensors.index.json: shard 'missing.safetensors': ");
    expect_fail_path(index, "missing.safetensors: cannot open");
    index = make_sharded(dir, "{\"a\":\"../model-00001-of-00002.safetensors\"}");
    expect_fail_path(index, "weight_map 'a': shard path '../model-00001-of-00002.safetensors' escapes the folder");
    index = make_sharded(dir, "{\"a\":\"sub/../../x.safetensors\"}");
    expect_fail_path(index, "escapes the folder");
    index = make_sharded(dir, "{\"a\":\"/etc/passwd\"}");
    expect_fail_path(index, "shard path '/etc/passwd' escapes the folder");
    index = make_sharded(dir, "{\"a\":\"\"}");
    expect_fail_path(index, "escapes the folder");
    index = make_sharded(dir, "{\"a\":5}");
    expect_fail_path(index, "weight_map 'a' is not a string");
    /* a listed tensor that its shard does not hold */
    index = make_sharded(dir, "{\"a\":\"model-00001-of-00002.safetensors\",\"c\":\"model-00001-of-00002.safetensors\","
                              "\"zz\":\"model-00002-of-00002.safetensors\"}");
    expect_fail_path(index, "tensor 'c' is listed in shard 'model-00001-of-00002.safetensors' but not found there");
    /* the same tensor in two shards */
    float v[4] = {0};
    st_write(in_dir(dir, "model-00002-of-00002.safetensors"),
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", v, sizeof(v));
    write_text(in_dir(dir, "model.safetensors.index.json"),
               "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\"}}");
    expect_fail_path(in_dir(dir, "model.safetensors.index.json"), "duplicate tensor name 'a'");
    write_text(in_dir(dir, "model.safetensors.index.json"), "{\"weight_map\": [}");
    expect_fail_path(in_dir(dir, "model.safetensors.index.json"), "model.safetensors.index.json: not valid JSON");
    write_text(in_dir(dir, "model.safetensors.index.json"), "{\"metadata\": {}}");
    expect_fail_path(in_dir(dir, "model.safetensors.index.json"), "no \"weight_map\" object");
    /* an error inside a shard names the shard */
    st_write(in_dir(dir, "model-00002-of-00002.safetensors"),
             "{\"b\":{\"dtype\":\"Q9\",\"shape\":[4],\"data_offsets\":[0,16]}}", v, sizeof(v));
    write_text(in_dir(dir, "model.safetensors.index.json"),
               "{\"weight_map\":{\"b\":\"model-00002-of-00002.safetensors\"}}");
    expect_fail_path(in_dir(dir, "model.safetensors.index.json"),
                     "model-00002-of-00002.safetensors: tensor 'b': unknown dtype 'Q9'");
}

static const char *CONFIG = "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"num_hidden_layers\":2}";

static void test_hf_folder(void)
{
    /* single model.safetensors + config + generation config + tokenizer files */
    const char *dir = fresh_dir("hf-single");
    write_text(in_dir(dir, "config.json"), CONFIG);
    write_text(in_dir(dir, "generation_config.json"), "{\"temperature\": 0.6}");
    write_text(in_dir(dir, "tokenizer.json"), "{}");
    write_text(in_dir(dir, "tokenizer_config.json"), "{}");
    st_write(in_dir(dir, "model.safetensors"), SINGLE_HEADER, g_data, 47);
    struct model_file mf;
    char err[512] = "";
    int rc = model_file_open(&mf, dir, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        CHECK_EQ_INT(mf.format, MF_FORMAT_HF_DIR);
        CHECK(mf.config && json_integer_value(json_object_get(mf.config, "hidden_size")) == 64);
        CHECK(mf.generation_config && json_real_value(json_object_get(mf.generation_config, "temperature")) == 0.6);
        CHECK_EQ_STR(mf.dir, dir);
        CHECK_EQ_STR(mf.tokenizer_json_path, in_dir(dir, "tokenizer.json"));
        CHECK_EQ_STR(mf.tokenizer_config_path, in_dir(dir, "tokenizer_config.json"));
        CHECK(mf.chat_template_path == NULL);
        CHECK_EQ_U64(mf.n_tensors, 6);
        CHECK_EQ_STR(mf.file_paths[0], in_dir(dir, "model.safetensors"));
        model_file_close(&mf);
    }

    /* sharded through the index; chat_template.jinja located */
    dir = fresh_dir("hf-sharded");
    write_text(in_dir(dir, "config.json"), CONFIG);
    write_text(in_dir(dir, "chat_template.jinja"), "{{ messages }}");
    make_sharded(dir, GOOD_MAP);
    rc = model_file_open(&mf, dir, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        CHECK_EQ_INT(mf.format, MF_FORMAT_HF_DIR);
        CHECK_EQ_U64(mf.n_files, 2);
        CHECK_EQ_U64(mf.n_tensors, 3);
        CHECK(mf.generation_config == NULL && mf.tokenizer_json_path == NULL);
        CHECK_EQ_STR(mf.chat_template_path, in_dir(dir, "chat_template.jinja"));
        model_file_close(&mf);
    }

    /* one safetensors file of another name */
    dir = fresh_dir("hf-othername");
    write_text(in_dir(dir, "config.json"), CONFIG);
    st_write(in_dir(dir, "weights.safetensors"), SINGLE_HEADER, g_data, 47);
    rc = model_file_open(&mf, dir, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        CHECK_EQ_STR(mf.file_paths[0], in_dir(dir, "weights.safetensors"));
        model_file_close(&mf);
    }

    /* a folder holding one GGUF (no config needed) opens the GGUF */
    dir = fresh_dir("hf-gguf");
    uint8_t gguf[24] = {'G', 'G', 'U', 'F', 3};
    write_bytes(in_dir(dir, "model.gguf"), gguf, sizeof(gguf));
    rc = model_file_open(&mf, dir, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        CHECK_EQ_INT(mf.format, MF_FORMAT_GGUF);
        CHECK_EQ_STR(mf.file_paths[0], in_dir(dir, "model.gguf"));
        CHECK(mf.config == NULL);
        model_file_close(&mf);
    }
}

static void test_errors_hf_folder(void)
{
    const char *dir = fresh_dir("hf-noconfig");
    st_write(in_dir(dir, "model.safetensors"), SINGLE_HEADER, g_data, 47);
    char want[4200];
    snprintf(want, sizeof(want), "%s: no config.json", dir);
    expect_fail_path(dir, want);

    dir = fresh_dir("hf-noweights");
    write_text(in_dir(dir, "config.json"), CONFIG);
    snprintf(want, sizeof(want), "%s: no weights (*.safetensors)", dir);
    expect_fail_path(dir, want);

    dir = fresh_dir("hf-empty");
    snprintf(want, sizeof(want), "%s: no config.json", dir);
    expect_fail_path(dir, want);

    dir = fresh_dir("hf-two");
    write_text(in_dir(dir, "config.json"), CONFIG);
    st_write(in_dir(dir, "a.safetensors"), SINGLE_HEADER, g_data, 47);
    st_write(in_dir(dir, "b.safetensors"), SINGLE_HEADER, g_data, 47);
    expect_fail_path(dir, "2 *.safetensors files but no model.safetensors.index.json");

    dir = fresh_dir("hf-badconfig");
    write_text(in_dir(dir, "config.json"), "{\"hidden_size\": 64,}");
    st_write(in_dir(dir, "model.safetensors"), SINGLE_HEADER, g_data, 47);
    expect_fail_path(dir, "config.json: not valid JSON");
    write_text(in_dir(dir, "config.json"), "{\"a\": 1, \"a\": 2}");
    expect_fail_path(dir, "config.json: not valid JSON: duplicate object key");
    write_text(in_dir(dir, "config.json"), "[1]");
    expect_fail_path(dir, "config.json: not a JSON object");
    write_text(in_dir(dir, "config.json"), CONFIG);
    write_text(in_dir(dir, "generation_config.json"), "{");
    expect_fail_path(dir, "generation_config.json: not valid JSON");
    unlink(in_dir(dir, "generation_config.json"));
    /* a broken weights file names itself */
    st_write(in_dir(dir, "model.safetensors"), "{\"w\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,1]}}",
             g_data, 1);
    expect_fail_path(dir, "model.safetensors: tensor 'w': unknown dtype 'Q9'");

    dir = fresh_dir("hf-twogguf");
    uint8_t gguf[24] = {'G', 'G', 'U', 'F', 3};
    write_bytes(in_dir(dir, "a.gguf"), gguf, sizeof(gguf));
    write_bytes(in_dir(dir, "b.gguf"), gguf, sizeof(gguf));
    expect_fail_path(dir, "no weights (*.safetensors) and 2 *.gguf files");
    expect_fail_path(test_tmp_path("does-not-exist"), "does-not-exist: no such file or folder");
}

int main(void)
{
    RUN(test_single);
    RUN(test_errors_single);
    RUN(test_sharded);
    RUN(test_errors_sharded);
    RUN(test_hf_folder);
    RUN(test_errors_hf_folder);
    return test_summary();
}
