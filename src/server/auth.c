/* server/auth.c — the keyring (JSON via jansson), SHA-256 and constant-time
 * compare (nettle), key generation (getrandom) and the reload check; see
 * auth.h. */
#include "server/auth.h"

#include "core/log.h"

#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

void auth_sha256(const void *data, size_t len, uint8_t out[32])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, len, data);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

bool auth_hash_equal(const uint8_t a[32], const uint8_t b[32]) { return memeql_sec(a, b, 32) != 0; }

void auth_hex(const uint8_t h[32], char out[65])
{
    static const char d[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = d[h[i] >> 4];
        out[2 * i + 1] = d[h[i] & 15];
    }
    out[64] = '\0';
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* An optional non-negative integer field ≤ max; def when absent. */
static int get_count(json_t *o, const char *field, uint32_t def, uint32_t max, uint32_t *out, const char *name,
                     uint32_t i, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, field);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (json_int_t)max)
        return err_set(err, errlen, "%s: keys[%u].%s: expected an integer in 0..%u", name, i, field, max);
    *out = (uint32_t)json_integer_value(v);
    return 0;
}

static int parse_entry(json_t *o, struct auth_key *k, const char *name, uint32_t i, char *err, size_t errlen)
{
    if (!json_is_object(o))
        return err_set(err, errlen, "%s: keys[%u]: expected an object", name, i);
    static const char *known[] = {"sha256", "tenant", "lane", "enabled", "max_concurrent", "max_queued", "comment"};
    const char *f;
    json_t *v;
    json_object_foreach(o, f, v) {
        bool ok = false;
        for (size_t j = 0; j < sizeof(known) / sizeof(known[0]); j++)
            ok |= !strcmp(f, known[j]);
        if (!ok)
            return err_set(err, errlen, "%s: keys[%u]: unknown field '%.64s'", name, i, f);
    }
    const char *hex = json_string_value(json_object_get(o, "sha256"));
    if (!hex || strlen(hex) != 64)
        return err_set(err, errlen, "%s: keys[%u].sha256: expected 64 hex digits", name, i);
    for (int j = 0; j < 32; j++) {
        int hi = hex_val(hex[2 * j]), lo = hex_val(hex[2 * j + 1]);
        if (hi < 0 || lo < 0)
            return err_set(err, errlen, "%s: keys[%u].sha256: expected 64 hex digits", name, i);
        k->sha256[j] = (uint8_t)(hi << 4 | lo);
    }
    const char *tenant = json_string_value(json_object_get(o, "tenant"));
    size_t tl = tenant ? strlen(tenant) : 0;
    if (!tenant || tl == 0 || tl >= AUTH_TENANT_MAX)
        return err_set(err, errlen, "%s: keys[%u].tenant: expected a string of 1..%d bytes", name, i,
                       AUTH_TENANT_MAX - 1);
    for (size_t j = 0; j < tl; j++) {
        unsigned char c = (unsigned char)tenant[j];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.'))
            return err_set(err, errlen, "%s: keys[%u].tenant: only letters, digits, '-', '_' and '.'", name, i);
    }
    memcpy(k->tenant, tenant, tl + 1);
    json_t *lane = json_object_get(o, "lane");
    k->lane = AUTH_LANE_INTERACTIVE;
    if (lane) {
        const char *l = json_string_value(lane);
        if (l && !strcmp(l, "batch"))
            k->lane = AUTH_LANE_BATCH;
        else if (!l || strcmp(l, "interactive"))
            return err_set(err, errlen, "%s: keys[%u].lane: expected \"interactive\" or \"batch\"", name, i);
    }
    json_t *en = json_object_get(o, "enabled");
    if (en && !json_is_boolean(en))
        return err_set(err, errlen, "%s: keys[%u].enabled: expected true or false", name, i);
    k->enabled = !en || json_is_true(en);
    if (get_count(o, "max_concurrent", 0, 1u << 20, &k->max_concurrent, name, i, err, errlen) ||
        get_count(o, "max_queued", AUTH_DEFAULT_MAX_QUEUED, 1u << 20, &k->max_queued, name, i, err, errlen))
        return -1;
    json_t *c = json_object_get(o, "comment");
    if (c && !json_is_string(c))
        return err_set(err, errlen, "%s: keys[%u].comment: expected a string", name, i);
    return 0;
}

int auth_keyring_parse(struct auth_keyring *ring, const char *text, size_t len, const char *name, char *err,
                       size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return err_set(err, errlen, "%s: line %d: %s", name, je.line, je.text);
    struct auth_key *keys = NULL;
    int rc = -1;
    json_t *arr = json_is_object(root) ? json_object_get(root, "keys") : NULL;
    if (!json_is_object(root) || json_object_size(root) != 1 || !json_is_array(arr)) {
        err_set(err, errlen, "%s: expected {\"keys\": [...]} and nothing else", name);
        goto out;
    }
    size_t n = json_array_size(arr);
    if (n > AUTH_MAX_KEYS) {
        err_set(err, errlen, "%s: %zu keys (at most %d)", name, n, AUTH_MAX_KEYS);
        goto out;
    }
    keys = calloc(n ? n : 1, sizeof(*keys));
    if (!keys) {
        err_set(err, errlen, "%s: out of memory", name);
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (parse_entry(json_array_get(arr, i), &keys[i], name, i, err, errlen))
            goto out;
        for (uint32_t j = 0; j < i; j++) {
            if (!memcmp(keys[j].sha256, keys[i].sha256, 32)) {
                err_set(err, errlen, "%s: keys[%u].sha256: the same key as keys[%u]", name, i, j);
                goto out;
            }
            if (!strcmp(keys[j].tenant, keys[i].tenant) &&
                (keys[j].lane != keys[i].lane || keys[j].max_concurrent != keys[i].max_concurrent ||
                 keys[j].max_queued != keys[i].max_queued)) {
                err_set(err, errlen, "%s: keys[%u]: tenant '%s' has another lane or other limits in keys[%u]", name,
                        i, keys[i].tenant, j);
                goto out;
            }
        }
    }
    auth_keyring_free(ring);
    ring->keys = keys;
    ring->n = (uint32_t)n;
    keys = NULL;
    rc = 0;
out:
    free(keys);
    json_decref(root);
    return rc;
}

