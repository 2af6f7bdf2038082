/* test_sample_stop.c — the stop-string matcher over streamed text: the output
 * must not depend on how the stream is split (checked at every single split
 * point, every pair of split points, and byte by byte), must equal a direct
 * whole-text search (first end position, longest stop on a tie), and must hold
 * back exactly the tail that could still start a stop string. */
#include "sample/sample.h"
#include "test.h"

/* Whole-text reference: the visible text and the index of the stop found (-1). */
static size_t reference_cut(const char *text, const char *const *stops, int n, int *which)
{
    size_t len = strlen(text);
    for (size_t end = 1; end <= len; end++) {
        int best = -1;
        size_t best_len = 0;
        for (int i = 0; i < n; i++) {
            size_t sl = strlen(stops[i]);
            if (sl <= end && memcmp(text + end - sl, stops[i], sl) == 0 && sl > best_len) {
                best = i;
                best_len = sl;
            }
        }
        if (best >= 0) {
            *which = best;
            return end - best_len;
        }
    }
    *which = -1;
    return len;
}

/* Feed text cut at the given points; collect everything emitted (flush at the end). */
static size_t stream(struct stop_matcher *m, const char *text, const size_t *cuts, int ncuts, char *out,
                     int *matched)
{
    stop_matcher_reset(m);
    size_t len = strlen(text), pos = 0, o = 0;
    *matched = 0;
    for (int c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        const char *piece;
        size_t plen;
        int rc = stop_matcher_feed(m, text + pos, end - pos, &piece, &plen);
        CHECK(rc >= 0);
        memcpy(out + o, piece, plen);
        o += plen;
        pos = end;
        if (rc == 1) {
            *matched = 1;
            break;
        }
    }
    if (!*matched) {
        const char *piece;
        size_t plen;
        stop_matcher_flush(m, &piece, &plen);
        memcpy(out + o, piece, plen);
        o += plen;
    }
    out[o] = 0;
    return o;
}

static const char *const stops_a[] = {"</s>", "<|im_end|>", "\n\nUser:", "ss", "abcd", "bc"};
static const char *const texts[] = {
    "Hello world, nothing to see here.",
    "The answer is 42</s> and more text",
    "partial <|im_en but not quite <|im_end",
    "line\n\nUser: next turn",
    "<<</s",
    "xxabcdyy", /* "bc" ends before "abcd" does: cut at "xxa" */
    "mississippi",
    "",
    "<|im_end|>",
    "a</s></s>",
};

static void check_all_splits(const char *const *stops, int nstops)
{
    struct stop_matcher m;
    char err[128];
    CHECK_EQ_INT(stop_matcher_init(&m, stops, (uint32_t)nstops, err, sizeof(err)), 0);
    char out[256], want[256];
    for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
        const char *text = texts[t];
        int which;
        size_t wl = reference_cut(text, stops, nstops, &which);
        memcpy(want, text, wl);
        want[wl] = 0;
        size_t len = strlen(text);
        int matched;
        /* one piece */
        stream(&m, text, NULL, 0, out, &matched);
        CHECK_EQ_STR(out, want);
        CHECK_EQ_INT(matched, which >= 0);
        CHECK_EQ_INT(m.match_index, which);
        /* every single split and every pair of splits */
        for (size_t i = 0; i <= len; i++) {
            for (size_t j = i; j <= len; j++) {
                size_t cuts[2] = {i, j};
                stream(&m, text, cuts, 2, out, &matched);
                CHECK_MSG(strcmp(out, want) == 0, "text %zu cut %zu,%zu: \"%s\" vs \"%s\"", t, i, j, out, want);
                CHECK_EQ_INT(matched, which >= 0);
            }
        }
        /* byte by byte */
        size_t cuts[128];
        for (size_t i = 0; i < len; i++)
            cuts[i] = i + 1;
        stream(&m, text, cuts, (int)len, out, &matched);
        CHECK_EQ_STR(out, want);
    }
    stop_matcher_free(&m);
}

static void test_every_split(void)
{
    check_all_splits(stops_a, 6);
    check_all_splits(stops_a, 2);
    static const char *const one[] = {"a"};
    check_all_splits(one, 1);
    check_all_splits(NULL, 0); /* no stops: pass-through */
}

static void test_hold_back(void)
{
    static const char *const stops[] = {"</s>"};
    struct stop_matcher m;
    char err[128];
    CHECK_EQ_INT(stop_matcher_init(&m, stops, 1, err, sizeof(err)), 0);
    const char *out;
    size_t len;
    CHECK_EQ_INT(stop_matcher_feed(&m, "abc<", 4, &out, &len), 0);
    CHECK(len == 3 && memcmp(out, "abc", 3) == 0); /* "<" is held */
    CHECK_EQ_INT(stop_matcher_feed(&m, "/", 1, &out, &len), 0);
    CHECK_EQ_U64(len, 0); /* "</" still held */
    CHECK_EQ_INT(stop_matcher_feed(&m, "x", 1, &out, &len), 0);
    CHECK(len == 3 && memcmp(out, "</x", 3) == 0); /* released */
    CHECK_EQ_INT(stop_matcher_feed(&m, "</", 2, &out, &len), 0);
    CHECK_EQ_U64(len, 0);
    CHECK_EQ_INT(stop_matcher_feed(&m, "s>tail", 6, &out, &len), 1);
    CHECK_EQ_U64(len, 0); /* the stop and what follows are cut */
    CHECK_EQ_INT(stop_matcher_feed(&m, "more", 4, &out, &len), 1);
    CHECK_EQ_U64(len, 0);
    /* a held tail is released by flush at the end of the stream */
    stop_matcher_reset(&m);
    CHECK_EQ_INT(stop_matcher_feed(&m, "end</", 5, &out, &len), 0);
    CHECK(len == 3 && memcmp(out, "end", 3) == 0);
    stop_matcher_flush(&m, &out, &len);
    CHECK(len == 2 && memcmp(out, "</", 2) == 0);
    /* a long piece grows the buffer */
    static char big[10000];
    memset(big, 'z', sizeof(big));
    stop_matcher_reset(&m);
    CHECK_EQ_INT(stop_matcher_feed(&m, big, sizeof(big), &out, &len), 0);
    CHECK_EQ_U64(len, sizeof(big));
    stop_matcher_free(&m);
}

static void test_limits(void)
{
    struct stop_matcher m;
    char err[128];
    static const char *const empty[] = {""};
    CHECK_EQ_INT(stop_matcher_init(&m, empty, 1, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "stop[0]");
    static char longs[STOP_MATCHER_MAX_LEN + 2];
    memset(longs, 'q', sizeof(longs) - 1);
    const char *const toolong[] = {"ok", longs};
    CHECK_EQ_INT(stop_matcher_init(&m, toolong, 2, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "stop[1]");
    const char *many[STOP_MATCHER_MAX_STOPS + 1];
    for (int i = 0; i <= STOP_MATCHER_MAX_STOPS; i++)
        many[i] = "x";
    CHECK_EQ_INT(stop_matcher_init(&m, many, STOP_MATCHER_MAX_STOPS + 1, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "at most");
    CHECK_EQ_INT(stop_matcher_init(&m, many, STOP_MATCHER_MAX_STOPS, err, sizeof(err)), 0);
    stop_matcher_free(&m);
}

int main(void)
{
    RUN(test_every_split);
    RUN(test_hold_back);
    RUN(test_limits);
    return test_summary();
}
