#!/bin/bash
# lab/gemmq-forms-gpu.sh — one GPU call (~5 min): the promoted GGUF GEMM (gemm_q.cu) in several builds side by side.
# FORMS: LABEL=PACK[:VAR=value] items (each PACK a `bash lab/final-pack.sh PACK`, all carried); for each, kernel_gemm
# --promoted (checks, then the promoted GEMM's timing on the 8B shapes: the xbf16 kept TFLOP/s of q/o, gate/up, down
# at 4096 tokens printed), then the random 8B Q8_0 and Q4_K_M pp4096 at --ubatch 4096 with bf16 activations, forms
# alternated, two rounds. Carry the packs, ".whl" and this script.
cd "$(dirname "$0")/.."
O=$OUT
F=(${FORMS:?FORMS=\"LABEL=PACK[:VAR=value] ...\"})
first=${F[0]#*=}; first=${first%%:*}
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "$first"
nvidia-smi --query-gpu=name --format=csv,noheader
m8q_models q8_0,q4_k_m
for f in "${F[@]}"; do
  p=${f#*=}; p=${p%%:*}; [ -d /tmp/$p ] || tar -xJf gpu/$p.tar.xz -C /tmp
done
for f in "${F[@]}"; do
  l=${f%%=*} p=${f#*=}; v=; [[ $p == *:* ]] && v=${p#*:}; p=${p%%:*}
  env $v timeout 150 /tmp/$p/kernels/kernel_gemm --promoted > $O/kg-$l.log 2>&1
  ts "$l kernel_gemm rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg-$l.log) bad, $(tail -1 $O/kg-$l.log)"
  k=$(grep -E "^\| Q(8_0|4_K) \| xbf16 promoted \| (q/o|gate|down)" $O/kg-$l.log | awk -F'|' '$5+0==4096 {printf "%s ", $12+0}')
  echo "$l xbf16 kept TFLOP/s at 4096 (Q8_0 q/o gate/up down, Q4_K q/o gate/up down): $k"
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for m in q8_0 q4_k_m; do
    for f in "${F[@]}"; do
      l=${f%%=*} p=${f#*=}; v=; [[ $p == *:* ]] && v=${p#*:}; p=${p%%:*}
      MB=/tmp/$p/bin/memra-bench XA="--ubatch 4096" TO=90 mbench "r$r $m $l" /tmp/m8q/llama8b-$m.gguf pp4096 \
        MEMRA_ACT_TYPE=bf16 $v
    done
  done
done
ts done
