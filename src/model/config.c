/* model/config.c — hyper-parameters of the supported architectures, from GGUF
 * metadata ("{arch}.block_count", ...) or from a Hugging Face config.json.
 *
 * Both paths fill the same struct model_config and end in one validation
 * (config_check) that bounds every count before anything is sized from it.
 * Errors name the GGUF key or the config.json field. Architecture-specific
 * defaults follow the reference implementations: llama.cpp for GGUF files
 * (e.g. Gemma 3's sliding-window pattern of 6 and local RoPE base 10000, which
 * its GGUF files do not store), transformers for config.json.
 */
#include "model/model.h"
#include "core/log.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    enum model_arch arch;
} g_arch_names[] = {
    {"llama", MODEL_ARCH_LLAMA},       {"qwen2", MODEL_ARCH_QWEN2},
    {"qwen3", MODEL_ARCH_QWEN3},       {"qwen3moe", MODEL_ARCH_QWEN3_MOE},
    {"qwen3_moe", MODEL_ARCH_QWEN3_MOE}, {"gemma3", MODEL_ARCH_GEMMA3},
    {"gemma3_text", MODEL_ARCH_GEMMA3},
};

const char *model_arch_name(enum model_arch a)
{
    static const char *names[MODEL_ARCH_COUNT] = {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3"};
    MEMRA_ASSERT((unsigned)a < MODEL_ARCH_COUNT);
    return names[a];
}

bool model_arch_from_name(const char *name, enum model_arch *out)
{
    for (size_t i = 0; i < sizeof(g_arch_names) / sizeof(g_arch_names[0]); i++) {
        if (strcmp(name, g_arch_names[i].name) == 0) {
            *out = g_arch_names[i].arch;
            return true;
        }
    }
    return false;
}

/* Architecture traits shared by both sources. */
static void config_set_traits(struct model_config *c)
{
    c->act = MODEL_ACT_SILU;
    c->embed_scale = 1.0f;
    c->qkv_bias = c->arch == MODEL_ARCH_QWEN2;
    c->qk_norm = c->arch == MODEL_ARCH_QWEN3 || c->arch == MODEL_ARCH_QWEN3_MOE || c->arch == MODEL_ARCH_GEMMA3;
    c->sandwich_norm = c->arch == MODEL_ARCH_GEMMA3;
    if (c->arch == MODEL_ARCH_GEMMA3)
        c->act = MODEL_ACT_GELU_TANH;
    c->rope_style = MODEL_ROPE_NEOX;
    c->rope_theta = 10000.0f;
    c->rope_theta_local = 10000.0f;
    c->moe_norm_topk = true;
}

static int check_range(const char *path, const char *field, uint64_t v, uint64_t lo, uint64_t hi, char *err,
                       size_t errlen)
{
    if (v < lo || v > hi)
        return err_set(err, errlen, "%s: field '%s' = %llu is out of range [%llu, %llu]", path, field,
                       (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
    return 0;
}

/* The names of the fields config_check bounds, as the source spells them. */
enum { F_LAYERS, F_DIM, F_HEADS, F_KV_HEADS, F_HEAD_DIM, F_VOCAB, F_CTX, F_FFN, F_EXPERTS, F_EXPERTS_USED,
       F_MOE_FFN, F_EPS, F_COUNT };
static const char *g_hf_fields[F_COUNT] = {
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
    "max_position_embeddings", "intermediate_size", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "rms_norm_eps"};
static const char *g_gguf_fields[F_COUNT] = {
    "block_count", "embedding_length", "attention.head_count", "attention.head_count_kv", "attention.key_length",
    "vocab_size", "context_length", "feed_forward_length", "expert_count", "expert_used_count",
    "expert_feed_forward_length", "attention.layer_norm_rms_epsilon"};

/* Bounds and consistency: every later size computation relies on these.
 * f[] names each field for the message (config.json field or GGUF key). */
static int config_check(const struct model *m, const char *const *f, char *err, size_t errlen)
{
    const struct model_config *c = &m->cfg;
    const char *p = m->file.path;
    if (check_range(p, f[F_LAYERS], c->n_layers, 1, MODEL_MAX_LAYERS, err, errlen) ||
        check_range(p, f[F_DIM], c->dim, 1, MODEL_MAX_DIM, err, errlen) ||
        check_range(p, f[F_HEADS], c->n_heads, 1, MODEL_MAX_HEADS, err, errlen) ||
        check_range(p, f[F_KV_HEADS], c->n_kv_heads, 1, c->n_heads, err, errlen) ||
        check_range(p, f[F_HEAD_DIM], c->head_dim, 2, MODEL_MAX_HEAD_DIM, err, errlen) ||
        check_range(p, f[F_VOCAB], c->vocab, 1, MODEL_MAX_VOCAB, err, errlen) ||
        check_range(p, f[F_CTX], c->max_ctx, 1, MODEL_MAX_CTX, err, errlen))
        return -1;
    if (c->n_heads % c->n_kv_heads != 0)
        return err_set(err, errlen, "%s: %s = %u is not a multiple of %s = %u (grouped-query attention)", p,
                       f[F_HEADS], c->n_heads, f[F_KV_HEADS], c->n_kv_heads);
    if (c->head_dim % 2 != 0)
        return err_set(err, errlen, "%s: %s = %u is odd (RoPE needs pairs)", p, f[F_HEAD_DIM], c->head_dim);
    if (c->n_experts == 0) {
        if (check_range(p, f[F_FFN], c->ffn_dim, 1, MODEL_MAX_FFN, err, errlen))
            return -1;
    } else {
        if (check_range(p, f[F_EXPERTS], c->n_experts, 1, MODEL_MAX_EXPERTS, err, errlen) ||
            check_range(p, f[F_EXPERTS_USED], c->n_experts_used, 1, c->n_experts, err, errlen) ||
            check_range(p, f[F_MOE_FFN], c->moe_ffn_dim, 1, MODEL_MAX_FFN, err, errlen))
            return -1;
    }
    if (!(c->norm_eps > 0.0f && c->norm_eps < 1.0f))
        return err_set(err, errlen, "%s: %s = %g is out of range (0, 1)", p, f[F_EPS], (double)c->norm_eps);
    if (!(c->rope_theta > 1.0f && isfinite(c->rope_theta)) ||
        !(c->rope_theta_local > 1.0f && isfinite(c->rope_theta_local)))
        return err_set(err, errlen, "%s: RoPE base %g is not a number > 1", p, (double)c->rope_theta);
    if ((c->rope_scaling == MODEL_ROPE_SCALING_LINEAR || c->rope_scaling == MODEL_ROPE_SCALING_LLAMA3) &&
        !(c->rope_factor >= 1.0f && c->rope_factor <= 1e6f))
        return err_set(err, errlen, "%s: RoPE scaling factor %g is out of range [1, 1e6]", p, (double)c->rope_factor);
    if (c->rope_scaling == MODEL_ROPE_SCALING_LLAMA3 &&
        !(c->rope_high_freq_factor > c->rope_low_freq_factor && c->rope_low_freq_factor > 0.0f &&
          c->rope_orig_ctx > 0))
        return err_set(err, errlen, "%s: llama3 RoPE scaling needs high_freq_factor > low_freq_factor > 0 and "
                       "original_max_position_embeddings > 0", p);
    if (!(c->attn_scale > 0.0f && isfinite(c->attn_scale)))
        return err_set(err, errlen, "%s: attention scale %g is invalid", p, (double)c->attn_scale);
    if (!(c->final_softcap >= 0.0f && isfinite(c->final_softcap)))
        return err_set(err, errlen, "%s: final logit softcap %g is invalid", p, (double)c->final_softcap);
    return 0;
}

static int config_alloc_layers(struct model *m, char *err, size_t errlen)
{
    m->layers = arena_alloc(&m->arena, sizeof(struct model_layer) * m->cfg.n_layers);
    if (!m->layers)
        return err_set(err, errlen, "%s: out of memory for %u layers", m->file.path, m->cfg.n_layers);
    return 0;
}

/* ---- GGUF ------------------------------------------------------------------ */

static int gguf_u32(const struct model *m, const char *key, uint32_t *out, bool required, char *err,
                    size_t errlen)
{
    uint64_t v;
    if (!model_file_find_kv(&m->file, key)) {
        if (required)
            return err_set(err, errlen, "%s: metadata key '%s' is missing", m->file.path, key);
        return 0; /* keep the default */
    }
    if (model_file_get_u64(&m->file, key, &v, err, errlen) != 0)
        return -1;
    if (v > UINT32_MAX)
        return err_set(err, errlen, "%s: metadata key '%s' = %llu is too large", m->file.path, key,
                       (unsigned long long)v);
    *out = (uint32_t)v;
    return 0;
}

static int gguf_f32(const struct model *m, const char *key, float *out, bool required, char *err, size_t errlen)
{
    double v;
    if (!model_file_find_kv(&m->file, key)) {
        if (required)
            return err_set(err, errlen, "%s: metadata key '%s' is missing", m->file.path, key);
        return 0;
    }
    if (model_file_get_f64(&m->file, key, &v, err, errlen) != 0)
        return -1;
    *out = (float)v;
    return 0;
}

int model_config_from_gguf(struct model *m, char *err, size_t errlen)
{
    struct model_config *c = &m->cfg;
    struct mf_str arch;
    if (model_file_get_str(&m->file, "general.architecture", &arch, err, errlen) != 0)
        return -1;
    if (!model_arch_from_name(arch.ptr, &c->arch))
        return err_set(err, errlen, "%s: general.architecture '%s' is not supported (llama, qwen2, qwen3, "
                       "qwen3moe, gemma3)", m->file.path, arch.ptr);
    config_set_traits(c);
    if (c->arch == MODEL_ARCH_LLAMA)
        c->rope_style = MODEL_ROPE_NORM; /* the converter permuted Q/K rows */

    const char *a = arch.ptr;
    char key[160];
#define KEY(suffix) (snprintf(key, sizeof(key), "%s." suffix, a), key)
    if (gguf_u32(m, KEY("block_count"), &c->n_layers, true, err, errlen) ||
        gguf_u32(m, KEY("embedding_length"), &c->dim, true, err, errlen) ||
        gguf_u32(m, KEY("attention.head_count"), &c->n_heads, true, err, errlen))
        return -1;
    c->n_kv_heads = c->n_heads;
    c->max_ctx = 2048;
    if (gguf_u32(m, KEY("attention.head_count_kv"), &c->n_kv_heads, false, err, errlen) ||
        gguf_u32(m, KEY("context_length"), &c->max_ctx, false, err, errlen) ||
        gguf_f32(m, KEY("attention.layer_norm_rms_epsilon"), &c->norm_eps, true, err, errlen) ||
        gguf_f32(m, KEY("rope.freq_base"), &c->rope_theta, false, err, errlen))
        return -1;
    if (c->n_heads == 0)
        return err_set(err, errlen, "%s: metadata key '%s' is 0", m->file.path, KEY("attention.head_count"));
    c->head_dim = c->dim / c->n_heads;
    if (gguf_u32(m, KEY("attention.key_length"), &c->head_dim, false, err, errlen))
        return -1;
    uint32_t v_len = c->head_dim, rope_dims = c->head_dim;
    if (gguf_u32(m, KEY("attention.value_length"), &v_len, false, err, errlen) ||
        gguf_u32(m, KEY("rope.dimension_count"), &rope_dims, false, err, errlen))
        return -1;
    if (v_len != c->head_dim)
        return err_set(err, errlen, "%s: %s = %u differs from the key length %u (not supported)", m->file.path,
                       KEY("attention.value_length"), v_len, c->head_dim);
    if (rope_dims != c->head_dim)
        return err_set(err, errlen, "%s: %s = %u: partial RoPE is not supported (head dimension %u)",
                       m->file.path, KEY("rope.dimension_count"), rope_dims, c->head_dim);

    if (c->arch == MODEL_ARCH_QWEN3_MOE) {
        if (gguf_u32(m, KEY("expert_count"), &c->n_experts, true, err, errlen) ||
            gguf_u32(m, KEY("expert_used_count"), &c->n_experts_used, true, err, errlen) ||
            gguf_u32(m, KEY("expert_feed_forward_length"), &c->moe_ffn_dim, true, err, errlen))
            return -1;
        if (model_file_find_kv(&m->file, KEY("expert_weights_norm")) &&
            model_file_get_bool(&m->file, key, &c->moe_norm_topk, err, errlen) != 0)
            return -1;
        if (gguf_u32(m, KEY("feed_forward_length"), &c->ffn_dim, false, err, errlen))
            return -1;
    } else if (gguf_u32(m, KEY("feed_forward_length"), &c->ffn_dim, true, err, errlen)) {
        return -1;
    }

    /* RoPE scaling of the global layers */
    struct mf_str stype;
    if (model_file_find_kv(&m->file, KEY("rope.scaling.type"))) {
        if (model_file_get_str(&m->file, key, &stype, err, errlen) != 0)
            return -1;
        if (strcmp(stype.ptr, "linear") == 0) {
            c->rope_scaling = MODEL_ROPE_SCALING_LINEAR;
            if (gguf_f32(m, KEY("rope.scaling.factor"), &c->rope_factor, true, err, errlen))
                return -1;
        } else if (strcmp(stype.ptr, "none") != 0) {
            return err_set(err, errlen, "%s: %s '%s' is not supported (none, linear; llama3 scaling comes as the "
                           "rope_freqs.weight tensor)", m->file.path, key, stype.ptr);
        }
    }
    if (model_file_find_tensor(&m->file, "rope_freqs.weight"))
        c->rope_scaling = MODEL_ROPE_SCALING_FREQS;

    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    if (c->arch == MODEL_ARCH_GEMMA3) {
        c->embed_scale = sqrtf((float)c->dim);
        c->rope_theta_local = 10000.0f;
        if (gguf_u32(m, KEY("attention.sliding_window"), &c->sliding_window, false, err, errlen) ||
            gguf_f32(m, KEY("final_logit_softcapping"), &c->final_softcap, false, err, errlen))
            return -1;
        /* GGUF does not store query_pre_attn_scalar; as llama.cpp does, the
         * 27B model (62 layers) uses dim / n_heads, the others head_dim */
        if (c->n_layers == 62 && c->n_heads > 0)
            c->attn_scale = 1.0f / sqrtf((float)(c->dim / c->n_heads));
        if (model_file_find_kv(&m->file, KEY("attention.query_pre_attn_scalar"))) {
            float s = 0.0f;
            if (gguf_f32(m, key, &s, true, err, errlen))
                return -1;
            if (!(s > 0.0f))
                return err_set(err, errlen, "%s: %s must be > 0", m->file.path, key);
            c->attn_scale = 1.0f / sqrtf(s);
        }
    }
    if (model_file_find_kv(&m->file, KEY("vocab_size"))) {
        if (gguf_u32(m, key, &c->vocab, true, err, errlen))
            return -1;
    } else {
        const struct mf_tensor *t = model_file_find_tensor(&m->file, "token_embd.weight");
        if (!t)
            return err_set(err, errlen, "%s: tensor 'token_embd.weight' is missing", m->file.path);
        c->vocab = t->shape[0] > UINT32_MAX ? UINT32_MAX : (uint32_t)t->shape[0];
    }
    c->tied_embeddings = model_file_find_tensor(&m->file, "output.weight") == NULL;
#undef KEY
    char names[F_COUNT][160];
    const char *fields[F_COUNT];
    for (int i = 0; i < F_COUNT; i++) {
        snprintf(names[i], sizeof(names[i]), "%s.%s", a, g_gguf_fields[i]);
        fields[i] = names[i];
    }
    if (config_check(m, fields, err, errlen) || config_alloc_layers(m, err, errlen))
        return -1;

    /* Gemma 3: local layers follow a fixed pattern (5 local, 1 global) unless
     * the file says otherwise with a per-layer bool array or a period. */
    if (c->arch == MODEL_ARCH_GEMMA3) {
        uint32_t period = 6;
        snprintf(key, sizeof(key), "%s.attention.sliding_window_pattern", a);
        const struct mf_value *pv = model_file_find_kv(&m->file, key);
        if (pv && pv->type == MF_VT_ARR) {
            if (pv->v.arr.type != MF_VT_BOOL || pv->v.arr.n != c->n_layers)
                return err_set(err, errlen, "%s: %s must be %u bools", m->file.path, key, c->n_layers);
            const bool *b = pv->v.arr.data;
            for (uint32_t l = 0; l < c->n_layers; l++)
                m->layers[l].sliding = b[l];
        } else {
            if (pv && gguf_u32(m, key, &period, true, err, errlen))
                return -1;
            for (uint32_t l = 0; l < c->n_layers; l++)
                m->layers[l].sliding = period > 0 && (l + 1) % period != 0;
        }
        if (c->sliding_window == 0)
            for (uint32_t l = 0; l < c->n_layers; l++)
                m->layers[l].sliding = false;
    }
    return 0;
}

/* ---- config.json ----------------------------------------------------------- */

static int hf_u32(const struct model *m, const json_t *cfg, const char *field, uint32_t *out, bool required,
                  char *err, size_t errlen)
{
    json_t *v = json_object_get(cfg, field);
    if (!v || json_is_null(v)) {
        if (required)
            return err_set(err, errlen, "%s: config.json field '%s' is missing", m->file.path, field);
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (json_int_t)UINT32_MAX)
        return err_set(err, errlen, "%s: config.json field '%s' is not a non-negative 32-bit integer",
                       m->file.path, field);
    *out = (uint32_t)json_integer_value(v);
    return 0;
}

static int hf_f32(const struct model *m, const json_t *cfg, const char *field, float *out, bool required,
                  char *err, size_t errlen)
{
    json_t *v = json_object_get(cfg, field);
    if (!v || json_is_null(v)) {
        if (required)
            return err_set(err, errlen, "%s: config.json field '%s' is missing", m->file.path, field);
        return 0;
    }
    if (!json_is_number(v))
        return err_set(err, errlen, "%s: config.json field '%s' is not a number", m->file.path, field);
    *out = (float)json_number_value(v);
    return 0;
}

/* One RoPE parameter set: transformers ≥ 5 "rope_parameters" ({rope_type,
 * rope_theta, factor, ...}) or ≤ 4 "rope_scaling" plus a top-level rope_theta. */
static int hf_rope(struct model *m, const json_t *rp, float *theta, bool global, char *err, size_t errlen)
{
    struct model_config *c = &m->cfg;
    if (!rp || json_is_null(rp))
        return 0;
    if (!json_is_object(rp))
        return err_set(err, errlen, "%s: config.json RoPE parameters are not an object", m->file.path);
    if (hf_f32(m, rp, "rope_theta", theta, false, err, errlen))
        return -1;
    json_t *jt = json_object_get(rp, "rope_type");
    if (!jt)
        jt = json_object_get(rp, "type");
    const char *type = json_is_string(jt) ? json_string_value(jt) : "default";
    if (strcmp(type, "default") == 0)
        return 0;
    if (!global)
        return err_set(err, errlen, "%s: config.json rope_type '%s' on sliding layers is not supported",
                       m->file.path, type);
    if (strcmp(type, "linear") == 0) {
        c->rope_scaling = MODEL_ROPE_SCALING_LINEAR;
        return hf_f32(m, rp, "factor", &c->rope_factor, true, err, errlen);
    }
    if (strcmp(type, "llama3") == 0) {
        c->rope_scaling = MODEL_ROPE_SCALING_LLAMA3;
        if (hf_f32(m, rp, "factor", &c->rope_factor, true, err, errlen) ||
            hf_f32(m, rp, "low_freq_factor", &c->rope_low_freq_factor, true, err, errlen) ||
            hf_f32(m, rp, "high_freq_factor", &c->rope_high_freq_factor, true, err, errlen) ||
            hf_u32(m, rp, "original_max_position_embeddings", &c->rope_orig_ctx, true, err, errlen))
            return -1;
        return 0;
    }
    return err_set(err, errlen, "%s: config.json rope_type '%s' is not supported (default, linear, llama3)",
                   m->file.path, type);
}

int model_config_from_hf(struct model *m, char *err, size_t errlen)
{
    struct model_config *c = &m->cfg;
    const json_t *cfg = m->file.config;
    if (!json_is_object(cfg))
        return err_set(err, errlen, "%s: config.json is missing or not an object", m->file.path);
    json_t *mt = json_object_get(cfg, "model_type");
    if (!json_is_string(mt))
        return err_set(err, errlen, "%s: config.json field 'model_type' is missing", m->file.path);
    if (!model_arch_from_name(json_string_value(mt), &c->arch) || strcmp(json_string_value(mt), "gemma3") == 0 ||
        strcmp(json_string_value(mt), "qwen3moe") == 0)
        return err_set(err, errlen, "%s: config.json model_type '%s' is not supported (llama, qwen2, qwen3, "
                       "qwen3_moe, gemma3_text)", m->file.path, json_string_value(mt));
    config_set_traits(c);

    if (hf_u32(m, cfg, "num_hidden_layers", &c->n_layers, true, err, errlen) ||
        hf_u32(m, cfg, "hidden_size", &c->dim, true, err, errlen) ||
        hf_u32(m, cfg, "num_attention_heads", &c->n_heads, true, err, errlen) ||
        hf_u32(m, cfg, "vocab_size", &c->vocab, true, err, errlen) ||
        hf_f32(m, cfg, "rms_norm_eps", &c->norm_eps, true, err, errlen))
        return -1;
    if (c->n_heads == 0)
        return err_set(err, errlen, "%s: config.json field 'num_attention_heads' is 0", m->file.path);
    c->n_kv_heads = c->n_heads;
    c->head_dim = c->dim / c->n_heads;
    c->max_ctx = 2048;
    if (hf_u32(m, cfg, "num_key_value_heads", &c->n_kv_heads, false, err, errlen) ||
        hf_u32(m, cfg, "head_dim", &c->head_dim, false, err, errlen) ||
        hf_u32(m, cfg, "max_position_embeddings", &c->max_ctx, false, err, errlen) ||
        hf_f32(m, cfg, "rope_theta", &c->rope_theta, false, err, errlen))
        return -1;

    if (c->arch == MODEL_ARCH_QWEN3_MOE) {
        uint32_t step = 1;
        c->moe_norm_topk = false; /* transformers' default */
        if (hf_u32(m, cfg, json_object_get(cfg, "num_experts") ? "num_experts" : "num_local_experts", &c->n_experts,
                   true, err, errlen) ||
            hf_u32(m, cfg, "num_experts_per_tok", &c->n_experts_used, true, err, errlen) ||
            hf_u32(m, cfg, "moe_intermediate_size", &c->moe_ffn_dim, true, err, errlen) ||
            hf_u32(m, cfg, "intermediate_size", &c->ffn_dim, false, err, errlen) ||
            hf_u32(m, cfg, "decoder_sparse_step", &step, false, err, errlen))
            return -1;
        json_t *nt = json_object_get(cfg, "norm_topk_prob");
        if (nt && json_is_boolean(nt))
            c->moe_norm_topk = json_is_true(nt);
        json_t *mlp_only = json_object_get(cfg, "mlp_only_layers");
        if (step != 1 || (json_is_array(mlp_only) && json_array_size(mlp_only) > 0))
            return err_set(err, errlen, "%s: config.json decoder_sparse_step/mlp_only_layers: models mixing dense "
                           "and MoE layers are not supported", m->file.path);
    } else if (hf_u32(m, cfg, "intermediate_size", &c->ffn_dim, true, err, errlen)) {
        return -1;
    }

    json_t *sw = json_object_get(cfg, "use_sliding_window");
    if (c->arch != MODEL_ARCH_GEMMA3 && json_is_true(sw))
        return err_set(err, errlen, "%s: config.json use_sliding_window = true is not supported for %s",
                       m->file.path, json_string_value(mt));
    /* tie_word_embeddings defaults differ per model class; the file decides:
     * without lm_head.weight the output projection is the embedding. */
    c->tied_embeddings = model_file_find_tensor(&m->file, "lm_head.weight") == NULL;
    c->attn_scale = 1.0f / sqrtf((float)(c->head_dim ? c->head_dim : 1));

    json_t *rp = json_object_get(cfg, "rope_parameters");
    if (c->arch == MODEL_ARCH_GEMMA3) {
        c->embed_scale = sqrtf((float)c->dim);
        c->rope_theta = 1000000.0f;
        float qscale = 0.0f;
        if (hf_f32(m, cfg, "rope_theta", &c->rope_theta, false, err, errlen) ||
            hf_f32(m, cfg, "rope_local_base_freq", &c->rope_theta_local, false, err, errlen) ||
            hf_u32(m, cfg, "sliding_window", &c->sliding_window, false, err, errlen) ||
            hf_f32(m, cfg, "query_pre_attn_scalar", &qscale, false, err, errlen) ||
            hf_f32(m, cfg, "final_logit_softcapping", &c->final_softcap, false, err, errlen))
            return -1;
        json_t *asc = json_object_get(cfg, "attn_logit_softcapping");
        if (asc && !json_is_null(asc))
            return err_set(err, errlen, "%s: config.json attn_logit_softcapping is not supported", m->file.path);
        if (qscale > 0.0f)
            c->attn_scale = 1.0f / sqrtf(qscale);
        if (json_is_object(rp) && json_object_get(rp, "full_attention")) {
            if (hf_rope(m, json_object_get(rp, "full_attention"), &c->rope_theta, true, err, errlen) ||
                hf_rope(m, json_object_get(rp, "sliding_attention"), &c->rope_theta_local, false, err, errlen))
                return -1;
        } else if (hf_rope(m, json_object_get(cfg, "rope_scaling"), &c->rope_theta, true, err, errlen)) {
            return -1;
        }
    } else if (hf_rope(m, rp ? rp : json_object_get(cfg, "rope_scaling"), &c->rope_theta, true, err, errlen)) {
        return -1;
    }
    if (config_check(m, g_hf_fields, err, errlen) || config_alloc_layers(m, err, errlen))
        return -1;

    if (c->arch == MODEL_ARCH_GEMMA3) {
        json_t *lt = json_object_get(cfg, "layer_types");
        if (json_is_array(lt)) {
            if (json_array_size(lt) != c->n_layers)
                return err_set(err, errlen, "%s: config.json layer_types has %zu entries, expected %u",
                               m->file.path, json_array_size(lt), c->n_layers);
            for (uint32_t l = 0; l < c->n_layers; l++) {
                const char *s = json_string_value(json_array_get(lt, l));
                if (!s || (strcmp(s, "sliding_attention") != 0 && strcmp(s, "full_attention") != 0))
                    return err_set(err, errlen, "%s: config.json layer_types[%u] is not 'sliding_attention' or "
                                   "'full_attention'", m->file.path, l);
                m->layers[l].sliding = strcmp(s, "sliding_attention") == 0;
            }
        } else {
            uint32_t period = 6;
            if (hf_u32(m, cfg, "sliding_window_pattern", &period, false, err, errlen) ||
                hf_u32(m, cfg, "_sliding_window_pattern", &period, false, err, errlen))
                return -1;
            for (uint32_t l = 0; l < c->n_layers; l++)
                m->layers[l].sliding = period > 0 && (l + 1) % period != 0;
        }
        if (c->sliding_window == 0)
            for (uint32_t l = 0; l < c->n_layers; l++)
                m->layers[l].sliding = false;
    }
    return 0;
}
