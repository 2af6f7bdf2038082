#!/bin/bash
# lab/minq-gpu.sh NAME — one GPU call (~8 min; BUDGET=seconds, default 560) on a build where the promoted prefill
# GEMM (gemm_q.cu) takes the min types' Σ m·Σx as extra k tiles of the same kernel (instead of an FMA a block and
# accumulator), and on the thirty-ninth session's changes no GPU has run (the timed pick narrowed to ≤ 128 columns,
# its memo, the MoE experts untimed, kept dequantized copies from 32 tokens). Pack: `make build` then
# `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Parts, each under the time left:
#   1. kernel_gemm --quick (the promoted min types against the reference, tolerance 2e-5), kernel_moe --quick;
#   2. kernel_forward's fixtures: defaults f32 / bf16, MEMRA_GEMM_PROMOTE=on with every span of ≥ 4 tokens on the
#      GEMM f32 / bf16 (two at a time);
#   3. memra-bench pp on the random 8B Q4_K_M, MEMRA_GEMM_PROMOTE auto / on, exact and bf16 activations (pp16-pp4096),
#      and pp4096 at --ubatch 4096 bf16; Q8_0 pp512 / pp4096 bf16 (unchanged kernel: the reference);
#   4. kernel_gemm's timing table (Q4_K promoted against cuBLASLt's two / three products);
#   5. tg128 / x4 / x8 Q8_0 and Q4_K_M at the defaults (this GPU's issue-5 figures).
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/minq-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $O/makeq.log 2>&1; echo "rc $?" >> $O/makeq.log ) &
MK=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $O/tiny.log 2>&1 || ts "tiny model failed"
if part "1 kernel_gemm --quick, kernel_moe --quick" 150; then
  ( timeout 240 $B/kernels/kernel_gemm --quick > $O/1-gemm.log 2>&1; echo "rc $?" >> $O/1-gemm.log ) &
  ( timeout 240 $B/kernels/kernel_moe --quick > $O/1-moe.log 2>&1; echo "rc $?" >> $O/1-moe.log ) &
  wait $(jobs -p | grep -v "^$MK$")
  for f in gemm moe; do echo "kernel_$f $(tail -1 $O/1-$f.log)"; grep -E "FAIL|CHECK failed|cases," $O/1-$f.log | head -12; done
  grep -E "promoted Q4_K|promoted Q5_K|promoted Q4_1" $O/1-gemm.log | head -12
fi
kf() { # label, variables...
  local l=$1; shift
  ( env "$@" MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $O/2-kf-$l.log 2>&1; echo "rc $?" >> $O/2-kf-$l.log ) &
}
if part "2 kernel_forward fixtures" 90; then
  kf f32 MEMRA_ACT_TYPE=f32; kf bf16 MEMRA_ACT_TYPE=bf16; wait $(jobs -p | grep -v "^$MK$")
  kf on-f32 MEMRA_ACT_TYPE=f32 MEMRA_GEMM_PROMOTE=on MEMRA_GEMM_MIN_TOKENS=4
  kf on-bf16 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=on MEMRA_GEMM_MIN_TOKENS=4; wait $(jobs -p | grep -v "^$MK$")
  for l in f32 bf16 on-f32 on-bf16; do
    echo "kf $l $(tail -1 $O/2-kf-$l.log) $(grep -E 'checks,' $O/2-kf-$l.log | tail -1)"; grep -E "CHECK failed" $O/2-kf-$l.log | head -4
  done
fi
wait $MK; ts "m8q $(tail -1 $O/makeq.log)"
bench() { TO=90 mbench "$2 $1" /tmp/m8q/llama8b-$2.gguf "${@:3}"; } # label, model (q8_0 / q4_k_m), tests, VAR=value...
if part "3 pp, MEMRA_GEMM_PROMOTE auto / on" 120; then
  for r in 1 2; do
    for p in auto on; do
      bench "r$r bf16 promote $p" q4_k_m pp16,pp32,pp64,pp128,pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p
      bench "r$r exact promote $p" q4_k_m pp512,pp4096 MEMRA_GEMM_PROMOTE=$p
    done
  done
  for p in auto on; do XA="--ubatch 4096" bench "bf16 ub4096 promote $p" q4_k_m pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p; done
  bench "bf16" q8_0 pp512,pp4096 MEMRA_ACT_TYPE=bf16
fi
if part "4 kernel_gemm timing" 150; then
  timeout 140 $B/kernels/kernel_gemm > $O/4-gemm.log 2>&1; echo "rc $?"
  grep -E "^\| Q4_K|^\| Q8_0" $O/4-gemm.log | grep -v " fast" | head -60
fi
if part "5 tg at the defaults" 60; then
  for m in q8_0 q4_k_m; do bench "defaults" $m tg128,tg128x4,tg128x8; done
fi
ts "######## done"
