/* lab/lab_check.h — what the standalone lab programs share (lab/persist, lab/stream57): the CUDA runtime check (a
 * failed call prints where and why and exits) and the timing of a CUDA graph (warm replays, then the median of reps
 * replays between events). Not part of the build. */
#ifndef MEMRA_LAB_CHECK_H
#define MEMRA_LAB_CHECK_H

#include <cuda_runtime.h>
#include <algorithm>
#include <vector>
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

/* ms of one replay of ge on st: `warm` replays first, then the median of `reps` */
static inline float lab_graph_ms(cudaGraphExec_t ge, cudaStream_t st, int warm, int reps)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < warm; i++)
        CK(cudaGraphLaunch(ge, st));
    std::vector<float> t;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(a, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

#endif
