/* tests/unit/cuda_host/cuda_fp16.h — host stand-ins for the few CUDA names that src/backend/cuda/gemv_quant_types.cuh
 * uses, so that tests/unit/test_quant_gpu_decoders.cpp runs the GPU's GGUF block decoders on the CPU with no CUDA
 * toolkit: this directory comes first on that one test's include path, so the header's `#include <cuda_fp16.h>`
 * lands here and no real CUDA header is ever included outside src/backend/cuda. Each stand-in does what the device
 * intrinsic does on the values the decoders give it: __ldg a plain load, __funnelshift_r the 64-bit funnel shift
 * (shift taken mod 32), __byte_perm PTX prmt's default mode (a selector nibble's top bit replicates the byte's sign),
 * __half2float the exact f16 → f32 (the CPU quant library's). */
#ifndef MEMRA_TESTS_CUDA_HOST_FP16_H
#define MEMRA_TESTS_CUDA_HOST_FP16_H

#include <stdint.h>
#include <string.h>

extern "C" float quant_f16_to_f32(uint16_t h);

#define __host__
#define __device__
#define __forceinline__ inline

struct __half {
    uint16_t x;
};
static inline __half __ushort_as_half(unsigned short v) { return __half{v}; }
static inline float __half2float(__half h) { return quant_f16_to_f32(h.x); }

struct uint2 {
    uint32_t x, y;
};
struct uint4 {
    uint32_t x, y, z, w;
};

template <class T> static inline T __ldg(const T *p)
{
    T v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t sh)
{
    sh &= 31;
    return sh ? (lo >> sh) | (hi << (32 - sh)) : lo;
}

static inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s)
{
    const uint64_t v = (uint64_t)y << 32 | x;
    uint32_t r = 0;
    for (int n = 0; n < 4; n++) {
        const uint32_t sel = (s >> (4 * n)) & 15;
        uint32_t b = (uint32_t)(v >> (8 * (sel & 7))) & 0xFF;
        if (sel & 8)
            b = (b & 0x80) ? 0xFF : 0;
        r |= b << (8 * n);
    }
    return r;
}

#endif
