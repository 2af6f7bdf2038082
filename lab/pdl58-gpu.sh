#!/bin/bash
# lab/pdl58-gpu.sh NAME — one call (~5 min): the decode GEMVs' PDL trigger at their top instead of after their loop
# (lab/pdl58.patch, MEMRA_LAB_PDL_EARLY=mma: the tensor-core Q4_K/Q6_K kernel; =all: every decode GEMV kernel), so
# that the next kernel's blocks take an SM's slots as soon as one of this GEMV's blocks leaves and ask for their
# weights in its tail, against off, at the pack gpu/NAME (`make build` with the patch, `bash lab/final-pack.sh NAME`):
# kernel_gemv --quick and kernel_forward's fixtures with a tiny head_dim-128 Q4_K_M beside them under =all,
# kernel_gemv --mma x16 off / mma (back-to-back launches of one GEMV), then the random 8B Q4_K_M (f32 and bf16
# activations) and Q8_0 (f32) tg128 / tg128x4, off / all, two rounds; and a Q6_K v (Q4_K_M's layers where v's
# type is not q|k's) on the side stream beside q|k (MEMRA_LAB_SIDE_V=on; `side`, `all+side`).
# Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/pdl58-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gguf_models q4_k_m,q8_0
kg_quick 200 MEMRA_LAB_PDL_EARLY=all
kf_extra early+side q4_k_m MEMRA_LAB_PDL_EARLY=all MEMRA_LAB_SIDE_V=on
for v in off mma; do
  MEMRA_LAB_PDL_EARLY=$v timeout 120 $B/kernels/kernel_gemv --mma x16 > $OUT/mma-$v.log 2>&1
  ts "kernel_gemv --mma x16 early $v rc $?"; grep -E "^\| Q4_K" $OUT/mma-$v.log
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for act in f32 bf16; do
    for v in off all side all+side; do
      [ $act = bf16 ] && { [ $v = all ] || [ $v = side ]; } && continue
      TO=60 mbench "r$r q4_k_m $act $v" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4 MEMRA_ACT_TYPE=$act \
        MEMRA_LAB_PDL_EARLY=${v%+side} MEMRA_LAB_SIDE_V=$([ "${v#*side}" != "$v" ] && echo on || echo off)
    done
  done
  for v in off all; do
    TO=60 mbench "r$r q8_0 f32 $v" /tmp/m8q/llama8b-q8_0.gguf tg128 MEMRA_LAB_PDL_EARLY=$v
  done
done
ts done
