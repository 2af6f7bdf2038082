/* backend/cuda/gemv_quant_types.cuh — per-format decoders of the GGUF block
 * types for the quantized GEMV (gemv_quant.cu), and the exact integer dot
 * product they feed.
 *
 * Every block of QK elements (32 or 256) is cut into QK/32 segments of 32
 * consecutive elements (a Q*_0/Q*_1 block, a K-quant or IQ4_XS sub-block).
 * lane(seg) precomputes what does not change from block to block (offsets,
 * shifts); get(block, lane) then returns
 *   q[8]        the 32 quant values as bytes (signed when QSIGNED), in element order;
 *   d[2], m[2]  so that elements 16h..16h+15 contribute d[h]·Σ q_i·x_i + m[h]·Σ x_i
 *               (d[0] = d[1], m[0] = m[1] unless TWO_SCALES: Q6_K has a scale per 16).
 *
 * Activations arrive as 24-bit integers split into three signed byte planes,
 * one f32 scale per block of 32 or 128 elements (gemv_internal.cuh,
 * gemv_prep_x4): x_i = s·X_i with X_i = 65536·X2_i + 256·X1_i + X0_i.
 * Σ q_i·X_i is then computed exactly with dp4a (4 byte products an
 * instruction) — 0.75 instruction an element instead of 3 for byte→float
 * conversion and FMA — and converted to float once per segment. Relative to
 * an f32 dot product, the only extra error is X's rounding, ≤ 2^-23.99 of the
 * block's largest |x|. With bf16 activations X0 is zero (16-bit X, gemv_prep_x4's
 * x16) and X16 true skips it.
 *
 * Loads: block starts have alignment gcd(BS, 16) (rows are whole blocks and
 * cudaMalloc'd memory is 256-byte aligned): 16-byte loads for Q4_K/Q5_K, 8 for
 * IQ4_XS, 4 for Q4_1; the 2-aligned types (Q8_0, Q4_0, Q6_K) read unaligned
 * bytes as aligned words and funnel shifts. get<false> reads global memory
 * through the read-only path (the register kernel), get<true> shared memory
 * (the staged kernel's copies, placed so that each block keeps that alignment). The layouts (facts of the GGUF
 * format) are spelled out in src/quant/quant_internal.h.
 */
#ifndef MEMRA_BACKEND_CUDA_GEMV_QUANT_TYPES_CUH
#define MEMRA_BACKEND_CUDA_GEMV_QUANT_TYPES_CUH

#include <cuda_fp16.h>
#include <stdint.h>

/* ---- loads --------------------------------------------------------------- */

/* A load from global memory through the read-only path (SH false) or from
 * shared memory (SH true: the staged kernel's copies, gemv_quant.cu). */
template <bool SH, class T> static __device__ __forceinline__ T ldq(const T *p)
{
    if constexpr (SH)
        return *p;
    else
        return __ldg(p);
}

/* N·4 bytes (N = 4 or 8) at a 2-aligned address: aligned words, shifted into
 * place. The last word is read only when needed (never past the bytes asked). */
template <int N, bool SH = false> static __device__ __forceinline__ void ld_a2(const uint8_t *p, uint32_t *o)
{
    /* p minus its misalignment (pointer arithmetic, not an integer cast: the
     * compiler keeps knowing which memory space p points into) */
    const uint32_t mis = (uint32_t)(reinterpret_cast<uintptr_t>(p) & 3);
    const uint32_t *b = reinterpret_cast<const uint32_t *>(p - mis);
    const uint32_t sh = mis * 8;
    uint32_t w[N + 1];
#pragma unroll
    for (int i = 0; i < N; i++)
        w[i] = ldq<SH>(b + i);
    w[N] = sh ? ldq<SH>(b + N) : 0u;
#pragma unroll
    for (int i = 0; i < N; i++)
        o[i] = __funnelshift_r(w[i], w[i + 1], sh);
}

