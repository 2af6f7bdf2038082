/* lab/attn-wg/attn_wg_test.cu — a standalone prototype of the prefill attention on Hopper's warpgroup
 * tensor-core instruction (wgmma), FlashAttention-3's shape, for one sequence with a contiguous bf16 K/V:
 * not part of the build, not yet run on a GPU (written in the thirty-first session; lab/README.md).
 *
 * Why: attn_prefill.cu's mma.sync kernel reaches ~196 TFLOP/s of attention work in its bf16 mode (0.70 ms a
 * layer at 4096 tokens, 8B shape; bench/RESULTS.md) because each of a CTA's 8 warps reads the whole K and V
 * tile from shared memory into registers for its own 16 query rows. wgmma reads K and V from shared memory
 * once for a warpgroup's 64 rows, and P (the softmax of S, in registers) is its A operand straight from the
 * S accumulators (the same fragment layout), so shared memory stops bounding the kernel.
 *
 * Shape: a CTA = one warpgroup = 64 query rows of one head (warp w: rows 16w .. 16w + 15); key tiles of 64
 * positions from 0 to the causal limit, K and V through a two-stage cp.async ring. Per tile:
 *   S (64 × 64 f32) = Q · Kᵀ: 8 wgmma m64n64k16, A = Q and B = K from shared memory, both K-major (a row's
 *     128 dims = two 128-byte swizzle rows: the tile is [2 column blocks][64 rows][128 B], 16-byte piece c of
 *     row r at r·128 + (c ^ r % 8)·16, as mmv_wg.cu's tiles);
 *   the causal mask on the diagonal tile, online softmax in base 2 (q is pre-scaled by scale·log2(e));
 *   O (64 × 128 f32) += P · V: 4 wgmma m64n128k16 with A = P from registers (bf16, rounded once: the prefill
 *     kernel's fast numerics) and B = V from shared memory in the same layout as K — N (dims) contiguous,
 *     "MN-major", the instruction's transpose-B flag set. Which of the descriptor's two offsets is the
 *     column-block stride (8192 B) and which the 8-row-group stride (1024 B) for an MN-major operand is the
 *     one thing this prototype could not settle without a GPU: --vdesc 0 / 1 tries both (the wrong one fails
 *     the check).
 * No pipelining of the two products yet (each tile: S, wait, softmax, P·V, wait): first correct, then the
 * overlaps FA3 uses (two warpgroups ping-ponging, S of the next tile beside P·V of this one).
 *
 * Check: sampled rows against a double-precision softmax of the same bf16 inputs, max|Δ| / max|ref| ≤ 2e-2
 * (the prefill kernel's fast-mode bound, TOL_PREFILL in tests/kernels/kernel_attn.c). Timing: CUDA events
 * over 20 launches after a warm-up; causal FLOPs = 4 · head_dim · heads · Σ_rows (row + 1).
 *
 * Build (here): nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I src \
 *               lab/attn-wg/attn_wg_test.cu -o /tmp/attn_wg_test
 * Run (the GPU):  attn_wg_test [--vdesc 0|1] [T] — T a multiple of 64, default 4096; 32 heads, 8 kv heads, hd 128.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/cuda/mma_bf16.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr int HD = 128, BM = 64, BN = 64, NT = 128;
constexpr uint32_t TILE = BN * HD * 2; /* bytes of a K, V or Q tile: two column blocks of 64 rows × 128 B */
constexpr uint32_t SMEM = 5 * TILE + 1024; /* Q, then K and V of two stages; + the 1024-byte alignment */

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        cudaError_t e_ = (call);                                                                               \
        if (e_ != cudaSuccess) {                                                                               \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                         \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

/* Byte offset of 16-byte piece p (0..15) of row r in a tile: column block p / 8, swizzled within it. */
__device__ __forceinline__ uint32_t tile_off(uint32_t r, uint32_t p)
{
    return (p >> 3) * 8192 + r * 128 + (((p & 7) ^ (r & 7)) << 4);
}

/* A shared-memory matrix descriptor in the 128-byte swizzle: start, leading and stride byte offsets. */
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           ((uint64_t)1 << 62);
}

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
/* After a wait: keeps the compiler from reading an asynchronous wgmma's accumulators before it (mmv_wg.cu's
 * reg_fence). */
