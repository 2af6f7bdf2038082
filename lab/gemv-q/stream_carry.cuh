/* lab/gemv-q/stream_carry.cuh — the weight stream of gemv_q_test.cu scheduled so that a row's sums keep the
 * product's order ("carry"), with two consumers: the product's staged dp4a arithmetic (any type; the bits of the
 * batch kernels, which run ksplit 1) and, for Q4_K, a dp4a consumer that computes the product's tensor-core
 * GEMV's sums (src/backend/cuda/gemv_mma.cu, mk_q4k and kernel_gemv_mma) operation for operation ("mq"). Either
 * way a lone token streamed this way gets the bits the engine's batched rows get. Included by gemv_q_test.cu
 * inside its namespace, after the stream's helpers (sv_args, sv_issue_stage, sv_row_offset, sv_stage_acc, ...).
 *
 * Why: a row alone and in a batch must have the same bits (kernel_forward's batch checks, MEMRA_DECODE_MMV=all's
 * promise); the engine runs quantized GEMVs at ksplit 1 — Q4_K on the int8 tensor cores at every batch size
 * (MEMRA_GEMV_MMA=on), the other types on the staged dp4a kernel. The stream of gemv_q_test.cu gives the dp4a
 * bits only where a stage holds whole rows (kc = 1: too large for Q8_0 at n = 4096 and for every type at 14336)
 * and never the tensor-core ones.
 *
 * Schedule (kernel_gemv_carry): rows in groups of R; a group's K in kc chunks of cb blocks (a multiple of the
 * warp step's blocks: a lane's blocks continue from chunk to chunk as in the product's loop; for Q4_K's mq also
 * whole superblock pairs). A row's sums must see its blocks in order, so a group's chunks all go to one consumer
 * warp, which keeps its sums in registers from chunk to chunk: CTA c takes groups [c·G/ctas, (c + 1)·G/ctas)
 * (whole groups: no row is split between CTAs, nothing to combine), its local group i goes to warp i % NC, and
 * each warp owns depth = nslot / NC ring slots (its q-th stage in slot w·depth + q % depth). The producer issues
 * the stages round-robin over the warps (round m: chunk c of every warp's m-th group, c = 0..kc−1), so the warps
 * advance together; it waits only on the slot it refills, whose owner has all its earlier stages. The price
 * against gemv_q_test.cu's stream: the balance is a group (R rows × the row) a warp, not a stage.
 *
 * Consumers (C::state, C::stage, C::finish):
 *   cc_dp4a<Q>  the product's lanes (gemv_quant.cu q_step: lane l a 32-element segment of blocks l / S, + BPS,
 *               ...), acc carried over the chunks, then warp_sum and lane 0's store: kernel_gemv_qs's bits.
 *   cc_mq       Q4_K with gemv_mma.cu's float operations in its order (below).
 *
 * The mq consumer. The integer sums do not depend on their order or on the instruction that forms them; only
 * the float operations after them do. So it forms the same integers with dp4a and then does the same float
 * operations in the same order:
 *   - the row's superblock pairs p fall in KS classes p % KS (KS = 4 for n ≥ 1024, else 1: gemv_mma.cu's
 *     pick_ks; warp k of the product's tile walks class k's pairs in order);
 *   - a class keeps, per prepared-x plane P, F_P = fma(d·sx_half, (float)I_P, F_P) over its superblocks in order,
 *     both halves of one before the next (d the superblock's d / 16, sx the half's activation scale, I_P the
 *     exact 16·Σ_j sc_j·Σ_i q_i·X_P,i over the half's 4 sub-blocks j), and per thread slot t = 0..3 (sub-blocks
 *     2t, 2t + 1) M_t = fma(dmin, fma(m_2t+1, Σx_2t+1, m_2t·Σx_2t), M_t) over the same superblocks;
 *   - at the end a class's M = (M_0 + M_1) + (M_2 + M_3), its part fma(−M, 1, fma(65536, F_2, fma(256, F_1,
 *     F_0))) and the row's value part_0 + part_1 + part_2 + part_3 in class order.
 * Layout: lane = (class k = lane / 8, sub-block j = lane % 8); a lane walks its class's superblocks, 32 elements
 * each (8 dp4a a plane), the 4 lanes of a half add their integers by xor shuffles (exact), the two halves swap
 * theirs, and every lane of the class runs the same F chain; even lanes run M_t (t = j / 2). Each x load serves
 * R = 4 rows. Lanes of classes past KS idle (n < 1024). Its cost against dp4a: 9 integer shuffles a row a
 * superblock step (3 planes × (2 + 1)).
 */

