#!/bin/bash
# lab/gemm-min-gpu.sh NAME — from how many tokens a span should take the prefill GEMM now that Q8_0's runs on its
# quantized values from a kept packed copy (MEMRA_GEMM_PROMOTE=auto; no dequantization a chunk, one product a part):
# memra-bench pp8 … pp64 on the random 8B Q8_0 (and Q4_K_M, still on cuBLASLt) with every span of ≥ 8 tokens on the
# GEMM (MEMRA_GEMM_MIN_TOKENS=8) against today's 48 (GEMM_MIN_DEQ_EXACT; shorter spans on the GEMVs, 8 tokens a
# weight read), f32 and bf16 activations, two rounds (~4 min after the models are made). Pack: `make build`, then
# `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemm-min-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $OUT/makeq.log 2>&1; ts "models: $(tail -1 $OUT/makeq.log)"
T=pp8,pp16,pp24,pp32,pp48,pp64
for r in 1 2; do
  ts "######## round $r"
  for act in f32 bf16; do
    for min in 48 8; do
      TO=90 mbench "q8_0 $act min $min" /tmp/m8q/llama8b-q8_0.gguf $T MEMRA_ACT_TYPE=$act MEMRA_GEMM_MIN_TOKENS=$min
    done
  done
  [ $r = 1 ] && for min in 48 8; do
    TO=90 mbench "q4_k_m bf16 min $min" /tmp/m8q/llama8b-q4_k_m.gguf $T MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_MIN_TOKENS=$min
  done
done
ts "######## done"
