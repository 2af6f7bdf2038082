/* tokenizer/tokenizer.h — text ↔ token ids for every model memra serves.
 *
 * One loaded tokenizer turns UTF-8 text into token ids and back. It loads from
 * a Hugging Face tokenizer.json (+ tokenizer_config.json beside it) or from a
 * GGUF file's tokenizer.ggml.* metadata, and runs one of two algorithms:
 *   - BPE by merge ranks: byte-level (GPT-2, Llama 3, Qwen2/3/3.5, DeepSeek,
 *     SmolLM2) or on UTF-8 characters with <0xXX> byte fallback (Gemma 4 and
 *     HF-converted SentencePiece models);
 *   - SentencePiece-style BPE by token scores with byte fallback (GGUF Llama 2,
 *     Phi-3).
 * The encode pipeline is: split out added/special tokens (leftmost-longest) →
 * normalize each remaining fragment (utf8proc NFC/NFKC, space escaping, prefix)
 * → pre-tokenize with PCRE2-JIT regexes → BPE/SPM per piece → BOS/EOS.
 *
 * Thread safety: a loaded tokenizer is immutable. tokenizer_encode and
 * tokenizer_decode may run concurrently on one tokenizer from any number of
 * threads; each call keeps its scratch (PCRE2 match data, BPE arrays, a word
 * cache sized by the text, never by the vocabulary) to itself.
 *
 * Text handling: input text that is not valid UTF-8 is repaired before
 * encoding the way Python's bytes.decode("utf-8", "replace") does it (each
 * maximal invalid subpart becomes U+FFFD), which is what the `tokenizers`
 * reference sees when a caller hands it such bytes. Decoding produces valid
 * UTF-8 in the same way.
 *
 * Errors: functions that can fail return 0 / -1 and write "what: why" into the
 * caller's err[errlen] (see core/log.h err_set).
 *
 * Not supported (refused at load with a message, or noted here):
 * - tokenizer.json models other than BPE (WordPiece, Unigram, WordLevel), and
 *   GGUF tokenizer models other than llama / gpt2 / gemma4 (t5, bert, rwkv...);
 * - added tokens are matched on the raw text ("normalized" is ignored) and
 *   "single_word" is ignored; the Lowercase normalizer maps characters one by
 *   one (no final-sigma or İ special casing);
 * - a run of <0xXX> byte tokens that is not valid UTF-8 decodes to one U+FFFD
 *   per maximal invalid subpart, where the `tokenizers` ByteFallback decoder
 *   writes one per byte (valid runs decode identically);
 * - llama.cpp replaces each invalid input byte by U+FFFD; we follow Python's
 *   maximal-subpart rule (the `tokenizers` reference) for GGUF files too.
 */
#ifndef MEMRA_TOKENIZER_TOKENIZER_H
#define MEMRA_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct model_file;
struct tok_model; /* private: tokenizer/tok_internal.h */

/* Token types, GGUF numbering (tokenizer.ggml.token_type). HF added tokens
 * with "special": true are CONTROL, the other added tokens USER_DEFINED. */
enum tokenizer_token_type {
    TOKENIZER_TYPE_UNDEFINED = 0,
    TOKENIZER_TYPE_NORMAL = 1,
    TOKENIZER_TYPE_UNKNOWN = 2,
    TOKENIZER_TYPE_CONTROL = 3,
    TOKENIZER_TYPE_USER_DEFINED = 4,
    TOKENIZER_TYPE_UNUSED = 5,
    TOKENIZER_TYPE_BYTE = 6,
};

struct tokenizer {
    struct tok_model *m; /* NULL before a successful load */
};

/* Load a tokenizer.
 * - mf != NULL: from an opened model file — a GGUF's tokenizer.ggml.* keys, or
 *   a Hugging Face folder's tokenizer.json (path is then ignored).
 * - mf == NULL: path is a Hugging Face folder, a tokenizer.json file (its
 *   tokenizer_config.json and chat_template.jinja are read from the same
 *   folder when present) or a .gguf file.
 * 0 on success; -1 with "PATH: what is wrong" in err. */
int tokenizer_load(struct tokenizer *tok, const struct model_file *mf, const char *path,
                   char *err, size_t errlen);
void tokenizer_free(struct tokenizer *tok);

/* Encode len bytes of text.
 * add_special: add the BOS/EOS the model asks for (GGUF add_bos/add_eos keys,
 *   or tokenizer.json's post_processor template).
 * parse_special: also turn the text of special (control) tokens such as
 *   "<|im_start|>" into their ids; non-special added tokens (GGUF
 *   user-defined) are always split out, as both references do. The Python
 *   `tokenizers` package parses special tokens (parse_special = true);
 *   llama.cpp's tokenizer tests use parse_special = false.
 * On success returns 0 with the id count in *n_out and the ids in ids[0..];
 * when cap is too small returns -1 with the needed count in *n_out (the first
 * cap ids are written) and "output buffer too small" in err. */
