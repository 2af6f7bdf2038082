/* lab/lab_check.h — the CUDA runtime check the standalone lab programs share (lab/persist, lab/stream57): a failed
 * call prints where and why and exits. Not part of the build. */
#ifndef MEMRA_LAB_CHECK_H
#define MEMRA_LAB_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#endif
