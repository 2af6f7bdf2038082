#!/bin/bash
# lab/attn-dec-one-gpu.sh NAME X0 — one GPU call (~6 min): lab/attn-dec-one.patch, the tensor-core decode attention
# with q and P rounded once to bf16 (MEMRA_ATTN_DECODE_ONE=on: one product a pair, half the mma of a chunk) against
# the split numerics (off, the default), the same binary; X0 = main's pack for the digests.
#   1. kernel_attn --quick (its new test_decode_one: within 2e-2 of f64, every launch form the same bits, a row alone
#      = in its batch), and the default's decode digests against main's (the off path must keep its bits);
#   2. kernel_attn --one at 64 × 640, 16 × 640, 8 × 512, 1 × 4096 with on / off (µs a layer);
#   3. kernel_forward fixtures with bf16 activations and MEMRA_ATTN_DECODE_ONE=on (GPU vs CPU ≤ 5e-3, greedy near ties);
#   4. memra-bench tg128, tg128@d4096, tg32x16@d512, tg32x64@d512 with bf16 activations, on / off alternated twice;
#   5. fresh servers c=64 × 512 × 256 with bf16 activations, on / off twice (NO_SERVERS=1: not).
# Lands if 1 and 3 pass and 4-5 gain: then on becomes the default under MEMRA_ACT_TYPE=bf16 (backend_cuda.c sets it
# with cuda_attn_decode_set_one, as MEMRA_ATTN's fast default), docs/FLAGS.md says so.
# Prepare: `git apply lab/attn-dec-one.patch && make build && lab/final-pack.sh NAME` (X0: a pack of main);
# carry ["gpu/NAME.tar.xz", "gpu/X0.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
tar -xJf "gpu/${2:?usage: lab/attn-dec-one-gpu.sh NAME X0}.tar.xz" -C /tmp
. lab/gpu-prelude.sh "${1:?usage: lab/attn-dec-one-gpu.sh NAME X0}"
X0=/tmp/$2
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( timeout 250 $B/kernels/kernel_attn --quick > $OUT/ka.log 2>&1; echo "rc $?" >> $OUT/ka.log ) &
( timeout 250 $X0/kernels/kernel_attn --quick > /tmp/ka0.log 2>&1; echo "rc $?" >> /tmp/ka0.log ) &
wait $(jobs -p | grep -v "^$MK$")
ts "kernel_attn --quick $(tail -1 $OUT/ka.log) $(grep -E '[0-9]+ checks' $OUT/ka.log | tail -1)"; grep -E 'FAIL|CHECK failed' $OUT/ka.log | head -5
grep -A12 "q and P in one bf16 part" $OUT/ka.log | grep -E "^decode" | cut -c1-150
diff <(grep -E "^decode .*digest" /tmp/ka0.log | grep -v "one bf16") <(sed '/q and P in one bf16 part/,/^split chunks/d' $OUT/ka.log | grep -E "^decode .*digest") > /dev/null && ts "default digests = main's" || ts "default digests DIFFER from main's"
for sh in "640 64" "640 16" "512 8" "4096 1"; do for one in off on; do
  MEMRA_ATTN_DECODE=tc MEMRA_ATTN_DECODE_ONE=$one timeout 60 $B/kernels/kernel_attn --one $sh 2>&1 | grep -E "\| auto tc \| bf16 \| auto \|" | sed "s/^/$one /"
done; done
MEMRA_ACT_TYPE=bf16 MEMRA_ATTN_DECODE_ONE=on MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward bf16 activations, one: $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed|near tie' $OUT/kf.log | head -6; grep -E '^\| ' $OUT/kf.log | cut -d'|' -f2,5,7 | head -26
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for one in on off; do
  MEMRA_ATTN_DECODE_ONE=$one MEMRA_ACT_TYPE=bf16 timeout 90 $B/bin/memra-bench $M --backend cuda --tests tg128,tg128@d4096,tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$one: /"; echo
done; done
ts bench
[ "${NO_SERVERS:-0}" = 1 ] && { ts done; exit 0; }
for r in 1 2; do for one in on off; do
  mkdir -p $OUT/s; MEMRA_ATTN_DECODE_ONE=$one MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
  echo "$one server rc $? $(grep -E '^\| [0-9]' $OUT/s/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s
done; done
ts done
