/* backend/cuda/cuda_gemm_setup.c — the CUDA backend's prefill GEMM at load (host C; cuda_be_gemm_setup, called
 * by load_weights before the KV pool takes the free memory): its numerics (MEMRA_GEMM), which GGUF weights it
 * promotes (MEMRA_GEMM_PROMOTE), how it picks its plans (MEMRA_GEMM_PICK), each layer weight's threshold in
 * tokens (gemm_min; MEMRA_GEMM_MIN_TOKENS), whether the FP8 / GGUF weights stay dequantized on the device
 * (MEMRA_GEMM_KEEP, gemm_keep_decide), and its scratch, sized now so that forward allocates nothing.
 */
#include "backend/cuda/backend_cuda_internal.h"
#include "core/checked.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

/* Span lengths from which the GEMM runs, from kernel_gemm's crossover table
 * on the 8B shapes (bench/FORWARD.md, H200): BF16 GEMMs beat the GEMVs from
 * 8 tokens on in both modes; weights the GEMM dequantizes first (FP8, GGUF)
 * from 16 (FAST) and about 40 (EXACT, three GEMMs) on. The promoted GGUF
 * types (gemm_q.cu) whose packed copy is kept from 16 tokens with f32
 * activations and 12 with bf16 ones (H100, random 8B Q8_0, memra-bench ppN,
 * GEMV → GEMM: pp16 843-854 → 878-892 tok/s exact, pp12 775 → 917 and pp10
 * 715 → 765 with bf16 activations, pp8 798 → 612; bench/RESULTS.md,
 * thirty-ninth run). A dequantized copy kept on the device, the plans of short
 * spans timed (MEMRA_GEMM_PICK=time), from 32 (H100, random 8B Q4_K_M, pp32
 * GEMV 1431 → GEMM 2343 tok/s with bf16 activations, 1443 → 2204 exact). */
#define GEMM_MIN_PLAIN 8u
#define GEMM_MIN_DEQ_FAST 16u
#define GEMM_MIN_DEQ_EXACT 48u
#define GEMM_MIN_DEQ_KEPT 32u
#define GEMM_MIN_PROMOTED_EXACT 16u
#define GEMM_MIN_PROMOTED_XBF16 12u
#define GEMM_MIN_PROMOTED_MINS 32u
/* The promoted types' threshold: the types with a min (Q4_K, Q5_K, Q4_1) from 32 tokens whatever the activations
 * (H100, random 8B Q4_K_M with bf16 activations, cuBLASLt on the kept dequantized copy → promoted: pp16 1363-1373 →
 * 1178-1183 tok/s, the GEMV's 16 tokens against the GEMM's; pp32 2375 → 2369-2385, level; bench/RESULTS.md,
 * fortieth run). */
static uint32_t gemm_min_promoted(enum cuda_gemm_mode gm, const struct cuda_weight *w)
{
    if (cuda_gemm_promote_has_mins(w->dtype))
        return GEMM_MIN_PROMOTED_MINS;
    return gm == CUDA_GEMM_EXACT ? GEMM_MIN_PROMOTED_EXACT : GEMM_MIN_PROMOTED_XBF16;
}
/* A MoE span of ≥ 64 tokens gives each of Qwen3-MoE's 128 experts ~4 rows on
 * average (8 a token): from there one GEMM an expert beats reading it once
 * per 8 rows on the grouped GEMVs (not measured finer yet). */
#define MOE_GEMM_MIN 64u

/* Whether the FP8 / GGUF layer weights the GEMM takes stay dequantized on the
 * device (cuda_gemm_keep), so that a prefill chunk does not dequantize every
 * matrix again (~8 ms a pass over an 8B model on an H200, 29-42 % of a GGUF
 * pp4096 at ubatch 512: bench/RESULTS.md, twenty-seventh run). MEMRA_GEMM_KEEP:
 * auto (default: when the copies, `bytes` in all, leave free the KV blocks
 * every slot needs at full context and the headroom), on (whenever they fit
 * in the free memory), off; `scratch`: what the GEMM's own buffers will take
 * besides. The copies hold the values the dequantization scratch would get, so
 * a token's bits are the same either way. */
