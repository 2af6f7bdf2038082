/* tests/unit/test_template_errors.c — every error path of the chat-template
 * interpreter gives a clear message naming the template line: malformed source
 * (unterminated tags, strings, comments and blocks, unknown tags, filters and
 * tests, stray end tags, break outside a loop, bad brackets), runaway templates
 * stopped by the limits (steps, macro recursion, output size, memory), bad
 * context types, and raise_exception. Byte-exact rendering is checked against
 * jinja2 by tests/py/test_templates.py and test_template_features.py. */
#include "template/template.h"
#include "test.h"

static char err[1024];

/* Parse src; expect failure with an error containing each needle. */
static void expect_parse_error(const char *src, const char *needle1, const char *needle2)
{
    struct chat_template *t = (struct chat_template *)1;
    err[0] = 0;
    int rc = chat_template_parse(&t, src, strlen(src), err, sizeof(err));
    CHECK_MSG(rc == -1, "parse of %s succeeded", src);
    if (rc == 0) {
        chat_template_free(t);
        return;
    }
    CHECK(t == NULL);
    CHECK_CONTAINS(err, needle1);
    if (needle2)
        CHECK_CONTAINS(err, needle2);
}

/* Parse (must succeed) and render with ctx_json under lim; expect failure. */
static void expect_render_error(const char *src, const char *ctx_json, const struct chat_template_limits *lim,
                                const char *needle1, const char *needle2)
{
    struct chat_template *t = NULL;
    err[0] = 0;
    int rc = chat_template_parse(&t, src, strlen(src), err, sizeof(err));
    CHECK_MSG(rc == 0, "parse failed: %s", err);
    if (rc)
        return;
    json_error_t jerr;
    json_t *ctx = json_loads(ctx_json, JSON_DECODE_ANY, &jerr);
    CHECK(ctx != NULL);
    struct chat_template_limits def;
    chat_template_limits_default(&def);
    char *out = (char *)1;
    size_t n = 123;
    rc = chat_template_render_limited(t, ctx, lim ? lim : &def, &out, &n, err, sizeof(err));
    CHECK_MSG(rc == -1, "render of %s succeeded", src);
    CHECK(out == NULL);
    CHECK_EQ_U64(n, 0);
    CHECK_CONTAINS(err, needle1);
    if (needle2)
        CHECK_CONTAINS(err, needle2);
    if (rc == 0)
        free(out);
    json_decref(ctx);
    chat_template_free(t);
}

static void test_unterminated(void)
{
    expect_parse_error("hello {% if x", "line 1", "unterminated '{%'");
    expect_parse_error("a\nb\n{{ x ", "line 3", "unterminated '{{'");
    expect_parse_error("a\n{# never closed", "line 2", "unterminated comment");
    expect_parse_error("{{ 'abc }}", "line 1", "unterminated string");
    expect_parse_error("x\n{% if a %}\nyes\n", "line 2", "endif");
    expect_parse_error("{% for m in messages %}\n{{ m }}", "line 1", "endfor");
    expect_parse_error("{% macro f() %}body", "line 1", "endmacro");
    expect_parse_error("{% set x %}body", "line 1", "endset");
}

static void test_malformed(void)
{
    expect_parse_error("{% frobnicate %}", "line 1", "frobnicate");
    expect_parse_error("ok\n{% endif %}", "line 2", "endif");
    expect_parse_error("{% for x in y %}{% endif %}", "line 1", "endif");
    expect_parse_error("{% break %}", "line 1", "outside a loop");
    expect_parse_error("{{ 1 + }}", "line 1", "expected an expression");
    expect_parse_error("{{ (1, 2 }}", "line 1", "unexpected '}'");
    expect_parse_error("{{ a ] }}", "line 1", "unexpected ']'");
    expect_parse_error("{% include 'x.jinja' %}", "line 1", "include");
    expect_parse_error("{{ x @ y }}", "line 1", "unexpected character");
    expect_parse_error("{% for 1 in xs %}{% endfor %}", "line 1", "variable name");
    /* deep nesting is refused instead of exhausting the stack */
    char deep[4096];
    size_t k = 0;
    k += (size_t)snprintf(deep + k, sizeof(deep) - k, "{{ ");
    for (int i = 0; i < 1000; i++)
        deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 1000; i++)
        deep[k++] = ')';
    k += (size_t)snprintf(deep + k, sizeof(deep) - k, " }}");
    expect_parse_error(deep, "line 1", "nest");
}

