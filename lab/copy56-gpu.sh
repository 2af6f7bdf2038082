#!/bin/bash
# lab/copy56-gpu.sh NAME — one call (~2.5 min): the tensor-core GEMV's ring copies 8 lanes a row (gemv_mma.cu issue_w)
# at a pack of `make build` made by `lab/final-pack.sh NAME BASE` (BASE: a pack of 7211915, the copy before; the
# session's own base was l56a, lab/lone56.patch's build, whose MEMRA_LAB_MMA_LONE=off is that code). kernel_gemv
# --quick, then the random 8B Q4_K_M tg128 / tg128x4 with f32 (two rounds) and bf16 activations (one), before /
# after (the fixtures passed with this copy in call 1).
# Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/copy56-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
m8q_models q4_k_m
kg_quick 200
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for r in 1 2; do
  for act in f32 $([ $r = 1 ] && echo bf16); do
    MB=$B/x0/memra-bench TO=90 mbench "r$r $act before" $M tg128,tg128x4 MEMRA_ACT_TYPE=$act MEMRA_LAB_MMA_LONE=off
    TO=90 mbench "r$r $act copy" $M tg128,tg128x4 MEMRA_ACT_TYPE=$act
  done
done
ts done
