/* core/dtype.h — every element type a model file can hold.
 *
 * One enum covers GGUF (ggml) types and safetensors dtypes. Quantized types come
 * in blocks: `block_size` elements are stored in `type_size` bytes, and a row's
 * length must be a multiple of block_size. Types that no kernel computes yet are
 * still known here by name and size, so a file holding them is read and listed
 * (memra-inspect) and refused only where it would have to be computed.
 */
#ifndef MEMRA_CORE_DTYPE_H
#define MEMRA_CORE_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

enum dtype {
    DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_F64,
    DTYPE_I8, DTYPE_I16, DTYPE_I32, DTYPE_I64,
    DTYPE_U8, DTYPE_U16, DTYPE_U32, DTYPE_U64, DTYPE_BOOL,
    DTYPE_F8_E4M3, DTYPE_F8_E5M2,
    /* ggml block-quantized types */
    DTYPE_Q4_0, DTYPE_Q4_1, DTYPE_Q5_0, DTYPE_Q5_1, DTYPE_Q8_0, DTYPE_Q8_1,
    DTYPE_Q2_K, DTYPE_Q3_K, DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K, DTYPE_Q8_K,
    DTYPE_IQ2_XXS, DTYPE_IQ2_XS, DTYPE_IQ3_XXS, DTYPE_IQ1_S, DTYPE_IQ4_NL,
    DTYPE_IQ3_S, DTYPE_IQ2_S, DTYPE_IQ4_XS, DTYPE_IQ1_M,
    DTYPE_TQ1_0, DTYPE_TQ2_0, DTYPE_MXFP4, DTYPE_NVFP4, DTYPE_Q1_0,
    DTYPE_COUNT
};

struct dtype_info {
    const char *name;    /* "Q4_K", "BF16", "F8_E4M3" */
    uint32_t block_size; /* elements per block (1 for plain types) */
    uint32_t type_size;  /* bytes per block */
    int32_t ggml_id;     /* GGUF type id, -1 when GGUF has none */
};

const struct dtype_info *dtype_info(enum dtype t);
static inline const char *dtype_name(enum dtype t) { return dtype_info(t)->name; }

/* Map a GGUF tensor type id; false for an id no ggml release defines. */
bool dtype_from_ggml(uint32_t ggml_id, enum dtype *out);
/* Map a safetensors dtype string ("BF16", "F8_E4M3", ...); false if unknown. */
bool dtype_from_safetensors(const char *name, enum dtype *out);

/* Bytes of a row of n elements: -1 if n is not a multiple of the block size or
 * the result overflows. */
int dtype_row_bytes(enum dtype t, uint64_t n, uint64_t *out);

#endif
