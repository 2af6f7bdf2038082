#!/bin/bash
# lab/promote-rows-gpu.sh NAME — one GPU call (~4 min; BUDGET=seconds, default 420) on a build whose default
# MEMRA_GEMM_PROMOTE=auto promotes every type gemm_q.cu takes at ≥ 2048 rows (the 8B's k and v, 1024 rows, back on
# cuBLASLt with their dequantized copy): checks, then auto against `on` (every shape) on the random 8B Q8_0 and Q4_K_M.
# Pack: `make build` then `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Output ≤ 8 files.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/promote-rows-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-420} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MK=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
if part "1 checks" 100; then
  timeout 240 $B/kernels/kernel_gemm --quick > $O/1-gemm.log 2>&1; echo "kernel_gemm rc $? $(grep -E 'cases,' $O/1-gemm.log)"
  grep -E "FAIL|CHECK failed" $O/1-gemm.log | head -8
  for act in f32 bf16; do
    MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $O/1-kf-$act.log 2>&1
    echo "kernel_forward $act rc $? $(grep -E 'checks,' $O/1-kf-$act.log | tail -1)"; grep -E "CHECK failed" $O/1-kf-$act.log | head -4
  done
fi
wait $MK; ts "m8q $(tail -1 /tmp/makeq.log)"
bench() { TO=90 mbench "$2 $1" /tmp/m8q/llama8b-$2.gguf "${@:3}"; } # label, model, tests, VAR=value...
if part "2 pp, MEMRA_GEMM_PROMOTE auto / on" 100; then
  for r in 1 2; do
    for m in q4_k_m q8_0; do
      for p in auto on; do
        bench "r$r bf16 $p" $m pp128,pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p
        bench "r$r exact $p" $m pp512,pp4096 MEMRA_GEMM_PROMOTE=$p
      done
    done
  done
  for m in q4_k_m q8_0; do
    for p in auto on; do XA="--ubatch 4096" bench "bf16 ub4096 $p" $m pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p; done
  done
fi
ts "######## done"
