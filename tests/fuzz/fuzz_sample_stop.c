/* fuzz_sample_stop.c — differential libFuzzer target for the stop-string
 * matcher: the input picks up to 4 stop strings, a stream text and a way to cut
 * it into pieces; the text emitted by the streamed run (plus the final flush
 * when no stop was found) must equal a brute-force whole-text search (first end
 * position, longest stop on a tie) and the one-piece run. Traps on a mismatch.
 *
 * Input: byte 0 = number of stops (mod 5); per stop a length byte (mod 16, +1)
 * and its bytes (NUL becomes 'a'); one byte seeding the piece lengths; the rest
 * is the text. Seeds in tests/fuzz/corpus/fuzz_sample_stop/. */
#include "sample/sample.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t reference(const char *text, size_t len, char stops[][17], int n)
{
    for (size_t end = 1; end <= len; end++) {
        size_t best = 0;
        for (int i = 0; i < n; i++) {
            size_t sl = strlen(stops[i]);
            if (sl <= end && memcmp(text + end - sl, stops[i], sl) == 0 && sl > best)
                best = sl;
        }
        if (best)
            return end - best;
    }
    return len;
}

/* Stream text through m in pieces whose lengths come from seed; output to out. */
static size_t run(struct stop_matcher *m, const char *text, size_t len, unsigned seed, char *out)
{
    stop_matcher_reset(m);
    size_t pos = 0, o = 0;
    int matched = 0;
    while (pos < len || (len == 0 && pos == 0 && !o)) {
        size_t piece = seed ? (seed = seed * 1103515245u + 12345u, (seed >> 16) % 8) : len - pos;
        if (piece > len - pos)
            piece = len - pos;
        const char *p;
        size_t plen;
        int rc = stop_matcher_feed(m, text + pos, piece, &p, &plen);
        if (rc < 0)
            abort();
        memcpy(out + o, p, plen);
        o += plen;
        pos += piece;
        if (rc == 1) {
            matched = 1;
            break;
        }
        if (len == 0)
            break;
    }
    if (!matched) {
        const char *p;
        size_t plen;
        stop_matcher_flush(m, &p, &plen);
        memcpy(out + o, p, plen);
        o += plen;
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t at = 0;
    int n = data[at++] % 5;
    char stops[4][17];
    const char *ptrs[4];
    for (int i = 0; i < n; i++) {
        if (at >= size)
            return 0;
        size_t sl = data[at++] % 16 + 1;
        if (at + sl > size)
            return 0;
        for (size_t k = 0; k < sl; k++)
            stops[i][k] = data[at + k] ? (char)data[at + k] : 'a';
        stops[i][sl] = 0;
        ptrs[i] = stops[i];
        at += sl;
    }
    if (at >= size)
        return 0;
    unsigned seed = data[at++] | 1u;
    const char *text = (const char *)data + at;
    size_t len = size - at;

    struct stop_matcher m;
    if (stop_matcher_init(&m, ptrs, (uint32_t)n, NULL, 0) != 0)
        abort();
    char *a = malloc(len + 1), *b = malloc(len + 1);
    size_t want = reference(text, len, stops, n);
    size_t la = run(&m, text, len, 0, a);    /* one piece */
    size_t lb = run(&m, text, len, seed, b); /* many pieces */
    if (la != want || lb != want || memcmp(a, text, want) != 0 || memcmp(b, text, want) != 0)
        __builtin_trap();
    free(a);
    free(b);
    stop_matcher_free(&m);
    return 0;
}
