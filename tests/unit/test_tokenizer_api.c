/* tests/unit/test_tokenizer_api.c — properties of the tokenizer API that need
 * no outside reference:
 * - the streaming detokenizer emits only whole UTF-8 characters, and its
 *   output concatenates to exactly tokenizer_decode() (encoded text, and random
 *   id sequences full of partial byte-level and <0xXX> byte tokens), for
 *   byte-level BPE (Qwen3 tokenizer.json), SPM (llama-spm) and Gemma 4;
 * - concurrent encodes on one tokenizer give the single-threaded ids;
 * - invalid UTF-8 encodes like its U+FFFD-repaired form;
 * - special tokens are parsed only on request, BOS is added per the file;
 * - loading through an opened model file (GGUF, and a Hugging Face folder whose
 *   generation_config.json adds end-of-generation ids) equals loading by path;
 * - errors: small output buffer, ids out of range, malformed tokenizer.json
 *   (each a -1 with a message naming the file or field, never a crash).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <sys/stat.h>
#include <unistd.h>

#include "format/model_file.h"
#include "test.h"
#include "tokenizer/tokenizer.h"

static const char *const texts[] = {
    "Hello world! It's 2024, isn't it?",
    "日本語のテキストと中文混合 한국어 текст",
    "emoji 👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽 🇯🇵 and ZWJ\u200d",
    "   leading spaces\n\n\ttabs\r\n and NBSP\xc2\xa0here",
    "Cửa Việt résumé e\xcc\x81 naïve",
    "<|im_start|>user\nhi<|im_end|> <think> x </think>",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝑥² ∑ ∫ 🦙🫠",
    "",
};

static bool valid_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n)
            return false;
        for (size_t j = 1; j < k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

static bool load(struct tokenizer *tok, const char *rel)
{
    char err[512];
    int rc = tokenizer_load(tok, NULL, test_shared_path(rel), err, sizeof(err));
    CHECK_MSG(rc == 0, "%s: %s", rel, err);
    return rc == 0;
}

/* Stream ids through a detok_stream; compare with tokenizer_decode. */
static void check_stream(const struct tokenizer *tok, const int32_t *ids, size_t n, bool special)
{
    char err[256];
    struct detok_stream s;
    detok_stream_init(&s, tok, special);
    size_t cap = detok_stream_cap(tok); /* what the scheduler allocates */
    char *chunk = malloc(cap), *all = malloc(n * cap + 8);
    size_t total = 0;
    bool chunks_valid = true;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        int rc = detok_stream_push(&s, ids[i], chunk, cap, &k, err, sizeof(err));
        CHECK_MSG(rc == 0, "%s", err);
        if (!valid_utf8(chunk, k))
            chunks_valid = false;
        memcpy(all + total, chunk, k);
        total += k;
    }
    total += detok_stream_flush(&s, all + total, 8);
    CHECK(chunks_valid);
    char *text;
    size_t len;
    CHECK(tokenizer_decode(tok, ids, n, special, &text, &len, err, sizeof(err)) == 0);
    CHECK_MSG(len == total && memcmp(text, all, len) == 0, "stream (%zu bytes) != decode (%zu bytes)", total, len);
    CHECK(valid_utf8(text, len));
    free(text);
    free(chunk);
    free(all);
}

