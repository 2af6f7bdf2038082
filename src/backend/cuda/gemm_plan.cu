/* backend/cuda/gemm_plan.cu — the cuBLASLt plans of the prefill GEMM (gemm_plan.h): a cache of GEMM_PLANS plans
 * keyed by (types — D f32 or bf16 —, compute type, m, n, k, alignments), each with descriptors and one algorithm
 * without a split K (gemm.cu's header: every output then has the same bits whatever the tile and the column count);
 * a plan of up to GEMM_TIMED_N columns times the heuristic's no-split candidates (GEMM_PICK_REPS runs each) and
 * keeps the fastest (plan_time_pick), remembered past the cache's round-robin eviction (GEMM_PICKS slots); f32 weights
 * ask for their algorithm at one column count (GEMM_F32_PLAN_N) so every span length runs the same kernel.
 * Split from gemm.cu (the conversions, dequantization, kept copies and the promoted GEMM's dispatch), which calls
 * gemm_plans_run for every cuBLASLt product. */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemm_plan.h"

#define GEMM_WS_BYTES ((size_t)32 << 20) /* fixed: part of an algorithm's identity */
#define GEMM_PLANS 128
#define GEMM_HEUR 8 /* heuristic results asked for: the first without a split K is taken (beyond GEMM_TIMED_N) */
/* timed runs a candidate (after a warm one), the fastest counted: with one, fresh processes picked differently
 * (BF16 bf16-activation pp32 4454 / 3330 / 3322 tok/s in three; with three 4352-4360; H100, bench/RESULTS.md
 * forty-first run) */
#define GEMM_PICK_REPS 3
/* plans of up to this many columns (an exact span of ≤ 64 tokens stacks its x parts: 2T) time their no-split
 * candidates (plan_time_pick) */
#define GEMM_TIMED_N 128u
#define GEMM_PICKS 1024u /* timed picks remembered beyond the plan cache's eviction (plan_time_pick) */
#define GEMM_PICK_PROBE 8 /* slots a key may take from its hash on */
#define GEMM_F32_PLAN_N 256u /* f32 weights: the n their algorithm is asked for at (plan_get) */

#define CUBLASLT_CHECK(call) CUBLAS_CHECK(call)

namespace {

struct plan_key {
    cudaDataType_t at, bt, yt; /* yt: D's type, CUDA_R_32F or CUDA_R_16BF (gemm_plans_run_to) */
    cublasComputeType_t ct;
    uint64_t m, n, k;
    uint32_t align_a, align_b, align_d;
};

struct plan {
    struct plan_key key;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
};

/* A timed pick (plan_time_pick), kept in an open-addressed table so that a plan made again after its eviction
 * does not time again. */
struct pick {
    struct plan_key key;
    cublasLtMatmulAlgo_t algo;
    bool used;
};

} // namespace

struct gemm_plans {
    struct cuda_ctx *ctx;
    cublasLtHandle_t lt;
    void *ws;                /* GEMM_WS_BYTES */
    struct plan plans[GEMM_PLANS];
    int n_plans, evict;
    bool timed;              /* MEMRA_GEMM_PICK=time (the default): plan_time_pick for short spans */
    float *tune_y;           /* plan_time_pick's output scratch, tune_cap floats (grown on demand) */
    uint64_t tune_cap;
    cudaEvent_t ev[2];       /* plan_time_pick's timing */
    struct pick *picks;      /* GEMM_PICKS remembered picks (host) */
};

struct gemm_plans *gemm_plans_init(struct cuda_ctx *ctx)
{
    struct gemm_plans *g = (struct gemm_plans *)calloc(1, sizeof *g);
    if (!g)
        CUDA_FAIL("out of host memory");
    g->ctx = ctx;
    g->timed = true;
    g->picks = (struct pick *)calloc(GEMM_PICKS, sizeof *g->picks);
    if (!g->picks)
        CUDA_FAIL("out of host memory");
    CUDA_CHECK(cudaEventCreate(&g->ev[0]));
    CUDA_CHECK(cudaEventCreate(&g->ev[1]));
    CUBLASLT_CHECK(cublasLtCreate(&g->lt));
    CUDA_CHECK(cudaMalloc(&g->ws, GEMM_WS_BYTES));
    return g;
}

