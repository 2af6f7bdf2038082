/* cli/server.c — memra-server: serve models over an OpenAI-compatible HTTP API.
 *
 *   MEMRA_MODELS="alias=PATH[,alias2=PATH2]" memra-server [flags]
 *
 * Every setting is an environment variable and a flag (the flag wins); --help
 * lists them, and docs/FLAGS.md describes them. The work is in src/server/.
 */
#include "core/checked.h"
#include "core/log.h"
#include "server/auth.h"
#include "server/server.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum opt_kind { OPT_STR, OPT_U32, OPT_SIZE, OPT_BOOL, OPT_ADDR, OPT_LOG };

static const struct opt {
    const char *flag;  /* --flag */
    const char *env;   /* MEMRA_... */
    enum opt_kind kind;
    const char *help;
} opts[] = {
    {"models", "MEMRA_MODELS", OPT_STR, "alias=PATH[,alias2=PATH2]: the models to serve (PATH: a .gguf file, a "
                                        ".safetensors file or a Hugging Face folder); required"},
    {"addr", "MEMRA_ADDR", OPT_ADDR, "HOST:PORT to listen on (default 127.0.0.1:8080; port 0 picks a free one)"},
    {"backend", "MEMRA_BACKEND", OPT_STR, "cpu or cuda (default: cuda when built with it and a GPU is usable)"},
    {"slots", "MEMRA_SLOTS", OPT_U32, "sequences decoded together per model (KV slots; default 16)"},
    {"kv-blocks", "MEMRA_KV_BLOCKS", OPT_U32, "KV pool blocks of 16 positions per model (default 0: CPU slots x "
                                              "ctx / 16; CUDA from free memory)"},
    {"kv-type", "MEMRA_KV_TYPE", OPT_STR, "the KV cache's element type: bf16 (default: keys and values rounded to "
                                          "bfloat16) or f32 (twice the bytes, logits closest to transformers' f32)"},
    {"act-type", "MEMRA_ACT_TYPE", OPT_STR, "what every matmul's input holds: f32 (default: exact) or bf16 (rounded "
                                            "as a bf16 model computes; on cuda one tensor-core product, not two)"},
    {"ctx", "MEMRA_CTX", OPT_U32, "positions per sequence, prompt + output (default: the model's, at most 4096)"},
    {"batch-tokens", "MEMRA_BATCH_TOKENS", OPT_U32, "token budget of one engine step: decode tokens + prefill "
                                                    "chunks (default 8192 on cuda, 512 on cpu; at least 2 x slots)"},
    {"threads", "MEMRA_THREADS", OPT_U32, "CPU backend worker threads (default 0: all cores)"},
    {"prefix-reuse", "MEMRA_PREFIX_REUSE", OPT_BOOL, "reuse the KV of a shared prompt prefix (1/0, default 1)"},
    {"max-body", "MEMRA_MAX_BODY", OPT_SIZE, "largest request body in bytes (default 8388608; larger: 413)"},
    {"max-headers", "MEMRA_MAX_HEADERS", OPT_SIZE, "largest request header block in bytes (default 65536)"},
    {"timeout", "MEMRA_TIMEOUT", OPT_U32, "seconds a client may stall reading or writing (default 60)"},
    {"drain", "MEMRA_DRAIN_S", OPT_U32, "seconds in-flight requests get to finish after SIGTERM (default 30)"},
    {"stall", "MEMRA_STALL_S", OPT_U32, "seconds an engine with work may go without a step before /livez and "
                                        "/readyz say stalled (default 60; 0: off)"},
    {"progress", "MEMRA_PROGRESS", OPT_BOOL, "progress bar while weights load, on a terminal (1/0, default 1)"},
    {"log-level", "MEMRA_LOG_LEVEL", OPT_LOG, "debug, info, warn or error (default info)"},
    {"api-key", "MEMRA_API_KEY", OPT_STR, "the one API key clients must send (Authorization: Bearer KEY); prefer "
                                          "the variable (a flag shows in ps)"},
    {"api-keys", "MEMRA_API_KEYS", OPT_STR, "API keyring file (JSON: sha256 of each key -> tenant, lane, enabled, "
                                            "limits), reloaded when it changes; see --gen-key"},
    {"metrics-auth", "MEMRA_METRICS_AUTH", OPT_BOOL, "with keys configured, /metrics needs a key too (1/0, "
                                                     "default 0)"},
    {"max-running", "MEMRA_MAX_RUNNING", OPT_U32, "generation requests handed to the engines at once (default 0: "
                                                  "slots x models); more wait"},
    {"max-queue", "MEMRA_MAX_QUEUE", OPT_U32, "generation requests waiting, all tenants (default 256; beyond: 429)"},
    {"test-load-delay-ms", "MEMRA_TEST_LOAD_DELAY_MS", OPT_U32, "TEST ONLY: wait this long before loading the "
                                                                "models, so tests can see /readyz 503 (default 0)"},
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: MEMRA_MODELS=alias=PATH[,alias2=PATH2] memra-server [--flag VALUE ...]\n\n"
               "Serves the models over an OpenAI-compatible HTTP API: POST /v1/chat/completions,\n"
               "POST /v1/completions, GET /v1/models, POST /tokenize, POST /detokenize,\n"
               "GET /health, /livez, /readyz, /metrics.\n\n"
               "Settings (environment variable, or the flag, which wins):\n");
    for (size_t i = 0; i < N_OPTS; i++)
        fprintf(f, "  --%-14s %-20s %s\n", opts[i].flag, opts[i].env, opts[i].help);
    fprintf(f, "  --gen-key TENANT                    print a new API key and its keyring entry, then exit\n"
               "  --help                              this text\n\nSee docs/SERVING.md and docs/FLAGS.md.\n");
}

