#!/bin/bash
# lab/att16-gpu.sh NAME BASE — one GPU call (~6 min) for lab/att16.patch: with bf16 activations, when a layer's
# attention is one launch of the wgmma kernel, it writes the o GEMM's bf16 input itself (cuda_attn_prefill_bf16,
# cuda_forward.c att_claim) instead of f32 att and the rounding kernel after it (1.0 ms of a 4096-token H100 pass).
# Pack NAME = HEAD + the patch with BASE (a pack of HEAD) as x0: `bash lab/final-pack.sh NAME BASE`; BASE's
# kernel_forward alone as gpu/BASEkf.tar.xz (`tar -cJf gpu/BASEkf.tar.xz -C /tmp BASE/kernels/kernel_forward`).
# Carry ["gpu/NAME.tar.xz", "gpu/BASEkf.tar.xz", ".whl"].
#   1. kernel_forward under bf16 activations on a bf16 KV cache with the tiny head_dim-128 BF16 model as an extra
#      (its attention on the wgmma kernel), BASE's and NAME's: the forty-fifth run's call 1 saw 2 failed checks
#      there (q2_k's greedy after a chunked prefill; the extra model's batch of 16 / 5 against alone) — the same in
#      BASE means they are not the patch's;
#   2. kernel_attn --prefill-wg to its end: each wgmma form's bf16 output against att rounded, bit for bit;
#   3. memra-bench, random 8B BF16, bf16 activations, pp4096 at --ubatch 4096, three rounds x0 / NAME, then pp4096
#      at the default ubatch once each; the SM clock and power while they run.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/att16-gpu.sh NAME BASE}"
BASE=${2:?usage: lab/att16-gpu.sh NAME BASE}
tar -xJf "gpu/${BASE}kf.tar.xz" -C /tmp "$BASE/kernels/kernel_forward"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
python3 tools/make_test_models.py gpu/t128 --tiny --tiny-head-dim 128 --formats bf16 > /tmp/t128.log 2>&1
ts "t128 made"
for kf in /tmp/$BASE/kernels/kernel_forward $B/kernels/kernel_forward; do
  n=$(basename $(dirname $(dirname $kf)))
  MEMRA_EXTRA_MODELS=gpu/t128/hf-bf16 MEMRA_KV_TYPE=bf16 MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures \
    timeout 100 $kf > $OUT/kf-kv16-$n.log 2>&1
  ts "$n kernel_forward bf16 act, bf16 KV, + t128 rc $? $(grep -E 'checks,' $OUT/kf-kv16-$n.log | tail -1)"
  grep -E 'CHECK failed' $OUT/kf-kv16-$n.log | head -4
  grep -E '^\| (hf-bf16|llamaq/q2_k)' $OUT/kf-kv16-$n.log
done
timeout 150 $B/kernels/kernel_attn --prefill-wg > $OUT/kpwg.log 2>&1
ts "kernel_attn --prefill-wg rc $? $(grep -E '^ok|^FAIL' $OUT/kpwg.log | tr '\n' ' ') bf16 output: \
$(grep -c 'bf16 output: att rounded, bit-identical' $OUT/kpwg.log) bit-identical, $(grep -c 'bf16 output: DIFF' \
$OUT/kpwg.log) different"
grep -E 'CHECK failed' $OUT/kpwg.log | head -4
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 200 > $OUT/clk.log 2>&1 &
CLK=$!
for r in 1 2 3; do
  MB=$B/x0/memra-bench XA="--ubatch 4096" TO=80 mbench "r$r base bf16-act ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16
  XA="--ubatch 4096" TO=80 mbench "r$r att16 bf16-act ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16
done
MB=$B/x0/memra-bench TO=80 mbench "base bf16-act" $M pp4096 MEMRA_ACT_TYPE=bf16
TO=80 mbench "att16 bf16-act" $M pp4096 MEMRA_ACT_TYPE=bf16
kill $CLK
ts "SM clock MHz while benchmarking (samples, min / median / max; power W max): $(awk -F', ' '{print $1+0}' \
  $OUT/clk.log | sort -n | awk '{a[NR]=$1} END {print NR, a[1], a[int((NR+1)/2)], a[NR]}') \
  $(awk -F', ' '{print $2+0}' $OUT/clk.log | sort -n | tail -1)"
ts "######## done"
