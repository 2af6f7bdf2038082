/* api/api_util.c — UTF-8 sanitizing and JSON output helpers; see api_util.h. */
#include "api/api_util.h"

#include "api/api_response.h"

#include <stdlib.h>
#include <string.h>

size_t api_utf8_seq_len(const unsigned char *s, size_t len, size_t *bad_len)
{
    unsigned char b0 = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (b0 < 0x80)
        return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 3;
        if (b0 == 0xE0)
            lo = 0xA0;
        else if (b0 == 0xED)
            hi = 0x9F; /* no UTF-16 surrogates */
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 4;
        if (b0 == 0xF0)
            lo = 0x90;
        else if (b0 == 0xF4)
            hi = 0x8F; /* ≤ U+10FFFF */
    } else {
        *bad_len = 1;
        return 0;
    }
    size_t i = 1;
    for (; i < need; i++) {
        unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
        if (i >= len || s[i] < lo_i || s[i] > hi_i)
            break;
    }
    if (i == need)
        return need;
    *bad_len = i; /* the valid prefix is the maximal invalid subpart */
    return 0;
}

size_t api_utf8_sanitize(const char *in, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t bad = 0, n = api_utf8_seq_len(s + i, len - i, &bad);
        if (n) {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += bad;
        }
    }
    out[o] = '\0';
    return o;
}

size_t api_utf8_count(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

json_t *api_json_string_bytes(const char *s, size_t len)
{
    if (!s || !len)
        return json_string("");
    json_t *v = json_stringn_nocheck(s, len);
    if (!v)
        return NULL;
    /* fast path: already valid (json_stringn validates; nocheck + one scan is cheaper) */
    const unsigned char *u = (const unsigned char *)s;
    size_t bad;
    for (size_t i = 0; i < len;) {
        size_t n = api_utf8_seq_len(u + i, len - i, &bad);
        if (!n)
            goto slow;
        i += n;
    }
    return v;
slow:
    json_decref(v);
    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    char *tmp = malloc(3 * len + 1);
    if (!tmp)
        return NULL;
    size_t n = api_utf8_sanitize(s, len, tmp);
    v = json_stringn_nocheck(tmp, n);
    free(tmp);
    return v;
}

char *api_json_dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(9));
}
