/* format/gguf.c — the GGUF reader (versions 2 and 3).
 *
 * Layout (all little-endian):
 *   "GGUF" u32 version  u64 n_tensors  u64 n_kv
 *   n_kv × { string key, u32 value_type, value }
 *   n_tensors × { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
 *   padding to general.alignment (default 32), then the data section; a
 *   tensor's offset is relative to the data section's start.
 *   string = u64 length + bytes (no NUL); array = u32 elem_type, u64 n, elems
 *   (an array of arrays holds n values that each start with their own type).
 *
 * The file is untrusted: every read is checked against the bytes left, every
 * count is refused before allocating when it exceeds MF_MAX_* or when
 * count × (smallest possible entry) exceeds the bytes left, shapes and byte
 * sizes are overflow-checked, and every tensor's byte range must lie inside the
 * file. Tensors may overlap (ggml's writer never makes such files, but nothing
 * here depends on it). Keys and tensor names must be valid UTF-8 without NULs,
 * because they become C strings and hash keys; string values are kept as given
 * (a vocabulary may hold any bytes) with their length.
 *
 * Speed: scalar arrays are copied with one memcpy; a string array (a 150k-token
 * vocabulary) costs one arena copy per string, no per-string malloc.
 *
 * ne[] is innermost first in GGUF; shapes are stored outermost first here.
 */
#include "format/model_file.h"
#include "core/checked.h"
#include "core/log.h"

#include <stdio.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the GGUF reader assumes a little-endian host");
_Static_assert(sizeof(bool) == 1, "GGUF BOOL arrays are stored as bool");

#define GGUF_MAX_DIMS 4 /* ggml's GGML_MAX_DIMS */
#define GGUF_DEFAULT_ALIGNMENT 32
/* smallest encodings, for "count × minimum > bytes left" checks */
#define GGUF_MIN_KV_BYTES (8 + 4 + 1)         /* key length, type, a one-byte value */
#define GGUF_MIN_TENSOR_BYTES (8 + 4 + 4 + 8) /* name length, n_dims, type, offset */

struct gguf_reader {
    const uint8_t *base; /* (size) the mapped file */
    uint64_t size;
    uint64_t pos;
    const char *path;
    struct arena *arena;
    char *err;
    size_t errlen;
    const char *ctx; /* what is being read, for messages: "metadata key 'x'" */
    char ctx_buf[160];
};

static uint64_t left(const struct gguf_reader *r) { return r->size - r->pos; }

static int fail(struct gguf_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct gguf_reader *r, const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (r->ctx)
        return err_set(r->err, r->errlen, "%s: %s: %s", r->path, r->ctx, what);
    return err_set(r->err, r->errlen, "%s: %s", r->path, what);
}

/* Take n bytes at the cursor; what names them in the truncation message. */
static int take(struct gguf_reader *r, uint64_t n, const char *what, const uint8_t **out)
{
    *out = NULL;
    if (n > left(r))
        return fail(r, "truncated: %s needs %llu bytes at offset %llu, only %llu left", what,
                    (unsigned long long)n, (unsigned long long)r->pos, (unsigned long long)left(r));
    *out = r->base + r->pos;
    r->pos += n;
    return 0;
}

static int read_u32(struct gguf_reader *r, const char *what, uint32_t *out)
{
    const uint8_t *p;
    if (take(r, 4, what, &p))
        return -1;
    memcpy(out, p, 4);
    return 0;
}

