/* backend/cuda/tensor_map.cuh — TMA tensor maps of row-major bf16 matrices and the 2-D box copy that reads them
 * (sm_90), shared by the kernels that load their tiles so: the prefill attention's K and V (attn_prefill_ws.cu) and
 * the promoted GGUF GEMM's x (gemm_q.cu).
 *
 * A map describes a (rows × cols) bf16 matrix of row stride `cols` elements, read in boxes of box_rows ×
 * box_cols elements laid into shared memory in the 128-byte swizzle (wgmma.cuh's swz: row r of a box at r·128
 * bytes, its 16-byte piece c at piece c ^ (r % 8)), so box_cols must be 64 (128 bytes). A box reaching past the
 * matrix's last row lands with zeros there. The driver's cuTensorMapEncodeTiled is reached through the runtime
 * (no libcuda link).
 */
#ifndef MEMRA_BACKEND_CUDA_TENSOR_MAP_CUH
#define MEMRA_BACKEND_CUDA_TENSOR_MAP_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "backend/cuda/cuda_common.cuh"

/* The box of map at (c0 columns, c1 rows) into shared memory at dst (1024-aligned within its swizzle pattern),
 * its bytes counted on the mbarrier bar. */
static __device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int32_t c0, int32_t c1,
                                                   uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

/* m ← the map of base (rows × cols bf16, 16-byte aligned, cols % 8 == 0) in boxes of box_rows × 64; what names
 * the caller in the error. */
static inline void tensor_map_bf16(CUtensorMap *m, const void *base, uint64_t cols, uint64_t rows, uint32_t box_rows,
                                   const char *what)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn; /* looked up once */
    if (!fn) {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !p)
            CUDA_FAIL("%s: the driver has no cuTensorMapEncodeTiled", what);
        fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }
    const cuuint64_t dims[2] = {cols, rows}, strides[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {64, box_rows}, one[2] = {1, 1};
    const CUresult r = fn(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims, strides, box, one,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        CUDA_FAIL("%s: cuTensorMapEncodeTiled failed (%d) for %llu × %llu", what, (int)r, (unsigned long long)rows,
                  (unsigned long long)cols);
}

#endif
