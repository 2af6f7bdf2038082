/* tokenizer/load_gguf.c — a tokenizer from GGUF metadata (tokenizer.ggml.*),
 * read through the model-file view's typed getters.
 *
 * tokenizer.ggml.model picks the algorithm:
 *   "llama"  → SentencePiece BPE by scores; spaces escaped to ▁ and a space
 *              prefixed to every text fragment (add_space_prefix, default on);
 *              <0xXX> byte fallback; BOS added by default.
 *   "gpt2"   → byte-level BPE by merges, pre-tokenizer regexes chosen by
 *              tokenizer.ggml.pre (see pretok.c).
 *   "gemma4" → BPE by merges on UTF-8 characters with spaces escaped to ▁, split
 *              only at newlines, <0xXX> byte fallback; BOS always added.
 * These are the rules llama.cpp applies to the same files, so the ids match
 * its test vectors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "format/model_file.h"
#include "tokenizer/tok_internal.h"

static const char SPM_SPACE[] = "\xE2\x96\x81"; /* ▁ U+2581 */

static bool opt_bool(const struct model_file *mf, const char *key, bool *out)
{
    return model_file_find_kv(mf, key) && model_file_get_bool(mf, key, out, NULL, 0) == 0;
}

/* An optional token id key; out of range ids are ignored. */
static void opt_id(const struct tok_model *m, const struct model_file *mf, const char *key, int32_t *out)
{
    uint64_t v;
    if (model_file_find_kv(mf, key) && model_file_get_u64(mf, key, &v, NULL, 0) == 0 && v < m->n_vocab)
        *out = (int32_t)v;
}

static int add_norm(struct tok_model *m, enum tok_norm_op op, const char *a, const char *b, int mode,
                    bool unconditional)
{
    if (m->n_norm >= TOK_MAX_NORM_STEPS)
        return -1;
    struct tok_norm_step *st = &m->norm[m->n_norm++];
    st->op = op;
    st->a = a;
    st->a_len = a ? (uint32_t)strlen(a) : 0;
    st->b = b;
    st->b_len = b ? (uint32_t)strlen(b) : 0;
    st->mode = mode;
    st->unconditional = unconditional;
    return 0;
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && (p[i] | 0x20) == (needle[i] | 0x20))
            i++;
        if (i == n)
            return true;
    }
    return false;
}