/* The product's K split of a Q4_K tile by row length (gemv_mma.cu pick_ks). */
__host__ __device__ inline uint32_t mq_ks(uint32_t n) { return n >= 4 * QK ? 4u : 1u; }

/* Byte k of w as an unsigned value. */
__device__ __forceinline__ uint32_t mq_byte(uint32_t w, uint32_t k) { return (w >> (8 * k)) & 0xFFu; }

/* One lane's share of one superblock for the R rows: its sub-block's integer dot against the three x planes,
 * the half's exact sums, then the F chain (every lane of the class) and the M chain (even lanes). x: the prepared
 * vector (shared memory under XS); rp: the rows' superblock in the stage; gm: the class's 8-lane shuffle mask. */
template <bool XS>
__device__ __forceinline__ void mq_superblock(const uint8_t *const (&rp)[R], const uint8_t *x, uint32_t n, uint32_t sb,
                                              uint32_t j, uint32_t gm, float (&F)[R][3], float (&M)[R])
{
    const uint32_t e = sb * QK + 32 * j;
    uint32_t xp[3][8];
    ld_a16<8, XS>(x + e, xp[0]);
    ld_a16<8, XS>(x + n + e, xp[1]);
    ld_a16<8, XS>(x + 2 * (uint64_t)n + e, xp[2]);
    const float *xsc = reinterpret_cast<const float *>(x + 3 * (uint64_t)n) + sb * 8; /* one scale a 128 */
    const float sx0 = ldq<XS>(xsc), sx1 = ldq<XS>(xsc + 4);
    /* Σx of the 16-element groups 2j..2j+3 (even lanes: sub-blocks j, j + 1) */
    const float4 xs4 = ldq<XS>(reinterpret_cast<const float4 *>(x + xq_sum_off(n)) + sb * 4 + j / 2);
    const float s0 = xs4.x + xs4.y, s1 = xs4.z + xs4.w;
    const uint32_t sh = 4 * (j & 1), jb = j & 3;
#pragma unroll
    for (uint32_t r = 0; r < R; r++) {
        const uint8_t *b = rp[r];
        const uint4 h = *reinterpret_cast<const uint4 *>(b);
        uint32_t w[8];
        ld_a16<8, true>(b + 16 + 32 * (j >> 1), w);
        /* 6-bit scale and min of sub-block j (gemv_mma.cu mk_q4k's words) */
        const uint32_t scw = j < 4 ? h.y & 0x3F3F3F3Fu : (h.w & 0x0F0F0F0Fu) | ((h.y >> 2) & 0x30303030u);
        const uint32_t mw = j < 4 ? h.z & 0x3F3F3F3Fu : ((h.w >> 4) & 0x0F0F0F0Fu) | ((h.z >> 2) & 0x30303030u);
        const int sc = (int)mq_byte(scw, jb);
        int I[3];
#pragma unroll
        for (int P = 0; P < 3; P++) {
            int s = 0;
#pragma unroll
            for (int i = 0; i < 8; i++)
                s = __dp4a((int)((w[i] >> sh) & 0x0F0F0F0Fu), (int)xp[P][i], s);
            I[P] = sc * s;
        }
#pragma unroll
        for (int P = 0; P < 3; P++) { /* the half's 4 sub-blocks, then the other half's sum */
            I[P] += __shfl_xor_sync(gm, I[P], 1);
            I[P] += __shfl_xor_sync(gm, I[P], 2);
        }
        int O[3];
#pragma unroll
        for (int P = 0; P < 3; P++)
            O[P] = __shfl_xor_sync(gm, I[P], 4);
        const float d = __half2float(__ushort_as_half((unsigned short)(h.x & 0xFFFF))) * 0.0625f;
#pragma unroll
        for (int P = 0; P < 3; P++) {
            const int i0 = j < 4 ? I[P] : O[P], i1 = j < 4 ? O[P] : I[P];
            F[r][P] = fmaf(d * sx0, (float)(i0 * 16), F[r][P]);
            F[r][P] = fmaf(d * sx1, (float)(i1 * 16), F[r][P]);
        }
        if ((j & 1) == 0) {
            const float dmin = __half2float(__ushort_as_half((unsigned short)(h.x >> 16)));
            const float m0 = (float)mq_byte(mw, jb), m1 = (float)mq_byte(mw, jb + 1);
            M[r] = fmaf(dmin, fmaf(m1, s1, m0 * s0), M[r]);
        }
    }
}

