/* backend/cpu/cpu_ops.c — the CPU backend's threaded kernels: matmul over
 * quantized rows, RMSNorm, the attention block (bias, q/k norm, RoPE, KV
 * append, causal / sliding-window softmax attention) and the gated activation.
 *
 * Batch invariance: every output element is computed by the same sequence of
 * float operations whatever the batch size or thread count. The matmul expands
 * a weight row to float32 (quant_dequantize_row, bit-exact) and takes one f32
 * dot per (row, token), and threads split rows, never a reduction. So a sequence's logits are the same alone or in a
 * batch of 8.
 */
#include "backend/cpu/cpu_internal.h"
#include "core/log.h"
#include "quant/quant.h"

#include <math.h>
#include <string.h>

/* ---- matmul ---------------------------------------------------------------- */

/* Rows [r0, r1) of w for T tokens, four rows at a time: each row is expanded
 * to float32 once into the thread's row buffers, then the four are dotted with
 * every token's input by cpu_dot4_f32, which gives each (row, token) the bits
 * of one cpu_dot_f32 — one arithmetic path whatever T is or where a thread's
 * range starts, so the result of a token does not depend on the batch, and
 * prefill amortises the dequantization. A last group of fewer than four rows
 * repeats its last row and keeps only the real results. */
static void matmul_rows(const struct model_weight *w, const float *x, float *y, uint32_t T, uint64_t r0,
                        uint64_t r1, float *rowbuf /* (4, cols) */)
{
    const uint64_t nbc = (w->cols + MODEL_FP8_BLOCK - 1) / MODEL_FP8_BLOCK;
    if (T == 1 && !w->block_scale && quant_dot_fused_fast(w->dtype)) {
        /* one token: the fused dequantize + dot, row by row (quant.h's order: the bits of cpu_dot_f32) */
        quant_matvec_f32(w->dtype, w->data + r0 * w->row_bytes, r1 - r0, w->cols, x, y + r0);
        for (uint64_t r = r0; r < r1; r++)
            y[r] = w->scale * y[r];
        return;
    }
    for (uint64_t g = r0; g < r1; g += 4) {
        const int nr = r1 - g < 4 ? (int)(r1 - g) : 4;
        const float *rows[4];
        for (int i = 0; i < 4; i++) {
            const int ri = i < nr ? i : nr - 1; /* a short last group repeats its last row */
            const uint8_t *src = w->data + (g + (uint64_t)ri) * w->row_bytes;
            if (w->dtype == DTYPE_F32) {
                rows[i] = (const float *)(const void *)src;
                continue;
            }
            if (i == ri) {
                int rc = quant_dequantize_row(w->dtype, src, rowbuf + (uint64_t)i * w->cols, w->cols);
                MEMRA_ASSERT(rc == 0);
            }
            rows[i] = rowbuf + (uint64_t)ri * w->cols;
        }
        for (uint32_t t = 0; t < T; t++) {
            const float *xt = x + (uint64_t)t * w->cols;
            float d[4];
            if (w->block_scale) {
                float acc[4] = {0};
                for (uint64_t kb = 0; kb < nbc; kb++) {
                    const uint64_t c0 = kb * MODEL_FP8_BLOCK;
                    const uint64_t n = w->cols - c0 < MODEL_FP8_BLOCK ? w->cols - c0 : MODEL_FP8_BLOCK;
                    const float *sub[4] = {rows[0] + c0, rows[1] + c0, rows[2] + c0, rows[3] + c0};
                    cpu_dot4_f32(sub, xt + c0, n, d);
                    for (int i = 0; i < nr; i++)
                        acc[i] += w->block_scale[((g + i) / MODEL_FP8_BLOCK) * nbc + kb] * d[i];
                }
                for (int i = 0; i < nr; i++)
                    y[(uint64_t)t * w->rows + g + i] = acc[i];
            } else {
                cpu_dot4_f32(rows, xt, w->cols, d);
                for (int i = 0; i < nr; i++)
                    y[(uint64_t)t * w->rows + g + i] = w->scale * d[i];
            }
        }
    }
}

