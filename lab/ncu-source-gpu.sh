#!/bin/bash
# lab/ncu-source-gpu.sh NAME — one GPU call (~1.5 min with the model's generation): where a kernel's warps wait, by
# SASS line. ncu's SourceCounters and WarpStateStats for some launches of one kernel, saved as a report, then its
# source page as CSV with the SASS (per instruction: executed count and the stall-reason samples) in $OUT/src.csv,
# and the details page in $OUT/ncu.txt. Read src.csv here with `python3 lab/ncu-source-sum.py src.csv`. Default: the
# kernel_gemv_mma launches of a lone Q4_K_M token (memra-bench tg4, eager, bf16 activations; 96 launches skipped,
# then 4: a layer's q|k, v or o, gate|up). ATTN=1: one prefill attention launch of the random 8B BF16's pp4096 at
# --ubatch 4096 (kernel_attn_prefill_w*, 40 launches skipped). GEMMQ=1: one promoted GGUF GEMM launch (gemm_q.cu's
# kernel_gemm_q) of the random 8B Q8_0's pp4096 at --ubatch 4096 (40 launches skipped: a layer's q / k / v / o /
# gate / up / down are 7). NAME: a pack of `make build`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
if [ "${ATTN:-0}" = 1 ]; then
  . lab/gpu-prelude.sh "${1:?usage: lab/ncu-source-gpu.sh NAME}"
  wait $MK
  M=/tmp/m8b/hf-bf16 K=kernel_attn_prefill_w SKIP=40 CNT=1 TESTS=pp4096 XA="--ubatch 4096"
elif [ "${GEMMQ:-0}" = 1 ]; then
  PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/ncu-source-gpu.sh NAME}"
  M=/tmp/m8q/llama8b-q8_0.gguf K="^kernel_gemm_q\$" SKIP=40 CNT=1 TESTS=pp4096 XA="--ubatch 4096"
  [ -f $M ] || python3 tools/make_test_models.py /tmp/m8q --formats q8_0 > /tmp/makeq.log 2>&1
else
  PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/ncu-source-gpu.sh NAME}"
  M=/tmp/m8q/llama8b-q4_k_m.gguf K=kernel_gemv_mma SKIP=96 CNT=4 TESTS=tg4 XA=
  [ -f $M ] || python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1
fi
ts "model ready"
N=/usr/local/cuda/bin/ncu
MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 150 $N --clock-control none --section SourceCounters \
  --section WarpStateStats --section LaunchStats -k "regex:$K" --launch-skip $SKIP -c $CNT -f -o /tmp/rep \
  $B/bin/memra-bench $M --backend cuda --tests $TESTS --reps 1 $XA > $O/run.log 2>&1
ts "ncu rc $?"
$N -i /tmp/rep.ncu-rep --page details > $O/ncu.txt 2>&1
$N -i /tmp/rep.ncu-rep --page source --csv --print-source sass > $O/src.csv 2> $O/src.err
ts "source page rc $? $(wc -l < $O/src.csv) lines, $(head -c 300 $O/src.err)"
grep -E "^  void|Grid Size|Warp Cycles Per Issued" $O/ncu.txt | cut -c1-110
ts done
