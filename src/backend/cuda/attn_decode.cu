/* backend/cuda/attn_decode.cu — decode attention over the paged KV cache:
 * split-K flash-decoding (declared in attn.h): the split kernel, the combine,
 * the launchers and the C API; the rows kernel is in attn_decode_rows.cu, the
 * device pieces both share in attn_decode.cuh.
 *
 * kernel_attn_decode: one CTA of 4 warps per (kv head, group of ≤ 8 query
 * heads sharing it, split s, query row t). Split s takes the chunks of 32
 * positions c ≡ s (mod 32) that overlap the row's visible range [p0, p]
 * (launches of < 8 rows, head_dim ≤ 128: the next chunks' K/V are in flight
 * while this one is computed — copied into a 3-stage ring in shared memory by
 * cp.async for head dims ≤ 128 and % 4 == 0 (dec_issue_round), else one chunk
 * ahead in a second register set — the same float operations, so the same
 * bits; with more rows the extra registers cost more occupancy than they
 * save latency); the grid never depends on the lengths (CTAs with nothing to do write an empty
 * partial and exit), so a captured CUDA graph stays valid as sequences grow.
 * Inside a chunk warp w takes positions 8w .. 8w + 7 (their loads issued
 * together when head_dim ≤ 128); a position's K and V row
 * slice (head_dim floats) is read by LPP lanes with 16-byte loads (LPP = 16
 * for head_dim ≤ 64, else 32; float2 loads when head_dim % 4 != 0), once for
 * all the query heads of the group: each lane keeps those heads' q slices,
 * online-softmax states (max m, sum l, f32 accumulator) in registers. The
 * states of the lanes' position slots, then of the 4 warps, are merged in a
 * fixed order and the CTA writes one partial (m, l, acc[head_dim]) per query
 * head into the scratch.
 *
 * kernel_attn_combine: one CTA per (query head, row): the 32 partials merged in
 * split order (with prep, the merged row also written in the quantized GEMVs'
 * prepared form: the decode step's o-projection then needs no prep kernel).
 * Every float operation of a row depends only on its position, its q and its
 * KV — not on T or the other rows — so a sequence's result is bit-identical
 * alone or in any batch.
 *
 * kernel_attn_decode_rows (attn_decode_rows.cu; launches of ≥ ctx->attn_rows_min rows): one CTA per
 * (kv head group, row) runs that row's splits one after the other — each the
 * same device functions (dec_*) as the split kernel's CTA for it — and merges
 * them with the same attn_combine_row: the same bits, fewer CTAs. In every
 * kernel a round's 32 dots (8 positions × 4 heads at head_dim 128) are
 * reduced together by one transposed butterfly (dec_dots_transposed).
 *
 * Scores are kept in base 2: q is multiplied by scale·log2(e) on load and
 * exp2f replaces expf (same result within f32 rounding).
 *
 * attn_decode_tc.cu has the same kernels on the bf16 tensor cores (its own
 * bits): launch_type sends every launch of a shape there when the context
 * says so (attn.h: CUDA_ATTN_DECODE_TC, or AUTO with a bf16 KV cache).
 */
#include "backend/cuda/attn_decode.cuh"

using namespace attn_dec;

