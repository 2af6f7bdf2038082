/* backend/cuda/mmv_wg.cu — the batched decode GEMV on Hopper's warpgroup
 * tensor-core instruction (wgmma), BF16 weights: y[t][r] = scale · Σ_i W[r, i]
 * · x[t][i] for 1..64 tokens t, W read once for all of them.
 *
 * Why: mmv.cu (mma.sync) reaches ~25-30 % of the weight stream at 64 tokens
 * because every warp reads its x fragments from shared memory through the
 * register file for each 16 weight rows (bench/RESULTS.md, 2026-11-30). wgmma
 * reads both operands from shared memory itself, 64 A rows × 128 B columns an
 * instruction, so x is read once per 128 weight rows and the weight once per
 * 64 A rows.
 *
 * Operands: A = x, its 64 rows the hi and lo bf16 parts of 32 tokens
 * interleaved (row 2t = rn(x_t), row 2t+1 = rn(x_t − hi)), K-major; B = the
 * weight tile, 128 weight rows, K-major as stored (row r, 64 consecutive k =
 * 128 bytes). A small kernel first splits x into those rows in the context's
 * scratch (mmv_xs; cuda_mmv_next skips it for the next weight of a group
 * reading the same x); then both tiles stream through an NS-stage cp.async
 * pipeline into shared memory in the 128-byte swizzle wgmma reads (16-byte
 * piece c of row r at r·128 + (c ^ r%8)·16, tiles 1024-byte aligned), A rows
 * past 2T zero-filled. wgmma groups run one step behind (wait_group 1), so a
 * step's barrier and copies overlap the previous step's products.
 * D: each lane holds rows g and g+8 (g = 16·warp + lane/4) of its 8-column
 * blocks, so hi (row 2t) and lo (row 2t+1) of a token are 4 lanes apart: one
 * shuffle adds them (hi + lo, the order of mmv.cu and gemm.cu's exact mode).
 * With bf16-valued x (cuda_ctx_set_act_bf16: the backend's bf16 activations)
 * the lo rows would be zeros: A row t is token t instead, 64 tokens a tile,
 * the same bits (hi + 0) for half the products.
 *
 * Exactness and batch invariance: each product is an exact bf16×bf16 term in
 * an f32 wgmma accumulation; a token's outputs come from the same wgmma
 * sequence whatever the batch (its A row depends on it alone, the k order is
 * fixed: slice s of S, its 64-wide chunks in order, four k16 steps a chunk),
 * S depends on the weight's shape only, and the slice sums are added in
 * slice order. So a token's bits are the same alone or anywhere in a batch of
 * 64, and for every launch shape (kernel_mmv checks every variant). They are not
 * the bits of mmv.cu (another instruction's internal order).
 *
 * Floor: rows·n·2 bytes / 4.3 TB/s. Products: 2·rows·n·64 FLOP a 32-token A
 * tile — at 64 tokens (two tiles) 128 FLOP per weight byte, ~550 TFLOP/s at
 * the full weight stream, within wgmma's dense rate (~790 measured).
 * Measured (H200, bench/RESULTS.md 2026-12-01): ≤ 32 tokens 80-86 % of the
 * floor on gate/up, 66-76 % on down, 45-57 % on q/o; 64 tokens 74 % on
 * gate/up, 32-40 % on q/o and down (their S = 4 clusters of 128-row blocks
 * with 4 stages: only 30 of 32 fit at once). Hence the 144-row tiles (wgmma
 * n144, WR = 144) for those: 29 clusters, one wave: 47 % on q/o, 66 % on
 * down at 64 tokens (seventeenth run).
 *
 * Shape: a block of NWG warpgroups and one K slice; either each warpgroup owns
 * WR (128 or 144) weight rows and runs MT A tiles (MT = 1: ≤ 32 tokens, 2:
 * ≤ 64), or (MS) the two warpgroups share the block's WR rows and run A tile
 * 0 and 1 — at 64 tokens that halves a warpgroup's serial wgmma chain, the
 * best shape measured. With S > 1 the S slices of a row block are one
 * thread-block cluster: each block leaves its slice sums in its shared memory
 * and every block adds all S tiles, through distributed shared memory, in
 * slice order, for NR / S of the rows (no scratch, no counters, no serial
 * tail). S is the shape's (cuda_mmv_wg_slices) unless the caller gives one
 * (cuda_mmv_sliced: q, k and v take the joined q|k|v launch's, so that a
 * member's rows have the same bits alone and joined).
 *
 * Gated FFN (cuda_mmv_wg_glu, the decode step's gate|up): a block's tile
 * rows are half gate rows and half the up rows of the same columns, so its
 * epilogue holds both sums of a column and writes act(gate)·up straight into
 * the A rows of the down GEMV that follows (S = 1 only) — no activation
 * launch and no gate|up rows in memory; the float operations of the two
 * launches apart, so their bits (kernel_mmv). H200, 8B BF16, 64 rows with
 * bf16 activations: the decode step +4 % (bench/RESULTS.md thirty-third run).
 */