static void stream_suite(const char *rel)
{
    struct tokenizer tok;
    if (!load(&tok, rel))
        return;
    char err[256];
    /* a token's piece is what decoding it alone gives, when it is whole characters */
    for (int32_t id = 0; id < (int32_t)tokenizer_n_vocab(&tok) && id < 3000; id++) {
        size_t plen, dlen;
        const char *piece = tokenizer_token_piece(&tok, id, &plen);
        char *text;
        CHECK(piece != NULL && plen <= tokenizer_max_piece_len(&tok));
        if (!piece || !valid_utf8(piece, plen) || (plen && piece[0] == ' '))
            continue; /* (a leading space may be stripped by SPM decoders) */
        CHECK(tokenizer_decode(&tok, &id, 1, true, &text, &dlen, err, sizeof(err)) == 0);
        CHECK(dlen == plen && memcmp(text, piece, plen) == 0);
        free(text);
    }
    CHECK(tokenizer_token_piece(&tok, -1, NULL) == NULL);
    for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
        int32_t *ids;
        size_t n;
        CHECK(tokenizer_encode_alloc(&tok, texts[t], strlen(texts[t]), false, true, &ids, &n, err, sizeof(err)) == 0);
        check_stream(&tok, ids, n, true);
        check_stream(&tok, ids, n, false);
        free(ids);
    }
    /* the longest piece, after pending bytes: what a push may need at most
     * (the scheduler's buffer once fell short of it on the Llama-3 vocab) */
    uint32_t nv = tokenizer_n_vocab(&tok), x = 12345;
    int32_t longest = 0;
    for (uint32_t id = 0; id < nv; id++) {
        size_t plen;
        if (tokenizer_token_piece(&tok, (int32_t)id, &plen) && plen == tokenizer_max_piece_len(&tok))
            longest = (int32_t)id;
    }
    /* random ids: plenty of partial characters and lone byte tokens */
    int32_t ids[400];
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < 400; i++) {
            x = x * 1103515245u + 12345u;
            /* half of them among the first 512 ids (the byte tokens of every vocab here) */
            ids[i] = (int32_t)((x >> 8) % (i & 1 ? nv : 512));
            if (i % 10 == 9)
                ids[i] = longest;
        }
        check_stream(&tok, ids, 400, round & 1);
    }
    tokenizer_free(&tok);
}

static void test_stream_qwen3(void) { stream_suite("testdata/tokenizers/qwen3"); }
static void test_stream_llama_spm(void) { stream_suite("testdata/vocab/ggml-vocab-llama-spm.gguf"); }
static void test_stream_gemma4(void) { stream_suite("testdata/vocab/ggml-vocab-gemma-4.gguf"); }

struct thread_arg {
    const struct tokenizer *tok;
    int ok;
};

static void *encode_worker(void *p)
{
    struct thread_arg *a = p;
    char err[256];
    a->ok = 1;
    for (int rep = 0; rep < 20; rep++) {
        for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
            int32_t *x, *y;
            size_t nx, ny;
            if (tokenizer_encode_alloc(a->tok, texts[t], strlen(texts[t]), true, true, &x, &nx, err, sizeof(err)) ||
                tokenizer_encode_alloc(a->tok, texts[(t + rep) % 8], strlen(texts[(t + rep) % 8]), true, true, &y, &ny,
                                       err, sizeof(err))) {
                a->ok = 0;
                return NULL;
            }
            int32_t *z;
            size_t nz;
            if (tokenizer_encode_alloc(a->tok, texts[t], strlen(texts[t]), true, true, &z, &nz, err, sizeof(err)) ||
                nz != nx || (nx && memcmp(x, z, nx * sizeof(*x)) != 0))
                a->ok = 0;
            free(x);
            free(y);
            free(z);
        }
    }
    return NULL;
}

static void test_concurrent_encode(void)
{
    struct tokenizer tok;
    if (!load(&tok, "testdata/tokenizers/qwen3"))
        return;
    pthread_t th[4];
    struct thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].tok = &tok;
        CHECK(pthread_create(&th[i], NULL, encode_worker, &args[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].ok);
    }
    tokenizer_free(&tok);
}

static void test_invalid_utf8_and_specials(void)
{
    struct tokenizer tok;
    if (!load(&tok, "testdata/tokenizers/qwen3"))
        return;
    char err[256];
    int32_t a[64], b[64];
    size_t na, nb;
    const char bad[] = "ab\xff\xe6\x97 c\xf0\x9f";
    const char fixed[] = "ab\xef\xbf\xbd\xef\xbf\xbd c\xef\xbf\xbd";
    CHECK(tokenizer_encode(&tok, bad, sizeof(bad) - 1, false, true, a, 64, &na, err, sizeof(err)) == 0);
    CHECK(tokenizer_encode(&tok, fixed, sizeof(fixed) - 1, false, true, b, 64, &nb, err, sizeof(err)) == 0);
    CHECK(na == nb && memcmp(a, b, na * sizeof(int32_t)) == 0);

    const char *im = "<|im_start|>";
    int32_t im_id = tokenizer_find_token(&tok, im, strlen(im));
    CHECK(im_id >= 0 && tokenizer_token_type(&tok, im_id) == TOKENIZER_TYPE_CONTROL);
    CHECK(tokenizer_encode(&tok, im, strlen(im), false, true, a, 64, &na, err, sizeof(err)) == 0);
    CHECK(na == 1 && a[0] == im_id);
    CHECK(tokenizer_encode(&tok, im, strlen(im), false, false, a, 64, &na, err, sizeof(err)) == 0);
    CHECK(na > 1);
    for (size_t i = 0; i < na; i++)
        CHECK(a[i] != im_id);
    /* non-special added tokens (<think>) are split out even without parse_special */
    const char *th = "<think>";
    int32_t th_id = tokenizer_find_token(&tok, th, strlen(th));
    CHECK(tokenizer_token_type(&tok, th_id) == TOKENIZER_TYPE_USER_DEFINED);
    CHECK(tokenizer_encode(&tok, th, strlen(th), false, false, a, 64, &na, err, sizeof(err)) == 0);
    CHECK(na == 1 && a[0] == th_id);

    /* tokenizer_config.json's eos_token and chat template */
    const char *end = "<|im_end|>";
    CHECK_EQ_INT(tokenizer_eos(&tok), tokenizer_find_token(&tok, end, strlen(end)));
    CHECK(tokenizer_is_eog(&tok, tokenizer_eos(&tok)));
    CHECK(!tokenizer_is_eog(&tok, im_id));
    CHECK(tokenizer_chat_template(&tok) && strstr(tokenizer_chat_template(&tok), "<|im_start|>"));
    tokenizer_free(&tok);
}