static int read_u64(struct gguf_reader *r, const char *what, uint64_t *out)
{
    const uint8_t *p;
    if (take(r, 8, what, &p))
        return -1;
    memcpy(out, p, 8);
    return 0;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const uint8_t *s, uint64_t n)
{
    uint64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t need, cp, min;
        if ((c & 0xe0) == 0xc0) {
            need = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            need = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            need = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (n - i <= need)
            return false;
        for (uint32_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += need + 1;
    }
    return true;
}

/* A string value: any bytes, bounded by the bytes left. */
static int read_str(struct gguf_reader *r, struct mf_str *out)
{
    uint64_t len;
    const uint8_t *p;
    if (read_u64(r, "string length", &len))
        return -1;
    if (len > left(r))
        return fail(r, "string length %llu at offset %llu runs past the end of the file (%llu bytes left)",
                    (unsigned long long)len, (unsigned long long)(r->pos - 8), (unsigned long long)left(r));
    if (take(r, len, "string", &p))
        return -1;
    char *s = arena_strndup(r->arena, (const char *)p, (size_t)len);
    if (!s)
        return fail(r, "out of memory");
    out->ptr = s;
    out->len = len;
    return 0;
}

/* A key or tensor name: at most MF_MAX_NAME_LEN bytes of UTF-8, no NUL. */
static int read_name(struct gguf_reader *r, const char *what, const char **out)
{
    uint64_t len;
    const uint8_t *p;
    if (read_u64(r, what, &len))
        return -1;
    if (len == 0)
        return fail(r, "empty %s at offset %llu", what, (unsigned long long)(r->pos - 8));
    if (len > MF_MAX_NAME_LEN)
        return fail(r, "%s length %llu at offset %llu exceeds the limit of %u bytes", what,
                    (unsigned long long)len, (unsigned long long)(r->pos - 8), MF_MAX_NAME_LEN);
    if (take(r, len, what, &p))
        return -1;
    if (memchr(p, 0, (size_t)len))
        return fail(r, "%s at offset %llu contains a NUL byte", what, (unsigned long long)(r->pos - len));
    if (!utf8_valid(p, len))
        return fail(r, "%s at offset %llu is not valid UTF-8", what, (unsigned long long)(r->pos - len));
    char *s = arena_strndup(r->arena, (const char *)p, (size_t)len);
    if (!s)
        return fail(r, "out of memory");
    *out = s;
    return 0;
}

/* n strings into s[n]: a first pass checks every length against the bytes
 * left and sums them, so all copies go into one arena block (a 262k-token
 * vocabulary with 500k merges is one allocation, not 770k). */
static int read_str_array(struct gguf_reader *r, uint64_t n, struct mf_str *s)
{
    uint64_t pos = r->pos, total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len;
        if (r->size - pos < 8) {
            r->pos = pos;
            return fail(r, "truncated: string %llu of %llu needs 8 bytes at offset %llu, only %llu left",
                        (unsigned long long)i, (unsigned long long)n, (unsigned long long)pos,
                        (unsigned long long)(r->size - pos));
        }
        memcpy(&len, r->base + pos, 8);
        pos += 8;
        if (len > r->size - pos)
            return fail(r, "string %llu of %llu: length %llu at offset %llu runs past the end of the file "
                           "(%llu bytes left)", (unsigned long long)i, (unsigned long long)n,
                        (unsigned long long)len, (unsigned long long)(pos - 8), (unsigned long long)(r->size - pos));
        pos += len;
        total += len + 1; /* ≤ 2 × file size: the lengths fit in the file */
    }
    char *buf = arena_alloc(r->arena, (size_t)total);
    if (!buf)
        return fail(r, "out of memory for %llu bytes of strings", (unsigned long long)total);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len;
        memcpy(&len, r->base + r->pos, 8);
        memcpy(buf, r->base + r->pos + 8, (size_t)len);
        buf[len] = '\0';
        s[i].ptr = buf;
        s[i].len = len;
        buf += len + 1;
        r->pos += 8 + len;
    }
    return 0;
}

/* Bytes of one element in the file (the minimum for STR and ARR). */
static uint64_t vt_min_file_bytes(enum mf_vtype t)
{
    switch (t) {
    case MF_VT_U8: case MF_VT_I8: case MF_VT_BOOL: return 1;
    case MF_VT_U16: case MF_VT_I16: return 2;
    case MF_VT_U32: case MF_VT_I32: case MF_VT_F32: return 4;
    case MF_VT_U64: case MF_VT_I64: case MF_VT_F64: return 8;
    case MF_VT_STR: return 8;      /* length, empty string */
    case MF_VT_ARR: return 4 + 8;  /* element type, count, no elements */
    default: return 1;
    }
}