/* N·4 bytes at a 16-aligned address (N a multiple of 4). */
template <int N, bool SH = false> static __device__ __forceinline__ void ld_a16(const uint8_t *p, uint32_t *o)
{
#pragma unroll
    for (int i = 0; i < N / 4; i++) {
        const uint4 v = ldq<SH>(reinterpret_cast<const uint4 *>(p) + i);
        o[4 * i] = v.x, o[4 * i + 1] = v.y, o[4 * i + 2] = v.z, o[4 * i + 3] = v.w;
    }
}

template <bool SH = false> static __device__ __forceinline__ float ld_f16(const uint8_t *p) /* p 2-aligned */
{
    return __half2float(__ushort_as_half(ldq<SH>(reinterpret_cast<const unsigned short *>(p))));
}

static __device__ __forceinline__ uint32_t lo_nib(uint32_t w) { return w & 0x0F0F0F0Fu; }
static __device__ __forceinline__ uint32_t hi_nib(uint32_t w) { return (w >> 4) & 0x0F0F0F0Fu; }

/* ---- exact Σ q·X over 16 elements ---------------------------------------- */

/* c + Σ of the 4 byte products of a (signed bytes when QS, else unsigned)
 * and b (signed: the activations' digits). */
template <bool QS> static __device__ __forceinline__ int dp4a(uint32_t a, uint32_t b, int c)
{
    int d;
    if constexpr (QS)
        asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    else
        asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* Σ_i q_i·X_i over N words (4·N elements) with X = 65536·X2 + 256·X1 + X0
 * (signed digits, |X_k| ≤ 128): the two low planes fit one int (|q| ≤ 240 —
 * Q4_K's in-place high nibbles — so |Σ| ≤ 32·240·128·257 < 2^31), the top
 * plane is scaled in float. */
template <bool QSIGNED, int N, bool X16>
static __device__ __forceinline__ float dot_qx(const uint32_t *q, const uint32_t *x0, const uint32_t *x1,
                                               const uint32_t *x2)
{
    int s0 = 0, s1 = 0, s2 = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        if constexpr (!X16) /* X0 = 0 under X16: s0 stays 0, the same value */
            s0 = dp4a<QSIGNED>(q[i], x0[i], s0);
        s1 = dp4a<QSIGNED>(q[i], x1[i], s1);
        s2 = dp4a<QSIGNED>(q[i], x2[i], s2);
    }
    return fmaf((float)s2, 65536.0f, (float)(s1 * 256 + s0));
}

/* ---- formats --------------------------------------------------------------- */

/* Everything about a lane's segment that does not change from block to block
 * (offsets, shifts) is computed once by lane(seg); get() then only loads and
 * unpacks. */

/* K-quant 6-bit scale and min of sub-block j from the 16-byte block header
 * h = {d|dmin, scales[0..3], scales[4..7], scales[8..11]}: for j < 4 the low
 * 6 bits of scales[j] / scales[j+4]; for j ≥ 4 a nibble of scales[j+4] with
 * the top 2 bits of scales[j-4] / scales[j]. sh = 8·(j%4), hi = j ≥ 4. */
static __device__ __forceinline__ void k_scale_min(const uint4 &h, uint32_t sh, bool hi, float &sc, float &mn)
{
    const uint32_t a = h.y >> sh, b = h.z >> sh, c = h.w >> sh;
    const uint32_t s = hi ? ((c & 0xF) | ((a >> 2) & 0x30)) : (a & 63);
    const uint32_t n = hi ? (((c >> 4) & 0xF) | ((b >> 2) & 0x30)) : (b & 63);
    sc = (float)s;
    mn = (float)n;
}

static __device__ __forceinline__ float f16_lo(uint32_t v) { return __half2float(__ushort_as_half((unsigned short)(v & 0xFFFF))); }
static __device__ __forceinline__ float f16_hi(uint32_t v) { return __half2float(__ushort_as_half((unsigned short)(v >> 16))); }

struct qt_q8_0 { /* f16 d | i8 qs[32]: x = d·q */
    static constexpr int QK = 32, BS = 34;
    static constexpr bool QSIGNED = true, HAS_M = false, TWO_SCALES = false;
    struct lane_t {};
    static __device__ __forceinline__ lane_t lane(int) { return {}; }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        ld_a2<8, SH>(b + 2, q);
        d[0] = d[1] = ld_f16<SH>(b);
        m[0] = m[1] = 0.0f;
    }
};

