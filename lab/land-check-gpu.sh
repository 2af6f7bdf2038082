#!/bin/bash
# lab/land-check-gpu.sh NAME — one GPU call (~4 min): a build about to land, checked and timed in one call —
# kernel_gemm --quick, kernel_attn --prefill-wg's checks, kernel_forward's fixtures (f32, bf16, with the tiny
# deep-check model), then random 8B BF16 pp512 / pp4096 with bf16 activations (and pp4096 at --ubatch 4096) and
# Q8_0 pp4096 at --ubatch 4096 with bf16 activations. Pack: `bash lab/final-pack.sh NAME`; carry
# ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/land-check-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
m8q_models q8_0
timeout 120 $B/kernels/kernel_gemm --quick > $OUT/kg.log 2>&1
ts "kernel_gemm --quick rc $? $(grep -E '^accumulating' $OUT/kg.log) $(tail -1 $OUT/kg.log)"
grep -E 'CHECK failed|DIFFERENT' $OUT/kg.log | head -4
timeout 90 $B/kernels/kernel_attn --prefill-wg > $OUT/kp.log 2>&1
ts "kernel_attn --prefill-wg: $(grep -E '^ok|^FAIL' $OUT/kp.log | tr '\n' ' ') \
$(grep -c 'CHECK failed' $OUT/kp.log) failed"
kf_fixtures ""
wait $MQ; ts "m8q: $(tail -1 /tmp/makeq.log)"
XA="--ubatch 4096" TO=80 mbench "q8_0 bf16-act ub4096" /tmp/m8q/llama8b-q8_0.gguf pp4096 MEMRA_ACT_TYPE=bf16
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
TO=100 mbench "bf16 bf16-act" $M pp512,pp4096 MEMRA_ACT_TYPE=bf16
for r in 1 2; do XA="--ubatch 4096" TO=80 mbench "r$r bf16 bf16-act ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16; done
ts "######## done"
