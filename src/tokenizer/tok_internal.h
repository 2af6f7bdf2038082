/* tokenizer/tok_internal.h — the loaded tokenizer's private shape, shared by the
 * files of this folder only (loaders fill it, the encoder and decoder read it).
 *
 * Vocabulary strings live in two spaces:
 *   - "text": the token as the file stores it (GPT-2 byte-level characters such
 *     as "Ġthe", or SentencePiece "▁the");
 *   - "key": the string the encoder matches input against. For byte-level BPE
 *     that is the raw bytes the token stands for ("Ġthe" → " the"), so the
 *     encoder never converts input to the byte-level alphabet; for the other
 *     models it is the text itself (input spaces are escaped to ▁ instead).
 * Each token also has its decoded "piece" (the bytes decode emits).
 * Merges are stored as (left id, right id) → (rank, merged id).
 */
#ifndef MEMRA_TOKENIZER_TOK_INTERNAL_H
#define MEMRA_TOKENIZER_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/strmap.h"
#include "tokenizer/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* Limits that stop absurd files before allocation. */
#define TOK_MAX_VOCAB (1u << 23)      /* 8M tokens */
#define TOK_MAX_MERGES (1u << 24)
#define TOK_MAX_TOKEN_BYTES 4096      /* one token's text */
#define TOK_MAX_TEXT ((size_t)1 << 30) /* one encode call's input */
#define TOK_MAX_NORM_STEPS 16
#define TOK_MAX_SPLIT_STEPS 16
#define TOK_MAX_POST 8               /* BOS-side / EOS-side ids of the post-processor */

/* --- u64 → u64 open-addressing hash (merges, special-token trie edges) --- */
struct u64map_slot {
    uint64_t key; /* UINT64_MAX = empty */
    uint64_t val;
};
struct u64map {
    struct u64map_slot *slots; /* (cap) key and value side by side: one cache miss per probe */
    size_t cap, count;
};
void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
/* 1 inserted, 0 already present (kept), -1 out of memory. key != UINT64_MAX. */
int u64map_put(struct u64map *m, uint64_t key, uint64_t val);
static inline uint64_t u64map_hash(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}
static inline bool u64map_get(const struct u64map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap) return false;
    size_t mask = m->cap - 1, i = (size_t)u64map_hash(key) & mask;
    for (;;) {
        uint64_t k = m->slots[i].key;
        if (k == key) { *val = m->slots[i].val; return true; }
        if (k == UINT64_MAX) return false;
        i = (i + 1) & mask;
    }
}

/* --- token table --- */
enum { TOK_F_LSTRIP = 1, TOK_F_RSTRIP = 2, TOK_F_SPECIAL = 4, TOK_F_ADDED = 8 };

struct tok_token {
    const char *text;  /* stored text (NUL-terminated, arena) */
    const char *piece; /* decoded bytes (arena) */
    uint32_t text_len, piece_len;
    float score;       /* SPM score (higher merges first) */
    uint8_t type;      /* enum tokenizer_token_type */
    uint8_t flags;     /* TOK_F_* */
};

enum tok_algo { TOK_ALGO_BPE, TOK_ALGO_SPM };

/* --- normalizer steps, applied in order to each text fragment --- */
enum tok_norm_op {
    NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWERCASE,
    NORM_PREPEND,       /* a: prefix (HF Prepend: only when the fragment is non-empty) */
    NORM_REPLACE,       /* literal a → b */
    NORM_STRIP,         /* mode bit 1: left, bit 2: right (Unicode whitespace) */
    NORM_PREFIX_SPACE,  /* prepend a (" " or "▁") when the fragment does not start with it; see prepend */
};
enum tok_prepend {
    PREPEND_ALWAYS,             /* every fragment (llama.cpp SPM: the first and each one after a special) */
    PREPEND_FIRST,              /* only the fragment at the start of the text */
};
struct tok_norm_step {
    enum tok_norm_op op;
    const char *a, *b;   /* arena strings */
    uint32_t a_len, b_len;
    int mode;            /* NORM_STRIP sides, NORM_PREFIX_SPACE enum tok_prepend */
    bool unconditional;  /* NORM_PREFIX_SPACE: add even when the fragment already starts with a */
};

