/* tests/unit/test_model_registry.c — the architecture registry (src/model/).
 *
 * - Every fixture model opens, and its hyper-parameters equal what its
 *   config.json says (read here with jansson, field by field).
 * - The GGUF conversion of each fixture (written by tools/make_fixtures.py with
 *   llama.cpp's key names) gives the same hyper-parameters, the same Gemma 3
 *   local/global layer pattern, and the same RoPE frequencies — for Llama 3 the
 *   GGUF side comes from the rope_freqs tensor the Python script computed, the
 *   HF side from our own llama3 formula, so the two implementations check each
 *   other.
 * - A config.json that disagrees with the tensors, or carries bad values, is
 *   refused with a message naming the field or the tensor.
 */
#include "test.h"

#include "core/log.h"
#include "model/model.h"

#include <jansson.h>
#include <sys/stat.h>

#define FX "tests/fixtures/engine/"

static const char *g_arch[] = {"llama", "qwen2", "qwen3", "qwen3_moe", "gemma3"};

static long long cfg_int(const json_t *c, const char *k)
{
    return json_integer_value(json_object_get(c, k));
}

static void check_against_config_json(const struct model *m)
{
    const json_t *c = m->file.config;
    const struct model_config *k = &m->cfg;
    CHECK_EQ_INT(k->n_layers, cfg_int(c, "num_hidden_layers"));
    CHECK_EQ_INT(k->dim, cfg_int(c, "hidden_size"));
    CHECK_EQ_INT(k->n_heads, cfg_int(c, "num_attention_heads"));
    CHECK_EQ_INT(k->n_kv_heads, cfg_int(c, "num_key_value_heads"));
    CHECK_EQ_INT(k->head_dim, cfg_int(c, "head_dim"));
    CHECK_EQ_INT(k->vocab, cfg_int(c, "vocab_size"));
    CHECK_EQ_INT(k->max_ctx, cfg_int(c, "max_position_embeddings"));
    CHECK_NEAR(k->norm_eps, json_real_value(json_object_get(c, "rms_norm_eps")), 1e-12);
    CHECK_EQ_INT(k->tied_embeddings, json_is_true(json_object_get(c, "tie_word_embeddings")));
    if (k->arch == MODEL_ARCH_QWEN3_MOE) {
        CHECK_EQ_INT(k->n_experts, cfg_int(c, "num_experts") ? cfg_int(c, "num_experts")
                                                             : cfg_int(c, "num_local_experts"));
        CHECK_EQ_INT(k->n_experts_used, cfg_int(c, "num_experts_per_tok"));
        CHECK_EQ_INT(k->moe_ffn_dim, cfg_int(c, "moe_intermediate_size"));
        CHECK_EQ_INT(k->moe_norm_topk, json_is_true(json_object_get(c, "norm_topk_prob")));
    } else {
        CHECK_EQ_INT(k->ffn_dim, cfg_int(c, "intermediate_size"));
    }
    if (k->arch == MODEL_ARCH_GEMMA3) {
        json_t *lt = json_object_get(c, "layer_types");
        for (uint32_t l = 0; l < k->n_layers; l++)
            CHECK_EQ_INT(m->layers[l].sliding,
                         strcmp(json_string_value(json_array_get(lt, l)), "sliding_attention") == 0);
        CHECK_EQ_INT(k->sliding_window, cfg_int(c, "sliding_window"));
        CHECK_NEAR(k->attn_scale, 1.0 / sqrt(json_number_value(json_object_get(c, "query_pre_attn_scalar"))), 1e-7);
        CHECK_NEAR(k->embed_scale, sqrt((double)k->dim), 1e-6);
    } else {
        CHECK_NEAR(k->attn_scale, 1.0 / sqrt((double)k->head_dim), 1e-7);
    }
}