/* Bytes of one element in memory (see struct mf_value's arr.data). */
static size_t vt_mem_bytes(enum mf_vtype t)
{
    if (t == MF_VT_STR)
        return sizeof(struct mf_str);
    if (t == MF_VT_ARR)
        return sizeof(struct mf_value);
    if (t == MF_VT_BOOL)
        return sizeof(bool);
    return (size_t)vt_min_file_bytes(t);
}

static int read_value(struct gguf_reader *r, enum mf_vtype type, int depth, struct mf_value *out);

/* An array body: element type, count, elements. depth counts enclosing arrays. */
static int read_array(struct gguf_reader *r, int depth, struct mf_value *out)
{
    uint32_t et;
    uint64_t n;
    if (read_u32(r, "array element type", &et) || read_u64(r, "array length", &n))
        return -1;
    if (et >= MF_VT_COUNT)
        return fail(r, "unknown array element type %u at offset %llu", et, (unsigned long long)(r->pos - 12));
    if (et == MF_VT_ARR && depth + 1 >= MF_MAX_NESTING)
        return fail(r, "arrays nested deeper than %d levels", MF_MAX_NESTING);
    uint64_t min = vt_min_file_bytes((enum mf_vtype)et);
    if (n > left(r) / min)
        return fail(r, "array of %llu %s elements at offset %llu cannot fit in the %llu bytes left",
                    (unsigned long long)n, mf_vtype_name((enum mf_vtype)et), (unsigned long long)(r->pos - 12),
                    (unsigned long long)left(r));
    out->type = MF_VT_ARR;
    out->v.arr.type = (enum mf_vtype)et;
    out->v.arr.n = n;
    out->v.arr.data = NULL;
    if (n == 0)
        return 0;
    size_t esz = vt_mem_bytes((enum mf_vtype)et);
    /* n ≤ file size, and esz ≤ 4 × the element's file bytes: no overflow */
    void *data = arena_alloc(r->arena, (size_t)n * esz);
    if (!data)
        return fail(r, "out of memory for an array of %llu elements", (unsigned long long)n);
    out->v.arr.data = data;
    if (et == MF_VT_STR) {
        if (read_str_array(r, n, data))
            return -1;
    } else if (et == MF_VT_ARR) {
        struct mf_value *v = data;
        for (uint64_t i = 0; i < n; i++)
            if (read_array(r, depth + 1, &v[i]))
                return -1;
    } else if (et == MF_VT_BOOL) {
        const uint8_t *p;
        if (take(r, n, "array", &p))
            return -1;
        bool *b = data;
        for (uint64_t i = 0; i < n; i++)
            b[i] = p[i] != 0;
    } else {
        const uint8_t *p;
        if (take(r, n * esz, "array", &p))
            return -1;
        memcpy(data, p, (size_t)(n * esz));
    }
    return 0;
}

static int read_value(struct gguf_reader *r, enum mf_vtype type, int depth, struct mf_value *out)
{
    const uint8_t *p;
    out->type = type;
    switch (type) {
    case MF_VT_U8: case MF_VT_I8: case MF_VT_BOOL: {
        if (take(r, 1, "value", &p))
            return -1;
        if (type == MF_VT_U8)
            out->v.u64 = p[0];
        else if (type == MF_VT_I8)
            out->v.i64 = (int8_t)p[0];
        else
            out->v.b = p[0] != 0;
        return 0;
    }
    case MF_VT_U16: case MF_VT_I16: {
        uint16_t x;
        if (take(r, 2, "value", &p))
            return -1;
        memcpy(&x, p, 2);
        if (type == MF_VT_U16)
            out->v.u64 = x;
        else
            out->v.i64 = (int16_t)x;
        return 0;
    }
    case MF_VT_U32: case MF_VT_I32: case MF_VT_F32: {
        uint32_t x;
        if (take(r, 4, "value", &p))
            return -1;
        memcpy(&x, p, 4);
        if (type == MF_VT_U32) {
            out->v.u64 = x;
        } else if (type == MF_VT_I32) {
            out->v.i64 = (int32_t)x;
        } else {
            float f;
            memcpy(&f, &x, 4);
            out->v.f64 = f;
        }
        return 0;
    }
    case MF_VT_U64: case MF_VT_I64: case MF_VT_F64: {
        uint64_t x;
        if (take(r, 8, "value", &p))
            return -1;
        memcpy(&x, p, 8);
        if (type == MF_VT_U64)
            out->v.u64 = x;
        else if (type == MF_VT_I64)
            out->v.i64 = (int64_t)x;
        else
            memcpy(&out->v.f64, &x, 8);
        return 0;
    }
    case MF_VT_STR:
        return read_str(r, &out->v.str);
    case MF_VT_ARR:
        return read_array(r, depth, out);
    default:
        return fail(r, "unknown value type %u", (unsigned)type);
    }
}

