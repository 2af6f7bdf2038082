#!/bin/bash
# lab/moe55-gpu.sh NAME — one call (~2 min): kernel_moe (its x16 pass: the quantized experts' grouped GEMVs on the
# 16-bit prepared x under bf16 activations), then kernel_forward's fixtures with bf16 activations and the tiny
# head_dim-128 Q4_K_M as an extra under MEMRA_GEMV_MMA=all and =off (Q6_K's tensor-core GEMV on two planes, Q4_K's
# dp4a X16 form, in the whole model). Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/moe55-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
( python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1
  python3 tools/make_test_models.py gpu/t128 --tiny --tiny-head-dim 128 --formats q4_k_m > /tmp/t128.log 2>&1 ) &
timeout 200 $B/kernels/kernel_moe --quick > $OUT/kernel_moe.log 2>&1
ts "kernel_moe --quick rc $? $(grep -E 'checks,' $OUT/kernel_moe.log | tail -1)"; grep -E "CHECK failed" $OUT/kernel_moe.log | head -5
grep -E "x16" $OUT/kernel_moe.log | head -12
wait
for mm in all off; do
  MEMRA_GEMV_MMA=$mm MEMRA_EXTRA_MODELS=gpu/t128/llama8b-q4_k_m.gguf MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures \
    timeout 150 $B/kernels/kernel_forward > $OUT/kf-$mm.log 2>&1
  ts "kernel_forward bf16 MEMRA_GEMV_MMA=$mm rc $? $(grep -E 'checks,' $OUT/kf-$mm.log | tail -1)"
  grep -E "CHECK failed" $OUT/kf-$mm.log | head -4
  grep -E "^\| (llamaq|llama8b)" $OUT/kf-$mm.log | cut -d'|' -f2,5,7,8 | tr '\n' ';'; echo
done
ts done
