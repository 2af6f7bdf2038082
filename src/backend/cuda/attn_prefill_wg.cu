/* backend/cuda/attn_prefill_wg.cu — the prefill attention's fast mode on Hopper's warpgroup tensor-core
 * instruction (wgmma), FlashAttention-3's shape, for a bf16 KV cache at head_dim 128 (attn_prefill.h;
 * cuda_attn_prefill picks it, attn_prefill.cu keeps every other case and the split spans).
 *
 * Why: attn_prefill.cu's mma.sync kernel has each of a CTA's warps read the whole K and V tile from shared memory
 * into registers for its own 16 query rows, so shared-memory bandwidth bounds it (~196 TFLOP/s of attention work
 * at 4096 tokens, 8B shape). wgmma reads K and V from shared memory once for a warpgroup's 64 rows, and P (the
 * softmax of S, in registers) is its A operand straight from the S accumulators (the same fragment layout). The
 * standalone prototype (lab/attn-wg/, thirty-second run): 4096 tokens 0.70 → 0.48 ms a layer (284 TFLOP/s).
 *
 * Shape: a CTA = NWG warpgroups (1 or 2: MEMRA_ATTN_PREFILL_BM 64 or 128) of one query head over 64·NWG tokens of
 * one span (warpgroup w: rows 64w .. 64w + 63; warp i of it rows 16i .. 16i + 15); the CTAs of a span's last tiles
 * (the most keys) are scheduled first. q (f32) is pre-scaled by scale·log2(e), rounded to bf16 and stored in
 * a swizzled tile (a row's 128 dims = two column blocks of 64 rows × 128 bytes, wgmma.cuh's swz). The key tiles
 * of 64 positions from the window's start to the CTA's last token go through a cp.async ring of two or three
 * stages (K and V as stored in the paged cache, keys past the last token zero-filled). Per tile:
 *   S (64 × 64 f32) = Q · Kᵀ: 8 wgmma m64n64k16, both K-major in shared memory;
 *   the causal / window mask where some key of the tile is past (or before the window of) some row of the CTA;
 *   online softmax in f32 base 2 (the mma.sync kernel's: row max over the quad, base 0 while a row has seen
 *   no key);
 *   O (64 × 128 f32) += P · V: 4 wgmma m64n128k16, A = P rounded once to bf16 from registers, B = V from shared
 *   memory, dims contiguous (MN-major: the instruction's transpose-B flag; column blocks 8192 bytes apart).
 * Forms of the loop (MEMRA_ATTN_PREFILL_WG): OVERLAP issues tile i's P·V with tile i + 1's Q·Kᵀ and runs tile
 * i + 1's mask and statistics while P·V is in flight (FlashAttention-3's intra-warpgroup overlap; 4096 tokens
 * 0.468-0.476 ms a layer on the H200), PIPE issues the next Q·Kᵀ before this tile's softmax (0.505), SERIAL awaits
 * each product (0.518). OVERLAP128 is OVERLAP on key tiles of 128 (FlashAttention-3's tile for head_dim 128):
 * S = Q·Kᵀ 64 × 128 by m64n128k16, P·V 8 k16 steps: half the tiles, so half the waits, barriers and softmax
 * reductions a key (0.456); 186 registers (212 at one warpgroup), 230400 bytes of shared memory at two. It is also
 * the fallback of attn_prefill_ws.cu's producer-warp forms WS128 (0.363) and WS128PP (0.352, the default), which
 * need the pool's extent for their TMA maps (forty-fourth run).
 * Numerics: the mma.sync kernel's fast mode (q and P rounded once to bf16, f32 accumulation), the same operations
 * in the same order (the tensor cores sum a k16 step alike in both instructions): its bits (kernel_attn checks) —
 * except OVERLAP128, whose softmax steps take 128 keys at a time: its own bits, within the same tolerance of f64.
 * A row's operations depend only on its span: the tiles a CTA sees past a row's keys or before its window add
 * exact zeros, so NWG 1 and 2 give the same bits, and so does a span alone or in any batch. Rows past the span's
 * end are computed on zero q and not written. Split spans (cuda_attn_prefill_splits > 1) are left to the mma.sync
 * kernel's partials.
 */
#include "backend/cuda/attn_prefill.cuh"
#include "backend/cuda/attn_prefill_wg.cuh"
#include "backend/cuda/tile_copy.cuh"

