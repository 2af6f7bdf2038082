#!/bin/bash
# lab/flat57-gpu.sh NAME — one call (~4 min): Q4_K matrices repacked at load into 16-row tiles whose superblock pairs
# lie back to back, the tensor-core GEMV's ring reading one contiguous 4608-byte item a copy (lab/flat57.patch,
# MEMRA_LAB_MMA_FLAT=on; lab/stream57's flat items: 4-7.5 % faster with no arithmetic) against off, at the pack
# gpu/NAME (`make build` with the patch, `bash lab/final-pack.sh NAME`): kernel_gemv --quick with it on, kernel_gemv
# --mma x16 off / on, kernel_forward's fixtures with a tiny head_dim-128 Q4_K_M beside them, on, then the random 8B
# Q4_K_M tg128 / tg128x4 (bf16 and f32 activations) off / on, two rounds. Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/flat57-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gguf_models q4_k_m
MEMRA_LAB_MMA_FLAT=on timeout 200 $B/kernels/kernel_gemv --quick > $OUT/kernel_gemv.log 2>&1
ts "kernel_gemv --quick flat rc $? $(grep -E 'checks,' $OUT/kernel_gemv.log | tail -1)"
grep -E "CHECK failed" $OUT/kernel_gemv.log | head -5
for v in off on; do
  MEMRA_LAB_MMA_FLAT=$v timeout 120 $B/kernels/kernel_gemv --mma x16 > $OUT/mma-$v.log 2>&1
  ts "kernel_gemv --mma x16 flat $v rc $?"; grep -E "^\| Q4_K" $OUT/mma-$v.log
done
kf_extra flat q4_k_m MEMRA_LAB_MMA_FLAT=on
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for r in 1 2; do
  for act in bf16 f32; do
    for v in off on; do
      TO=90 mbench "r$r $act flat $v" $M tg128,tg128x4 MEMRA_ACT_TYPE=$act MEMRA_LAB_MMA_FLAT=$v
    done
  done
done
ts done