static void test_bos_per_file(void)
{
    struct tokenizer tok;
    if (!load(&tok, "testdata/vocab/ggml-vocab-llama-spm.gguf"))
        return;
    char err[256];
    int32_t a[16];
    size_t n;
    CHECK(tokenizer_add_bos(&tok)); /* tokenizer.ggml.add_bos_token = true in the file */
    CHECK(tokenizer_encode(&tok, "Hi", 2, true, false, a, 16, &n, err, sizeof(err)) == 0);
    CHECK(n >= 2 && a[0] == tokenizer_bos(&tok));
    CHECK(tokenizer_encode(&tok, "Hi", 2, false, false, a, 16, &n, err, sizeof(err)) == 0);
    CHECK(n >= 1 && a[0] != tokenizer_bos(&tok));
    /* the empty text gives no ids at all without BOS */
    CHECK(tokenizer_encode(&tok, "", 0, false, false, a, 16, &n, err, sizeof(err)) == 0);
    CHECK_EQ_INT(n, 0);
    /* decode strips the space the encoder prefixed */
    CHECK(tokenizer_encode(&tok, "Hi there", 8, true, false, a, 16, &n, err, sizeof(err)) == 0);
    char *text;
    size_t len;
    CHECK(tokenizer_decode(&tok, a, n, false, &text, &len, err, sizeof(err)) == 0);
    CHECK_EQ_STR(text, "Hi there");
    free(text);
    tokenizer_free(&tok);
}

