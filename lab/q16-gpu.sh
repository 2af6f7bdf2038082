#!/bin/bash
# lab/q16-gpu.sh NAME — one GPU call (~2.5 min), for a build with lab/attn-q16.patch applied (at commit 890c5b5): the
# RoPE kernel writing q as the prefill attention's bf16 (MEMRA_ATTN_Q16 under the patch, where the attention writes
# o's input itself) checked and timed: kernel_attn --prefill-wg (each wgmma
# form's bf16 output from q16 against the one from q, bit for bit), kernel_forward's RoPE checks and fixtures (f32,
# bf16, bf16 on a bf16 KV with the tiny head_dim-128 model), then random 8B BF16 with bf16 activations, pp4096 at
# --ubatch 4096 (three rounds) and pp512 / pp4096 (two), MEMRA_ATTN_Q16 off and on alternated. Pack: `bash
# lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Measured and dropped in the forty-sixth run (level).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/q16-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 90 $B/kernels/kernel_attn --prefill-wg > $OUT/kp.log 2>&1
ts "kernel_attn --prefill-wg rc $?: $(grep -E '^ok|^FAIL' $OUT/kp.log | tr '\n' ' ') $(grep -c 'CHECK failed' $OUT/kp.log) failed, \
$(grep -c 'from q16: bit-identical' $OUT/kp.log) q16 outputs bit-identical"
grep -E 'CHECK failed|DIFFERENT' $OUT/kp.log | head -4
kf_fixtures ""
grep -E 'q16' $OUT/kf-f32.log | head -8
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2 3; do
  for s in off on; do
    XA="--ubatch 4096" TO=90 mbench "r$r q16 $s ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_ATTN_Q16=$s
  done
done
for r in 1 2; do
  for s in off on; do
    TO=100 mbench "r$r q16 $s" $M pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_ATTN_Q16=$s
  done
done
ts "######## done"
