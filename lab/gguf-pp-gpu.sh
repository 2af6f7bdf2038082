#!/bin/bash
# lab/gguf-pp-gpu.sh NAME — one GPU call (~5 min): GGUF Q8_0 and Q4_K_M prefill on main's memra-bench (NAME/x0),
# re-measured since the twenty-fifth run's prefill-attention and one-GEMM-a-step changes, in the three numerics:
# exact (the default: x and the dequantized weight each split into bf16 high + low parts, three GEMMs),
# MEMRA_ACT_TYPE=bf16 (two GEMMs), MEMRA_GEMM=fast (one bf16 GEMM of the weight rounded to bf16, attention operands
# in bf16: not the CPU's numerics) — pp512 and pp4096, and pp4096 at --ubatch 4096.
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gguf-pp-gpu.sh NAME}"
python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $OUT/makeq.log 2>&1; ts "m8q: rc $?"
for f in q8_0 q4_k_m; do
  M=/tmp/m8q/llama8b-$f.gguf
  for mode in exact act-bf16 fast; do
    case $mode in exact) E="";; act-bf16) E="MEMRA_ACT_TYPE=bf16";; fast) E="MEMRA_GEMM=fast";; esac
    env $E timeout 100 $B/x0/memra-bench $M --backend cuda --tests pp512,pp4096 --reps 3 2>&1 | grep -E "^\| .*pp" | sed "s/^/$f $mode: /"
    env $E timeout 100 $B/x0/memra-bench $M --backend cuda --tests pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp" | sed "s/^/$f $mode ub4096: /"
  done
done
ts done