struct qt_q4_0 { /* f16 d | qs[16]: el i<16 = qs[i]&15, i≥16 = qs[i-16]>>4; x = d·(q−8) */
    static constexpr int QK = 32, BS = 18;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = false;
    struct lane_t {};
    static __device__ __forceinline__ lane_t lane(int) { return {}; }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        uint32_t w[4];
        ld_a2<4, SH>(b + 2, w);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = lo_nib(w[i]);
            q[4 + i] = hi_nib(w[i]);
        }
        d[0] = d[1] = ld_f16<SH>(b);
        m[0] = m[1] = -8.0f * d[0];
    }
};

struct qt_q4_1 { /* f16 d | f16 m | qs[16]: x = d·q + m */
    static constexpr int QK = 32, BS = 20;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = false;
    struct lane_t {};
    static __device__ __forceinline__ lane_t lane(int) { return {}; }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        const uint32_t *w = reinterpret_cast<const uint32_t *>(b);
        const uint32_t dm = ldq<SH>(w);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t v = ldq<SH>(w + 1 + i);
            q[i] = lo_nib(v);
            q[4 + i] = hi_nib(v);
        }
        d[0] = d[1] = f16_lo(dm);
        m[0] = m[1] = f16_hi(dm);
    }
};

/* The 4 bits v & 15 as bit 0 of the word's 4 bytes (b0 → byte 0, ..., b3 → byte 3). */
static __device__ __forceinline__ uint32_t bits_to_bytes(uint32_t v) { return ((v & 15u) * 0x00204081u) & 0x01010101u; }

/* Q5_0 / Q5_1's 32 values: element i < 16 the low nibble of qs[i] with bit i of qh as its fifth, i ≥ 16 the high
 * nibble of qs[i − 16] with bit i of qh (w: qs as 4 words). */
static __device__ __forceinline__ void q5_values(const uint32_t (&w)[4], uint32_t qh, uint32_t (&q)[8])
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        q[i] = lo_nib(w[i]) | bits_to_bytes(qh >> (4 * i)) << 4;
        q[4 + i] = hi_nib(w[i]) | bits_to_bytes(qh >> (16 + 4 * i)) << 4;
    }
}

struct qt_q5_0 { /* f16 d | u32 qh | qs[16]: el i<16 = qs[i]&15 | bit i of qh << 4, i≥16 = qs[i-16]>>4 | …; x = d·(q−16) */
    static constexpr int QK = 32, BS = 22;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = false;
    struct lane_t {};
    static __device__ __forceinline__ lane_t lane(int) { return {}; }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        uint32_t w[4];
        ld_a2<4, SH>(b + 6, w);
        const uint32_t qh = (uint32_t)ldq<SH>(reinterpret_cast<const unsigned short *>(b + 2)) |
                            (uint32_t)ldq<SH>(reinterpret_cast<const unsigned short *>(b + 4)) << 16;
        q5_values(w, qh, q);
        d[0] = d[1] = ld_f16<SH>(b);
        m[0] = m[1] = -16.0f * d[0];
    }
};

struct qt_q5_1 { /* f16 d | f16 m | u32 qh | qs[16]: q as Q5_0's; x = d·q + m */
    static constexpr int QK = 32, BS = 24;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = false;
    struct lane_t {};
    static __device__ __forceinline__ lane_t lane(int) { return {}; }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        const uint32_t *wb = reinterpret_cast<const uint32_t *>(b); /* 8-aligned blocks */
        const uint32_t dm = ldq<SH>(wb), qh = ldq<SH>(wb + 1);
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            w[i] = ldq<SH>(wb + 2 + i);
        q5_values(w, qh, q);
        d[0] = d[1] = f16_lo(dm);
        m[0] = m[1] = f16_hi(dm);
    }
};