static int gemm_keep_decide(struct cuda_backend *b, uint64_t bytes, uint64_t scratch, bool *keep, char *err,
                            size_t errlen)
{
    const char *v = getenv("MEMRA_GEMM_KEEP");
    *keep = false;
    if (bytes == 0 || (v && strcmp(v, "off") == 0))
        return 0;
    const bool on = v && strcmp(v, "on") == 0;
    if (!on && v && *v && strcmp(v, "auto") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_KEEP=%s: expected auto, on or off", v);
    const struct backend_config *bc = &b->base.cfg;
    const uint64_t free_b = cuda_fwd_mem_free();
    const uint64_t blocks = bc->kv_blocks ? bc->kv_blocks : (uint64_t)bc->max_seqs * backend_kv_blocks_for(bc->max_ctx);
    const uint64_t need = bytes + scratch + CUDA_KV_HEADROOM + (on ? 0 : blocks * cuda_be_kv_block_bytes(b));
    *keep = need <= free_b;
    if (!*keep && on)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_KEEP=on: the dequantized weights need %llu MiB, %llu MiB "
                       "of device memory are free (set MEMRA_GEMM_KEEP=auto or off)",
                       (unsigned long long)(bytes >> 20), (unsigned long long)(free_b >> 20));
    log_info("cuda backend: the prefill GEMM's dequantized weights (%llu MiB) %s (MEMRA_GEMM_KEEP=%s, %llu MiB free)",
             (unsigned long long)(bytes >> 20),
             *keep ? "kept on the device" : "made again each chunk: too little memory", on ? "on" : "auto",
             (unsigned long long)(free_b >> 20));
    return 0;
}

/* The size of a layer weight's kept copy for the prefill GEMM in mode gm with the promote set p (0: it needs none). */
static uint64_t weight_kept_bytes(enum cuda_gemm_mode gm, enum cuda_gemm_promote p, const struct cuda_weight *w)
{
    if (w->bs) /* FP8 with block scales */
        return cuda_gemm_kept_bytes_bs(gm, w->rows, w->cols);
    const bool pr = cuda_gemm_promote_takes(p, gm, w->dtype, w->rows, w->cols);
    return cuda_gemm_kept_bytes(gm, pr, w->dtype, w->rows, w->cols);
}

/* The prefill GEMM (gemm.cu) for the layer weights it takes, its scratch sized
 * now (no allocation in forward): x of one span (≤ max_batch_tokens rows of
 * the widest input) and the largest FP8 / GGUF layer matrix dequantized that
 * is not kept (gemm_keep_decide). The logits stay on the GEMV (n_logits rows,
 * 8 at a time). MEMRA_GEMM: exact (default: greedy output identical to the
 * CPU's, see cuda_ops.h) | fast | off; MEMRA_GEMM_MIN_TOKENS: one threshold
 * for every weight. */
