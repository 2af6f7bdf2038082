/* fuzz_template_parse.c — libFuzzer target for the chat-template interpreter:
 * any bytes as template source must either parse or give an error message; a
 * template that parses is rendered with a fixed small context (messages with a
 * system prompt, a tool call and a tool result, tools, special tokens) under
 * tight limits, and must either render (NUL-terminated, out_len bytes) or fail
 * with a message naming a template line. Seeds in
 * tests/fuzz/corpus/fuzz_template_parse/ are small templates using the
 * constructs real chat templates use. */
#include "template/template.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char CONTEXT[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi \\u00e9\"}]},"
    " {\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"think\", \"tool_calls\":"
    " [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1.5}}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"42\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"number\"}}}}}],"
    " \"add_generation_prompt\": true, \"enable_thinking\": false, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *ctx;
    if (!ctx) {
        json_error_t jerr;
        ctx = json_loads(CONTEXT, 0, &jerr);
        if (!ctx)
            abort();
    }
    char err[512];
    err[0] = 0;
    struct chat_template *t;
    if (chat_template_parse(&t, (const char *)data, size, err, sizeof(err)) < 0) {
        if (!err[0])
            abort(); /* every failure explains itself */
        return 0;
    }
    struct chat_template_limits lim;
    chat_template_limits_default(&lim);
    lim.max_steps = 200000;
    lim.max_output_bytes = 1 << 20;
    lim.max_depth = 50;
    lim.max_memory_bytes = 64 << 20;
    char *out = NULL;
    size_t n = 0;
    err[0] = 0;
    if (chat_template_render_limited(t, ctx, &lim, &out, &n, err, sizeof(err)) == 0) {
        if (!out || out[n] != 0 || n > lim.max_output_bytes)
            abort();
        free(out);
    } else if (!strstr(err, "line ") || out ||
               /* our own fallback text, unless the template itself wrote it (raise_exception) */
               (strstr(err, "without a message") && !memmem(data, size, "without a message", 17))) {
        abort();
    }
    chat_template_free(t);
    return 0;
}
