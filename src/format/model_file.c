/* format/model_file.c — the format-independent half of the model-file view:
 * choosing a reader by what PATH is, the name indexes, typed metadata getters
 * and teardown. The readers live in gguf.c, safetensors.c and hfdir.c. */
#include "format/model_file.h"
#include "core/log.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int model_file_open(struct model_file *mf, const char *path, char *err, size_t errlen)
{
    memset(mf, 0, sizeof(*mf));
    arena_init(&mf->arena, 1 << 20);
    strmap_init(&mf->tensor_index);
    strmap_init(&mf->kv_index);
    mf->path = arena_strdup(&mf->arena, path);
    if (!mf->path)
        return err_set(err, errlen, "%s: out of memory", path);

    struct stat st;
    if (stat(path, &st) != 0) {
        err_set(err, errlen, "%s: no such file or folder", path);
        goto fail;
    }
    int rc;
    if (S_ISDIR(st.st_mode)) {
        rc = hfdir_open(mf, path, err, errlen);
    } else if (ends_with(path, ".safetensors") || ends_with(path, ".safetensors.index.json")) {
        rc = safetensors_open(mf, path, err, errlen);
    } else {
        /* .gguf, or anything else: the GGUF reader checks the magic and says
         * what it found when the file is not GGUF. */
        rc = gguf_open(mf, path, err, errlen);
    }
    if (rc != 0)
        goto fail;
    return 0;
fail:
    model_file_close(mf);
    return -1;
}

void model_file_close(struct model_file *mf)
{
    for (uint32_t i = 0; i < mf->n_files; i++)
        mapped_file_close(&mf->files[i]);
    if (mf->config)
        json_decref(mf->config);
    if (mf->generation_config)
        json_decref(mf->generation_config);
    strmap_free(&mf->tensor_index);
    strmap_free(&mf->kv_index);
    arena_free(&mf->arena); /* kvs, tensors, files and all strings live here */
    memset(mf, 0, sizeof(*mf));
}

int model_file_map_one(struct model_file *mf, const char *path, char *err, size_t errlen)
{
    mf->files = arena_alloc(&mf->arena, sizeof(struct mapped_file));
    mf->file_paths = arena_alloc(&mf->arena, sizeof(const char *));
    if (!mf->files || !mf->file_paths || !(mf->file_paths[0] = arena_strdup(&mf->arena, path)))
        return err_set(err, errlen, "%s: out of memory", path);
    if (mapped_file_open(&mf->files[0], path, err, errlen))
        return -1;
    mf->n_files = 1;
    return 0;
}

int model_file_build_index(struct model_file *mf, char *err, size_t errlen)
{
    for (uint64_t i = 0; i < mf->n_tensors; i++) {
        const char *name = mf->tensors[i].name;
        int rc = strmap_put(&mf->tensor_index, name, strlen(name), i);
        if (rc < 0)
            return err_set(err, errlen, "%s: out of memory", mf->path);
        if (rc == 0)
            return err_set(err, errlen, "%s: duplicate tensor name '%s'", mf->path, name);
    }
    for (uint64_t i = 0; i < mf->n_kvs; i++) {
        const char *key = mf->kvs[i].key;
        int rc = strmap_put(&mf->kv_index, key, strlen(key), i);
        if (rc < 0)
            return err_set(err, errlen, "%s: out of memory", mf->path);
        if (rc == 0)
            return err_set(err, errlen, "%s: duplicate metadata key '%s'", mf->path, key);
    }
    return 0;
}

const struct mf_tensor *model_file_find_tensor(const struct model_file *mf, const char *name)
{
    uint64_t i;
    if (!strmap_get(&mf->tensor_index, name, strlen(name), &i))
        return NULL;
    return &mf->tensors[i];
}

const struct mf_value *model_file_find_kv(const struct model_file *mf, const char *key)
{
    uint64_t i;
    if (!strmap_get(&mf->kv_index, key, strlen(key), &i))
        return NULL;
    return &mf->kvs[i].value;
}

static const struct mf_value *find_or_err(const struct model_file *mf, const char *key, char *err, size_t errlen)
{
    const struct mf_value *v = model_file_find_kv(mf, key);
    if (!v)
        err_set(err, errlen, "%s: metadata key '%s' is missing", mf->path, key);
    return v;
}

