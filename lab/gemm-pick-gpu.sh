#!/bin/bash
# lab/gemm-pick-gpu.sh NAME — the product's MEMRA_GEMM_PICK=time (gemm.cu plan_time_pick; lab/gemm-holes.patch
# measured the idea) checked and timed in one short call (~2 min after the start): kernel_gemm --quick (the GEMM's
# checks, spans alone = inside a larger GEMM, with timed plans), kernel_forward's fixtures with every span of ≥ 4
# tokens on the GEMM (f32 and bf16 activations), then memra-bench ppN on the random 8B BF16 and Q4_K_M (its GEMM on cuBLASLt), bf16
# activations, time against first. Pack: `make build`, `bash lab/final-pack.sh NAME`; carry gpu/NAME.tar.xz, .whl.
cd "$(dirname "$0")/.."
O=$OUT
. lab/gpu-prelude.sh "${1:?usage: lab/gemm-pick-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > $O/makeq.log 2>&1 ) &
MQ=$!
[ -d gpu/tiny ] || python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $O/tiny.log 2>&1
timeout 200 $B/kernels/kernel_gemm --quick > $O/gemm.log 2>&1; ts "kernel_gemm rc $?"
grep -E "FAIL|CHECK failed|cases," $O/gemm.log | head -10
for act in f32 bf16; do
  MEMRA_ACT_TYPE=$act MEMRA_GEMM_MIN_TOKENS=4 MEMRA_FORWARD_PART=fixtures timeout 120 $B/kernels/kernel_forward > $O/kf-$act.log 2>&1
  ts "kernel_forward $act min 4 rc $?"; grep -E "CHECK failed|cases," $O/kf-$act.log | head -6
done
wait $MK $MQ; ts "models: $(tail -1 $O/make.log) / $(tail -1 $O/makeq.log)"
for pk in time first; do
  TO=120 mbench "bf16 $pk" /tmp/m8b/hf-bf16 pp8,pp16,pp24,pp32,pp48,pp64,pp128,pp512 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PICK=$pk
  TO=120 mbench "q4_k_m $pk" /tmp/m8q/llama8b-q4_k_m.gguf pp16,pp32,pp48,pp64,pp128,pp512 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PICK=$pk
done
ts "######## done"
