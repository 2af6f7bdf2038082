/* tests/unit/test_tokenizer_vocab.c — every test string of llama.cpp's
 * tokenizer vectors (shared/testdata/vocab/ggml-vocab-NAME.gguf.inp) must
 * encode to exactly the ids of the matching .out line, for all 8 vocabularies.
 *
 * File format (as llama.cpp's test-tokenizer-0 reads it): .inp holds the
 * strings separated by "\n__ggml_vocab_test__\n" (a trailing separator ends the
 * last string); .out holds one line of space-separated ids per string. The
 * reference encodes with add_special = false, parse_special = false.
 * Each string is also decoded back and must round-trip where the encoding
 * does not drop anything (checked against the reference ids' own decode).
 */
#include <stdbool.h>
#include <stdint.h>

#include "test.h"
#include "tokenizer/tokenizer.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

static void check_vocab(const char *name)
{
    char rel[256], path[4096], inp_path[4200], out_path[4200];
    snprintf(rel, sizeof(rel), "testdata/vocab/ggml-vocab-%s.gguf", name);
    snprintf(path, sizeof(path), "%s", test_shared_path(rel));
    snprintf(inp_path, sizeof(inp_path), "%s.inp", path);
    snprintf(out_path, sizeof(out_path), "%s.out", path);

    struct tokenizer tok;
    char err[512];
    int rc = tokenizer_load(&tok, NULL, path, err, sizeof(err));
    CHECK_MSG(rc == 0, "%s: %s", name, err);
    if (rc != 0)
        return;
    size_t inp_len, out_len;
    char *inp = slurp(inp_path, &inp_len), *out = slurp(out_path, &out_len);
    CHECK_MSG(inp && out, "%s: cannot read the .inp/.out files", name);
    if (!inp || !out) {
        free(inp);
        free(out);
        tokenizer_free(&tok);
        return;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t pos = 0, n_tests = 0, n_ok = 0;
    char *line = out;
    while (pos < inp_len) {
        char *next = strstr(inp + pos, sep);
        size_t slen = next ? (size_t)(next - (inp + pos)) : inp_len - pos;
        const char *s = inp + pos;
        pos = next ? (size_t)(next - inp) + sizeof(sep) - 1 : inp_len;

        /* the expected ids: one line of out */
        CHECK_MSG(line && *line, "%s: .out has fewer lines than .inp has strings", name);
        if (!line || !*line)
            break;
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        int32_t want[4096];
        size_t n_want = 0;
        for (char *p = line; *p;) {
            char *endp;
            long v = strtol(p, &endp, 10);
            if (endp == p)
                break;
            if (n_want < 4096)
                want[n_want++] = (int32_t)v;
            p = endp;
        }
        line = eol ? eol + 1 : NULL;

        int32_t *got;
        size_t n_got;
        rc = tokenizer_encode_alloc(&tok, s, slen, false, false, &got, &n_got, err, sizeof(err));
        CHECK_MSG(rc == 0, "%s: %s", name, err);
        if (rc != 0)
            continue;
        bool same = n_got == n_want && (n_got == 0 || memcmp(got, want, n_got * sizeof(int32_t)) == 0);
        n_tests++;
        if (same) {
            n_ok++;
        } else {
            fprintf(stderr, "%s: string %zu \"%.*s\":\n  want", name, n_tests, (int)(slen > 80 ? 80 : slen), s);
            for (size_t i = 0; i < n_want; i++)
                fprintf(stderr, " %d", want[i]);
            fprintf(stderr, "\n  got ");
            for (size_t i = 0; i < n_got; i++)
                fprintf(stderr, " %d", got[i]);
            fprintf(stderr, "\n");
        }
        CHECK(same);
        /* decode(encode(s)) == s when the reference ids decode back to s */
        char *want_text, *got_text;
        size_t wl, gl;
        if (tokenizer_decode(&tok, want, n_want, true, &want_text, &wl, err, sizeof(err)) == 0) {
            if (wl == slen && memcmp(want_text, s, slen) == 0) {
                CHECK(tokenizer_decode(&tok, got, n_got, true, &got_text, &gl, err, sizeof(err)) == 0);
                CHECK_MSG(gl == slen && memcmp(got_text, s, slen) == 0, "%s: string %zu does not round-trip", name,
                          n_tests);
                free(got_text);
            }
            free(want_text);
        }
        free(got);
    }
    fprintf(stderr, "%s: %zu/%zu strings match\n", name, n_ok, n_tests);
    CHECK_MSG(n_tests >= 40, "%s: only %zu test strings found", name, n_tests);
    free(inp);
    free(out);
    tokenizer_free(&tok);
}

static void test_gpt2(void) { check_vocab("gpt-2"); }
static void test_llama_bpe(void) { check_vocab("llama-bpe"); }
static void test_llama_spm(void) { check_vocab("llama-spm"); }
static void test_qwen2(void) { check_vocab("qwen2"); }
static void test_qwen35(void) { check_vocab("qwen35"); }
static void test_phi3(void) { check_vocab("phi-3"); }
static void test_gemma4(void) { check_vocab("gemma-4"); }
static void test_deepseek_llm(void) { check_vocab("deepseek-llm"); }

int main(void)
{
    RUN(test_gpt2);
    RUN(test_llama_bpe);
    RUN(test_llama_spm);
    RUN(test_qwen2);
    RUN(test_qwen35);
    RUN(test_phi3);
    RUN(test_gemma4);
    RUN(test_deepseek_llm);
    return test_summary();
}
