/* format/safetensors.c — the safetensors reader: one .safetensors file, or a
 * sharded checkpoint through its model.safetensors.index.json.
 *
 * A file is: u64 little-endian header length N, N bytes of JSON, then the data
 * section. The JSON maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (offsets relative to the data section) and may hold a
 * "__metadata__" object of string → string, which becomes MF_VT_STR kvs.
 *
 * Checks (the file is untrusted): N ≤ MF_MAX_JSON_HEADER and ≤ the bytes
 * present; the JSON parses strictly (jansson, duplicate keys refused) into an
 * object; dtype is one dtype_from_safetensors knows; shape has ≤ MF_MAX_DIMS
 * non-negative entries whose product does not overflow; 0 ≤ begin ≤ end ≤ data
 * section size and end − begin == elements × dtype size. Holes and overlaps
 * between tensors are not checked: nothing here depends on them.
 *
 * Sharded: the index's "weight_map" maps tensor → shard file name, resolved
 * relative to the index's folder; a name that is absolute or has a ".."
 * component is refused, so a checkpoint cannot point outside its folder. Each
 * shard is opened once (at most MF_MAX_SHARDS), all shards' tensors go into
 * one table (file_index names the shard), a tensor found in two shards is a
 * duplicate, and every tensor the map lists must be in the shard it names.
 * Tensors a shard holds beyond the map are kept. "__metadata__" entries of the
 * shards are merged: the first shard's value of a key wins (every shard usually
 * carries the same {"format": "pt"}).
 */
#include "format/model_file.h"
#include "core/checked.h"
#include "core/log.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the safetensors reader assumes a little-endian host");

/* Growing tables while shards are read; copied into the arena at the end. */
struct st_tables {
    struct mf_tensor *tensors;
    uint64_t n_tensors, cap_tensors;
    struct mf_kv *kvs;
    uint64_t n_kvs, cap_kvs;
};

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static bool json_uint(const json_t *j, uint64_t *out)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return false;
    *out = (uint64_t)json_integer_value(j);
    return true;
}

/* One tensor entry of a header. */
static int parse_tensor(struct model_file *mf, const char *path, const char *name, const json_t *e,
                        const uint8_t *data, uint64_t data_size, uint32_t file_index, struct mf_tensor *t,
                        char *err, size_t errlen)
{
    if (strlen(name) > MF_MAX_NAME_LEN)
        return err_set(err, errlen, "%s: tensor name of %zu bytes exceeds the limit of %u", path, strlen(name),
                       MF_MAX_NAME_LEN);
    if (!json_is_object(e))
        return err_set(err, errlen, "%s: tensor '%s': entry is not a JSON object", path, name);
    const json_t *jd = json_object_get(e, "dtype"), *js = json_object_get(e, "shape"),
                 *jo = json_object_get(e, "data_offsets");
    if (!json_is_string(jd))
        return err_set(err, errlen, "%s: tensor '%s': \"dtype\" is missing or not a string", path, name);
    if (!dtype_from_safetensors(json_string_value(jd), &t->dtype))
        return err_set(err, errlen, "%s: tensor '%s': unknown dtype '%.40s'", path, name, json_string_value(jd));
    if (!json_is_array(js))
        return err_set(err, errlen, "%s: tensor '%s': \"shape\" is missing or not an array", path, name);
    size_t nd = json_array_size(js);
    if (nd > MF_MAX_DIMS)
        return err_set(err, errlen, "%s: tensor '%s': %zu dimensions, at most %d allowed", path, name, nd,
                       MF_MAX_DIMS);
    uint64_t n_el = 1;
    for (size_t d = 0; d < MF_MAX_DIMS; d++)
        t->shape[d] = 1;
    for (size_t d = 0; d < nd; d++) {
        if (!json_uint(json_array_get(js, d), &t->shape[d]))
            return err_set(err, errlen, "%s: tensor '%s': shape[%zu] is not a non-negative integer", path, name, d);
        if (checked_mul_u64(n_el, t->shape[d], &n_el))
            return err_set(err, errlen, "%s: tensor '%s': element count overflows", path, name);
    }
    uint64_t n_bytes, begin, end;
    if (checked_mul_u64(n_el, dtype_info(t->dtype)->type_size, &n_bytes))
        return err_set(err, errlen, "%s: tensor '%s': byte size overflows", path, name);
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_uint(json_array_get(jo, 0), &begin) ||
        !json_uint(json_array_get(jo, 1), &end))
        return err_set(err, errlen, "%s: tensor '%s': \"data_offsets\" must be [begin, end] (non-negative integers)",
                       path, name);
    if (begin > end || end > data_size)
        return err_set(err, errlen, "%s: tensor '%s': data_offsets [%llu, %llu] out of range: the data section "
                       "has %llu bytes", path, name, (unsigned long long)begin, (unsigned long long)end,
                       (unsigned long long)data_size);
    if (end - begin != n_bytes)
        return err_set(err, errlen, "%s: tensor '%s': data_offsets span %llu bytes, but %s × %llu elements "
                       "need %llu", path, name, (unsigned long long)(end - begin), dtype_name(t->dtype),
                       (unsigned long long)n_el, (unsigned long long)n_bytes);
    t->name = arena_strdup(&mf->arena, name);
    if (!t->name)
        return err_set(err, errlen, "%s: out of memory", path);
    t->n_dims = (uint32_t)nd;
    t->n_elements = n_el;
    t->n_bytes = n_bytes;
    t->data = data + begin;
    t->file_index = file_index;
    return 0;
}

