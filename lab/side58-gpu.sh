#!/bin/bash
# lab/side58-gpu.sh NAME — one call (~2.5 min): a lone token's v GEMV on the side stream beside q|k's where their
# types differ (Q4_K_M's Q6_K v; cuda_decode_step.c side_v, MEMRA_DECODE_SIDE) at the pack gpu/NAME (`make build`,
# `bash lab/final-pack.sh NAME`): kernel_forward's fixtures with a tiny head_dim-128 Q4_K_M beside them (f32, bf16
# activations), then the random 8B Q4_K_M tg128 / tg128@d4096 with MEMRA_DECODE_SIDE off / on, f32 and bf16
# activations, two rounds. Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/side58-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gguf_models q4_k_m
kf_extra side q4_k_m
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for act in f32 bf16; do
    for v in off on; do
      TO=60 mbench "r$r $act side $v" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128@d4096 MEMRA_ACT_TYPE=$act \
        MEMRA_DECODE_SIDE=$v
    done
  done
done
ts done
