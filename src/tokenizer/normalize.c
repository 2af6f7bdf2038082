/* tokenizer/normalize.c — UTF-8 validation and repair, and the normalizer steps
 * (Unicode NF* forms with utf8proc, lowercase, prepend, literal replace, strip,
 * prefix space) applied to each text fragment before pre-tokenization.
 *
 * Repair follows the Unicode "maximal subpart" practice, which is what
 * Python's bytes.decode("utf-8", "replace") and Rust's from_utf8_lossy do: each
 * maximal prefix of a well-formed sequence that cannot be completed becomes
 * one U+FFFD.
 *
 * NF* forms only touch non-ASCII text (NFC: nothing below U+0300), so the text
 * is normalized in chunks: ASCII runs are copied, and each non-ASCII run,
 * together with the character before it (which may compose with a following
 * mark), goes through utf8proc. ASCII characters never compose with or reorder
 * against their neighbours, so chunk borders before them are safe.
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/log.h"
#include "tokenizer/tok_internal.h"

static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    bool truncated;
    return utf8_next(s, n, bad, &truncated);
}

size_t utf8_next(const unsigned char *s, size_t n, size_t *bad, bool *truncated)
{
    *truncated = false;
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) { need = 2; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) need = 2;
    else if (c == 0xED) { need = 2; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) need = 2;
    else if (c == 0xF0) { need = 3; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else if (c == 0xF4) { need = 3; hi = 0x8F; }
    else { *bad = 1; return 0; }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n) { *bad = i; *truncated = true; return 0; }
        unsigned char d = s[i];
        unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (d < l || d > h) { *bad = i; return 0; }
    }
    return need + 1;
}

bool utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        /* skip ASCII eight bytes at a time */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        size_t bad, k = utf8_seq(s + i, len - i, &bad);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

int utf8_repair(const char *str, size_t len, struct tok_buf *out)
{
    const unsigned char *s = (const unsigned char *)str;
    out->len = 0;
    if (tok_buf_reserve(out, len + len / 2 + 4) != 0)
        return -1;
    size_t i = 0;
    while (i < len) {
        size_t bad, k = utf8_seq(s + i, len - i, &bad);
        if (k) {
            if (tok_buf_append(out, s + i, k) != 0)
                return -1;
            i += k;
        } else {
            if (tok_buf_append(out, "\xEF\xBF\xBD", 3) != 0)
                return -1;
            i += bad;
        }
    }
    return 0;
}

/* True when NFC leaves s unchanged whatever surrounds it: no character has a
 * decomposition, a non-zero combining class, or composes as the second of a
 * pair, and none is Hangul (composed by rule, not by table). Most CJK, emoji
 * and many other scripts pass, and skip utf8proc. */
static bool nfc_inert(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0)
            return false;
        i += (size_t)k;
        if (cp < 0x80)
            continue;
        if ((cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0xAC00 && cp <= 0xD7A3))
            return false;
        const utf8proc_property_t *p = utf8proc_get_property(cp);
        if (p->decomp_seqindex != UINT16_MAX || p->combining_class != 0 ||
            (p->comb_index != UINT16_MAX && p->comb_index >= 0x8000))
            return false;
    }
    return true;
}

/* One NF* form over s into out (appended). */
static int nf_chunked(const char *s, size_t n, utf8proc_option_t opts, unsigned char threshold,
                      struct tok_buf *out)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && (unsigned char)s[j] < threshold)
            j++;
        if (j == n)
            return tok_buf_append(out, s + i, n - i);
        /* back up to the start of the previous character */
        size_t st = j;
        if (st > i) {
            st--;
            while (st > i && ((unsigned char)s[st] & 0xC0) == 0x80)
                st--;
        }
        if (tok_buf_append(out, s + i, st - i) != 0)
            return -1;
        size_t e = j;
        while (e < n && (unsigned char)s[e] >= 0x80)
            e++;
        if (threshold == 0xCC && nfc_inert(s + st, e - st)) {
            if (tok_buf_append(out, s + st, e - st) != 0)
                return -1;
            i = e;
            continue;
        }
        utf8proc_uint8_t *res = NULL;
        utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s + st, (utf8proc_ssize_t)(e - st), &res, opts);
        if (r < 0) { /* cannot happen on repaired input; keep the text as it is */
            free(res);
            if (tok_buf_append(out, s + st, e - st) != 0)
                return -1;
        } else {
            int rc = tok_buf_append(out, res, (size_t)r);
            free(res);
            if (rc != 0)
                return -1;
        }
        i = e;
    }
    return 0;
}

static bool is_space_cp(utf8proc_int32_t c)
{
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85)
        return true;
    utf8proc_category_t cat = utf8proc_category(c);
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