#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/tile_copy.cuh"
#include "backend/cuda/wgmma.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int WG_CHUNK = 64;  /* k per stage: 128 bytes of a weight row, one swizzle atom */
constexpr int WG_ROWS = 128;  /* weight rows a warpgroup */
constexpr int WG_TILE = 8192; /* bytes of one A tile: 64 rows × 128 */

/* The same with a 144-column B (144 weight rows): 72 accumulators a thread. */
__device__ __forceinline__ void wgmma_m64n144k16(float (&d)[72], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n144k16.f32.bf16.bf16 {" WG_R64 ", %64, %65, %66, %67, %68, %69, "
                 "%70, %71}, %72, %73, p, 1, 1, 0, 0;\n}\n"
                 : WG_D64, WG_D8(64)
                 : "l"(da), "l"(db));
}

/* D += A · B for a B of WR (128 or 144) weight rows. */
template <int WR>
__device__ __forceinline__ void wgmma_rows(float (&d)[WR / 2], uint64_t da, uint64_t db)
{
    if constexpr (WR == 144)
        wgmma_m64n144k16(d, da, db);
    else
        wgmma_m64n128k16(d, da, db);
}

/* x (T, n) f32 → xs (2T, n) bf16: row 2t = rn(x_t), row 2t + 1 = rn(x_t − hi),
 * the A rows the GEMV kernel copies; ho (x bf16-valued): xs (T, n), row t =
 * x_t. */
__global__ void kernel_mmv_wg_split(const float *__restrict__ x, uint32_t T, uint32_t n, uint8_t *__restrict__ xs,
                                    bool ho)
{
    pdl_enter();
    const uint32_t n4 = n / 4;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < T * n4; i += gridDim.x * blockDim.x) {
        const uint32_t t = i / n4, k4 = i % n4;
        mmv_split_store4(xs, __ldg(reinterpret_cast<const float4 *>(x) + i), t, 4 * (uint64_t)k4, n, ho);
    }
}

/* W floats (W = 4 or 2) at a W-aligned address, by one vector access. */
template <int W> __device__ __forceinline__ void vec_load(const float *src, float (&v)[W])
{
    if constexpr (W == 4) {
        const float4 u = *reinterpret_cast<const float4 *>(src);
        v[0] = u.x, v[1] = u.y, v[2] = u.z, v[3] = u.w;
    } else {
        const float2 u = *reinterpret_cast<const float2 *>(src);
        v[0] = u.x, v[1] = u.y;
    }
}
template <int W> __device__ __forceinline__ void vec_store(float *dst, const float (&v)[W])
{
    if constexpr (W == 4)
        *reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
    else
        *reinterpret_cast<float2 *>(dst) = make_float2(v[0], v[1]);
}

/* The S blocks of a cluster (one row block of NR rows, every K slice) add
 * their slice tiles red (t, NR) in slice order, each block for NR / S of the
 * rows, W rows an item (W divides NR / S), the S tiles' loads issued together. */
template <int W>
__device__ __forceinline__ void mmv_wg_reduce(cg::cluster_group &cluster, float *red, uint32_t NR, uint32_t S,
                                              uint32_t T, uint32_t rows, uint32_t r0, float *__restrict__ y,
                                              float scale, uint32_t tid, uint32_t NT)
{
    const uint32_t per = NR / S / W, rank = cluster.block_rank();
    const bool vec = rows % W == 0;
    for (uint32_t i = tid; i < T * per; i += NT) {
        const uint32_t t = i / per, rl = (rank * per + i % per) * W;
        float p[8][W];
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (k < (int)S)
                vec_load<W>(cluster.map_shared_rank(red, k) + t * NR + rl, p[k]);
        float v[W];
#pragma unroll
        for (int e = 0; e < W; e++) {
            v[e] = p[0][e];
#pragma unroll
            for (int k = 1; k < 8; k++)
                if (k < (int)S)
                    v[e] += p[k][e];
            v[e] *= scale;
        }
        float *dst = y + (uint64_t)t * rows + r0 + rl;
        if (vec && r0 + rl + W - 1 < rows) {
            vec_store<W>(dst, v);
        } else {
            for (int e = 0; e < W && r0 + rl + e < rows; e++)
                dst[e] = v[e];
        }
    }
}