struct mm_job {
    const struct model_weight *const *ws;
    float *const *ys;
    int n;
    const float *x;
    uint32_t T;
    float *rowbuf;       /* (n_threads, 4, rowbuf_len) */
    uint64_t rowbuf_len;
};

/* [begin, end) indexes the concatenated rows of all weights of the job */
static void mm_task(void *ctx, uint32_t begin, uint32_t end, uint32_t thread)
{
    const struct mm_job *j = ctx;
    float *rowbuf = j->rowbuf + (uint64_t)thread * 4 * j->rowbuf_len;
    uint64_t base = 0;
    for (int i = 0; i < j->n; i++) {
        const struct model_weight *w = j->ws[i];
        const uint64_t lo = begin > base ? begin - base : 0;
        const uint64_t hi = end - base < w->rows ? end - base : w->rows;
        if (end > base && lo < hi)
            matmul_rows(w, j->x, j->ys[i], j->T, lo, hi, rowbuf);
        base += w->rows;
    }
}

/* v rounded to bfloat16 (nearest even), as a float: bf16 activations and a bf16 KV cache. */
static inline float bf16_round(float v) { return quant_bf16_to_f32(quant_f32_to_bf16(v)); }

void cpu_matmul_multi(struct cpu_backend *b, const struct model_weight *const *ws, float *const *ys, int n,
                      float *x, uint32_t T)
{
    if (b->base.cfg.act_type == BACKEND_ACT_BF16) /* x rounded to bf16 at the entry (backend.h); idempotent */
        for (uint64_t i = 0, nx = (uint64_t)T * ws[0]->cols; i < nx; i++)
            x[i] = bf16_round(x[i]);
    uint64_t rows = 0;
    for (int i = 0; i < n; i++) {
        MEMRA_ASSERT(ws[i]->cols == ws[0]->cols && ws[i]->cols <= b->rowbuf_len);
        rows += ws[i]->rows;
    }
    MEMRA_ASSERT(rows <= UINT32_MAX);
    struct mm_job j = {.ws = ws, .ys = ys, .n = n, .x = x, .T = T, .rowbuf = b->rowbuf, .rowbuf_len = b->rowbuf_len};
    threadpool_run(&b->pool, (uint32_t)rows, mm_task, &j);
}

void cpu_matmul(struct cpu_backend *b, const struct model_weight *w, float *x, float *y, uint32_t T)
{
    cpu_matmul_multi(b, &w, &y, 1, x, T);
}

/* ---- RMSNorm --------------------------------------------------------------- */

static void rmsnorm_row(float *out, const float *x, const float *w, uint32_t n, float eps)
{
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    const float inv = 1.0f / sqrtf((float)(ss / n) + eps);
    for (uint32_t i = 0; i < n; i++)
        out[i] = w[i] * (x[i] * inv);
}

struct norm_job {
    float *out;
    const float *x, *w;
    uint32_t n;
    float eps;
};

static void norm_task(void *ctx, uint32_t begin, uint32_t end, uint32_t thread)
{
    (void)thread;
    const struct norm_job *j = ctx;
    for (uint32_t t = begin; t < end; t++)
        rmsnorm_row(j->out + (uint64_t)t * j->n, j->x + (uint64_t)t * j->n, j->w, j->n, j->eps);
}

void cpu_rmsnorm(struct cpu_backend *b, float *out, const float *x, const float *w, uint32_t n, uint32_t T)
{
    struct norm_job j = {out, x, w, n, b->base.model->cfg.norm_eps};
    threadpool_run(&b->pool, T, norm_task, &j);
}

/* ---- attention ------------------------------------------------------------- */

static void rope_head(float *v, uint32_t head_dim, uint32_t pos, const float *inv_freq, enum model_rope_style st)
{
    const uint32_t half = head_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const float a = (float)pos * inv_freq[i];
        const float c = cosf(a), s = sinf(a);
        const uint32_t i0 = st == MODEL_ROPE_NEOX ? i : 2 * i;
        const uint32_t i1 = st == MODEL_ROPE_NEOX ? i + half : 2 * i + 1;
        const float x0 = v[i0], x1 = v[i1];
        v[i0] = x0 * c - x1 * s;
        v[i1] = x1 * c + x0 * s;
    }
}

struct att_job {
    struct cpu_backend *b;
    const struct model_layer *L;
    uint32_t layer;
};

/* per token: biases, q/k norms, RoPE, write k/v through its block table */
static void qk_task(void *ctx, uint32_t begin, uint32_t end, uint32_t thread)
{
    (void)thread;
    const struct att_job *j = ctx;
    struct cpu_backend *b = j->b;
    const struct model_config *c = &b->base.model->cfg;
    const struct model_layer *L = j->L;
    for (uint32_t t = begin; t < end; t++) {
        float *q = b->q + (uint64_t)t * b->q_dim, *k = b->k + (uint64_t)t * b->kv_dim;
        float *v = b->v + (uint64_t)t * b->kv_dim;
        if (L->bq) {
            for (uint32_t i = 0; i < b->q_dim; i++)
                q[i] += L->bq[i];
            for (uint32_t i = 0; i < b->kv_dim; i++) {
                k[i] += L->bk[i];
                v[i] += L->bv[i];
            }
        }
        for (uint32_t h = 0; h < c->n_heads; h++) {
            float *qh = q + (uint64_t)h * c->head_dim;
            if (L->q_norm)
                rmsnorm_row(qh, qh, L->q_norm, c->head_dim, c->norm_eps);
            rope_head(qh, c->head_dim, b->tok_pos[t], L->inv_freq, c->rope_style);
        }
        for (uint32_t h = 0; h < c->n_kv_heads; h++) {
            float *kh = k + (uint64_t)h * c->head_dim;
            if (L->k_norm)
                rmsnorm_row(kh, kh, L->k_norm, c->head_dim, c->norm_eps);
            rope_head(kh, c->head_dim, b->tok_pos[t], L->inv_freq, c->rope_style);
        }
        if (b->base.cfg.kv_type == BACKEND_KV_BF16) /* the cache holds bf16 values (f32 storage) */
            for (uint32_t i = 0; i < b->kv_dim; i++) {
                k[i] = bf16_round(k[i]);
                v[i] = bf16_round(v[i]);
            }
        memcpy(cpu_kv_row(b, b->tok_blocks[t], j->layer, 0, b->tok_pos[t]), k, b->kv_dim * sizeof(float));
        memcpy(cpu_kv_row(b, b->tok_blocks[t], j->layer, 1, b->tok_pos[t]), v, b->kv_dim * sizeof(float));
    }
}

/* per (token, head): softmax(q·K / sqrt(d)) · V over the visible positions */
static void sdpa_task(void *ctx, uint32_t begin, uint32_t end, uint32_t thread)
{
    const struct att_job *j = ctx;
    struct cpu_backend *b = j->b;
    const struct model_config *c = &b->base.model->cfg;
    const uint32_t hd = c->head_dim, group = c->n_heads / c->n_kv_heads;
    float *sc = b->scores + (uint64_t)thread * b->base.cfg.max_ctx;
    for (uint32_t it = begin; it < end; it++) {
        const uint32_t t = it / c->n_heads, h = it % c->n_heads, kvh = h / group;
        const uint32_t p = b->tok_pos[t];
        const uint32_t *blocks = b->tok_blocks[t];
        uint32_t p0 = 0;
        if (j->L->sliding && c->sliding_window > 0 && p + 1 > c->sliding_window)
            p0 = p + 1 - c->sliding_window;
        const float *q = b->q + (uint64_t)t * b->q_dim + (uint64_t)h * hd;
        float mx = -INFINITY;
        for (uint32_t s = p0; s <= p; s += 4) { /* four keys a pass (cpu_dot4_f32: cpu_dot_f32's bits) */
            const uint32_t nk = p - s + 1 < 4 ? p - s + 1 : 4;
            const float *k[4];
            for (uint32_t i = 0; i < 4; i++)
                k[i] = cpu_kv_row(b, blocks, j->layer, 0, s + (i < nk ? i : nk - 1)) + (uint64_t)kvh * hd;
            float d[4];
            cpu_dot4_f32(k, q, hd, d);
            for (uint32_t i = 0; i < nk; i++) {
                d[i] *= c->attn_scale;
                sc[s + i - p0] = d[i];
                mx = d[i] > mx ? d[i] : mx;
            }
        }
        float sum = 0.0f;
        for (uint32_t s = 0; s <= p - p0; s++) {
            sc[s] = expf(sc[s] - mx);
            sum += sc[s];
        }
        const float inv = 1.0f / sum;
        float *out = b->att + (uint64_t)t * b->q_dim + (uint64_t)h * hd;
        memset(out, 0, hd * sizeof(float));
        uint32_t s = p0;
        for (; s + 4 <= p + 1; s += 4) { /* four values a pass, in position order (cpu_axpy4_f32) */
            const float *v[4];
            float a[4];
            for (uint32_t i = 0; i < 4; i++) {
                v[i] = cpu_kv_row(b, blocks, j->layer, 1, s + i) + (uint64_t)kvh * hd;
                a[i] = sc[s + i - p0] * inv;
            }
            cpu_axpy4_f32(out, a, v, hd);
        }
        for (; s <= p; s++)
            cpu_axpy_f32(out, sc[s - p0] * inv, cpu_kv_row(b, blocks, j->layer, 1, s) + (uint64_t)kvh * hd, hd);
    }
}

void cpu_attention(struct cpu_backend *b, uint32_t layer, uint32_t T)
{
    const struct model *m = b->base.model;
    struct att_job j = {.b = b, .L = &m->layers[layer], .layer = layer};
    threadpool_run(&b->pool, T, qk_task, &j);
    threadpool_run(&b->pool, T * m->cfg.n_heads, sdpa_task, &j);
}

/* ---- gated activation ------------------------------------------------------ */

struct glu_job {
    float *hb;
    const float *hb2;
    uint32_t n;
    enum model_act act;
    bool round_in; /* gate and up rounded to bf16 first (cpu_glu) */
};

/* elementwise over the flat (T * n) range, so one decode token still spreads over all threads */
static void glu_task(void *ctx, uint32_t begin, uint32_t end, uint32_t thread)
{
    (void)thread;
    const struct glu_job *j = ctx;
    float *gp = j->hb;
    const float *up = j->hb2;
    const bool r = j->round_in;
    if (j->act == MODEL_ACT_SILU) {
        for (uint32_t i = begin; i < end; i++) {
            const float g = r ? bf16_round(gp[i]) : gp[i], u = r ? bf16_round(up[i]) : up[i];
            gp[i] = g / (1.0f + expf(-g)) * u;
        }
    } else {
        const float k0 = 0.7978845608028654f, k1 = 0.044715f; /* sqrt(2/pi) */
        for (uint32_t i = begin; i < end; i++) {
            const float x = r ? bf16_round(gp[i]) : gp[i], u = r ? bf16_round(up[i]) : up[i];
            gp[i] = 0.5f * x * (1.0f + tanhf(k0 * (x + k1 * x * x * x))) * u;
        }
    }
}

void cpu_glu(struct cpu_backend *b, float *hb, const float *hb2, uint32_t n, uint32_t T, bool round_in)
{
    struct glu_job j = {hb, hb2, n, b->base.model->cfg.act, round_in};
    MEMRA_ASSERT((uint64_t)T * n <= UINT32_MAX);
    threadpool_run(&b->pool, T * n, glu_task, &j);
}
