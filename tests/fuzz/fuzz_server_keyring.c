/* fuzz_server_keyring.c — libFuzzer target for the API keyring parser
 * (server/auth.h, auth_keyring_parse).
 *
 * A keyring that parses must hold at most AUTH_MAX_KEYS entries, each with a
 * non-empty NUL-terminated tenant, a known lane, distinct hashes, and each
 * entry must be found by its own hash (the lookup path without the key). A
 * failure must name the file and leave the previous ring untouched. Seeds:
 * tests/fuzz/corpus/fuzz_server_keyring/ (small valid and broken keyrings).
 */
#include "server/auth.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct auth_keyring ring = {0};
    char err[512] = "";
    if (auth_keyring_single(&ring, "previous", err, sizeof(err)))
        __builtin_trap();
    if (auth_keyring_parse(&ring, (const char *)data, size, "fuzz.json", err, sizeof(err))) {
        if (strncmp(err, "fuzz.json", 9) || ring.n != 1 || !auth_keyring_find(&ring, "previous", 8))
            __builtin_trap(); /* named the file; the old ring stays */
        auth_keyring_free(&ring);
        return 0;
    }
    if (ring.n > AUTH_MAX_KEYS)
        __builtin_trap();
    for (uint32_t i = 0; i < ring.n; i++) {
        const struct auth_key *k = &ring.keys[i];
        size_t tl = strnlen(k->tenant, AUTH_TENANT_MAX);
        if (tl == 0 || tl == AUTH_TENANT_MAX || (k->lane != AUTH_LANE_INTERACTIVE && k->lane != AUTH_LANE_BATCH))
            __builtin_trap();
        uint32_t same = 0;
        for (uint32_t j = 0; j < ring.n; j++)
            same += auth_hash_equal(k->sha256, ring.keys[j].sha256);
        if (same != 1)
            __builtin_trap();
    }
    auth_keyring_free(&ring);
    return 0;
}
