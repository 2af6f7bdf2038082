/* core/arena.h — a bump allocator in chunks, freed all at once.
 * Parsers put every string and array they build into one arena, so a model
 * file's metadata is released with a single arena_free(). */
#ifndef MEMRA_CORE_ARENA_H
#define MEMRA_CORE_ARENA_H

#include <stddef.h>

struct arena_chunk;
struct arena {
    struct arena_chunk *head; /* newest chunk first */
    size_t chunk_size;        /* default size of a new chunk */
    size_t total;             /* bytes handed out, for limits and reports */
};

void arena_init(struct arena *a, size_t chunk_size);
void arena_free(struct arena *a);
/* 16-byte aligned, zeroed; NULL only when malloc fails or n is absurd. */
void *arena_alloc(struct arena *a, size_t n);
/* Copy n bytes and add a NUL. */
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_strdup(struct arena *a, const char *s);

#endif
