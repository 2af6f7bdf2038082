#!/bin/bash
# lab/ncu-batch-gpu.sh NAME [ROWS] — one GPU call (~4 min): where a batched BF16 decode step goes, per kernel: ncu
# times every kernel of memra-bench --tests tg2xROWS (ROWS 64 by default; 16 warm-up steps + 2, depth 0, bf16
# activations) on the random 8B BF16 model, each kernel alone (no PDL overlap: the sum is above the real step),
# the step run eagerly (MEMRA_CUDA_GRAPH=0: the same kernels as the graph). tg2xROWS is 2 warm-up + 2 timed steps;
# the steps are counted by the embedding's launches. Printed per kernel name and grid: launches, µs a launch, µs a
# step; and memra-bench's own tg32xROWS at depth 0 and 512 for the real step time.
# NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/ncu-batch-gpu.sh NAME [ROWS]}"
R=${2:-64}
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
MEMRA_ACT_TYPE=bf16 $B/bin/memra-bench $M --backend cuda --tests tg32x$R,tg32x$R@d512 --reps 3 2>&1 | grep -E "^\| .*tg"
MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 300 /usr/local/cuda/bin/ncu --clock-control none \
  --metrics gpu__time_duration.sum,launch__grid_size --csv \
  $B/bin/memra-bench $M --backend cuda --tests tg2x$R --reps 1 > /tmp/ncu.csv 2> /tmp/ncu.err
ts "ncu rc $? $(wc -l < /tmp/ncu.csv) lines"; tail -2 /tmp/ncu.err
python3 lab/ncu_sum.py /tmp/ncu.csv step
ts done
