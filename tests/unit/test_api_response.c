/* test_api_response.c — response builders against the exact JSON OpenAI's API
 * reference shows for chat.completion, chat.completion.chunk, text_completion,
 * both logprobs shapes, usage, /v1/models and the tokenizer endpoints; plus
 * the UTF-8 sanitizer (Python's decode(errors="replace") results) and ids. */
#include "api/api_response.h"
#include "api/api_util.h"
#include "test.h"

static const struct api_response_meta chat_meta = {
    .kind = API_KIND_CHAT, .id = "chatcmpl-abc", .model = "smol", .created = 1700000000,
};

static void test_chat_response(void)
{
    struct api_choice c[2] = {
        {.index = 0, .text = "Hello!", .len = 6, .finish = API_FINISH_STOP},
        {.index = 1, .text = "Hi", .len = 2, .finish = API_FINISH_LENGTH},
    };
    struct api_usage u = {.prompt_tokens = 9, .completion_tokens = 12, .cached_tokens = 4};
    char *j = api_response_json(&chat_meta, c, 2, &u);
    CHECK_EQ_STR(j, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"smol\","
                    "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hello!\",\"refusal\":null},"
                    "\"logprobs\":null,\"finish_reason\":\"stop\"},{\"index\":1,\"message\":{\"role\":\"assistant\","
                    "\"content\":\"Hi\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":\"length\"}],"
                    "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12,\"total_tokens\":21,"
                    "\"prompt_tokens_details\":{\"cached_tokens\":4}}}");
    free(j);
}

static void test_chat_logprobs(void)
{
    struct api_response_meta m = chat_meta;
    m.logprobs = true;
    m.system_fingerprint = "fp_memra";
    struct api_top_logprob top[2] = {{"He", 2, -0.25f}, {"\xe4\xbd", 2, -1.5f}};
    struct api_token_logprob lp[2] = {
        {.text = "He", .len = 2, .logprob = -0.25f, .top = top, .n_top = 2},
        {.text = "\xe4\xbd", .len = 2, .logprob = -INFINITY, .top = NULL, .n_top = 0},
    };
    struct api_choice c = {.index = 0, .text = "He\xe4\xbd", .len = 4, .finish = API_FINISH_LENGTH, .logprobs = lp,
                           .n_logprobs = 2};
    struct api_usage u = {3, 2, 0};
    char *j = api_response_json(&m, &c, 1, &u);
    CHECK_EQ_STR(j, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"smol\","
                    "\"system_fingerprint\":\"fp_memra\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                    "\"content\":\"He\xef\xbf\xbd\",\"refusal\":null},\"logprobs\":{\"content\":["
                    "{\"token\":\"He\",\"logprob\":-0.25,\"bytes\":[72,101],\"top_logprobs\":["
                    "{\"token\":\"He\",\"logprob\":-0.25,\"bytes\":[72,101]},"
                    "{\"token\":\"\xef\xbf\xbd\",\"logprob\":-1.5,\"bytes\":[228,189]}]},"
                    "{\"token\":\"\xef\xbf\xbd\",\"logprob\":-9999.0,\"bytes\":[228,189],\"top_logprobs\":[]}],"
                    "\"refusal\":null},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,"
                    "\"completion_tokens\":2,\"total_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":0}}}");
    free(j);
}