/* GLU (cuda_mmv_wg_glu): W = [gate; up] (rows = 2F), S = 1, and instead of y the block writes act(gate)·up of
 * its F-columns as the next GEMV's A rows into xo (F = rows / 2 wide, mmv_split_store2): a warpgroup's WR tile
 * rows are WR / 2 gate rows and the same WR / 2 up rows, so a thread holds a column's gate sum in acc[4j + ..]
 * and its up sum in acc[4(j + WR / 16) + ..]; the float operations of y then kernel_glu_rows4_split. */
template <int NWG, int MT, int NS, bool MS, int WR, bool GLU>
__global__ void __launch_bounds__(NWG * 128)
    kernel_mmv_wg(const uint8_t *__restrict__ w, uint32_t rows, uint32_t n, const uint8_t *__restrict__ xs, uint32_t T,
                  uint32_t S, uint32_t cps, float *__restrict__ y, float scale, bool ho, uint8_t *__restrict__ xo,
                  bool gelu)
{
    constexpr int NT = NWG * 128, NR = MS ? WR : NWG * WR, WBYTES = NR * 128, STAGE = WBYTES + MT * WG_TILE;
    constexpr int MA = MS ? 1 : MT;       /* A tiles a warpgroup runs (MS: warpgroup w runs tile w) */
    constexpr int NA = WR / 2;            /* accumulators a thread an A tile */
    constexpr int WPC = WBYTES / 16;      /* 16-byte weight pieces a stage */
    constexpr int WP = (WPC + NT - 1) / NT; /* ... a thread (the last round partial for 144-row tiles) */
    constexpr int XP = MT * WG_TILE / 16 / NT; /* and of x */
    constexpr int P = NS - 2;             /* stages in flight beyond the one computing */
    static_assert((WR == 128 || WR == 144) && XP * NT * 16 == MT * WG_TILE && P >= 1 && (!MS || NWG == MT) &&
                      STAGE % 1024 == 0 && WBYTES % 1024 == 0 && 64 * NR * 4 <= NS * STAGE,
                  "mmv_wg: shape (the slice tile red (64, NR) lives in the stages' memory)");
    extern __shared__ uint8_t smem_raw[];
    const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem_raw) + 1023) & ~1023u;
    const uint32_t tid = threadIdx.x, wg = tid / 128, lt = tid % 128, lane = tid & 31;
    const uint32_t r0 = blockIdx.x * NR;
    const uint32_t s = blockIdx.y, nchunks = n / WG_CHUNK;
    const uint32_t c0 = min(nchunks, s * cps), c1 = min(nchunks, c0 + cps), nsteps = c1 - c0;
    const uint64_t row_bytes = (uint64_t)n * 2;
    constexpr uint32_t HW = WR / 2;           /* GLU: gate (then up) rows of a warpgroup's tile */
    const uint32_t F = rows / 2, f0 = blockIdx.x * (NR / 2); /* GLU: F-columns f0 .. of this block */
    /* the weight row of tile row r: r0 + r, or (GLU) the gate or up row of F-column f0 + (r / WR)·HW + r % HW */
    auto w_row = [&](uint32_t r) -> uint64_t {
        if constexpr (GLU) {
            const uint32_t rr = r % WR, f = min(f0 + (r / WR) * HW + rr % HW, F - 1);
            return rr < HW ? f : F + f;
        } else {
            return min(r0 + r, rows - 1);
        }
    };

    /* a stage: the weight tile (NR rows), then MT A tiles; piece p = j·NT + tid:
     * row p/8, 16-byte piece p%8 of its 128 bytes; A rows past 2T (ho: T) are zero-filled */
    const uint32_t a_rows = ho ? T : 2 * T;
    auto issue_w = [&](uint32_t step) {
        if (step < nsteps) {
            const uint32_t base = sbase + (step % NS) * STAGE;
            const uint64_t koff = (uint64_t)(c0 + step) * 128;
#pragma unroll
            for (int j = 0; j < WP; j++) {
                const uint32_t p = j * NT + tid, r = p / 8, c = p % 8;
                if (WP * NT == WPC || p < (uint32_t)WPC)
                    cp_async16(base + swz(r, c), w + w_row(r) * row_bytes + koff + c * 16);
            }
        }
    };
    auto issue_x = [&](uint32_t step) {
        if (step < nsteps) {
            const uint32_t base = sbase + (step % NS) * STAGE;
            const uint64_t koff = (uint64_t)(c0 + step) * 128;
#pragma unroll
            for (int j = 0; j < XP; j++) {
                const uint32_t p = j * NT + tid, a = p / 8, c = p % 8;
                const bool live = a < a_rows;
                cp_async16_zfill(base + WBYTES + (a / 64) * WG_TILE + swz(a % 64, c),
                                 live ? xs + (uint64_t)a * row_bytes + koff + c * 16 : xs, live ? 16 : 0);
            }
        }
        cp_async_commit(); /* empty groups keep the count */
    };
    auto issue = [&](uint32_t step) {
        issue_w(step);
        issue_x(step);
    };

    float acc[MA][NA];
