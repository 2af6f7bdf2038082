#!/bin/bash
# lab/mmv-kv-fused-gpu.sh — one GPU call for lab/mmv-kv-fused.patch (copy to gpu/run34.sh; carry gpu and .whl).
# gpu/b34.tar.xz: b34/k = main + the patch (kernel_mmv, kernel_forward, bin/memra-bench). The A/B is in the same
# binary: MEMRA_DECODE_KV_FUSE=off restores one launch each for k and v.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh b34
( python3 tools/make_test_models.py /tmp/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 && python3 tools/make_test_models.py /tmp/t128 --tiny --tiny-head-dim 128 --formats q4_k_m,q8_0 >> $OUT/tiny.log 2>&1; echo "tiny rc $?" >> $OUT/tiny.log ) &
MT=$!
timeout 100 $B/k/kernel_mmv --quick > $OUT/km.log 2>&1; echo "kernel_mmv rc $?"; grep -E "CHECK failed|FAIL|cases,|wg split" $OUT/km.log | head -8
ts "sweep"
MEMRA_MMV_SWEEP=1 timeout 160 $B/k/kernel_mmv > $OUT/km-sweep.log 2>&1; echo "sweep rc $?"
awk '/^\| (k\/v|k\|v) [0-9x]+ \| (8|16|32|64) /{p=1} /^\| [a-z]/ && !/^\| (k\/v|k\|v) [0-9x]+ \| (8|16|32|64) /{p=0} p' $OUT/km-sweep.log | grep -v sync | cut -c1-70
wait $MT; ts "tiny: $(tail -1 $OUT/tiny.log)"
for f in on off; do
  MEMRA_DECODE_KV_FUSE=$f MEMRA_EXTRA_MODELS=/tmp/t128/llama8b-q4_k_m.gguf,/tmp/t128/llama8b-q8_0.gguf MEMRA_DEEP_MODEL=/tmp/tiny/hf-bf16 MEMRA_FORWARD_PART=fixtures timeout 200 $B/k/kernel_forward > $OUT/kf-$f.log 2>&1; echo "kernel_forward kv-fuse $f rc $?"; grep -E "CHECK failed|checks," $OUT/kf-$f.log | tail -3
done
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
run() { local f=$1; echo "== kv-fuse $f"; MEMRA_DECODE_KV_FUSE=$f timeout 100 $B/k/bin/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests tg64x8@d512,tg64x32@d512,tg64x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | awk -F'|' '{print $6, $7, $8, $9}'; }
for f in off on off on; do run $f; ts; done
