/* test_api_request.c — OpenAI request bodies → api_request: good bodies give the
 * right native fields; a battery of bad bodies each gives the expected status,
 * code and param (the field the client must fix). */
#include "api/api_request.h"
#include "test.h"

static int parse(struct api_request *r, enum api_kind kind, const char *body, struct api_error *e)
{
    return api_request_parse(r, kind, body, strlen(body), NULL, e);
}

static void test_chat_minimal(void)
{
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(parse(&r, API_KIND_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &e),
                 0);
    CHECK_EQ_STR(r.model, "m");
    CHECK_EQ_INT(r.n, 1);
    CHECK(!r.stream && !r.include_usage && !r.logprobs && !r.has_seed);
    CHECK_EQ_INT(r.max_tokens, -1);
    CHECK_EQ_INT(r.n_stop, 0);
    CHECK_NEAR(r.sample.temperature, 1.0, 0);
    CHECK_NEAR(r.sample.top_p, 1.0, 0);
    char *m = json_dumps(r.messages, JSON_COMPACT);
    CHECK_EQ_STR(m, "[{\"role\":\"user\",\"content\":\"hi\"}]");
    free(m);
    api_request_free(&r);
    CHECK(r.messages == NULL && r.root == NULL);
}

static void test_chat_all_fields(void)
{
    const char *body =
        "{\"model\":\"smol\",\"messages\":["
        "{\"role\":\"developer\",\"content\":\"be brief\"},"
        "{\"role\":\"user\",\"name\":\"ann\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]},"
        "{\"role\":\"tool\",\"content\":\"42\",\"tool_call_id\":\"call_1\"}],"
        "\"max_tokens\":10,\"max_completion_tokens\":20,\"temperature\":0.5,\"top_p\":0.9,\"top_k\":40,"
        "\"min_p\":0.05,\"presence_penalty\":1,\"frequency_penalty\":-0.5,\"repetition_penalty\":1.1,"
        "\"seed\":-7,\"stop\":[\"\\n\\n\",\"END\"],\"n\":3,\"logprobs\":true,\"top_logprobs\":5,"
        "\"logit_bias\":{\"50256\":-100,\"7\":2.5,\"07\":3},\"user\":\"u1\",\"stream\":true,"
        "\"stream_options\":{\"include_usage\":true},\"store\":false,\"metadata\":{\"a\":\"b\"},"
        "\"tools\":[],\"tool_choice\":\"none\",\"response_format\":{\"type\":\"text\"},\"parallel_tool_calls\":true,"
        "\"modalities\":[\"text\"],\"service_tier\":\"auto\",\"audio\":null}";
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(parse(&r, API_KIND_CHAT, body, &e), 0);
    if (r.root == NULL) {
        fprintf(stderr, "  %s (%s)\n", e.message, e.param);
        return;
    }
    char *m = json_dumps(r.messages, JSON_COMPACT);
    CHECK_EQ_STR(m, "[{\"role\":\"system\",\"content\":\"be brief\"},"
                    "{\"role\":\"user\",\"content\":\"a\\nb\",\"name\":\"ann\"},"
                    "{\"role\":\"assistant\",\"content\":\"\"},"
                    "{\"role\":\"tool\",\"content\":\"42\",\"tool_call_id\":\"call_1\"}]");
    free(m);
    CHECK_EQ_INT(r.max_tokens, 20); /* max_completion_tokens wins */
    CHECK_NEAR(r.sample.temperature, 0.5, 1e-7);
    CHECK_NEAR(r.sample.top_p, 0.9, 1e-7);
    CHECK_EQ_INT(r.sample.top_k, 40);
    CHECK_NEAR(r.sample.min_p, 0.05, 1e-7);
    CHECK_NEAR(r.sample.presence_penalty, 1, 0);
    CHECK_NEAR(r.sample.frequency_penalty, -0.5, 0);
    CHECK_NEAR(r.sample.repetition_penalty, 1.1, 1e-6);
    CHECK(r.has_seed);
    CHECK_EQ_U64(r.sample.seed, (uint64_t)(int64_t)-7);
    CHECK_EQ_INT(r.n_stop, 2);
    CHECK_EQ_STR(r.stop[0], "\n\n");
    CHECK_EQ_INT(r.stop_len[1], 3);
    CHECK_EQ_INT(r.n, 3);
    CHECK(r.logprobs && r.sample.logprobs);
    CHECK_EQ_INT(r.sample.top_logprobs, 5);
    CHECK_EQ_INT(r.sample.n_logit_bias, 2); /* "7" and "07" are one token: the later wins */
    CHECK_EQ_INT(r.sample.logit_bias[0].token, 50256);
    CHECK_NEAR(r.sample.logit_bias[0].bias, -100, 0);
    CHECK_EQ_INT(r.sample.logit_bias[1].token, 7);
    CHECK_NEAR(r.sample.logit_bias[1].bias, 3, 0);
    CHECK_EQ_STR(r.user, "u1");
    CHECK(r.stream && r.include_usage);
    struct api_error ve;
    CHECK_EQ_INT(api_request_check_vocab(&r, 50257, &ve), 0);
    CHECK_EQ_INT(api_request_check_vocab(&r, 50256, &ve), -1);
    CHECK_EQ_STR(ve.param, "logit_bias.50256");
    CHECK_EQ_INT(ve.status, 400);
    api_request_free(&r);
}

