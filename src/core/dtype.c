/* core/dtype.c — the type table. Block sizes and ids follow ggml's
 * (gguf-py GGML_QUANT_SIZES, checked by tests/unit/test_core_dtype.c). */
#include "core/dtype.h"
#include "core/checked.h"
#include "core/log.h"

#include <string.h>

static const struct dtype_info g_types[DTYPE_COUNT] = {
    [DTYPE_F32] = {"F32", 1, 4, 0},       [DTYPE_F16] = {"F16", 1, 2, 1},
    [DTYPE_BF16] = {"BF16", 1, 2, 30},    [DTYPE_F64] = {"F64", 1, 8, 28},
    [DTYPE_I8] = {"I8", 1, 1, 24},        [DTYPE_I16] = {"I16", 1, 2, 25},
    [DTYPE_I32] = {"I32", 1, 4, 26},      [DTYPE_I64] = {"I64", 1, 8, 27},
    [DTYPE_U8] = {"U8", 1, 1, -1},        [DTYPE_U16] = {"U16", 1, 2, -1},
    [DTYPE_U32] = {"U32", 1, 4, -1},      [DTYPE_U64] = {"U64", 1, 8, -1},
    [DTYPE_BOOL] = {"BOOL", 1, 1, -1},
    [DTYPE_F8_E4M3] = {"F8_E4M3", 1, 1, -1}, [DTYPE_F8_E5M2] = {"F8_E5M2", 1, 1, -1},
    [DTYPE_Q4_0] = {"Q4_0", 32, 18, 2},   [DTYPE_Q4_1] = {"Q4_1", 32, 20, 3},
    [DTYPE_Q5_0] = {"Q5_0", 32, 22, 6},   [DTYPE_Q5_1] = {"Q5_1", 32, 24, 7},
    [DTYPE_Q8_0] = {"Q8_0", 32, 34, 8},   [DTYPE_Q8_1] = {"Q8_1", 32, 40, 9},
    [DTYPE_Q2_K] = {"Q2_K", 256, 84, 10}, [DTYPE_Q3_K] = {"Q3_K", 256, 110, 11},
    [DTYPE_Q4_K] = {"Q4_K", 256, 144, 12}, [DTYPE_Q5_K] = {"Q5_K", 256, 176, 13},
    [DTYPE_Q6_K] = {"Q6_K", 256, 210, 14}, [DTYPE_Q8_K] = {"Q8_K", 256, 292, 15},
    [DTYPE_IQ2_XXS] = {"IQ2_XXS", 256, 66, 16}, [DTYPE_IQ2_XS] = {"IQ2_XS", 256, 74, 17},
    [DTYPE_IQ3_XXS] = {"IQ3_XXS", 256, 98, 18}, [DTYPE_IQ1_S] = {"IQ1_S", 256, 50, 19},
    [DTYPE_IQ4_NL] = {"IQ4_NL", 32, 18, 20},  [DTYPE_IQ3_S] = {"IQ3_S", 256, 110, 21},
    [DTYPE_IQ2_S] = {"IQ2_S", 256, 82, 22},   [DTYPE_IQ4_XS] = {"IQ4_XS", 256, 136, 23},
    [DTYPE_IQ1_M] = {"IQ1_M", 256, 56, 29},
    [DTYPE_TQ1_0] = {"TQ1_0", 256, 54, 34},   [DTYPE_TQ2_0] = {"TQ2_0", 256, 66, 35},
    [DTYPE_MXFP4] = {"MXFP4", 32, 17, 39},    [DTYPE_NVFP4] = {"NVFP4", 64, 36, 40},
    [DTYPE_Q1_0] = {"Q1_0", 128, 18, 41},
};

const struct dtype_info *dtype_info(enum dtype t)
{
    MEMRA_ASSERT((unsigned)t < DTYPE_COUNT);
    return &g_types[t];
}

bool dtype_from_ggml(uint32_t ggml_id, enum dtype *out)
{
    for (int t = 0; t < DTYPE_COUNT; t++) {
        if (g_types[t].ggml_id >= 0 && (uint32_t)g_types[t].ggml_id == ggml_id) {
            *out = (enum dtype)t;
            return true;
        }
    }
    return false;
}

bool dtype_from_safetensors(const char *name, enum dtype *out)
{
    static const struct { const char *name; enum dtype t; } names[] = {
        {"F64", DTYPE_F64}, {"F32", DTYPE_F32}, {"F16", DTYPE_F16}, {"BF16", DTYPE_BF16},
        {"I64", DTYPE_I64}, {"I32", DTYPE_I32}, {"I16", DTYPE_I16}, {"I8", DTYPE_I8},
        {"U64", DTYPE_U64}, {"U32", DTYPE_U32}, {"U16", DTYPE_U16}, {"U8", DTYPE_U8},
        {"BOOL", DTYPE_BOOL}, {"F8_E4M3", DTYPE_F8_E4M3}, {"F8_E5M2", DTYPE_F8_E5M2},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].t;
            return true;
        }
    }
    return false;
}

int dtype_row_bytes(enum dtype t, uint64_t n, uint64_t *out)
{
    const struct dtype_info *info = dtype_info(t);
    if (n % info->block_size != 0)
        return -1;
    return checked_mul_u64(n / info->block_size, info->type_size, out);
}
