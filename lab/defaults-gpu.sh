#!/bin/bash
# lab/defaults-gpu.sh NAME — one GPU call (~6-8 min; BUDGET=seconds, default 560) on a build whose defaults are
# MEMRA_GEMV_KSPLIT=auto (layer matrices at K split 4, the output head at 1) and MEMRA_GEMM_PROMOTE=auto (the
# promoted prefill GEMM for the GGUF types without a min): checks first, then both against the other settings on
# the same machine. Pack: `make build` then `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
# Parts, each under the time left (a part that would not fit says so):
#   1. kernel_gemm --quick (the promoted GEMM's checks, the auto set's types) and kernel_gemv --quick (every check: rows
#      alone = in batches at K split 1 and 4);
#   2. kernel_forward's fixtures at the defaults, f32 then bf16 activations (GPU vs CPU, greedy, batch 16 = alone);
#   3. memra-bench tg128 / tg128x4 / tg128x8, random 8B Q8_0 and Q4_K_M, MEMRA_GEMV_KSPLIT auto / 1 / 4;
#   4. pp512 / pp4096: Q8_0 exact and bf16 activations MEMRA_GEMM_PROMOTE auto / off, Q4_K_M bf16 auto / on / off,
#      pp4096 at --ubatch 4096 bf16 Q8_0 auto / off;
#   5. part 3 again.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/defaults-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $O/makeq.log 2>&1 &
MK=$!
if part "1 kernel_gemm --quick, kernel_gemv" 150; then
  timeout 240 $B/kernels/kernel_gemm --quick > $O/1-gemm.log 2>&1; echo "kernel_gemm rc $?"
  grep -E "FAIL|CHECK failed|cases," $O/1-gemm.log | head -20
  timeout 200 $B/kernels/kernel_gemv --quick > $O/1-gemv.log 2>&1; echo "kernel_gemv rc $?"
  grep -E "FAIL|CHECK failed|cases," $O/1-gemv.log | head -20
fi
for act in f32 bf16; do
  if part "2 kernel_forward fixtures, defaults, $act activations" 60; then
    MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 120 $B/kernels/kernel_forward > $O/2-kf-$act.log 2>&1
    echo "rc $?"; grep -E "FAIL|CHECK failed|cases," $O/2-kf-$act.log | head -10
    grep -E "^\| llamaq" $O/2-kf-$act.log | head -14
  fi
done
wait $MK; tail -1 $O/makeq.log
bench() { TO=60 mbench "$2 $1" /tmp/m8q/llama8b-$2.gguf "${@:3}"; } # label, model (q8_0 / q4_k_m), tests, VAR=value...
tg() {
  for m in q8_0 q4_k_m; do
    for k in auto 1 4; do bench "$1 ks $k" $m tg128,tg128x4,tg128x8 MEMRA_GEMV_KSPLIT=$k; done
  done
}
if part "3 tg, MEMRA_GEMV_KSPLIT auto / 1 / 4" 100; then tg "round 1"; fi
if part "4 pp, MEMRA_GEMM_PROMOTE" 100; then
  for p in auto off; do
    bench "exact promote $p" q8_0 pp512,pp4096 MEMRA_GEMM_PROMOTE=$p
    bench "bf16 promote $p" q8_0 pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p
  done
  for p in auto on off; do bench "bf16 promote $p" q4_k_m pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p; done
  for p in auto off; do
    XA="--ubatch 4096" bench "bf16 ub4096 promote $p" q8_0 pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p
  done
fi
if part "5 tg again" 100; then tg "round 2"; fi
ts "######## done"