static void test_hf_and_gguf_agree(void)
{
    for (size_t a = 0; a < sizeof(g_arch) / sizeof(g_arch[0]); a++) {
        char p1[256], p2[256], err[512];
        snprintf(p1, sizeof(p1), FX "%s/hf-f32", g_arch[a]);
        snprintf(p2, sizeof(p2), FX "%s/f16.gguf", g_arch[a]);
        struct model h, g;
        int rh = model_open(&h, p1, err, sizeof(err));
        CHECK_MSG(rh == 0, "%s", err);
        int rg = model_open(&g, p2, err, sizeof(err));
        CHECK_MSG(rg == 0, "%s", err);
        if (rh || rg) {
            if (!rh)
                model_close(&h);
            if (!rg)
                model_close(&g);
            continue;
        }
        check_against_config_json(&h);
        CHECK_EQ_INT(h.cfg.arch, g.cfg.arch);
        CHECK_EQ_INT(h.cfg.n_layers, g.cfg.n_layers);
        CHECK_EQ_INT(h.cfg.dim, g.cfg.dim);
        CHECK_EQ_INT(h.cfg.n_heads, g.cfg.n_heads);
        CHECK_EQ_INT(h.cfg.n_kv_heads, g.cfg.n_kv_heads);
        CHECK_EQ_INT(h.cfg.head_dim, g.cfg.head_dim);
        CHECK_EQ_INT(h.cfg.ffn_dim, g.cfg.ffn_dim);
        CHECK_EQ_INT(h.cfg.vocab, g.cfg.vocab);
        CHECK_EQ_INT(h.cfg.n_experts, g.cfg.n_experts);
        CHECK_EQ_INT(h.cfg.n_experts_used, g.cfg.n_experts_used);
        CHECK_EQ_INT(h.cfg.moe_ffn_dim, g.cfg.moe_ffn_dim);
        CHECK_EQ_INT(h.cfg.moe_norm_topk, g.cfg.moe_norm_topk);
        CHECK_EQ_INT(h.cfg.tied_embeddings, g.cfg.tied_embeddings);
        CHECK_EQ_INT(h.cfg.sliding_window, g.cfg.sliding_window);
        CHECK_NEAR(h.cfg.norm_eps, g.cfg.norm_eps, 1e-12);
        CHECK_NEAR(h.cfg.attn_scale, g.cfg.attn_scale, 1e-7);
        CHECK_NEAR(h.cfg.embed_scale, g.cfg.embed_scale, 1e-6);
        CHECK_EQ_INT(g.cfg.rope_style, h.cfg.arch == MODEL_ARCH_LLAMA ? MODEL_ROPE_NORM : MODEL_ROPE_NEOX);
        CHECK_EQ_INT(h.cfg.rope_style, MODEL_ROPE_NEOX);
        for (uint32_t l = 0; l < h.cfg.n_layers; l++) {
            CHECK_EQ_INT(h.layers[l].sliding, g.layers[l].sliding);
            for (uint32_t i = 0; i < h.cfg.head_dim / 2; i++)
                CHECK_NEAR(h.layers[l].inv_freq[i], g.layers[l].inv_freq[i], 1e-6 * h.layers[l].inv_freq[i]);
        }
        CHECK(model_decode_bytes(&h) <= h.weight_bytes + h.output.rows * h.output.row_bytes);
        fprintf(stderr, "  %s: HF and GGUF agree (%u layers, %.1f kB of weights)\n", g_arch[a], h.cfg.n_layers,
                h.weight_bytes / 1e3);
        model_close(&h);
        model_close(&g);
    }
}

static void test_scaling_kinds(void)
{
    char err[512];
    struct model m;
    CHECK(model_open(&m, FX "llama/hf-f32", err, sizeof(err)) == 0);
    CHECK_EQ_INT(m.cfg.rope_scaling, MODEL_ROPE_SCALING_LLAMA3);
    model_close(&m);
    CHECK(model_open(&m, FX "llama/f16.gguf", err, sizeof(err)) == 0);
    CHECK_EQ_INT(m.cfg.rope_scaling, MODEL_ROPE_SCALING_FREQS);
    model_close(&m);
    if (model_open(&m, FX "gemma3/f16.gguf", err, sizeof(err)) != 0) {
        CHECK_MSG(0, "%s", err);
        return;
    }
    CHECK_EQ_INT(m.cfg.rope_scaling, MODEL_ROPE_SCALING_LINEAR);
    CHECK(m.layers[0].inv_freq == m.inv_freq_local && m.layers[5].inv_freq == m.inv_freq_global);
    model_close(&m);
}

