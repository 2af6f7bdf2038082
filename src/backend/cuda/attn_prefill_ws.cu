/* backend/cuda/attn_prefill_ws.cu — the wgmma prefill attention with a producer warpgroup
 * (MEMRA_ATTN_PREFILL_WG=ws128): FlashAttention-3's warp specialization on attn_prefill_wg.cu's 128-key overlap
 * form.
 *
 * Why: in attn_prefill_wg.cu every thread copies its share of each K and V tile by cp.async (16 bytes a copy, the
 * page table read and the address computed for each) and the CTA meets at a block barrier every tile, so both
 * warpgroups wait for the slower one and run their softmax at the same time, leaving the tensor cores idle
 * together. Here one more warpgroup's first warp copies the tiles by TMA — 16 rows (one KV block) × 64 dims a copy
 * into the 128-byte swizzle the wgmma descriptors read, at most 32 copies a tile, one a lane — onto a stage's "full"
 * mbarrier (its other three warps leave at once, their registers given to the consumers: setmaxnreg), and
 * each consumer warp releases a stage on its "empty" mbarrier once its P·V of it is done: no block barrier in the
 * loop, no copy work in the consumers, and the warpgroups drift apart so that one's softmax meets the other's
 * products. With pp (WS128PP, the default form) the two consumer warpgroups also take turns to issue their
 * products (named barriers: FlashAttention-3's ping-pong).
 * H200, 8B shape, one span of 4096 tokens, a layer: WS128 0.363 ms (378 TFLOP/s), WS128PP 0.352 (390) against
 * OVERLAP's 0.476 (288) and OVERLAP128's 0.456; 8B BF16 pp4096 at --ubatch 4096 38.3-38.4 k tok/s against
 * OVERLAP's 37.4-37.5 k in the same call (bench/RESULTS.md forty-fourth run).
 *
 * Shape: as attn_prefill_wg.cu's (NWG consumer warpgroups of 64 query rows, warps 0 .. 4·NWG − 1, one query head,
 * key tiles of 128 in three stages) plus warpgroup NWG, whose warp 4·NWG is the producer. The TMA maps
 * (cuda_attn_kv.rows rows of kv_dim bf16, box 64 × 16) are made on the host for each launch. Copies land whole KV
 * blocks: the rows of a CTA's last tile past its last position (and the blocks past it, not copied) may hold
 * anything, so before that tile's P·V each consumer warpgroup zeroes those V rows (a masked key's P is 0, and 0 · V
 * must not meet a stale NaN; their K rows only meet the mask).
 *
 * Numerics: attn_prefill_wg.cu's OVERLAP128, the same operations on each row in the same order (the same tiles,
 * the same helpers: attn_prefill_wg.cuh): its bits (kernel_attn checks). A row's operations depend only on its
 * span, as there.
 */

#include "backend/cuda/attn_prefill.cuh"
#include "backend/cuda/attn_prefill_wg.cuh"
#include "backend/cuda/tensor_map.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

constexpr uint32_t BN = 128, NS = 3, KT = kv_tile<BN>(), KCB = kv_cb<BN>();
constexpr uint32_t PAGES = BN / CUDA_ATTN_BLOCK; /* KV blocks a key tile */
static_assert(PAGES * 4 <= 32, "a tile's TMA copies: one a lane of the producer warp");
/* Q tiles, the stages, the 1024-byte alignment, then the full and empty barriers (8 bytes each) */
template <int NWG> __host__ __device__ constexpr uint32_t ws_smem()
{
    return NWG * QTILE + NS * 2 * KT + 1024 + 2 * NS * 8;
}

/* A named barrier of n threads (ids 1, 2: one warpgroup's; 3, 4: the ping-pong's; 0 is __syncthreads'), waited
 * on (wg_bar) or only arrived at (wg_bar_arrive). */
__device__ __forceinline__ void wg_bar(uint32_t id, uint32_t n)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void wg_bar_arrive(uint32_t id, uint32_t n)
{
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}

/* Two consumer warpgroups and the producer's (384 threads: ptxas's 168 registers a thread) trade: the producer's
 * 24, the consumers' 240 (128 · 24 + 256 · 240 ≤ 65536). One consumer warpgroup (256 threads) has its 255. */
template <int NWG> __host__ __device__ constexpr bool ws_realloc() { return NWG == 2; }

/* PP (ws128pp, two consumer warpgroups): FlashAttention-3's ping-pong — a warpgroup issues a tile's products only
 * in its turn (named barrier 3 + its index, 256 threads: its own sync and the other's arrive) and hands the turn
 * over once they are issued, warpgroup 0 first; so one's softmax runs while the other's products do. Both take nkt
 * turns (a CTA's warpgroups walk the same tiles). The turns change no operation: ws128's bits. */