static void test_nulls_are_defaults(void)
{
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":null,"
                       "\"stop\":null,\"n\":null,\"seed\":null,\"logprobs\":null,\"top_logprobs\":null,"
                       "\"stream\":null,\"stream_options\":null,\"max_tokens\":null,\"tools\":null,\"user\":null}";
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(parse(&r, API_KIND_CHAT, body, &e), 0);
    CHECK_EQ_INT(r.n, 1);
    CHECK(!r.has_seed && !r.stream && !r.logprobs && r.user == NULL);
    CHECK_EQ_INT(r.max_tokens, -1);
    CHECK_NEAR(r.sample.temperature, 1, 0);
    api_request_free(&r);
}

static void test_top_p_zero_and_integral_reals(void)
{
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(parse(&r, API_KIND_CHAT,
                       "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":0,"
                       "\"n\":2.0,\"temperature\":1}", &e), 0);
    CHECK(r.sample.top_p > 0 && r.sample.top_p < 1e-30);
    CHECK_EQ_INT(r.n, 2);
    api_request_free(&r);
}

static void test_completion_prompts(void)
{
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(parse(&r, API_KIND_COMPLETION, "{\"model\":\"m\",\"prompt\":\"Once upon\"}", &e), 0);
    CHECK_EQ_INT(r.n_prompts, 1);
    CHECK_EQ_STR(r.prompts[0].text, "Once upon");
    CHECK_EQ_INT(r.max_tokens, 16); /* OpenAI's completions default */
    api_request_free(&r);

    CHECK_EQ_INT(parse(&r, API_KIND_COMPLETION, "{\"model\":\"m\",\"prompt\":[\"a\",\"bc\"],\"n\":2,\"logprobs\":3,"
                                                "\"echo\":false,\"suffix\":null,\"best_of\":2,\"max_tokens\":5}", &e), 0);
    CHECK_EQ_INT(r.n_prompts, 2);
    CHECK_EQ_INT(r.prompts[1].text_len, 2);
    CHECK(r.logprobs && r.sample.logprobs);
    CHECK_EQ_INT(r.sample.top_logprobs, 3);
    CHECK_EQ_INT(r.max_tokens, 5);
    api_request_free(&r);

    CHECK_EQ_INT(parse(&r, API_KIND_COMPLETION, "{\"model\":\"m\",\"prompt\":[1,2,3]}", &e), 0);
    CHECK_EQ_INT(r.n_prompts, 1);
    CHECK(r.prompts[0].text == NULL);
    CHECK_EQ_INT(r.prompts[0].n_tokens, 3);
    CHECK_EQ_INT(r.prompts[0].tokens[2], 3);
    CHECK_EQ_INT(api_request_check_vocab(&r, 4, &e), 0);
    CHECK_EQ_INT(api_request_check_vocab(&r, 3, &e), -1);
    CHECK_EQ_STR(e.param, "prompt[2]");
    api_request_free(&r);

    CHECK_EQ_INT(parse(&r, API_KIND_COMPLETION, "{\"model\":\"m\",\"prompt\":[[1],[2,3]],\"logprobs\":0}", &e), 0);
    CHECK_EQ_INT(r.n_prompts, 2);
    CHECK_EQ_INT(r.prompts[1].n_tokens, 2);
    CHECK(r.logprobs);
    CHECK_EQ_INT(r.sample.top_logprobs, 0);
    CHECK_EQ_INT(api_request_check_vocab(&r, 3, &e), -1);
    CHECK_EQ_STR(e.param, "prompt[1][1]");
    api_request_free(&r);
}

