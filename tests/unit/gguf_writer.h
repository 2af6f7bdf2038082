/* tests/unit/gguf_writer.h — a tiny GGUF byte builder for tests (test-only).
 *
 * The reader's tests need valid files of every shape and files broken in one
 * precise place, so this writes GGUF byte by byte with no checking at all:
 * a test can put any count, length, type id or offset where it wants. Values
 * are little-endian, as GGUF requires (the tests run on little-endian hosts).
 *
 *   struct gw w; gw_init(&w);
 *   gw_header(&w, 3, n_tensors, n_kv);
 *   gw_key(&w, "general.name", GW_STR); gw_str(&w, "x");
 *   gw_tensor(&w, "w", 2, (uint64_t[]){4, 2}, 0, 0);   // ne innermost first
 *   gw_pad(&w, 32); gw_zeros(&w, 32);                 // data section
 *   gw_save(&w, path); gw_free(&w);
 */
#ifndef MEMRA_TEST_GGUF_WRITER_H
#define MEMRA_TEST_GGUF_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GGUF value type ids */
enum { GW_U8 = 0, GW_I8, GW_U16, GW_I16, GW_U32, GW_I32, GW_F32, GW_BOOL, GW_STR, GW_ARR, GW_U64, GW_I64, GW_F64 };

struct gw {
    uint8_t *buf; /* (len) bytes written so far */
    size_t len, cap;
};

static inline void gw_init(struct gw *w) { w->buf = NULL, w->len = 0, w->cap = 0; }
static inline void gw_free(struct gw *w) { free(w->buf); gw_init(w); }

static inline void gw_bytes(struct gw *w, const void *p, size_t n)
{
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *b = realloc(w->buf, cap);
        if (!b)
            abort();
        w->buf = b, w->cap = cap;
    }
    if (n)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static inline void gw_u8(struct gw *w, uint8_t x) { gw_bytes(w, &x, 1); }
static inline void gw_u16(struct gw *w, uint16_t x) { gw_bytes(w, &x, 2); }
static inline void gw_u32(struct gw *w, uint32_t x) { gw_bytes(w, &x, 4); }
static inline void gw_u64(struct gw *w, uint64_t x) { gw_bytes(w, &x, 8); }
static inline void gw_f32(struct gw *w, float x) { gw_bytes(w, &x, 4); }
static inline void gw_f64(struct gw *w, double x) { gw_bytes(w, &x, 8); }
/* a GGUF string: u64 length + bytes */
static inline void gw_strn(struct gw *w, const char *s, size_t n) { gw_u64(w, n); gw_bytes(w, s, n); }
static inline void gw_str(struct gw *w, const char *s) { gw_strn(w, s, strlen(s)); }

static inline void gw_header(struct gw *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gw_bytes(w, "GGUF", 4);
    gw_u32(w, version);
    gw_u64(w, n_tensors);
    gw_u64(w, n_kv);
}

/* A metadata key and its value type; the caller writes the value. */
static inline void gw_key(struct gw *w, const char *key, uint32_t type) { gw_str(w, key); gw_u32(w, type); }
/* An array header: element type and count; the caller writes the elements. */
static inline void gw_arr(struct gw *w, uint32_t elem_type, uint64_t n) { gw_u32(w, elem_type); gw_u64(w, n); }

/* A tensor info: ne[] innermost first, as GGUF stores it. */
static inline void gw_tensor(struct gw *w, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t ggml_type,
                             uint64_t offset)
{
    gw_str(w, name);
    gw_u32(w, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        gw_u64(w, ne[d]);
    gw_u32(w, ggml_type);
    gw_u64(w, offset);
}

static inline void gw_zeros(struct gw *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gw_u8(w, 0);
}

/* Zero bytes up to the next multiple of align. */
static inline void gw_pad(struct gw *w, size_t align) { gw_zeros(w, (align - w->len % align) % align); }

/* Write the first n bytes (all when n == SIZE_MAX) to path; 0 on success. */
static inline int gw_save_prefix(const struct gw *w, const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    if (n > w->len)
        n = w->len;
    size_t k = n ? fwrite(w->buf, 1, n, f) : 0;
    return (fclose(f) == 0 && k == n) ? 0 : -1;
}

static inline int gw_save(const struct gw *w, const char *path) { return gw_save_prefix(w, path, SIZE_MAX); }

#endif
