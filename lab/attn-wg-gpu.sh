#!/bin/bash
# lab/attn-wg-gpu.sh — one GPU call (~30 s after the machine starts): the standalone wgmma prefill-attention
# prototype (lab/attn-wg/attn_wg_test.cu) with both readings of an MN-major operand's descriptor offsets (--vdesc
# 0 / 1: the wrong one fails its check), at 4096 and 1024 tokens: the check against a double-precision softmax and
# the µs / TFLOP/s of a layer (attn_prefill.cu's bf16 mode: ~700 µs, ~196 TFLOP/s at 4096).
# Prepare: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I src lab/attn-wg/attn_wg_test.cu \
#            -o gpu/attn_wg_test; carry ["gpu/attn_wg_test"].
cd "$(dirname "$0")/.."
for vd in 0 1; do for t in 4096 1024; do
  timeout 120 gpu/attn_wg_test --vdesc $vd $t; echo "rc $?"
done; done
