/* tests/unit/test_template_render.c — the chat-template API as the server uses it:
 * parse once, render many times, from several threads at once (each result must
 * equal the single-threaded render of the same context); every shared template in
 * ../shared/testdata/templates parses; a handful of language features whose
 * expected text was produced by jinja2 (the same cases run against jinja2 in
 * tests/py/test_template_features.py); the limits defaults; NULL/empty inputs. */
#include "template/template.h"
#include "test.h"

#include <dirent.h>
#include <pthread.h>

static char err[1024];

static char *render_str(const char *src, const char *ctx_json)
{
    struct chat_template *t;
    if (chat_template_parse(&t, src, strlen(src), err, sizeof(err)) < 0)
        return NULL;
    json_error_t jerr;
    json_t *ctx = ctx_json ? json_loads(ctx_json, 0, &jerr) : NULL;
    char *out = NULL;
    size_t n;
    if (chat_template_render(t, ctx, &out, &n, err, sizeof(err)) == 0)
        CHECK_EQ_U64(n, strlen(out));
    json_decref(ctx);
    chat_template_free(t);
    return out;
}

static void expect_render(const char *src, const char *ctx_json, const char *want)
{
    char *got = render_str(src, ctx_json);
    CHECK_MSG(got != NULL, "render of %s failed: %s", src, err);
    if (got)
        CHECK_EQ_STR(got, want);
    free(got);
}

/* Expected strings below were printed by jinja2 3.1.6 under transformers' settings. */
static void test_features(void)
{
    expect_render("a\n  {% if true %}\n  b\n  {% endif %}\nc", NULL, "a\n  b\nc");
    expect_render("{{ [1, 'a', none, true, 1.5, {'k': \"it's\"}] }}", NULL, "[1, 'a', None, True, 1.5, {'k': \"it's\"}]");
    expect_render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} {{ 1e20 }} {{ 0.1 + 0.2 }}", NULL,
                  "3 -4 3.5 1e+20 0.30000000000000004");
    expect_render("{% set c = 0 %}{% for i in range(3) %}{% set c = c + 1 %}{{ c }}{% endfor %}{{ c }}", NULL,
                  "1110");
    expect_render("{{ d | tojson }}|{{ d | tojson(indent=2) }}", "{\"d\": {\"a\": [1, \"\\u00e9\"]}}",
                  "{\"a\": [1, \"\xc3\xa9\"]}|{\n  \"a\": [\n    1,\n    \"\xc3\xa9\"\n  ]\n}");
    expect_render("{% for m in messages %}{{ loop.index }}:{{ m.role }}{{ ',' if not loop.last }}{% endfor %}",
                  "{\"messages\": [{\"role\": \"system\"}, {\"role\": \"user\"}]}", "1:system,2:user");
    expect_render("{{ 'h\xc3\xa9llo'[1] }}{{ 'h\xc3\xa9llo'[::-1] }}", NULL, "\xc3\xa9oll\xc3\xa9h");
    /* an empty string or list times a huge count: empty, at once (fuzz_template_parse found the loop, 2026-12-07) */
    expect_render("{{ ('' * 81 ** 5) | length }}|{{ ([] * 81 ** 5) | length }}|{{ [] * 3 }}|{{ 'ab' * 2 }}", NULL,
                  "0|0|[]|abab");
    /* integer powers: -1's sign by the exponent's parity (an odd power of -1 once gave 1), huge exponents at once */
    expect_render("{{ (-1) ** 3 }}|{{ (-1) ** 4 }}|{{ 0 ** 0 }}|{{ 0 ** 5 }}|{{ 1 ** 99 }}|{{ 2 ** 10 }}|"
                  "{{ (-2) ** 3 }}|{{ (-1) ** (10 ** 18 + 1) }}",
                  NULL, "-1|1|1|0|1|1024|-8|-1");
}

