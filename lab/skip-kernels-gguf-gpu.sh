#!/bin/bash
# lab/skip-kernels-gguf-gpu.sh NAME — one GPU call (~6 min): the thirty-third run's subtraction table for a lone
# GGUF token (issue 5's Q8_0 440 / Q4_K_M 740 tok/s goals): memra-bench tg128 on random 8B Q8_0 and Q4_K_M with one
# kind of kernel left out at a time (lab/skip-kernels.patch: MEMRA_LAB_SKIP = substrings of kernel names; numerics
# meaningless then) — what fusing that kind away could gain at most. The base first and last.
# Prepare: `git apply lab/skip-kernels.patch && make build && lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/skip-kernels-gguf-gpu.sh NAME}"
python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $OUT/makeq.log 2>&1; ts "m8q: rc $?"
for f in q8_0 q4_k_m; do
  M=/tmp/m8q/llama8b-$f.gguf
  run() { # label, env...
    local l=$1; shift
    env "$@" timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg128 --reps 3 2>&1 | grep -E "^\| .*tg|rror|memra-bench:" | cut -d'|' -f6-7 | tr '\n' ' ' | sed "s/^/$f $l: /"; echo
  }
  run base X=0
  run gemv MEMRA_LAB_SKIP=kernel_gemv_q
  run norm MEMRA_LAB_SKIP=kernel_rmsnorm
  run glu MEMRA_LAB_SKIP=kernel_glu,kernel_swiglu
  run rope MEMRA_LAB_SKIP=kernel_qk_rope_kv
  run attn MEMRA_LAB_SKIP=kernel_attn_decode,kernel_attn_combine
  run prep MEMRA_LAB_SKIP=kernel_gemv_prep_x
  run tail MEMRA_LAB_SKIP=kernel_argmax_rows,kernel_draw_rows,kernel_embed
  run small MEMRA_LAB_SKIP=kernel_qk_rope_kv,kernel_rmsnorm,kernel_glu,kernel_swiglu,kernel_gemv_prep_x,kernel_attn_combine,kernel_argmax_rows,kernel_draw_rows,kernel_embed
  run base X=0
done
ts done