int tokenizer_encode(const struct tokenizer *tok, const char *text, size_t len, bool add_special,
                     bool parse_special, int32_t *ids, size_t cap, size_t *n_out, char *err,
                     size_t errlen);
/* The same into a malloc'd array (*ids, free() it), sized as needed. */
int tokenizer_encode_alloc(const struct tokenizer *tok, const char *text, size_t len,
                           bool add_special, bool parse_special, int32_t **ids, size_t *n_out,
                           char *err, size_t errlen);

/* Decode ids to UTF-8 text into a malloc'd NUL-terminated string (*text,
 * free() it; *len excludes the NUL). render_special: include the text of
 * control/special tokens (the `tokenizers` package's skip_special_tokens =
 * !render_special). An id outside the vocabulary fails with -1. */
int tokenizer_decode(const struct tokenizer *tok, const int32_t *ids, size_t n, bool render_special,
                     char **text, size_t *len, char *err, size_t errlen);

/* --- streaming detokenizer, for server token streaming ---
 * Feed ids one at a time; each push yields the text that became complete.
 * It never emits part of a UTF-8 sequence: bytes of a character split across
 * tokens (byte-level BPE, <0xXX> byte fallback) wait until the character is
 * complete; bytes that can never form a valid character come out as U+FFFD.
 * The concatenation of all pushes and the final flush equals
 * tokenizer_decode() of the same ids. Holds no heap memory. */
#define DETOK_STREAM_MAX_PENDING 8
struct detok_stream {
    const struct tokenizer *tok;
    bool render_special;
    bool at_start;       /* nothing emitted yet: leading-space strip applies */
    uint32_t n_strip;    /* leading spaces still to strip */
    uint8_t pending[DETOK_STREAM_MAX_PENDING]; /* (n_pending) an incomplete UTF-8 tail */
    uint32_t n_pending;
};

void detok_stream_init(struct detok_stream *s, const struct tokenizer *tok, bool render_special);
/* Write the text completed by `id` to out[0..cap); *n_out gets its length.
 * cap >= detok_stream_cap(tok) always suffices (each bad byte may become a
 * 3-byte U+FFFD). -1 when id is out of range or cap is too small (the stream
 * is then unchanged). Not NUL-terminated. */
int detok_stream_push(struct detok_stream *s, int32_t id, char *out, size_t cap, size_t *n_out,
                      char *err, size_t errlen);
/* The output capacity one push may need: 3 · (longest piece + pending) + 4. */
size_t detok_stream_cap(const struct tokenizer *tok);
/* End of stream: an incomplete tail becomes U+FFFD (writes 0 or 3 bytes). */
size_t detok_stream_flush(struct detok_stream *s, char *out, size_t cap);

/* --- vocabulary facts --- */
uint32_t tokenizer_n_vocab(const struct tokenizer *tok);
/* The token's text as stored in the file (byte-level or ▁ form), or NULL. */
const char *tokenizer_token_text(const struct tokenizer *tok, int32_t id, size_t *len);
enum tokenizer_token_type tokenizer_token_type(const struct tokenizer *tok, int32_t id);
/* The bytes the token decodes to on its own (byte-level text mapped back to
 * bytes, ▁ as a space, <0xXX> as the byte; may be part of a UTF-8 character,
 * and is not NUL-terminated), or NULL for an id out of range. For stop
 * strings and constrained decoding; text for people goes through decode. */
const char *tokenizer_token_piece(const struct tokenizer *tok, int32_t id, size_t *len);
/* Longest decoded piece of any token, in bytes. */
size_t tokenizer_max_piece_len(const struct tokenizer *tok);
/* Id of a token given its stored text, or -1. */
int32_t tokenizer_find_token(const struct tokenizer *tok, const char *text, size_t len);
int32_t tokenizer_bos(const struct tokenizer *tok); /* -1 when the model has none */
int32_t tokenizer_eos(const struct tokenizer *tok);
int32_t tokenizer_pad(const struct tokenizer *tok);
int32_t tokenizer_unk(const struct tokenizer *tok);
bool tokenizer_add_bos(const struct tokenizer *tok); /* add_special adds BOS */
bool tokenizer_add_eos(const struct tokenizer *tok);
/* End of generation: EOS, plus end-of-turn tokens (<|im_end|>, <|eot_id|>,
 * <end_of_turn>, ... when present and special) and generation_config.json's
 * eos_token_id list for a Hugging Face folder. */
bool tokenizer_is_eog(const struct tokenizer *tok, int32_t id);
/* The model's chat template source (tokenizer.chat_template,
 * tokenizer_config.json "chat_template", or chat_template.jinja), or NULL. */
const char *tokenizer_chat_template(const struct tokenizer *tok);
/* "bpe-bytelevel", "bpe", or "spm" — for logs and memra-inspect. */
const char *tokenizer_kind_name(const struct tokenizer *tok);

#endif
