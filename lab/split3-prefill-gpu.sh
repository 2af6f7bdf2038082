#!/bin/bash
# lab/split3-prefill-gpu.sh NAME — one GPU call (~5 min after the machine starts) on a build with the landed prefill
# producers (parts only) and the swizzled decode ring: (1) MEMRA_ATTN_SPLIT_CHUNKS 2 / 3 / 4 — the decode attention
# alone (kernel_attn --one, bf16 KV: 64 × 640, 16 × 640, 1 × 128, 1 × 512, 1 × 4096), memra-bench tg128,
# tg128@d4096 and tg32x64@d512 (bf16 activations), fresh servers at c=64 × 512 × 256 (bf16 activations): 4 won
# +0.3-2 % in the server in call 3 at a lone row's cost; 3 is between; (2) where a 4096-token BF16 prefill goes now
# (as lab/ncu-prefill-gpu.sh: ncu's duration of every kernel of memra-bench pp4096 --ubatch 4096, bf16 activations).
# carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/split3-prefill-gpu.sh NAME}"
for sc in 2 3 4; do for db in "640 64" "640 16" "128 1" "512 1" "4096 1"; do
  MEMRA_ATTN_SPLIT_CHUNKS=$sc MEMRA_ATTN_DECODE=tc timeout 60 $B/kernels/kernel_attn --one $db 2>&1 | grep -E "^\| [0-9]" | grep -E "\| auto tc \| bf16 \| auto" | sed "s/^/sc$sc: /"
done; done
ts "attn tables"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for sc in 2 3 4; do
  MEMRA_ATTN_SPLIT_CHUNKS=$sc timeout 90 $B/bin/memra-bench $M --backend cuda --tests tg128,tg128@d4096 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/sc$sc: /"
  MEMRA_ATTN_SPLIT_CHUNKS=$sc MEMRA_ACT_TYPE=bf16 timeout 90 $B/bin/memra-bench $M --backend cuda --tests tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/sc$sc bf16: /"
done; done
ts "tg bench"
for sc in 2 3 4 3; do
  mkdir -p $OUT/s$sc; MEMRA_ATTN_SPLIT_CHUNKS=$sc MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s$sc timeout 170 bench/run-server.sh $M "64x512x256" > /tmp/rs$sc.log 2>&1
  echo "sc$sc server rc $? $(grep -E '^\| [0-9]' $OUT/s$sc/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s$sc
done
ts servers
MEMRA_ACT_TYPE=bf16 timeout 200 /usr/local/cuda/bin/ncu --clock-control none \
  --metrics gpu__time_duration.sum,launch__grid_size --csv \
  $B/bin/memra-bench $M --backend cuda --tests pp4096 --ubatch 4096 --reps 1 > /tmp/ncu.csv 2> /tmp/ncu.err
ts "ncu rc $? $(wc -l < /tmp/ncu.csv) lines"; tail -2 /tmp/ncu.err
python3 lab/ncu_sum.py /tmp/ncu.csv pass
ts done