static bool is_unsigned(enum mf_vtype t)
{
    return t == MF_VT_U8 || t == MF_VT_U16 || t == MF_VT_U32 || t == MF_VT_U64;
}

static bool is_signed(enum mf_vtype t)
{
    return t == MF_VT_I8 || t == MF_VT_I16 || t == MF_VT_I32 || t == MF_VT_I64;
}

static int type_err(const struct model_file *mf, const char *key, const struct mf_value *v,
                    const char *want, char *err, size_t errlen)
{
    return err_set(err, errlen, "%s: metadata key '%s' has type %s, expected %s", mf->path, key,
                   mf_vtype_name(v->type), want);
}

int model_file_get_u64(const struct model_file *mf, const char *key, uint64_t *out, char *err, size_t errlen)
{
    const struct mf_value *v = find_or_err(mf, key, err, errlen);
    if (!v)
        return -1;
    if (is_unsigned(v->type)) {
        *out = v->v.u64;
        return 0;
    }
    if (is_signed(v->type) && v->v.i64 >= 0) {
        *out = (uint64_t)v->v.i64;
        return 0;
    }
    return type_err(mf, key, v, "a non-negative integer", err, errlen);
}

int model_file_get_i64(const struct model_file *mf, const char *key, int64_t *out, char *err, size_t errlen)
{
    const struct mf_value *v = find_or_err(mf, key, err, errlen);
    if (!v)
        return -1;
    if (is_signed(v->type)) {
        *out = v->v.i64;
        return 0;
    }
    if (is_unsigned(v->type) && v->v.u64 <= (uint64_t)INT64_MAX) {
        *out = (int64_t)v->v.u64;
        return 0;
    }
    return type_err(mf, key, v, "an integer", err, errlen);
}

int model_file_get_f64(const struct model_file *mf, const char *key, double *out, char *err, size_t errlen)
{
    const struct mf_value *v = find_or_err(mf, key, err, errlen);
    if (!v)
        return -1;
    if (v->type == MF_VT_F32 || v->type == MF_VT_F64)
        *out = v->v.f64;
    else if (is_signed(v->type))
        *out = (double)v->v.i64;
    else if (is_unsigned(v->type))
        *out = (double)v->v.u64;
    else
        return type_err(mf, key, v, "a number", err, errlen);
    return 0;
}

int model_file_get_bool(const struct model_file *mf, const char *key, bool *out, char *err, size_t errlen)
{
    const struct mf_value *v = find_or_err(mf, key, err, errlen);
    if (!v)
        return -1;
    if (v->type != MF_VT_BOOL)
        return type_err(mf, key, v, "BOOL", err, errlen);
    *out = v->v.b;
    return 0;
}

int model_file_get_str(const struct model_file *mf, const char *key, struct mf_str *out, char *err, size_t errlen)
{
    const struct mf_value *v = find_or_err(mf, key, err, errlen);
    if (!v)
        return -1;
    if (v->type != MF_VT_STR)
        return type_err(mf, key, v, "STR", err, errlen);
    *out = v->v.str;
    return 0;
}

int model_file_get_arr(const struct model_file *mf, const char *key, enum mf_vtype elem,
                       const struct mf_value **out, char *err, size_t errlen)
{
    const struct mf_value *v = find_or_err(mf, key, err, errlen);
    if (!v)
        return -1;
    if (v->type != MF_VT_ARR)
        return type_err(mf, key, v, "ARR", err, errlen);
    if (elem != MF_VT_COUNT && v->v.arr.type != elem)
        return err_set(err, errlen, "%s: metadata key '%s' is an array of %s, expected %s", mf->path, key,
                       mf_vtype_name(v->v.arr.type), mf_vtype_name(elem));
    *out = v;
    return 0;
}

const char *mf_vtype_name(enum mf_vtype t)
{
    static const char *names[MF_VT_COUNT] = {"U8", "I8", "U16", "I16", "U32", "I32", "F32",
                                             "BOOL", "STR", "ARR", "U64", "I64", "F64"};
    return (unsigned)t < MF_VT_COUNT ? names[t] : "?";
}

const char *mf_format_name(enum mf_format f)
{
    switch (f) {
    case MF_FORMAT_GGUF: return "gguf";
    case MF_FORMAT_SAFETENSORS: return "safetensors";
    case MF_FORMAT_HF_DIR: return "hf-folder";
    }
    return "?";
}
