#!/bin/bash
# lab/mma-grid-gpu.sh NAME — one GPU call (~5 min; BUDGET=seconds, default 420) for `MEMRA_GEMV_MMA_GRID=resident`:
# the Q4_K / Q6_K tensor-core GEMV (gemv_mma.cu) on at most the resident blocks, each looping over row-tile groups with
# its weight ring running on from one tile into the next, against one block a group (`tiles`, the default). ncu on a
# lone Q4_K_M token (forty-first run, H100) found gate|up at 63 % of the DRAM rate in 3.4 waves of short-lived blocks
# (a block's 4 warps ask for both their pairs, wait a DRAM latency, compute, sum, exit). NAME: a pack of `make build`
# (lab/final-pack.sh NAME); carry ["gpu/NAME.tar.xz", ".whl"]. Parts:
#   1. kernel_gemv --mma: every check (among them "mma grid": resident = tiles bits at batches 1, 3, 8 on shapes of
#      more groups than fit, a partial last group, 8 warps a tile, Q6_K), then the Q4_K / Q6_K table with the
#      resident grid's column;
#   2. kernel_forward's fixtures with MEMRA_GEMV_MMA_GRID=resident, f32 and bf16 activations;
#   3. memra-bench on the random 8B Q4_K_M: tg128, tg128x4, tg128x8 with tiles / resident, two rounds; then
#      MEMRA_GEMV_MMA=all (Q6_K on the tensor cores too) with each grid.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mma-grid-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-420} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MQ=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
if part "1 kernel_gemv --mma" 120; then
  timeout 200 $B/kernels/kernel_gemv --mma > $O/1-gemv.log 2>&1
  echo "kernel_gemv rc $? $(grep -E 'checks,' $O/1-gemv.log | tail -1)"
  grep -E "FAIL|DIFFER|mma grid" $O/1-gemv.log | head -12
  grep -E "^\| (Q4_K|Q6_K) " $O/1-gemv.log
fi
if part "2 kernel_forward fixtures, resident grid" 90; then
  for act in f32 bf16; do
    MEMRA_GEMV_MMA_GRID=resident MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward \
      > $O/2-kf-$act.log 2>&1
    echo "kernel_forward resident $act rc $? $(grep -E 'checks,' $O/2-kf-$act.log | tail -1)"
    grep -E "CHECK failed" $O/2-kf-$act.log | head -4
  done
fi
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
if part "3 tg, MEMRA_GEMV_MMA_GRID tiles / resident" 60; then
  for r in 1 2; do
    for gm in tiles resident; do
      TO=90 mbench "r$r $gm" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_GEMV_MMA_GRID=$gm
    done
  done
  for gm in tiles resident; do
    TO=90 mbench "all $gm" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x8 MEMRA_GEMV_MMA=all MEMRA_GEMV_MMA_GRID=$gm
  done
fi
ts "######## done"
