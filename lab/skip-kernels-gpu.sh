#!/bin/bash
# lab/skip-kernels-gpu.sh NAME — one GPU call (~4 min): the decode step's time with one kind of kernel left out
# (lab/skip-kernels.patch: MEMRA_LAB_SKIP = substrings of kernel names, MEMRA_LAB_SKIP_MMV = wgmma GEMV shapes
# ROWSxK), so each kind's cost inside the graph (PDL overlap included) shows as the step's loss without it: what a
# fusion of it could gain at most. Numerics meaningless under a skip. memra-bench tg32x64@d512 and tg128, random 8B
# BF16, bf16 activations; the base first and last.
# Prepare: `git apply lab/skip-kernels.patch && make build && lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/skip-kernels-gpu.sh NAME}"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
run() { # label, env...
  local l=$1; shift
  env "$@" MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg128,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-7 | tr '\n' ' ' | sed "s/^/$l: /"; echo
}
run base X=0
run rope MEMRA_LAB_SKIP=kernel_qk_rope_kv
run norm MEMRA_LAB_SKIP=kernel_rmsnorm
run glu MEMRA_LAB_SKIP=kernel_glu,kernel_swiglu
run split MEMRA_LAB_SKIP=kernel_mmv_wg_split
run attn MEMRA_LAB_SKIP=kernel_attn_decode,kernel_attn_combine
run combine MEMRA_LAB_SKIP=kernel_attn_combine
run tail MEMRA_LAB_SKIP=kernel_argmax_rows,kernel_draw_rows,kernel_embed
run small MEMRA_LAB_SKIP=kernel_qk_rope_kv,kernel_rmsnorm,kernel_glu,kernel_swiglu,kernel_mmv_wg_split,kernel_attn_combine,kernel_argmax_rows,kernel_draw_rows,kernel_embed
run qkv MEMRA_LAB_SKIP_MMV=6144x4096
run o MEMRA_LAB_SKIP_MMV=4096x4096
run gu MEMRA_LAB_SKIP_MMV=28672x4096
run down MEMRA_LAB_SKIP_MMV=4096x14336
run head MEMRA_LAB_SKIP_MMV=128256x4096
run base X=0
ts done
