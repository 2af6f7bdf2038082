/* backend/cuda/staging.cu — pinned host staging buffers and the asynchronous
 * copies of the decode step (cuda_decode.h). cuda_upload / cuda_download in
 * cuda_ctx.cu synchronise after every copy (simple, and right for load time);
 * a decode step instead queues its input copy, the graph and its output copy
 * on the stream and waits once. Pinned memory makes the copies true DMA with no
 * bounce through a driver buffer. */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_decode.h"

extern "C" void *cuda_host_alloc(size_t bytes)
{
    void *p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault));
    return p;
}

extern "C" void cuda_host_free(void *p)
{
    if (p)
        CUDA_CHECK(cudaFreeHost(p));
}

extern "C" void cuda_upload_async(struct cuda_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx->stream));
}

extern "C" void cuda_download_async(struct cuda_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
}