static void test_empty_and_null(void)
{
    expect_render("", NULL, "");
    expect_render("plain text\n", NULL, "plain text");
    struct chat_template *t;
    CHECK(chat_template_parse(&t, NULL, 0, err, sizeof(err)) == 0);
    char *out;
    size_t n;
    CHECK(chat_template_render(t, NULL, &out, &n, err, sizeof(err)) == 0);
    CHECK_EQ_U64(n, 0);
    free(out);
    CHECK(chat_template_render_limited(t, NULL, NULL, &out, &n, err, sizeof(err)) == -1);
    chat_template_free(t);
    chat_template_free(NULL);
    struct chat_template_limits lim;
    chat_template_limits_default(&lim);
    CHECK(lim.max_output_bytes > 0 && lim.max_steps > 0 && lim.max_depth > 0 && lim.max_memory_bytes > 0);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void test_shared_templates_parse(void)
{
    const char *dir = test_shared_path("testdata/templates");
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s", dir);
    if (!d)
        return;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".jinja") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        size_t len;
        char *src = read_file(path, &len);
        CHECK_MSG(src != NULL, "cannot read %s", path);
        if (!src)
            continue;
        struct chat_template *t;
        int rc = chat_template_parse(&t, src, len, err, sizeof(err));
        CHECK_MSG(rc == 0, "%s: %s", e->d_name, err);
        if (rc == 0)
            chat_template_free(t);
        free(src);
        count++;
    }
    closedir(d);
    CHECK_MSG(count >= 60, "only %d templates found", count);
}

/* ---- concurrent rendering of one parsed template */

#define N_THREADS 4
#define N_ROUNDS 40

struct job {
    const struct chat_template *t;
    json_t *ctx[3];
    char *want[3];
    int mismatches, failures;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    char e[256];
    for (int i = 0; i < N_ROUNDS; i++) {
        int k = i % 3;
        char *out;
        size_t n;
        if (chat_template_render(j->t, j->ctx[k], &out, &n, e, sizeof(e)) < 0) {
            __atomic_add_fetch(&j->failures, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (strcmp(out, j->want[k]) != 0)
            __atomic_add_fetch(&j->mismatches, 1, __ATOMIC_RELAXED);
        free(out);
    }
    return NULL;
}

static void test_concurrent_render(void)
{
    size_t len;
    char *src = read_file(test_shared_path("testdata/templates/Qwen-Qwen3-0.6B.jinja"), &len);
    CHECK(src != NULL);
    if (!src)
        return;
    struct chat_template *t;
    CHECK(chat_template_parse(&t, src, len, err, sizeof(err)) == 0);
    free(src);
    struct job j = {.t = t};
    const char *ctxs[3] = {
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"add_generation_prompt\": true}",
        "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": "
        "\"2+2?\"}, {\"role\": \"assistant\", \"content\": \"4\"}], \"add_generation_prompt\": false}",
        "{\"messages\": [{\"role\": \"user\", \"content\": \"weather?\"}], \"tools\": [{\"type\": \"function\", "
        "\"function\": {\"name\": \"w\", \"parameters\": {\"type\": \"object\"}}}], \"add_generation_prompt\": true,"
        " \"enable_thinking\": false}",
    };
    for (int k = 0; k < 3; k++) {
        json_error_t jerr;
        j.ctx[k] = json_loads(ctxs[k], 0, &jerr);
        CHECK(j.ctx[k] != NULL);
        size_t n;
        CHECK(chat_template_render(t, j.ctx[k], &j.want[k], &n, err, sizeof(err)) == 0);
        CHECK(j.want[k] && n > 0);
    }
    CHECK(strcmp(j.want[0], j.want[1]) != 0 && strcmp(j.want[0], j.want[2]) != 0);
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, worker, &j) == 0);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ_INT(j.failures, 0);
    CHECK_EQ_INT(j.mismatches, 0);
    for (int k = 0; k < 3; k++) {
        free(j.want[k]);
        json_decref(j.ctx[k]);
    }
    chat_template_free(t);
}

int main(void)
{
    RUN(test_features);
    RUN(test_empty_and_null);
    RUN(test_shared_templates_parse);
    RUN(test_concurrent_render);
    return test_summary();
}
