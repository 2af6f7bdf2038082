#!/bin/bash
# lab/split57-gpu.sh NAME — one call (~4 min): the tensor-core GEMV's Q4_K stages refilled a superblock at a time
# (MEMRA_LAB_MMA_SPLIT=on, gemv_mma.cu SPLIT: 3 of 4 halves in flight while one is computed, where whole-stage
# refills leave 1 of 2 stages) against off, at the pack gpu/NAME (`make build`, `bash lab/final-pack.sh NAME`):
# kernel_gemv --quick and kernel_forward's fixtures with it on, kernel_gemv --mma x16 off / on, then the random 8B
# Q4_K_M tg128 / tg128x4 (f32 and bf16 activations) off / on, two rounds. Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/split57-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
m8q_models q4_k_m
MEMRA_LAB_MMA_SPLIT=on timeout 200 $B/kernels/kernel_gemv --quick > $OUT/kernel_gemv.log 2>&1
ts "kernel_gemv --quick split rc $? $(grep -E 'checks,' $OUT/kernel_gemv.log | tail -1)"
grep -E "CHECK failed" $OUT/kernel_gemv.log | head -5
for v in off on; do
  MEMRA_LAB_MMA_SPLIT=$v timeout 120 $B/kernels/kernel_gemv --mma x16 > $OUT/mma-$v.log 2>&1
  ts "kernel_gemv --mma x16 split $v rc $?"; grep -E "^\| Q4_K" $OUT/mma-$v.log
done
export MEMRA_LAB_MMA_SPLIT=on; kf_fixtures s 150; unset MEMRA_LAB_MMA_SPLIT
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for r in 1 2; do
  for act in f32 bf16; do
    for v in off on; do
      TO=90 mbench "r$r $act split $v" $M tg128,tg128x4 MEMRA_ACT_TYPE=$act MEMRA_LAB_MMA_SPLIT=$v
    done
  done
done
ts done