static void test_tokenize_bodies(void)
{
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(parse(&r, API_KIND_TOKENIZE, "{\"prompt\":\"hello\"}", &e), 0);
    CHECK(r.model == NULL);
    CHECK(r.add_special_tokens && !r.return_token_strs);
    CHECK_EQ_STR(r.prompts[0].text, "hello");
    api_request_free(&r);
    CHECK_EQ_INT(parse(&r, API_KIND_TOKENIZE, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                                              "\"add_generation_prompt\":false,\"return_token_strs\":true}", &e), 0);
    CHECK(!r.add_special_tokens && !r.add_generation_prompt && r.return_token_strs);
    CHECK(r.messages != NULL && r.n_prompts == 0);
    api_request_free(&r);
    CHECK_EQ_INT(parse(&r, API_KIND_DETOKENIZE, "{\"model\":\"m\",\"tokens\":[5,0]}", &e), 0);
    CHECK_EQ_INT(r.prompts[0].n_tokens, 2);
    CHECK_EQ_INT(api_request_check_vocab(&r, 5, &e), -1);
    CHECK_EQ_STR(e.param, "tokens[0]");
    api_request_free(&r);
    CHECK_EQ_INT(parse(&r, API_KIND_DETOKENIZE, "{\"tokens\":[]}", &e), 0);
    CHECK_EQ_INT(r.prompts[0].n_tokens, 0);
    api_request_free(&r);
}