template <int NWG, bool PP>
__global__ void __launch_bounds__(128 * NWG + 128, 1)
    kernel_attn_prefill_ws(const float *__restrict__ q, float *__restrict__ att, uint16_t *__restrict__ att16,
                           const cuda_attn_span *__restrict__ spans, cuda_attn_dims d,
                           const __grid_constant__ CUtensorMap tmk, const __grid_constant__ CUtensorMap tmv,
                           const uint32_t *__restrict__ tables, uint32_t table_stride, float scale2, uint32_t window)
{
    constexpr uint32_t BM = 64 * NWG;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_u32(smem_raw), base = (raw + 1023) & ~1023u;
    uint8_t *const gbase = smem_raw + (base - raw);
    const wg_cta w = wg_cta_of<BM>(spans, d);
    if (!w.live)
        return;
    const cuda_attn_span sp = w.sp;
    const uint32_t t0 = w.t0, ntok = w.ntok, h = w.h, kvh = w.kvh, pf = w.pf, pl = w.pl;
    const uint32_t q_dim = d.n_heads * HD;
    const uint32_t k_lo = window > 0 && pf + 1 > window ? pf + 1 - window : 0;
    const uint32_t kt_first = k_lo / BN, nkt = pl / BN - kt_first + 1; /* key tiles kt_first .. + nkt − 1 */
    const uint32_t sKV = base + NWG * QTILE;            /* stage st: K at sKV + 2·st·KT, V after it */
    const uint32_t bars = sKV + NS * 2 * KT;            /* full[st] at bars + 8·st, empty[st] at bars + 8·(NS + st) */
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        for (uint32_t st = 0; st < NS; st++) {
            mbar_init(bars + 8 * st, 1);              /* the producer's arrival with the tile's bytes */
            mbar_init(bars + 8 * (NS + st), 4 * NWG); /* one arrival a consumer warp */
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (warp >= 4 * NWG) { /* the producer's warpgroup: its first warp copies, the others leave */
        if constexpr (ws_realloc<NWG>())
            regs_dec<24>();
        if (warp > 4 * NWG)
            return;
        /* tile i into stage i % NS once its use NS tiles before is released */
        const uint32_t *tab = tables + (uint64_t)sp.table * table_stride;
        for (uint32_t i = 0; i < nkt; i++) {
            const uint32_t st = i % NS, kt = (kt_first + i) * BN;
            if (i >= NS)
                mbar_wait(bars + 8 * (NS + st), (i / NS - 1) & 1);
            const uint32_t pages = min(PAGES, (pl - kt) / CUDA_ATTN_BLOCK + 1); /* blocks holding keys ≤ pl */
            if (lane == 0)
                mbar_expect(bars + 8 * st, pages * 4 * (CUDA_ATTN_BLOCK * 128));
            __syncwarp();
            if (lane < 4 * pages) { /* lane = 4·block + 2·column block + (V) */
                const uint32_t j = lane >> 2, cb = (lane >> 1) & 1, v = lane & 1;
                const uint32_t blk = tab[kt / CUDA_ATTN_BLOCK + j];
                tma_load_2d(sKV + (2 * st + v) * KT + cb * KCB + j * (CUDA_ATTN_BLOCK * 128), v ? &tmv : &tmk,
                            (int32_t)(kvh * HD + cb * 64), (int32_t)(blk * CUDA_ATTN_BLOCK), bars + 8 * st);
            }
        }
        return;
    }

    if constexpr (ws_realloc<NWG>())
        regs_inc<240>();
    const uint32_t wg = warp >> 2, tw = threadIdx.x & 127, g = lane >> 2, c = lane & 3;
    /* Q: this warpgroup's rows into its tile (rows past the span zero), visible to its tensor-core reads */
    wg_load_q(gbase, q, sp, t0, 64 * wg, 64, ntok, h, q_dim, scale2, tw, 128);
    fence_proxy_async();
    wg_bar(1 + wg, 128);
    const uint32_t sQ = base + wg * QTILE;
    const uint32_t row0 = 64 * wg + 16 * (warp & 3) + g, row1 = row0 + 8; /* this thread's two rows in the CTA */
    const uint32_t p0 = pf + row0, p1 = pf + row1;
    auto full = [&](uint32_t kt) { return kt + BN - 1 <= pf && (window == 0 || kt + window > pl); };
    auto wait_full = [&](uint32_t i) { mbar_wait(bars + 8 * (i % NS), (i / NS) & 1); };

    float o[64], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f, s[BN / 2], c0, c1;
    uint32_t a[BN / 16][4];
#pragma unroll
    for (int i = 0; i < 64; i++)
        o[i] = 0.0f;
    constexpr bool TURNS = PP && NWG == 2;
    auto turn_wait = [&]() {
        if constexpr (TURNS)
            wg_bar(3 + wg, 256);
    };
    /* (warpgroup 1's last issue hands nothing on: warpgroup 0 has no turn left, and every arrival finds its wait) */
    auto turn_pass = [&](bool last) {
        if constexpr (TURNS)
            if (wg == 0 || !last)
                wg_bar_arrive(3 + (1 - wg), 256);
    };
    if (TURNS && wg == 1)
        turn_pass(false); /* warpgroup 0 first */
    wait_full(0);
    turn_wait();
    wg_qk<BN>(s, sQ, sKV);
    turn_pass(nkt == 1);
    wgmma_wait<0>();
    reg_fence(s);
    wg_softmax<BN>(s, o, a, m0, m1, l0, l1, kt_first * BN, full(kt_first * BN), p0, p1, window);
    /* tile i < nkt − 1: its P·V beside tile i + 1's Q·Kᵀ, whose softmax runs meanwhile (OVERLAP's loop) */
    for (uint32_t i = 0; i + 1 < nkt; i++) {
        wait_full(i + 1);
        turn_wait();
        wg_qk<BN>(s, sQ, sKV + 2 * ((i + 1) % NS) * KT);
        wg_pv<BN>(o, a, sKV + (2 * (i % NS) + 1) * KT);
        turn_pass(i + 2 == nkt);
        wgmma_wait<1>(); /* Q·Kᵀ of tile i + 1 done; P·V of tile i may run on */
        reg_fence(s);
        const uint32_t kt = (kt_first + i + 1) * BN;
        wg_mask<BN>(s, kt, full(kt), p0, p1, window);
        flash_softmax_stats(*reinterpret_cast<float(*)[BN / 8][4]>(&s), m0, m1, l0, l1, c0, c1);
        wgmma_wait<0>(); /* P·V of tile i done: its stage released, O rescaled, a rewritten */
        reg_fence(o);
        if (lane == 0)
            mbar_arrive(bars + 8 * (NS + i % NS));
        flash_softmax_rescale(*reinterpret_cast<float(*)[16][4]>(&o), c0, c1);
        wg_pack<BN>(s, a);
    }
    /* the last tile: its V rows past pl zeroed (by both warpgroups alike: the same zeros), then its P·V */
    const uint32_t last = nkt - 1, kt_last = (kt_first + last) * BN, sV = sKV + (2 * (last % NS) + 1) * KT;
    if (pl - kt_last + 1 < BN) {
        const uint32_t z0 = pl - kt_last + 1; /* rows z0 .. BN − 1, both column blocks: 8 pieces a row and block */
        for (uint32_t i = tw; i < (BN - z0) * 16; i += 128) {
            const uint32_t r = z0 + i / 16, p = i % 16;
            *reinterpret_cast<uint4 *>(gbase + (sV - base) + (p >> 3) * KCB + r * 128 + (p & 7) * 16) =
                make_uint4(0u, 0u, 0u, 0u);
        }
        fence_proxy_async();
        wg_bar(1 + wg, 128);
    }
    wg_pv<BN>(o, a, sV);
    wgmma_wait<0>();
    reg_fence(o);
    wg_store_o(o, l0, l1, att, att16, sp, t0, row0, row1, ntok, h, q_dim, c);
}

/* K or V of one layer (rows × kv_dim bf16) as 16-row × 64-dim boxes in the 128-byte swizzle. */
void make_map(CUtensorMap *m, const void *base, uint32_t kv_dim, uint32_t rows)
{
    tensor_map_bf16(m, base, kv_dim, rows, CUDA_ATTN_BLOCK, "attention");
}

template <int NWG, bool PP>
void launch_ws(const cuda_ctx *ctx, const float *q, float *att, uint16_t *att16, const cuda_attn_span *spans,
               uint32_t n_spans, uint32_t max_n, cuda_attn_dims d, const CUtensorMap &tmk, const CUtensorMap &tmv,
               const cuda_attn_kv &kv, float scale2, uint32_t window)
{
    constexpr uint32_t smem = ws_smem<NWG>();
    static_assert(smem <= 232448, "a block's shared memory on sm_90");
    static uint32_t opted; /* devices the attribute is set on */
    if (cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel_attn_prefill_ws<NWG, PP>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((max_n + 64 * NWG - 1) / (64 * NWG), d.n_heads, n_spans);
    kernel_attn_prefill_ws<NWG, PP><<<grid, 128 * NWG + 128, smem, ctx->stream>>>(
        q, att, att16, spans, d, tmk, tmv, kv.tables, kv.table_stride, scale2, window);
}

} // namespace

bool attn_prefill_ws(const cuda_ctx *ctx, const float *q, float *att, uint16_t *att16,
                     const cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv,
                     float scale2, uint32_t window, bool pp)
{
    const uint32_t kv_dim = d.n_kv_heads * HD;
    if (kv.rows == 0 || (uintptr_t)kv.k % 16 || (uintptr_t)kv.v % 16)
        return false;
    alignas(64) CUtensorMap tmk, tmv;
    make_map(&tmk, kv.k, kv_dim, kv.rows);
    make_map(&tmv, kv.v, kv_dim, kv.rows);
    if (ctx->attn_prefill_bm == 128 && max_n > 64) {
        if (pp)
            launch_ws<2, true>(ctx, q, att, att16, spans, n_spans, max_n, d, tmk, tmv, kv, scale2, window);
        else
            launch_ws<2, false>(ctx, q, att, att16, spans, n_spans, max_n, d, tmk, tmv, kv, scale2, window);
    } else {
        launch_ws<1, false>(ctx, q, att, att16, spans, n_spans, max_n, d, tmk, tmv, kv, scale2, window);
    }
    return true;
}