int cuda_be_gemm_setup(struct cuda_backend *b, char *err, size_t errlen)
{
    const struct model_config *c = &b->base.model->cfg;
    const char *mode = getenv("MEMRA_GEMM"), *mt = getenv("MEMRA_GEMM_MIN_TOKENS");
    enum cuda_gemm_mode gm = CUDA_GEMM_EXACT;
    if (mode && strcmp(mode, "off") == 0)
        return 0;
    if (mode && strcmp(mode, "fast") == 0)
        gm = CUDA_GEMM_FAST;
    else if (mode && *mode && strcmp(mode, "exact") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM=%s: expected exact, fast or off", mode);
    if (gm == CUDA_GEMM_EXACT && b->base.cfg.act_type == BACKEND_ACT_BF16) /* x arrives rounded: no low part */
        gm = CUDA_GEMM_XBF16;
    /* MEMRA_GEMM_PROMOTE: auto (unset, empty) every type it takes at ≥ 2048 rows, on every weight it takes, plain
     * the types without a min, off none (cuda_ops.h says when) */
    const char *pv = getenv("MEMRA_GEMM_PROMOTE");
    enum cuda_gemm_promote promote = CUDA_GEMM_PROMOTE_AUTO;
    if (pv && strcmp(pv, "on") == 0)
        promote = CUDA_GEMM_PROMOTE_ALL;
    else if (pv && strcmp(pv, "plain") == 0)
        promote = CUDA_GEMM_PROMOTE_PLAIN;
    else if (pv && strcmp(pv, "off") == 0)
        promote = CUDA_GEMM_PROMOTE_OFF;
    else if (pv && *pv && strcmp(pv, "auto") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_PROMOTE=%s: expected auto, on, plain or off", pv);
    bool promoted_any = false; /* whether a layer weight takes it: its scratches only then */
    const char *pick = getenv("MEMRA_GEMM_PICK"); /* time (unset, empty) or first: cuda_gemm_set_timed */
    if (pick && *pick && strcmp(pick, "time") != 0 && strcmp(pick, "first") != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_PICK=%s: expected time or first", pick);
    uint32_t min_all = 0;
    if (mt && *mt && checked_parse_u32(mt, 1, 1u << 20, &min_all) != 0)
        return err_set(err, errlen, "cuda backend: MEMRA_GEMM_MIN_TOKENS=%s: expected 1..%u", mt, 1u << 20);
    uint64_t wide = c->dim > c->ffn_dim ? c->dim : c->ffn_dim;
    wide = wide > b->q_dim ? wide : b->q_dim;
    wide = wide > c->moe_ffn_dim ? wide : c->moe_ffn_dim;
    uint64_t kept_bytes = 0, max_w = 0; /* max_w: the largest matrix to dequantize, unless the copies are kept */
    for (uint32_t l = 0; l < c->n_layers; l++) {
        struct cuda_layer *D = &b->layers[l];
        struct cuda_weight *ws[7] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->w_gate, &D->w_up, &D->w_down};
        for (int i = 0; i < 7; i++) {
            struct cuda_weight *w = ws[i];
            if (w->rows == 0 || !cuda_gemm_supported(w->dtype, w->rows, w->cols)) /* rows 0: a MoE layer's FFN */
                continue;
            const uint64_t e = cuda_gemm_scratch_w_elems(w->dtype, w->rows, w->cols);
            max_w = e > max_w ? e : max_w;
            promoted_any |= !w->bs && cuda_gemm_promote_takes(promote, gm, w->dtype, w->rows, w->cols);
            w->gemm_min = min_all ? min_all
                          : e == 0 ? GEMM_MIN_PLAIN
                          : gm != CUDA_GEMM_FAST ? GEMM_MIN_DEQ_EXACT : GEMM_MIN_DEQ_FAST; /* promoted: below */
            kept_bytes += weight_kept_bytes(gm, promote, w); /* 0 exactly where e is */
        }
    }
    bool keep;
    uint64_t x_bytes = (uint64_t)b->base.cfg.max_batch_tokens * wide * 4; /* x's bf16 parts, both at most */
    if (!promoted_any)
        promote = CUDA_GEMM_PROMOTE_OFF;
    if (promote) /* and their tiles (cuda_gemm_promote): ≤ 4.4 bytes an element with two parts and a min's k
                  * tiles (3 columns a 32), a last token tile and a last min tile a tile row */
        x_bytes += x_bytes * 35 / 32 + wide * 560 + ((uint64_t)b->base.cfg.max_batch_tokens / 128 + 1) * 32768;
    if (gemm_keep_decide(b, kept_bytes, x_bytes, &keep, err, errlen) != 0)
        return -1;
    if (keep)
        max_w = 0; /* every matrix that needs one has its copy */
    /* MoE: a long span's experts as GEMMs (cuda_moe_ffn_gemm) when every layer's have one */
    bool moe_gemm = c->n_experts > 0;
    for (uint32_t l = 0; l < c->n_layers && moe_gemm; l++) {
        const struct cuda_moe_weights *w = &b->layers[l].moe;
        moe_gemm = cuda_moe_gemm_supported(w);
        if (!moe_gemm)
            break;
        const uint64_t e1 = cuda_gemm_scratch_w_elems(w->gu_type, 2 * (uint64_t)w->ffn, w->dim),
                       e2 = cuda_gemm_scratch_w_elems(w->down_type, w->dim, w->ffn);
        max_w = e1 > max_w ? e1 : max_w;
        max_w = e2 > max_w ? e2 : max_w;
    }
    b->moe_gemm_min = !moe_gemm ? 0 : min_all ? min_all : MOE_GEMM_MIN;
    b->gemm = cuda_gemm_init(b->ctx, gm, (uint64_t)b->base.cfg.max_batch_tokens * wide, max_w);
    cuda_gemm_promote(b->gemm, wide, promote);
    const bool timed = !pick || strcmp(pick, "first") != 0;
    cuda_gemm_set_timed(b->gemm, timed);
    for (uint32_t l = 0; l < c->n_layers && keep; l++) {
        struct cuda_layer *D = &b->layers[l];
        struct cuda_weight *ws[7] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->w_gate, &D->w_up, &D->w_down};
        for (int i = 0; i < 7; i++) {
            struct cuda_weight *w = ws[i];
            const uint64_t kb = w->gemm_min ? weight_kept_bytes(gm, promote, w) : 0;
            if (kb && !min_all && cuda_gemm_promoted(b->gemm, w->dtype, w->rows, w->cols)) /* its packed copy kept */
                w->gemm_min = gemm_min_promoted(gm, w);
            else if (kb && !min_all && gm != CUDA_GEMM_FAST && timed) /* its dequantized copy kept */
                w->gemm_min = GEMM_MIN_DEQ_KEPT;
            if (kb) {
                w->kept = cuda_be_dev_alloc(b, kb);
                if (w->bs)
                    cuda_gemm_keep_bs(b->gemm, w->d, w->bs, w->rows, w->cols, w->kept);
                else
                    cuda_gemm_keep(b->gemm, w->dtype, w->d, w->rows, w->cols, w->kept);
            }
        }
    }
    return 0;
}

