#!/bin/bash
# lab/rope58-gpu.sh NAME — one call (~4.5 min): a lone token's RoPE and KV write in the Q4_K tensor-core q|k GEMV's
# epilogue (lab/rope58.patch, MEMRA_LAB_ROPE_EPI=on: adjacent pairs in adjacent threads, the RoPE kernel's
# operations pinned in rope_rotate; a Q6_K v's row into the cache by a small kernel beside q|k; no RoPE launch),
# and the landed v beside q|k (MEMRA_DECODE_SIDE off / on), at the pack gpu/NAME (`make build` with the patch,
# `bash lab/final-pack.sh NAME`): kernel_gemv --quick, kernel_forward's fixtures with a tiny head_dim-128 Q4_K_M
# beside them under =on (batch 16 = alone checks the epilogue's bits against the RoPE kernel's), then the random 8B
# Q4_K_M tg128 / tg128@d4096, two rounds. Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/rope58-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gguf_models q4_k_m
[ -z "${QUICK:-}" ] && kg_quick 200 # QUICK=1: the fixtures and one round without the side stream's A/B (~2.5 min)
kf_extra rope q4_k_m MEMRA_LAB_ROPE_EPI=on
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for r in 1 $([ -z "${QUICK:-}" ] && echo 2); do
  [ $r = 1 ] && [ -z "${QUICK:-}" ] && TO=60 mbench "r$r f32 side off" $M tg128,tg128@d4096 MEMRA_DECODE_SIDE=off
  for act in f32 bf16; do
    TO=60 mbench "r$r $act side on" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=$act
    TO=60 mbench "r$r $act rope" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=$act MEMRA_LAB_ROPE_EPI=on
  done
done
ts done