#pragma unroll
    for (int m = 0; m < MA; m++)
#pragma unroll
        for (int i = 0; i < NA; i++)
            acc[m][i] = 0.0f;

    /* PDL: the weights of the first P stages are asked for before the split
     * x is known to be ready (weights are constant); the first commit group
     * then holds them all, which only makes stage 0 wait for more than it needs.
     * The next kernel is let in once the products are done. */
#pragma unroll
    for (int i = 0; i < P; i++)
        issue_w(i);
    pdl_wait();
#pragma unroll
    for (int i = 0; i < P; i++)
        issue_x(i);
    for (uint32_t step = 0; step < nsteps; step++) {
        cp_async_wait<P - 1>(); /* this thread's copies of stage step have landed */
        fence_proxy_async();    /* ... and are visible to wgmma */
        __syncthreads();        /* everyone's; and wgmma step − 2 is done everywhere */
        issue(step + P);        /* into the buffer of step − 2 */
        const uint32_t wb = sbase + (step % NS) * STAGE, xb = wb + WBYTES;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
#pragma unroll
            for (int m = 0; m < MA; m++) {
                const uint32_t tile = MS ? wg : m, wrow = MS ? 0 : wg * WR;
                wgmma_rows<WR>(acc[m], smem_desc(xb + tile * WG_TILE + kk * 32), smem_desc(wb + wrow * 128 + kk * 32));
            }
        wgmma_commit();
        wgmma_wait<1>(); /* step − 1's products are done: its buffer may be refilled next step */
    }
    wgmma_wait<0>();
    pdl_trigger();
#pragma unroll
    for (int m = 0; m < MA; m++)
#pragma unroll
        for (int i = 0; i < NA; i++)
            reg_fence(acc[m][i]);
    cp_async_wait<0>();

    /* D: acc[m][4j + 2h + e] = A row 16·warp + lane/4 + 8h, column 8j + 2·(lane%4) + e;
     * A row 2t is token t's hi, 2t + 1 its lo (lane + 4); ho: A row t is token t. S == 1: straight to y;
     * else to this block's shared tile red (t, NR), the stages' memory, which
     * the S blocks of the cluster (one row block, every slice) then add up in
     * slice order, each for NR / S of the rows. */
    __syncthreads(); /* every warpgroup is done with the stages */
    const uint32_t g = (lt / 32) * 16 + lane / 4, q = lane & 3;
    const bool hi_lane = ((lane >> 2) & 1) == 0;
    if constexpr (GLU) { /* S == 1: act(gate)·up of columns f, f + 1 into xo */
        constexpr int HJ = WR / 16;
        /* every value first, then the stores: the activations' independent chains side by side */
        float hv[MA][HJ][2][2];
#pragma unroll
        for (int m = 0; m < MA; m++)
#pragma unroll
            for (int j = 0; j < HJ; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const float vg = acc[m][4 * j + 2 * h + e], vu = acc[m][4 * (j + HJ) + 2 * h + e];
                        const float og = __shfl_xor_sync(0xffffffffu, vg, 4);
                        const float ou = __shfl_xor_sync(0xffffffffu, vu, 4);
                        hv[m][j][h][e] =
                            glu_in(scale * (ho ? vg : vg + og), scale * (ho ? vu : vu + ou), gelu, ho);
                    }
#pragma unroll
        for (int m = 0; m < MA; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t ar = (MS ? wg : m) * 64 + g + 8 * h, t = ho ? ar : ar / 2; /* A row, token */
                if ((!ho && !hi_lane) || t >= T)
                    continue;
#pragma unroll
                for (int j = 0; j < HJ; j++) {
                    const uint32_t f = f0 + (MS ? 0 : wg) * HW + 8 * j + 2 * q;
                    if (f < F)
                        mmv_split_store2(xo, hv[m][j][h][0], hv[m][j][h][1], t, f, F, ho);
                }
            }
        return;
    }
    float *red = reinterpret_cast<float *>(smem_raw + (sbase - (uint32_t)__cvta_generic_to_shared(smem_raw)));
#pragma unroll
    for (int m = 0; m < MA; m++)
