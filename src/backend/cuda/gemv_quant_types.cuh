/* backend/cuda/gemv_quant_types.cuh — per-format decoders of the GGUF block
 * types for the quantized GEMV (gemv_quant.cu).
 *
 * Every block of QK elements (32 or 256) is cut into QK/16 segments of 16
 * elements; one thread decodes one segment of one block of each of its rows:
 *
 *   decode(blk, seg, q[16], d, m)  →  contribution = d · Σ_i q[i]·x[i] + m · Σ_i x[i]
 *
 * where q[i] are the integer quant values as exact floats and x the 16
 * activations at element offsets o0..o0+7 and o1..o1+7 of the block (x_off).
 * For most types o1 = o0 + 8 (16 consecutive elements); IQ4_XS decodes both
 * nibbles of 8 bytes (elements j and j+16) so that its codebook lookup works on
 * whole bytes.
 *
 * Bytes → floats without int→float conversions: a byte b placed in the low
 * mantissa bits of 2^23 (bit pattern 0x4B0000bb, one PRMT) is the float 2^23+b;
 * subtracting 2^23 + offset is exact. The layouts (facts of the GGUF format) are
 * spelled out in src/quant/quant_internal.h.
 *
 * ALIGN is the alignment every block start has (gcd(BS, 16) with 16-aligned
 * rows, true both in shared memory and in global memory); 16-byte pieces are
 * loaded with the widest accesses that alignment allows.
 */
#ifndef MEMRA_BACKEND_CUDA_GEMV_QUANT_TYPES_CUH
#define MEMRA_BACKEND_CUDA_GEMV_QUANT_TYPES_CUH

#include <cuda_fp16.h>
#include <stdint.h>

/* 16 bytes at p (alignment A) as 4 little-endian words. */
template <int A> static __device__ __forceinline__ uint4 ld16(const uint8_t *p)
{
    if constexpr (A >= 16) {
        return *reinterpret_cast<const uint4 *>(p);
    } else if constexpr (A == 8) {
        const uint2 a = reinterpret_cast<const uint2 *>(p)[0], b = reinterpret_cast<const uint2 *>(p)[1];
        return make_uint4(a.x, a.y, b.x, b.y);
    } else if constexpr (A == 4) {
        const uint32_t *q = reinterpret_cast<const uint32_t *>(p);
        return make_uint4(q[0], q[1], q[2], q[3]);
    } else {
        const uint16_t *h = reinterpret_cast<const uint16_t *>(p);
        return make_uint4(h[0] | (uint32_t)h[1] << 16, h[2] | (uint32_t)h[3] << 16, h[4] | (uint32_t)h[5] << 16,
                          h[6] | (uint32_t)h[7] << 16);
    }
}

static __device__ __forceinline__ float ld_f16(const uint8_t *p) /* p 2-aligned */
{
    return __half2float(*reinterpret_cast<const __half *>(p));
}

/* Byte k of w (as unsigned) plus 2^23, as a float. */
template <int K> static __device__ __forceinline__ float magic_byte(uint32_t w)
{
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540 + K));
}

/* q[4i+k] = byte k of word i − off, for the 16 bytes of v. */
template <int OFF> static __device__ __forceinline__ void bytes_to_q(uint4 v, float (&q)[16])
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    constexpr float bias = 8388608.0f + (float)OFF;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        q[4 * i + 0] = magic_byte<0>(w[i]) - bias;
        q[4 * i + 1] = magic_byte<1>(w[i]) - bias;
        q[4 * i + 2] = magic_byte<2>(w[i]) - bias;
        q[4 * i + 3] = magic_byte<3>(w[i]) - bias;
    }
}

static __device__ __forceinline__ uint4 nibbles(uint4 v, int shift)
{
    return make_uint4((v.x >> shift) & 0x0F0F0F0Fu, (v.y >> shift) & 0x0F0F0F0Fu, (v.z >> shift) & 0x0F0F0F0Fu,
                      (v.w >> shift) & 0x0F0F0F0Fu);
}

