/* api/api_util.h — small helpers the api/ files share (internal to api/).
 *
 * UTF-8: jansson accepts only valid UTF-8 in strings, but token pieces and text
 * echoed from a client may be partial or invalid sequences (a byte-level BPE
 * token can hold half a character). api_utf8_sanitize() rewrites every invalid
 * or truncated sequence as U+FFFD, the way Python's bytes.decode(errors=
 * "replace") does (one U+FFFD per maximal invalid subpart), so a token string in
 * a response is what a Python client would see; the raw bytes travel separately
 * (chat logprobs' "bytes").
 */
#ifndef MEMRA_API_API_UTIL_H
#define MEMRA_API_API_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence starting at s[0] (1..4), or 0 when s[0..len)
 * does not start with one; *bad_len then receives the length of the maximal
 * invalid subpart (≥ 1) to replace with one U+FFFD. */
size_t api_utf8_seq_len(const unsigned char *s, size_t len, size_t *bad_len);

/* Write the sanitized copy of in[0..len) into out (capacity ≥ 3·len + 1), NUL
 * terminated; returns its length. */
size_t api_utf8_sanitize(const char *in, size_t len, char *out);

/* A JSON string from arbitrary bytes (sanitized), or NULL when out of memory. */
json_t *api_json_string_bytes(const char *s, size_t len);

/* Compact JSON text of v (NUL terminated, malloc'd), or NULL when out of memory.
 * Reals are written with 9 significant digits: enough to round-trip a float. */
char *api_json_dump(const json_t *v);

#endif