static void test_chat_chunks(void)
{
    struct api_response_meta m = chat_meta;
    char *j = api_chunk_role_json(&m, 1);
    CHECK_EQ_STR(j, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                    "\"model\":\"smol\",\"choices\":[{\"index\":1,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                    "\"logprobs\":null,\"finish_reason\":null}]}");
    free(j);
    struct api_choice c = {.index = 0, .text = " world", .len = 6};
    j = api_chunk_json(&m, &c);
    CHECK_EQ_STR(j, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                    "\"model\":\"smol\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},"
                    "\"logprobs\":null,\"finish_reason\":null}]}");
    free(j);
    struct api_choice fin = {.index = 0, .finish = API_FINISH_STOP};
    m.include_usage = true;
    j = api_chunk_json(&m, &fin);
    CHECK_EQ_STR(j, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                    "\"model\":\"smol\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
                    "\"finish_reason\":\"stop\"}],\"usage\":null}");
    free(j);
    struct api_usage u = {5, 7, 2};
    j = api_chunk_usage_json(&m, &u);
    CHECK_EQ_STR(j, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                    "\"model\":\"smol\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,"
                    "\"total_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":2}}}");
    free(j);
    /* logprobs on a content chunk */
    m.include_usage = false;
    m.logprobs = true;
    struct api_token_logprob lp = {.text = "!", .len = 1, .logprob = -0.5f};
    struct api_choice c2 = {.index = 0, .text = "!", .len = 1, .logprobs = &lp, .n_logprobs = 1};
    j = api_chunk_json(&m, &c2);
    CHECK_EQ_STR(j, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                    "\"model\":\"smol\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"logprobs\":{"
                    "\"content\":[{\"token\":\"!\",\"logprob\":-0.5,\"bytes\":[33],\"top_logprobs\":[]}],"
                    "\"refusal\":null},\"finish_reason\":null}]}");
    free(j);
}

static void test_completion_response(void)
{
    struct api_response_meta m = {.kind = API_KIND_COMPLETION, .id = "cmpl-xyz", .model = "smol", .created = 5,
                                  .logprobs = true};
    /* "é" is 2 bytes but one code point: the next text_offset is 1 more than the last */
    struct api_top_logprob top0[2] = {{"\xc3\xa9", 2, -0.125f}, {"e", 1, -2.0f}};
    struct api_top_logprob top1[1] = {{"x", 1, -0.5f}};
    struct api_token_logprob lp[2] = {
        {.text = "\xc3\xa9", .len = 2, .logprob = -0.125f, .top = top0, .n_top = 2},
        {.text = "t", .len = 1, .logprob = -3.0f, .top = top1, .n_top = 1},
    };
    struct api_choice c = {.index = 0, .text = "\xc3\xa9t", .len = 3, .finish = API_FINISH_LENGTH, .logprobs = lp,
                           .n_logprobs = 2, .text_offset = 10};
    struct api_usage u = {4, 2, 0};
    char *j = api_response_json(&m, &c, 1, &u);
    CHECK_EQ_STR(j, "{\"id\":\"cmpl-xyz\",\"object\":\"text_completion\",\"created\":5,\"model\":\"smol\","
                    "\"choices\":[{\"index\":0,\"text\":\"\xc3\xa9t\",\"logprobs\":{\"tokens\":[\"\xc3\xa9\",\"t\"],"
                    "\"token_logprobs\":[-0.125,-3.0],\"top_logprobs\":[{\"\xc3\xa9\":-0.125,\"e\":-2.0},"
                    "{\"x\":-0.5,\"t\":-3.0}],\"text_offset\":[10,11]},\"finish_reason\":\"length\"}],"
                    "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6,"
                    "\"prompt_tokens_details\":{\"cached_tokens\":0}}}");
    free(j);
    m.logprobs = false;
    struct api_choice ch = {.index = 3, .text = "abc", .len = 3};
    j = api_chunk_json(&m, &ch);
    CHECK_EQ_STR(j, "{\"id\":\"cmpl-xyz\",\"object\":\"text_completion\",\"created\":5,\"model\":\"smol\","
                    "\"choices\":[{\"index\":3,\"text\":\"abc\",\"logprobs\":null,\"finish_reason\":null}]}");
    free(j);
    struct api_choice fin = {.index = 3, .finish = API_FINISH_STOP};
    j = api_chunk_json(&m, &fin);
    CHECK_EQ_STR(j, "{\"id\":\"cmpl-xyz\",\"object\":\"text_completion\",\"created\":5,\"model\":\"smol\","
                    "\"choices\":[{\"index\":3,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"stop\"}]}");
    free(j);
}