/* Describe a file that is not GGUF by its first bytes. */
static int not_gguf(struct gguf_reader *r)
{
    const uint8_t *p = r->base;
    uint64_t n = r->size;
    /* the pre-GGUF formats wrote a u32 magic: 'ggml', 'ggmf', 'ggjt', 'ggla' */
    if (n >= 4 && (memcmp(p, "lmgg", 4) == 0 || memcmp(p, "fmgg", 4) == 0 || memcmp(p, "tjgg", 4) == 0 ||
                   memcmp(p, "algg", 4) == 0))
        return fail(r, "not a GGUF file: an older GGML/GGJT file (magic '%c%c%c%c'); convert it to GGUF", p[3], p[2],
                    p[1], p[0]);
    if (n >= 4 && memcmp(p, "PK\x03\x04", 4) == 0)
        return fail(r, "not a GGUF file (magic 50 4b 03 04): a zip archive, e.g. a PyTorch .bin/.pt checkpoint");
    if (n >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5)
        return fail(r, "not a GGUF file (magic %02x %02x): a Python pickle, e.g. a PyTorch checkpoint", p[0], p[1]);
    if (n >= 9) {
        uint64_t hlen;
        memcpy(&hlen, p, 8);
        if (hlen > 0 && hlen <= n - 8 && p[8] == '{')
            return fail(r, "not a GGUF file: looks like a safetensors file (8-byte header length, then JSON); "
                           "name it *.safetensors");
    }
    uint64_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
        i++;
    if (i < n && (p[i] == '{' || p[i] == '['))
        return fail(r, "not a GGUF file: looks like JSON text");
    char hex[4 * 3 + 1] = "";
    char txt[5] = "";
    uint64_t k = n < 4 ? n : 4;
    for (uint64_t j = 0; j < k; j++) {
        snprintf(hex + 3 * j, 4, j + 1 < k ? "%02x " : "%02x", p[j]);
        txt[j] = (p[j] >= 0x20 && p[j] < 0x7f) ? (char)p[j] : '.';
    }
    txt[k] = '\0';
    if (n < 4)
        return fail(r, "not a GGUF file: only %llu bytes", (unsigned long long)n);
    return fail(r, "not a GGUF file (magic %s '%s', expected 47 47 55 46 'GGUF')", hex, txt);
}

static int read_header(struct gguf_reader *r, struct model_file *mf, uint64_t *n_tensors, uint64_t *n_kvs)
{
    if (r->size < 4 || memcmp(r->base, "GGUF", 4) != 0)
        return not_gguf(r);
    r->pos = 4;
    uint32_t version;
    if (read_u32(r, "version", &version))
        return -1;
    if (version == 1)
        return fail(r, "GGUF version 1 is not supported (only versions 2 and 3); re-convert the model");
    if (version != 2 && version != 3) {
        if (version >= 0x01000000u && (version & 0xffffu) == 0)
            return fail(r, "GGUF version %u looks byte-swapped: a big-endian GGUF is not supported", version);
        return fail(r, "unsupported GGUF version %u (only versions 2 and 3)", version);
    }
    mf->gguf_version = version;
    if (read_u64(r, "tensor count", n_tensors) || read_u64(r, "metadata count", n_kvs))
        return -1;
    if (*n_tensors > MF_MAX_TENSORS)
        return fail(r, "tensor count %llu exceeds the limit of %u", (unsigned long long)*n_tensors, MF_MAX_TENSORS);
    if (*n_kvs > MF_MAX_KVS)
        return fail(r, "metadata count %llu exceeds the limit of %u", (unsigned long long)*n_kvs, MF_MAX_KVS);
    /* both are ≤ 2^20 here, so the products cannot overflow */
    if (*n_kvs * GGUF_MIN_KV_BYTES + *n_tensors * GGUF_MIN_TENSOR_BYTES > left(r))
        return fail(r, "%llu metadata entries and %llu tensors cannot fit in the %llu bytes left",
                    (unsigned long long)*n_kvs, (unsigned long long)*n_tensors, (unsigned long long)left(r));
    return 0;
}