namespace {

/* The kernel's forms (enum cuda_attn_prefill_wg's PIPE, SERIAL, OVERLAP, OVERLAP128) as template arguments: the
 * loop's form and the keys a tile, BN (128 for OVERLAP128, else 64) */
constexpr int FORM_SERIAL = 0, FORM_PIPE = 1, FORM_OVERLAP = 2;
/* Q tiles, then K and V in 2 (SERIAL) or 3 stages, + the 1024-byte alignment (BN 128, two warpgroups: 230400
 * bytes of the 232448 a block may have) */
template <int NWG, int FORM, uint32_t BN> constexpr uint32_t wg_smem()
{
    return NWG * QTILE + (FORM == FORM_SERIAL ? 2 : 3) * 2 * kv_tile<BN>() + 1024;
}

/* The K and V tile of keys kt .. kt + BN − 1 (those past pl zero-filled: a masked key's P is 0, and 0 · V must
 * not meet a stale NaN) into a stage, as one cp.async group. */
template <uint32_t NT, uint32_t BN>
__device__ __forceinline__ void wg_issue(uint32_t sK, uint32_t sV, const cuda_attn_kv &kv, const uint32_t *tab,
                                         uint32_t kt, uint32_t pl, uint32_t kv_dim, uint32_t kvh)
{
    const uint16_t *kb = static_cast<const uint16_t *>(kv.k), *vb = static_cast<const uint16_t *>(kv.v);
#pragma unroll
    for (uint32_t j = 0; j < BN * 16 / NT; j++) {
        const uint32_t i = j * NT + threadIdx.x, r = i / 16, p = i % 16, kp = kt + r;
        uint64_t off = 0;
        uint32_t n = 0;
        if (kp <= pl) {
            const uint64_t row = (uint64_t)tab[kp / CUDA_ATTN_BLOCK] * CUDA_ATTN_BLOCK + kp % CUDA_ATTN_BLOCK;
            off = row * kv_dim + (uint64_t)kvh * HD + p * 8;
            n = 16;
        }
        cp_async16_zfill(sK + tile_off<kv_cb<BN>()>(r, p), kb + off, n);
        cp_async16_zfill(sV + tile_off<kv_cb<BN>()>(r, p), vb + off, n);
    }
    cp_async_commit();
}

/* FORM_PIPE: three stages, and the next tile's S = Q·Kᵀ issued before this tile's softmax, so the tensor cores
 * work while the softmax runs. FORM_OVERLAP: FlashAttention-3's intra-warpgroup overlap — tile i's P·V and tile
 * i + 1's Q·Kᵀ issued together, tile i + 1's softmax run while P·V is in flight (P into other registers), O
 * rescaled once P·V is done. Each the same operations on O, l and m in the same order, so the same bits.
 * FORM_SERIAL: two stages, each product awaited before the next step. */
template <int NWG, int FORM, uint32_t BN>
__global__ void __launch_bounds__(128 * NWG)
    kernel_attn_prefill_wg(const float *__restrict__ q, float *__restrict__ att, uint16_t *__restrict__ att16,
                           const cuda_attn_span *__restrict__ spans, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                           uint32_t window)
{
    constexpr uint32_t NT = 128 * NWG, BM = 64 * NWG, NS = FORM == FORM_SERIAL ? 2 : 3, KT = kv_tile<BN>();
    static_assert(BN == 64 || (BN == 128 && FORM == FORM_OVERLAP), "128-key tiles: the overlap form only");
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_u32(smem_raw), base = (raw + 1023) & ~1023u;
    uint8_t *const gbase = smem_raw + (base - raw);
    const wg_cta w = wg_cta_of<BM>(spans, d);
    if (!w.live)
        return;
    const cuda_attn_span sp = w.sp;
    const uint32_t t0 = w.t0, ntok = w.ntok, h = w.h, kvh = w.kvh, pf = w.pf, pl = w.pl;
    const uint32_t q_dim = d.n_heads * HD, kv_dim = d.n_kv_heads * HD;

    /* Q: the CTA's rows (warpgroup r / 64's tile), scaled and rounded; rows past the span zero */
    wg_load_q(gbase, q, sp, t0, 0, BM, ntok, h, q_dim, scale2, threadIdx.x, NT);
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2, g = lane >> 2, c = lane & 3;
    const uint32_t sQ = base + wg * QTILE, sKV = base + NWG * QTILE; /* stage st: K at sKV + 2·st·KT, V after it */
    const uint32_t row0 = 64 * wg + 16 * (warp & 3) + g, row1 = row0 + 8; /* this thread's two rows in the CTA */
    const uint32_t p0 = pf + row0, p1 = pf + row1;

    const uint32_t *tab = kv.tables + (uint64_t)sp.table * kv.table_stride;
    const uint32_t k_lo = window > 0 && pf + 1 > window ? pf + 1 - window : 0;
    const uint32_t kt_first = k_lo / BN, nkt = pl / BN - kt_first + 1; /* key tiles kt_first .. + nkt − 1 */
    /* tile i (of the CTA's nkt) into its stage, as one cp.async group */
    auto issue = [&](uint32_t i) {
        const uint32_t st = sKV + 2 * (i % NS) * KT;
        wg_issue<NT, BN>(st, st + KT, kv, tab, (kt_first + i) * BN, pl, kv_dim, kvh);
    };
    /* the mask only where some key of the tile is past (or, with a window, before) some row of the CTA */
    auto full = [&](uint32_t kt) { return kt + BN - 1 <= pf && (window == 0 || kt + window > pl); };

    float o[64], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f, s[BN / 2], c0, c1;
    uint32_t a[BN / 16][4];
#pragma unroll
    for (int i = 0; i < 64; i++)
        o[i] = 0.0f;
    issue(0);
    /* PIPE and OVERLAP: the second tile asked for, then S of the first */
    auto first_s = [&]() {
        if (nkt > 1) {
            issue(1);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        fence_proxy_async(); /* this thread's copies (and Q's stores) visible to the tensor cores ... */
        __syncthreads();     /* ... and every thread's */
        wg_qk<BN>(s, sQ, sKV);
        wgmma_wait<0>();
        reg_fence(s);
    };
    if constexpr (FORM == FORM_OVERLAP) {
        first_s();
        wg_softmax<BN>(s, o, a, m0, m1, l0, l1, kt_first * BN, full(kt_first * BN), p0, p1, window);
        /* tile i < nkt − 1: its P·V beside tile i + 1's Q·Kᵀ, whose softmax runs meanwhile into an */
        for (uint32_t i = 0; i + 1 < nkt; i++) {
            cp_async_wait<0>(); /* tile i + 1 */
            fence_proxy_async();
            __syncthreads(); /* its copies visible; every warpgroup done with tile i − 1 (its stage refilled) */
            if (i + 2 < nkt)
                issue(i + 2);
            wg_qk<BN>(s, sQ, sKV + 2 * ((i + 1) % NS) * KT); /* (s held tile i's P, now in a) */
            wg_pv<BN>(o, a, sKV + (2 * (i % NS) + 1) * KT);
            wgmma_wait<1>(); /* Q·Kᵀ of tile i + 1, committed first, is done; P·V of tile i may run on */
            reg_fence(s);
            const uint32_t kt = (kt_first + i + 1) * BN;
            wg_mask<BN>(s, kt, full(kt), p0, p1, window);
            flash_softmax_stats(*reinterpret_cast<float(*)[BN / 8][4]>(&s), m0, m1, l0, l1, c0, c1);
            wgmma_wait<0>(); /* P·V of tile i done: O rescaled, a (its P) rewritten with tile i + 1's */
            reg_fence(o);
            flash_softmax_rescale(*reinterpret_cast<float(*)[16][4]>(&o), c0, c1);
            wg_pack<BN>(s, a);
        }
        wg_pv<BN>(o, a, sKV + (2 * ((nkt - 1) % NS) + 1) * KT); /* the last tile's */
        wgmma_wait<0>();
        reg_fence(o);
    } else if constexpr (FORM == FORM_PIPE) {
        first_s();
        for (uint32_t i = 0; i < nkt; i++) {
            float sn[BN / 2];
            if (i + 1 < nkt) {
                cp_async_wait<0>(); /* tile i + 1 */
                fence_proxy_async();
                __syncthreads(); /* its copies visible; every warpgroup done with tile i − 1 (its stage refilled) */
                if (i + 2 < nkt)
                    issue(i + 2);
                wg_qk<BN>(sn, sQ, sKV + 2 * ((i + 1) % NS) * KT);
            }
            const uint32_t kt = (kt_first + i) * BN;
            wg_softmax<BN>(s, o, a, m0, m1, l0, l1, kt, full(kt), p0, p1, window);
            wg_pv<BN>(o, a, sKV + (2 * (i % NS) + 1) * KT);
            wgmma_wait<0>();
            reg_fence(o);
            if (i + 1 < nkt) {
                reg_fence(sn);
#pragma unroll
                for (int j = 0; j < (int)BN / 2; j++)
                    s[j] = sn[j];
            }
        }
    } else {
        for (uint32_t i = 0; i < nkt; i++) {
            if (i + 1 < nkt) { /* the next tile into the other stage (free since the last iteration's barrier) */
                issue(i + 1);
                cp_async_wait<1>();
            } else {
                cp_async_wait<0>();
            }
            fence_proxy_async(); /* this thread's copies (and Q's stores) visible to the tensor cores ... */
            __syncthreads();     /* ... and every thread's */
            const uint32_t sK = sKV + 2 * (i % NS) * KT, kt = (kt_first + i) * BN;
            wg_qk<BN>(s, sQ, sK);
            wgmma_wait<0>();
            reg_fence(s);
            wg_softmax<BN>(s, o, a, m0, m1, l0, l1, kt, full(kt), p0, p1, window);
            wg_pv<BN>(o, a, sK + KT);
            wgmma_wait<0>();
            reg_fence(o);
            __syncthreads(); /* this stage is refilled two tiles on */
        }
    }
    wg_store_o(o, l0, l1, att, att16, sp, t0, row0, row1, ntok, h, q_dim, c);
}

template <int NWG, int FORM, uint32_t BN>
void launch_wg(const cuda_ctx *ctx, const float *q, float *att, uint16_t *att16,
               const cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv,
               float scale2, uint32_t window)
{
    constexpr uint32_t smem = wg_smem<NWG, FORM, BN>();
    static_assert(smem <= 232448, "a block's shared memory on sm_90");
    static uint32_t opted; /* devices the attribute is set on */
    if (cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel_attn_prefill_wg<NWG, FORM, BN>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((max_n + 64 * NWG - 1) / (64 * NWG), d.n_heads, n_spans);
    kernel_attn_prefill_wg<NWG, FORM, BN><<<grid, 128 * NWG, smem, ctx->stream>>>(q, att, att16, spans, d, kv,
                                                                                 scale2, window);
}

template <int FORM, uint32_t BN = 64>
void launch_pick(const cuda_ctx *ctx, const float *q, float *att, uint16_t *att16,
                 const cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv,
                 float scale2, uint32_t window)
{
    if (ctx->attn_prefill_bm == 128 && max_n > 64)
        launch_wg<2, FORM, BN>(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window);
    else
        launch_wg<1, FORM, BN>(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window);
}

} // namespace

bool attn_prefill_wg_takes(const cuda_ctx *ctx, cuda_attn_dims d, cuda_attn_kv kv, bool exact)
{
    return ctx->attn_prefill_wg != CUDA_ATTN_PREFILL_WG_OFF && !exact && kv.bf16 && d.head_dim == HD;
}

void attn_prefill_wg(const cuda_ctx *ctx, const float *q, float *att, uint16_t *att16,
                     const cuda_attn_span *spans, uint32_t n_spans, uint32_t max_n, cuda_attn_dims d, cuda_attn_kv kv,
                     float scale2, uint32_t window)
{
    const enum cuda_attn_prefill_wg f = ctx->attn_prefill_wg;
    if (f == CUDA_ATTN_PREFILL_WG_PIPE) {
        launch_pick<FORM_PIPE>(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window);
    } else if (f == CUDA_ATTN_PREFILL_WG_OVERLAP) {
        launch_pick<FORM_OVERLAP>(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window);
    } else if (f == CUDA_ATTN_PREFILL_WG_OVERLAP128 || f == CUDA_ATTN_PREFILL_WG_WS128 ||
               f == CUDA_ATTN_PREFILL_WG_WS128PP) { /* the producer-warp forms where the pool's extent is known */
        const bool ws = f != CUDA_ATTN_PREFILL_WG_OVERLAP128 &&
                        attn_prefill_ws(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window,
                                        f == CUDA_ATTN_PREFILL_WG_WS128PP);
        if (!ws)
            launch_pick<FORM_OVERLAP, 128>(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window);
    } else {
        launch_pick<FORM_SERIAL>(ctx, q, att, att16, spans, n_spans, max_n, d, kv, scale2, window);
    }
}
