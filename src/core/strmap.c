/* core/strmap.c — see strmap.h. Load factor kept under 1/2. */
#include "core/strmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void strmap_init(struct strmap *m) { memset(m, 0, sizeof(*m)); }

void strmap_free(struct strmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

static struct strmap_slot *find_slot(struct strmap_slot *slots, size_t cap, const char *key, size_t n)
{
    size_t i = hash_bytes(key, n) & (cap - 1);
    for (;;) {
        struct strmap_slot *s = &slots[i];
        if (!s->key || (s->key_len == n && memcmp(s->key, key, n) == 0))
            return s;
        i = (i + 1) & (cap - 1);
    }
}

static int grow(struct strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct strmap_slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        struct strmap_slot *old = &m->slots[i];
        if (old->key)
            *find_slot(slots, cap, old->key, old->key_len) = *old;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int strmap_put(struct strmap *m, const char *key, size_t key_len, uint64_t value)
{
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    struct strmap_slot *s = find_slot(m->slots, m->cap, key, key_len);
    if (s->key)
        return 0;
    s->key = key;
    s->key_len = key_len;
    s->value = value;
    m->count++;
    return 1;
}

bool strmap_get(const struct strmap *m, const char *key, size_t key_len, uint64_t *value)
{
    if (!m->cap)
        return false;
    struct strmap_slot *s = find_slot(m->slots, m->cap, key, key_len);
    if (!s->key)
        return false;
    if (value)
        *value = s->value;
    return true;
}