static int apply(struct server_config *c, const struct opt *o, char *v, char *err, size_t errlen)
{
    uint64_t x;
    switch (o->kind) {
    case OPT_STR:
        if (!strcmp(o->flag, "models"))
            return server_parse_models(c, v, err, errlen);
        if (!strcmp(o->flag, "kv-type") || !strcmp(o->flag, "act-type")) {
            char why[96];
            const int rc = !strcmp(o->flag, "kv-type") ? backend_kv_type_parse(v, &c->kv_type, why, sizeof why)
                                                       : backend_act_type_parse(v, &c->act_type, why, sizeof why);
            return rc == 0 ? 0 : err_set(err, errlen, "--%s / %s: %s", o->flag, o->env, why);
        }
        if (!strcmp(o->flag, "api-key"))
            c->api_key = v;
        else if (!strcmp(o->flag, "api-keys"))
            c->api_keys = v;
        else
            c->backend = v;
        return 0;
    case OPT_U32:
        if (checked_parse_u64(v, 0, UINT32_MAX, &x))
            return err_set(err, errlen, "--%s / %s: '%s' is not a non-negative integer", o->flag, o->env, v);
        if (!strcmp(o->flag, "slots"))
            c->n_slots = (uint32_t)x;
        else if (!strcmp(o->flag, "ctx"))
            c->ctx = (uint32_t)x;
        else if (!strcmp(o->flag, "kv-blocks"))
            c->kv_blocks = (uint32_t)x;
        else if (!strcmp(o->flag, "batch-tokens"))
            c->batch_tokens = (uint32_t)x;
        else if (!strcmp(o->flag, "threads"))
            c->threads = (uint32_t)x;
        else if (!strcmp(o->flag, "drain"))
            c->drain_s = (uint32_t)x;
        else if (!strcmp(o->flag, "stall"))
            c->stall_s = (uint32_t)x;
        else if (!strcmp(o->flag, "max-running"))
            c->max_running = (uint32_t)x;
        else if (!strcmp(o->flag, "max-queue"))
            c->max_queue = (uint32_t)x;
        else if (!strcmp(o->flag, "test-load-delay-ms"))
            c->test_load_delay_ms = (uint32_t)x;
        else
            c->timeout_s = (uint32_t)x;
        if ((!strcmp(o->flag, "slots") || !strcmp(o->flag, "batch-tokens") || !strcmp(o->flag, "timeout")) && !x)
            return err_set(err, errlen, "--%s / %s must be at least 1", o->flag, o->env);
        return 0;
    case OPT_SIZE:
        if (checked_parse_u64(v, 0, SIZE_MAX / 2, &x) || x == 0)
            return err_set(err, errlen, "--%s / %s: '%s' is not a positive byte count", o->flag, o->env, v);
        if (!strcmp(o->flag, "max-body"))
            c->max_body = (size_t)x;
        else
            c->max_headers = (size_t)x;
        return 0;
    case OPT_BOOL:
        if (strcmp(v, "0") && strcmp(v, "1"))
            return err_set(err, errlen, "--%s / %s: '%s' is not 0 or 1", o->flag, o->env, v);
        if (!strcmp(o->flag, "prefix-reuse"))
            c->prefix_reuse = v[0] == '1';
        else if (!strcmp(o->flag, "metrics-auth"))
            c->metrics_auth = v[0] == '1';
        else
            c->progress = v[0] == '1';
        return 0;
    case OPT_ADDR: {
        char *colon = strrchr(v, ':');
        if (!colon || colon == v || checked_parse_u64(colon + 1, 0, 65535, &x))
            return err_set(err, errlen, "--%s / %s: '%s' is not HOST:PORT", o->flag, o->env, v);
        *colon = '\0';
        c->host = v;
        c->port = (uint16_t)x;
        return 0;
    }
    case OPT_LOG: {
        static const char *names[] = {"debug", "info", "warn", "error"};
        for (int i = 0; i < 4; i++)
            if (!strcmp(v, names[i])) {
                log_set_level((enum log_level)i);
                return 0;
            }
        return err_set(err, errlen, "--%s / %s: '%s' is not debug, info, warn or error", o->flag, o->env, v);
    }
    }
    return -1;
}