/* Bad bodies: each must give this status, code and param. */
static const struct bad {
    enum api_kind kind;
    const char *body;
    int status;
    const char *code;
    const char *param;
} bad[] = {
#define CHAT API_KIND_CHAT
#define CMPL API_KIND_COMPLETION
#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
    /* not JSON / not an object */
    {CHAT, "", 400, "invalid_json", ""},
    {CHAT, "{", 400, "invalid_json", ""},
    {CHAT, "{\"model\":\"m\",}", 400, "invalid_json", ""},
    {CHAT, "[1,2]", 400, "invalid_json", ""},
    {CHAT, "\"just a string\"", 400, "invalid_json", ""},
    {CHAT, "{\"model\":\"m\",\"model\":\"n\"," MSG "}", 400, "invalid_json", ""},
    {CHAT, "{\"model\":\"m\\u0000\"," MSG "}", 400, "invalid_json", ""},
    {CHAT, "{\"model\":\"\xff\"," MSG "}", 400, "invalid_json", ""},
    {CHAT, "{\"model\":\"m\"," MSG ",\"seed\":99999999999999999999999}", 400, "invalid_json", ""},
    {CHAT, "{\"model\":\"m\"," MSG ",\"metadata\":{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":{\"j\":"
           "{\"k\":{\"l\":{\"m\":{\"n\":{\"o\":{\"p\":{\"q\":{\"r\":{\"s\":{\"t\":{\"u\":{\"v\":{\"w\":{\"x\":{\"y\":{\"z\":"
           "{\"A\":{\"B\":{\"C\":{\"D\":{\"E\":{}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}", 400, "invalid_json", ""},
    /* required fields */
    {CHAT, "{" MSG "}", 400, "missing_required_parameter", "model"},
    {CHAT, "{\"model\":\"m\"}", 400, "missing_required_parameter", "messages"},
    {CMPL, "{\"model\":\"m\"}", 400, "missing_required_parameter", "prompt"},
    {API_KIND_TOKENIZE, "{\"model\":\"m\"}", 400, "missing_required_parameter", "prompt"},
    {API_KIND_TOKENIZE, "{\"prompt\":\"a\"," MSG "}", 400, "invalid_value", "messages"},
    {API_KIND_DETOKENIZE, "{\"model\":\"m\"}", 400, "missing_required_parameter", "tokens"},
    /* unknown and unsupported fields */
    {CHAT, "{\"model\":\"m\"," MSG ",\"temprature\":1}", 400, "unknown_parameter", "temprature"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"prompt\":\"x\"}", 400, "unknown_parameter", "prompt"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"messages\":[]}", 400, "unknown_parameter", "messages"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"max_completion_tokens\":3}", 400, "unknown_parameter",
     "max_completion_tokens"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"top_logprobs\":3}", 400, "unknown_parameter", "top_logprobs"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}", 400,
     "unsupported_parameter", "tools"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"tool_choice\":\"auto\"}", 400, "unsupported_parameter", "tool_choice"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"response_format\":{\"type\":\"json_object\"}}", 400, "unsupported_parameter",
     "response_format"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"modalities\":[\"text\",\"audio\"]}", 400, "unsupported_parameter",
     "modalities"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"audio\":{\"voice\":\"x\"}}", 400, "unsupported_parameter", "audio"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"reasoning_effort\":\"low\"}", 400, "unsupported_parameter",
     "reasoning_effort"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"echo\":true}", 400, "unsupported_parameter", "echo"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"suffix\":\"end\"}", 400, "unsupported_parameter", "suffix"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"best_of\":3}", 400, "unsupported_parameter", "best_of"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stream_options\":{\"include_usage\":true,\"x\":1},\"stream\":true}", 400,
     "unknown_parameter", "stream_options.x"},
    /* wrong types */
    {CHAT, "{\"model\":3," MSG "}", 400, "invalid_type", "model"},
    {CHAT, "{\"model\":null," MSG "}", 400, "invalid_type", "model"},
    {CHAT, "{\"model\":\"\"," MSG "}", 400, "empty_string", "model"},
    {CHAT, "{\"model\":\"m\",\"messages\":\"hi\"}", 400, "invalid_type", "messages"},
    {CHAT, "{\"model\":\"m\",\"messages\":null}", 400, "invalid_type", "messages"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"temperature\":\"0.5\"}", 400, "invalid_type", "temperature"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"n\":1.5}", 400, "invalid_type", "n"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"n\":true}", 400, "invalid_type", "n"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stream\":\"yes\"}", 400, "invalid_type", "stream"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stream\":1}", 400, "invalid_type", "stream"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stop\":5}", 400, "invalid_type", "stop"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stop\":[\"a\",5]}", 400, "invalid_type", "stop[1]"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logprobs\":3}", 400, "invalid_type", "logprobs"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":true}", 400, "invalid_type", "logprobs"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logit_bias\":[1]}", 400, "invalid_type", "logit_bias"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logit_bias\":{\"12\":\"x\"}}", 400, "invalid_type", "logit_bias.12"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"seed\":1.5}", 400, "invalid_type", "seed"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"user\":5}", 400, "invalid_type", "user"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stream_options\":true,\"stream\":true}", 400, "invalid_type",
     "stream_options"},
    {CMPL, "{\"model\":\"m\",\"prompt\":5}", 400, "invalid_type", "prompt"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[\"a\",[1]]}", 400, "invalid_type", "prompt[1]"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[[1],\"a\"]}", 400, "invalid_type", "prompt[1]"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[1,\"a\"]}", 400, "invalid_type", "prompt[1]"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[{}]}", 400, "invalid_type", "prompt"},
    {API_KIND_TOKENIZE, "{\"prompt\":[1,2]}", 400, "invalid_type", "prompt"},
    {API_KIND_DETOKENIZE, "{\"tokens\":\"abc\"}", 400, "invalid_type", "tokens"},
    {API_KIND_DETOKENIZE, "{\"tokens\":[1,\"a\"]}", 400, "invalid_type", "tokens[1]"},
    /* messages */
    {CHAT, "{\"model\":\"m\",\"messages\":[]}", 400, "empty_array", "messages"},
    {CHAT, "{\"model\":\"m\",\"messages\":[5]}", 400, "invalid_type", "messages[0]"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]}", 400, "missing_required_parameter",
     "messages[0].role"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}", 400, "missing_required_parameter",
     "messages[0].content"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":null}]}", 400,
     "missing_required_parameter", "messages[0].content"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", 400, "invalid_value",
     "messages[0].role"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":7,\"content\":\"x\"}]}", 400, "invalid_type",
     "messages[0].role"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "invalid_type",
     "messages[0].content"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[]}]}", 400, "empty_array",
     "messages[0].content"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":"
           "[{\"type\":\"text\"}]}]}", 400, "missing_required_parameter", "messages[1].content[0].text"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"a\"}]}]}", 400,
     "missing_required_parameter", "messages[0].content[0].type"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
           "{\"url\":\"http://x\"}}]}]}", 400, "unsupported_parameter", "messages[0].content[0].type"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"video\"}]}]}", 400,
     "invalid_value", "messages[0].content[0].type"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":1}]}]}", 400,
     "invalid_type", "messages[0].content[0].text"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\","
           "\"extra\":1}]}]}", 400, "unknown_parameter", "messages[0].content[0].extra"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"mood\":\"happy\"}]}", 400,
     "unknown_parameter", "messages[0].mood"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"content\":\"x\",\"tool_calls\":[{\"id\":\"1\"}]}]}",
     400, "unsupported_parameter", "messages[0].tool_calls"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"function\",\"content\":\"x\"}]}", 400, "unsupported_parameter",
     "messages[0].role"},
    {CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"name\":\"\"}]}", 400,
     "empty_string", "messages[0].name"},
    /* out of range */
    {CHAT, "{\"model\":\"m\"," MSG ",\"temperature\":2.5}", 400, "decimal_above_max_value", "temperature"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"temperature\":-0.1}", 400, "decimal_below_min_value", "temperature"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"top_p\":1.01}", 400, "decimal_above_max_value", "top_p"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"min_p\":-1}", 400, "decimal_below_min_value", "min_p"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"presence_penalty\":3}", 400, "decimal_above_max_value", "presence_penalty"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"frequency_penalty\":-2.5}", 400, "decimal_below_min_value",
     "frequency_penalty"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"repetition_penalty\":0}", 400, "decimal_below_min_value",
     "repetition_penalty"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"top_k\":-2}", 400, "integer_below_min_value", "top_k"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"n\":0}", 400, "integer_below_min_value", "n"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"n\":129}", 400, "integer_above_max_value", "n"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"max_tokens\":0}", 400, "integer_below_min_value", "max_tokens"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"max_completion_tokens\":-5}", 400, "integer_below_min_value",
     "max_completion_tokens"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"max_tokens\":\"10\"}", 400, "invalid_type", "max_tokens"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"max_tokens\":4294967296}", 400, "integer_above_max_value", "max_tokens"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logprobs\":true,\"top_logprobs\":21}", 400, "integer_above_max_value",
     "top_logprobs"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"top_logprobs\":2}", 400, "invalid_value", "top_logprobs"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logprobs\":false,\"top_logprobs\":0}", 400, "invalid_value", "top_logprobs"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":21}", 400, "integer_above_max_value", "logprobs"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":-1}", 400, "integer_below_min_value", "logprobs"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logit_bias\":{\"12\":101}}", 400, "decimal_above_max_value",
     "logit_bias.12"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logit_bias\":{\"abc\":1}}", 400, "invalid_key", "logit_bias.abc"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logit_bias\":{\"-3\":1}}", 400, "invalid_key", "logit_bias.-3"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logit_bias\":{\"2147483648\":1}}", 400, "invalid_key",
     "logit_bias.2147483648"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"logit_bias\":{\"\":1}}", 400, "invalid_key", "logit_bias."},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stop\":\"\"}", 400, "empty_string", "stop"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\","
           "\"m\",\"n\",\"o\",\"p\",\"q\"]}", 400, "array_above_max_length", "stop"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stream_options\":{\"include_usage\":true}}", 400, "invalid_value",
     "stream_options"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stream_options\":{\"include_usage\":true},\"stream\":false}", 400,
     "invalid_value", "stream_options"},
    {CHAT, "{\"model\":\"m\"," MSG ",\"stream_options\":{\"include_usage\":1},\"stream\":true}", 400, "invalid_type",
     "stream_options.include_usage"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[]}", 400, "empty_array", "prompt"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[[]]}", 400, "empty_array", "prompt[0]"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[-1]}", 400, "integer_below_min_value", "prompt[0]"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[2147483648]}", 400, "integer_above_max_value", "prompt[0]"},
    {CMPL, "{\"model\":\"m\",\"prompt\":[\"a\",\"b\",\"c\"],\"n\":50}", 400, "integer_above_max_value", "n"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"a\",\"cache_salt\":7}", 400, "invalid_type", "cache_salt"},
    {CMPL, "{\"model\":\"m\",\"prompt\":\"a\",\"cache_salt\":\"\"}", 400, "empty_string", "cache_salt"},
};