static void test_models_and_tokenizer_bodies(void)
{
    const char *ids[2] = {"smol", "tiny"};
    char *j = api_models_json(ids, 2, 42, "memra");
    CHECK_EQ_STR(j, "{\"object\":\"list\",\"data\":[{\"id\":\"smol\",\"object\":\"model\",\"created\":42,"
                    "\"owned_by\":\"memra\"},{\"id\":\"tiny\",\"object\":\"model\",\"created\":42,\"owned_by\":\"memra\"}]}");
    free(j);
    int32_t t[3] = {1, 22, 333};
    j = api_tokenize_json(t, 3, 2048, NULL);
    CHECK_EQ_STR(j, "{\"count\":3,\"max_model_len\":2048,\"tokens\":[1,22,333],\"token_strs\":null}");
    free(j);
    struct api_piece s[3] = {{"<s>", 3}, {"\xe2\x82", 2}, {"a", 1}};
    j = api_tokenize_json(t, 3, 8, s);
    CHECK_EQ_STR(j, "{\"count\":3,\"max_model_len\":8,\"tokens\":[1,22,333],\"token_strs\":[\"<s>\",\"\xef\xbf\xbd\","
                    "\"a\"]}");
    free(j);
    j = api_detokenize_json("a\"b\n", 4);
    CHECK_EQ_STR(j, "{\"prompt\":\"a\\\"b\\n\"}");
    free(j);
    j = api_detokenize_json(NULL, 0);
    CHECK_EQ_STR(j, "{\"prompt\":\"\"}");
    free(j);
}

static void test_utf8_sanitize(void)
{
    /* expected strings: Python 3 b"...".decode("utf-8", errors="replace").encode() */
    static const struct { const char *in; size_t len; const char *want; } cases[] = {
        {"abc", 3, "abc"},
        {"\xc3\xa9", 2, "\xc3\xa9"},
        {"\xc3", 1, "\xef\xbf\xbd"},
        {"\xe4\xbd", 2, "\xef\xbf\xbd"},              /* truncated 3-byte: one U+FFFD */
        {"\xe4\xbd\xa0", 3, "\xe4\xbd\xa0"},
        {"\xff\xfe", 2, "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},  /* overlong */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate */
        {"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"},
        {"\xf0\x9f\x98", 3, "\xef\xbf\xbd"},
        {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
        {"a\x80" "b", 3, "a\xef\xbf\xbd" "b"},
    };
    char out[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = api_utf8_sanitize(cases[i].in, cases[i].len, out);
        CHECK_MSG(n == strlen(cases[i].want) && !memcmp(out, cases[i].want, n), "case %zu", i);
    }
    CHECK_EQ_INT(api_utf8_count("\xc3\xa9t\xf0\x9f\x98\x80", 7), 3);
}

static void test_ids(void)
{
    char a[64], b[64];
    api_make_id(a, sizeof(a), API_KIND_CHAT);
    api_make_id(b, sizeof(b), API_KIND_CHAT);
    CHECK(!strncmp(a, "chatcmpl-", 9));
    CHECK_EQ_INT(strlen(a), 9 + 24);
    CHECK(strcmp(a, b) != 0);
    api_make_id(a, sizeof(a), API_KIND_COMPLETION);
    CHECK(!strncmp(a, "cmpl-", 5));
    CHECK_EQ_INT(strlen(a), 5 + 24);
    for (size_t i = 5; i < strlen(a); i++)
        CHECK((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'A' && a[i] <= 'Z') || (a[i] >= 'a' && a[i] <= 'z'));
    api_make_id(a, 8, API_KIND_CHAT);
    CHECK_EQ_INT(strlen(a), 7);
}

int main(void)
{
    RUN(test_chat_response);
    RUN(test_chat_logprobs);
    RUN(test_chat_chunks);
    RUN(test_completion_response);
    RUN(test_models_and_tokenizer_bodies);
    RUN(test_utf8_sanitize);
    RUN(test_ids);
    return test_summary();
}