static int read_kvs(struct gguf_reader *r, struct model_file *mf, uint64_t n)
{
    mf->kvs = n ? arena_alloc(r->arena, (size_t)n * sizeof(struct mf_kv)) : NULL;
    if (n && !mf->kvs)
        return fail(r, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        struct mf_kv *kv = &mf->kvs[i];
        snprintf(r->ctx_buf, sizeof(r->ctx_buf), "metadata entry %llu", (unsigned long long)i);
        r->ctx = r->ctx_buf;
        if (read_name(r, "key", &kv->key))
            return -1;
        snprintf(r->ctx_buf, sizeof(r->ctx_buf), "metadata key '%.100s'", kv->key);
        uint32_t type;
        if (read_u32(r, "value type", &type))
            return -1;
        if (type >= MF_VT_COUNT)
            return fail(r, "unknown value type %u", type);
        if (read_value(r, (enum mf_vtype)type, 0, &kv->value))
            return -1;
        mf->n_kvs = i + 1;
    }
    r->ctx = NULL;
    return 0;
}

/* general.alignment: any integer type, a power of two; default 32. */
static int find_alignment(struct gguf_reader *r, const struct model_file *mf, uint64_t *out)
{
    *out = GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < mf->n_kvs; i++) {
        if (strcmp(mf->kvs[i].key, "general.alignment") != 0)
            continue;
        const struct mf_value *v = &mf->kvs[i].value;
        uint64_t a;
        switch (v->type) {
        case MF_VT_U8: case MF_VT_U16: case MF_VT_U32: case MF_VT_U64: a = v->v.u64; break;
        case MF_VT_I8: case MF_VT_I16: case MF_VT_I32: case MF_VT_I64:
            if (v->v.i64 <= 0)
                return fail(r, "general.alignment %lld is not a power of two", (long long)v->v.i64);
            a = (uint64_t)v->v.i64;
            break;
        default:
            return fail(r, "general.alignment has type %s, expected an integer", mf_vtype_name(v->type));
        }
        if (a == 0 || (a & (a - 1)) != 0)
            return fail(r, "general.alignment %llu is not a power of two", (unsigned long long)a);
        *out = a;
        return 0;
    }
    return 0;
}

/* Tensor infos; offsets are checked later, once the data section is known.
 * offsets[i] receives tensor i's offset relative to the data section. */