/* --- pre-tokenizer: regex splits applied in sequence to every piece --- */
enum tok_split_behavior { SPLIT_ISOLATED, SPLIT_REMOVED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS };
struct tok_split_step {
    pcre2_code *re;
    bool jit;            /* JIT-compiled: matched with pcre2_jit_match */
    enum tok_split_behavior behavior;
    bool invert;         /* the pattern marks the pieces to keep rather than the separators */
};

struct tok_model {
    struct arena arena;
    const char *path;

    uint32_t n_vocab;            /* token ids are 0..n_vocab-1 */
    struct tok_token *tokens;    /* (n_vocab) */
    uint32_t n_model_vocab;      /* ids below this are the model's vocabulary (key_map);
                                    HF added tokens above it match only as specials */
    struct strmap key_map;       /* key → id */
    struct strmap text_map;      /* stored text → id */
    size_t max_piece;

    enum tok_algo algo;
    bool byte_level;             /* keys are raw bytes; pieces decode byte-level text */
    bool byte_fallback;          /* unknown characters become <0xXX> tokens */
    bool ignore_merges;          /* a whole pre-token found in the vocabulary is emitted as is */
    bool newline_words_whole;    /* Gemma 4: an all-newline piece that is a token is emitted as is */
    int32_t byte_id[256];        /* byte-level: the one-byte token; otherwise <0xXX>; -1 absent */
    struct u64map merges;        /* left<<32|right → rank<<32|merged */
    const char *kind_name;

    struct tok_norm_step norm[TOK_MAX_NORM_STEPS];
    uint32_t n_norm;
    struct tok_split_step split[TOK_MAX_SPLIT_STEPS];
    uint32_t n_split;

    /* added/special tokens: a byte trie, node 0 is the root */
    struct u64map trie;          /* node<<8|byte → child node */
    int32_t *trie_term;          /* (n_trie) token ending at the node, or -1 */
    uint32_t n_trie, trie_cap;
    uint8_t trie_first[32];      /* bitmap of first bytes */

    int32_t bos, eos, pad, unk;
    bool add_bos, add_eos;
    int32_t post_prefix[TOK_MAX_POST], post_suffix[TOK_MAX_POST]; /* add_special ids */
    uint32_t n_post_prefix, n_post_suffix;
    uint8_t *eog;                /* (n_vocab+7)/8 bitmap */
    const char *chat_template;

    /* decoder: how pieces are made from token texts (vocab_finish) */
    bool dec_bytelevel;          /* GPT-2 byte-level characters → bytes */
    bool dec_unescape;           /* ▁ → space */
    bool dec_bytes;              /* <0xXX> → the byte */
    uint32_t dec_strip;          /* leading spaces the decoder strips (SPM prefix space) */
};

/* vocab.c */
int vocab_alloc(struct tok_model *m, uint32_t n, char *err, size_t errlen);
/* Byte-level (GPT-2) alphabet: decode text → raw bytes into out (room for
 * len bytes); returns the byte count or -1 if a character is outside it. */
long bytelevel_decode(const char *text, size_t len, char *out);
/* Fill key/piece fields, maps, byte ids, the trie and max_piece after the
 * loader set text/type/score/flags of every token and the model flags. */
int vocab_finish(struct tok_model *m, char *err, size_t errlen);
/* Add the merge "a b" (texts in the file's spelling) with the given rank;
 * merges whose parts or result are not tokens are skipped (returns 0). */
int vocab_add_merge(struct tok_model *m, const char *a, size_t alen, const char *b, size_t blen,
                    uint32_t rank, char *err, size_t errlen);
int32_t vocab_key_lookup(const struct tok_model *m, const char *s, size_t len);
void vocab_mark_eog_defaults(struct tok_model *m);