/* "__metadata__": string values → STR kvs; a key already taken is skipped. */
static int parse_metadata(struct model_file *mf, const char *path, const json_t *meta, struct st_tables *tb,
                          char *err, size_t errlen)
{
    if (!json_is_object(meta))
        return err_set(err, errlen, "%s: \"__metadata__\" is not a JSON object", path);
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)meta, key, val) {
        if (!json_is_string(val))
            return err_set(err, errlen, "%s: __metadata__ '%.100s' is not a string", path, key);
        if (strlen(key) > MF_MAX_NAME_LEN)
            return err_set(err, errlen, "%s: __metadata__ key of %zu bytes exceeds the limit of %u", path,
                           strlen(key), MF_MAX_NAME_LEN);
        bool seen = false;
        for (uint64_t i = 0; i < tb->n_kvs && !seen; i++)
            seen = strcmp(tb->kvs[i].key, key) == 0;
        if (seen)
            continue;
        if (tb->n_kvs >= MF_MAX_KVS)
            return err_set(err, errlen, "%s: more than %u __metadata__ entries", path, MF_MAX_KVS);
        if (grow((void **)&tb->kvs, &tb->cap_kvs, tb->n_kvs + 1, sizeof(struct mf_kv)))
            return err_set(err, errlen, "%s: out of memory", path);
        struct mf_kv *kv = &tb->kvs[tb->n_kvs];
        memset(kv, 0, sizeof(*kv));
        size_t len = json_string_length(val);
        kv->key = arena_strdup(&mf->arena, key);
        kv->value.type = MF_VT_STR;
        kv->value.v.str.ptr = arena_strndup(&mf->arena, json_string_value(val), len);
        kv->value.v.str.len = len;
        if (!kv->key || !kv->value.v.str.ptr)
            return err_set(err, errlen, "%s: out of memory", path);
        tb->n_kvs++;
    }
    return 0;
}