/* Chunk c of group g in the stage at st: a lane's class's pairs of the chunk, in order. */
template <bool XS>
__device__ __forceinline__ void mq_stage(const sv_args &a, uint32_t g, uint32_t c, const uint8_t *st, const uint8_t *x,
                                         uint32_t lane, float (&F)[R][3], float (&M)[R])
{
    const uint32_t ks = mq_ks(a.n), k = lane / 8, j = lane % 8, gm = 0xFFu << (8 * k);
    if (k >= ks)
        return;
    const uint32_t b0 = c * a.cb, nbk = min(a.cb, a.nblk - b0);
    const uint8_t *row[R];
#pragma unroll
    for (uint32_t r = 0; r < R; r++)
        row[r] = st + sv_row_offset(a, g, r, b0, qt_q4_k::BS);
    const uint32_t pb = b0 / 2, pe = (b0 + nbk + 1) / 2;
    for (uint32_t p = pb + (k + ks - pb % ks) % ks; p < pe; p += ks)
        for (uint32_t h = 0; h < 2; h++) {
            const uint32_t sb = 2 * p + h;
            if (sb >= a.nblk)
                break;
            const uint8_t *rp[R];
#pragma unroll
            for (uint32_t r = 0; r < R; r++)
                rp[r] = row[r] + (sb - b0) * qt_q4_k::BS;
            mq_superblock<XS>(rp, x, a.n, sb, j, gm, F, M);
        }
}

/* A group's rows from the chains: each class's part, then the parts in class order (lanes 8k hold class k's). */
__device__ __forceinline__ void mq_finish(const sv_args &a, uint32_t g, uint32_t lane, const float (&F)[R][3],
                                          const float (&M)[R])
{
    const uint32_t ks = mq_ks(a.n);
#pragma unroll
    for (uint32_t r = 0; r < R; r++) {
        float m = M[r]; /* M_t on lane 2t of the class; odd lanes hold 0 */
        m = m + __shfl_xor_sync(0xffffffffu, m, 2);
        m = m + __shfl_xor_sync(0xffffffffu, m, 4);
        const float part = fmaf(-1.0f, m, fmaf(65536.0f, F[r][2], fmaf(256.0f, F[r][1], F[r][0])));
        float v = __shfl_sync(0xffffffffu, part, 0);
        for (uint32_t k = 1; k < ks; k++)
            v = v + __shfl_sync(0xffffffffu, part, 8 * k);
        if (lane == 0 && g * R + r < a.rows)
            a.y[g * R + r] = v;
    }
}

