#!/bin/bash
# lab/glu-fuse-gpu.sh NAME — one GPU call (~7 min): the batched decode's activation in the gate|up GEMV's epilogue
# (cuda_mmv_glu, MEMRA_DECODE_GLU; the thirty-third run's ablation put the activation kernel at ~214 µs of a 6.54 ms
# 64-row step).
#   1. kernel_mmv --quick: every check, check_glu_fused's (fused = apart bit for bit; declined where it must);
#   2. kernel_forward, fixtures + the tiny BF16 model (MEMRA_EXTRA_MODELS; its gate|up takes the fused path), bf16
#      activations with MEMRA_DECODE_GLU on and off: both pass and their tables are identical; f32 activations on;
#   3. memra-bench, random 8B BF16, bf16 activations, on / off alternated twice: tg128, tg32x16@d512, tg32x64@d512;
#   4. issue 6's server (c=64 × 512 × 256, bf16 activations), off / on alternated twice.
# Prepare: make build && lab/final-pack.sh NAME; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/glu-fuse-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
timeout 240 $B/kernels/kernel_mmv --quick > $OUT/km.log 2>&1; echo "rc $?" >> $OUT/km.log
ts "kernel_mmv --quick: $(tail -1 $OUT/km.log) $(grep -E '[0-9]+ checks' $OUT/km.log | tail -1)"; grep -E 'FAIL' $OUT/km.log | head -8
grep -E "glu-fused" $OUT/km.log | head -20
for g in on off; do
  MEMRA_DECODE_GLU=$g MEMRA_EXTRA_MODELS=gpu/tiny/hf-bf16 MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf-$g.log 2>&1; echo "rc $?" >> $OUT/kf-$g.log
  ts "kernel_forward bf16 activations, GLU $g: $(tail -1 $OUT/kf-$g.log) $(grep -E 'checks,' $OUT/kf-$g.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf-$g.log | head -6
done
ts "tables on vs off: $(diff <(grep -E '^\|' $OUT/kf-on.log) <(grep -E '^\|' $OUT/kf-off.log) > /dev/null && echo identical || echo DIFFER)"
diff <(grep -E '^\|' $OUT/kf-on.log) <(grep -E '^\|' $OUT/kf-off.log) | head -10
MEMRA_EXTRA_MODELS=gpu/tiny/hf-bf16 MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf-f32.log 2>&1; echo "rc $?" >> $OUT/kf-f32.log
ts "kernel_forward f32 activations, GLU on: $(tail -1 $OUT/kf-f32.log) $(grep -E 'checks,' $OUT/kf-f32.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf-f32.log | head -6
grep -E "tiny" $OUT/kf-on.log | head -3 | cut -c1-250
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for g in on off; do
  MEMRA_DECODE_GLU=$g MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg128,tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/GLU $g: /"; echo
done; done
MEMRA_DECODE_GLU=on timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/GLU on, f32 activations: /"; echo
for r in 1 2; do for g in off on; do
  mkdir -p $OUT/s; MEMRA_DECODE_GLU=$g MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s timeout 100 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
  echo "GLU $g server rc $? $(grep -E '^\| [0-9]' $OUT/s/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s
done; done
ts done