/* Parse the header of the mapped file files[fi] (named path) into tb. */
static int parse_file(struct model_file *mf, uint32_t fi, const char *path, struct st_tables *tb, char *err,
                      size_t errlen)
{
    const struct mapped_file *f = &mf->files[fi];
    if (f->size < 8)
        return err_set(err, errlen, "%s: not a safetensors file: %llu bytes, too short for the 8-byte header length",
                       path, (unsigned long long)f->size);
    uint64_t hlen;
    memcpy(&hlen, f->data, 8);
    if (hlen > MF_MAX_JSON_HEADER)
        return err_set(err, errlen, "%s: header length %llu exceeds the limit of %u bytes", path,
                       (unsigned long long)hlen, MF_MAX_JSON_HEADER);
    if (hlen > f->size - 8)
        return err_set(err, errlen, "%s: header length %llu runs past the end of the file (%llu bytes)", path,
                       (unsigned long long)hlen, (unsigned long long)f->size);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)f->data + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return err_set(err, errlen, "%s: header is not valid JSON: %s (line %d, column %d)", path, jerr.text,
                       jerr.line, jerr.column);
    int rc = -1;
    if (!json_is_object(root)) {
        err_set(err, errlen, "%s: header is not a JSON object", path);
        goto out;
    }
    if (json_object_size(root) > (size_t)MF_MAX_TENSORS + 1 ||
        tb->n_tensors + json_object_size(root) > (uint64_t)MF_MAX_TENSORS + 1) {
        err_set(err, errlen, "%s: more than %u tensors", path, MF_MAX_TENSORS);
        goto out;
    }
    if (grow((void **)&tb->tensors, &tb->cap_tensors, tb->n_tensors + json_object_size(root),
             sizeof(struct mf_tensor))) {
        err_set(err, errlen, "%s: out of memory", path);
        goto out;
    }
    const uint8_t *data = f->data + 8 + hlen;
    uint64_t data_size = f->size - 8 - hlen;
    const char *name;
    json_t *e;
    json_object_foreach(root, name, e) {
        if (strcmp(name, "__metadata__") == 0) {
            if (parse_metadata(mf, path, e, tb, err, errlen))
                goto out;
            continue;
        }
        struct mf_tensor *t = &tb->tensors[tb->n_tensors];
        memset(t, 0, sizeof(*t));
        if (parse_tensor(mf, path, name, e, data, data_size, fi, t, err, errlen))
            goto out;
        if (tb->n_tensors + 1 > MF_MAX_TENSORS) {
            err_set(err, errlen, "%s: more than %u tensors", path, MF_MAX_TENSORS);
            goto out;
        }
        tb->n_tensors++;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* Move the growing tables into the view's arena and build the indexes. */
static int finish(struct model_file *mf, struct st_tables *tb, char *err, size_t errlen)
{
    if (tb->n_tensors) {
        mf->tensors = arena_alloc(&mf->arena, (size_t)tb->n_tensors * sizeof(struct mf_tensor));
        if (!mf->tensors)
            return err_set(err, errlen, "%s: out of memory", mf->path);
        memcpy(mf->tensors, tb->tensors, (size_t)tb->n_tensors * sizeof(struct mf_tensor));
    }
    mf->n_tensors = tb->n_tensors;
    if (tb->n_kvs) {
        mf->kvs = arena_alloc(&mf->arena, (size_t)tb->n_kvs * sizeof(struct mf_kv));
        if (!mf->kvs)
            return err_set(err, errlen, "%s: out of memory", mf->path);
        memcpy(mf->kvs, tb->kvs, (size_t)tb->n_kvs * sizeof(struct mf_kv));
    }
    mf->n_kvs = tb->n_kvs;
    return model_file_build_index(mf, err, errlen);
}

static int open_single(struct model_file *mf, const char *path, char *err, size_t errlen)
{
    if (model_file_map_one(mf, path, err, errlen))
        return -1;
    struct st_tables tb = {0};
    int rc = parse_file(mf, 0, path, &tb, err, errlen);
    if (rc == 0)
        rc = finish(mf, &tb, err, errlen);
    free(tb.tensors);
    free(tb.kvs);
    return rc;
}

/* A shard name from weight_map: relative, no ".." component, no NUL. */
static bool shard_name_ok(const char *s)
{
    if (!*s || s[0] == '/')
        return false;
    const char *p = s;
    while (*p) {
        const char *q = strchr(p, '/');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    return true;
}

static int open_index(struct model_file *mf, const char *path, char *err, size_t errlen)
{
    struct mapped_file idx;
    if (mapped_file_open(&idx, path, err, errlen))
        return -1;
    if (idx.size > MF_MAX_JSON_HEADER) {
        mapped_file_close(&idx);
        return err_set(err, errlen, "%s: index of %llu bytes exceeds the limit of %u", path,
                       (unsigned long long)idx.size, MF_MAX_JSON_HEADER);
    }
    json_error_t jerr;
    json_t *root = json_loadb(idx.data ? (const char *)idx.data : "", (size_t)idx.size, JSON_REJECT_DUPLICATES,
                              &jerr);
    mapped_file_close(&idx);
    if (!root)
        return err_set(err, errlen, "%s: not valid JSON: %s (line %d, column %d)", path, jerr.text, jerr.line,
                       jerr.column);

    int rc = -1;
    struct strmap shards; /* shard name → file index; keys borrowed from root */
    strmap_init(&shards);
    struct st_tables tb = {0};
    const char **names = NULL; /* (n_shards) in order of first appearance */
    char sub[512];

    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm)) {
        err_set(err, errlen, "%s: no \"weight_map\" object", path);
        goto out;
    }
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    const char *dir = slash ? arena_strndup(&mf->arena, path, dir_len) : ".";
    if (!dir) {
        err_set(err, errlen, "%s: out of memory", path);
        goto out;
    }
    uint32_t n_shards = 0;
    uint64_t cap_names = 0;
    const char *tname;
    json_t *sv;
    json_object_foreach(wm, tname, sv) {
        if (!json_is_string(sv)) {
            err_set(err, errlen, "%s: weight_map '%.100s' is not a string", path, tname);
            goto out;
        }
        const char *s = json_string_value(sv);
        if (!shard_name_ok(s)) {
            err_set(err, errlen, "%s: weight_map '%.100s': shard path '%.200s' escapes the folder (absolute, empty "
                    "or with '..')", path, tname, s);
            goto out;
        }
        uint64_t dummy;
        if (strmap_get(&shards, s, strlen(s), &dummy))
            continue;
        if (n_shards >= MF_MAX_SHARDS) {
            err_set(err, errlen, "%s: more than %u shards", path, MF_MAX_SHARDS);
            goto out;
        }
        if (strmap_put(&shards, s, strlen(s), n_shards) < 0 ||
            grow((void **)&names, &cap_names, n_shards + 1, sizeof(char *))) {
            err_set(err, errlen, "%s: out of memory", path);
            goto out;
        }
        names[n_shards++] = s;
    }
    mf->files = arena_alloc(&mf->arena, (n_shards ? n_shards : 1) * sizeof(struct mapped_file));
    mf->file_paths = arena_alloc(&mf->arena, (n_shards ? n_shards : 1) * sizeof(const char *));
    if (!mf->files || !mf->file_paths) {
        err_set(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (uint32_t i = 0; i < n_shards; i++) {
        size_t n = dir_len + 1 + strlen(names[i]);
        char *sp = arena_alloc(&mf->arena, n + 1);
        if (!sp) {
            err_set(err, errlen, "%s: out of memory", path);
            goto out;
        }
        snprintf(sp, n + 1, "%s/%s", dir, names[i]);
        mf->file_paths[i] = sp;
        if (mapped_file_open(&mf->files[i], sp, sub, sizeof(sub))) {
            err_set(err, errlen, "%s: shard '%s': %s", path, names[i], sub);
            goto out;
        }
        mf->n_files = i + 1;
        if (parse_file(mf, i, sp, &tb, err, errlen))
            goto out;
    }
    if (finish(mf, &tb, err, errlen))
        goto out;
    json_object_foreach(wm, tname, sv) {
        const char *s = json_string_value(sv);
        uint64_t fi = 0;
        strmap_get(&shards, s, strlen(s), &fi);
        const struct mf_tensor *t = model_file_find_tensor(mf, tname);
        if (!t || t->file_index != fi) {
            err_set(err, errlen, "%s: tensor '%.200s' is listed in shard '%s' but not found there", path, tname, s);
            goto out;
        }
    }
    rc = 0;
out:
    free(names);
    free(tb.tensors);
    free(tb.kvs);
    strmap_free(&shards);
    json_decref(root);
    return rc;
}

int safetensors_open(struct model_file *mf, const char *path, char *err, size_t errlen)
{
    mf->format = MF_FORMAT_SAFETENSORS;
    size_t n = strlen(path);
    if (n >= 5 && strcmp(path + n - 5, ".json") == 0)
        return open_index(mf, path, err, errlen);
    return open_single(mf, path, err, errlen);
}