#pragma unroll
        for (int j = 0; j < WR / 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float v = acc[m][4 * j + 2 * h + e];
                    const float o = __shfl_xor_sync(0xffffffffu, v, 4);
                    const uint32_t ar = (MS ? wg : m) * 64 + g + 8 * h, t = ho ? ar : ar / 2; /* A row, token */
                    const uint32_t rl = (MS ? 0 : wg * WR) + 8 * j + 2 * q + e, r = r0 + rl;
                    if ((!ho && !hi_lane) || t >= T)
                        continue;
                    const float sum = ho ? v : v + o;
                    if (S > 1)
                        red[t * NR + rl] = sum;
                    else if (r < rows)
                        y[(uint64_t)t * rows + r] = scale * sum;
                }
    if (S == 1)
        return;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if ((NR / S) % 4 == 0)
        mmv_wg_reduce<4>(cluster, red, NR, S, T, rows, r0, y, scale, tid, NT);
    else /* 144-row tiles in 8 slices: 18 rows a block */
        mmv_wg_reduce<2>(cluster, red, NR, S, T, rows, r0, y, scale, tid, NT);
    cluster.sync(); /* the other blocks' reads of this one's tile are done */
}

typedef void (*mmv_wg_fn)(const uint8_t *, uint32_t, uint32_t, const uint8_t *, uint32_t, uint32_t, uint32_t,
                          float *, float, bool, uint8_t *, bool);

/* The launch shapes: warpgroups a block, A tiles, pipeline stages; max_t =
 * the tokens it covers. All compute the same bits. */
struct mmv_wg_variant {
    int nwg, mt, ns, wr; /* wr: weight rows a warpgroup's B tile (128, or 144 for wgmma n144) */
    bool ms; /* warpgroup w runs A tile w over the block's wr rows */
    uint32_t max_t;
    mmv_wg_fn fn;
};
#define MMV_WG_V(NWG, MT, NS, MS)                                                                                      \
    {NWG, MT, NS, WG_ROWS, MS, (uint32_t)(MT) * 32, kernel_mmv_wg<NWG, MT, NS, MS, WG_ROWS, false>}
#define MMV_WG_V144(NS) {2, 2, NS, 144, true, 64, kernel_mmv_wg<2, 2, NS, true, 144, false>}
#define MMV_WG_V144S(NS) {1, 1, NS, 144, false, 32, kernel_mmv_wg<1, 1, NS, false, 144, false>}
const mmv_wg_variant g_wg_variants[] = {
    MMV_WG_V(1, 1, 3, false), MMV_WG_V(1, 1, 4, false), MMV_WG_V(1, 1, 8, false), MMV_WG_V(2, 1, 5, false),
    MMV_WG_V(1, 2, 3, false), MMV_WG_V(1, 2, 6, false), MMV_WG_V(2, 2, 3, false), MMV_WG_V(2, 2, 4, false),
    MMV_WG_V(2, 2, 3, true),  MMV_WG_V(2, 2, 4, true),  MMV_WG_V(2, 2, 6, true),  MMV_WG_V144(4),
    MMV_WG_V144(5),           MMV_WG_V144(6),           MMV_WG_V144S(4),          MMV_WG_V144S(6),
    MMV_WG_V144S(8),
};
constexpr int MMV_WG_NVARIANTS = sizeof g_wg_variants / sizeof g_wg_variants[0];

/* The launch shapes of gate|up with the fused GLU epilogue (cuda_mmv_wg_glu); shape: the variant's (checked by
 * mmv_wg_init). Where mmv_wg_pick gives gate|up variant 2 (one A tile: one warpgroup, 8 stages, one block an
 * SM) the fused launch takes variant 1 (4 stages, two blocks an SM): the activation's latency in one block's
 * epilogue then overlaps the other's stream. H200, 8B BF16 with bf16 activations (thirty-third run): tg32x64@d512
 * 9541-9574 tok/s apart, 9613-9650 fused on variant 2, 9853-9908 on variant 1, 9127-9137 on variant 0 (3
 * stages); tg32x16@d512 2771-2782 / 2721-2732 / 2853-2886 / 2628-2636. */
struct mmv_wg_glu_variant {
    int variant;
    mmv_wg_variant shape;
};
const mmv_wg_glu_variant g_wg_glu[] = {
    {1, {1, 1, 4, WG_ROWS, false, 32, kernel_mmv_wg<1, 1, 4, false, WG_ROWS, true>}},
    {10, {2, 2, 6, WG_ROWS, true, 64, kernel_mmv_wg<2, 2, 6, true, WG_ROWS, true>}},
};

int mmv_wg_smem(const mmv_wg_variant &V)
{
    return V.ns * ((V.ms ? 1 : V.nwg) * V.wr * 128 + V.mt * WG_TILE) + 1024; /* + the 1024-byte alignment */
}