template <int N> __device__ __forceinline__ void reg_fence(float (&v)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(v[i])::"memory");
}

#define R8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
              "+f"(d[i + 6]), "+f"(d[i + 7])

/* d (64 × 64 f32: 32 a thread) += A (64 × 16, shared) · B (16 × 64, shared), both K-major. */
__device__ __forceinline__ void wg_s(float (&d)[32], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
                 "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, "
                 "%29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : R8(0), R8(8), R8(16), R8(24)
                 : "l"(da), "l"(db));
}

/* d (64 × 128 f32: 64 a thread) += A (64 × 16, registers: the m16n8k16 A fragment of each warp's 16 rows)
 * · B (16 × 128, shared, N contiguous: transpose-B). */
__device__ __forceinline__ void wg_o(float (&d)[64], const uint32_t (&a)[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
                 "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, "
                 "%29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : R8(0), R8(8), R8(16), R8(24), R8(32), R8(40), R8(48), R8(56)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

/* 64 rows × 128 dims of src (rows ld elements apart) into a tile at s, one cp.async group's worth. */
__device__ __forceinline__ void load_tile(uint32_t s, const __nv_bfloat16 *src, uint64_t ld)
{
    for (uint32_t i = threadIdx.x; i < BN * 16; i += NT) {
        const uint32_t r = i / 16, p = i % 16;
        cp_async16(s + tile_off(r, p), src + r * ld + p * 8);
    }
}

/* q (T, H, HD) bf16, pre-scaled by scale·log2(e); k, v (T, KVH, HD) bf16; out (T, H, HD) f32. Grid (T / 64,
 * H), the last query tiles (the most keys) first. */
__global__ void __launch_bounds__(NT) kernel_attn_wg(const __nv_bfloat16 *__restrict__ q,
                                                      const __nv_bfloat16 *__restrict__ k,
                                                      const __nv_bfloat16 *__restrict__ v, float *__restrict__ out,
                                                      uint32_t T, uint32_t H, uint32_t KVH, uint32_t lbo_v,
                                                      uint32_t sbo_v)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = ((uint32_t)__cvta_generic_to_shared(smem_raw) + 1023) & ~1023u;
    const uint32_t sQ = base, sKV = base + TILE; /* stage st: K at sKV + 2·st·TILE, V after it */
    const uint32_t qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, kvh = h / (H / KVH), q0 = qt * BM;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
    const uint64_t ldq = (uint64_t)H * HD, ldk = (uint64_t)KVH * HD;
    load_tile(sQ, q + (uint64_t)q0 * ldq + (uint64_t)h * HD, ldq);
    const uint32_t nkt = qt + 1; /* key tiles 0 .. qt (causal) */
    auto issue = [&](uint32_t kt) {
        const uint32_t st = kt & 1;
        load_tile(sKV + 2 * st * TILE, k + (uint64_t)kt * BN * ldk + (uint64_t)kvh * HD, ldk);
        load_tile(sKV + (2 * st + 1) * TILE, v + (uint64_t)kt * BN * ldk + (uint64_t)kvh * HD, ldk);
        cp_async_commit();
    };
    issue(0);
    float o[64], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    for (int i = 0; i < 64; i++)
        o[i] = 0.0f;
    const uint32_t row0 = q0 + 16 * warp + g, row1 = row0 + 8; /* this thread's two query rows */
    for (uint32_t kt = 0; kt < nkt; kt++) {
        if (kt + 1 < nkt) {
            issue(kt + 1);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        fence_proxy_async();
        __syncthreads();
        const uint32_t sK = sKV + 2 * (kt & 1) * TILE, sV = sK + TILE;
        float s[32];
        for (int i = 0; i < 32; i++)
            s[i] = 0.0f;
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            const uint32_t off = (kk >> 2) * 8192 + (kk & 3) * 32;
            wg_s(s, desc(sQ + off, 16, 1024), desc(sK + off, 16, 1024));
        }
        wg_commit();
        wg_wait0();
        reg_fence(s);
        /* s[4j + e]: row row0 (e < 2) or row1, key kt·64 + 8j + 2c + (e & 1) */
        if (kt == qt)
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const uint32_t key = kt * BN + 8 * j + 2 * c + (e & 1);
                    if (key > (e < 2 ? row0 : row1))
                        s[4 * j + e] = -INFINITY;
                }
        float x0 = -INFINITY, x1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            x0 = fmaxf(x0, fmaxf(s[4 * j], s[4 * j + 1]));
            x1 = fmaxf(x1, fmaxf(s[4 * j + 2], s[4 * j + 3]));
        }
        for (int sh = 1; sh <= 2; sh <<= 1) {
            x0 = fmaxf(x0, __shfl_xor_sync(0xffffffffu, x0, sh));
            x1 = fmaxf(x1, __shfl_xor_sync(0xffffffffu, x1, sh));
        }
        const float n0 = fmaxf(m0, x0), n1 = fmaxf(m1, x1); /* finite: key 0 is visible to every row */
        const float c0 = exp2f(m0 - n0), c1 = exp2f(m1 - n1);
        m0 = n0, m1 = n1;
        float p0 = 0.0f, p1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            s[4 * j] = exp2f(s[4 * j] - n0), s[4 * j + 1] = exp2f(s[4 * j + 1] - n0);
            s[4 * j + 2] = exp2f(s[4 * j + 2] - n1), s[4 * j + 3] = exp2f(s[4 * j + 3] - n1);
            p0 += s[4 * j] + s[4 * j + 1], p1 += s[4 * j + 2] + s[4 * j + 3];
        }
        l0 = l0 * c0 + p0, l1 = l1 * c1 + p1;
