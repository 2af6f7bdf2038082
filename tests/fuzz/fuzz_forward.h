/* tests/fuzz/fuzz_forward.h — the bound the model fuzz targets put on the one
 * forward they run for a model that opened (fuzz_backend_cpu_model,
 * fuzz_engine_hfdir): weight elements read, ≤ 2^24, so that the fuzzer keeps
 * many inputs a second while every small model's rows still go through the
 * kernels under ASan. */
#ifndef MEMRA_FUZZ_FORWARD_H
#define MEMRA_FUZZ_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"

static inline bool fuzz_forward_is_small(const struct model_config *c)
{
    const uint64_t work = (uint64_t)c->n_layers * ((uint64_t)c->dim * (c->n_heads + 2 * c->n_kv_heads) *
                                                       c->head_dim +
                                                   3ull * c->dim * (c->ffn_dim + c->moe_ffn_dim * c->n_experts)) +
                          (uint64_t)c->vocab * c->dim;
    return work < (1u << 24);
}

#endif
