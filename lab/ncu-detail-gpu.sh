#!/bin/bash
# lab/ncu-detail-gpu.sh NAME [TEST] — one GPU call (~2-3 min; reuses /tmp/m8b when the machine is still warm):
# ncu's detail sections (speed of light, memory workload, warp stall reasons, occupancy, launch) for the kernels
# of a 64-row BF16 decode step that bench/RESULTS.md's twenty-eighth run found furthest from their floors: the
# tensor-core decode attention's rows form (kernel_attn_decode_tc; 68.8 µs a layer at 64 × 640, 57 % of its KV
# bytes' floor) and the wgmma batched GEMVs (kernel_mmv_wg*; q / o / down 22.8 µs a launch against 7.8 / 7.8 / 27.3).
# memra-bench TEST (default tg2x64@d512) runs eagerly (MEMRA_CUDA_GRAPH=0, bf16 activations); the first decode
# step's launches are skipped. Full reports in $OUT/ncu-*.txt; the key lines printed.
# NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
if [ -d /tmp/m8b/hf-bf16 ] && [ -d "/tmp/$1" ]; then
  T0=$(date +%s); ts() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }; B=/tmp/$1; MK=
else
  . lab/gpu-prelude.sh "${1:?usage: lab/ncu-detail-gpu.sh NAME [TEST]}"
  wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
fi
M=/tmp/m8b/hf-bf16 TEST=${2:-tg2x64@d512}
NCU="/usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats"
MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 150 $NCU -k regex:kernel_attn_decode_tc --launch-skip 40 -c 2 \
  $B/bin/memra-bench $M --backend cuda --tests $TEST --reps 1 > $OUT/ncu-attn.txt 2>&1
ts "ncu attn rc $?"
MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 150 $NCU -k 'regex:mmv_wg([^_]|$)' --launch-skip 200 -c 8 \
  $B/bin/memra-bench $M --backend cuda --tests $TEST --reps 1 > $OUT/ncu-mmv.txt 2>&1
ts "ncu mmv rc $?"
for f in $OUT/ncu-attn.txt $OUT/ncu-mmv.txt; do
  grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Grid Size|Stall|L2 Hit|Mem Busy|Max Bandwidth|Eligible|Issued Warp|Dynamic Shared|Waves Per SM" $f | head -80
done
ts done