static void test_errors(void)
{
    struct tokenizer tok;
    if (!load(&tok, "testdata/tokenizers/qwen3"))
        return;
    char err[256];
    int32_t a[2];
    size_t n;
    const char *t = "a fairly long sentence with many tokens";
    CHECK(tokenizer_encode(&tok, t, strlen(t), false, true, a, 2, &n, err, sizeof(err)) == -1);
    CHECK(n > 2);
    CHECK_CONTAINS(err, "too small");
    int32_t bad[2] = {5, (int32_t)tokenizer_n_vocab(&tok)};
    char *text;
    size_t len;
    CHECK(tokenizer_decode(&tok, bad, 2, true, &text, &len, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "outside the vocabulary");
    struct detok_stream s;
    detok_stream_init(&s, &tok, true);
    char out[64];
    CHECK(detok_stream_push(&s, -3, out, sizeof(out), &len, err, sizeof(err)) == -1);
    tokenizer_free(&tok);

    static const char *const bad_json[] = {
        "",
        "{\"model\": ",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 99999999999}, \"merges\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"ab\"]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"added_tokens\": [{\"id\": 1}]}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"decoder\": {\"type\": \"WordPiece\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"Split\", \"pattern\": {}, \"behavior\": \"Isolated\"}}",
    };
    const char *path = test_tmp_path("tokenizer.json");
    for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (!f)
            return;
        fputs(bad_json[i], f);
        fclose(f);
        err[0] = '\0';
        CHECK_MSG(tokenizer_load(&tok, NULL, path, err, sizeof(err)) == -1, "case %zu loaded", i);
        CHECK_CONTAINS(err, path);
        CHECK(tok.m == NULL);
    }
    remove(path);
    CHECK(tokenizer_load(&tok, NULL, "/nonexistent/tokenizer.json", err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "/nonexistent/tokenizer.json");
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void test_load_through_model_file(void)
{
    char err[512];
    const char *gguf = test_shared_path("testdata/vocab/ggml-vocab-llama-bpe.gguf");
    struct model_file mf;
    int rc = model_file_open(&mf, gguf, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        struct tokenizer a, b;
        CHECK(tokenizer_load(&a, &mf, NULL, err, sizeof(err)) == 0);
        model_file_close(&mf); /* the tokenizer keeps its own copies */
        CHECK(tokenizer_load(&b, NULL, gguf, err, sizeof(err)) == 0);
        int32_t x[64], y[64];
        size_t nx, ny;
        const char *t = texts[1];
        CHECK(tokenizer_encode(&a, t, strlen(t), true, true, x, 64, &nx, err, sizeof(err)) == 0);
        CHECK(tokenizer_encode(&b, t, strlen(t), true, true, y, 64, &ny, err, sizeof(err)) == 0);
        CHECK(nx == ny && memcmp(x, y, nx * sizeof(int32_t)) == 0);
        tokenizer_free(&a);
        tokenizer_free(&b);
    }

    /* a Hugging Face folder: config.json, an empty safetensors file, the Qwen3 tokenizer files */
    const char *dir = test_tmp_path("hfdir");
    char path[4200], target[4200];
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    write_file(path, "{}", 2);
    snprintf(path, sizeof(path), "%s/generation_config.json", dir);
    const char *gen = "{\"eos_token_id\": [151645, 151644]}";
    write_file(path, gen, strlen(gen));
    static const char st[] = "\x08\x00\x00\x00\x00\x00\x00\x00{}      ";
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    write_file(path, st, sizeof(st) - 1);
    const char *names[] = {"tokenizer.json", "tokenizer_config.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        snprintf(target, sizeof(target), "%s/%s", test_shared_path("testdata/tokenizers/qwen3"), names[i]);
        char abs[4096];
        unlink(path);
        CHECK(realpath(target, abs) != NULL && symlink(abs, path) == 0);
    }
    rc = model_file_open(&mf, dir, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        struct tokenizer a, b;
        CHECK(mf.format == MF_FORMAT_HF_DIR);
        rc = tokenizer_load(&a, &mf, NULL, err, sizeof(err));
        CHECK_MSG(rc == 0, "%s", err);
        model_file_close(&mf);
        CHECK(tokenizer_load(&b, NULL, dir, err, sizeof(err)) == 0);
        if (rc == 0) {
            CHECK(tokenizer_is_eog(&a, 151644));  /* from generation_config.json */
            CHECK(!tokenizer_is_eog(&b, 151644)); /* loading by path reads no generation_config */
            CHECK(tokenizer_is_eog(&a, tokenizer_eos(&a)));
            tokenizer_free(&a);
        }
        tokenizer_free(&b);
    }
}

/* transformers writes its "no limit" model_max_length, an integer beyond 64 bits,
 * into many real tokenizer_config.json files: loading must not refuse it. */
static void test_config_huge_integer(void)
{
    char err[512];
    const char *dir = test_tmp_path("hfdir-huge-int");
    char path[4200], target[4200], abs[4096];
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
    snprintf(target, sizeof(target), "%s/tokenizer.json", test_shared_path("testdata/tokenizers/qwen3"));
    unlink(path);
    CHECK(realpath(target, abs) != NULL && symlink(abs, path) == 0);
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
    const char *cfg = "{\"model_max_length\": 1000000000000000019884624838656, \"eos_token\": \"<|im_end|>\"}";
    write_file(path, cfg, strlen(cfg));
    struct tokenizer tok;
    int rc = tokenizer_load(&tok, NULL, dir, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        CHECK_EQ_INT(tokenizer_eos(&tok), tokenizer_find_token(&tok, "<|im_end|>", 10));
        tokenizer_free(&tok);
    }
}

int main(void)
{
    RUN(test_stream_qwen3);
    RUN(test_stream_llama_spm);
    RUN(test_stream_gemma4);
    RUN(test_concurrent_encode);
    RUN(test_invalid_utf8_and_specials);
    RUN(test_bos_per_file);
    RUN(test_errors);
    RUN(test_load_through_model_file);
    RUN(test_config_huge_integer);
    return test_summary();
}
