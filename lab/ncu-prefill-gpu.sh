#!/bin/bash
# lab/ncu-prefill-gpu.sh NAME [TEST] [UBATCH] — one GPU call (~3 min with the model's generation): where a BF16
# prefill goes, per kernel: memra-bench TEST (default pp4096) at --ubatch UBATCH (default 4096: the GEMMs' M near the
# server's 8192-token steps) with bf16 activations, then ncu's duration of every kernel of the same run (--reps 1),
# each kernel alone (no PDL overlap), per kernel name and grid: launches, µs a launch, µs a forward pass (passes
# counted by the embedding's launches). The twenty-ninth run's server figure (64 streams, 5.76-5.78 k tok/s) spends
# ~1 s of its 2.8 s in prefill at ~31 k tok/s (~470 TFLOP/s): this says which kernels hold the rest.
# With ATTN_NCU=1, then one prefill attention launch of the same run under ncu's speed-of-light, warp-state,
# scheduler and occupancy sections ($OUT/ncu-attn.txt). With CHECKS=1, while the model is made: kernel_attn
# --prefill-wg's checks at the defaults (its table cut off after 90 s) and kernel_forward's fixtures (gpu-prelude.sh's
# kf_fixtures) — a landed build's checks and its prefill breakdown in one call.
# NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/ncu-prefill-gpu.sh NAME [TEST] [UBATCH]}"
TEST=${2:-pp4096} UB=${3:-4096}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if [ "${CHECKS:-0}" = 1 ]; then
  timeout 90 $B/kernels/kernel_attn --prefill-wg > $OUT/kp.log 2>&1
  ts "kernel_attn --prefill-wg: $(grep -cE '^ok' $OUT/kp.log) ok, $(grep -cE 'FAIL|CHECK failed' $OUT/kp.log) failed"
  grep -E '^ok|FAIL|CHECK failed' $OUT/kp.log | head -6
  kf_fixtures ""
fi
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
MEMRA_ACT_TYPE=bf16 $B/bin/memra-bench $M --backend cuda --tests pp512,$TEST --ubatch $UB --reps 3 2>&1 | grep -E "^\| .*pp"
MEMRA_ACT_TYPE=bf16 timeout 300 /usr/local/cuda/bin/ncu --clock-control none \
  --metrics gpu__time_duration.sum,launch__grid_size --csv \
  $B/bin/memra-bench $M --backend cuda --tests $TEST --ubatch $UB --reps 1 > /tmp/ncu.csv 2> /tmp/ncu.err
ts "ncu rc $? $(wc -l < /tmp/ncu.csv) lines"; tail -2 /tmp/ncu.err
cp /tmp/ncu.csv $OUT/ncu-prefill.csv
python3 lab/ncu_sum.py /tmp/ncu.csv pass
if [ "${ATTN_NCU:-0}" = 1 ]; then # one attention launch of the same run under ncu's detail sections
  MEMRA_ACT_TYPE=bf16 MEMRA_CUDA_GRAPH=0 timeout 120 /usr/local/cuda/bin/ncu --clock-control none \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    -k regex:kernel_attn_prefill_w --launch-skip 40 -c 1 \
    $B/bin/memra-bench $M --backend cuda --tests $TEST --ubatch $UB --reps 1 > $OUT/ncu-attn.txt 2>&1
  ts "ncu attention rc $?"
  grep -E "kernel_attn_prefill|Duration|Compute \(SM\) Throughput|Memory Throughput|Issued Ipc|No Eligible" \
    $OUT/ncu-attn.txt | head -8
  grep -E "Warp Cycles Per|Achieved Occ|Registers" $OUT/ncu-attn.txt | head -6
fi
ts done
