#!/bin/bash
# lab/attn-persist-gpu.sh NAME — one GPU call (~3 min), for a build with lab/attn-persist.patch applied: the ws128pp
# prefill attention persistent (MEMRA_LAB_ATTN_PERSIST=on: a CTA an SM walking the grid's items, the producer's ring
# running on across them) checked and timed: kernel_attn --prefill-wg under it (every ws form's digest must be
# OVERLAP128's: the same bits), kernel_forward's fixtures with bf16 activations on a bf16 KV and the tiny head_dim-128
# model under it, then random 8B BF16 pp4096 at --ubatch 4096 with bf16 activations, off / on alternated, three
# rounds (PP512=1: and pp512 / pp4096, two). Measured and dropped in the forty-sixth run (level). Pack: `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-persist-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
MEMRA_LAB_ATTN_PERSIST=on timeout ${KT:-80} $B/kernels/kernel_attn --prefill-wg > $OUT/kp.log 2>&1
ts "kernel_attn --prefill-wg (persist) rc $?: $(grep -E '^ok|^FAIL' $OUT/kp.log | tr '\n' ' ') \
$(grep -c 'CHECK failed' $OUT/kp.log) failed"
grep -E 'CHECK failed|DIFFERENT|not OVERLAP' $OUT/kp.log | head -4
grep -E 'ws128pp.*digest' $OUT/kp.log | head -4
[ -d gpu/t128/hf-bf16 ] || python3 tools/make_test_models.py gpu/t128 --tiny --tiny-head-dim 128 --formats bf16 \
  > /tmp/t128b.log 2>&1
[ -d gpu/tiny/hf-bf16 ] || python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1
MEMRA_LAB_ATTN_PERSIST=on MEMRA_ACT_TYPE=bf16 MEMRA_KV_TYPE=bf16 MEMRA_EXTRA_MODELS=gpu/t128/hf-bf16 \
  MEMRA_FORWARD_PART=fixtures timeout 90 $B/kernels/kernel_forward > $OUT/kf.log 2>&1
ts "kernel_forward bf16kv (persist) rc $? $(grep -E 'checks,' $OUT/kf.log | tail -1)"
grep -E 'CHECK failed' $OUT/kf.log | head -4
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2 3; do
  for s in off on; do
    XA="--ubatch 4096" TO=60 mbench "r$r persist $s ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_ATTN_PERSIST=$s
  done
done
[ "${PP512:-0}" = 1 ] && for r in 1 2; do
  for s in off on; do
    TO=60 mbench "r$r persist $s" $M pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_ATTN_PERSIST=$s
  done
done
ts "######## done"
