#!/bin/bash
# lab/accum-gguf-gpu.sh NAME — one GPU call (~6 min): the residual add in the o / down GEMMs (MEMRA_GEMM_ACCUM) on
# the GGUF prefill — the promoted GEMM's epilogue adds (Q8_0 and Q4_K weights; Q4_K_M's Q6_K halves stay on the
# two-product cuBLASLt path and do not take it): random 8B Q8_0 and Q4_K_M, pp4096 at --ubatch 4096 with bf16
# activations, MEMRA_GEMM_ACCUM off / on alternated, two rounds. Pack: `bash lab/final-pack.sh NAME`; carry
# ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/accum-gguf-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1
ts "m8q rc $? $(tail -1 /tmp/makeq.log)"
for m in q8_0 q4_k_m; do
  for r in 1 2; do
    for a in off on; do
      XA="--ubatch 4096" TO=80 mbench "r$r $m bf16-act ub4096 accum $a" /tmp/m8q/llama8b-$m.gguf pp4096 \
        MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_ACCUM=$a
    done
  done
done
ts "######## done"
