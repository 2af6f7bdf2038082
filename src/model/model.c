/* model/model.c — model_open/model_close and the RoPE frequency tables.
 *
 * model_open = open the file view → hyper-parameters (config.c) → RoPE tables
 * → tensor binding and validation (weights.c). Any failure unwinds through one
 * label and leaves the struct zeroed.
 *
 * RoPE inverse frequencies are computed as transformers does (float32:
 * 1 / theta^(2i/d)), then adjusted once here for the scaling the model declares,
 * so backends only compute angle = pos · inv_freq[i].
 */
#include "model/model.h"
#include "core/log.h"
#include "quant/quant.h"

#include <math.h>
#include <string.h>

static void rope_base(float *inv, uint32_t half, uint32_t head_dim, float theta)
{
    for (uint32_t i = 0; i < half; i++)
        inv[i] = 1.0f / powf(theta, (float)(2 * i) / (float)head_dim);
}

int model_rope_init(struct model *m, char *err, size_t errlen)
{
    const struct model_config *c = &m->cfg;
    const uint32_t half = c->head_dim / 2;
    m->inv_freq_global = arena_alloc(&m->arena, half * sizeof(float));
    m->inv_freq_local = arena_alloc(&m->arena, half * sizeof(float));
    if (!m->inv_freq_global || !m->inv_freq_local)
        return err_set(err, errlen, "%s: out of memory", m->file.path);
    rope_base(m->inv_freq_global, half, c->head_dim, c->rope_theta);
    rope_base(m->inv_freq_local, half, c->head_dim, c->rope_theta_local);
    float *g = m->inv_freq_global;

    switch (c->rope_scaling) {
    case MODEL_ROPE_SCALING_NONE:
        break;
    case MODEL_ROPE_SCALING_LINEAR:
        for (uint32_t i = 0; i < half; i++)
            g[i] /= c->rope_factor;
        break;
    case MODEL_ROPE_SCALING_LLAMA3: {
        const double lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor, f = c->rope_factor;
        const double orig = c->rope_orig_ctx;
        const double low_wavelen = orig / lo, high_wavelen = orig / hi;
        for (uint32_t i = 0; i < half; i++) {
            const double inv = g[i], wavelen = 2.0 * M_PI / inv;
            double out = inv;
            if (wavelen > low_wavelen) {
                out = inv / f;
            } else if (wavelen >= high_wavelen) {
                const double smooth = (orig / wavelen - lo) / (hi - lo);
                out = (1.0 - smooth) * inv / f + smooth * inv;
            }
            g[i] = (float)out;
        }
        break;
    }
    case MODEL_ROPE_SCALING_FREQS: {
        const struct mf_tensor *t = model_file_find_tensor(&m->file, "rope_freqs.weight");
        MEMRA_ASSERT(t != NULL);
        if (t->n_elements != half || t->dtype != DTYPE_F32 || t->n_bytes != half * sizeof(float))
            return err_set(err, errlen, "%s: tensor 'rope_freqs.weight' must hold %u F32 values", m->file.path,
                           half);
        for (uint32_t i = 0; i < half; i++) {
            float f;
            memcpy(&f, t->data + i * sizeof(float), sizeof(f));
            if (!(f > 0.0f && isfinite(f)))
                return err_set(err, errlen, "%s: tensor 'rope_freqs.weight'[%u] = %g is not a positive factor",
                               m->file.path, i, (double)f);
            g[i] /= f;
        }
        break;
    }
    }
    for (uint32_t l = 0; l < c->n_layers; l++)
        m->layers[l].inv_freq = m->layers[l].sliding ? m->inv_freq_local : m->inv_freq_global;
    return 0;
}

int model_open(struct model *m, const char *path, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    if (model_file_open(&m->file, path, err, errlen) != 0)
        return -1;
    arena_init(&m->arena, 1 << 16);
    int rc;
    if (m->file.format == MF_FORMAT_GGUF)
        rc = model_config_from_gguf(m, err, errlen);
    else
        rc = model_config_from_hf(m, err, errlen);
    if (rc != 0 || model_rope_init(m, err, errlen) != 0 || model_bind_weights(m, err, errlen) != 0)
        goto fail;
    m->arch_name = model_arch_name(m->cfg.arch);
    return 0;
fail:
    model_close(m);
    return -1;
}

void model_close(struct model *m)
{
    arena_free(&m->arena);
    model_file_close(&m->file);
    memset(m, 0, sizeof(*m));
}

static uint64_t weight_bytes(const struct model_weight *w)
{
    return w->rows * w->row_bytes;
}

uint64_t model_decode_bytes(const struct model *m)
{
    const struct model_config *c = &m->cfg;
    uint64_t n = weight_bytes(&m->output) + m->tok_embd.row_bytes;
    for (uint32_t l = 0; l < c->n_layers; l++) {
        const struct model_layer *L = &m->layers[l];
        n += weight_bytes(&L->wq) + weight_bytes(&L->wk) + weight_bytes(&L->wv) + weight_bytes(&L->wo);
        if (c->n_experts == 0) {
            n += weight_bytes(&L->w_gate) + weight_bytes(&L->w_up) + weight_bytes(&L->w_down);
        } else {
            const struct model_expert *E = &L->experts[0];
            n += weight_bytes(&L->router) +
                 c->n_experts_used * (weight_bytes(&E->gate) + weight_bytes(&E->up) + weight_bytes(&E->down));
        }
    }
    return n;
}

void model_moe_route(const struct model_config *c, float *logits, uint32_t *idx, float *w)
{
    const uint32_t E = c->n_experts, K = c->n_experts_used;
    float mx = -INFINITY, sum = 0.0f;
    for (uint32_t e = 0; e < E; e++)
        mx = logits[e] > mx ? logits[e] : mx;
    for (uint32_t e = 0; e < E; e++) {
        logits[e] = expf(logits[e] - mx);
        sum += logits[e];
    }
    for (uint32_t e = 0; e < E; e++)
        logits[e] /= sum;
    for (uint32_t k = 0; k < K; k++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t e = 0; e < E; e++) {
            bool taken = false;
            for (uint32_t q = 0; q < k; q++)
                taken |= idx[q] == e;
            if (!taken && (best == UINT32_MAX || logits[e] > logits[best]))
                best = e;
        }
        idx[k] = best;
        w[k] = logits[best];
    }
    if (c->moe_norm_topk) {
        float s = 0.0f;
        for (uint32_t k = 0; k < K; k++)
            s += w[k];
        for (uint32_t k = 0; k < K; k++)
            w[k] /= s;
    }
}

void model_embed_row(const struct model *m, int32_t token, float *x)
{
    const struct model_weight *e = &m->tok_embd;
    const uint32_t dim = m->cfg.dim;
    MEMRA_ASSERT(token >= 0 && (uint32_t)token < m->cfg.vocab);
    int rc = quant_dequantize_row(e->dtype, e->data + (uint64_t)token * e->row_bytes, x, e->cols);
    MEMRA_ASSERT(rc == 0);
    if (e->block_scale) {
        const uint64_t nbc = (e->cols + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK;
        const float *bs = e->block_scale + (uint64_t)(token / MODEL_FP8_BLOCK) * nbc;
        for (uint32_t c = 0; c < dim; c++)
            x[c] *= bs[c / MODEL_FP8_BLOCK];
    }
    const float scale = e->scale * m->cfg.embed_scale;
    if (scale != 1.0f)
        for (uint32_t c = 0; c < dim; c++)
            x[c] *= scale;
}