void gemm_plans_free(struct gemm_plans *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_plans; i++) {
        cublasLtMatmulDescDestroy(g->plans[i].op);
        cublasLtMatrixLayoutDestroy(g->plans[i].a);
        cublasLtMatrixLayoutDestroy(g->plans[i].b);
        cublasLtMatrixLayoutDestroy(g->plans[i].d);
    }
    cublasLtDestroy(g->lt);
    CUDA_CHECK(cudaEventDestroy(g->ev[0]));
    CUDA_CHECK(cudaEventDestroy(g->ev[1]));
    free(g->picks);
    CUDA_CHECK(cudaFree(g->ws));
    if (g->tune_y)
        CUDA_CHECK(cudaFree(g->tune_y));
    free(g);
}

bool gemm_plans_set_timed(struct gemm_plans *g, bool timed)
{
    const bool was = g->timed;
    g->timed = timed;
    return was;
}

/* The algorithms the heuristic offers for the plan at n columns (n may differ from the plan's own) that have no
 * split K and that cuBLASLt accepts for the plan's own shape within the workspace, in its order, into out (room for
 * GEMM_HEUR); returns their count. */
static int plan_candidates(struct gemm_plans *g, const struct plan *p, cublasLtMatmulPreference_t pref, uint64_t n,
                           cublasLtMatmulAlgo_t *out)
{
    const struct plan_key *k = &p->key;
    cublasLtMatrixLayout_t bl = p->b, dl = p->d;
    if (n != k->n) {
        CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&bl, k->bt, k->k, n, (int64_t)k->k));
        CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&dl, k->yt, k->m, n, (int64_t)k->m));
    }
    cublasLtMatmulHeuristicResult_t res[GEMM_HEUR];
    int found = 0, nc = 0;
    if (cublasLtMatmulAlgoGetHeuristic(g->lt, p->op, p->a, bl, dl, dl, pref, GEMM_HEUR, res, &found) !=
        CUBLAS_STATUS_SUCCESS)
        found = 0;
    if (n != k->n)
        cublasLtMatrixLayoutDestroy(bl), cublasLtMatrixLayoutDestroy(dl);
    for (int i = 0; i < found; i++) {
        int splitk = 1;
        size_t len = 0;
        cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk,
                                             &len);
        cublasLtMatmulHeuristicResult_t chk;
        if (splitk <= 1 &&
            cublasLtMatmulAlgoCheck(g->lt, p->op, p->a, p->b, p->d, p->d, &res[i].algo, &chk) ==
                CUBLAS_STATUS_SUCCESS &&
            chk.workspaceSize <= GEMM_WS_BYTES)
            out[nc++] = res[i].algo;
    }
    return nc;
}

/* The remembered pick's slot for key k (its own, else the first free one of its probe run, else NULL). */
static struct pick *pick_slot(struct gemm_plans *g, const struct plan_key *k)
{
    uint32_t h = 2166136261u; /* FNV-1a over the key's bytes (zeroed padding: gemm_plans_run) */
    for (size_t i = 0; i < sizeof *k; i++)
        h = (h ^ ((const uint8_t *)k)[i]) * 16777619u;
    struct pick *free_slot = NULL;
    for (int i = 0; i < GEMM_PICK_PROBE; i++) {
        struct pick *s = &g->picks[(h + (uint32_t)i) % GEMM_PICKS];
        if (s->used && memcmp(&s->key, k, sizeof *k) == 0)
            return s;
        if (!s->used && !free_slot)
            free_slot = s;
    }
    return free_slot;
}

/* A short span's plan (n ≤ GEMM_TIMED_N columns) picks its algorithm by timing: the heuristic's first choice
 * without a split K is 2-3× slower than its neighbours' at some column counts (H100, 8B shapes, bf16: 8, 16, 32,
 * 48 and 64 tokens; from 72 on within ±7 % of the timed pick; bench/RESULTS.md, thirty-ninth run), so the
 * no-split candidates it offers for n and for n + 8 (checked at n) each run on the call's own operands into
 * a scratch, once to warm and GEMM_PICK_REPS times timed; the candidate of the fastest run is kept, and
 * remembered (pick_slot) for when the plan is made again after its eviction. Any algorithm without a split K gives
 * every output the same bits (header), so the pick moves the time only. Not while the stream is being captured;
 * false when fewer than two candidates are left (plan_get's rule then). */
