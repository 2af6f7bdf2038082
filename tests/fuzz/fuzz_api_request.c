/* fuzz_api_request.c — libFuzzer target for api_request_parse: any bytes as the
 * body of any of the four endpoints (the first byte picks which) must give
 * either a valid request or an error whose JSON body is well-formed; a valid
 * request is then checked against a small vocabulary and its fields are used
 * the way the server uses them (the chunk and response builders). Seeds in
 * tests/fuzz/corpus/fuzz_api_request/ are real request bodies with a kind byte. */
#include "api/api_request.h"
#include "api/api_response.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum api_kind kind = (enum api_kind)(data[0] % 4);
    struct api_limits lim;
    api_limits_default(&lim);
    lim.max_body = 1 << 16;
    struct api_request r;
    struct api_error e;
    memset(&e, 0, sizeof(e));
    if (api_request_parse(&r, kind, (const char *)data + 1, size - 1, &lim, &e)) {
        if (e.status < 400 || e.status > 599 || !e.message[0])
            abort();
        char *j = api_error_json(&e);
        if (!j)
            abort();
        free(j);
        api_request_free(&r); /* harmless after a failure */
        return 0;
    }
    struct api_error ve;
    (void)api_request_check_vocab(&r, 1000, &ve);
    if (r.n < 1 || r.n_stop > API_MAX_STOP)
        abort();
    for (uint32_t i = 0; i < r.n_stop; i++)
        if (r.stop_len[i] < 1 || r.stop_len[i] > API_MAX_STOP_LEN || strlen(r.stop[i]) != r.stop_len[i])
            abort();
    if (kind == API_KIND_CHAT && !json_is_array(r.messages))
        abort();
    if (kind == API_KIND_CHAT || kind == API_KIND_COMPLETION) {
        struct api_response_meta m = {.kind = kind, .id = "x", .model = r.model, .created = 1,
                                      .logprobs = r.logprobs, .include_usage = r.include_usage};
        const char *text = r.n_stop ? r.stop[0] : "";
        struct api_choice c = {.index = 0, .text = text, .len = strlen(text), .finish = API_FINISH_STOP};
        struct api_usage u = {1, 1, 0};
        char *j = api_response_json(&m, &c, 1, &u);
        if (!j)
            abort();
        free(j);
    }
    api_request_free(&r);
    return 0;
}
