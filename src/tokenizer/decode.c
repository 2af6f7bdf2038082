/* tokenizer/decode.c — ids → text, whole or streamed.
 *
 * Each token's decoded bytes ("piece") were computed at load time (byte-level
 * text mapped back to bytes, ▁ → space, <0xXX> → the byte), so decoding is a
 * concatenation, then the decoder's leading-space strip (SentencePiece models
 * add a space in front of the text when encoding), then a lossy UTF-8 pass:
 * bytes that do not form characters become U+FFFD per maximal invalid subpart,
 * as Rust's from_utf8_lossy does in the `tokenizers` package.
 *
 * The stream keeps back the tail of an incomplete character until the next
 * token completes it, so a server never sends half a character; the pieces it
 * emits concatenate to exactly what tokenizer_decode returns.
 */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "tokenizer/tok_internal.h"

int tokenizer_decode(const struct tokenizer *tok, const int32_t *ids, size_t n, bool render_special,
                     char **text, size_t *len, char *err, size_t errlen)
{
    *text = NULL;
    *len = 0;
    const struct tok_model *m = tok ? tok->m : NULL;
    if (!m)
        return err_set(err, errlen, "tokenizer: not loaded");
    struct tok_buf raw = {0}, out = {0};
    uint32_t strip = m->dec_strip;
    bool started = false;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || (uint32_t)id >= m->n_vocab) {
            free(raw.p);
            return err_set(err, errlen, "tokenizer: id %d at position %zu is outside the vocabulary (0..%u)", id, i,
                           m->n_vocab - 1);
        }
        const struct tok_token *t = &m->tokens[id];
        if ((t->flags & TOK_F_SPECIAL) && !render_special)
            continue;
        const char *p = t->piece;
        size_t k = t->piece_len;
        while (!started && strip && k && *p == ' ') {
            p++;
            k--;
            strip--;
        }
        if (k)
            started = true;
        if (tok_buf_append(&raw, p, k) != 0) {
            free(raw.p);
            return err_set(err, errlen, "tokenizer: out of memory");
        }
    }
    int rc = utf8_repair(raw.p ? raw.p : "", raw.len, &out);
    free(raw.p);
    if (rc != 0 || tok_buf_append(&out, "", 0) != 0) {
        free(out.p);
        return err_set(err, errlen, "tokenizer: out of memory");
    }
    *text = out.p;
    *len = out.len;
    return 0;
}

void detok_stream_init(struct detok_stream *s, const struct tokenizer *tok, bool render_special)
{
    memset(s, 0, sizeof(*s));
    s->tok = tok;
    s->render_special = render_special;
    s->at_start = true;
    s->n_strip = tok && tok->m ? tok->m->dec_strip : 0;
}

size_t detok_stream_cap(const struct tokenizer *tok)
{
    return 3 * (tokenizer_max_piece_len(tok) + DETOK_STREAM_MAX_PENDING) + 4;
}

int detok_stream_push(struct detok_stream *s, int32_t id, char *out, size_t cap, size_t *n_out, char *err,
                      size_t errlen)
{
    *n_out = 0;
    const struct tok_model *m = s->tok ? s->tok->m : NULL;
    if (!m)
        return err_set(err, errlen, "tokenizer: not loaded");
    if (id < 0 || (uint32_t)id >= m->n_vocab)
        return err_set(err, errlen, "tokenizer: id %d is outside the vocabulary (0..%u)", id, m->n_vocab - 1);
    const struct tok_token *t = &m->tokens[id];
    if ((t->flags & TOK_F_SPECIAL) && !s->render_special)
        return 0;
    const char *p = t->piece;
    size_t k = t->piece_len;
    if (s->at_start) {
        while (s->n_strip && k && *p == ' ') {
            p++;
            k--;
            s->n_strip--;
        }
        if (k)
            s->at_start = false;
    }
    if (k == 0)
        return 0;
    size_t total = s->n_pending + k;
    if (cap < 3 * total + 4)
        return err_set(err, errlen, "tokenizer: stream output buffer of %zu bytes too small (need %zu)", cap,
                       3 * total + 4);
    /* pending bytes and the piece, side by side */
    unsigned char buf[DETOK_STREAM_MAX_PENDING + TOK_MAX_TOKEN_BYTES];
    memcpy(buf, s->pending, s->n_pending);
    memcpy(buf + s->n_pending, p, k);
    size_t i = 0, o = 0;
    s->n_pending = 0;
    while (i < total) {
        size_t bad;
        bool truncated;
        size_t len = utf8_next(buf + i, total - i, &bad, &truncated);
        if (len) {
            memcpy(out + o, buf + i, len);
            o += len;
            i += len;
        } else if (truncated) { /* may still be completed by the next token */
            memcpy(s->pending, buf + i, total - i);
            s->n_pending = (uint32_t)(total - i);
            break;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += bad;
        }
    }
    *n_out = o;
    return 0;
}

size_t detok_stream_flush(struct detok_stream *s, char *out, size_t cap)
{
    if (!s->n_pending || cap < 3)
        return 0;
    s->n_pending = 0;
    memcpy(out, "\xEF\xBF\xBD", 3);
    return 3;
}
