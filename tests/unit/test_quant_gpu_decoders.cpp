/* tests/unit/test_quant_gpu_decoders.cpp — the CUDA backend's GGUF block decoders (src/backend/cuda/
 * gemv_quant_types.cuh: what the quantized GEMV, the int8 tensor-core GEMV's neighbours and the prefill GEMM's
 * dequantization read every weight through) run on the CPU against the CPU's own dequantization
 * (quant_dequantize_row, bit-exact with gguf-py). The decoders are device code; tests/unit/cuda_host/cuda_fp16.h
 * stands in for the four CUDA names they use, so this runs in CI without a GPU or a CUDA toolkit — the kernel tests
 * (tests/kernels/, on the GPU) check the kernels around them.
 *
 * For each type, 200 rows of 8 random valid blocks (random bytes; the f16 fields finite, now and then subnormal),
 * each 32-element segment decoded through both load paths (global: get<false>, the register kernel; shared memory:
 * get<true>, the staged kernel's copies) must give value = d[e / 16]·q_e, + m[e / 16] where the type has an offset,
 * each rounded once as gemm.cu's kernel_dequant_q makes it, equal as floats to the CPU's value (a zero's sign may
 * differ: the CPU multiplies d·(q − 8), the decoder adds d·q and −8d). A row starts 16-aligned (rows are whole
 * blocks from a 256-aligned base), so its blocks take every alignment a block can have (a multiple of gcd(BS, 16)).
 * C++ (the decoders are templates): built by CMakeLists.txt's own rule, not the C tests' glob.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "backend/cuda/gemv_quant_types.cuh"

extern "C" {
#include "quant/quant.h"
}
#include "test.h"

namespace {

uint64_t g_rng = 0x2545F4914F6CDD1Dull;
uint64_t rnd()
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return g_rng;
}

/* A finite f16 of magnitude 2^-7 .. 2^-6, a subnormal one time in 16, random sign. */
uint16_t rnd_f16()
{
    const uint64_t r = rnd();
    float v = (float)(0.5 + 0.5 * (double)(r >> 40) / (double)(1ull << 24)) * 0x1p-6f;
    if ((r & 15) == 0)
        v *= 0x1p-12f;
    return quant_f32_to_f16(r & 16 ? -v : v);
}

/* The type's decoder against the CPU over 200 rows; f16: offsets of its blocks' f16 fields (-1 ends). */
template <class Q> void check(enum dtype t, const int (&f16)[3], bool sh)
{
    const int S = Q::QK / 32, nblk = 8, n = nblk * Q::QK;
    int bad = 0;
    std::vector<uint8_t> buf(nblk * Q::BS + 32);
    std::vector<float> ref(n);
    for (int rep = 0; rep < 200; rep++) {
        uint8_t *row = buf.data() + ((16 - (reinterpret_cast<uintptr_t>(buf.data()) & 15)) & 15);
        for (int i = 0; i < nblk * Q::BS; i++)
            row[i] = (uint8_t)rnd();
        for (int b = 0; b < nblk; b++)
            for (int k = 0; k < 3 && f16[k] >= 0; k++) {
                const uint16_t h = rnd_f16();
                memcpy(row + b * Q::BS + f16[k], &h, 2);
            }
        CHECK(quant_dequantize_row(t, row, ref.data(), (uint64_t)n) == 0);
        for (int b = 0; b < nblk; b++)
            for (int seg = 0; seg < S; seg++) {
                const typename Q::lane_t L = Q::lane(seg);
                uint32_t q[8];
                float d[2], m[2];
                if (sh)
                    Q::template get<true>(row + b * Q::BS, L, q, d, m);
                else
                    Q::template get<false>(row + b * Q::BS, L, q, d, m);
                for (int e = 0; e < 32; e++) {
                    const uint32_t byte = (q[e / 4] >> (8 * (e % 4))) & 0xFFu;
                    const float qf = Q::QSIGNED ? (float)(int8_t)byte : (float)byte;
                    volatile float v = d[e / 16] * qf; /* one rounding each, as kernel_dequant_q */
                    if (Q::HAS_M)
                        v = v + m[e / 16];
                    const float r = ref[b * Q::QK + seg * 32 + e];
                    if (!(v == r) && !(isnan(v) && isnan(r))) {
                        if (bad < 3)
                            fprintf(stderr, "%s%s block %d segment %d element %d: decoder %.9g (d %.9g, q %u, m %.9g), "
                                    "CPU %.9g\n", dtype_name(t), sh ? " (shared)" : "", b, seg, e, (double)v,
                                    (double)d[e / 16], byte, (double)m[e / 16], (double)r);
                        bad++;
                    }
                }
            }
    }
    CHECK_MSG(bad == 0, "%s, %s loads: %d values differ from the CPU's", dtype_name(t), sh ? "shared" : "global", bad);
}

template <class Q> void check_both(enum dtype t, const int (&f16)[3])
{
    check<Q>(t, f16, false);
    check<Q>(t, f16, true);
}

void test_q8_0() { check_both<qt_q8_0>(DTYPE_Q8_0, {0, -1, -1}); }
void test_q4_0() { check_both<qt_q4_0>(DTYPE_Q4_0, {0, -1, -1}); }
void test_q4_1() { check_both<qt_q4_1>(DTYPE_Q4_1, {0, 2, -1}); }
void test_q4_k() { check_both<qt_q4_k>(DTYPE_Q4_K, {0, 2, -1}); }
void test_q5_k() { check_both<qt_q5_k>(DTYPE_Q5_K, {0, 2, -1}); }
void test_q6_k() { check_both<qt_q6_k>(DTYPE_Q6_K, {208, -1, -1}); }
void test_iq4_xs() { check_both<qt_iq4_xs>(DTYPE_IQ4_XS, {0, -1, -1}); }
void test_q5_0() { check_both<qt_q5_0>(DTYPE_Q5_0, {0, -1, -1}); }
void test_q5_1() { check_both<qt_q5_1>(DTYPE_Q5_1, {0, 2, -1}); }
void test_iq4_nl() { check_both<qt_iq4_nl>(DTYPE_IQ4_NL, {0, -1, -1}); }
void test_q2_k() { check_both<qt_q2_k>(DTYPE_Q2_K, {80, 82, -1}); }
void test_q3_k() { check_both<qt_q3_k>(DTYPE_Q3_K, {108, -1, -1}); }

} // namespace

int main()
{
    RUN(test_q8_0);
    RUN(test_q4_0);
    RUN(test_q4_1);
    RUN(test_q4_k);
    RUN(test_q5_k);
    RUN(test_q6_k);
    RUN(test_iq4_xs);
    RUN(test_q5_0);
    RUN(test_q5_1);
    RUN(test_iq4_nl);
    RUN(test_q2_k);
    RUN(test_q3_k);
    return test_summary();
}
