#!/bin/bash
# lab/qkv-join-gpu.sh NAME — one GPU call (~6 min): a decode batch's q|k|v as one wgmma GEMV (cuda_layer.qkv_join,
# MEMRA_DECODE_QKV, default on) against q beside k|v (off), the same binary. Checks: kernel_mmv --quick (the members
# alone with the joined slices = the joined launch), kernel_forward fixtures (f32 and bf16 activations, and
# MEMRA_DECODE_MMV=all: a lone token on the joined launch too). Then memra-bench tg128 / tg32xN@d512 with bf16 and f32
# activations, on and off alternated, and fresh servers c=64 × 512 × 256 (bf16 activations) on and off twice.
# Prepare: `make build && lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/qkv-join-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( timeout 200 $B/kernels/kernel_mmv --quick > $OUT/km.log 2>&1; echo "rc $?" >> $OUT/km.log ) &
( MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log ) &
( MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kfb.log 2>&1; echo "rc $?" >> $OUT/kfb.log ) &
( MEMRA_DECODE_MMV=all MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kfa.log 2>&1; echo "rc $?" >> $OUT/kfa.log ) &
wait $(jobs -p | grep -v "^$MK$")
ts "kernel_mmv --quick $(tail -1 $OUT/km.log) $(grep -E '[0-9]+ checks' $OUT/km.log | tail -1)"; grep -E 'FAIL|q\|k\|v' $OUT/km.log | head -14
for f in kf kfb kfa; do ts "kernel_forward $f $(tail -1 $OUT/$f.log) $(grep -E 'checks,' $OUT/$f.log | tail -1)"; grep -E 'CHECK failed' $OUT/$f.log | head -3; done
grep -E "q\|k\|v rows" $OUT/kf.log | head -4
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for q in on off; do
  MEMRA_DECODE_QKV=$q MEMRA_ACT_TYPE=bf16 timeout 90 $B/bin/memra-bench $M --backend cuda --tests tg128,tg32x8@d512,tg32x16@d512,tg32x32@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-9 | tr '\n' ' ' | sed "s/^/bf16 $q: /"; echo
done; done
for q in on off; do
  MEMRA_DECODE_QKV=$q timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-9 | tr '\n' ' ' | sed "s/^/f32 $q: /"; echo
done
ts bench
for r in 1 2; do for q in on off; do
  mkdir -p $OUT/s$q; MEMRA_DECODE_QKV=$q MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s$q timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs$q.log 2>&1
  echo "$q server rc $? $(grep -E '^\| [0-9]' $OUT/s$q/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s$q
done; done
ts done
