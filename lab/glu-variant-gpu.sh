#!/bin/bash
# lab/glu-variant-gpu.sh NAME — one GPU call (~3 min): the fused gate|up + activation (cuda_mmv_glu) with its
# values computed before its stores, in its launch shapes (MEMRA_MMV_GLU_VARIANT: 2 = one warpgroup, 8 stages,
# one block an SM — the plain GEMV's pick; 1 = 4 stages and 0 = 3 stages, two blocks an SM) against the
# activation apart (MEMRA_DECODE_GLU=off); kernel_mmv --quick first (the fused = apart checks).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/glu-variant-gpu.sh NAME}"
timeout 240 $B/kernels/kernel_mmv --quick > $OUT/km.log 2>&1; echo "rc $?" >> $OUT/km.log
ts "kernel_mmv --quick: $(tail -1 $OUT/km.log) $(grep -E '[0-9]+ checks' $OUT/km.log | tail -1)"; grep -E 'FAIL' $OUT/km.log | head -8
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for g in off 2 1 0; do
  if [ $g = off ]; then e="MEMRA_DECODE_GLU=off"; else e="MEMRA_MMV_GLU_VARIANT=$g"; fi
  env $e MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-7 | tr '\n' ' ' | sed "s/^/$e: /"; echo
done; done
ts done
