#!/bin/bash
# lab/gu16-gpu.sh NAME — one GPU call (~5 min): the gate and up GEMMs writing bf16 (MEMRA_GEMM_GU_BF16, with every
# dense GLU rounding gate and up first under bf16 activations) checked and timed: kernel_gemm --quick (check_y16:
# each bf16 y within a step of the f32 y rounded, the count moved), kernel_forward's fixtures f32 / bf16 / bf16 on a
# bf16 KV (GPU vs CPU, and each fixture against MEMRA_GEMM_GU_BF16=off: the gu16 column), then random 8B BF16
# pp4096 at --ubatch 4096 and pp512 with bf16 activations: the pack's baseline memra-bench (x0), this build, and this
# build with MEMRA_GEMM_GU_BF16=off, alternated over two rounds; then Q8_0 and Q4_K_M pp4096 at --ubatch 4096 (the
# promoted GEMM writing bf16), baseline and this build alternated (GGUF=0: not). Pack: `bash lab/final-pack.sh NAME BASE` (BASE: the
# commit before, packed earlier); carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/gu16-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
MQ=
if [ "${GGUF:-1}" = 1 ]; then
  m8q_models q8_0,q4_k_m
fi
timeout 120 $B/kernels/kernel_gemm --quick > $OUT/kg.log 2>&1
ts "kernel_gemm --quick rc $? $(grep -E '^accumulating|^bf16-y' $OUT/kg.log | tr '\n' ' ') $(tail -1 $OUT/kg.log)"
grep -E 'CHECK failed|DIFFERENT|FAIL' $OUT/kg.log | head -6
grep -E 'bf16 y:' $OUT/kg.log | grep -v ': 0 of' | head -8
kf_fixtures ""
for a in f32 bf16 bf16kv; do
  grep -E 'gu16' $OUT/kf-$a.log | sed -E "s/^ *([^ ]+) +GPU vs CPU ([^ ]+).*(gu16 .*)$/$a \1 cpu \2 \3/"
done | grep -v 'gu16 same' | head -20
MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_MIN_TOKENS=4 MEMRA_FORWARD_PART=fixtures timeout 120 $B/kernels/kernel_forward \
  > $OUT/kf-min4.log 2>&1
ts "kernel_forward bf16 MEMRA_GEMM_MIN_TOKENS=4 rc $? $(grep -E 'checks,' $OUT/kf-min4.log | tail -1) \
$(grep -c 'gu16 same' $OUT/kf-min4.log) gu16 same, $(grep -c 'gu16 moved' $OUT/kf-min4.log) moved"
grep -E 'CHECK failed' $OUT/kf-min4.log | head -4
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do
  XA="--ubatch 4096" TO=80 MB=$B/x0/memra-bench mbench "r$r base ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16
  XA="--ubatch 4096" TO=80 mbench "r$r gu16 ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16
  XA="--ubatch 4096" TO=80 mbench "r$r gu16-off ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_GU_BF16=off
done
TO=100 MB=$B/x0/memra-bench mbench "base" $M pp512,pp4096 MEMRA_ACT_TYPE=bf16
TO=100 mbench "gu16" $M pp512,pp4096 MEMRA_ACT_TYPE=bf16
[ -n "$MQ" ] && wait $MQ && ts "m8q $(tail -1 /tmp/makeq.log)"
for m in $([ -n "$MQ" ] && echo q8_0 q4_k_m); do
  for r in 1 2; do
    XA="--ubatch 4096" TO=80 MB=$B/x0/memra-bench mbench "r$r $m base ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 \
      MEMRA_ACT_TYPE=bf16
    XA="--ubatch 4096" TO=80 mbench "r$r $m gu16 ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 MEMRA_ACT_TYPE=bf16
  done
done
ts "######## done"
