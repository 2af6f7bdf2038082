/* lab/gemm-fixed-algo/gemm_fixed_algo.cu — can several prefill spans share one GEMM without a span's bits
 * depending on its neighbours? A standalone experiment (not built by CMake, not in the product).
 *
 * The question behind it (issues 5 and 6): the CUDA backend runs one cuBLASLt GEMM a span, its algorithm chosen
 * per (shape, T) (gemm.cu), so that a sequence's bits depend on its own span only. A server step holds several
 * 512-token prompts; with bf16 activations one layer's GEMMs run at 497 TFLOP/s at T = 512 and 699 at T = 4096
 * (kernel_gemm, twenty-third run). One GEMM over the step's spans (T = 1536 …) would be faster — if the rows of a
 * span came out the same whatever else is in the GEMM. They do when every T uses one algorithm whose K loop does
 * not depend on T (no split-K, no stream-K): each output tile is then the same sequence of products.
 *
 * This program: W (rows, k) and x (T_ref, k) random bf16 (values of bf16 activations and weights), D = W·xᵀ in
 * f32 (gemm.cu's layout: TN, m = rows, n = T). The heuristic's first algorithm for T_ref, and for each sub-span
 * T_sub at offset off (a span inside the big GEMM): (a) the same T_ref algorithm run on the sub-span alone
 * (cublasLtMatmulAlgoCheck first), (b) the sub-span's own heuristic choice. Prints whether (a) and (b) give the
 * rows of the big GEMM bit for bit, each algorithm's id / tile / split-K / reduction scheme / stages, and the µs of
 * each GEMM (CUDA events, median of 20 after 3 warm-ups).
 * Would land when: (a) is bit-identical for every shape and sub-span, and the big GEMM is faster than the sum of
 * the per-span ones by enough (then gemm.cu picks one algorithm a (type, shape) for every T, and cuda_forward.c's
 * matmul_multi runs a step's GEMM spans together).
 * Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o gemm_fixed_algo \
 *          lab/gemm-fixed-algo/gemm_fixed_algo.cu -lcublasLt
 * Run:   ./gemm_fixed_algo
 */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x)                                                                                                        \
    do {                                                                                                             \
        cudaError_t e_ = (x);                                                                                        \
        if (e_ != cudaSuccess) {                                                                                     \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                              \
            exit(1);                                                                                                 \
        }                                                                                                            \
    } while (0)
#define LT(x)                                                                                                        \
    do {                                                                                                             \
        cublasStatus_t s_ = (x);                                                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                           \
            fprintf(stderr, "%s:%d: cublasLt status %d\n", __FILE__, __LINE__, (int)s_);                             \
            exit(1);                                                                                                 \
        }                                                                                                            \
    } while (0)

static const size_t WS = (size_t)32 << 20; /* gemm.cu's workspace */
static cublasLtHandle_t g_lt;
static void *g_ws;

struct gemm {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
};

static gemm make(uint64_t rows, uint64_t k, uint64_t T)
{
    gemm g;
    LT(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, k, rows, (int64_t)k));
    LT(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, k, T, (int64_t)k));
    LT(cublasLtMatrixLayoutCreate(&g.d, CUDA_R_32F, rows, T, (int64_t)rows));
    return g;
}

static void drop(gemm &g)
{
    cublasLtMatmulDescDestroy(g.op);
    cublasLtMatrixLayoutDestroy(g.a);
    cublasLtMatrixLayoutDestroy(g.b);
    cublasLtMatrixLayoutDestroy(g.d);
}

static cublasLtMatmulAlgo_t heuristic(const gemm &g)
{
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WS, sizeof WS));
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(g_lt, g.op, g.a, g.b, g.d, g.d, pref, 1, &r, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found < 1) {
        fprintf(stderr, "no algorithm\n");
        exit(1);
    }
    return r.algo;
}

static void describe(const char *label, const cublasLtMatmulAlgo_t &a)
{
    int id = 0, tile = 0, splitk = 0, red = 0, stages = 0, swz = 0;
    size_t n;
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &n);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &n);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &n);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &n);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &n);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &n);
    printf("    %-10s algo %d tile %d split-k %d reduction %d stages %d swizzle %d\n", label, id, tile, splitk, red,
           stages, swz);
}

static void run(const gemm &g, const cublasLtMatmulAlgo_t &algo, const void *w, const void *x, float *d,
                cudaStream_t st)
{
    const float one = 1.0f, zero = 0.0f;
    LT(cublasLtMatmul(g_lt, g.op, &one, w, g.a, x, g.b, &zero, d, g.d, d, g.d, &algo, g_ws, WS, st));
}

