/* lab/stream57/stream.cu — does the lone Q4_K tensor-core GEMV's access pattern cap its bandwidth? (experiment,
 * outside the build; `bash lab/stream57/build.sh` makes lab/stream57/stream, lab/stream57-gpu.sh runs it).
 *
 * kernel_gemv --mma reads the 8B shapes' Q4_K matrices at t ≈ 2.7 µs + bytes / 2.5 TB/s on an H100 (k/v, q/o,
 * gate/up, gate+up: fifty-sixth run), 75 % of the 3.35 TB/s at the margin, where the BF16 GEMV streams at ~89 %.
 * These kernels move the same bytes with no arithmetic, so what they reach is the pattern's own ceiling:
 *   tile   gemv_mma.cu's loads exactly: 4 warps a 16-row tile (the K split of 4), warp k the superblock pairs k,
 *          k + 4, ... (288 bytes of each of the 16 rows, 16-byte-aligned range: 18-19 pieces), 8 lanes a row, 4 rows
 *          an instruction, cp.async into a ring of NS stages of 16 × 352 bytes, waited for one stage at a time;
 *   flat   the same ring, items and order, but an item is 4608 contiguous bytes (what a repacked tile would be);
 *   ldg    flat items loaded into registers (9 × 16 bytes a lane an item, NS items asked for before any is used).
 * Grid: `resident` (occupancy × SMs blocks looping over the tiles, as the engine's gate/up) or `tiles` (a block a
 * tile). Shared memory is padded to the real kernel's 47 KB a block (4 blocks an SM) unless said otherwise.
 * Timing: L launches over C copies (C·bytes ≥ 4 × L2) captured as one CUDA graph, replayed 15 times between
 * events, the median µs a launch (tests/kernels/kernel_time.h's method). Nothing here is checked for values: the
 * kernels only xor a word an item into a sink that is never equal to the magic, so no load can be dropped. */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "../../src/backend/cuda/tile_copy.cuh"
#include "../lab_check.h"

constexpr uint32_t PAIR = 288, RS = 352, STG = 16 * RS, ITEM = 16 * PAIR; /* a pair's bytes a row; stage; item */

/* MODE 0 tile, 1 flat (cp.async ring), 2 tile + WORK dependent-free integer instructions an item (4 chains of
 * IMAD on the item's word: about the real kernel's 664 instructions a pair at WORK 160), 3 as 2 with the stage
 * refilled before the work (its word read first), 4 as 2 with a block barrier after each tile's items (the real
 * kernel's per-tile sums); w: rows × row_bytes, a row npair pairs */
