#!/bin/bash
# lab/attn-wg-land-gpu.sh NAME X0 — one GPU call (~8 min): the wgmma prefill attention in the build
# (attn_prefill_wg.cu, MEMRA_ATTN_PREFILL_WG, default on) and the decode attention's one-part default under bf16
# activations; X0 = the pack of main before them (its kernel_attn digests).
#   1. kernel_attn --quick, new and X0 side by side: 0 failed, and every digest before the new tests (test_decode_one,
#      test_prefill_wg, the "prefill wgmma" lines) equal to X0's;
#   2. kernel_attn --prefill with MEMRA_ATTN_PREFILL_BM=128 and 64 (two and one warpgroups a CTA): the table's
#      "bf16 KV: bf16" (wgmma) against "bf16 mma.sync" columns;
#   3. kernel_forward fixtures with bf16 activations (wgmma + one-part decode by default) and with f32 (untouched);
#   4. memra-bench pp512 / pp4096 at --ubatch 4096 and pp4096 at 512, bf16 activations, wgmma on / off twice; tg32x64;
#   5. fresh servers c=64 × 512 × 256 with bf16 activations, the defaults, twice (NO_SERVERS=1: not).
# Prepare: `make build && lab/final-pack.sh NAME X0`; carry ["gpu/NAME.tar.xz", "gpu/X0.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
tar -xJf "gpu/${2:?usage: lab/attn-wg-land-gpu.sh NAME X0}.tar.xz" -C /tmp
. lab/gpu-prelude.sh "${1:?usage: lab/attn-wg-land-gpu.sh NAME X0}"
X0=/tmp/$2
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( timeout 280 $B/kernels/kernel_attn --quick > $OUT/ka.log 2>&1; echo "rc $?" >> $OUT/ka.log ) &
( timeout 280 $X0/kernels/kernel_attn --quick > /tmp/ka0.log 2>&1; echo "rc $?" >> /tmp/ka0.log ) &
wait $(jobs -p | grep -v "^$MK$")
ts "kernel_attn --quick $(tail -1 $OUT/ka.log) $(grep -E '[0-9]+ checks' $OUT/ka.log | tail -1)"; grep -E 'FAIL|CHECK failed' $OUT/ka.log | head -8
grep -E "^prefill wgmma" $OUT/ka.log | cut -c1-170
diff <(grep -E "digest" /tmp/ka0.log) <(sed '/q and P in one bf16 part/,$d' $OUT/ka.log | grep -E "digest" | grep -v wgmma) > $OUT/digest-diff.txt && ts "digests = X0's ($(grep -c digest /tmp/ka0.log))" || ts "digests DIFFER from X0's: $(wc -l < $OUT/digest-diff.txt) lines"
for bm in 128 64; do
  MEMRA_ATTN_PREFILL_BM=$bm timeout 120 $B/kernels/kernel_attn --prefill > $OUT/kp$bm.log 2>&1; echo "rc $?" >> $OUT/kp$bm.log
  ts "kernel_attn --prefill BM $bm: $(tail -1 $OUT/kp$bm.log) $(grep -E '[0-9]+ checks' $OUT/kp$bm.log | tail -1)"; grep -E 'CHECK failed' $OUT/kp$bm.log | head -4
  grep -E '^\| [0-9]' $OUT/kp$bm.log | cut -d'|' -f2-4,15-20
done
for act in bf16 f32; do
  MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf-$act.log 2>&1; echo "rc $?" >> $OUT/kf-$act.log
  ts "kernel_forward $act activations: $(tail -1 $OUT/kf-$act.log) $(grep -E 'checks,' $OUT/kf-$act.log | tail -1)"; grep -E 'CHECK failed|near tie' $OUT/kf-$act.log | head -6
  grep -E '^\| ' $OUT/kf-$act.log | cut -d'|' -f2,5,7 | tr '\n' ';' | cut -c1-900; echo
done
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for w in on off; do
  MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$w ub4096: /"; echo
  MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$w ub512: /"; echo
done; done
MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg128,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-8 | tr '\n' ' '; echo
ts bench
[ "${NO_SERVERS:-0}" = 1 ] && { ts done; exit 0; }
for r in 1 2; do
  mkdir -p $OUT/s; MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
  echo "server rc $? $(grep -E '^\| [0-9]' $OUT/s/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s
done
ts done