static float time_us(const gemm &g, const cublasLtMatmulAlgo_t &algo, const void *w, const void *x, float *d,
                     cudaStream_t st)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int i = 0; i < 23; i++) {
        CK(cudaEventRecord(e0, st));
        run(g, algo, w, x, d, st);
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 3)
            t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return t[t.size() / 2];
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float rnd()
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((g_rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

int main()
{
    LT(cublasLtCreate(&g_lt));
    CK(cudaMalloc(&g_ws, WS));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    struct { uint64_t rows, k, t_ref; } shapes[] = {{4096, 4096, 1536}, {1024, 4096, 1536}, {14336, 4096, 1536},
                                                   {4096, 14336, 1536}, {4096, 4096, 4096}, {14336, 4096, 4096},
                                                   {4096, 14336, 2048}};
    const uint64_t subs[][2] = {{512, 512}, {512, 0}, {100, 700}, {17, 1000}}; /* T_sub, offset */
    int fails = 0;
    for (auto &s : shapes) {
        std::vector<__nv_bfloat16> hw(s.rows * s.k), hx(s.t_ref * s.k);
        for (auto &v : hw)
            v = __float2bfloat16(rnd() * 0.05f);
        for (auto &v : hx)
            v = __float2bfloat16(rnd());
        void *w, *x;
        float *d_ref, *d_sub;
        CK(cudaMalloc(&w, hw.size() * 2));
        CK(cudaMalloc(&x, hx.size() * 2));
        CK(cudaMalloc(&d_ref, s.rows * s.t_ref * 4));
        CK(cudaMalloc(&d_sub, s.rows * s.t_ref * 4));
        CK(cudaMemcpy(w, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
        gemm big = make(s.rows, s.k, s.t_ref);
        const cublasLtMatmulAlgo_t a_ref = heuristic(big);
        run(big, a_ref, w, x, d_ref, st);
        CK(cudaStreamSynchronize(st));
        std::vector<float> ref(s.rows * s.t_ref), got(s.rows * s.t_ref);
        CK(cudaMemcpy(ref.data(), d_ref, ref.size() * 4, cudaMemcpyDeviceToHost));
        const float us_big = time_us(big, a_ref, w, x, d_ref, st);
        printf("W %llu x %llu, T_ref %llu: %.1f us (%.0f TFLOP/s)\n", (unsigned long long)s.rows,
               (unsigned long long)s.k, (unsigned long long)s.t_ref, us_big,
               2.0 * s.rows * s.k * s.t_ref / (us_big * 1e6));
        describe("T_ref", a_ref);
        for (auto &sub : subs) {
            const uint64_t T = sub[0], off = sub[1];
            gemm g = make(s.rows, s.k, T);
            const void *xs = (const __nv_bfloat16 *)x + off * s.k;
            cublasLtMatmulHeuristicResult_t chk;
            const bool ok = cublasLtMatmulAlgoCheck(g_lt, g.op, g.a, g.b, g.d, g.d, &a_ref, &chk) ==
                            CUBLAS_STATUS_SUCCESS;
            bool same_fixed = false, same_own = false;
            float us_fixed = 0, us_own = 0;
            if (ok) {
                run(g, a_ref, w, xs, d_sub, st);
                CK(cudaStreamSynchronize(st));
                CK(cudaMemcpy(got.data(), d_sub, s.rows * T * 4, cudaMemcpyDeviceToHost));
                same_fixed = memcmp(got.data(), ref.data() + off * s.rows, s.rows * T * 4) == 0;
                us_fixed = time_us(g, a_ref, w, xs, d_sub, st);
            }
            const cublasLtMatmulAlgo_t a_own = heuristic(g);
            run(g, a_own, w, xs, d_sub, st);
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(got.data(), d_sub, s.rows * T * 4, cudaMemcpyDeviceToHost));
            same_own = memcmp(got.data(), ref.data() + off * s.rows, s.rows * T * 4) == 0;
            us_own = time_us(g, a_own, w, xs, d_sub, st);
            printf("  T_sub %4llu at %4llu: T_ref's algorithm %s%s (%.1f us), its own %s (%.1f us)\n",
                   (unsigned long long)T, (unsigned long long)off, ok ? "" : "NOT APPLICABLE",
                   ok ? (same_fixed ? "bit-identical" : "DIFFERENT") : "", us_fixed,
                   same_own ? "bit-identical" : "different", us_own);
            describe("own", a_own);
            fails += ok && !same_fixed;
            fails += !ok;
            drop(g);
        }
        drop(big);
        cudaFree(w), cudaFree(x), cudaFree(d_ref), cudaFree(d_sub);
    }
    printf("%s\n", fails ? "FIXED ALGORITHM NOT ROW-INVARIANT (or not applicable) somewhere" : "fixed algorithm: every sub-span bit-identical");
    return fails ? 1 : 0;
}
