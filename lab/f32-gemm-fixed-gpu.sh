#!/bin/bash
# lab/f32-gemm-fixed-gpu.sh NAME — one GPU call (~2 min): f32 weights' prefill GEMM on one cuBLASLt algorithm for
# every span length (lab/f32-gemm-fixed.patch: plan_get asks the heuristic at n = 256 and checks the answer at the
# call's n). The thirty-first run found kernel_forward's batch-vs-alone failing under MEMRA_DECODE_MMV=all on the 7
# fixtures with f32 (or expanded FP8-block) weights — 2.7e-7 .. 4.3e-7 of the logit range — while BF16 and GGUF were
# identical; the suspect is cuBLAS's choice of kernel moving with n. kernel_gemm --quick's new invariance checks
# (f32 spans of 9 and 33 inside GEMMs of 420 and 130 rows), then kernel_forward's fixtures under MEMRA_DECODE_MMV=all
# (those 7 must now read "identical") and under the default.
# Prepare: `git apply lab/f32-gemm-fixed.patch && make build -j2 JOBS=2 && bash lab/final-pack.sh NAME && git checkout
#   src tests`, then rebuild main; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/f32-gemm-fixed-gpu.sh NAME}"
ts "kernel_gemm --quick"
timeout 240 $B/kernels/kernel_gemm --quick > $OUT/kernel_gemm.log 2>&1; echo "kernel_gemm rc $?"
grep -E "FAIL|cases,|span of" $OUT/kernel_gemm.log | head -30
for mm in all auto; do
  ts "kernel_forward fixtures MEMRA_DECODE_MMV=$mm"
  MEMRA_DECODE_MMV=$mm MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf-$mm.log 2>&1
  echo "kernel_forward rc $?"
  grep -E "FAIL|CHECK failed|cases," $OUT/kf-$mm.log | head -12
  sed -n '/^## /,$p' $OUT/kf-$mm.log | head -40
done
ts done