static bool plan_time_pick(struct gemm_plans *g, struct plan *p, cublasLtMatmulPreference_t pref, const void *a,
                           const void *b)
{
    const struct plan_key *k = &p->key;
    if (!g->timed || k->n > GEMM_TIMED_N || k->at == CUDA_R_32F)
        return false;
    struct pick *slot = pick_slot(g, k);
    cublasLtMatmulHeuristicResult_t chk;
    if (slot && slot->used &&
        cublasLtMatmulAlgoCheck(g->lt, p->op, p->a, p->b, p->d, p->d, &slot->algo, &chk) == CUBLAS_STATUS_SUCCESS) {
        p->algo = slot->algo; /* timed before, for a plan since evicted */
        return true;
    }
    cudaStreamCaptureStatus cap;
    CUDA_CHECK(cudaStreamIsCapturing(g->ctx->stream, &cap));
    if (cap != cudaStreamCaptureStatusNone)
        return false;
    cublasLtMatmulAlgo_t cand[2 * GEMM_HEUR];
    int nc = plan_candidates(g, p, pref, k->n, cand);
    nc += plan_candidates(g, p, pref, k->n + 8, cand + nc);
    if (nc < 2)
        return false;
    const uint64_t need = k->m * k->n;
    if (need > g->tune_cap) {
        if (g->tune_y)
            CUDA_CHECK(cudaFree(g->tune_y));
        CUDA_CHECK(cudaMalloc(&g->tune_y, need * sizeof(float)));
        g->tune_cap = need;
    }
    const float alpha = 1.0f, beta = 0.0f;
    float best = 0;
    for (int i = 0; i < nc; i++) {
        float fastest = 0;
        for (int r = 0; r <= GEMM_PICK_REPS; r++) { /* the first run warms, the others are timed */
            CUDA_CHECK(cudaEventRecord(g->ev[0], g->ctx->stream));
            CUBLASLT_CHECK(cublasLtMatmul(g->lt, p->op, &alpha, a, p->a, b, p->b, &beta, g->tune_y, p->d, g->tune_y,
                                          p->d, &cand[i], g->ws, GEMM_WS_BYTES, g->ctx->stream));
            CUDA_CHECK(cudaEventRecord(g->ev[1], g->ctx->stream));
            if (r == 0)
                continue;
            float ms = 0;
            CUDA_CHECK(cudaEventSynchronize(g->ev[1]));
            CUDA_CHECK(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]));
            fastest = r == 1 || ms < fastest ? ms : fastest;
        }
        if (i == 0 || fastest < best)
            best = fastest, p->algo = cand[i];
    }
    if (slot) { /* (its probe run full: not remembered, timed again when the plan is made again) */
        memcpy(&slot->key, k, sizeof *k); /* padding and all: slots are compared with memcmp */
        slot->algo = p->algo;
        slot->used = true;
    }
    return true;
}

/* The cached plan for a key, made (descriptors + an algorithm: plan_time_pick's, else the heuristic's first
 * without a split K) on first use. A full cache evicts round-robin; a re-made plan may time another algorithm,
 * which gives the same bits (plan_time_pick), and otherwise the heuristic answers the same
 * for the same key, so a re-made plan is the same plan. */