#pragma unroll
        for (int j = 0; j < 16; j++)
            o[4 * j] *= c0, o[4 * j + 1] *= c0, o[4 * j + 2] *= c1, o[4 * j + 3] *= c1;
        uint32_t a[4][4]; /* P's k16 steps: keys 16kk .. 16kk + 15 = S's column blocks 2kk, 2kk + 1 */
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            a[kk][0] = pack_bf16(s[8 * kk], s[8 * kk + 1]);
            a[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
            a[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
            a[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
        }
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++) /* keys 16kk ..: two 8-row groups of the tile a step */
            wg_o(o, a[kk], desc(sV + kk * 2048, lbo_v, sbo_v));
        wg_commit();
        wg_wait0();
        reg_fence(o);
        __syncthreads(); /* this stage is refilled two tiles on */
    }
    for (int sh = 1; sh <= 2; sh <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, sh);
        l1 += __shfl_xor_sync(0xffffffffu, l1, sh);
    }
    /* o[4j + e]: row row0 (e < 2) or row1, dim 8j + 2c + (e & 1) */
    float *r0 = out + (uint64_t)row0 * ldq + (uint64_t)h * HD, *r1 = out + (uint64_t)row1 * ldq + (uint64_t)h * HD;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        *reinterpret_cast<float2 *>(r0 + 8 * j + 2 * c) = make_float2(o[4 * j] / l0, o[4 * j + 1] / l0);
        *reinterpret_cast<float2 *>(r1 + 8 * j + 2 * c) = make_float2(o[4 * j + 2] / l1, o[4 * j + 3] / l1);
    }
}

float bf(__nv_bfloat16 x) { return __bfloat162float(x); }

} // namespace

