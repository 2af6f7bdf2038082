#!/bin/bash
# lab/gemm-q-ab-gpu.sh NAME VAR — one GPU call (~3 min; BUDGET=seconds, default 480): a lab switch VAR of the
# promoted GEMM (gemm_q.cu; the patch's default on, VAR=off the form before) on against off. Checks first
# (kernel_gemm --quick, kernel_forward's fixtures f32 / bf16, at the default on), then memra-bench pp on the random 8B
# Q8_0 and Q4_K_M and kernel_gemm's timing table both ways. Used for lab/gemm-q-cluster.patch
# (MEMRA_LAB_GEMM_Q_CLUSTER) and the two-partial main loop (MEMRA_LAB_GEMM_Q_TWO).
# Pack: `make build` then `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Output ≤ 8 files.
cd "$(dirname "$0")/.."
O=$OUT
V=${2:?usage: lab/gemm-q-ab-gpu.sh NAME VAR}
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemm-q-ab-gpu.sh NAME VAR}"
left() { echo $(( ${BUDGET:-480} - ($(date +%s) - T0) )); }
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
if part "2 pp, $V on / off" 100; then
  for r in 1 2; do
    for m in q8_0 q4_k_m; do
      for c in on off; do
        bench "r$r bf16 $V $c" $m pp512,pp4096 MEMRA_ACT_TYPE=bf16 $V=$c
        bench "r$r exact $V $c" $m pp512,pp4096 $V=$c
      done
    done
  done
  for c in on off; do XA="--ubatch 4096" bench "bf16 ub4096 $V $c" q8_0 pp4096 MEMRA_ACT_TYPE=bf16 $V=$c; done
fi
if part "3 kernel_gemm timing, $V on / off" 100; then
  for c in on off; do
    env "$V=$c" timeout 100 $B/kernels/kernel_gemm > $O/3-gemm-$c.log 2>&1; echo "$V $c rc $?"
    grep -E "^\| (Q4_K|Q8_0) \| (xbf16|exact) promoted" $O/3-gemm-$c.log | head -24
  done
fi
ts "######## done"
