#!/bin/bash
# lab/gguf-types-gpu.sh NAME — one GPU call (~3 min): the GGUF types the CPU computes and the CUDA backend expanded
# to f32 until now — Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K — on the quantized GEMV and the prefill GEMM's dequantization
# (lab/gguf-types.patch: their decoders in gemv_quant_types.cuh, checked exact against the CPU on the host by
# tests/unit/test_quant_gpu_decoders.cpp, which the patch extends to them). kernel_gemv --quick and kernel_gemm --quick check every type (the new ones
# added to their lists) against the CPU reference; kernel_gemv's timing table then gives each type's GB/s at the
# 8B shapes (the new ones beside Q4_0 / Q6_K, their nearest relatives).
# Prepare: `git apply lab/gguf-types.patch && make build -j2 JOBS=2 && bash lab/final-pack.sh NAME && git checkout
#   src tests docs`, then rebuild main; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gguf-types-gpu.sh NAME}"
for k in kernel_gemv kernel_gemm; do
  ts "$k --quick"
  timeout 240 $B/kernels/$k --quick > $OUT/$k.log 2>&1; echo "$k rc $?"
  grep -E "FAIL|cases," $OUT/$k.log | head -30
  grep -E "Q5_0|Q5_1|IQ4_NL|Q2_K|Q3_K" $OUT/$k.log | head -40
done
if [ -z "${QUICK:-}" ]; then # QUICK=1 (lab/patches-gpu.sh): the checks only
  ts "kernel_gemv timing"
  timeout 300 $B/kernels/kernel_gemv > $OUT/kernel_gemv-full.log 2>&1; echo "kernel_gemv rc $?"
  sed -n '/^## /,$p' $OUT/kernel_gemv-full.log | head -120
fi
ts done
