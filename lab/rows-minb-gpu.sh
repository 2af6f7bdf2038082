#!/bin/bash
# lab/rows-minb-gpu.sh NAME X0 — one GPU call (~4 min): the tensor-core decode attention's rows form with q in shared
# memory (the 64-row launches) compiled for 5 CTAs an SM (TC_ROWS_QS_MINB=5: 96 registers, 12 bytes of spills,
# 5 × 44 KB of shared memory) instead of 4 (108 registers): ncu (lab/ncu-detail-gpu.sh) had it at 3.5 warps a
# scheduler, 1.1 eligible, DRAM 50 %. Same operations, so the same bits. NAME: the build with it, X0: the one without
# (both packs carried, lab/final-pack.sh NAME X0). Runs NAME's kernel_attn --quick and kernel_forward fixtures, the
# kernel_attn --one tables of both at 64 × 640 / 48 × 640 / 64 × 1024, memra-bench tg32x64@d512 / tg32x48@d512 (bf16
# activations) alternated twice, and fresh servers at c=64 × 512 × 256 (bf16 activations) once each.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/rows-minb-gpu.sh NAME X0}"
X0=${2:?X0}; tar -xJf "gpu/$X0.tar.xz" -C /tmp
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
timeout 150 $B/kernels/kernel_attn --quick > $OUT/ka.log 2>&1; echo "rc $?" >> $OUT/ka.log
ts "kernel_attn --quick $(tail -1 $OUT/ka.log) $(grep -E '[0-9]+ checks' $OUT/ka.log | tail -1)"; grep -E 'FAIL' $OUT/ka.log | head -3
MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf.log | head -3
for r in 1 2; do for k in $1 $X0; do for db in "640 64" "640 48" "1024 64"; do
  MEMRA_ATTN_DECODE=tc timeout 60 /tmp/$k/kernels/kernel_attn --one $db 2>&1 | grep -E "^\| [0-9]" | grep -E "\| auto tc \| bf16 \| auto" | sed "s/^/$k: /"
done; done; done
ts "attn tables"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for k in $1 $X0; do
  MEMRA_ACT_TYPE=bf16 timeout 120 /tmp/$k/bin/memra-bench $M --backend cuda --tests tg32x48@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$k bf16: /"
done; done
ts bench
for k in $1 $X0; do
  mkdir -p $OUT/s$k; MEMRA_ACT_TYPE=bf16 BUILD=/tmp/$k RUN_TMO=200 OUT=$OUT/s$k timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs$k.log 2>&1
  echo "$k server rc $? $(grep '| 64 |' $OUT/s$k/server-load.md | tail -1 | cut -d'|' -f10-13)"; rm -rf $OUT/s$k
done
ts done