/* The launcher's choice per batch and weight shape, from the H200 sweeps of
 * 2026-12-01 and 12-02 (kernel_mmv with MEMRA_MMV_SWEEP=1). Any gives the
 * same bits. */
int mmv_wg_pick(uint32_t T, uint64_t rows, bool narrow)
{
    if (T <= 32) {
        /* beside the k|v GEMV on the side stream (cuda_mmv_set_narrow): q in
         * 144-row tiles with 4 stages, 107 KB, so that a block of each (k|v:
         * variant 1, 99 KB) fits on one SM */
        if (narrow && rows > 2048 && rows <= 8192)
            return 14;
        if (rows <= 1024)
            return 2;       /* k/v: one warpgroup, 8 stages */
        if (rows <= 2048)   /* k|v (the decode step's joined k and v, S = 8): 16 clusters of 8, 2 blocks an SM */
            return 1;       /* (8.5 / 8.8 / 9.3 / 10.3 µs at 2 / 8 / 16 / 32 tokens; k and v alone 2 × 6.5-8.0) */
        if (rows > 65536)
            return 1;       /* lm_head */
        /* q/o/down (4096 rows, S = 4) in 144-row tiles, one warpgroup, 6
         * stages: 29 clusters of 4 = 116 blocks where 256-row blocks of two
         * warpgroups (variant 3) made 64. µs at 2 / 8 / 16 / 32 tokens
         * against variant 3 (eighteenth run): down 31.7 / 32.7 / 33.7 / 35.1
         * against 38.1 / 35.2 / 35.9 / 37.7, q/o 12.3 / 13.1 / 13.6 / 14.3
         * against 12.4 / 13.5 / 13.6 / 14.3. Above 4096 rows one warpgroup
         * with 8 stages: gate/up, and the decode step's joined q|k|v (6144
         * rows, S = 2: 48 clusters of 2) 17.3-20.2 µs at 1-64 tokens against
         * 17.9-21.3 in 144-row tiles (variant 15; kernel_mmv --sweep, H200,
         * thirty-first run) */
        return rows <= 4096 ? 15 : 2;
    }
    /* the warpgroups split the tokens; q/o/down (4096 rows, S = 4) in 144-row
     * tiles, 5 stages: 29 clusters of 4, within the 30 the H200 holds at once
     * (128-row tiles with 4 stages make 32: a second wave; with 3 stages 2
     * blocks an SM fit but the pipeline is shallower). 64 tokens, H200
     * (bench/RESULTS.md, seventeenth run), µs with 4 / 5 / 6 stages against
     * variant 8: q/o 17.1 / 16.7 / 16.5 against 22.9, down 46.2 / 41.4 /
     * 42.6 against 65.2; k|v (2048 rows, S = 8: 15 clusters of 8) 12.6
     * against 18.6 with variant 10 (eighteenth run); the joined q|k|v (6144
     * rows, S = 2) 21.8 against 26.3 with variant 10 (thirty-first run) */
    return rows <= 1024 || rows > 4096 ? 10 : 12;
}

} // namespace

/* K slices of a (rows, n) weight: the most (a power of 2, at most 8: a
 * portable cluster; slices of ≥ 4 chunks) that keep the 128-row units × S
 * within one per SM, so that each block streams a long run of its rows. A
 * function of the shape only (batch invariance). */
extern "C" uint32_t cuda_mmv_wg_slices(uint64_t rows, uint64_t n, int sms)
{
    const uint64_t rb = (rows + WG_ROWS - 1) / WG_ROWS, nchunks = n / WG_CHUNK;
    uint32_t S = 1;
    while (S < 8 && rb * S * 2 <= (uint64_t)sms && (uint64_t)S * 2 * 4 <= nchunks)
        S *= 2;
    return S;
}

extern "C" bool cuda_mmv_wg_supported(uint64_t rows, uint64_t n)
{
    return rows >= 1 && n >= WG_CHUNK && n % WG_CHUNK == 0 && rows < (1ull << 31) && n < (1ull << 24);
}

/* Every variant's shared-memory attribute, before the first launch on ctx's device. */
static void mmv_wg_init(const cuda_ctx *ctx)
{
    static uint32_t opted; /* devices the attributes are set on */
    if (!cuda_first_on_device(opted, ctx->device))
        return;
    for (int v = 0; v < MMV_WG_NVARIANTS; v++)
        CUDA_CHECK(cudaFuncSetAttribute((const void *)g_wg_variants[v].fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        mmv_wg_smem(g_wg_variants[v])));
    for (const mmv_wg_glu_variant &G : g_wg_glu) {
        const mmv_wg_variant &V = g_wg_variants[G.variant], &U = G.shape;
        if (V.nwg != U.nwg || V.mt != U.mt || V.ns != U.ns || V.wr != U.wr || V.ms != U.ms || V.max_t != U.max_t)
            CUDA_FAIL("mmv_wg: the GLU form of variant %d has another shape", G.variant);
        CUDA_CHECK(cudaFuncSetAttribute((const void *)U.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        mmv_wg_smem(U)));
    }
}

