/* tokenizer/tokenizer.c — loading dispatch (model file, HF folder,
 * tokenizer.json, .gguf), freeing, and the small vocabulary getters. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "format/model_file.h"
#include "tokenizer/tok_internal.h"

static void tok_model_free(struct tok_model *m)
{
    if (!m)
        return;
    pretok_free(m);
    strmap_free(&m->key_map);
    strmap_free(&m->text_map);
    u64map_free(&m->merges);
    u64map_free(&m->trie);
    free(m->trie_term);
    free(m->tokens);
    free(m->eog);
    arena_free(&m->arena);
    free(m);
}

static bool file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* dir + "/" + name in the arena when the file exists, else NULL. */
static const char *sibling(struct arena *a, const char *dir, size_t dir_len, const char *name)
{
    size_t n = strlen(name);
    char *p = arena_alloc(a, dir_len + n + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, dir_len);
    p[dir_len] = '/';
    memcpy(p + dir_len + 1, name, n + 1);
    return file_exists(p) ? p : NULL;
}

int tokenizer_load(struct tokenizer *tok, const struct model_file *mf, const char *path, char *err,
                   size_t errlen)
{
    tok->m = NULL;
    if (!mf && !path)
        return err_set(err, errlen, "tokenizer: no model file and no path");
    struct tok_model *m = calloc(1, sizeof(*m));
    if (!m)
        return err_set(err, errlen, "tokenizer: out of memory");
    arena_init(&m->arena, (size_t)1 << 20);
    m->bos = m->eos = m->pad = m->unk = -1;
    m->path = arena_strdup(&m->arena, mf ? mf->path : path);
    if (!m->path) {
        tok_model_free(m);
        return err_set(err, errlen, "tokenizer: out of memory");
    }
    int rc;
    if (mf) {
        if (mf->format == MF_FORMAT_GGUF)
            rc = tok_load_gguf(m, mf, err, errlen);
        else if (mf->format == MF_FORMAT_HF_DIR && mf->tokenizer_json_path)
            rc = tok_load_hf(m, mf->tokenizer_json_path, mf->tokenizer_config_path, mf->chat_template_path, mf,
                             err, errlen);
        else
            rc = err_set(err, errlen, "%s: no tokenizer (neither tokenizer.json nor tokenizer.ggml.* metadata)",
                         mf->path);
    } else {
        struct stat st;
        if (stat(path, &st) != 0) {
            rc = err_set(err, errlen, "%s: no such file or folder", path);
        } else if (S_ISDIR(st.st_mode) || !ends_with(path, ".gguf")) {
            /* the folder that holds tokenizer.json and its companions */
            const char *dir = path;
            size_t dl = strlen(path);
            if (S_ISDIR(st.st_mode)) {
                while (dl > 1 && path[dl - 1] == '/')
                    dl--;
            } else {
                const char *slash = strrchr(path, '/');
                if (slash) {
                    dl = (size_t)(slash - path);
                } else {
                    dir = ".";
                    dl = 1;
                }
            }
            const char *json = S_ISDIR(st.st_mode) ? sibling(&m->arena, dir, dl, "tokenizer.json") : path;
            if (!json) {
                /* a folder without tokenizer.json: maybe a folder holding one .gguf */
                struct model_file f;
                rc = model_file_open(&f, path, err, errlen);
                if (rc == 0) {
                    rc = f.format == MF_FORMAT_GGUF ? tok_load_gguf(m, &f, err, errlen)
                                                     : err_set(err, errlen, "%s: no tokenizer.json", path);
                    model_file_close(&f);
                }
            } else {
                rc = tok_load_hf(m, json, sibling(&m->arena, dir, dl, "tokenizer_config.json"),
                                 sibling(&m->arena, dir, dl, "chat_template.jinja"), NULL, err, errlen);
            }
        } else {
            struct model_file f;
            rc = model_file_open(&f, path, err, errlen);
            if (rc == 0) {
                rc = f.format == MF_FORMAT_GGUF ? tok_load_gguf(m, &f, err, errlen)
                                                 : err_set(err, errlen, "%s: not a GGUF file", path);
                model_file_close(&f);
            }
        }
    }
    if (rc != 0) {
        tok_model_free(m);
        return -1;
    }
    tok->m = m;
    return 0;
}

void tokenizer_free(struct tokenizer *tok)
{
    if (!tok)
        return;
    tok_model_free(tok->m);
    tok->m = NULL;
}

uint32_t tokenizer_n_vocab(const struct tokenizer *tok) { return tok->m ? tok->m->n_vocab : 0; }

const char *tokenizer_token_text(const struct tokenizer *tok, int32_t id, size_t *len)
{
    if (!tok->m || id < 0 || (uint32_t)id >= tok->m->n_vocab)
        return NULL;
    if (len)
        *len = tok->m->tokens[id].text_len;
    return tok->m->tokens[id].text;
}

enum tokenizer_token_type tokenizer_token_type(const struct tokenizer *tok, int32_t id)
{
    if (!tok->m || id < 0 || (uint32_t)id >= tok->m->n_vocab)
        return TOKENIZER_TYPE_UNDEFINED;
    return (enum tokenizer_token_type)tok->m->tokens[id].type;
}

const char *tokenizer_token_piece(const struct tokenizer *tok, int32_t id, size_t *len)
{
    if (!tok->m || id < 0 || (uint32_t)id >= tok->m->n_vocab)
        return NULL;
    if (len)
        *len = tok->m->tokens[id].piece_len;
    return tok->m->tokens[id].piece;
}

size_t tokenizer_max_piece_len(const struct tokenizer *tok) { return tok->m ? tok->m->max_piece : 0; }

int32_t tokenizer_find_token(const struct tokenizer *tok, const char *text, size_t len)
{
    uint64_t v;
    return tok->m && strmap_get(&tok->m->text_map, text, len, &v) ? (int32_t)v : -1;
}

int32_t tokenizer_bos(const struct tokenizer *tok) { return tok->m ? tok->m->bos : -1; }
int32_t tokenizer_eos(const struct tokenizer *tok) { return tok->m ? tok->m->eos : -1; }
int32_t tokenizer_pad(const struct tokenizer *tok) { return tok->m ? tok->m->pad : -1; }
int32_t tokenizer_unk(const struct tokenizer *tok) { return tok->m ? tok->m->unk : -1; }
bool tokenizer_add_bos(const struct tokenizer *tok) { return tok->m && tok->m->add_bos; }
bool tokenizer_add_eos(const struct tokenizer *tok) { return tok->m && tok->m->add_eos; }

bool tokenizer_is_eog(const struct tokenizer *tok, int32_t id)
{
    const struct tok_model *m = tok->m;
    if (!m || id < 0 || (uint32_t)id >= m->n_vocab)
        return false;
    return (m->eog[id >> 3] >> (id & 7)) & 1;
}

const char *tokenizer_chat_template(const struct tokenizer *tok) { return tok->m ? tok->m->chat_template : NULL; }

const char *tokenizer_kind_name(const struct tokenizer *tok) { return tok->m ? tok->m->kind_name : "none"; }