/* K-quant 6-bit sub-block scale and min (j = 0..7) from the 12 scale bytes. */
static __device__ __forceinline__ void k_scale_min(const uint8_t *s, int j, float &sc, float &mn)
{
    if (j < 4) {
        sc = (float)(s[j] & 63);
        mn = (float)(s[j + 4] & 63);
    } else {
        sc = (float)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        mn = (float)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

struct qt_q8_0 { /* f16 d | i8 qs[32]: x = d·q */
    static constexpr int QK = 32, BS = 34, ALIGN = 2;
    static constexpr bool HAS_MIN = false;
    static __device__ __forceinline__ void x_off(int seg, int &o0, int &o1) { o0 = 16 * seg; o1 = o0 + 8; }
    static __device__ __forceinline__ void decode(const uint8_t *b, int seg, float (&q)[16], float &d, float &m)
    {
        uint4 v = ld16<ALIGN>(b + 2 + 16 * seg);
        v = make_uint4(v.x ^ 0x80808080u, v.y ^ 0x80808080u, v.z ^ 0x80808080u, v.w ^ 0x80808080u); /* i8 → u8+128 */
        bytes_to_q<128>(v, q);
        d = ld_f16(b);
        m = 0.0f;
    }
};

struct qt_q4_0 { /* f16 d | qs[16]: el i<16 = qs[i]&15, i≥16 = qs[i-16]>>4; x = d·(q−8) */
    static constexpr int QK = 32, BS = 18, ALIGN = 2;
    static constexpr bool HAS_MIN = false;
    static __device__ __forceinline__ void x_off(int seg, int &o0, int &o1) { o0 = 16 * seg; o1 = o0 + 8; }
    static __device__ __forceinline__ void decode(const uint8_t *b, int seg, float (&q)[16], float &d, float &m)
    {
        bytes_to_q<8>(nibbles(ld16<ALIGN>(b + 2), 4 * seg), q);
        d = ld_f16(b);
        m = 0.0f;
    }
};

struct qt_q4_1 { /* f16 d | f16 m | qs[16]: x = d·q + m */
    static constexpr int QK = 32, BS = 20, ALIGN = 4;
    static constexpr bool HAS_MIN = true;
    static __device__ __forceinline__ void x_off(int seg, int &o0, int &o1) { o0 = 16 * seg; o1 = o0 + 8; }
    static __device__ __forceinline__ void decode(const uint8_t *b, int seg, float (&q)[16], float &d, float &m)
    {
        bytes_to_q<0>(nibbles(ld16<ALIGN>(b + 4), 4 * seg), q);
        d = ld_f16(b);
        m = ld_f16(b + 2);
    }
};

struct qt_q4_k { /* f16 d | f16 dmin | scales[12] | qs[128]; sub-block j: x = d·sc_j·q − dmin·m_j */
    static constexpr int QK = 256, BS = 144, ALIGN = 16;
    static constexpr bool HAS_MIN = true;
    static __device__ __forceinline__ void x_off(int seg, int &o0, int &o1) { o0 = 16 * seg; o1 = o0 + 8; }
    static __device__ __forceinline__ void decode(const uint8_t *b, int seg, float (&q)[16], float &d, float &m)
    {
        const int j = seg >> 1, h = seg & 1; /* sub-block of 32, half of it */
        bytes_to_q<0>(nibbles(ld16<ALIGN>(b + 16 + 32 * (j >> 1) + 16 * h), 4 * (j & 1)), q);
        float sc, mn;
        k_scale_min(b + 4, j, sc, mn);
        d = ld_f16(b) * sc;
        m = -ld_f16(b + 2) * mn;
    }
};

struct qt_q5_k { /* f16 d | f16 dmin | scales[12] | qh[32] | qs[128]; q = nibble | bit j of qh << 4 */
    static constexpr int QK = 256, BS = 176, ALIGN = 16;
    static constexpr bool HAS_MIN = true;
    static __device__ __forceinline__ void x_off(int seg, int &o0, int &o1) { o0 = 16 * seg; o1 = o0 + 8; }
    static __device__ __forceinline__ void decode(const uint8_t *b, int seg, float (&q)[16], float &d, float &m)
    {
        const int j = seg >> 1, h = seg & 1;
        const uint4 lo = nibbles(ld16<ALIGN>(b + 48 + 32 * (j >> 1) + 16 * h), 4 * (j & 1));
        const uint4 qh = ld16<ALIGN>(b + 16 + 16 * h);
        const uint4 v = make_uint4(lo.x | ((qh.x >> j) & 0x01010101u) << 4, lo.y | ((qh.y >> j) & 0x01010101u) << 4,
                                   lo.z | ((qh.z >> j) & 0x01010101u) << 4, lo.w | ((qh.w >> j) & 0x01010101u) << 4);
        bytes_to_q<0>(v, q);
        float sc, mn;
        k_scale_min(b + 4, j, sc, mn);
        d = ld_f16(b) * sc;
        m = -ld_f16(b + 2) * mn;
    }
};

struct qt_q6_k { /* ql[128] | qh[64] | i8 scales[16] | f16 d; x = d·sc·(q−32) */
    static constexpr int QK = 256, BS = 210, ALIGN = 2;
    static constexpr bool HAS_MIN = false;
    static __device__ __forceinline__ void x_off(int seg, int &o0, int &o1) { o0 = 16 * seg; o1 = o0 + 8; }
    static __device__ __forceinline__ void decode(const uint8_t *b, int seg, float (&q)[16], float &d, float &m)
    {
        /* elements 16·seg.. : half of 128, quarter k of 32 within it, 16-half l16 */
        const int half = seg >> 3, k = (seg >> 1) & 3, l16 = seg & 1;
        const uint4 lo = nibbles(ld16<ALIGN>(b + 64 * half + 32 * (k & 1) + 16 * l16), 4 * (k >> 1));
        const uint4 qh = ld16<ALIGN>(b + 128 + 32 * half + 16 * l16);
        const int s = 2 * k;
        const uint4 v = make_uint4(lo.x | ((qh.x >> s) & 0x03030303u) << 4, lo.y | ((qh.y >> s) & 0x03030303u) << 4,
                                   lo.z | ((qh.z >> s) & 0x03030303u) << 4, lo.w | ((qh.w >> s) & 0x03030303u) << 4);
        bytes_to_q<32>(v, q);
        d = ld_f16(b + 208) * (float)(int8_t)b[192 + 8 * half + l16 + 2 * k];
        m = 0.0f;
    }
};

/* IQ4_NL / IQ4_XS codebook (a fact of the format) + 128, as bytes. */
static constexpr __host__ __device__ uint32_t iq4_pack(int a, int b, int c, int d)
{
    return (uint32_t)(a + 128) | (uint32_t)(b + 128) << 8 | (uint32_t)(c + 128) << 16 | (uint32_t)(d + 128) << 24;
}

struct qt_iq4_xs { /* f16 d | u16 scales_h | scales_l[4] | qs[128]; sub-block ib: x = d·(ls−32)·kv[nibble] */
    static constexpr int QK = 256, BS = 136, ALIGN = 8;
    static constexpr bool HAS_MIN = false;
    /* segment: sub-block ib = seg/2, bytes 8a..8a+7 (a = seg&1) of its 16: low
     * nibbles are elements 8a.., high nibbles elements 16+8a.. */
    static __device__ __forceinline__ void x_off(int seg, int &o0, int &o1)
    {
        o0 = 32 * (seg >> 1) + 8 * (seg & 1);
        o1 = o0 + 16;
    }
    /* Four codebook bytes (+128) for the four nibbles of the 16-bit s. */
    static __device__ __forceinline__ uint32_t lookup4(uint32_t s)
    {
        constexpr uint32_t T0 = iq4_pack(-127, -104, -83, -65), T1 = iq4_pack(-49, -35, -22, -10);
        constexpr uint32_t T2 = iq4_pack(1, 13, 25, 38), T3 = iq4_pack(53, 69, 89, 113);
        const uint32_t a = __byte_perm(T0, T1, s & 0x7777u);             /* right where the index < 8 */
        const uint32_t bb = __byte_perm(T2, T3, s & 0x7777u);            /* right where the index ≥ 8 */
        const uint32_t hi = __byte_perm(0u, 0xFFFFFFFFu, (s >> 1) & 0x4444u); /* 0xFF where index ≥ 8 */
        return (a & ~hi) | (bb & hi);
    }
    static __device__ __forceinline__ void decode(const uint8_t *b, int seg, float (&q)[16], float &d, float &m)
    {
        const int ib = seg >> 1, a = seg & 1;
        const uint2 v = *reinterpret_cast<const uint2 *>(b + 8 + 16 * ib + 8 * a);
        const uint32_t w[2] = {v.x, v.y};
        constexpr float bias = 8388608.0f + 128.0f;
#pragma unroll
        for (int t = 0; t < 2; t++) {
#pragma unroll
            for (int p = 0; p < 2; p++) {
                /* nibbles [lo b, hi b, lo b+1, hi b+1] of bytes b = 4t+2p, b+1 */
                const uint32_t kv = lookup4((w[t] >> (16 * p)) & 0xFFFFu);
                const int e = 4 * t + 2 * p;
                q[e] = magic_byte<0>(kv) - bias;
                q[8 + e] = magic_byte<1>(kv) - bias;
                q[e + 1] = magic_byte<2>(kv) - bias;
                q[8 + e + 1] = magic_byte<3>(kv) - bias;
            }
        }
        const int sl = (b[4 + (ib >> 1)] >> (4 * (ib & 1))) & 0xF;
        const int sh = (*reinterpret_cast<const uint16_t *>(b + 2) >> (2 * ib)) & 3;
        d = ld_f16(b) * (float)((sl | sh << 4) - 32);
        m = 0.0f;
    }
};

#endif