/* ---- the consumers --------------------------------------------------------------------------------------------- */

struct cc_mq {
    using Q = qt_q4_k;
    struct state {
        float F[R][3], M[R];
    };
    static __device__ __forceinline__ void init(state &s)
    {
#pragma unroll
        for (uint32_t r = 0; r < R; r++)
            s.F[r][0] = s.F[r][1] = s.F[r][2] = s.M[r] = 0.0f;
    }
    template <bool XS>
    static __device__ __forceinline__ void stage(const sv_args &a, uint32_t g, uint32_t c, const uint8_t *st,
                                                 const uint8_t *x, uint32_t lane, state &s)
    {
        mq_stage<XS>(a, g, c, st, x, lane, s.F, s.M);
    }
    static __device__ __forceinline__ void finish(const sv_args &a, uint32_t g, uint32_t lane, state &s)
    {
        mq_finish(a, g, lane, s.F, s.M);
    }
};

template <class QT> struct cc_dp4a {
    using Q = QT;
    struct state {
        float acc[R];
    };
    static __device__ __forceinline__ void init(state &s)
    {
#pragma unroll
        for (uint32_t r = 0; r < R; r++)
            s.acc[r] = 0.0f;
    }
    template <bool XS>
    static __device__ __forceinline__ void stage(const sv_args &a, uint32_t g, uint32_t c, const uint8_t *st,
                                                 const uint8_t *x, uint32_t lane, state &s)
    {
        sv_stage_acc<Q, XS>(a, g * a.kc + c, st, x, lane, Q::lane((int)(lane % (Q::QK / 32))), s.acc);
    }
    static __device__ __forceinline__ void finish(const sv_args &a, uint32_t g, uint32_t lane, state &s)
    {
#pragma unroll
        for (uint32_t r = 0; r < R; r++) {
            const float v = warp_sum(s.acc[r]);
            if (lane == 0 && g * R + r < a.rows)
                a.y[g * R + r] = v;
        }
    }
};

/* ---- the kernel ------------------------------------------------------------------------------------------------
 * Groups come in rounds of NC, warp w taking the round's group w: from the CTA's static share [g0, g1) in order,
 * or (a.dyn: carry-dyn*) taken from a global counter, the next round asked for while this one streams — balanced
 * whatever SMs the CTAs land on (the static split assumes one CTA an SM; an SM that runs two CTAs of one launch
 * streams twice the bytes while another idles). Each stage's slot carries its group id; a slot with GROUP_END tells
 * its warp that no group is left (an mbarrier arrival without bytes). With a.dyn the last CTA's producer resets the
 * counter pair (a.dyn[1] counts the producers) for the launch that uses it next: the host rotates launches over 8
 * pairs, so a launch let in early never shares its pair with one still running. The product's form
 * (lab/gemv-stream.patch, gemv_stream.cu) runs the same protocol. */
constexpr uint32_t GROUP_END = 0xFFFFFFFFu;

