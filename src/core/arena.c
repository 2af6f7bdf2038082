/* core/arena.c — see arena.h. */
#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
    struct arena_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void arena_init(struct arena *a, size_t chunk_size)
{
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : (size_t)1 << 16;
    a->total = 0;
}

void arena_free(struct arena *a)
{
    struct arena_chunk *c = a->head;
    while (c) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
    if (n > SIZE_MAX / 2)
        return NULL;
    size_t need = (n + 15) & ~(size_t)15;
    struct arena_chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t size = need > a->chunk_size ? need : a->chunk_size;
        c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += need;
    a->total += need;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *p = arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(struct arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }
