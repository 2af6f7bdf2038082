/* model/model.h — the architecture registry: one struct that every backend reads.
 *
 * model_open() opens a model file (GGUF, safetensors, HF folder) through the
 * format view, reads the hyper-parameters (GGUF metadata or config.json), binds
 * every tensor the architecture needs to a slot of the per-layer structs below,
 * and validates it: a missing tensor, a wrong shape, a dtype no kernel computes,
 * an unknown architecture or an absurd hyper-parameter is refused with a
 * message naming the tensor or the field. Nothing is computed here.
 *
 * Weight bytes stay in the file's memory map (struct model_weight points into
 * it). Small vectors (norm weights, biases) are converted to float32 once at
 * load into the model's arena; Gemma's "(1 + w)" RMSNorm convention of Hugging
 * Face checkpoints is folded in there too (GGUF files already store 1 + w), so a
 * backend always computes x / rms(x) * w.
 *
 * Supported: llama (Llama 3.x incl. llama3 RoPE scaling, SmolLM2), qwen2 (QKV
 * bias), qwen3 (q/k RMSNorm), qwen3_moe (router + top-k experts), gemma3 text
 * (sliding-window/global layers, scaled embeddings, GELU-tanh, sandwich norms).
 *
 * RoPE: GGUF "llama" files have Q/K rows permuted by the converter so that RoPE
 * rotates adjacent pairs (2i, 2i+1) — MODEL_ROPE_NORM; every other case (all HF
 * checkpoints, GGUF qwen2, qwen3 and gemma3) rotates halves (i, i + head_dim/2) —
 * MODEL_ROPE_NEOX. All frequency adjustments (llama3 scaling, linear scaling, a
 * GGUF rope_freqs tensor) are folded into the inv_freq tables at load.
 */
#ifndef MEMRA_MODEL_MODEL_H
#define MEMRA_MODEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "format/model_file.h"

/* Bounds on hyper-parameters, far above real models; a file beyond them is
 * refused before anything is sized from them. */
#define MODEL_MAX_LAYERS 1024u
#define MODEL_MAX_DIM (1u << 16)
#define MODEL_MAX_FFN (1u << 20)
#define MODEL_MAX_HEADS 1024u
#define MODEL_MAX_HEAD_DIM 1024u
#define MODEL_MAX_VOCAB (1u << 22)
#define MODEL_MAX_EXPERTS 1024u
#define MODEL_MAX_CTX (1u << 24)

enum model_arch {
    MODEL_ARCH_LLAMA,
    MODEL_ARCH_QWEN2,
    MODEL_ARCH_QWEN3,
    MODEL_ARCH_QWEN3_MOE,
    MODEL_ARCH_GEMMA3,
    MODEL_ARCH_COUNT
};

enum model_rope_style {
    MODEL_ROPE_NORM, /* rotate pairs (2i, 2i+1) — GGUF llama (permuted Q/K) */
    MODEL_ROPE_NEOX, /* rotate (i, i + head_dim/2) — HF rotate_half */
};

enum model_rope_scaling {
    MODEL_ROPE_SCALING_NONE,
    MODEL_ROPE_SCALING_LINEAR, /* positions / factor */
    MODEL_ROPE_SCALING_LLAMA3, /* Llama 3.1 wavelength-dependent scaling */
    MODEL_ROPE_SCALING_FREQS,  /* GGUF rope_freqs.weight: inv_freq[i] / factors[i] */
};

enum model_act {
    MODEL_ACT_SILU,      /* SwiGLU: silu(gate) * up */
    MODEL_ACT_GELU_TANH, /* GeGLU: gelu_tanh(gate) * up (Gemma) */
};

struct model_config {
    enum model_arch arch;
    uint32_t n_layers;
    uint32_t dim;         /* hidden size */
    uint32_t n_heads;
    uint32_t n_kv_heads;  /* divides n_heads (GQA) */
    uint32_t head_dim;
    uint32_t ffn_dim;     /* dense MLP intermediate size (0 for MoE-only models) */
    uint32_t vocab;
    uint32_t max_ctx;     /* trained context (max_position_embeddings) */

    /* MoE (qwen3_moe); n_experts == 0 for dense models */
    uint32_t n_experts;
    uint32_t n_experts_used;  /* top-k */
    uint32_t moe_ffn_dim;     /* per-expert intermediate size */
    bool moe_norm_topk;       /* renormalise the top-k softmax weights to sum 1 */

    float norm_eps;
    enum model_act act;
    bool qkv_bias;      /* qwen2 */
    bool qk_norm;       /* qwen3, qwen3_moe, gemma3: RMSNorm over head_dim on q and k */
    bool sandwich_norm; /* gemma3: post-attention and post-FFN norms */
    float embed_scale;  /* multiplies the embedding row (gemma3: sqrt(dim)), else 1 */
    float attn_scale;   /* multiplies q·k (1/sqrt(head_dim), gemma3: query_pre_attn_scalar^-0.5) */
    float final_softcap; /* logits = c·tanh(logits/c) when > 0 (gemma2-style; 0 = off) */

