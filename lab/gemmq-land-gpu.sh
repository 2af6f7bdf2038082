#!/bin/bash
# lab/gemmq-land-gpu.sh NAME — one GPU call (~2 min): a change to the promoted GGUF GEMM (gemm_q.cu) checked and timed
# against the pack's baseline memra-bench (NAME/x0: `bash lab/final-pack.sh NAME BASE`). kernel_gemm --promoted (its
# checks, then the promoted GEMM's timing on the 8B shapes), kernel_forward's fixtures (f32, bf16, bf16 on a bf16
# cache), then the random 8B Q8_0 and Q4_K_M with bf16 activations — pp512 / pp4096, pp4096 at --ubatch 4096 — and,
# in the first round, exact pp4096 (two x parts) and pp64 / pp128 (the narrow form); base and new alternated, two
# rounds. Carry ["gpu/NAME.tar.xz", ".whl", "lab/gemmq-land-gpu.sh"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemmq-land-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
m8q_models q8_0,q4_k_m
timeout 150 $B/kernels/kernel_gemm --promoted > $O/kg.log 2>&1
ts "kernel_gemm --promoted rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg.log) bad, $(tail -1 $O/kg.log)"
grep -E "^\| Q(8_0|4_K) \| (xbf16|exact) promoted \| [0-9]" $O/kg.log
kf_fixtures 1- 150
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for m in q8_0 q4_k_m; do
    for b in base new; do
      MB=$([ $b = base ] && echo $B/x0/memra-bench || echo $B/bin/memra-bench)
      MB=$MB TO=90 mbench "r$r $m $b" /tmp/m8q/llama8b-$m.gguf pp512,pp4096 MEMRA_ACT_TYPE=bf16
      MB=$MB XA="--ubatch 4096" TO=90 mbench "r$r $m $b ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 MEMRA_ACT_TYPE=bf16
      [ $r = 1 ] && MB=$MB TO=90 mbench "r$r $m $b exact" /tmp/m8q/llama8b-$m.gguf pp4096
      [ $r = 1 ] && MB=$MB TO=90 mbench "r$r $m $b" /tmp/m8q/llama8b-$m.gguf pp64,pp128 MEMRA_ACT_TYPE=bf16
    done
  done
done
ts done
