#!/bin/bash
# lab/ncu-gemv-gpu.sh NAME — one GPU call (~2 min once /tmp/m8q holds the Q4_K_M model; makes it otherwise): ncu's
# detail sections (speed of light, memory workload, warp stall reasons, scheduler, instruction mix, occupancy,
# launch) for a lone Q4_K_M token's quantized GEMVs, which the twenty-seventh run found at 47 % of their floor each
# alone (the Q4_K int8-mma kernel 1659 µs a token against ~663 of bytes): is a launch latency-, issue- or
# bandwidth-bound, and where do its warps stall? memra-bench tg4 runs eagerly (MEMRA_CUDA_GRAPH=0, bf16
# activations); the first 96 matching launches (prefill and warm-up) are skipped, then one layer's worth captured:
# kernel_gemv_mma (q|k, v, o, gate|up: MEMRA_GEMV_MMA=on, the default), then the dp4a kernels (kernel_gemv_q: the
# Q6_K downs and v at K split 4). The forty-first run's call 2 ran it (bench/RESULTS.md: "where a lone Q4_K_M token's
# GEMVs stall").
# Full reports in $OUT/ncu-*.txt, the key lines printed. NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz",
# ".whl"].
cd "$(dirname "$0")/.."
if [ -d "/tmp/$1" ]; then
  T0=$(date +%s); ts() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }; B=/tmp/$1
else
  PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/ncu-gemv-gpu.sh NAME}"
fi
M=/tmp/m8q/llama8b-q4_k_m.gguf
[ -f $M ] || python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1
ts "m8q ready"
NCU="/usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis
 --section WarpStateStats --section SchedulerStats --section InstructionStats --section Occupancy --section LaunchStats"
run() { # LABEL REGEX COUNT VAR=...
  local l=$1 k=$2 c=$3; shift 3
  env MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 "$@" timeout 150 $NCU -k "regex:$k" --launch-skip 96 -c "$c" \
    $B/bin/memra-bench $M --backend cuda --tests tg4 --reps 1 > $OUT/ncu-$l.txt 2>&1
  ts "ncu $l rc $?"
  grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Grid Size|\
Block Size|Stall|L2 Hit|L1/TEX Hit|Mem Busy|Eligible Warps|Issued Warp|Issue Slots Busy|No Eligible|Active Warps Per|\
Dynamic Shared|Waves Per SM|Executed Ipc A|Warp Cycles Per Issued" $OUT/ncu-$l.txt | head -${NCU_LINES:-150}
}
run mma 'kernel_gemv_mma' 8 MEMRA_GEMV_MMA=on
run dp4a 'kernel_gemv_q([^s]|$)' 4
ts done
