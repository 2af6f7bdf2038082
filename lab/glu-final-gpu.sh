#!/bin/bash
# lab/glu-final-gpu.sh NAME — one GPU call (~5 min): the landed fused gate|up + activation (one-tile batches on
# variant 1, f32-activation batches over 32 on variant 10) against MEMRA_DECODE_GLU=off: kernel_mmv --quick;
# memra-bench tg32x16@d512 / tg32x64@d512 with bf16 and f32 activations, on / off twice; issue 6's server twice each.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/glu-final-gpu.sh NAME}"
timeout 240 $B/kernels/kernel_mmv --quick > $OUT/km.log 2>&1; echo "rc $?" >> $OUT/km.log
ts "kernel_mmv --quick: $(tail -1 $OUT/km.log) $(grep -E '[0-9]+ checks' $OUT/km.log | tail -1)"; grep -E 'FAIL' $OUT/km.log | head -8
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for g in off on; do for a in bf16 f32; do
  MEMRA_DECODE_GLU=$g MEMRA_ACT_TYPE=$a timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-7 | tr '\n' ' ' | sed "s/^/GLU $g $a: /"; echo
done; done; done
for r in 1 2; do for g in off on; do
  mkdir -p $OUT/s; MEMRA_DECODE_GLU=$g MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s timeout 100 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
  echo "GLU $g server rc $? $(grep -E '^\| [0-9]' $OUT/s/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s
done; done
ts done
