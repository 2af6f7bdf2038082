#!/bin/bash
# Session 17, call 4. b33/s = wip/mmv-144-small (main 4bf2b48 + one-warpgroup 144-row wgmma variants 14/15/16 = 4/6/8
# stages for ≤ 32 tokens, pick 15 for q/o/down at ≤ 32 tokens; kernel_mmv, bin/memra-bench); b33/a/bin = main's
# memra-bench (SASS of 7beeeaf). The same bits in both (every variant: kernel_mmv).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh b33
timeout 100 $B/s/kernel_mmv --quick > $OUT/km-s.log 2>&1; echo "kernel_mmv s rc $?"; grep -E "CHECK failed|FAIL|cases," $OUT/km-s.log | head -5
ts "sweep"
MEMRA_MMV_SWEEP=1 timeout 150 $B/s/kernel_mmv > $OUT/km-sweep.log 2>&1; echo "sweep rc $?"
awk '/^\| (q\/o|down|k\/v|gate\/up) [0-9x]+ \| (2|8|16|32) /{p=1} /^\| [a-z]/ && !/^\| (q\/o|down|k\/v|gate\/up) [0-9x]+ \| (2|8|16|32) /{p=0} p' $OUT/km-sweep.log | grep -E "^\| [a-z]|variant (1|3|14|15|16) " | grep -v sync | cut -c1-70
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
run() { local b=$1 m=$2 t=$3; echo "== $b $m"; timeout 100 $B/$b/bin/memra-bench /tmp/m8b/$m --backend cuda --tests $t --reps 3 2>&1 | grep -E "^\| .*tg|rror" | awk -F'|' '{print $6, $7, $8, $9}'; }
for b in a s a s; do run $b hf-bf16 tg64x8@d512,tg64x16@d512,tg64x32@d512; ts; done
