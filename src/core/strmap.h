/* core/strmap.h — a string → uint64 hash index (open addressing, FNV-1a).
 * Keys are borrowed, not copied: they must outlive the map (they usually live
 * in the owner's arena). Used for tensor names, metadata keys and vocabularies. */
#ifndef MEMRA_CORE_STRMAP_H
#define MEMRA_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strmap_slot {
    const char *key; /* NULL: empty */
    size_t key_len;
    uint64_t value;
};

struct strmap {
    struct strmap_slot *slots; /* (cap) */
    size_t cap, count;
};

void strmap_init(struct strmap *m);
void strmap_free(struct strmap *m);
/* Insert key → value. Returns 1 if inserted, 0 if the key was already present
 * (the old value stays), -1 when out of memory. */
int strmap_put(struct strmap *m, const char *key, size_t key_len, uint64_t value);
bool strmap_get(const struct strmap *m, const char *key, size_t key_len, uint64_t *value);

#endif
