#!/bin/bash
# lab/narrow-gpu.sh NAME — one GPU call (~4 min; BUDGET=seconds, default 300): gemm_q.cu's narrow form (64-row CTAs,
# two an SM, one partial) for short spans against the wide one. Checks first (kernel_gemm --quick: a short span's
# bits inside a long one's GEMM, across the two forms; kernel_forward's fixtures at the defaults and with every span
# of ≥ 4 tokens promoted, f32 and bf16), then memra-bench pp32-pp512 on the random 8B Q8_0 and Q4_K_M with
# MEMRA_LAB_GEMM_Q_NARROW_T=0 (always wide) and 512 (narrow up to 512 tokens).
# Pack: `make build` then `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Output ≤ 8 files.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/narrow-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-300} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MQ=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
if part "1 checks" 100; then
  timeout 200 $B/kernels/kernel_gemm --quick > /tmp/1-gemm.log 2>&1; echo "kernel_gemm rc $? $(grep -E 'cases,' /tmp/1-gemm.log)"
  grep -E "FAIL|CHECK failed" /tmp/1-gemm.log | head -6; grep -E "span of  40.*300" /tmp/1-gemm.log
  for v in "f32" "bf16" "f32 MEMRA_GEMM_PROMOTE=on MEMRA_GEMM_MIN_TOKENS=4" "bf16 MEMRA_GEMM_PROMOTE=on MEMRA_GEMM_MIN_TOKENS=4"; do
    set -- $v
    env MEMRA_ACT_TYPE=$1 ${2:-X=1} ${3:-Y=1} MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > /tmp/1-kf.log 2>&1
    echo "kernel_forward $v rc $? $(grep -E 'checks,' /tmp/1-kf.log | tail -1)"; grep -E "CHECK failed" /tmp/1-kf.log | head -4
    cat /tmp/1-kf.log >> /tmp/1-kf-all.log
  done
  cat /tmp/1-gemm.log /tmp/1-kf-all.log > $O/1-checks.log
fi
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
bench() { TO=90 mbench "$2 $1" /tmp/m8q/llama8b-$2.gguf "${@:3}"; } # label, model, tests, VAR=value...
if part "2 pp, narrow up to 0 / 512 tokens" 60; then
  for r in 1 2; do
    for m in q8_0 q4_k_m; do
      for nt in 0 512; do
        bench "r$r bf16 narrow_t $nt" $m pp32,pp64,pp128,pp256,pp512 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_GEMM_Q_NARROW_T=$nt
        bench "r$r exact narrow_t $nt" $m pp32,pp64,pp128,pp256,pp512 MEMRA_LAB_GEMM_Q_NARROW_T=$nt
      done
    done
  done
fi
ts "######## done"
