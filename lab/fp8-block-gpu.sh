#!/bin/bash
# lab/fp8-block-gpu.sh NAME — one GPU call (~4 min): FP8 layer weights with 128 × 128 block scales kept as stored
# (lab/fp8-block.patch: cuda_gemv_bs, cuda_gemm_run_bs, MEMRA_FP8_BLOCK) instead of expanded to f32 (4× the bytes),
# and MoE experts so (lab/fp8-block-moe.patch, applied after it). kernel_gemv, kernel_gemm and kernel_moe --quick
# (their new block-scale checks: against the expanded values, a vector / token alone = its batch's bits, the kept
# copy = the dequantizing call, the experts' grouped GEMVs and GEMM form), kernel_forward's fixtures (llamaq-fp8block
# now native: GPU vs CPU, greedy, batch vs alone, rollback, paged, chunked) with MEMRA_FP8_BLOCK native and f32, and
# with every prefill span on the GEMM (MEMRA_GEMM_MIN_TOKENS=4); then kernel_gemv's timing (the block-scale GEMV's GB/s
# beside the tensor-scale one at the 8B shapes).
# Prepare: `git apply lab/fp8-block.patch lab/fp8-block-moe.patch && make build -j2 JOBS=2 && bash lab/final-pack.sh
#   NAME && git checkout src tests docs && git clean -fq tests/kernels`, then rebuild main; carry ["gpu/NAME.tar.xz",
#   ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/fp8-block-gpu.sh NAME}"
for k in kernel_gemv kernel_gemm kernel_moe; do
  [ -x $B/kernels/$k ] || { echo "$k: not in the pack"; continue; }
  ts "$k --quick"
  timeout 240 $B/kernels/$k --quick > $OUT/$k.log 2>&1; echo "$k rc $?"
  grep -E "FAIL|cases,|block scales" $OUT/$k.log | head -30
done
for v in native f32; do
  for g in "" 4; do
    ts "kernel_forward fixtures MEMRA_FP8_BLOCK=$v ${g:+MEMRA_GEMM_MIN_TOKENS=$g}"
    env MEMRA_FP8_BLOCK=$v ${g:+MEMRA_GEMM_MIN_TOKENS=$g} MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward \
      > $OUT/kf-$v$g.log 2>&1; echo "kernel_forward rc $?"
    grep -E "FAIL|CHECK failed|cases," $OUT/kf-$v$g.log | head -10
    sed -n '/^## /,$p' $OUT/kf-$v$g.log | grep -E "^\| (model|llamaq)" | head -12
  done
done
if [ -z "${QUICK:-}" ]; then # QUICK=1 (lab/patches-gpu.sh): the checks only
  ts "kernel_gemv timing"
  timeout 300 $B/kernels/kernel_gemv > $OUT/kernel_gemv-full.log 2>&1; echo "kernel_gemv rc $?"
  grep -E "^F8_E4M3 " $OUT/kernel_gemv-full.log
fi
ts done