struct qt_q4_k { /* f16 d | f16 dmin | scales[12] | qs[128]; sub-block j: x = d·sc_j·q − dmin·m_j */
    static constexpr int QK = 256, BS = 144;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = false;
    /* sub-block j: nibble j&1 of qs[32·(j/2)..]. The high nibble is used in
     * place (w & 0xF0F0F0F0 = 16·q) with d scaled by 1/16: one op a word. */
    struct lane_t { int qoff; uint32_t mask, ssh; float dscale; bool hi; };
    static __device__ __forceinline__ lane_t lane(int j)
    {
        return {16 + 32 * (j >> 1), (j & 1) ? 0xF0F0F0F0u : 0x0F0F0F0Fu, 8u * (uint32_t)(j & 3),
                (j & 1) ? 0.0625f : 1.0f, j >= 4};
    }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &L, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        const uint4 h = ldq<SH>(reinterpret_cast<const uint4 *>(b));
        uint32_t w[8];
        ld_a16<8, SH>(b + L.qoff, w);
#pragma unroll
        for (int i = 0; i < 8; i++)
            q[i] = w[i] & L.mask;
        float sc, mn;
        k_scale_min(h, L.ssh, L.hi, sc, mn);
        d[0] = d[1] = f16_lo(h.x) * (sc * L.dscale);
        m[0] = m[1] = -f16_hi(h.x) * mn;
    }
};

struct qt_q5_k { /* f16 d | f16 dmin | scales[12] | qh[32] | qs[128]; q = nibble | bit j of qh << 4 */
    static constexpr int QK = 256, BS = 176;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = false;
    struct lane_t { int qoff; uint32_t nsh, j, ssh; bool hi; };
    static __device__ __forceinline__ lane_t lane(int j)
    {
        return {48 + 32 * (j >> 1), 4u * (uint32_t)(j & 1), (uint32_t)j, 8u * (uint32_t)(j & 3), j >= 4};
    }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &L, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        const uint4 h = ldq<SH>(reinterpret_cast<const uint4 *>(b));
        uint32_t w[8], qh[8];
        ld_a16<8, SH>(b + L.qoff, w);
        ld_a16<8, SH>(b + 16, qh);
#pragma unroll
        for (int i = 0; i < 8; i++)
            q[i] = ((w[i] >> L.nsh) & 0x0F0F0F0Fu) | ((qh[i] >> L.j) & 0x01010101u) << 4;
        float sc, mn;
        k_scale_min(h, L.ssh, L.hi, sc, mn);
        d[0] = d[1] = f16_lo(h.x) * sc;
        m[0] = m[1] = -f16_hi(h.x) * mn;
    }
};

struct qt_q6_k { /* ql[128] | qh[64] | i8 scales[16] | f16 d; x = d·sc·(q−32), a scale per 16 */
    static constexpr int QK = 256, BS = 210;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = true;
    struct lane_t { int loff, hoff, soff; uint32_t nsh, hsh; };
    static __device__ __forceinline__ lane_t lane(int seg)
    {
        /* elements 32·seg..: half (128) seg/4, quarter k = seg%4 within it:
         * ql[64·half + 32·(k&1) + l] nibble k>>1, qh[32·half + l] bits 2k,
         * scales[8·half + 2k + l/16] */
        const int half = seg >> 2, k = seg & 3;
        return {64 * half + 32 * (k & 1), 128 + 32 * half, 192 + 8 * half + 2 * k, 4u * (uint32_t)(k >> 1),
                2u * (uint32_t)k};
    }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &L, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        uint32_t w[8], qh[8];
        ld_a2<8, SH>(b + L.loff, w);
        ld_a2<8, SH>(b + L.hoff, qh);
#pragma unroll
        for (int i = 0; i < 8; i++)
            q[i] = ((w[i] >> L.nsh) & 0x0F0F0F0Fu) | ((qh[i] >> L.hsh) & 0x03030303u) << 4;
        const float dd = ld_f16<SH>(b + 208);
        const uint32_t sc = ldq<SH>(reinterpret_cast<const unsigned short *>(b + L.soff)); /* 2 i8 scales */
        d[0] = dd * (float)(int8_t)(sc & 0xFF);
        d[1] = dd * (float)(int8_t)(sc >> 8);
        m[0] = -32.0f * d[0];
        m[1] = -32.0f * d[1];
    }
};