int main(int argc, char **argv)
{
    int vdesc = 0, ai = 1;
    if (argc > 2 && strcmp(argv[1], "--vdesc") == 0)
        vdesc = atoi(argv[2]), ai = 3;
    const uint32_t T = argc > ai ? (uint32_t)atoi(argv[ai]) : 4096, H = 32, KVH = 8;
    if (T == 0 || T % 64 != 0) {
        fprintf(stderr, "attn_wg_test: T must be a positive multiple of 64\n");
        return 2;
    }
    const uint32_t lbo_v = vdesc ? 1024 : 8192, sbo_v = vdesc ? 8192 : 1024;
    const size_t nq = (size_t)T * H * HD, nk = (size_t)T * KVH * HD;
    std::vector<__nv_bfloat16> hq(nq), hk(nk), hv(nk);
    uint64_t st = 0x9E3779B97F4A7C15ull;
    auto rnd = [&]() { /* uniform in [-1, 1) */
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        return (float)((st >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
    };
    const float qscale = 1.0f / sqrtf((float)HD) * 1.4426950408889634f;
    for (auto &x : hq)
        x = __float2bfloat16(2.0f * rnd() * qscale);
    for (auto &x : hk)
        x = __float2bfloat16(2.0f * rnd());
    for (auto &x : hv)
        x = __float2bfloat16(rnd());
    __nv_bfloat16 *dq, *dk, *dv;
    float *dout;
    CHECK(cudaMalloc(&dq, nq * 2));
    CHECK(cudaMalloc(&dk, nk * 2));
    CHECK(cudaMalloc(&dv, nk * 2));
    CHECK(cudaMalloc(&dout, nq * 4));
    CHECK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dv, hv.data(), nk * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dout, 0xFF, nq * 4)); /* NaN: every element must be written */
    CHECK(cudaFuncSetAttribute(kernel_attn_wg, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
    const dim3 grid(T / BM, H);
    kernel_attn_wg<<<grid, NT, SMEM>>>(dq, dk, dv, dout, T, H, KVH, lbo_v, sbo_v);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<float> out(nq);
    CHECK(cudaMemcpy(out.data(), dout, nq * 4, cudaMemcpyDeviceToHost));
    /* sampled rows (first, last, the tile edges, a spread) × every head: double softmax in base 2 */
    std::vector<uint32_t> rows = {0, 1, 63, 64, 65, T / 2, T - 65, T - 64, T - 1};
    for (uint32_t i = 0; i < 23; i++)
        rows.push_back((uint32_t)(((uint64_t)i * 2654435761u) % T));
    double maxref = 0, maxerr = 0;
    size_t nonfinite = 0;
    std::vector<double> w(T), acc(HD);
    for (uint32_t t : rows)
        for (uint32_t h = 0; h < H; h++) {
            const uint32_t kvh = h / (H / KVH);
            double mx = -INFINITY;
            for (uint32_t j = 0; j <= t; j++) {
                double s = 0;
                for (int d = 0; d < HD; d++)
                    s += (double)bf(hq[((size_t)t * H + h) * HD + d]) * bf(hk[((size_t)j * KVH + kvh) * HD + d]);
                w[j] = s, mx = std::max(mx, s);
            }
            double l = 0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (uint32_t j = 0; j <= t; j++) {
                const double p = exp2(w[j] - mx);
                l += p;
                for (int d = 0; d < HD; d++)
                    acc[d] += p * bf(hv[((size_t)j * KVH + kvh) * HD + d]);
            }
            for (int d = 0; d < HD; d++) {
                const double ref = acc[d] / l, got = out[((size_t)t * H + h) * HD + d];
                if (!std::isfinite(got))
                    nonfinite++;
                maxref = std::max(maxref, fabs(ref));
                maxerr = std::max(maxerr, fabs(ref - got));
            }
        }
    const double rel = maxerr / maxref;
    const bool ok = nonfinite == 0 && rel <= 2e-2;
    printf("attn_wg T %u, 32/8 heads, hd 128, V descriptor %d (LBO %u, SBO %u): %zu rows × 32 heads checked, "
           "max|d|/max|ref| %.3e, %zu non-finite: %s\n",
           T, vdesc, lbo_v, sbo_v, rows.size(), rel, nonfinite, ok ? "ok" : "FAIL");
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        kernel_attn_wg<<<grid, NT, SMEM>>>(dq, dk, dv, dout, T, H, KVH, lbo_v, sbo_v);
    CHECK(cudaEventRecord(e0));
    for (int i = 0; i < 20; i++)
        kernel_attn_wg<<<grid, NT, SMEM>>>(dq, dk, dv, dout, T, H, KVH, lbo_v, sbo_v);
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    const double us = ms * 1e3 / 20, flops = 4.0 * HD * H * ((double)T * (T + 1) / 2);
    printf("attn_wg T %u: %.1f us a layer, %.1f TFLOP/s of attention work (attn_prefill.cu's bf16 mode: ~700 us at "
           "4096, ~196 TFLOP/s)\n",
           T, us, flops / us / 1e6);
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout);
    return ok ? 0 : 1;
}
