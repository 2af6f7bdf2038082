/* backend/cuda/attn_decode_rows.cu — the decode attention's rows kernel
 * (kernel_attn_decode_rows: one CTA a (kv head group, row) that runs the row's
 * splits in turn and merges them itself) and its launch, taken by
 * attn_decode.cu's launcher for launches of ≥ attn_rows_min rows. Its pieces
 * are attn_decode.cuh's, the split kernel's: the same bits.
 */
#include "backend/cuda/attn_decode.cuh"

namespace attn_dec {

namespace {

/* One CTA a (kv head group, row) for launches of many rows: the CTA runs the
 * row's splits one after the other — each split's partial computed by the same
 * operations as kernel_attn_decode's CTA for it — and merges them itself with
 * attn_combine_row: the same bits as the split launch + combine, without its
 * 32 CTAs a row (most of them empty at short depth, 2-4 resident an SM) and
 * without the combine launch. It pays at full batches of short rows (64 rows
 * at depth 640: 138 against 158 µs, H200), not below (32 rows: 128 against
 * 81): the split launch has more CTAs in flight; with the transposed rounds
 * 121.5 µs at 64 rows of depth 640 (bench/RESULTS.md sixteenth run). A variant with the next
 * chunk's loads in flight (two register sets, 228 registers, 2 CTAs an SM)
 * was slower at every batch measured. Head dims ≤ 128, % 4 == 0 (NJ = 1, a
 * chunk one round). */
template <int LPP, int GM, bool BF>
__global__ void __launch_bounds__(NW * 32)
    kernel_attn_decode_rows(const float *__restrict__ q, const uint32_t *__restrict__ tok_pos,
                            const uint32_t *__restrict__ tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2,
                            uint32_t window, dec_out o)
{
    pdl_trigger();
    float *__restrict__ part_acc = o.pa, *__restrict__ part_ml = o.pm;
    constexpr int VEC = 4, NJ = 1;
    using SH = dec_shape<VEC, NJ, LPP>;
    constexpr int UNR = SH::UNR;
    static_assert(SH::CHUNK_ROUND, "kernel_attn_decode_rows: a chunk must be one round");
    __shared__ dec_smem<GM> sm;
    uint32_t h0;
    int ng;
    const uint32_t t = blockIdx.y;
    const dec_row R = dec_row_of<GM>(blockIdx.x, t, tok_pos, tok_table, d, kv, window, LPP, 0, o.sc, h0, ng);
    const uint64_t part0 = ((uint64_t)t * d.n_heads + h0) * NS;
    const uint32_t cmin = R.p0 / CH, clast = R.p / CH;
    pdl_wait();
    dec_empty_partials<true>(part_ml, part0, ng, cmin, clast, R.ns);
    float qr[GM][NJ][VEC], acc[GM][NJ][VEC], m[GM], l[GM];
    dec_load_q<VEC, NJ, LPP, GM>(q, (uint64_t)t * d.n_heads * R.hd + (uint64_t)h0 * R.hd, R.hd, ng, R.li, scale2, qr);
    dec_state_init<VEC, NJ, GM>(acc, m, l);
    /* the (split, chunk) pairs in the order computed: splits ascending, each
     * split's chunks ascending (dec_next_pair) */
    uint32_t s, c;
    dec_first_pair(s, c, cmin, clast, R.ns);
    for (;;) {
        float kr[UNR][NJ][VEC], vr[UNR][NJ][VEC];
        bool ok[UNR];
        dec_load_round<VEC, NJ, LPP, BF>(R, c, 0, kr, vr, ok);
        dec_compute_round<VEC, NJ, LPP, GM, BF>(qr, kr, vr, ok, acc, m, l);
        uint32_t s1 = s, c1 = c;
        const bool more = dec_next_pair<true>(s1, c1, cmin, clast, R.ns);
        if (!more || s1 != s) {
            dec_split_write<VEC, NJ, LPP, GM>(R, acc, m, l, ng, sm, part_acc, part_ml, part0 + s);
            dec_state_init<VEC, NJ, GM>(acc, m, l);
        }
        if (!more)
            break;
        s = s1, c = c1;
    }
    /* the partials of this CTA's heads (written above, read back through L2),
     * one head after the other by the whole CTA: attn_out_heads_warps (the
     * tensor-core rows form's merge, same bits) made this kernel 2x slower at
     * 64 rows of depth 640 with f32 keys (257.6 against 121.2 us, twentieth
     * run), so it stays here */
    for (int g = 0; g < ng; g++)
        attn_out_head(o, part0 + (uint64_t)g * NS, R.hd, t, h0 + g);
}

} // namespace

template <int LPP, bool BF>
void launch_rows(const cuda_ctx *ctx, dim3 grid, int gm, const float *q, const uint32_t *tok_pos,
                 const uint32_t *tok_table, cuda_attn_dims d, cuda_attn_kv kv, float scale2, uint32_t window,
                 const dec_out &o)
{
    switch (gm) {
    case 1: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 1, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    case 2: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 2, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    case 4: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 4, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    default: cuda_launch(ctx, kernel_attn_decode_rows<LPP, 8, BF>, grid, NW * 32, 0, q, tok_pos, tok_table, d, kv, scale2, window, o); break;
    }
}

template void launch_rows<16, false>(const cuda_ctx *, dim3, int, const float *, const uint32_t *, const uint32_t *,
                                     cuda_attn_dims, cuda_attn_kv, float, uint32_t, const dec_out &);
template void launch_rows<16, true>(const cuda_ctx *, dim3, int, const float *, const uint32_t *, const uint32_t *,
                                    cuda_attn_dims, cuda_attn_kv, float, uint32_t, const dec_out &);
template void launch_rows<32, false>(const cuda_ctx *, dim3, int, const float *, const uint32_t *, const uint32_t *,
                                     cuda_attn_dims, cuda_attn_kv, float, uint32_t, const dec_out &);
template void launch_rows<32, true>(const cuda_ctx *, dim3, int, const float *, const uint32_t *, const uint32_t *,
                                    cuda_attn_dims, cuda_attn_kv, float, uint32_t, const dec_out &);

} // namespace attn_dec