/* cache_salt on both completion routes; a salt of the maximum length passes, one byte more is a 400 */
static void test_cache_salt(void)
{
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(parse(&r, API_KIND_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                       "\"cache_salt\":\"s1\"}", &e), 0);
    CHECK_EQ_STR(r.cache_salt, "s1");
    api_request_free(&r);
    CHECK_EQ_INT(parse(&r, API_KIND_COMPLETION, "{\"model\":\"m\",\"prompt\":\"a\"}", &e), 0);
    CHECK(r.cache_salt == NULL);
    api_request_free(&r);
    char body[API_MAX_CACHE_SALT_LEN + 100], salt[API_MAX_CACHE_SALT_LEN + 2];
    memset(salt, 'z', sizeof(salt));
    salt[API_MAX_CACHE_SALT_LEN] = '\0';
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"prompt\":\"a\",\"cache_salt\":\"%s\"}", salt);
    CHECK_EQ_INT(parse(&r, API_KIND_COMPLETION, body, &e), 0);
    CHECK_EQ_INT(strlen(r.cache_salt), API_MAX_CACHE_SALT_LEN);
    api_request_free(&r);
    salt[API_MAX_CACHE_SALT_LEN] = 'z';
    salt[API_MAX_CACHE_SALT_LEN + 1] = '\0';
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"prompt\":\"a\",\"cache_salt\":\"%s\"}", salt);
    CHECK_EQ_INT(parse(&r, API_KIND_COMPLETION, body, &e), -1);
    CHECK_EQ_STR(e.code, "string_above_max_length");
    CHECK_EQ_STR(e.param, "cache_salt");
}