static int read_tensor_infos(struct gguf_reader *r, struct model_file *mf, uint64_t n, uint64_t *offsets)
{
    for (uint64_t i = 0; i < n; i++) {
        struct mf_tensor *t = &mf->tensors[i];
        snprintf(r->ctx_buf, sizeof(r->ctx_buf), "tensor %llu", (unsigned long long)i);
        r->ctx = r->ctx_buf;
        if (read_name(r, "tensor name", &t->name))
            return -1;
        snprintf(r->ctx_buf, sizeof(r->ctx_buf), "tensor '%.100s'", t->name);
        uint32_t n_dims, type;
        if (read_u32(r, "dimension count", &n_dims))
            return -1;
        if (n_dims > GGUF_MAX_DIMS)
            return fail(r, "%u dimensions, GGUF allows at most %d", n_dims, GGUF_MAX_DIMS);
        uint64_t ne[GGUF_MAX_DIMS] = {1, 1, 1, 1};
        uint64_t n_el = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            if (read_u64(r, "dimension", &ne[d]))
                return -1;
            if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX)
                return fail(r, "dimension %u is %lld, must be > 0", d, (long long)ne[d]);
            if (checked_mul_u64(n_el, ne[d], &n_el) || n_el > (uint64_t)INT64_MAX)
                return fail(r, "element count overflows (dimension %u is %llu)", d, (unsigned long long)ne[d]);
        }
        if (read_u32(r, "tensor type", &type))
            return -1;
        if (!dtype_from_ggml(type, &t->dtype))
            return fail(r, "unknown ggml tensor type id %u", type);
        uint64_t row_bytes, n_bytes;
        if (ne[0] % dtype_info(t->dtype)->block_size != 0)
            return fail(r, "row length %llu is not a multiple of %s's block size %u", (unsigned long long)ne[0],
                        dtype_name(t->dtype), dtype_info(t->dtype)->block_size);
        if (dtype_row_bytes(t->dtype, ne[0], &row_bytes) || checked_mul_u64(row_bytes, n_el / ne[0], &n_bytes))
            return fail(r, "byte size overflows");
        if (read_u64(r, "data offset", &offsets[i]))
            return -1;
        t->n_dims = n_dims;
        for (uint32_t d = 0; d < MF_MAX_DIMS; d++)
            t->shape[d] = 1;
        for (uint32_t d = 0; d < n_dims; d++)
            t->shape[d] = ne[n_dims - 1 - d]; /* outermost first */
        t->n_elements = n_el;
        t->n_bytes = n_bytes;
        t->file_index = 0;
        mf->n_tensors = i + 1;
    }
    r->ctx = NULL;
    return 0;
}

static int place_tensors(struct gguf_reader *r, struct model_file *mf, const uint64_t *offsets, uint64_t align)
{
    uint64_t data_start;
    if (checked_add_u64(r->pos, align - 1, &data_start))
        return fail(r, "data section offset overflows");
    data_start &= ~(align - 1);
    for (uint64_t i = 0; i < mf->n_tensors; i++) {
        struct mf_tensor *t = &mf->tensors[i];
        uint64_t begin, end;
        if (offsets[i] % align != 0)
            return fail(r, "tensor '%s': data offset %llu is not a multiple of the alignment %llu", t->name,
                        (unsigned long long)offsets[i], (unsigned long long)align);
        if (checked_add_u64(data_start, offsets[i], &begin) || checked_add_u64(begin, t->n_bytes, &end) ||
            end > r->size)
            return fail(r, "tensor '%s': data [offset %llu + %llu bytes] runs past the end of the file "
                           "(data section at %llu, file %llu bytes)",
                        t->name, (unsigned long long)offsets[i], (unsigned long long)t->n_bytes,
                        (unsigned long long)data_start, (unsigned long long)r->size);
        t->data = r->base + begin;
    }
    return 0;
}

int gguf_open(struct model_file *mf, const char *path, char *err, size_t errlen)
{
    mf->format = MF_FORMAT_GGUF;
    if (model_file_map_one(mf, path, err, errlen))
        return -1;

    struct gguf_reader r = {
        .base = mf->files[0].data, .size = mf->files[0].size, .pos = 0, .path = path,
        .arena = &mf->arena, .err = err, .errlen = errlen, .ctx = NULL,
    };
    uint64_t n_tensors, n_kvs, align;
    if (read_header(&r, mf, &n_tensors, &n_kvs) || read_kvs(&r, mf, n_kvs) || find_alignment(&r, mf, &align))
        return -1;
    mf->gguf_alignment = align;
    uint64_t *offsets = NULL;
    if (n_tensors) {
        mf->tensors = arena_alloc(&mf->arena, (size_t)n_tensors * sizeof(struct mf_tensor));
        offsets = arena_alloc(&mf->arena, (size_t)n_tensors * sizeof(uint64_t));
        if (!mf->tensors || !offsets)
            return fail(&r, "out of memory for %llu tensors", (unsigned long long)n_tensors);
    }
    if (read_tensor_infos(&r, mf, n_tensors, offsets) || place_tensors(&r, mf, offsets, align))
        return -1;
    return model_file_build_index(mf, err, errlen);
}
