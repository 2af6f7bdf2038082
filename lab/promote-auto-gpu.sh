#!/bin/bash
# lab/promote-auto-gpu.sh NAME — one GPU call (~5 min; BUDGET=seconds, default 500) on a build whose default
# MEMRA_GEMM_PROMOTE=auto promotes every type gemm_q.cu takes (the min types' term as extra k tiles), the min types
# from 32 tokens: its checks, then auto against `plain` (the thirty-ninth run's default: the types without a min).
# Pack: `make build` then `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Output ≤ 8 files.
#   1. kernel_gemm --quick; kernel_forward's fixtures at the defaults, f32 then bf16 activations (one at a time:
#      each sizes its KV pool from the free memory);
#   2. memra-bench on the random 8B Q4_K_M: pp16-pp4096 auto / plain, bf16 and exact activations, twice; pp4096 at
#      --ubatch 4096; tg128 (the decode path untouched: a check of the machine).
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/promote-auto-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-500} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MK=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
if part "1 checks" 120; then
  timeout 240 $B/kernels/kernel_gemm --quick > $O/1-gemm.log 2>&1; echo "kernel_gemm rc $? $(grep -E 'cases,' $O/1-gemm.log)"
  grep -E "FAIL|CHECK failed" $O/1-gemm.log | head -8
  for act in f32 bf16; do
    MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $O/1-kf-$act.log 2>&1
    echo "kernel_forward $act rc $? $(grep -E 'checks,' $O/1-kf-$act.log | tail -1)"; grep -E "CHECK failed" $O/1-kf-$act.log | head -4
  done
fi
wait $MK; ts "m8q $(tail -1 /tmp/makeq.log)"
bench() { TO=90 mbench "$1" /tmp/m8q/llama8b-q4_k_m.gguf "${@:2}"; } # label, tests, VAR=value...
if part "2 Q4_K_M pp, MEMRA_GEMM_PROMOTE auto / plain" 120; then
  for r in 1 2; do
    for p in auto plain; do
      bench "r$r bf16 $p" pp16,pp24,pp32,pp48,pp64,pp128,pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p
      bench "r$r exact $p" pp16,pp32,pp64,pp512,pp4096 MEMRA_GEMM_PROMOTE=$p
    done
  done
  for p in auto plain; do XA="--ubatch 4096" bench "bf16 ub4096 $p" pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p; done
  bench "defaults" tg128
fi
ts "######## done"