template <int NS, int MODE, int WORK = 0>
__global__ void __launch_bounds__(128) k_ring(const uint8_t *__restrict__ w, uint64_t row_bytes, uint32_t rows,
                                              uint32_t npair, uint32_t *sink)
{
    extern __shared__ __align__(16) uint8_t sm[];
    const uint32_t lane = threadIdx.x & 31, wi = threadIdx.x >> 5, kp = wi;
    const uint32_t ngroups = (rows + 15) / 16;
    const uint32_t mygroups = blockIdx.x < ngroups ? (ngroups - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    const uint32_t npw = kp < npair ? (npair - kp + 3) / 4 : 0;
    const uint32_t ring = smem_u32(sm + wi * NS * STG);
    uint32_t ig = 0, ii = 0, acc = 0;
    auto issue = [&](uint32_t slot) {
        if (ig < mygroups && npw > 0) {
            const uint32_t g = blockIdx.x + ig * gridDim.x, p = kp + 4 * ii;
            const uint32_t dst = ring + slot * STG;
            if (MODE != 1) { /* the tile pattern */
                const uint32_t start = PAIR * p, lo = start & ~15u, pieces = ((start & 15) + PAIR + 15) / 16;
                const uint32_t r = lane >> 3, q = lane & 7;
                const uint8_t *src = w + lo + 16 * q;
#pragma unroll
                for (uint32_t j = 0; j < 4; j++) {
                    const uint8_t *s = src + (uint64_t)min(g * 16 + r + 4 * j, rows - 1) * row_bytes;
#pragma unroll
                    for (uint32_t i = 0; i < 3; i++)
                        if (q + 8 * i < pieces)
                            cp_async16(dst + (r + 4 * j) * RS + 16 * q + 128 * i, s + 128 * i);
                }
            } else {
                const uint8_t *src = w + (uint64_t)g * 16 * row_bytes + (uint64_t)p * ITEM;
#pragma unroll
                for (uint32_t i = 0; i < 9; i++)
                    cp_async16(dst + 16 * (lane + 32 * i), src + 16 * (lane + 32 * i));
            }
            if (++ii == npw)
                ii = 0, ig++;
        }
        cp_async_commit();
    };
#pragma unroll
    for (int j = 0; j < NS; j++)
        issue(j);
    uint32_t j = 0;
    for (uint32_t gi = 0; gi < mygroups; gi++) {
        for (uint32_t i = 0; i < npw; i++, j++) {
            cp_async_wait<NS - 1>();
            __syncwarp();
            const uint32_t v = *reinterpret_cast<const uint32_t *>(sm + (wi * NS + j % NS) * STG + 4 * lane);
            if (MODE == 3) {
                __syncwarp();
                issue(j % NS);
            }
            if (MODE >= 2) {
                uint32_t c0 = v, c1 = v + 1, c2 = v + 2, c3 = v + 3;
#pragma unroll 16
                for (int k = 0; k < WORK; k++)
                    c0 = c0 * 747796405u + c1, c1 = c1 * 2891336453u + c2, c2 = c2 * 1664525u + c3,
                    c3 = c3 * 22695477u + c0;
                acc ^= c0 ^ c1 ^ c2 ^ c3;
            } else {
                acc ^= v;
            }
            if (MODE != 3) {
                __syncwarp();
                issue(j % NS);
            }
        }
        if (MODE == 4)
            __syncthreads();
    }
    cp_async_wait<0>();
    if (acc == 0x9E3779B9u)
        sink[threadIdx.x] = acc;
}

/* flat items straight into registers, NS items asked for at a time */
template <int NS>
__global__ void __launch_bounds__(128) k_ldg(const uint8_t *__restrict__ w, uint64_t row_bytes, uint32_t rows,
                                             uint32_t npair, uint32_t *sink)
{
    const uint32_t lane = threadIdx.x & 31, kp = threadIdx.x >> 5;
    const uint32_t ngroups = (rows + 15) / 16;
    const uint32_t npw = kp < npair ? (npair - kp + 3) / 4 : 0;
    const uint32_t total = (blockIdx.x < ngroups ? (ngroups - blockIdx.x + gridDim.x - 1) / gridDim.x : 0) * npw;
    uint32_t acc = 0;
    for (uint32_t it = 0; it < total; it += NS) {
        uint4 v[NS][9];
#pragma unroll
        for (int s = 0; s < NS; s++) {
            const uint32_t k = min(it + s, total - 1);
            const uint32_t g = blockIdx.x + (k / npw) * gridDim.x, p = kp + 4 * (k % npw);
            const uint4 *src = reinterpret_cast<const uint4 *>(w + (uint64_t)g * 16 * row_bytes + (uint64_t)p * ITEM);
#pragma unroll
            for (int i = 0; i < 9; i++)
                v[s][i] = __ldg(src + lane + 32 * i);
        }
#pragma unroll
        for (int s = 0; s < NS; s++)
#pragma unroll
            for (int i = 0; i < 9; i++)
                acc ^= v[s][i].x ^ v[s][i].w;
    }
    if (acc == 0x9E3779B9u)
        sink[threadIdx.x] = acc;
}

typedef void (*kfn)(const uint8_t *, uint64_t, uint32_t, uint32_t, uint32_t *);

/* µs a launch: L launches over the copies in one graph, median of 15 replays */
static float time_kernel(kfn f, uint32_t grid, uint32_t smem, const std::vector<uint8_t *> &copies,
                         uint64_t row_bytes, uint32_t rows, uint32_t npair, uint32_t *sink, cudaStream_t st)
{
    const int L = std::max<int>(24, (int)copies.size());
    for (int i = 0; i < 4; i++)
        f<<<grid, 128, smem, st>>>(copies[i % copies.size()], row_bytes, rows, npair, sink);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < L; i++)
        f<<<grid, 128, smem, st>>>(copies[i % copies.size()], row_bytes, rows, npair, sink);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    const float us = 1000.0f * lab_graph_ms(ge, st, 1, 15) / L;
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    return us;
}

