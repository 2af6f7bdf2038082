#!/bin/bash
# lab/gemm-q-gpu.sh — one GPU call (~6 min after the machine starts): the standalone GGUF prefill GEMM with
# per-block promotion (lab/gemm-q/gemm_q_test.cu): every kernel form checked (T 1000: a partial token tile) against
# a double-precision sum, then timed at the 8B layer's four shapes against cuBLAS's one- and two-product GEMMs
# (T 4096 and 512), the Q8_0-like form and with --mins the Q4_K-like one. What to look for: "all checks passed";
# the layer line's TFLOP/s — the two-product GEMM (today's GGUF path under bf16 activations) is the bar, ≥ 600
# TFLOP/s what the 30 k goal needs (bench/RESULTS.md).
# Prepare: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I src lab/gemm-q/gemm_q_test.cu -lcublas \
#            -o gpu/gemm_q_test; carry ["gpu/gemm_q_test"].
cd "$(dirname "$0")/.."
B=gpu/gemm_q_test
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
ldd $B | grep -E 'cublas|not found'
echo "== checks (T 1000)"
for m in "" "--mins"; do
  for c in "--bn 128 --ns 4" "--bn 128 --ns 5" "--bn 128 --ns 6" "--bn 192 --ns 4" "--bn 192 --ns 5" \
           "--bn 128 --ns 5 --cluster 2" "--bn 192 --ns 4 --cluster 2" "--bn 192 --ns 5 --cluster 2"; do
    echo "-- $c $m"; timeout 60 $B --check-only --t 1000 $c $m; echo "rc $?"
  done
done
echo "== timing (T 4096)"
for c in "--bn 128 --ns 5" "--bn 128 --ns 6" "--bn 192 --ns 4" "--bn 192 --ns 5" "--bn 128 --ns 5 --cluster 2" \
         "--bn 192 --ns 4 --cluster 2" "--bn 192 --ns 5 --cluster 2" "--bn 192 --ns 5 --cluster 2 --raster 1" \
         "--bn 192 --ns 5 --mins" "--bn 192 --ns 5 --cluster 2 --mins"; do
  echo "-- $c"; timeout 200 $B --t 4096 $c; echo "rc $?"
done
echo "== timing (T 512)"
for c in "--bn 128 --ns 5" "--bn 128 --ns 5 --cluster 2" "--bn 192 --ns 5"; do
  echo "-- $c"; timeout 120 $B --t 512 $c; echo "rc $?"
done
