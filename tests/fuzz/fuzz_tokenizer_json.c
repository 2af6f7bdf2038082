/* fuzz_tokenizer_json.c — libFuzzer target for the tokenizer.json loader.
 *
 * The input becomes a file (a memfd reached through /proc/self/fd/N, which the
 * loader takes for a tokenizer.json since it is neither a folder nor .gguf).
 * When it loads, a few fixed texts (multilingual, special-token-like, invalid
 * UTF-8) and the input's own bytes are encoded with and without BOS/EOS and
 * special parsing, decoded, and streamed back: any out-of-bounds access in
 * the vocabulary, merge table, trie, regex steps or decoder fails under ASan.
 * Seeds: tests/fuzz/corpus/fuzz_tokenizer_json/ (small valid tokenizer.json
 * files exercising every supported component).
 */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *const texts[] = {
    "Hello world! It's 12345 <|im_start|>user\n  tabs\t\tand  spaces ",
    "日本語 한국어 العربية 👩‍👩‍👧‍👦 e\xcc\x81 \xef\xac\x81",
    "bad \xff\xfe utf8 \xe6\x97",
    "<s></s><unk>[CLS] <|endoftext|>",
};

static void exercise(const struct tokenizer *tok, const char *s, size_t n)
{
    char err[256];
    for (int mode = 0; mode < 4; mode++) {
        int32_t *ids;
        size_t k;
        if (tokenizer_encode_alloc(tok, s, n, mode & 1, mode & 2, &ids, &k, err, sizeof(err)) != 0)
            continue;
        char *text;
        size_t len;
        if (tokenizer_decode(tok, ids, k, mode & 1, &text, &len, err, sizeof(err)) == 0)
            free(text);
        struct detok_stream st;
        detok_stream_init(&st, tok, mode & 2);
        size_t cap = 3 * (tokenizer_max_piece_len(tok) + 8);
        char *out = malloc(cap);
        for (size_t i = 0; out && i < k; i++) {
            size_t got;
            (void)detok_stream_push(&st, ids[i], out, cap, &got, err, sizeof(err));
        }
        if (out)
            (void)detok_stream_flush(&st, out, cap);
        free(out);
        free(ids);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("tokenizer.json", 0);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], err[512];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    struct tokenizer tok;
    if (tokenizer_load(&tok, NULL, path, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
            exercise(&tok, texts[i], strlen(texts[i]));
        exercise(&tok, (const char *)data, size < 4096 ? size : 4096);
        for (uint32_t id = 0; id < tokenizer_n_vocab(&tok) && id < 4096; id++) {
            size_t len;
            const char *t = tokenizer_token_text(&tok, (int32_t)id, &len);
            if (t && len)
                (void)tokenizer_find_token(&tok, t, len);
        }
        (void)tokenizer_chat_template(&tok);
        tokenizer_free(&tok);
    }
    close(fd);
    return 0;
}