namespace {

/* VEC floats a load; NJ loads a lane covers a row slice; LPP lanes a position;
 * GM query heads a CTA at most. Columns of lane li: (li + LPP·j)·VEC + e.
 * One CTA a (kv head group, split, row). */
template <int VEC, int NJ, int LPP, int GM, bool PF, bool BF>
__global__ void __launch_bounds__(NW * 32)
    kernel_attn_decode(const float *__restrict__ q, const uint32_t *__restrict__ tok_pos,
                       const uint32_t *__restrict__ tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                       uint32_t window, dec_out o, uint32_t hsplit)
{
    pdl_trigger();
    float *__restrict__ part_acc = o.pa, *__restrict__ part_ml = o.pm;
    using SH = dec_shape<VEC, NJ, LPP>;
    constexpr int UNR = SH::UNR;
    __shared__ dec_smem<GM> sm;
    uint32_t h0;
    int ng;
    const uint32_t s = blockIdx.y, t = blockIdx.z;
    const dec_row R = dec_row_of<GM>(blockIdx.x, t, tok_pos, tok_table, d, kv, window, LPP, hsplit, o.sc, h0, ng);
    if (ng == 0) /* hsplit: a deep row's heads are in their group's first CTA */
        return;
    const uint64_t part0 = ((uint64_t)t * d.n_heads + h0) * NS + s; /* + g·NS for head h0 + g */

    /* first chunk of this split overlapping [p0, p] */
    uint32_t c = dec_first_chunk(s, R.p0 / CH, R.ns);
    const uint32_t clast = R.p / CH;
    /* PDL: when the keys and values of positions before p were written by
     * earlier steps (kv.settled), the prefetching loop issues the first
     * chunk's loads before the wait — unless it holds p, whose row this
     * step's RoPE kernel writes */
    constexpr bool CHUNK_ROUND = PF && SH::CHUNK_ROUND;
    constexpr bool STAGED = dec_staged<VEC, NJ, LPP, PF>;
    extern __shared__ __align__(16) uint8_t dec_ring_mem[]; /* STAGED: dec_ring<LPP, BF>::BYTES */
    const uint32_t ring = (uint32_t)__cvta_generic_to_shared(dec_ring_mem);
    float ka[UNR][NJ][VEC], va[UNR][NJ][VEC];
    bool oka[UNR];
    const bool early = CHUNK_ROUND && kv.settled && c < clast;
    uint32_t issued = 0; /* STAGED: chunks c, c + NS, ... whose copies are issued (one commit group each) */
    if constexpr (STAGED) {
        if (kv.settled)
            for (; issued < DEC_STAGES - 1 && c + issued * R.ns < clast; issued++) {
                dec_issue_round<LPP, BF>(R, c + issued * R.ns, ring + issued * dec_ring<LPP, BF>::STAGE);
                cp_async_commit();
            }
    } else if (early) {
        dec_load_round<VEC, NJ, LPP, BF>(R, c, 0, ka, va, oka);
    }
    pdl_wait();
    if (c > clast) {
        dec_empty_partials<false>(part_ml, part0, ng, R.p0 / CH, clast, R.ns);
        return;
    }

    float qr[GM][NJ][VEC], acc[GM][NJ][VEC], m[GM], l[GM];
    dec_load_q<VEC, NJ, LPP, GM>(q, (uint64_t)t * d.n_heads * R.hd + (uint64_t)h0 * R.hd, R.hd, ng, R.li, scale2, qr);
    dec_state_init<VEC, NJ, GM>(acc, m, l);

    if constexpr (STAGED) {
        /* chunk i computed while chunks i + 1 .. i + DEC_STAGES − 1 land; the
         * stage refilled at step i is the one read at step i − 1 */
        using RG = dec_ring<LPP, BF>;
        for (; issued < DEC_STAGES - 1; issued++) {
            if (c + issued * R.ns <= clast)
                dec_issue_round<LPP, BF>(R, c + issued * R.ns, ring + issued * RG::STAGE);
            cp_async_commit(); /* empty groups keep the count */
        }
        for (uint32_t i = 0;; i++) {
            const uint32_t ci = c + i * R.ns, cn = ci + (DEC_STAGES - 1) * R.ns;
            if (cn <= clast)
                dec_issue_round<LPP, BF>(R, cn, ring + ((i + DEC_STAGES - 1) % DEC_STAGES) * RG::STAGE);
            cp_async_commit();
            cp_async_wait<DEC_STAGES - 1>(); /* chunk ci's copies have landed */
            dec_read_round<LPP, BF>(R, ci, ring + (i % DEC_STAGES) * RG::STAGE, ka, va, oka);
            dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, ka, va, oka, acc, m, l);
            if (ci + R.ns > clast)
                break;
        }
    } else if constexpr (CHUNK_ROUND) {
        /* the next chunk's loads are issued before this one is computed (two
         * register sets; the same operations in the same order as one chunk
         * at a time) */
        float kn[UNR][NJ][VEC], vn[UNR][NJ][VEC];
        bool okn[UNR];
        if (!early)
            dec_load_round<VEC, NJ, LPP, BF>(R, c, 0, ka, va, oka);
        for (;;) {
            const uint32_t c1 = c + R.ns, c2 = c + 2 * R.ns;
            if (c1 <= clast)
                dec_load_round<VEC, NJ, LPP, BF>(R, c1, 0, kn, vn, okn);
            dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, ka, va, oka, acc, m, l);
            if (c1 > clast)
                break;
            if (c2 <= clast)
                dec_load_round<VEC, NJ, LPP, BF>(R, c2, 0, ka, va, oka);
            dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, kn, vn, okn, acc, m, l);
            if (c2 > clast)
                break;
            c = c2;
        }
    } else {
        for (; c <= clast; c += R.ns)
#pragma unroll
            for (int r0 = 0; r0 < PW; r0 += SH::PPW * UNR) {
                float kr[UNR][NJ][VEC], vr[UNR][NJ][VEC];
                bool ok[UNR];
                dec_load_round<VEC, NJ, LPP, BF>(R, c, r0, kr, vr, ok);
                dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, kr, vr, ok, acc, m, l);
            }
    }
    dec_split_write<VEC, NJ, LPP, GM>(R, acc, m, l, ng, sm, part_acc, part_ml, part0);
}

