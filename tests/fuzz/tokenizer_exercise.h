/* tests/fuzz/tokenizer_exercise.h — what both tokenizer fuzz targets do with a
 * tokenizer that loaded: encode fixed texts (multilingual, special-token-like,
 * invalid UTF-8) and the input's own bytes with every add/parse-special
 * combination, decode the ids whole and streamed, and look every token's text
 * up again. Any out-of-bounds access in the vocabulary, merge table, trie,
 * regex steps or decoder then fails under ASan. */
#ifndef MEMRA_FUZZ_TOKENIZER_EXERCISE_H
#define MEMRA_FUZZ_TOKENIZER_EXERCISE_H

#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

static const char *const texts[] = {
    "Hello world! It's 12345 <|im_start|>user\n  tabs\t\tand  spaces ",
    "日本語 한국어 العربية 👩‍👩‍👧‍👦 e\xcc\x81 \xef\xac\x81",
    "bad \xff\xfe utf8 \xe6\x97",
    "<s></s><unk>[CLS] <|endoftext|>",
};

static void exercise_text(const struct tokenizer *tok, const char *s, size_t n)
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

static void exercise_tokenizer(const struct tokenizer *tok, const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        exercise_text(tok, texts[i], strlen(texts[i]));
    exercise_text(tok, (const char *)data, size < 4096 ? size : 4096);
    for (uint32_t id = 0; id < tokenizer_n_vocab(tok) && id < 4096; id++) {
        size_t len;
        const char *t = tokenizer_token_text(tok, (int32_t)id, &len);
        if (t && len && tokenizer_find_token(tok, t, len) < 0)
            __builtin_trap(); /* every token's text finds a token */
        (void)tokenizer_is_eog(tok, (int32_t)id);
    }
    (void)tokenizer_chat_template(tok);
}

#endif