extern "C" int cuda_mmv_wg_variants(uint32_t *max_t)
{
    for (int v = 0; v < MMV_WG_NVARIANTS && max_t; v++)
        max_t[v] = g_wg_variants[v].max_t;
    return MMV_WG_NVARIANTS;
}

/* A launch of shape V over row_blocks × S blocks, the S slices of a row block
 * one cluster (they add their sums through distributed shared memory):
 * attr[0] holds the cluster's shape, cfg.numAttrs = 1 (a caller may add
 * attr[1] and count it). */
static cudaLaunchConfig_t mmv_wg_config(const struct cuda_ctx *ctx, const mmv_wg_variant &V, uint32_t row_blocks,
                                        uint32_t S, cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(row_blocks, S);
    cfg.blockDim = dim3(V.nwg * 128);
    cfg.dynamicSmemBytes = (size_t)mmv_wg_smem(V);
    cfg.stream = ctx->stream;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = S;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

/* x (T, n) split into the A rows in the scratch unless (reuse) it holds them */
static void wg_split_x(struct cuda_ctx *ctx, const float *x, uint32_t T, uint64_t n, bool reuse)
{
    if (reuse && ctx->mmv_xs_src == x && ctx->mmv_xs_t == T && ctx->mmv_xs_n == n)
        return;
    const uint32_t n4 = (uint32_t)(T * n / 4), sb = (n4 + 255) / 256;
    cuda_launch(ctx, kernel_mmv_wg_split, sb < 1024u ? sb : 1024u, 256, 0, x, T, (uint32_t)n, (uint8_t *)ctx->mmv_xs,
                (bool)ctx->act_bf16);
    ctx->mmv_xs_src = x, ctx->mmv_xs_t = T, ctx->mmv_xs_n = n;
}

/* One launch of shape V over the scratch's A rows: row_blocks × S blocks, PDL when the context has it. */
static void wg_run(struct cuda_ctx *ctx, const mmv_wg_variant &V, uint32_t row_blocks, uint32_t S, const void *w,
                   uint64_t rows, uint64_t n, uint32_t T, float *y, float scale, uint8_t *xo, bool gelu)
{
    const uint32_t nchunks = (uint32_t)(n / WG_CHUNK), cps = (nchunks + S - 1) / S;
    cudaLaunchAttribute attr[2];
    cudaLaunchConfig_t cfg = mmv_wg_config(ctx, V, row_blocks, S, attr);
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization; /* cuda_common.cuh: PDL */
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.numAttrs = ctx->pdl ? 2 : 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, V.fn, (const uint8_t *)w, (uint32_t)rows, (uint32_t)n,
                                  (const uint8_t *)ctx->mmv_xs, T, S, cps, y, scale, (bool)ctx->act_bf16, xo, gelu));
}

extern "C" void cuda_mmv_wg_launch(struct cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x,
                                   uint32_t T, float *y, float scale, int variant, bool reuse, uint32_t slices)
{
    if (!cuda_mmv_wg_supported(rows, n))
        CUDA_FAIL("cuda_mmv_wg: %llu×%llu not supported", (unsigned long long)rows, (unsigned long long)n);
    if (T < 1 || T > CUDA_MMV_MAX_BATCH)
        CUDA_FAIL("cuda_mmv_wg: batch %u not in 1..%d", T, CUDA_MMV_MAX_BATCH);
    if (((uintptr_t)w | (uintptr_t)x) % 16 != 0)
        CUDA_FAIL("cuda_mmv_wg: w and x must be 16-byte aligned");
    if (slices > 8 || (slices & (slices - 1)) != 0 || n / WG_CHUNK < slices)
        CUDA_FAIL("cuda_mmv_wg: %u K slices (a power of 2 ≤ 8, at most one a 64-column chunk)", slices);
    const uint32_t S = slices ? slices : cuda_mmv_wg_slices(rows, n, ctx->prop.multiProcessorCount);
    /* ho: one A row a token, so T tokens are the A rows of T / 2 split ones (the sweeps' shapes) */
    const bool ho = ctx->act_bf16;
    const int v = variant >= 0 ? variant : mmv_wg_pick(ho ? (T + 1) / 2 : T, rows, ctx->mmv_narrow);
    if (v >= MMV_WG_NVARIANTS || T > g_wg_variants[v].max_t * (ho ? 2 : 1))
        CUDA_FAIL("cuda_mmv_wg: variant %d does not take batch %u", v, T);
    if (!ctx->mmv_xs || (size_t)4 * T * n > ctx->mmv_xs_bytes)
        CUDA_FAIL("cuda_mmv_wg: n = %llu not reserved (cuda_mmv_reserve)", (unsigned long long)n);
    mmv_wg_init(ctx);
    wg_split_x(ctx, x, T, n, reuse);
    const mmv_wg_variant &V = g_wg_variants[v];
    const uint32_t nr = (uint32_t)(V.ms ? 1 : V.nwg) * (uint32_t)V.wr;
    wg_run(ctx, V, (uint32_t)((rows + nr - 1) / nr), S, w, rows, n, T, y, scale, nullptr, false);
}

