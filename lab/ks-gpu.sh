#!/bin/bash
# lab/ks-gpu.sh NAME — one GPU call (~6-8 min; BUDGET=seconds, default 570), pack NAME = this build with gq's
# memra-bench as NAME/x0/memra-bench (`lab/final-pack.sh NAME gq`; carry ["gpu/NAME.tar.xz", ".whl"]). In order,
# each part under the time left (a part that would not fit says so):
#   2. kernel_gemv --ks: every check (the dp4a kernels' rows alone = in a batch at K split 1 and 4 among them), then
#      the table: the dp4a types at the 8B shapes, batches 1 / 2 / 4 / 8, ks1 (staged) against ks4 (register);
#   3. kernel_forward's fixtures with MEMRA_GEMV_KSPLIT=4 (GPU vs CPU, greedy, batch 16 vs alone) — 0 failed;
#   4. memra-bench tg128, tg128x8 on the random 8B Q8_0 / Q4_K_M, MEMRA_GEMV_KSPLIT 1 / 4 / long, and Q4_K_M with
#      MEMRA_GEMV_MMA=off at 1 / 4 (Q4_K on the dp4a kernels);
#   1. the promoted GGUF prefill GEMM's speed (lab/gemm-q.patch, its checks passed in the thirty-eighth run):
#      memra-bench pp512 / pp4096 with bf16 activations, MEMRA_GEMM_PROMOTE off / on, Q4_K_M exact off / on; 1b
#      pp4096 at --ubatch 4096;
#   4b. part 4 again with tg128x4;
#   5. kernel_forward's fixtures with MEMRA_ACT_TYPE=bf16 MEMRA_GEMM=fast (GGUF weights rounded to bf16 in the
#      prefill GEMM, as transformers computes a GGUF model loaded in bf16): how far from the CPU, against 5e-3.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/ks-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $O/makeq.log 2>&1 &
MK=$!
[ -d gpu/tiny ] || python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $O/tiny.log 2>&1
if part "2 kernel_gemv --ks" 150; then
  timeout 240 $B/kernels/kernel_gemv --ks > $O/2-gemv.log 2>&1; echo "rc $?"
  grep -E "FAIL|CHECK failed|cases," $O/2-gemv.log | head -20
  grep -E "^check dp4a" $O/2-gemv.log | head -4
  sed -n '/^## dp4a/,$p' $O/2-gemv.log
fi
if part "3 kernel_forward fixtures, MEMRA_GEMV_KSPLIT=4" 60; then
  MEMRA_GEMV_KSPLIT=4 MEMRA_FORWARD_PART=fixtures timeout 90 $B/kernels/kernel_forward > $O/3-kf.log 2>&1
  echo "rc $?"; grep -E "FAIL|CHECK failed|cases," $O/3-kf.log | head -10
  grep -E "^\| llamaq" $O/3-kf.log | head -14
fi
wait $MK; tail -1 $O/makeq.log
bench() { TO=60 mbench "$2 $1" /tmp/m8q/llama8b-$2.gguf "${@:3}"; } # label, model (q8_0 / q4_k_m), tests, VAR=value...
if part "4 tg ks 1 / 4 / long" 90; then
  for m in q8_0 q4_k_m; do
    for k in 1 4 long; do bench "round 1 ks $k" $m tg128,tg128x8 MEMRA_GEMV_KSPLIT=$k; done
  done
  for k in 1 4; do # Q4_K on the dp4a kernels too (kernel_gemv's prototype had them ahead of the tensor cores on down)
    bench "round 1 mma off ks $k" q4_k_m tg128,tg128x8 MEMRA_GEMV_MMA=off MEMRA_GEMV_KSPLIT=$k
  done
fi
if part "1 gemm-q pp (x0 = gq's memra-bench)" 100; then
  for m in q4_k_m q8_0; do
    for p in off on; do
      MB=$B/x0/memra-bench bench "bf16 promote $p" $m pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p
    done
  done
  for p in off on; do
    MB=$B/x0/memra-bench bench "exact promote $p" q4_k_m pp512,pp4096 MEMRA_GEMM_PROMOTE=$p
  done
fi
if part "1b gemm-q pp4096 ubatch 4096" 60; then
  for m in q4_k_m q8_0; do
    for p in off on; do
      XA="--ubatch 4096" MB=$B/x0/memra-bench bench "bf16 ub4096 promote $p" $m pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p
    done
  done
fi
if part "4b tg again, and x4" 90; then
  for m in q8_0 q4_k_m; do
    for k in 1 4 long; do bench "round 2 ks $k" $m tg128,tg128x4,tg128x8 MEMRA_GEMV_KSPLIT=$k; done
  done
fi
if part "5 kernel_forward fixtures, bf16 activations, MEMRA_GEMM=fast" 60; then
  MEMRA_ACT_TYPE=bf16 MEMRA_GEMM=fast MEMRA_FORWARD_PART=fixtures timeout 90 $B/kernels/kernel_forward > $O/5-kf.log 2>&1
  echo "rc $?"; grep -E "FAIL|CHECK failed|cases," $O/5-kf.log | head -10
  grep -E "^\| " $O/5-kf.log | head -40
fi
ts "######## done"
