/* sample/stop.c — the stop-string matcher over streamed text (contract in
 * sample.h).
 *
 * Invariant between calls: the held-back tail (buf[hold_off, hold_off+len)) is
 * the longest suffix of the stream that is a proper prefix of some stop string,
 * and the stream so far contains no complete stop string. So a new match can
 * only end inside the newest piece, and every byte before the held tail can be
 * shown: any future match starts inside the tail or later. Searching uses
 * memmem per stop string (linear time); the earliest end wins, then the longest.
 */
#include "sample/sample.h"

#include "core/log.h"

#include <stdlib.h>
#include <string.h>

int stop_matcher_init(struct stop_matcher *m, const char *const *stops, uint32_t n_stops, char *err,
                      size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->match_index = -1;
    if (n_stops > STOP_MATCHER_MAX_STOPS)
        return err_set(err, errlen, "stop: %u strings given, at most %d", n_stops, STOP_MATCHER_MAX_STOPS);
    if (n_stops > 0 && !stops)
        return err_set(err, errlen, "stop: missing strings");
    for (uint32_t i = 0; i < n_stops; i++) {
        size_t len = stops[i] ? strnlen(stops[i], STOP_MATCHER_MAX_LEN + 1) : 0;
        if (len == 0 || len > STOP_MATCHER_MAX_LEN)
            return err_set(err, errlen, "stop[%u]: length must be 1..%d bytes", i, STOP_MATCHER_MAX_LEN);
    }
    if (n_stops) {
        m->stops = calloc(n_stops, sizeof(char *));
        m->stop_len = calloc(n_stops, sizeof(size_t));
        if (!m->stops || !m->stop_len)
            goto oom;
    }
    for (uint32_t i = 0; i < n_stops; i++) {
        size_t len = strlen(stops[i]);
        m->stops[i] = malloc(len + 1);
        if (!m->stops[i])
            goto oom;
        memcpy(m->stops[i], stops[i], len + 1);
        m->stop_len[i] = len;
        m->n_stops = i + 1;
        if (len > m->max_len)
            m->max_len = len;
    }
    m->cap = 2 * m->max_len + 256;
    m->buf = malloc(m->cap);
    if (!m->buf)
        goto oom;
    return 0;
oom:
    stop_matcher_free(m);
    return err_set(err, errlen, "stop: out of memory");
}

void stop_matcher_free(struct stop_matcher *m)
{
    for (uint32_t i = 0; i < m->n_stops; i++)
        free(m->stops[i]);
    free(m->stops);
    free(m->stop_len);
    free(m->buf);
    memset(m, 0, sizeof(*m));
    m->match_index = -1;
}

void stop_matcher_reset(struct stop_matcher *m)
{
    m->len = 0;
    m->out_off = 0;
    m->matched = false;
    m->match_index = -1;
}

/* Length of the longest suffix of s[0, n) that is a proper prefix of a stop. */
static size_t held_suffix(const struct stop_matcher *m, const char *s, size_t n)
{
    size_t best = 0;
    for (uint32_t i = 0; i < m->n_stops; i++) {
        size_t k = m->stop_len[i] - 1;
        if (k > n)
            k = n;
        for (; k > best; k--) {
            if (memcmp(s + n - k, m->stops[i], k) == 0) {
                best = k;
                break;
            }
        }
    }
    return best;
}

int stop_matcher_feed(struct stop_matcher *m, const char *piece, size_t len, const char **out, size_t *out_len)
{
    *out = m->buf;
    *out_len = 0;
    if (m->matched)
        return 1;
    /* bring the held tail to the front, then append the piece */
    if (m->out_off && m->len)
        memmove(m->buf, m->buf + m->out_off, m->len);
    m->out_off = 0;
    const size_t held = m->len;
    if (len > m->cap - held) {
        size_t need = held + len, cap = m->cap * 2;
        if (need < held)
            return -1;
        if (cap < need)
            cap = need;
        char *nb = realloc(m->buf, cap);
        if (!nb)
            return -1;
        m->buf = nb;
        m->cap = cap;
        *out = m->buf;
    }
    if (len)
        memcpy(m->buf + held, piece, len);
    const size_t total = held + len;

    /* the earliest-ending match, longest on a tie; it must end in the new bytes */
    size_t best_end = SIZE_MAX, best_len = 0;
    int32_t best_i = -1;
    for (uint32_t i = 0; i < m->n_stops; i++) {
        const size_t sl = m->stop_len[i];
        if (sl > total)
            continue;
        const size_t from = held + 1 > sl ? held + 1 - sl : 0;
        const char *hit = memmem(m->buf + from, total - from, m->stops[i], sl);
        if (!hit)
            continue;
        const size_t end = (size_t)(hit - m->buf) + sl;
        if (end < best_end || (end == best_end && sl > best_len)) {
            best_end = end;
            best_len = sl;
            best_i = (int32_t)i;
        }
    }
    if (best_i >= 0) {
        m->matched = true;
        m->match_index = best_i;
        *out_len = best_end - best_len;
        m->len = 0;
        return 1;
    }
    const size_t keep = held_suffix(m, m->buf, total);
    *out_len = total - keep;
    m->out_off = total - keep;
    m->len = keep;
    return 0;
}

void stop_matcher_flush(struct stop_matcher *m, const char **out, size_t *out_len)
{
    *out = m->buf + m->out_off;
    *out_len = m->matched ? 0 : m->len;
    m->out_off = 0;
    m->len = 0;
}