static int lowercase(const char *s, size_t n, struct tok_buf *out)
{
    if (tok_buf_reserve(out, out->len + n + 1) != 0)
        return -1;
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            char l = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            if (tok_buf_append(out, &l, 1) != 0)
                return -1;
            i++;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) { k = 1; cp = 0xFFFD; }
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t el = utf8proc_encode_char(utf8proc_tolower(cp), enc);
        if (tok_buf_append(out, enc, (size_t)el) != 0)
            return -1;
        i += (size_t)k;
    }
    return 0;
}

static int replace_literal(const char *s, size_t n, const char *a, size_t al, const char *b, size_t bl,
                           struct tok_buf *out)
{
    if (al == 0)
        return tok_buf_append(out, s, n);
    size_t i = 0;
    while (i < n) {
        const char *hit = al <= n - i ? memmem(s + i, n - i, a, al) : NULL;
        if (!hit)
            return tok_buf_append(out, s + i, n - i);
        size_t h = (size_t)(hit - s);
        if (tok_buf_append(out, s + i, h - i) != 0 || tok_buf_append(out, b, bl) != 0)
            return -1;
        i = h + al;
    }
    return 0;
}

int normalize_fragment(const struct tok_model *m, const char *s, size_t len, bool at_start,
                       bool after_special, struct tok_buf *b1, struct tok_buf *b2,
                       const char **out_p, size_t *out_len, char *err, size_t errlen)
{
    (void)after_special;
    const char *cur = s;
    size_t n = len;
    struct tok_buf *bufs[2] = {b1, b2};
    int which = 0;
    for (uint32_t k = 0; k < m->n_norm; k++) {
        const struct tok_norm_step *st = &m->norm[k];
        struct tok_buf *o = bufs[which];
        o->len = 0;
        int rc = 0;
        switch (st->op) {
        case NORM_NFC:
            rc = nf_chunked(cur, n, UTF8PROC_STABLE | UTF8PROC_COMPOSE, 0xCC, o);
            break;
        case NORM_NFD:
            rc = nf_chunked(cur, n, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, 0x80, o);
            break;
        case NORM_NFKC:
            rc = nf_chunked(cur, n, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, 0x80, o);
            break;
        case NORM_NFKD:
            rc = nf_chunked(cur, n, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, 0x80, o);
            break;
        case NORM_LOWERCASE:
            rc = lowercase(cur, n, o);
            break;
        case NORM_PREPEND:
            if (n == 0)
                continue;
            rc = tok_buf_append(o, st->a, st->a_len) || tok_buf_append(o, cur, n);
            break;
        case NORM_REPLACE:
            if (st->a_len == 0 || n < st->a_len || !memmem(cur, n, st->a, st->a_len))
                continue;
            rc = replace_literal(cur, n, st->a, st->a_len, st->b, st->b_len, o);
            break;
        case NORM_STRIP: {
            size_t a = 0, e = n;
            if (st->mode & 1)
                while (a < e) {
                    utf8proc_int32_t cp;
                    utf8proc_ssize_t kk = utf8proc_iterate((const utf8proc_uint8_t *)cur + a, (utf8proc_ssize_t)(e - a), &cp);
                    if (kk <= 0 || !is_space_cp(cp))
                        break;
                    a += (size_t)kk;
                }
            if (st->mode & 2)
                while (e > a) {
                    size_t p = e - 1;
                    while (p > a && ((unsigned char)cur[p] & 0xC0) == 0x80)
                        p--;
                    utf8proc_int32_t cp;
                    utf8proc_ssize_t kk = utf8proc_iterate((const utf8proc_uint8_t *)cur + p, (utf8proc_ssize_t)(e - p), &cp);
                    if (kk <= 0 || !is_space_cp(cp))
                        break;
                    e = p;
                }
            if (a > 0) /* HF: the text no longer starts at offset 0, so "first" prepends stop applying */
                at_start = false;
            cur += a;
            n = e - a;
            continue;
        }
        case NORM_PREFIX_SPACE:
            if (st->mode == PREPEND_FIRST && !at_start)
                continue;
            if (!st->unconditional && n >= st->a_len && memcmp(cur, st->a, st->a_len) == 0)
                continue;
            rc = tok_buf_append(o, st->a, st->a_len) || tok_buf_append(o, cur, n);
            break;
        }
        if (rc != 0)
            return err_set(err, errlen, "tokenizer: out of memory normalizing %zu bytes", n);
        if (o->len > (size_t)UINT32_MAX / 2)
            return err_set(err, errlen, "tokenizer: normalized text too long (%zu bytes)", o->len);
        cur = o->p;
        n = o->len;
        which ^= 1;
    }
    *out_p = cur;
    *out_len = n;
    return 0;
}
