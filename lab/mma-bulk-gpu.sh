#!/bin/bash
# lab/mma-bulk-gpu.sh NAME — one GPU call (~3 min; BUDGET=seconds, default 420) for `MEMRA_GEMV_MMA_COPY=bulk`: the
# Q4_K / Q6_K tensor-core GEMV's weights copied into its ring by one bulk copy (TMA) a row and superblock pair,
# landing on an mbarrier a stage, instead of 16-byte cp.async pieces — the forty-first run's SASS of the lone-token
# gate|up kernel spent 183 of a pair's 647 instructions on the pieces' addresses and copies, and the kernel is bound
# by its instruction issue (ncu). NAME: a pack of `make build` (lab/final-pack.sh NAME); carry ["gpu/NAME.tar.xz",
# ".whl"]. Parts:
#   1. kernel_gemv --mma: every check (the "mma grid" ones now tiles / resident × pieces / bulk, the same bits), then
#      the Q4_K / Q6_K table with a bulk column;
#   2. kernel_forward's fixtures with MEMRA_GEMV_MMA_COPY=bulk, f32 and bf16;
#   3. memra-bench on the random 8B Q4_K_M, tg128 / x4 / x8 with pieces / bulk, two rounds, then MEMRA_GEMV_MMA=all
#      (Q6_K on the tensor cores too) with each;
#   4. ncu: the lone-token mma kernels with bulk copies (instructions, issue rate, DRAM).
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mma-bulk-gpu.sh NAME}"
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
if part "2 kernel_forward fixtures, bulk copies" 90; then
  for act in f32 bf16; do
    MEMRA_GEMV_MMA_COPY=bulk MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward \
      > $O/2-kf-$act.log 2>&1
    echo "kernel_forward bulk $act rc $? $(grep -E 'checks,' $O/2-kf-$act.log | tail -1)"
    grep -E "CHECK failed" $O/2-kf-$act.log | head -4
  done
fi
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
if part "3 tg, MEMRA_GEMV_MMA_COPY pieces / bulk" 60; then
  for r in 1 2; do
    for c in pieces bulk; do
      TO=90 mbench "r$r $c" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_GEMV_MMA_COPY=$c
    done
  done
  for c in pieces bulk; do
    TO=90 mbench "all $c" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x8 MEMRA_GEMV_MMA=all MEMRA_GEMV_MMA_COPY=$c
  done
fi
if part "4 ncu, bulk copies" 40; then
  NCU="/usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight --section SchedulerStats
   --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy"
  MEMRA_GEMV_MMA_COPY=bulk MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 100 $NCU -k regex:kernel_gemv_mma \
    --launch-skip 96 -c 4 $B/bin/memra-bench /tmp/m8q/llama8b-q4_k_m.gguf --backend cuda --tests tg4 --reps 1 \
    > $O/4-ncu.txt 2>&1
  grep -E "^  void|Duration|DRAM Throughput|Grid Size|Registers Per|Issued Warp|Eligible Warps|Warp Cycles Per Issued|\
Issued Instructions  |Achieved Occ" $O/4-ncu.txt | cut -c1-120
fi
ts "######## done"
