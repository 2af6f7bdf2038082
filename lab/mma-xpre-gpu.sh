#!/bin/bash
# lab/mma-xpre-gpu.sh NAME — one GPU call (~2.5 min): LAB `MEMRA_LAB_MMA_XPRE=on`, the lone-token Q4_K mma GEMV
# loading both superblocks' x fragments of a pair before it waits for the pair's weights (cp.async.wait_group), so
# that the two waits ncu's source counters found largest (forty-first run: the DEPBAR before a pair, the IMMA's
# long scoreboard on x) overlap; 128 registers with 16 bytes spilled. The same operations: the same bits. NAME: a
# pack of `make build` with it; carry ["gpu/NAME.tar.xz", ".whl"]. Parts: kernel_gemv --mma (checks: "mma grid"
# tiles / resident / xpre the same bits; the table's last column auto vs xpre); kernel_forward's fixtures with it
# (f32, bf16); memra-bench Q4_K_M tg128 / x4 / x8 off / on, two rounds; ncu of its kernels for a lone token.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mma-xpre-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MQ=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
timeout 200 $B/kernels/kernel_gemv --mma > $O/1-gemv.log 2>&1
echo "kernel_gemv rc $? $(grep -E 'checks,' $O/1-gemv.log | tail -1)"
grep -E "FAIL|DIFFER|mma grid" $O/1-gemv.log | head -12
grep -E "^\| (Q4_K|Q6_K) " $O/1-gemv.log
for act in f32 bf16; do
  MEMRA_LAB_MMA_XPRE=on MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward \
    > $O/2-kf-$act.log 2>&1
  echo "kernel_forward xpre $act rc $? $(grep -E 'checks,' $O/2-kf-$act.log | tail -1)"
  grep -E "CHECK failed" $O/2-kf-$act.log | head -4
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for st in off on; do
    TO=90 mbench "r$r $st" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_LAB_MMA_XPRE=$st
  done
done
NCU="/usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight --section SchedulerStats
 --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy"
MEMRA_LAB_MMA_XPRE=on MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 100 $NCU -k regex:kernel_gemv_mma \
  --launch-skip 96 -c 4 $B/bin/memra-bench /tmp/m8q/llama8b-q4_k_m.gguf --backend cuda --tests tg4 --reps 1 \
  > $O/4-ncu.txt 2>&1
grep -E "^  void|Duration|DRAM Throughput|Grid Size|Registers Per|Issued Warp|Eligible Warps|Active Warps Per|\
Issued Instructions  |Achieved Occ|Theoretical Occ" $O/4-ncu.txt | cut -c1-120
ts "######## done"