/* pretok.c */
int pretok_add_regex(struct tok_model *m, const char *pattern, size_t len, enum tok_split_behavior b,
                     bool invert, bool hf_syntax, char *err, size_t errlen);
/* The regex list llama.cpp associates with a GGUF tokenizer.ggml.pre name;
 * -1 for an unknown name. */
int pretok_setup_gguf(struct tok_model *m, const char *pre, char *err, size_t errlen);
void pretok_free(struct tok_model *m);

/* Per-call growable buffers. */
struct tok_buf { char *p; size_t len, cap; };
struct tok_ids { int32_t *p; size_t len, cap; };
struct tok_spans { uint32_t *off, *len; size_t n, cap; };
int tok_buf_reserve(struct tok_buf *b, size_t n);
int tok_buf_append(struct tok_buf *b, const void *s, size_t n);
int tok_ids_push(struct tok_ids *v, int32_t id);
int tok_spans_push(struct tok_spans *s, uint32_t off, uint32_t len);

/* Per-call scratch for the pre-tokenizer. */
struct pretok_scratch {
    pcre2_match_data *md;
    pcre2_match_context *mc;
    pcre2_jit_stack *js;
    struct tok_spans a, b;
};
int pretok_scratch_init(struct pretok_scratch *s);
void pretok_scratch_free(struct pretok_scratch *s);
/* Split text[0..len) by the model's regex steps; result spans in s->a. */
int pretok_split(const struct tok_model *m, struct pretok_scratch *s, const char *text, size_t len,
                 char *err, size_t errlen);

/* normalize.c */
/* True when all of s is well-formed UTF-8. */
bool utf8_valid(const char *s, size_t len);
/* Length of the well-formed sequence at s (1..4), or 0 with *bad set to the
 * length of the maximal subpart to replace (1..3); *truncated when that
 * subpart is cut short by the end of the input rather than by a bad byte. */
size_t utf8_next(const unsigned char *s, size_t n, size_t *bad, bool *truncated);
/* Copy s to out with each maximal invalid subpart replaced by U+FFFD. */
int utf8_repair(const char *s, size_t len, struct tok_buf *out);
/* Length of the UTF-8 sequence starting at s (1 for a stray byte). */
static inline size_t utf8_seq_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}
/* Apply the model's normalizer to one fragment; the result is in *out_p/out_len
 * (either the input or one of the two buffers). */
int normalize_fragment(const struct tok_model *m, const char *s, size_t len, bool at_start,
                       bool after_special, struct tok_buf *b1, struct tok_buf *b2,
                       const char **out_p, size_t *out_len, char *err, size_t errlen);

/* bpe.c */
struct bpe_scratch {
    int32_t *id, *prev, *next;
    uint32_t *start, *len;
    size_t cap;
    struct bpe_heap_entry *heap;
    size_t heap_n, heap_cap;
    /* word cache: key bytes and ids, for words seen earlier in this call */
    struct bpe_cache_entry *cache;
    size_t cache_cap, cache_n;
    struct tok_buf cache_keys;
    struct tok_ids cache_ids;
};
void bpe_scratch_free(struct bpe_scratch *s);
/* Encode one pre-token (in key space) and append its ids. */
int bpe_encode_word(const struct tok_model *m, struct bpe_scratch *s, const char *w, size_t n,
                    struct tok_ids *out);
/* spm.c: score-driven merging over the whole fragment. */
int spm_encode(const struct tok_model *m, struct bpe_scratch *s, const char *w, size_t n,
               struct tok_ids *out);
/* Append the <0xXX> (or byte-level) ids of raw bytes, or unk when absent. */
int tok_emit_bytes(const struct tok_model *m, const char *p, size_t n, struct tok_ids *out);

/* load_gguf.c / load_hf.c */
int tok_load_gguf(struct tok_model *m, const struct model_file *mf, char *err, size_t errlen);
int tok_load_hf(struct tok_model *m, const char *json_path, const char *config_path,
                const char *template_path, const struct model_file *mf, char *err, size_t errlen);

#endif