/* IQ4_NL / IQ4_XS codebook (a fact of the format), as signed bytes. */
static constexpr __host__ __device__ uint32_t iq4_pack(int a, int b, int c, int d)
{
    return (uint32_t)(a & 0xFF) | (uint32_t)(b & 0xFF) << 8 | (uint32_t)(c & 0xFF) << 16 | (uint32_t)(d & 0xFF) << 24;
}

struct qt_iq4_xs { /* f16 d | u16 scales_h | scales_l[4] | qs[128]; sub-block ib: x = d·(ls−32)·kv[nibble] */
    static constexpr int QK = 256, BS = 136;
    static constexpr bool QSIGNED = true, HAS_M = false, TWO_SCALES = false;
    /* Codebook bytes for the four nibble indices held one per byte in v. */
    static __device__ __forceinline__ uint32_t lookup4(uint32_t v)
    {
        constexpr uint32_t T0 = iq4_pack(-127, -104, -83, -65), T1 = iq4_pack(-49, -35, -22, -10);
        constexpr uint32_t T2 = iq4_pack(1, 13, 25, 38), T3 = iq4_pack(53, 69, 89, 113);
        const uint32_t s = (v | (v >> 12)) & 0xFFFFu;                    /* nibbles: idx0, idx2, idx1, idx3 */
        const uint32_t a = __byte_perm(T0, T1, s & 0x7777u);             /* right where the index < 8 */
        const uint32_t c = __byte_perm(T2, T3, s & 0x7777u);             /* right where the index ≥ 8 */
        const uint32_t hi = __byte_perm(0u, 0xFFFFFFFFu, (s >> 1) & 0x4444u); /* 0xFF where index ≥ 8 */
        return __byte_perm((a & ~hi) | (c & hi), 0u, 0x3120);            /* back to idx0..idx3 order */
    }
    struct lane_t { int qoff, soff; uint32_t lsh, hsh; };
    static __device__ __forceinline__ lane_t lane(int ib) /* sub-block ib: qs[16·ib..], low nibbles then high */
    {
        return {8 + 16 * ib, 4 + (ib >> 1), 4u * (uint32_t)(ib & 1), 16u + 2u * (uint32_t)ib};
    }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &L, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        const uint2 v0 = ldq<SH>(reinterpret_cast<const uint2 *>(b + L.qoff));
        const uint2 v1 = ldq<SH>(reinterpret_cast<const uint2 *>(b + L.qoff + 8));
        const uint32_t w[4] = {v0.x, v0.y, v1.x, v1.y};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = lookup4(lo_nib(w[i]));
            q[4 + i] = lookup4(hi_nib(w[i]));
        }
        const uint32_t h = ldq<SH>(reinterpret_cast<const uint32_t *>(b)); /* d | scales_h */
        const int sl = (ldq<SH>(b + L.soff) >> L.lsh) & 0xF;
        const int sh = (int)(h >> L.hsh) & 3;
        d[0] = d[1] = f16_lo(h) * (float)((sl | sh << 4) - 32);
        m[0] = m[1] = 0.0f;
    }
};

struct qt_iq4_nl { /* f16 d | qs[16]: el i<16 = kv[qs[i]&15], i≥16 = kv[qs[i-16]>>4]; x = d·kv */
    static constexpr int QK = 32, BS = 18;
    static constexpr bool QSIGNED = true, HAS_M = false, TWO_SCALES = false;
    struct lane_t {};
    static __device__ __forceinline__ lane_t lane(int) { return {}; }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        uint32_t w[4];
        ld_a2<4, SH>(b + 2, w);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = qt_iq4_xs::lookup4(lo_nib(w[i]));
            q[4 + i] = qt_iq4_xs::lookup4(hi_nib(w[i]));
        }
        d[0] = d[1] = ld_f16<SH>(b);
        m[0] = m[1] = 0.0f;
    }
};

