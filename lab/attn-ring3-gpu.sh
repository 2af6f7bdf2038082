#!/bin/bash
# lab/attn-ring3-gpu.sh NAME X0 — one GPU call (~5 min after the machine starts): lab/attn-ring3.patch, the
# tensor-core decode attention's bf16 ring rows unpadded with their 16-byte pieces swizzled (piece c of row r at
# c ^ (r % 8): the ldmatrix rows still in different banks), the warp merge's maxima and sums in 256 bytes of their
# own (the accumulators still over a stage), the rows form's keep rows over the finished ring instead of a 4 KB
# static array — together room for a third ring stage in the q-in-shared-memory kernels at 4 CTAs an SM
# (MEMRA_ATTN_TC_QS_STAGES 3: 53.8 KB a CTA, 111 registers; was 2 stages, 39.2 KB + 4 KB static, 108). The same
# operations on the same values, so the same bits: kernel_attn --quick's digests must equal X0's line for line.
# ncu (twenty-ninth run, before the split-chunks change) had the 64-row rows form at 3.5 warps a scheduler, 1.1
# eligible, DRAM 50 %; after it 53.4 µs at 64 × 640 against a 39 µs floor.
# Runs: kernel_attn --quick of NAME and X0 (digests compared), NAME's kernel_forward fixtures, kernel_attn --one
# tables of both (64 × 640, 48 × 640, 16 × 640, 8 × 512, 1 × 512, 1 × 4096), memra-bench tg32x16@d512 /
# tg32x64@d512 (bf16 activations) and tg128 / tg128@d4096 of both alternated twice, fresh servers at c=64 × 512 ×
# 256 (bf16 activations) once each.
# Prepare: build main and `lab/final-pack.sh X0`; `git apply lab/attn-ring3.patch && make build &&
# lab/final-pack.sh NAME && git checkout src`; carry ["gpu/NAME.tar.xz", "gpu/X0.tar.xz", ".whl"].
# Lands if the digests are equal, every check passes and tg32x64@d512 is ≥ 1 % faster in both rounds with tg128
# and tg128@d4096 not slower. (Measurable apart: the swizzle alone is the patch with MEMRA_ATTN_TC_QS_STAGES 2.)
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-ring3-gpu.sh NAME X0}"
X0=${2:?X0}; tar -xJf "gpu/$X0.tar.xz" -C /tmp
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
for k in $1 $X0; do
  timeout 150 /tmp/$k/kernels/kernel_attn --quick > $OUT/ka-$k.log 2>&1; echo "rc $?" >> $OUT/ka-$k.log
  ts "kernel_attn --quick $k $(tail -1 $OUT/ka-$k.log) $(grep -E '[0-9]+ checks' $OUT/ka-$k.log | tail -1)"; grep -E 'FAIL' $OUT/ka-$k.log | head -3
done
diff <(grep -o 'digest [0-9a-f]*' $OUT/ka-$1.log) <(grep -o 'digest [0-9a-f]*' $OUT/ka-$X0.log) > /dev/null && ts "digests: all $(grep -c 'digest ' $OUT/ka-$1.log) equal" || ts "digests DIFFER"
MEMRA_FORWARD_PART=fixtures timeout 100 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf.log | head -3
for k in $1 $X0; do for db in "640 64" "640 48" "640 16" "512 8" "512 1" "4096 1"; do
  MEMRA_ATTN_DECODE=tc timeout 60 /tmp/$k/kernels/kernel_attn --one $db 2>&1 | grep -E "^\| [0-9]" | grep -E "\| auto tc \| bf16 \| auto" | sed "s/^/$k: /"
done; done
ts "attn tables"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for k in $1 $X0; do
  MEMRA_ACT_TYPE=bf16 timeout 90 /tmp/$k/bin/memra-bench $M --backend cuda --tests tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$k bf16: /"
  timeout 90 /tmp/$k/bin/memra-bench $M --backend cuda --tests tg128,tg128@d4096 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$k: /"
done; done
ts bench
for k in $1 $X0; do
  mkdir -p $OUT/s$k; MEMRA_ACT_TYPE=bf16 BUILD=/tmp/$k RUN_TMO=200 OUT=$OUT/s$k timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs$k.log 2>&1
  echo "$k server rc $? $(grep '| 64 |' $OUT/s$k/server-load.md | tail -1 | cut -d'|' -f10-13)"; rm -rf $OUT/s$k
done
ts done