int auth_keyring_load(struct auth_keyring *ring, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(err, errlen, "%s: %s", path, strerror(errno));
    char *buf = malloc(AUTH_MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, AUTH_MAX_FILE + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    int rc;
    if (!buf)
        rc = err_set(err, errlen, "%s: out of memory", path);
    else if (bad)
        rc = err_set(err, errlen, "%s: read error", path);
    else if (n > AUTH_MAX_FILE)
        rc = err_set(err, errlen, "%s: larger than %u bytes", path, AUTH_MAX_FILE);
    else
        rc = auth_keyring_parse(ring, buf, n, path, err, errlen);
    free(buf);
    return rc;
}

int auth_keyring_single(struct auth_keyring *ring, const char *key, char *err, size_t errlen)
{
    size_t len = strlen(key);
    if (len == 0 || len > AUTH_KEY_MAX)
        return err_set(err, errlen, "MEMRA_API_KEY: expected 1..%d bytes", AUTH_KEY_MAX);
    struct auth_key *k = calloc(1, sizeof(*k));
    if (!k)
        return err_set(err, errlen, "out of memory");
    auth_sha256(key, len, k->sha256);
    snprintf(k->tenant, sizeof(k->tenant), "default");
    k->lane = AUTH_LANE_INTERACTIVE;
    k->enabled = true;
    k->max_queued = AUTH_DEFAULT_MAX_QUEUED;
    auth_keyring_free(ring);
    ring->keys = k;
    ring->n = 1;
    return 0;
}

void auth_keyring_free(struct auth_keyring *ring)
{
    free(ring->keys);
    ring->keys = NULL;
    ring->n = 0;
}

const struct auth_key *auth_keyring_find(const struct auth_keyring *ring, const char *key, size_t len)
{
    if (len == 0 || len > AUTH_KEY_MAX)
        return NULL;
    uint8_t h[32];
    auth_sha256(key, len, h);
    const struct auth_key *found = NULL;
    for (uint32_t i = 0; i < ring->n; i++) /* no early exit */
        if (auth_hash_equal(ring->keys[i].sha256, h))
            found = &ring->keys[i];
    return found;
}

int auth_gen_key(char out[AUTH_GEN_KEY_LEN], char *err, size_t errlen)
{
    uint8_t raw[32];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return err_set(err, errlen, "getrandom: %s", strerror(errno));
        got += (size_t)r;
    }
    char enc[BASE64_ENCODE_RAW_LENGTH(32) + 1];
    struct base64_encode_ctx ctx;
    base64url_encode_init(&ctx);
    size_t n = base64_encode_update(&ctx, enc, sizeof(raw), raw);
    n += base64_encode_final(&ctx, enc + n);
    while (n && enc[n - 1] == '=') /* no padding */
        n--;
    enc[n] = '\0';
    snprintf(out, AUTH_GEN_KEY_LEN, "memra-%s", enc);
    memset(raw, 0, sizeof(raw));
    return 0;
}

int auth_state_init(struct auth_state *a, const char *key, const char *path, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    if (key && path)
        return err_set(err, errlen, "MEMRA_API_KEY and MEMRA_API_KEYS are both set (use one)");
    if (key)
        return auth_keyring_single(&a->ring, key, err, errlen);
    if (!path) {
        a->open = true;
        return 0;
    }
    a->path = path;
    struct stat st;
    if (stat(path, &st))
        return err_set(err, errlen, "%s: %s", path, strerror(errno));
    if (auth_keyring_load(&a->ring, path, err, errlen))
        return -1;
    a->dev = st.st_dev;
    a->ino = st.st_ino;
    a->size = st.st_size;
    a->mtime = st.st_mtim;
    return 0;
}

int auth_state_poll(struct auth_state *a)
{
    if (!a->path)
        return 0;
    struct stat st;
    if (stat(a->path, &st)) {
        if (a->size != -1) /* log once */
            log_warn("API keyring %s: %s; keeping the %u keys loaded", a->path, strerror(errno), a->ring.n);
        a->size = -1;
        return -1;
    }
    if (st.st_dev == a->dev && st.st_ino == a->ino && st.st_size == a->size &&
        st.st_mtim.tv_sec == a->mtime.tv_sec && st.st_mtim.tv_nsec == a->mtime.tv_nsec)
        return 0;
    a->dev = st.st_dev;
    a->ino = st.st_ino;
    a->size = st.st_size;
    a->mtime = st.st_mtim;
    char err[512];
    if (auth_keyring_load(&a->ring, a->path, err, sizeof(err))) {
        log_warn("API keyring not reloaded, keeping the %u keys loaded: %s", a->ring.n, err);
        return -1;
    }
    a->generation++;
    log_info("API keyring %s reloaded: %u keys", a->path, a->ring.n);
    return 1;
}

void auth_state_free(struct auth_state *a) { auth_keyring_free(&a->ring); }