    /* RoPE */
    enum model_rope_style rope_style;
    float rope_theta;        /* global layers */
    float rope_theta_local;  /* sliding-window layers (gemma3) */
    uint32_t sliding_window; /* keys within the last sliding_window positions (incl. own); 0 = none */
    /* RoPE scaling of the global layers, folded into inv_freq by model_rope_init */
    enum model_rope_scaling rope_scaling;
    float rope_factor;           /* LINEAR and LLAMA3: the scaling factor */
    float rope_low_freq_factor;  /* LLAMA3 */
    float rope_high_freq_factor; /* LLAMA3 */
    uint32_t rope_orig_ctx;      /* LLAMA3: original_max_position_embeddings */

    bool tied_embeddings;    /* output projection is the token embedding */
};

/* One weight matrix (rows, cols) = (out_features, in_features), rows contiguous
 * in the file's map. A vector is (1, n). */
struct model_weight {
    const char *name;      /* tensor name in the file, for messages */
    enum dtype dtype;
    uint64_t rows, cols;
    uint64_t row_bytes;    /* bytes of one row of cols elements */
    const uint8_t *data;   /* (rows, row_bytes) */
    /* FP8 only (else scale 1, block_scale NULL): y = scale · Σ w·x, or with
     * block scales each 128×128 tile is multiplied by its own factor. */
    float scale;
    const float *block_scale; /* (ceil(rows/128), ceil(cols/128)) */
};
#define MODEL_FP8_BLOCK 128u

struct model_expert {
    struct model_weight gate; /* (moe_ffn_dim, dim) */
    struct model_weight up;   /* (moe_ffn_dim, dim) */
    struct model_weight down; /* (dim, moe_ffn_dim) */
};

struct model_layer {
    bool sliding;              /* gemma3 local (sliding-window) attention layer */
    const float *inv_freq;     /* (head_dim/2) RoPE inverse frequencies for this layer */

    const float *attn_norm;    /* (dim) */
    struct model_weight wq;    /* (n_heads*head_dim, dim) */
    struct model_weight wk;    /* (n_kv_heads*head_dim, dim) */
    struct model_weight wv;    /* (n_kv_heads*head_dim, dim) */
    struct model_weight wo;    /* (dim, n_heads*head_dim) */
    const float *bq;           /* (n_heads*head_dim) qwen2, else NULL */
    const float *bk;           /* (n_kv_heads*head_dim) qwen2, else NULL */
    const float *bv;           /* (n_kv_heads*head_dim) qwen2, else NULL */
    const float *q_norm;       /* (head_dim) when qk_norm, else NULL */
    const float *k_norm;       /* (head_dim) when qk_norm, else NULL */
    const float *post_attn_norm; /* (dim) when sandwich_norm, else NULL */

    const float *ffn_norm;     /* (dim) pre-FFN norm */
    const float *post_ffn_norm;  /* (dim) when sandwich_norm, else NULL */
    /* dense FFN (n_experts == 0) */
    struct model_weight w_gate; /* (ffn_dim, dim) */
    struct model_weight w_up;   /* (ffn_dim, dim) */
    struct model_weight w_down; /* (dim, ffn_dim) */
    /* MoE FFN */
    struct model_weight router;    /* (n_experts, dim) */
    struct model_expert *experts;  /* (n_experts) */
};

struct model {
    struct model_config cfg;
    struct model_file file;     /* the opened file; weights point into its map */
    const char *arch_name;      /* "llama", "qwen2", ... */

    struct model_weight tok_embd; /* (vocab, dim) */
    const float *out_norm;        /* (dim) */
    struct model_weight output;   /* (vocab, dim); a copy of tok_embd when tied */
    struct model_layer *layers;   /* (n_layers) */

    float *inv_freq_global;       /* (head_dim/2) */
    float *inv_freq_local;        /* (head_dim/2) sliding layers */
    uint64_t weight_bytes;        /* bytes of all weight tensors (for GB/s reports) */

    struct arena arena;           /* layers, experts, float vectors */
};

/* Open PATH and build the model. 0, or -1 with "PATH: tensor 'x' ..." /
 * "PATH: config field 'y' ..." in err. */
int model_open(struct model *m, const char *path, char *err, size_t errlen);
void model_close(struct model *m);

const char *model_arch_name(enum model_arch a);
/* "llama" / "qwen2" / "qwen3" / "qwen3moe" / "qwen3_moe" / "gemma3" / "gemma3_text" → arch. */
bool model_arch_from_name(const char *name, enum model_arch *out);

/* Bytes the weights a decode step reads (every matrix once, the embedding row
 * aside; for MoE only the experts a token uses), for GB/s reports. */
uint64_t model_decode_bytes(const struct model *m);

/* A MoE token's routing (qwen3_moe), the rule every backend follows:
 * logits (n_experts) → softmax over all experts, in place → the
 * n_experts_used best (ties to the lower index) into idx, their
 * probabilities into w, renormalised to sum 1 when moe_norm_topk. */
void model_moe_route(const struct model_config *c, float *logits /* (n_experts) */, uint32_t *idx /* (k) */,
                     float *w /* (k) */);

/* The input vector of token id `token` (< vocab): its embedding row as f32,
 * with the FP8 scales and the architecture's embedding scale applied. Every
 * backend starts its forward pass from this. x: (dim). */
void model_embed_row(const struct model *m, int32_t token, float *x);

/* --- internal to src/model/ (config.c, weights.c) --- */
int model_config_from_gguf(struct model *m, char *err, size_t errlen);
int model_config_from_hf(struct model *m, char *err, size_t errlen);
int model_bind_weights(struct model *m, char *err, size_t errlen);
int model_rope_init(struct model *m, char *err, size_t errlen);

#endif
