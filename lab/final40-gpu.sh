#!/bin/bash
# lab/final40-gpu.sh NAME — the fortieth session's last GPU call (~6 min; BUDGET=seconds, default 400): the final
# build (gemm_plan.cu split from gemm.cu, the promoted GEMM's min tiles and two partials) checked, its prefill and
# decode figures on the random 8B BF16 / Q8_0 / Q4_K_M, and one lab A/B: 6 pipeline stages with one x part
# (MEMRA_LAB_GEMM_Q_STAGES=6) against 5. Pack: `make build` then `bash lab/final-pack.sh NAME`; carry
# ["gpu/NAME.tar.xz", ".whl"]. Output ≤ 8 files.
cd "$(dirname "$0")/.."
O=$OUT
. lab/gpu-prelude.sh "${1:?usage: lab/final40-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b) in the background
left() { echo $(( ${BUDGET:-400} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MQ=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
if part "1 checks" 100; then
  for k in gemm moe; do
    timeout 200 $B/kernels/kernel_$k --quick > /tmp/1-$k.log 2>&1; echo "kernel_$k rc $? $(grep -E 'cases,' /tmp/1-$k.log)"
    grep -E "FAIL|CHECK failed" /tmp/1-$k.log | head -6
  done
  for act in f32 bf16; do
    MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > /tmp/1-kf-$act.log 2>&1
    echo "kernel_forward $act rc $? $(grep -E 'checks,' /tmp/1-kf-$act.log | tail -1)"; grep -E "CHECK failed" /tmp/1-kf-$act.log | head -4
  done
  cat /tmp/1-*.log > $O/1-checks.log
fi
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
bench() { TO=90 mbench "$2 $1" /tmp/m8q/llama8b-$2.gguf "${@:3}"; } # label, model, tests, VAR=value...
if part "2 GGUF pp and tg, stages 5 / 6" 100; then
  for r in 1 2; do
    for m in q8_0 q4_k_m; do
      for st in 5 6; do bench "r$r bf16 stages $st" $m pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_GEMM_Q_STAGES=$st; done
    done
  done
  for m in q8_0 q4_k_m; do
    bench "exact" $m pp512,pp4096
    XA="--ubatch 4096" bench "bf16 ub4096" $m pp4096 MEMRA_ACT_TYPE=bf16
    bench "defaults" $m tg128
  done
fi
wait $MK; ts "m8b: $(tail -1 $O/make.log)"
if part "3 BF16" 60; then
  TO=120 mbench "bf16 model, bf16 act" /tmp/m8b/hf-bf16 pp512,pp4096,tg128 MEMRA_ACT_TYPE=bf16
  XA="--ubatch 4096" TO=90 mbench "bf16 model, bf16 act ub4096" /tmp/m8b/hf-bf16 pp4096 MEMRA_ACT_TYPE=bf16
fi
ts "######## done"