/* The producer lane: round m, chunk c, warp w: chunk c of the round's group w into warp w's next slot. */
template <class Q, int NC>
__device__ void carry_produce(const sv_args &a, uint32_t g0, uint32_t g1, uint32_t ring_s, uint32_t full_s,
                              uint32_t empty_s, volatile uint32_t *gid)
{
    const uint64_t pol = l2_evict_first_policy();
    const uint32_t depth = a.nslot / NC, lim = a.dyn ? a.nst : g1;
    uint32_t next = a.dyn ? atomicAdd(a.dyn, (uint32_t)NC) : g0, base = 0, m = 0;
    /* warp w's q-th stage into its slot: a group's chunk, or (g past lim) the end */
    auto put = [&](uint32_t w, uint32_t q, uint32_t g, uint32_t c) {
        const uint32_t slot = w * depth + q % depth;
        if (q >= depth)
            mbar_wait(empty_s + 8 * slot, (q / depth - 1) & 1);
        if (g < lim) {
            gid[slot] = g;
            sv_issue_stage<Q>(a, g * a.kc + c, ring_s + slot * a.slot_bytes, full_s + 8 * slot, pol);
        } else {
            gid[slot] = GROUP_END;
            mbar_arrive(full_s + 8 * slot);
        }
    };
    for (;; m++) {
        base = next;
        const bool more = base + NC < lim; /* groups may be left after this round */
        if (more)
            next = a.dyn ? atomicAdd(a.dyn, (uint32_t)NC) : base + NC;
        for (uint32_t c = 0; c < a.kc; c++)
            for (uint32_t w = 0; w < NC; w++)
                if (c == 0 || base + w < lim) /* a warp told at c = 0 takes nothing more */
                    put(w, m * a.kc + c, base + w, c);
        if (!more)
            break;
    }
    for (uint32_t w = 0; w < NC; w++) /* the warps that got a group in the last round: no more */
        if (base + w < lim)
            put(w, (m + 1) * a.kc, GROUP_END, 0);
    if (a.dyn) {
        __threadfence(); /* this CTA's last take of a.dyn[0] before its count in a.dyn[1] */
        if (atomicAdd(a.dyn + 1, 1u) == gridDim.x - 1) {
            atomicExch(a.dyn, 0u);
            atomicExch(a.dyn + 1, 0u);
        }
    }
}

/* The consumer warps: x (XS), then each warp its rounds' groups, chunk by chunk, until GROUP_END. */
template <class C, int NC, bool XS>
__device__ void carry_consume(const sv_args &a, uint8_t *sm, uint32_t full_s, uint32_t empty_s,
                              const volatile uint32_t *gid)
{
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, depth = a.nslot / NC;
    const uint8_t *x = sv_x<NC, XS>(a, sm);
    for (uint32_t m = 0;; m++) {
        typename C::state s;
        uint32_t g = 0;
        for (uint32_t c = 0; c < a.kc; c++) {
            const uint32_t q = m * a.kc + c, slot = warp * depth + q % depth;
            mbar_wait(full_s + 8 * slot, (q / depth) & 1);
            g = gid[slot];
            if (g == GROUP_END) /* only ever at c = 0 */
                return;
            if (c == 0)
                C::init(s);
            C::template stage<XS>(a, g, c, sm + slot * a.slot_bytes, x, lane, s);
            __syncwarp(); /* every lane is done with the slot */
            if (lane == 0)
                mbar_arrive(empty_s + 8 * slot);
        }
        C::finish(a, g, lane, s);
    }
}

/* NC consumer warps + 1 producer warp; a.nst is the number of row groups here (not stages). */
template <class C, int NC, int MINB, bool XS>
__global__ void __launch_bounds__((NC + 1) * 32, MINB) kernel_gemv_carry(const sv_args a)
{
    extern __shared__ __align__(128) uint8_t sm[];
    __shared__ __align__(8) uint64_t bars[2 * NSLOT_MAX]; /* full[slot], then empty[slot] */
    __shared__ uint32_t gid[NSLOT_MAX];                   /* the group each slot holds */
    const uint32_t full_s = smem_u32(bars), empty_s = full_s + 8 * NSLOT_MAX;
    sv_prologue(a, full_s, empty_s);
    if (threadIdx.x / 32 == NC) { /* the producer touches weights (and its counters) only: no PDL wait */
        if (threadIdx.x % 32 == 0)
            carry_produce<typename C::Q, NC>(a, stage_begin(blockIdx.x, a.nst, gridDim.x),
                                             stage_begin(blockIdx.x + 1, a.nst, gridDim.x), smem_u32(sm), full_s,
                                             empty_s, gid);
        return;
    }
    pdl_wait();
    carry_consume<C, NC, XS>(a, sm, full_s, empty_s, gid);
    if (!a.early)
        pdl_trigger();
}
