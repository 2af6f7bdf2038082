#!/bin/bash
# lab/x16-gpu.sh NAME — one call (~5 min): the decode GEMVs' 16-bit prepared activations under bf16 activations
# (gemv_internal.cuh's x16) at a pack of `make build` made by `lab/final-pack.sh NAME main` (NAME/x0/memra-bench: the
# build before). kernel_gemv --quick (its x16 pass among the checks), kernel_mmv --quick, kernel_moe, kernel_attn
# --quick, kernel_forward's fixtures (f32, bf16, bf16 on a bf16 KV), then the random 8B Q8_0 / Q4_K_M tg128 and
# tg128x8 before / after, two rounds with bf16 activations and one with f32 (where nothing changed). Carry
# ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/x16-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
m8q_models q8_0,q4_k_m
for k in "kernel_gemv --quick" "kernel_mmv --quick" "kernel_moe" "kernel_attn --quick"; do
  set -- $k
  timeout 200 $B/kernels/$k > $OUT/$1.log 2>&1
  ts "$k rc $? $(grep -E 'checks,' $OUT/$1.log | tail -1)"; grep -E "CHECK failed" $OUT/$1.log | head -5
done
grep -E "^check .*(x16|Q8_0 300|Q6_K 97x4096 ks 1 batch 8)" $OUT/kernel_gemv.log | head -3
kf_fixtures "" 150
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for act in bf16 bf16 f32; do
  for m in q8_0 q4_k_m; do
    MB=$B/x0/memra-bench TO=90 mbench "$m $act before" /tmp/m8q/llama8b-$m.gguf tg128,tg128x8 MEMRA_ACT_TYPE=$act
    TO=90 mbench "$m $act x16" /tmp/m8q/llama8b-$m.gguf tg128,tg128x8 MEMRA_ACT_TYPE=$act
  done
done
ts done
