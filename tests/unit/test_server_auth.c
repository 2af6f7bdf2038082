/* tests/unit/test_server_auth.c — the API keyring (server/auth.h): SHA-256
 * against FIPS 180-2 / NIST example vectors, the constant-time hash compare,
 * key lookup, every kind of malformed keyring file (each refused with a
 * message naming the field, the old ring kept), key generation, and the
 * reload check (a changed file is reloaded, a broken rewrite keeps the ring). */
#include "test.h"

#include "server/auth.h"

#include <stdio.h>
#include <unistd.h>

static void hex_of(const char *s, size_t len, char out[65])
{
    uint8_t h[32];
    auth_sha256(s, len, h);
    auth_hex(h, out);
}

static void test_sha256_vectors(void)
{
    char hex[65];
    hex_of("", 0, hex);
    CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, hex);
    CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two, strlen(two), hex);
    CHECK_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *million = malloc(1000000);
    CHECK(million != NULL);
    if (million) {
        memset(million, 'a', 1000000);
        hex_of(million, 1000000, hex);
        CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        free(million);
    }
}

static void test_hash_equal(void)
{
    uint8_t a[32], b[32];
    auth_sha256("x", 1, a);
    memcpy(b, a, 32);
    CHECK(auth_hash_equal(a, b));
    b[0] ^= 1; /* differs in the first byte */
    CHECK(!auth_hash_equal(a, b));
    b[0] ^= 1;
    b[31] ^= 0x80; /* only in the last bit */
    CHECK(!auth_hash_equal(a, b));
}

/* A keyring text with entries for keys "k1" (tenant a) and "k2" (tenant b, batch, disabled). */
static char *two_tenants(void)
{
    char h1[65], h2[65];
    hex_of("k1", 2, h1);
    hex_of("k2", 2, h2);
    char *t = malloc(1024);
    snprintf(t, 1024,
             "{\"keys\": [{\"sha256\": \"%s\", \"tenant\": \"a\", \"max_concurrent\": 2, \"comment\": \"x\"},\n"
             "{\"sha256\": \"%s\", \"tenant\": \"b\", \"lane\": \"batch\", \"enabled\": false, \"max_queued\": 0}]}",
             h1, h2);
    return t;
}

