#!/bin/bash
# lab/ncu-source-gpu.sh NAME — one GPU call (~1.5 min with the model's generation): where the lone-token Q4_K mma
# GEMV's warps wait, by SASS line. ncu's SourceCounters and WarpStateStats for the kernel_gemv_mma launches of a
# lone Q4_K_M token (memra-bench tg4, eager, bf16 activations; 96 launches skipped, then 4: a layer's q|k, v or o,
# gate|up), saved as a report, then its source page as CSV with the SASS (per instruction: executed count and the
# stall-reason samples) in $OUT/src.csv, and the details page in $OUT/ncu.txt. Read src.csv here: sum the samples by
# opcode and by stall reason for the gate|up launch (grid 528 at the default resident grid). NAME: a pack of
# `make build`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/ncu-source-gpu.sh NAME}"
M=/tmp/m8q/llama8b-q4_k_m.gguf
[ -f $M ] || python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1
ts "m8q ready"
N=/usr/local/cuda/bin/ncu
MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 150 $N --clock-control none --section SourceCounters \
  --section WarpStateStats --section LaunchStats -k regex:kernel_gemv_mma --launch-skip 96 -c 4 -f -o /tmp/rep \
  $B/bin/memra-bench $M --backend cuda --tests tg4 --reps 1 > $O/run.log 2>&1
ts "ncu rc $?"
$N -i /tmp/rep.ncu-rep --page details > $O/ncu.txt 2>&1
$N -i /tmp/rep.ncu-rep --page source --csv --print-source sass > $O/src.csv 2> $O/src.err
ts "source page rc $? $(wc -l < $O/src.csv) lines, $(head -c 300 $O/src.err)"
grep -E "^  void|Grid Size|Warp Cycles Per Issued" $O/ncu.txt | cut -c1-110
ts done
