/* format/hfdir.c — a Hugging Face model folder.
 *
 * The folder holds config.json (required; kept parsed as mf->config),
 * generation_config.json (optional; mf->generation_config), the tokenizer files
 * (tokenizer.json, tokenizer_config.json, chat_template.jinja: only located
 * here, the tokenizer reads them) and the weights, chosen in this order:
 *   model.safetensors.index.json  (sharded)
 *   model.safetensors
 *   the one *.safetensors file of the folder (two or more without an index is
 *   refused: we would not know which is the model)
 *   the one *.gguf file, when there are no safetensors — then config.json is
 *   optional and the view's format is MF_FORMAT_GGUF (a folder such as models/
 *   holding a single downloaded GGUF).
 * The view's format is MF_FORMAT_HF_DIR when the weights are safetensors.
 * JSON files are bounded by MF_MAX_JSON_HEADER bytes and parsed strictly
 * (duplicate keys refused).
 */
#include "format/model_file.h"
#include "core/log.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *join(struct model_file *mf, const char *dir, const char *name)
{
    size_t n = strlen(dir) + 1 + strlen(name);
    char *p = arena_alloc(&mf->arena, n + 1);
    if (p)
        snprintf(p, n + 1, "%s/%s", dir, name);
    return p;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Parse a JSON object file; *out stays NULL when the file is absent. */
static int load_json(const char *path, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    struct mapped_file f;
    if (mapped_file_open(&f, path, err, errlen))
        return -1;
    if (f.size > MF_MAX_JSON_HEADER) {
        mapped_file_close(&f);
        return err_set(err, errlen, "%s: %llu bytes exceeds the limit of %u", path, (unsigned long long)f.size,
                       MF_MAX_JSON_HEADER);
    }
    json_error_t jerr;
    json_t *j = json_loadb(f.data ? (const char *)f.data : "", (size_t)f.size, JSON_REJECT_DUPLICATES, &jerr);
    mapped_file_close(&f);
    if (!j)
        return err_set(err, errlen, "%s: not valid JSON: %s (line %d, column %d)", path, jerr.text, jerr.line,
                       jerr.column);
    if (!json_is_object(j)) {
        json_decref(j);
        return err_set(err, errlen, "%s: not a JSON object", path);
    }
    *out = j;
    return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Count regular files in dir ending with suffix; *first gets the first name
 * found (sorted order is not needed: callers use it only when there is one). */
static int count_suffix(struct model_file *mf, const char *dir, const char *suffix, int *count, const char **first,
                        char *err, size_t errlen)
{
    *count = 0;
    *first = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return err_set(err, errlen, "%s: cannot list the folder", dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !ends_with(e->d_name, suffix))
            continue;
        const char *p = join(mf, dir, e->d_name);
        if (!p) {
            closedir(d);
            return err_set(err, errlen, "%s: out of memory", dir);
        }
        if (!is_file(p))
            continue;
        if (++*count == 1)
            *first = p;
    }
    closedir(d);
    return 0;
}

int hfdir_open(struct model_file *mf, const char *dir, char *err, size_t errlen)
{
    mf->dir = arena_strdup(&mf->arena, dir);
    const char *config = join(mf, dir, "config.json"), *gen = join(mf, dir, "generation_config.json");
    const char *tok = join(mf, dir, "tokenizer.json"), *tokcfg = join(mf, dir, "tokenizer_config.json");
    const char *tmpl = join(mf, dir, "chat_template.jinja");
    const char *index = join(mf, dir, "model.safetensors.index.json");
    const char *single = join(mf, dir, "model.safetensors");
    if (!mf->dir || !config || !gen || !tok || !tokcfg || !tmpl || !index || !single)
        return err_set(err, errlen, "%s: out of memory", dir);

    /* weights first: a folder with only a GGUF needs no config.json */
    const char *weights = NULL, *gguf = NULL;
    if (is_file(index)) {
        weights = index;
    } else if (is_file(single)) {
        weights = single;
    } else {
        int n;
        const char *first;
        if (count_suffix(mf, dir, ".safetensors", &n, &first, err, errlen))
            return -1;
        if (n > 1)
            return err_set(err, errlen, "%s: %d *.safetensors files but no model.safetensors.index.json", dir, n);
        if (n == 1) {
            weights = first;
        } else {
            if (count_suffix(mf, dir, ".gguf", &n, &first, err, errlen))
                return -1;
            if (n > 1)
                return err_set(err, errlen, "%s: no weights (*.safetensors) and %d *.gguf files: open one of them",
                               dir, n);
            if (n == 1)
                gguf = first;
        }
    }
    if (!weights && !gguf) {
        if (!is_file(config))
            return err_set(err, errlen, "%s: no config.json", dir);
        return err_set(err, errlen, "%s: no weights (*.safetensors)", dir);
    }
    if (is_file(config)) {
        if (load_json(config, &mf->config, err, errlen))
            return -1;
    } else if (!gguf) {
        return err_set(err, errlen, "%s: no config.json", dir);
    }
    if (is_file(gen) && load_json(gen, &mf->generation_config, err, errlen))
        return -1;
    mf->tokenizer_json_path = is_file(tok) ? tok : NULL;
    mf->tokenizer_config_path = is_file(tokcfg) ? tokcfg : NULL;
    mf->chat_template_path = is_file(tmpl) ? tmpl : NULL;

    if (gguf)
        return gguf_open(mf, gguf, err, errlen); /* sets MF_FORMAT_GGUF */
    if (safetensors_open(mf, weights, err, errlen))
        return -1;
    mf->format = MF_FORMAT_HF_DIR;
    return 0;
}