struct variant {
    const char *name;
    kfn f;
    uint32_t smem; /* dynamic shared memory a block (what sets the blocks an SM) */
};

int main(int argc, char **argv)
{
    const double peak = argc > 1 ? atof(argv[1]) : 3.35; /* TB/s for the % column */
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, %d SMs, L2 %d MB; %% of %.2f TB/s\n", prop.name, prop.multiProcessorCount,
           prop.l2CacheSize >> 20, peak);
    const uint32_t REAL = 4 * 2 * STG + 4 * 16 * 10 * 4; /* the real kernel's shared memory at NS 2 (~47 KB) */
    const variant vs[] = {
        {"tile ns2", k_ring<2, 0>, REAL},
        {"flat ns2", k_ring<2, 1>, REAL},
        {"tile ns2 + 640 IMAD", k_ring<2, 2, 160>, REAL},
        {"tile ns2 + 1280 IMAD", k_ring<2, 2, 320>, REAL},
        {"tile ns2 + 640 IMAD, early refill", k_ring<2, 3, 160>, REAL},
        {"tile ns2 + 640 IMAD, tile barrier", k_ring<2, 4, 160>, REAL},
        {"tile ns2, tile barrier", k_ring<2, 4, 0>, REAL},
        {"tile ns4 + 640 IMAD, early refill", k_ring<4, 3, 160>, 4 * 4 * STG},
        {"tile ns2 own smem", k_ring<2, 0>, 4 * 2 * STG},
        {"tile ns4 own smem", k_ring<4, 0>, 4 * 4 * STG},
        {"flat ns4 own smem", k_ring<4, 1>, 4 * 4 * STG},
        {"ldg ns2 (4 blocks)", k_ldg<2>, REAL},
        {"ldg ns4 (4 blocks)", k_ldg<4>, REAL},
        {"ldg ns4 (no smem)", k_ldg<4>, 0},
    };
    struct shape {
        const char *name;
        uint32_t rows;
    } shapes[] = {{"k/v", 1024}, {"q/o", 4096}, {"qkv", 6144}, {"gate/up", 14336}, {"gate+up", 28672}};
    const uint64_t row_bytes = 4096 / 256 * 144; /* 2304: 8 pairs */
    const uint32_t npair = 8;
    uint32_t *sink;
    CK(cudaMalloc(&sink, 4096));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    for (const variant &v : vs)
        CK(cudaFuncSetAttribute(v.f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)prop.sharedMemPerBlockOptin));
    printf("| shape | MB | variant | blocks/SM | grid | µs resident | GB/s | %% | µs tiles | GB/s | %% |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const shape &s : shapes) {
        const uint64_t bytes = (uint64_t)s.rows * row_bytes;
        const int nc = (int)std::min<uint64_t>(64, std::max<uint64_t>(2, (4ull * prop.l2CacheSize + bytes - 1) / bytes));
        std::vector<uint8_t *> copies(nc);
        for (auto &c : copies) {
            CK(cudaMalloc(&c, bytes + 64));
            CK(cudaMemset(c, 0x5A, bytes + 64));
        }
        for (const variant &v : vs) {
            const uint32_t sm = v.smem;
            int per_sm = 0;
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.f, 128, sm));
            const uint32_t tiles = (s.rows + 15) / 16;
            const uint32_t res = std::min<uint32_t>(tiles, (uint32_t)per_sm * prop.multiProcessorCount);
            const float ur = time_kernel(v.f, res, sm, copies, row_bytes, s.rows, npair, sink, st);
            const float ut = time_kernel(v.f, tiles, sm, copies, row_bytes, s.rows, npair, sink, st);
            printf("| %s | %.1f | %s | %d | %u | %.2f | %.0f | %.1f | %.2f | %.0f | %.1f |\n", s.name, bytes / 1e6,
                   v.name, per_sm, res, ur, bytes / ur / 1e3, 100.0 * bytes / ur / 1e6 / peak, ut,
                   bytes / ut / 1e3, 100.0 * bytes / ut / 1e6 / peak);
            fflush(stdout);
        }
        for (auto &c : copies)
            CK(cudaFree(c));
    }
    return 0;
}