struct qt_q2_k { /* scales[16] | qs[64] | f16 d | f16 dmin; a scale and a min per 16 (TWO_SCALES) */
    static constexpr int QK = 256, BS = 84;
    static constexpr bool QSIGNED = false, HAS_M = true, TWO_SCALES = true;
    /* segment seg: elements 128h + 32k + i (h = seg/4, k = seg%4, i < 32) are bits 2k..2k+1 of qs[32h + i];
     * group g = i/16 has scale byte scales[8h + 2k + g]: d·(s & 15), min dmin·(s >> 4) */
    struct lane_t { int qoff, soff; uint32_t sh; };
    static __device__ __forceinline__ lane_t lane(int seg)
    {
        const int h = seg >> 2, k = seg & 3;
        return {16 + 32 * h, 8 * h + 2 * k, 2u * (uint32_t)k};
    }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &L, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        const uint32_t *wq = reinterpret_cast<const uint32_t *>(b + L.qoff); /* 4-aligned blocks */
#pragma unroll
        for (int i = 0; i < 8; i++)
            q[i] = (ldq<SH>(wq + i) >> L.sh) & 0x03030303u;
        const uint32_t dd = ldq<SH>(reinterpret_cast<const uint32_t *>(b + 80));
        const uint32_t sc = ldq<SH>(reinterpret_cast<const unsigned short *>(b + L.soff)); /* the 2 groups' bytes */
        const float dv = f16_lo(dd), mv = f16_hi(dd);
        d[0] = dv * (float)(sc & 15u);
        d[1] = dv * (float)((sc >> 8) & 15u);
        m[0] = -(mv * (float)((sc >> 4) & 15u));
        m[1] = -(mv * (float)((sc >> 12) & 15u));
    }
};

struct qt_q3_k { /* hmask[32] | qs[64] | scales[12] | f16 d; a 6-bit scale (−32) per 16 (TWO_SCALES) */
    static constexpr int QK = 256, BS = 110;
    static constexpr bool QSIGNED = true, HAS_M = false, TWO_SCALES = true;
    /* segment seg (h = seg/4, k = seg%4, j = seg): element 128h + 32k + i has low bits 2k..2k+1 of qs[32h + i]
     * and q = low − 4 where bit j of hmask[i] is 0 (the byte low | 0xFC); group s = 8h + 2k + g takes the low
     * nibble of scales[2k + g] (>> 4h) and 2 bits of scales[8 + 2(k%2) + g] >> (4h + 2(k/2)) */
    struct lane_t { int qoff, loff, hoff; uint32_t sh, j, lsh, hsh; };
    static __device__ __forceinline__ lane_t lane(int seg)
    {
        const int h = seg >> 2, k = seg & 3;
        return {32 + 32 * h, 96 + 2 * k, 104 + 2 * (k & 1), 2u * (uint32_t)k, (uint32_t)seg, 4u * (uint32_t)h,
                4u * (uint32_t)h + 2u * (uint32_t)(k >> 1)};
    }
    template <bool SH = false>
    static __device__ __forceinline__ void get(const uint8_t *b, const lane_t &L, uint32_t (&q)[8], float (&d)[2],
                                               float (&m)[2])
    {
        uint32_t w[8], hm[8];
        ld_a2<8, SH>(b + L.qoff, w);
        ld_a2<8, SH>(b, hm);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const uint32_t neg = ((hm[i] >> L.j) & 0x01010101u) ^ 0x01010101u; /* 1 where the byte is q − 4 */
            q[i] = ((w[i] >> L.sh) & 0x03030303u) | neg * 0xFCu;
        }
        const uint32_t lo = ldq<SH>(reinterpret_cast<const unsigned short *>(b + L.loff));
        const uint32_t hi = ldq<SH>(reinterpret_cast<const unsigned short *>(b + L.hoff));
        const float dv = ld_f16<SH>(b + 108);
        const int s0 = (int)(((lo >> L.lsh) & 15u) | ((hi >> L.hsh) & 3u) << 4) - 32;
        const int s1 = (int)(((lo >> (8 + L.lsh)) & 15u) | ((hi >> (8 + L.hsh)) & 3u) << 4) - 32;
        d[0] = dv * (float)s0;
        d[1] = dv * (float)s1;
        m[0] = m[1] = 0.0f;
    }
};

#endif