/* Setting values are copied (parsing writes into them) and live until exit. */
static char *g_copies[64];
static size_t g_n_copies;

static char *keep(const char *v)
{
    if (g_n_copies == sizeof(g_copies) / sizeof(g_copies[0]))
        return NULL;
    char *c = strdup(v);
    if (c)
        g_copies[g_n_copies++] = c;
    return c;
}

static void free_copies(void)
{
    for (size_t i = 0; i < g_n_copies; i++)
        free(g_copies[i]);
    g_n_copies = 0;
}

/* --gen-key TENANT: the key (shown once, never stored) and the keyring entry
 * that admits it (its sha256 only). */
static int gen_key(const char *tenant)
{
    char key[AUTH_GEN_KEY_LEN], err[256], hex[65];
    if (!tenant || !*tenant || strlen(tenant) >= AUTH_TENANT_MAX) {
        fprintf(stderr, "memra-server: --gen-key needs a tenant name (1..%d bytes)\n", AUTH_TENANT_MAX - 1);
        return 2;
    }
    /* the same rules as the keyring: check the entry we print parses */
    struct auth_keyring ring = {0};
    uint8_t h[32];
    if (auth_gen_key(key, err, sizeof(err))) {
        fprintf(stderr, "memra-server: %s\n", err);
        return 1;
    }
    auth_sha256(key, strlen(key), h);
    auth_hex(h, hex);
    json_t *e = json_pack("{s:s,s:s,s:s,s:b,s:i,s:i}", "sha256", hex, "tenant", tenant, "lane", "interactive",
                          "enabled", 1, "max_concurrent", 0, "max_queued", AUTH_DEFAULT_MAX_QUEUED);
    json_t *doc = json_pack("{s:[O]}", "keys", e);
    char *entry = e ? json_dumps(e, JSON_PRESERVE_ORDER) : NULL, *text = doc ? json_dumps(doc, 0) : NULL;
    json_decref(e);
    json_decref(doc);
    if (!entry || !text)
        snprintf(err, sizeof(err), "cannot build the keyring entry (is the tenant UTF-8?)");
    int bad = !entry || !text || auth_keyring_parse(&ring, text, strlen(text), "--gen-key", err, sizeof(err));
    free(text);
    if (bad) {
        fprintf(stderr, "memra-server: %s\n", err);
        free(entry);
        return 2;
    }
    auth_keyring_free(&ring);
    printf("%s\n", key);
    printf("%s\n", entry);
    free(entry);
    fprintf(stderr, "memra-server: line 1 is the API key for tenant '%s' (shown only now); add line 2 to the\n"
                    "\"keys\" array of the MEMRA_API_KEYS file (it holds only the key's sha256).\n", tenant);
    return 0;
}

int main(int argc, char **argv)
{
    struct server_config c;
    char err[1024];
    server_config_default(&c);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--gen-key"))
            return gen_key(i + 1 < argc ? argv[i + 1] : NULL);
    /* environment first, then flags */
    for (size_t k = 0; k < N_OPTS; k++) {
        const char *v = getenv(opts[k].env);
        if (v && *v) {
            char *copy = keep(v);
            if (!copy || apply(&c, &opts[k], copy, err, sizeof(err))) {
                fprintf(stderr, "memra-server: %s\n", copy ? err : "too many settings");
                free_copies();
                return 2;
            }
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "memra-server: unexpected argument '%s' (see --help)\n", a);
            return 2;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt *o = NULL;
        for (size_t k = 0; k < N_OPTS && !o; k++)
            if (strlen(opts[k].flag) == nlen && !strncmp(opts[k].flag, name, nlen))
                o = &opts[k];
        if (!o) {
            fprintf(stderr, "memra-server: unknown flag '%s' (see --help)\n", a);
            return 2;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            fprintf(stderr, "memra-server: --%s needs a value\n", o->flag);
            return 2;
        }
        char *copy = keep(v);
        if (!copy || apply(&c, o, copy, err, sizeof(err))) {
            fprintf(stderr, "memra-server: %s\n", copy ? err : "too many settings");
            free_copies();
            return 2;
        }
    }
    if (c.n_models == 0) {
        fprintf(stderr, "memra-server: no model given: set MEMRA_MODELS=alias=PATH (or --models)\n\n");
        usage(stderr);
        free_copies();
        return 2;
    }
    int rc = server_run(&c, err, sizeof(err));
    if (rc)
        fprintf(stderr, "memra-server: %s\n", err);
    free_copies();
    return rc ? 1 : 0;
}
