/* server/auth.h — API keys and tenants: the keyring, key hashing and checking,
 * key generation, and reloading the keyring file when it changes.
 *
 * A keyring maps the SHA-256 of each API key to a tenant: its name, its lane
 * (interactive requests are admitted before batch ones), whether the key is
 * enabled, and the tenant's admission limits (concurrent requests, queued
 * requests). Keys are never stored, only their hashes; a presented key is
 * hashed and compared against every entry in constant time (nettle's
 * memeql_sec, no early exit), so the time taken does not depend on how much of
 * a hash matched nor on which entry matched.
 *
 * The keyring file is JSON (docs/SERVING.md, "API keys and tenants"):
 *   {"keys": [{"sha256": "<64 hex>", "tenant": "acme", "lane": "interactive",
 *              "enabled": true, "max_concurrent": 4, "max_queued": 16}, ...]}
 * Entries of one tenant must agree on lane and limits.
 *
 * Threads: everything here runs on the server's event-loop thread.
 */
#ifndef MEMRA_SERVER_AUTH_H
#define MEMRA_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define AUTH_TENANT_MAX 64       /* tenant name bytes, NUL included */
#define AUTH_MAX_KEYS 4096       /* entries of one keyring */
#define AUTH_MAX_FILE (4u << 20) /* keyring file bytes */
#define AUTH_KEY_MAX 256         /* presented key bytes */
#define AUTH_DEFAULT_MAX_QUEUED 16
#define AUTH_GEN_KEY_LEN 64      /* buffer of a new key: "memra-" + 43 base64url characters */

enum auth_lane { AUTH_LANE_INTERACTIVE, AUTH_LANE_BATCH };

struct auth_key {
    uint8_t sha256[32];
    char tenant[AUTH_TENANT_MAX];
    enum auth_lane lane;
    bool enabled;
    uint32_t max_concurrent; /* requests the tenant runs at once; 0: no cap of its own */
    uint32_t max_queued;     /* requests the tenant may have waiting */
};

struct auth_keyring {
    struct auth_key *keys; /* (n) malloc'd */
    uint32_t n;
};

/* SHA-256 of data (nettle). */
void auth_sha256(const void *data, size_t len, uint8_t out[32]);
/* Constant-time equality of two 32-byte hashes. */
bool auth_hash_equal(const uint8_t a[32], const uint8_t b[32]);

/* Parse a keyring from JSON text; name (the file) prefixes the messages.
 * 0, or -1 with the reason in err and *ring untouched. */
int auth_keyring_parse(struct auth_keyring *ring, const char *text, size_t len, const char *name, char *err,
                       size_t errlen);
/* Read and parse the file at path (≤ AUTH_MAX_FILE bytes). */
int auth_keyring_load(struct auth_keyring *ring, const char *path, char *err, size_t errlen);
/* A ring of one key (MEMRA_API_KEY): tenant "default", interactive, no cap. */
int auth_keyring_single(struct auth_keyring *ring, const char *key, char *err, size_t errlen);
void auth_keyring_free(struct auth_keyring *ring);
/* The entry of a presented key, or NULL. Every entry is compared. */
const struct auth_key *auth_keyring_find(const struct auth_keyring *ring, const char *key, size_t len);

/* A new key: "memra-" + base64url of 32 bytes from getrandom(). 0 or -1. */
int auth_gen_key(char out[AUTH_GEN_KEY_LEN], char *err, size_t errlen);
/* Lower-case hex of a hash into out (65 bytes). */
void auth_hex(const uint8_t h[32], char out[65]);

/* The server's authentication state: open (no keys), one key, or a keyring
 * file that auth_state_poll reloads when its inode, size or mtime changes (a
 * file that fails to parse keeps the old ring; the reason is logged once). */
struct auth_state {
    bool open;
    const char *path;        /* keyring file, or NULL */
    struct auth_keyring ring;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint64_t generation;     /* incremented on every successful reload */
};

/* key: MEMRA_API_KEY or NULL; path: MEMRA_API_KEYS or NULL (not both). */
int auth_state_init(struct auth_state *a, const char *key, const char *path, char *err, size_t errlen);
/* Check the keyring file; reload it when it changed. 1: reloaded, 0: unchanged
 * or not a file ring, -1: changed but broken (the old ring stays). */
int auth_state_poll(struct auth_state *a);
void auth_state_free(struct auth_state *a);

#endif
