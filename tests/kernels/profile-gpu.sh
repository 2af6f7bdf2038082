#!/bin/bash
# tests/kernels/profile-gpu.sh — hardware counters of the quantized GEMV
# kernels on the GPU machine (Firecracker kinds; ncu needs --clock-control
# none there): one lm_head-shaped GEMV per type (kernel_gemv --profile),
# speed-of-light, occupancy, scheduler and warp-stall sections. Full report in
# $OUT/ncu.txt, the key lines printed.
set -uo pipefail
B=${1:-build-cuda}
LOG=${OUT:-/tmp}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu"; exit 1; }
"$NCU" --clock-control none -k regex:kernel_gemv_q --section SpeedOfLight --section Occupancy \
    --section SchedulerStats --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
    "$B/kernels/kernel_gemv" --profile > "$LOG/ncu.txt" 2>&1
rc=$?
grep -E "kernel_gemv_q|Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Theoretical Occupancy|Block Limit Registers|L1/TEX Hit|Mem Busy|Max Bandwidth" "$LOG/ncu.txt" \
    | sed -E 's/ +/ /g' | cut -c1-150
# the stall breakdown lines ncu prints as rule text
grep -iE "stall|cycles being stalled" "$LOG/ncu.txt" | sed -E 's/ +/ /g' | cut -c1-260 | head -40
exit $rc