static void test_parse_and_find(void)
{
    struct auth_keyring ring = {0};
    char err[256] = "";
    char *t = two_tenants();
    CHECK_EQ_INT(auth_keyring_parse(&ring, t, strlen(t), "ring.json", err, sizeof(err)), 0);
    free(t);
    CHECK_EQ_INT(ring.n, 2);
    const struct auth_key *k = auth_keyring_find(&ring, "k1", 2);
    CHECK(k == &ring.keys[0]);
    if (k) {
        CHECK_EQ_STR(k->tenant, "a");
        CHECK_EQ_INT(k->lane, AUTH_LANE_INTERACTIVE);
        CHECK(k->enabled);
        CHECK_EQ_INT(k->max_concurrent, 2);
        CHECK_EQ_INT(k->max_queued, AUTH_DEFAULT_MAX_QUEUED);
    }
    k = auth_keyring_find(&ring, "k2", 2);
    CHECK(k == &ring.keys[1]);
    if (k) {
        CHECK_EQ_STR(k->tenant, "b");
        CHECK_EQ_INT(k->lane, AUTH_LANE_BATCH);
        CHECK(!k->enabled);
        CHECK_EQ_INT(k->max_concurrent, 0);
        CHECK_EQ_INT(k->max_queued, 0);
    }
    CHECK(auth_keyring_find(&ring, "k3", 2) == NULL);
    CHECK(auth_keyring_find(&ring, "k", 1) == NULL);
    CHECK(auth_keyring_find(&ring, "", 0) == NULL);
    auth_keyring_free(&ring);

    CHECK_EQ_INT(auth_keyring_parse(&ring, "{\"keys\": []}", 12, "empty", err, sizeof(err)), 0);
    CHECK_EQ_INT(ring.n, 0);
    CHECK(auth_keyring_find(&ring, "k1", 2) == NULL);
    auth_keyring_free(&ring);

    CHECK_EQ_INT(auth_keyring_single(&ring, "secret", err, sizeof(err)), 0);
    CHECK(auth_keyring_find(&ring, "secret", 6) != NULL);
    CHECK(auth_keyring_find(&ring, "secreT", 6) == NULL);
    CHECK_EQ_STR(ring.keys[0].tenant, "default");
    CHECK_EQ_INT(auth_keyring_single(&ring, "", err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "MEMRA_API_KEY");
    auth_keyring_free(&ring);
}

#define H64 "0000000000000000000000000000000000000000000000000000000000000000"
#define H64B "1111111111111111111111111111111111111111111111111111111111111111"

static void test_malformed(void)
{
    static const struct {
        const char *text;
        const char *want; /* in the message */
    } cases[] = {
        {"{\"keys\": [", "bad.json: line 1"},
        {"", "bad.json: line"},
        {"[]", "expected {\"keys\": [...]}"},
        {"{\"keys\": {}}", "expected {\"keys\": [...]}"},
        {"{\"keys\": [], \"extra\": 1}", "expected {\"keys\": [...]}"},
        {"{\"keys\": [], \"keys\": []}", "bad.json: line"},
        {"{\"keys\": [5]}", "keys[0]: expected an object"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"color\": 1}]}", "keys[0]: unknown field 'color'"},
        {"{\"keys\": [{\"tenant\": \"a\"}]}", "keys[0].sha256"},
        {"{\"keys\": [{\"sha256\": \"abc\", \"tenant\": \"a\"}]}", "keys[0].sha256"},
        {"{\"keys\": [{\"sha256\": 5, \"tenant\": \"a\"}]}", "keys[0].sha256"},
        {"{\"keys\": [{\"sha256\": \"" "g000000000000000000000000000000000000000000000000000000000000000" "\", "
         "\"tenant\": \"a\"}]}", "keys[0].sha256"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\"}]}", "keys[0].tenant"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"\"}]}", "keys[0].tenant"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a b\"}]}", "keys[0].tenant"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "\"}]}", "keys[0].tenant"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"lane\": \"fast\"}]}", "keys[0].lane"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"lane\": 1}]}", "keys[0].lane"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"enabled\": 1}]}", "keys[0].enabled"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"max_concurrent\": -1}]}",
         "keys[0].max_concurrent"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"max_concurrent\": \"2\"}]}",
         "keys[0].max_concurrent"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"max_concurrent\": 99999999999}]}",
         "keys[0].max_concurrent"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"max_queued\": 1.5}]}", "keys[0].max_queued"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\", \"comment\": 7}]}", "keys[0].comment"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\"}, {\"sha256\": \"" H64 "\", \"tenant\": \"b\"}]}",
         "keys[1].sha256: the same key as keys[0]"},
        {"{\"keys\": [{\"sha256\": \"" H64 "\", \"tenant\": \"a\"}, {\"sha256\": \"" H64B "\", \"tenant\": \"a\", "
         "\"max_concurrent\": 3}]}", "keys[1]: tenant 'a' has another lane or other limits in keys[0]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct auth_keyring ring = {0};
        auth_keyring_single(&ring, "old", NULL, 0); /* a ring a failed parse must leave alone */
        char err[256] = "";
        int rc = auth_keyring_parse(&ring, cases[i].text, strlen(cases[i].text), "bad.json", err, sizeof(err));
        CHECK_MSG(rc == -1, "case %zu parsed", i);
        CHECK_MSG(strstr(err, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err, cases[i].want);
        CHECK_MSG(strncmp(err, "bad.json", 8) == 0, "case %zu: '%s' does not name the file", i, err);
        CHECK(ring.n == 1 && auth_keyring_find(&ring, "old", 3) != NULL);
        auth_keyring_free(&ring);
    }
    /* too many keys */
    size_t cap = (size_t)(AUTH_MAX_KEYS + 1) * 100 + 64, n = 0;
    char *big = malloc(cap);
    n += (size_t)snprintf(big + n, cap - n, "{\"keys\": [");
    for (uint32_t i = 0; i <= AUTH_MAX_KEYS; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s{\"sha256\": \"%064x\", \"tenant\": \"t\"}", i ? "," : "", i);
    n += (size_t)snprintf(big + n, cap - n, "]}");
    struct auth_keyring ring = {0};
    char err[256] = "";
    CHECK_EQ_INT(auth_keyring_parse(&ring, big, n, "big.json", err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "at most");
    free(big);
    /* a missing file */
    CHECK_EQ_INT(auth_keyring_load(&ring, "/nonexistent/ring.json", err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "/nonexistent/ring.json");
}

static void test_gen_key(void)
{
    char a[AUTH_GEN_KEY_LEN], b[AUTH_GEN_KEY_LEN], err[128];
    CHECK_EQ_INT(auth_gen_key(a, err, sizeof(err)), 0);
    CHECK_EQ_INT(auth_gen_key(b, err, sizeof(err)), 0);
    CHECK_EQ_INT(strlen(a), 6 + 43); /* "memra-" + base64url of 32 bytes, unpadded */
    CHECK(!strncmp(a, "memra-", 6));
    CHECK(strcmp(a, b) != 0);
    for (size_t i = 6; i < strlen(a); i++) {
        char c = a[i];
        CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
    }
}

static void write_file(const char *path, const char *text)
{
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    CHECK_EQ_INT(rename(tmp, path), 0); /* a new inode: a reload even within one mtime tick */
}

static void test_reload(void)
{
    char path[] = "/tmp/memra_auth_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    close(fd);
    char *t = two_tenants();
    write_file(path, t);
    free(t);
    struct auth_state a;
    char err[256];
    CHECK_EQ_INT(auth_state_init(&a, "x", path, err, sizeof(err)), -1); /* not both */
    CHECK_EQ_INT(auth_state_init(&a, NULL, NULL, err, sizeof(err)), 0);
    CHECK(a.open);
    auth_state_free(&a);
    CHECK_EQ_INT(auth_state_init(&a, NULL, path, err, sizeof(err)), 0);
    CHECK(!a.open);
    CHECK_EQ_INT(a.ring.n, 2);
    CHECK_EQ_INT(auth_state_poll(&a), 0); /* unchanged */

    char h3[65], text[256];
    hex_of("k3", 2, h3);
    snprintf(text, sizeof(text), "{\"keys\": [{\"sha256\": \"%s\", \"tenant\": \"c\"}]}", h3);
    write_file(path, text);
    CHECK_EQ_INT(auth_state_poll(&a), 1);
    CHECK_EQ_INT(a.ring.n, 1);
    CHECK(auth_keyring_find(&a.ring, "k3", 2) != NULL);
    CHECK(auth_keyring_find(&a.ring, "k1", 2) == NULL);
    CHECK_EQ_INT(auth_state_poll(&a), 0);

    write_file(path, "{\"keys\": [{\"sha256\": \"nothex\"");
    CHECK_EQ_INT(auth_state_poll(&a), -1); /* broken: the old ring stays */
    CHECK(auth_keyring_find(&a.ring, "k3", 2) != NULL);
    CHECK_EQ_INT(auth_state_poll(&a), 0); /* logged once, not every poll */

    unlink(path);
    CHECK_EQ_INT(auth_state_poll(&a), -1); /* gone: the old ring stays */
    CHECK(auth_keyring_find(&a.ring, "k3", 2) != NULL);
    write_file(path, text);
    CHECK_EQ_INT(auth_state_poll(&a), 1); /* back */
    auth_state_free(&a);
    unlink(path);
}

int main(void)
{
    RUN(test_sha256_vectors);
    RUN(test_hash_equal);
    RUN(test_parse_and_find);
    RUN(test_malformed);
    RUN(test_gen_key);
    RUN(test_reload);
    return test_summary();
}