static void test_unknown_filter_and_test(void)
{
    expect_parse_error("line one\nline two\n{{ x | no_such_filter }}", "line 3", "no_such_filter");
    expect_parse_error("\n{{ x is no_such_test }}", "line 2", "no_such_test");
    /* inside an if, jinja2 only complains when it runs: parse succeeds, render fails when taken */
    struct chat_template *t;
    const char *src = "{% if flag %}\n{{ x | from_json }}\n{% endif %}ok";
    CHECK(chat_template_parse(&t, src, strlen(src), err, sizeof(err)) == 0);
    json_t *off = json_pack("{s:b}", "flag", 0), *on = json_pack("{s:b,s:s}", "flag", 1, "x", "{}");
    char *out;
    size_t n;
    CHECK(chat_template_render(t, off, &out, &n, err, sizeof(err)) == 0);
    if (out) {
        CHECK_EQ_STR(out, "ok");
        free(out);
    }
    CHECK(chat_template_render(t, on, &out, &n, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "line 2");
    CHECK_CONTAINS(err, "from_json");
    json_decref(off);
    json_decref(on);
    chat_template_free(t);
}

static void test_step_limit(void)
{
    struct chat_template_limits lim;
    chat_template_limits_default(&lim);
    lim.max_steps = 100000;
    const char *src = "start\n{% for i in range(100000) %}\n{% for j in range(100000) %}{{ i }}{% endfor %}"
                      "{% endfor %}";
    expect_render_error(src, "{}", &lim, "step limit", "line ");
    /* the line is where the runaway loop was when it was stopped (line 2 or 3) */
    CHECK(strstr(err, "line 2") || strstr(err, "line 3"));
}

static void test_recursion_limit(void)
{
    const char *src = "{% macro f(n) %}\n{{ f(n + 1) }}{% endmacro %}\n{{ f(0) }}";
    expect_render_error(src, "{}", NULL, "recursion limit", "line 2");
    struct chat_template_limits lim;
    chat_template_limits_default(&lim);
    lim.max_depth = 10;
    const char *src2 = "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(20) }}";
    expect_render_error(src2, "{}", &lim, "recursion limit of 10", "line 1");
    /* deep expressions inside recursive macros: the C recursion cap stops it before the stack runs out */
    char deep[1024];
    size_t k = (size_t)snprintf(deep, sizeof(deep), "{%% macro f(n) %%}{{ ");
    for (int i = 0; i < 150; i++)
        deep[k++] = '-';
    snprintf(deep + k, sizeof(deep) - k, "(f(n + 1) | length) }}{%% endmacro %%}\n{{ f(0) }}");
    expect_render_error(deep, "{}", NULL, "nesting limit", "line 1");
}

static void test_output_limit(void)
{
    struct chat_template_limits lim;
    chat_template_limits_default(&lim);
    lim.max_output_bytes = 1 << 20;
    expect_render_error("a\nb\n{% for i in range(100000) %}{{ 'xxxxxxxxxx' * 100 }}{% endfor %}", "{}", &lim,
                        "output limit", "line 3");
    /* text captured by a macro or a set block is bounded too */
    expect_render_error("{% set x %}{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}{% endset %}", "{}",
                        &lim, "output limit", "line 1");
}

static void test_memory_limit(void)
{
    struct chat_template_limits lim;
    chat_template_limits_default(&lim);
    lim.max_memory_bytes = 8 << 20;
    const char *src = "{% set ns = namespace(s='x') %}\n{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                      "{% endfor %}{{ ns.s | length }}";
    struct chat_template *t;
    CHECK(chat_template_parse(&t, src, strlen(src), err, sizeof(err)) == 0);
    char *out = NULL;
    size_t n;
    CHECK(chat_template_render_limited(t, NULL, &lim, &out, &n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "memory limit") || strstr(err, "too long"));
    CHECK_CONTAINS(err, "line 2");
    chat_template_free(t);
}

static void test_bad_context(void)
{
    struct chat_template *t;
    const char *src = "{% for m in messages %}{{ m.role }}{% endfor %}";
    CHECK(chat_template_parse(&t, src, strlen(src), err, sizeof(err)) == 0);
    json_t *arr = json_array();
    char *out;
    size_t n;
    CHECK(chat_template_render(t, arr, &out, &n, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "must be a JSON object");
    json_decref(arr);
    chat_template_free(t);
    expect_render_error("\n{% for m in messages %}{{ m.role }}{% endfor %}", "{\"messages\": 5}", NULL,
                        "'int' object is not iterable", "line 2");
    expect_render_error("{{ messages[0].content.upper() }}", "{\"messages\": [{\"role\": \"user\"}]}", NULL,
                        "is undefined", "line 1");
    expect_render_error("{{ messages + 'x' }}", "{\"messages\": []}", NULL, "unsupported operand", "line 1");
    expect_render_error("{{ messages | tojson }}", "{}", NULL, "not JSON serializable", "line 1");
}

static void test_raise_exception(void)
{
    expect_render_error("ok\n{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
                        "{% endif %}",
                        "{\"messages\": [{\"role\": \"system\", \"content\": \"x\"}]}", NULL,
                        "System role not supported", "line 2");
}

static void test_sandbox(void)
{
    expect_render_error("{% set l = [] %}{{ l.append(1) }}", "{}", NULL, "unsafe", "line 1");
    expect_render_error("{{ messages.pop() }}", "{\"messages\": {\"a\": 1}}", NULL, "unsafe", "line 1");
    expect_render_error("{{ range(1000000) | length }}", "{}", NULL, "Range too big", "line 1");
}

int main(void)
{
    RUN(test_unterminated);
    RUN(test_malformed);
    RUN(test_unknown_filter_and_test);
    RUN(test_step_limit);
    RUN(test_recursion_limit);
    RUN(test_output_limit);
    RUN(test_memory_limit);
    RUN(test_bad_context);
    RUN(test_raise_exception);
    RUN(test_sandbox);
    return test_summary();
}
