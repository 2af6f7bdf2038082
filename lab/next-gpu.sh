#!/bin/bash
# lab/next-gpu.sh — the thirty-sixth session's waiting GPU work as ONE call (≤ 9.5 min after the machine starts), so
# that one machine start serves all of it (that session's later starts found no machine). In order, each part under
# the time left (a part that would not fit is skipped and says so):
#   1. the promoted GGUF prefill GEMM in the product (lab/gemm-q.patch; pack gq = HEAD + the patch, lab/prepare-gpu.sh):
#      lab/gemm-q-land-gpu.sh gq checks — kernel_gemm --quick, kernel_forward's fixtures with it on (~40 s);
#   2. kernel_forward's fixtures with the defaults on the same build: the llamaq fixtures in Q5_0, Q5_1, IQ4_NL,
#      Q2_K and Q3_K (added after those types' GPU GEMV landed) GPU vs CPU, greedy, batch / rollback / paged (~15 s),
#      then kernel_moe --quick (the MoE experts' block-FP8 upload, reworked since its last GPU run);
#   3. the promoted GEMM's speed: random 8B Q4_K_M and Q8_0, memra-bench pp512 / pp4096 with bf16 activations
#      (and pp4096 at --ubatch 4096), MEMRA_GEMM_PROMOTE off / on, Q4_K_M exact off / on (~4 min with the models);
#   4. the batch-1 Q4_K / Q6_K GEMV as a weight stream (lab/gemv-q-gpu.sh: checks, then each variant's %BW at the
#      8B shapes against the product's kernels, the mq variants with the engine's tensor-core bits; ~2 min);
#   5. the standalone promoted-GEMM prototype re-timed on correct operands (lab/gemm-q/gemm_q_test, T 4096, tiles of
#      128 and 192 tokens, with and without the mins' term; ~1 min).
# What to look for: 1-2 "0 failed" (test_deep_small needs gpu/tiny: made here first); 3 promote on against off (the
# goal: GGUF pp4096 ≥ 30 k; today 17.1 k / 19.2 k at ubatch 4096 with bf16 activations, 12 k exact); 4 the variants'
# %BW on the 2-66 MB shapes (today 22-64 %; the goal needs ≥ 80 %); 5 the layer's TFLOP/s (≥ 600 for the 30 k).
# Prepare (here): `bash lab/prepare-gpu.sh` (~25 min on 2 cores: .whl, gpu/gq.tar.xz, gpu/gemv_q_test,
#   gpu/gemm_q_test); carry ["gpu/gq.tar.xz", "gpu/gemv_q_test", "gpu/gemm_q_test", ".whl"] (~57 MiB with the tree).
# Usage: bash lab/next-gpu.sh [PACK] (default gq).
cd "$(dirname "$0")/.."
T0=$(date +%s)
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
part() { # label, seconds it needs: prints the label, returns 1 (skip) when less time is left
  if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi
  echo "######## $1 (t=$(( $(date +%s) - T0 )) s)"
}
O=$OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
P=${1:-gq}
PRELUDE_MODEL=0 . lab/gpu-prelude.sh $P # B=/tmp/$P, wheels in /tmp/site
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $O/tiny.log 2>&1 || echo "tiny model failed"
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $O/makeq.log 2>&1; echo "make rc $?" >> $O/makeq.log ) &
MK=$!
if part "1 gemm-q checks" 60; then
  OUT=$O timeout 100 bash lab/gemm-q-land-gpu.sh $P checks > $O/1-checks.txt 2>&1; echo "rc $?"
  grep -E "rc |FAIL|CHECK failed|cases," $O/1-checks.txt | head -20
fi
if part "2 kernel_forward fixtures, defaults; kernel_moe" 60; then
  MEMRA_FORWARD_PART=fixtures timeout 120 $B/kernels/kernel_forward > $O/2-kf.log 2>&1; echo "rc $?"
  grep -E "FAIL|CHECK failed|cases," $O/2-kf.log | head -10
  grep -E "q5_0|q5_1|iq4_nl|q2_k|q3_k" $O/2-kf.log | head -10
  timeout 90 $B/kernels/kernel_moe --quick > $O/2-moe.log 2>&1; echo "kernel_moe rc $?"
  grep -E "FAIL|CHECK failed|cases,|checks" $O/2-moe.log | head -10
fi
wait $MK; tail -1 $O/makeq.log
if part "3 gemm-q bench" 200; then
  for f in q4_k_m q8_0; do
    M=/tmp/m8q/llama8b-$f.gguf
    for p in off on; do
      MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p timeout 50 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 \
        --reps 3 2>&1 | grep -E "^\| .*pp|rror|memra-bench:" | sed "s/^/$f bf16 promote $p: /"
      MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p timeout 50 $B/bin/memra-bench $M --backend cuda --tests pp4096 \
        --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror|memra-bench:" | sed "s/^/$f bf16 promote $p ub4096: /"
    done
  done
  for p in off on; do
    MEMRA_GEMM_PROMOTE=$p timeout 50 $B/bin/memra-bench /tmp/m8q/llama8b-q4_k_m.gguf --backend cuda --tests pp4096 \
      --reps 3 2>&1 | grep -E "^\| .*pp|rror|memra-bench:" | sed "s/^/q4_k_m exact promote $p: /"
  done
fi
if part "4 gemv-q" 100; then
  mkdir -p $O/gemv-q
  OUT=$O/gemv-q timeout $(( $(left) - 70 )) bash lab/gemv-q-gpu.sh > $O/4-gemv-q.txt 2>&1; echo "rc $?"
  grep -E "^\||checks|WATCHDOG|rc " $O/4-gemv-q.txt | head -80
fi
if part "5 gemm-q prototype" 60; then
  for c in "--bn 192 --ns 5" "--bn 128 --ns 5" "--bn 192 --ns 5 --mins" "--bn 128 --ns 5 --mins"; do
    echo "-- T 4096 $c"; timeout 25 gpu/gemm_q_test --t 4096 $c 2>&1 | grep -E "layer|FAIL|passed"
  done
fi
echo "######## done (t=$(( $(date +%s) - T0 )) s)"
cd $O && tar -czf logs.tgz --exclude=logs.tgz . 2>/dev/null && find . -mindepth 1 ! -name logs.tgz -delete