/* att[t, h] = Σ_s w_s acc_s / Σ_s w_s l_s, w_s = 2^(m_s − max m), in split
 * order (and its prepared form with o.xq). */
__global__ void __launch_bounds__(128) kernel_attn_combine(dec_out o, uint32_t n_heads, uint32_t hd)
{
    pdl_enter();
    const uint32_t h = blockIdx.x, t = blockIdx.y;
    attn_out_head(o, ((uint64_t)t * n_heads + h) * NS, hd, t, h);
}
static_assert(NS == 32, "attn_combine_row merges at most 32 splits");

/* One instantiation's launch, with the staged ring's dynamic shared memory
 * (the attribute set before its first launch on each device) when it has one. */
template <int VEC, int NJ, int LPP, int GM, bool PF, bool BF>
void launch_one(const cuda_ctx *ctx, dim3 grid, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
                cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o, uint32_t hsplit)
{
    constexpr int smem = dec_staged<VEC, NJ, LPP, PF> ? dec_ring<LPP, BF>::BYTES : 0;
    static uint32_t opted; /* devices the attribute is set on */
    if (smem > 0 && cuda_first_on_device(opted, ctx->device))
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel_attn_decode<VEC, NJ, LPP, GM, PF, BF>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cuda_launch(ctx, kernel_attn_decode<VEC, NJ, LPP, GM, PF, BF>, grid, NW * 32, smem, q, tok_pos, tok_table, d, kv,
                scale2, window, o, hsplit);
}

template <int VEC, int NJ, int LPP, bool PF, bool BF>
void launch_pf(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos, const uint32_t *tok_table,
               cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window, const dec_out &o, uint32_t hsplit)
{
    switch (gm) {
    case 1: launch_one<VEC, NJ, LPP, 1, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    case 2: launch_one<VEC, NJ, LPP, 2, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    case 4: launch_one<VEC, NJ, LPP, 4, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    default: launch_one<VEC, NJ, LPP, 8, PF, BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit); break;
    }
}

template <int VEC, int NJ, int LPP, bool BF>
void launch_shape(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos,
                  const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                  const dec_out &o)
{
    if (grid.z < 8) { /* few rows: latency-bound, prefetch the next chunk; short rows one head a CTA */
        const uint32_t hsplit = dec_launch_hsplit(ctx, d, grid.z, kv);
        if (hsplit)
            grid.x = d.n_heads; /* one CTA a query head (dec_row_of) */
        launch_pf<VEC, NJ, LPP, true, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o, hsplit);
    } else {
        launch_pf<VEC, NJ, LPP, false, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o, 0);
    }
}

/* The launch shape by head_dim (the same for f32 and bf16 elements: the same
 * float operations after the load); the rows kernel for launches of ≥
 * attn_rows_min rows. True when that kernel ran (it merges its splits: no
 * combine launch). */
