#!/bin/bash
# lab/gemm-q-cluster-gpu.sh NAME — one GPU call (~5 min; BUDGET=seconds, default 480): the promoted GEMM's cluster
# form (two CTAs of consecutive row tiles share the x tile, each copying half and multicasting it: 25 instead of 33 KB
# a stage from L2) against the one-CTA form (MEMRA_LAB_GEMM_Q_CLUSTER=off). Checks first (kernel_gemm --quick: both
# forms run there — 256-row shapes paired, 128 / 384 alone — kernel_forward's fixtures f32 / bf16), then kernel_gemm's
# timing table both ways and memra-bench pp on the random 8B Q8_0 and Q4_K_M.
# Pack: `make build` then `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Output ≤ 8 files.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemm-q-cluster-gpu.sh NAME}"
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
if part "2 pp, cluster on / off" 100; then
  for r in 1 2; do
    for m in q8_0 q4_k_m; do
      for c in on off; do
        bench "r$r bf16 cluster $c" $m pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_GEMM_Q_CLUSTER=$c
        bench "r$r exact cluster $c" $m pp512,pp4096 MEMRA_LAB_GEMM_Q_CLUSTER=$c
      done
    done
  done
  for c in on off; do XA="--ubatch 4096" bench "bf16 ub4096 cluster $c" q8_0 pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_GEMM_Q_CLUSTER=$c; done
fi
if part "3 kernel_gemm timing, cluster on / off" 100; then
  for c in on off; do
    MEMRA_LAB_GEMM_Q_CLUSTER=$c timeout 100 $B/kernels/kernel_gemm > $O/3-gemm-$c.log 2>&1; echo "cluster $c rc $?"
    grep -E "^\| (Q4_K|Q8_0) \| (xbf16|exact) promoted" $O/3-gemm-$c.log | head -24
  done
fi
ts "######## done"