static void test_bad_bodies(void)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct api_request r;
        struct api_error e;
        memset(&e, 0, sizeof(e));
        int rc = parse(&r, bad[i].kind, bad[i].body, &e);
        CHECK_MSG(rc == -1, "case %zu accepted: %s", i, bad[i].body);
        if (rc != -1) {
            api_request_free(&r);
            continue;
        }
        CHECK(r.root == NULL && r.messages == NULL && r.prompts == NULL);
        CHECK_MSG(e.status == bad[i].status, "case %zu: status %d: %s", i, e.status, bad[i].body);
        CHECK_MSG(!strcmp(e.code, bad[i].code), "case %zu: code %s, want %s: %s (%s)", i, e.code, bad[i].code,
                  bad[i].body, e.message);
        CHECK_MSG(!strcmp(e.param, bad[i].param), "case %zu: param '%s', want '%s': %s (%s)", i, e.param,
                  bad[i].param, bad[i].body, e.message);
        CHECK_MSG(e.message[0] != '\0', "case %zu: no message", i);
        char *j = api_error_json(&e);
        CHECK(j != NULL);
        json_t *v = j ? json_loads(j, 0, NULL) : NULL;
        CHECK_MSG(v && json_is_string(json_object_get(json_object_get(v, "error"), "message")), "case %zu", i);
        json_decref(v);
        free(j);
    }
}