extern "C" bool cuda_mmv_wg_glu(struct cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x,
                                uint32_t T, const float *out, float scale, bool gelu, bool reuse, uint32_t slices)
{
    const uint64_t F = rows / 2;
    if (!cuda_mmv_wg_supported(rows, n) || rows % 2 || !cuda_mmv_wg_supported(1, F) || T < 1 ||
        T > CUDA_MMV_MAX_BATCH || ((uintptr_t)w | (uintptr_t)x) % 16 != 0)
        return false;
    if ((slices ? slices : cuda_mmv_wg_slices(rows, n, ctx->prop.multiProcessorCount)) != 1)
        return false; /* the epilogue needs a row's whole sum in one block */
    if (!ctx->mmv_xs || !ctx->mmv_xs2 || (size_t)4 * T * (n > F ? n : F) > ctx->mmv_xs_bytes)
        return false;
    const bool ho = ctx->act_bf16;
    int v = mmv_wg_pick(ho ? (T + 1) / 2 : T, rows, ctx->mmv_narrow);
    if (v == 2) /* one A tile: two blocks an SM (g_wg_glu) */
        v = 1;
    const mmv_wg_variant *V = nullptr;
    for (const mmv_wg_glu_variant &G : g_wg_glu)
        if (G.variant == v)
            V = &G.shape;
    if (!V)
        return false;
    mmv_wg_init(ctx);
    wg_split_x(ctx, x, T, n, reuse);
    const uint32_t nf = (uint32_t)(V->ms ? 1 : V->nwg) * (uint32_t)V->wr / 2; /* F-columns a block */
    wg_run(ctx, *V, (uint32_t)((F + nf - 1) / nf), 1, w, rows, n, T, nullptr, scale, (uint8_t *)ctx->mmv_xs2, gelu);
    /* the GLU's A rows are the scratch now (x's are read by the launch, so they were the other buffer) */
    void *t = ctx->mmv_xs;
    ctx->mmv_xs = ctx->mmv_xs2, ctx->mmv_xs2 = t;
    ctx->mmv_xs_src = out, ctx->mmv_xs_t = T, ctx->mmv_xs_n = F;
    return true;
}

extern "C" void cuda_mmv_set_narrow(struct cuda_ctx *ctx, bool on) { ctx->mmv_narrow = on; }

extern "C" uint8_t *cuda_mmv_split_claim(struct cuda_ctx *ctx, const float *x, uint32_t T, uint64_t n)
{
    if (T < 1 || T > CUDA_MMV_MAX_BATCH || n % 4 || !ctx->mmv_xs || (size_t)4 * T * n > ctx->mmv_xs_bytes)
        return NULL;
    ctx->mmv_xs_src = x, ctx->mmv_xs_t = T, ctx->mmv_xs_n = n;
    return (uint8_t *)ctx->mmv_xs;
}

/* How many clusters of S blocks of a launch shape the device holds at once
 * (cudaOccupancyMaxActiveClusters), for kernel_mmv's sweep: a grid of more
 * row blocks runs a second wave. */
extern "C" int cuda_mmv_wg_max_clusters(const struct cuda_ctx *ctx, int variant, uint32_t S)
{
    if (variant < 0 || variant >= MMV_WG_NVARIANTS || S < 1 || S > 8)
        return -1;
    mmv_wg_init(ctx);
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = mmv_wg_config(ctx, g_wg_variants[variant], 64, S, attr);
    int n = -1;
    if (cudaOccupancyMaxActiveClusters(&n, (const void *)g_wg_variants[variant].fn, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return n;
}

extern "C" void cuda_mmv_wg_variant(struct cuda_ctx *ctx, const void *w, uint64_t rows, uint64_t n, const float *x,
                                    uint32_t T, float *y, float scale, int variant)
{
    cuda_mmv_wg_launch(ctx, w, rows, n, x, T, y, scale, variant, false, 0);
}