template <bool BF>
bool launch_type(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos,
                 const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                 const dec_out &o)
{
    const uint32_t hd = d.head_dim, T = grid.z;
    const bool tc = ctx->attn_kernels == CUDA_ATTN_DECODE_TC || (ctx->attn_kernels == CUDA_ATTN_DECODE_AUTO && BF);
    if (tc && tc_supported(d)) /* every launch of the shape on the tensor cores (attn_decode_tc.cu) */
        return launch_tc<BF>(ctx, grid, q, tok_pos, tok_table, d, kv, scale2, window, o);
    const uint32_t rows_min = dec_rows_min(ctx, CUDA_ATTN_ROWS_MIN_DEFAULT);
    if (hd % 4 == 0 && hd <= 128 && rows_min > 0 && T >= rows_min) {
        const dim3 rgrid(grid.x, T);
        if (hd <= 64)
            launch_rows<16, BF>(ctx, rgrid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
        else
            launch_rows<32, BF>(ctx, rgrid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
        return true;
    }
    if (hd % 4 == 0 && hd <= 64)
        launch_shape<4, 1, 16, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    else if (hd % 4 == 0 && hd <= 128)
        launch_shape<4, 1, 32, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    else if (hd % 4 == 0)
        launch_shape<4, 2, 32, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    else
        launch_shape<2, 4, 32, BF>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    return false;
}

} // namespace

extern "C" void cuda_attn_decode_set_rows(struct cuda_ctx *ctx, uint32_t rows_min)
{
    ctx->attn_rows_min = rows_min;
}

extern "C" uint32_t cuda_attn_decode_hsplit_below(const struct cuda_ctx *ctx, struct cuda_attn_dims d, uint32_t T)
{
    uint32_t hsplit = T < 8 && d.n_heads > d.n_kv_heads ? ctx->attn_hsplit : 0;
    if (hsplit == CUDA_ATTN_HSPLIT_AUTO) { /* the one-head CTAs with work in one wave of 2 an SM */
        const uint32_t per = 2u * (uint32_t)ctx->prop.multiProcessorCount / (d.n_heads * T);
        hsplit = CH * (per > 1 ? per : 1);
    }
    return hsplit;
}

extern "C" void cuda_attn_decode_set_kernels(struct cuda_ctx *ctx, enum cuda_attn_decode_kernels k)
{
    ctx->attn_kernels = k;
}

extern "C" void cuda_attn_decode_set_tc_q(struct cuda_ctx *ctx, enum cuda_attn_tc_q where)
{
    ctx->attn_tc_q = where;
}

extern "C" void cuda_attn_decode_set_split_chunks(struct cuda_ctx *ctx, uint32_t chunks)
{
    ctx->attn_split_chunks = chunks;
}

extern "C" void cuda_attn_decode_set_one(struct cuda_ctx *ctx, bool on)
{
    ctx->attn_dec_one = on;
}

extern "C" uint32_t cuda_attn_decode_split_chunks(const struct cuda_ctx *ctx)
{
    return ctx->attn_split_chunks;
}

extern "C" void cuda_attn_decode_set_hsplit(struct cuda_ctx *ctx, uint32_t below)
{
    ctx->attn_hsplit = below;
}

extern "C" size_t cuda_attn_decode_scratch_floats(uint32_t T, struct cuda_attn_dims d)
{
    return (size_t)T * d.n_heads * NS * (d.head_dim + 2);
}

/* A head's elements must be whole blocks of the prepared form (gemv_prep_x4:
 * 128 elements when n % 128 == 0, else 32), so one CTA can prepare them. */
extern "C" bool cuda_attn_decode_prep_supported(struct cuda_attn_dims d)
{
    const uint32_t hd = d.head_dim, n = d.n_heads * hd;
    return hd > 0 && hd % 32 == 0 && hd <= CUDA_ATTN_MAX_HEAD_DIM && (n % 128 != 0 || hd % 128 == 0);
}

extern "C" void cuda_attn_decode(struct cuda_ctx *ctx, const float *q, float *att, uint32_t T,
                                 const uint32_t *tok_pos, const uint32_t *tok_table, struct cuda_attn_dims d,
                                 struct cuda_attn_kv kv, float scale, uint32_t window, float *scratch, bool prep)
{
    const uint32_t hd = d.head_dim;
    if (hd == 0 || hd % 2 || hd > CUDA_ATTN_MAX_HEAD_DIM || d.n_kv_heads == 0 || d.n_heads % d.n_kv_heads)
        CUDA_FAIL("cuda_attn_decode: unsupported shape (heads %u, kv heads %u, head_dim %u)", d.n_heads,
                  d.n_kv_heads, hd);
    if (T == 0)
        return;
    if (T > 65535)
        CUDA_FAIL("cuda_attn_decode: %u rows (at most 65535 a launch)", T);
    const uint32_t G = d.n_heads / d.n_kv_heads;
    const int gm = G <= 1 ? 1 : G <= 2 ? 2 : G <= 4 ? 4 : 8;
    const dim3 grid(d.n_kv_heads * ((G + gm - 1) / gm), NS, T);
    if (prep && !cuda_attn_decode_prep_supported(d))
        CUDA_FAIL("cuda_attn_decode: head_dim %u, %u heads: the output cannot be prepared in passing", hd, d.n_heads);
    const uint32_t n = d.n_heads * hd;
    const dec_out o = {scratch, scratch + (size_t)T * d.n_heads * NS * hd, att,
                       prep ? gemv_quant_xq_reserve(ctx, n, T) : nullptr, n, ctx->act_bf16, ctx->attn_split_chunks,
                       ctx->attn_dec_one};
    const float scale2 = scale * LOG2E;
    const bool merged = kv.bf16 ? launch_type<true>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o)
                                : launch_type<false>(ctx, grid, gm, q, tok_pos, tok_table, d, kv, scale2, window, o);
    CUDA_CHECK_LAUNCH();
    if (merged)
        return;
    cuda_launch(ctx, kernel_attn_combine, dim3(d.n_heads, T), 128, 0, o, d.n_heads, hd);
}