static void test_body_limit(void)
{
    struct api_limits lim;
    api_limits_default(&lim);
    lim.max_body = 64;
    char body[200];
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"%0100d\"}]}", 0);
    struct api_request r;
    struct api_error e;
    CHECK_EQ_INT(api_request_parse(&r, API_KIND_CHAT, body, strlen(body), &lim, &e), -1);
    CHECK_EQ_INT(e.status, 413);
    lim.max_body = sizeof(body);
    lim.max_messages = 1;
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
                                 "{\"role\":\"user\",\"content\":\"b\"}]}");
    CHECK_EQ_INT(api_request_parse(&r, API_KIND_CHAT, body, strlen(body), &lim, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    CHECK_EQ_STR(e.code, "array_above_max_length");
    CHECK_EQ_STR(e.param, "messages");
}

static void test_error_json_shape(void)
{
    struct api_error e;
    api_error_set(&e, 400, "invalid_type", "temperature", "Invalid type for '%s'.", "temperature");
    char *j = api_error_json(&e);
    CHECK_EQ_STR(j, "{\"error\":{\"message\":\"Invalid type for 'temperature'.\",\"type\":\"invalid_request_error\","
                    "\"param\":\"temperature\",\"code\":\"invalid_type\"}}");
    free(j);
    api_error_set(&e, 404, NULL, NULL, "Invalid URL (GET /v1/nope)");
    j = api_error_json(&e);
    CHECK_EQ_STR(j, "{\"error\":{\"message\":\"Invalid URL (GET /v1/nope)\",\"type\":\"invalid_request_error\","
                    "\"param\":null,\"code\":null}}");
    free(j);
    api_error_set(&e, 500, "", "", "engine failed: \xff");
    j = api_error_json(&e);
    CHECK_EQ_STR(j, "{\"error\":{\"message\":\"engine failed: \xef\xbf\xbd\",\"type\":\"server_error\","
                    "\"param\":null,\"code\":null}}");
    free(j);
}

int main(void)
{
    RUN(test_chat_minimal);
    RUN(test_chat_all_fields);
    RUN(test_nulls_are_defaults);
    RUN(test_top_p_zero_and_integral_reals);
    RUN(test_completion_prompts);
    RUN(test_tokenize_bodies);
    RUN(test_bad_bodies);
    RUN(test_body_limit);
    RUN(test_cache_salt);
    RUN(test_error_json_shape);
    return test_summary();
}
