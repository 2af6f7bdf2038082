/* backend/cpu/backend_cpu.h — the CPU reference backend (engine/backend.h ops).
 *
 * Exact float32 arithmetic over weights dequantized on the fly (quant/), a
 * thread pool over all cores, KV pool in float32 blocks. Everything is
 * allocated at init; forward allocates nothing.
 */
#ifndef MEMRA_BACKEND_CPU_BACKEND_CPU_H
#define MEMRA_BACKEND_CPU_BACKEND_CPU_H

#include "engine/backend.h"

extern const struct backend_ops backend_cpu_ops;

#endif
