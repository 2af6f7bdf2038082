#!/bin/bash
# lab/gemm-timed-gpu.sh NAME — one GPU call (~2.5 min), for a build with lab/gemm-timed.patch applied (at commit
# d2ea26d): the prefill GEMMs' long plans (more than 128 columns) timed once a bucket of column counts, into the
# call's own output (MEMRA_GEMM_PICK=time under the patch) against the heuristic's first (short, the landed
# behaviour): kernel_gemm --quick and kernel_forward's fixtures (f32, bf16, bf16 KV), then random 8B BF16 with bf16
# activations, pp4096 at --ubatch 4096 and pp512 / pp4096 at the default ubatch, under each setting alternated (three
# rounds and two). Measured and dropped in the forty-sixth run (bench/RESULTS.md). Pack: `bash lab/final-pack.sh
# NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/gemm-timed-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 120 $B/kernels/kernel_gemm --quick > $OUT/kg.log 2>&1
ts "kernel_gemm --quick rc $? $(tail -1 $OUT/kg.log)"
grep -E 'CHECK failed|DIFFERENT|FAIL' $OUT/kg.log | head -6
kf_fixtures ""
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2 3; do
  for s in short time; do
    XA="--ubatch 4096" TO=90 mbench "r$r $s ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PICK=$s
  done
done
for r in 1 2; do
  for s in short time; do
    TO=100 mbench "r$r $s" $M pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PICK=$s
  done
done
ts "######## done"