int tok_load_gguf(struct tok_model *m, const struct model_file *mf, char *err, size_t errlen)
{
    struct mf_str model;
    if (model_file_get_str(mf, "tokenizer.ggml.model", &model, err, errlen) != 0)
        return -1;
    const char *pre = "default";
    struct mf_str pre_s;
    if (model_file_find_kv(mf, "tokenizer.ggml.pre") &&
        model_file_get_str(mf, "tokenizer.ggml.pre", &pre_s, err, errlen) == 0)
        pre = pre_s.ptr;

    bool spm = strcmp(model.ptr, "llama") == 0;
    bool gpt2 = strcmp(model.ptr, "gpt2") == 0;
    bool gemma4 = strcmp(model.ptr, "gemma4") == 0;
    if (!spm && !gpt2 && !gemma4)
        return err_set(err, errlen, "%s: unsupported tokenizer.ggml.model '%s' (llama, gpt2 and gemma4 are)",
                       mf->path, model.ptr);

    const struct mf_value *tv, *types = NULL, *scores = NULL, *merges = NULL;
    if (model_file_get_arr(mf, "tokenizer.ggml.tokens", MF_VT_STR, &tv, err, errlen) != 0)
        return -1;
    uint64_t n = tv->v.arr.n;
    if (n == 0 || n > TOK_MAX_VOCAB)
        return err_set(err, errlen, "%s: tokenizer.ggml.tokens has %llu entries (1..%u allowed)", mf->path,
                       (unsigned long long)n, TOK_MAX_VOCAB);
    if (model_file_find_kv(mf, "tokenizer.ggml.token_type")) {
        if (model_file_get_arr(mf, "tokenizer.ggml.token_type", MF_VT_I32, &types, err, errlen) != 0)
            return -1;
        if (types->v.arr.n < n)
            return err_set(err, errlen, "%s: tokenizer.ggml.token_type has %llu entries for %llu tokens", mf->path,
                           (unsigned long long)types->v.arr.n, (unsigned long long)n);
    }
    if (model_file_find_kv(mf, "tokenizer.ggml.scores")) {
        if (model_file_get_arr(mf, "tokenizer.ggml.scores", MF_VT_F32, &scores, err, errlen) != 0)
            return -1;
        if (scores->v.arr.n < n)
            return err_set(err, errlen, "%s: tokenizer.ggml.scores has %llu entries for %llu tokens", mf->path,
                           (unsigned long long)scores->v.arr.n, (unsigned long long)n);
    }
    if (!spm) {
        if (model_file_get_arr(mf, "tokenizer.ggml.merges", MF_VT_STR, &merges, err, errlen) != 0)
            return -1;
        if (merges->v.arr.n > TOK_MAX_MERGES)
            return err_set(err, errlen, "%s: %llu merges (max %u)", mf->path,
                           (unsigned long long)merges->v.arr.n, TOK_MAX_MERGES);
    } else if (!scores) {
        return err_set(err, errlen, "%s: tokenizer.ggml.scores is required for a 'llama' tokenizer", mf->path);
    }

    if (vocab_alloc(m, (uint32_t)n, err, errlen) != 0)
        return -1;
    const struct mf_str *strs = tv->v.arr.data;
    for (uint32_t i = 0; i < n; i++) {
        struct tok_token *t = &m->tokens[i];
        char empty[32];
        const char *txt = strs[i].ptr;
        uint64_t len = strs[i].len;
        if (len == 0) { /* as llama.cpp: give empty tokens a unique placeholder */
            snprintf(empty, sizeof(empty), "[EMPTY_%u]", i);
            txt = empty;
            len = strlen(empty);
        }
        if (len > TOK_MAX_TOKEN_BYTES)
            return err_set(err, errlen, "%s: tokenizer.ggml.tokens[%u] is %llu bytes long (max %u)", mf->path, i,
                           (unsigned long long)len, TOK_MAX_TOKEN_BYTES);
        t->text = arena_strndup(&m->arena, txt, (size_t)len);
        if (!t->text)
            return err_set(err, errlen, "%s: out of memory", mf->path);
        t->text_len = (uint32_t)len;
        t->type = TOKENIZER_TYPE_NORMAL;
        if (types) {
            int32_t ty = ((const int32_t *)types->v.arr.data)[i];
            t->type = (ty >= 1 && ty <= 6) ? (uint8_t)ty : TOKENIZER_TYPE_UNDEFINED;
        }
        t->score = scores ? ((const float *)scores->v.arr.data)[i] : 0.0f;
    }

    bool add_space_prefix = spm;
    (void)opt_bool(mf, "tokenizer.ggml.add_space_prefix", &add_space_prefix);
    if (spm) {
        m->algo = TOK_ALGO_SPM;
        m->byte_fallback = true;
        m->dec_unescape = m->dec_bytes = true;
        m->kind_name = "spm";
        m->add_bos = true;
        m->bos = 1 < n ? 1 : -1;
        m->eos = 2 < n ? 2 : -1;
        m->unk = 0;
        if (add_space_prefix && add_norm(m, NORM_PREFIX_SPACE, " ", NULL, PREPEND_ALWAYS, true) != 0)
            return -1;
        if (add_norm(m, NORM_REPLACE, " ", SPM_SPACE, 0, false) != 0)
            return -1;
        m->dec_strip = add_space_prefix ? 1 : 0;
    } else if (gpt2) {
        m->algo = TOK_ALGO_BPE;
        m->byte_level = m->dec_bytelevel = true;
        m->kind_name = "bpe-bytelevel";
        if (pretok_setup_gguf(m, pre, err, errlen) != 0)
            return -1;
    } else {
        m->algo = TOK_ALGO_BPE;
        m->byte_fallback = true;
        m->newline_words_whole = true;
        m->dec_unescape = m->dec_bytes = true;
        m->kind_name = "bpe";
        if (add_norm(m, NORM_REPLACE, " ", SPM_SPACE, 0, false) != 0)
            return -1;
        if (pretok_setup_gguf(m, "gemma4", err, errlen) != 0)
            return -1;
    }

    if (vocab_finish(m, err, errlen) != 0)
        return -1;

    if (merges) {
        const struct mf_str *ms = merges->v.arr.data;
        for (uint64_t r = 0; r < merges->v.arr.n; r++) {
            const char *s = ms[r].ptr;
            size_t len = (size_t)ms[r].len;
            const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
            if (!sp)
                continue; /* not "a b": llama.cpp ignores it too */
            size_t al = (size_t)(sp - s);
            if (vocab_add_merge(m, s, al, sp + 1, len - al - 1, (uint32_t)r, err, errlen) != 0)
                return -1;
        }
    }

    opt_id(m, mf, "tokenizer.ggml.bos_token_id", &m->bos);
    opt_id(m, mf, "tokenizer.ggml.eos_token_id", &m->eos);
    opt_id(m, mf, "tokenizer.ggml.unknown_token_id", &m->unk);
    opt_id(m, mf, "tokenizer.ggml.padding_token_id", &m->pad);
    (void)opt_bool(mf, "tokenizer.ggml.add_bos_token", &m->add_bos);
    (void)opt_bool(mf, "tokenizer.ggml.add_eos_token", &m->add_eos);
    if (gemma4)
        m->add_bos = true; /* Gemma 4 always starts with <bos>, whatever the key says */
    if (m->add_bos && m->bos < 0)
        return err_set(err, errlen, "%s: tokenizer.ggml.add_bos_token is true but there is no BOS token", mf->path);
    if (m->add_eos && m->eos < 0)
        return err_set(err, errlen, "%s: tokenizer.ggml.add_eos_token is true but there is no EOS token", mf->path);
    if (m->add_bos)
        m->post_prefix[m->n_post_prefix++] = m->bos;
    if (m->add_eos)
        m->post_suffix[m->n_post_suffix++] = m->eos;

    vocab_mark_eog_defaults(m);
    static const char *const eog_keys[] = {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"};
    for (size_t k = 0; k < 2; k++) {
        int32_t id = -1;
        opt_id(m, mf, eog_keys[k], &id);
        if (id >= 0)
            m->eog[id >> 3] |= (uint8_t)(1u << (id & 7));
    }

    /* Phi-3 files do not carry per-token strip flags; llama.cpp sets them by model name */
    struct mf_str name;
    if (model_file_find_kv(mf, "general.name") && model_file_get_str(mf, "general.name", &name, NULL, 0) == 0 &&
        (contains_ci(name.ptr, "phi-3") || contains_ci(name.ptr, "phi3"))) {
        for (uint32_t i = 0; i < m->n_vocab; i++) {
            struct tok_token *t = &m->tokens[i];
            if (t->type == TOKENIZER_TYPE_CONTROL || t->type == TOKENIZER_TYPE_USER_DEFINED ||
                t->type == TOKENIZER_TYPE_UNKNOWN)
                t->flags |= TOK_F_RSTRIP;
        }
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t k = 0; k < 3; k++) {
            uint64_t v;
            if (strmap_get(&m->text_map, keep[k], strlen(keep[k]), &v))
                m->tokens[v].flags &= (uint8_t)~TOK_F_RSTRIP;
        }
    }

    struct mf_str tmpl;
    if (model_file_find_kv(mf, "tokenizer.chat_template") &&
        model_file_get_str(mf, "tokenizer.chat_template", &tmpl, NULL, 0) == 0) {
        m->chat_template = arena_strndup(&m->arena, tmpl.ptr, (size_t)tmpl.len);
        if (!m->chat_template)
            return err_set(err, errlen, "%s: out of memory", mf->path);
    }
    return 0;
}