/* A copy of the llama fixture folder with config.json edited by `edit`. */
static const char *edited_copy(const char *name, void (*edit)(json_t *cfg))
{
    const char *dir = test_tmp_path(name);
    char path[4200], src[256];
    mkdir(dir, 0755);
    snprintf(src, sizeof(src), FX "llama/hf-f32/model.safetensors");
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    FILE *in = fopen(src, "rb"), *out = fopen(path, "wb");
    MEMRA_ASSERT(in && out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        MEMRA_ASSERT(fwrite(buf, 1, n, out) == n);
    fclose(in);
    fclose(out);
    json_t *cfg = json_load_file(FX "llama/hf-f32/config.json", 0, NULL);
    MEMRA_ASSERT(cfg);
    edit(cfg);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    MEMRA_ASSERT(json_dump_file(cfg, path, 0) == 0);
    json_decref(cfg);
    return dir;
}

static void e_kv_heads(json_t *c) { json_object_set_new(c, "num_key_value_heads", json_integer(3)); }
static void e_hidden(json_t *c) { json_object_set_new(c, "hidden_size", json_integer(1 << 20)); }
static void e_rope(json_t *c)
{
    json_object_set_new(json_object_get(c, "rope_parameters"), "rope_type", json_string("yarn"));
}
static void e_type(json_t *c) { json_object_set_new(c, "model_type", json_string("bert")); }
static void e_eps(json_t *c) { json_object_set_new(c, "rms_norm_eps", json_string("small")); }
static void e_ffn(json_t *c) { json_object_set_new(c, "intermediate_size", json_integer(96)); }
static void e_layers(json_t *c) { json_object_set_new(c, "num_hidden_layers", json_integer(3)); }
static void e_swa(json_t *c) { json_object_set_new(c, "use_sliding_window", json_true()); }
static void e_tied(json_t *c) { json_object_set_new(c, "vocab_size", json_integer(300)); }

static void test_config_errors(void)
{
    const struct {
        const char *name;
        void (*edit)(json_t *);
        const char *expect;
    } cases[] = {
        {"kvheads", e_kv_heads, "num_key_value_heads"},
        {"hidden", e_hidden, "hidden_size"},
        {"rope", e_rope, "rope_type 'yarn'"},
        {"type", e_type, "model_type 'bert'"},
        {"eps", e_eps, "rms_norm_eps"},
        {"ffn", e_ffn, "model.layers.0.mlp.gate_proj.weight"},
        {"layers", e_layers, "model.layers.2."},
        {"vocab", e_tied, "model.embed_tokens.weight"},
        {"swa", e_swa, "use_sliding_window"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512] = "";
        struct model m;
        const char *dir = edited_copy(cases[i].name, cases[i].edit);
        int rc = model_open(&m, dir, err, sizeof(err));
        CHECK_MSG(rc == -1, "%s accepted", cases[i].name);
        CHECK_CONTAINS(err, cases[i].expect);
        fprintf(stderr, "  refused: %s\n", err);
        if (rc == 0)
            model_close(&m);
    }
}

static void test_arch_names(void)
{
    enum model_arch a;
    for (int i = 0; i < MODEL_ARCH_COUNT; i++) {
        CHECK(model_arch_from_name(model_arch_name((enum model_arch)i), &a));
        CHECK_EQ_INT(a, i);
    }
    CHECK(model_arch_from_name("gemma3_text", &a) && a == MODEL_ARCH_GEMMA3);
    CHECK(model_arch_from_name("qwen3_moe", &a) && a == MODEL_ARCH_QWEN3_MOE);
    CHECK(!model_arch_from_name("mamba", &a));
}

int main(void)
{
    RUN(test_hf_and_gguf_agree);
    RUN(test_scaling_kinds);
    RUN(test_config_errors);
    RUN(test_arch_names);
    return test_summary();
}