static const struct plan *plan_get(struct gemm_plans *g, const struct plan_key *k, const void *a, const void *b)
{
    for (int i = 0; i < g->n_plans; i++)
        if (memcmp(&g->plans[i].key, k, sizeof *k) == 0)
            return &g->plans[i];
    struct plan *p;
    if (g->n_plans < GEMM_PLANS) {
        p = &g->plans[g->n_plans++];
    } else {
        p = &g->plans[g->evict];
        g->evict = (g->evict + 1) % GEMM_PLANS;
        cublasLtMatmulDescDestroy(p->op);
        cublasLtMatrixLayoutDestroy(p->a);
        cublasLtMatrixLayoutDestroy(p->b);
        cublasLtMatrixLayoutDestroy(p->d);
    }
    memset(p, 0, sizeof *p);
    memcpy(&p->key, k, sizeof *k);
    CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p->op, k->ct, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    /* A: (k, m) ld k; B: (k, n) ld k; C = D: (m, n) ld m */
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->a, k->at, k->k, k->m, (int64_t)k->k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->b, k->bt, k->k, k->n, (int64_t)k->k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->d, k->yt, k->m, k->n, (int64_t)k->m));
    cublasLtMatmulPreference_t pref;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = GEMM_WS_BYTES;
    CUBLASLT_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &k->align_a,
                                                        sizeof k->align_a));
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &k->align_b,
                                                        sizeof k->align_b));
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &k->align_d,
                                                        sizeof k->align_d));
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &k->align_d,
                                                        sizeof k->align_d));
    /* only algorithms without a split K: each output then takes the same products in the same order whatever
     * n (T) and tile (header: a span's rows inside a larger GEMM keep their bits) — asked of the heuristic by
     * the reduction-scheme mask; where it offers none, an algorithm it offers with its split removed, if
     * cuBLASLt accepts that */
    const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                        &no_reduction, sizeof no_reduction));
    /* f32 weights (cuBLAS's CUDA-core kernels, whose choice moves with n): the algorithm is asked for at one n and
     * checked at the call's, so every span length runs the same kernel and a column's K loop — its bits — depends
     * on the span alone, as the bf16 tensor-core GEMMs' already did (kernel_gemm's invariance check; kernel_forward's
     * batch-vs-alone under MEMRA_DECODE_MMV=all on the F32 fixtures) */
    cublasLtMatmulAlgo_t cand[GEMM_HEUR];
    if (k->at == CUDA_R_32F && plan_candidates(g, p, pref, GEMM_F32_PLAN_N, cand) > 0) {
        p->algo = cand[0];
        cublasLtMatmulPreferenceDestroy(pref);
        return p;
    }
    if (plan_time_pick(g, p, pref, a, b)) {
        cublasLtMatmulPreferenceDestroy(pref);
        return p;
    }
    cublasLtMatmulHeuristicResult_t res[GEMM_HEUR];
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(g->lt, p->op, p->a, p->b, p->d, p->d, pref, GEMM_HEUR, res, &found) !=
        CUBLAS_STATUS_SUCCESS)
        found = 0;
    int pick = -1;
    for (int i = 0; i < found && pick < 0; i++) {
        int splitk = 1;
        size_t len = 0;
        cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk,
                                             &len);
        if (splitk <= 1)
            pick = i;
    }
    if (pick < 0) {
        const uint32_t any = CUBLASLT_REDUCTION_SCHEME_MASK;
        CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &any,
                                                            sizeof any));
        CUBLASLT_CHECK(
            cublasLtMatmulAlgoGetHeuristic(g->lt, p->op, p->a, p->b, p->d, p->d, pref, GEMM_HEUR, res, &found));
        for (int i = 0; i < found && pick < 0; i++) {
            const int one = 1;
            const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
            cublasLtMatmulHeuristicResult_t chk;
            if (cublasLtMatmulAlgoConfigSetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof one) ==
                    CUBLAS_STATUS_SUCCESS &&
                cublasLtMatmulAlgoConfigSetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &none,
                                                     sizeof none) == CUBLAS_STATUS_SUCCESS &&
                cublasLtMatmulAlgoCheck(g->lt, p->op, p->a, p->b, p->d, p->d, &res[i].algo, &chk) ==
                    CUBLAS_STATUS_SUCCESS)
                pick = i;
        }
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (pick < 0)
        CUDA_FAIL("cuda_gemm: cuBLASLt has no algorithm without a split K for m=%llu n=%llu k=%llu",
                  (unsigned long long)k->m, (unsigned long long)k->n, (unsigned long long)k->k);
    p->algo = res[pick].algo;
    return p;
}

void gemm_plans_run_to(struct gemm_plans *g, cudaDataType_t at, const void *a, cudaDataType_t bt, const void *b,
                       cublasComputeType_t ct, uint64_t rows, uint64_t n, uint32_t T, void *y, cudaDataType_t yt,
                       float alpha, float beta, uint32_t align_b)
{
    if (yt != CUDA_R_32F && yt != CUDA_R_16BF)
        CUDA_FAIL("cuda_gemm: output type %d is neither f32 nor bf16", (int)yt);
    struct plan_key key;
    memset(&key, 0, sizeof key); /* padding too: keys are compared with memcmp */
    key.at = at, key.bt = bt, key.yt = yt, key.ct = ct;
    key.m = rows, key.n = T, key.k = n;
    key.align_a = 256, key.align_b = align_b, key.align_d = gemm_align_of(rows * (yt == CUDA_R_32F ? 4 : 2));
    if ((uintptr_t)a % key.align_a || (uintptr_t)b % key.align_b || (uintptr_t)y % key.align_d)
        CUDA_FAIL("cuda_gemm: operand alignment (A %p, B %p, D %p) below the plan's %u/%u/%u", a, b, y,
                  key.align_a, key.align_b, key.align_d);
    const struct plan *p = plan_get(g, &key, a, b);
    CUBLASLT_CHECK(cublasLtMatmul(g->lt, p->op, &alpha, a, p->a, b, p->b, &beta, y, p->d, y, p->d, &p->algo, g->ws,
                                  GEMM_WS_BYTES, g->ctx->stream));
}

void gemm_plans_run(struct gemm_plans *g, cudaDataType_t at, const void *a, cudaDataType_t bt, const void *b,
                    cublasComputeType_t ct, uint64_t rows, uint64_t n, uint32_t T, float *y, float alpha, float beta,
                    uint32_t align_b)
{
    gemm_plans_run_to(g, at, a, bt, b, ct, rows, n, T, y, CUDA_R_32F, alpha, beta, align_b);
}
