#!/bin/bash
# lab/rows-min-gpu.sh NAME — one GPU call (~1.5 min; reuses /tmp/NAME and /tmp/m8b when run after another script in
# the same call): where the tensor-core decode attention's rows form (one CTA a row, CUDA_ATTN_TC_ROWS_MIN = 32 rows)
# should start now that a row's chunks go to fewer splits (MEMRA_ATTN_SPLIT_CHUNKS, default 2: fewer merges a row).
# kernel_attn --one tables (split vs rows form, bf16 KV) at 8 × 512, 16 × 640, 32 × 640, then memra-bench
# tg32x8@d512 / tg32x16@d512 / tg32x32@d512 (bf16 activations) with MEMRA_ATTN_ROWS=8 and auto alternated twice.
# NAME/bin + NAME/kernels from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
if [ -d /tmp/m8b/hf-bf16 ] && [ -d "/tmp/$1" ]; then
  T0=$(date +%s); ts() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }; B=/tmp/$1; MK=
else
  . lab/gpu-prelude.sh "${1:?usage: lab/rows-min-gpu.sh NAME}"
fi
for db in "512 8" "640 16" "640 32"; do
  MEMRA_ATTN_DECODE=tc timeout 60 $B/kernels/kernel_attn --one $db 2>&1 | grep -E "^\| [0-9]" | grep -E "\| (split|rows) tc \| bf16 \| auto"
done
ts "attn tables"
[ -n "$MK" ] && { wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"; }
M=/tmp/m8b/hf-bf16
for r in 8 auto 8 auto; do
  MEMRA_ATTN_ROWS=$r MEMRA_ACT_TYPE=bf16 timeout 120 $B/bin/memra-bench $M --backend cuda --tests tg32x8@d512,tg32x16@d512,tg32x32@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/rows $r: /"
done
ts done
