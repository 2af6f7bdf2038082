#!/bin/bash
# lab/gemv-stream-gpu.sh NAME — one GPU call (~6-8 min): the product form of the lone token's quantized GEMV as a
# weight stream (lab/gemv-stream.patch: src/backend/cuda/gemv_stream.cu, MEMRA_GEMV_STREAM off / on / 16, default
# off), pack NAME = HEAD + the patch (lab/prepare-gpu.sh builds it as gs). In order, each part under the time left:
#   1. kernel_gemv --stream: every check, the stream's among them (every quantized type, 8 / 16 warps, static and
#      dyn, the engine's bits alone and in a batch of 2, that it ran each shape) — "stream" lines, 0 failed — and,
#      when all pass, its table: Q4_K / Q6_K / Q8_0 at the 8B shapes, the engine's kernel against the stream's four
#      forms, back-to-back launches with PDL (µs and %BW of 4.3 TB/s; today 22-64 % on the 2-66 MB shapes);
#   2. kernel_forward's fixtures with MEMRA_GEMV_STREAM=on, 16 and dyn: GPU vs CPU, greedy, batch vs alone (a lone
#      token now streams while a batch does not: their bits must still agree) — 0 failed;
#   3. memra-bench tg128 on the random 8B Q4_K_M and Q8_0: MEMRA_GEMV_STREAM off / on / 16 / dyn / dyn16, then off /
#      on / dyn again (issue 5's goals 740 / 440; today 423 / 348).
# What to look for: 1-2 "0 failed"; 1's table: the stream's %BW (≥ 80 % is the goal), 16 warps against 8, dyn
# against static; 3 the forms against off. If it passes and wins, land: `git apply lab/gemv-stream.patch`, MEMRA_GEMV_STREAM's default → the
# winner (cuda_ctx.cu, docs/FLAGS.md), figures in bench/RESULTS.md. A hang: the part's timeout names it.
# Prepare: lab/prepare-gpu.sh (gpu/gs.tar.xz, .whl); carry ["gpu/gs.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
T0S=$(date +%s)
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0S) )); }
part() { # label, seconds it needs
  if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi
  echo "######## $1 (t=$(( $(date +%s) - T0S )) s)"
}
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemv-stream-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $O/makeq.log 2>&1; echo "make rc $?" >> $O/makeq.log ) &
MK=$!
[ -d gpu/tiny ] || python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $O/tiny.log 2>&1
if part "1 kernel_gemv --stream (checks, then the table)" 120; then
  timeout 280 $B/kernels/kernel_gemv --stream > $O/1-gemv.log 2>&1; rc=$?; echo "rc $rc"
  grep -E "^check stream|FAIL|CHECK failed|cases," $O/1-gemv.log | head -120
  grep -E "^\|" $O/1-gemv.log | tail -24
  if [ $rc = 124 ]; then # a hung stream kernel would hang every later part too
    echo "######## kernel_gemv timed out (the last lines of 1-gemv.log name where): parts 2-3 skipped"
    tail -5 $O/1-gemv.log; exit 1
  fi
fi
if part "2 kernel_forward fixtures, stream on / 16 / dyn" 75; then
  for s in on 16 dyn; do
    MEMRA_GEMV_STREAM=$s MEMRA_FORWARD_PART=fixtures timeout 90 $B/kernels/kernel_forward > $O/2-kf-$s.log 2>&1
    echo "stream $s: rc $?"
    grep -E "FAIL|CHECK failed|cases," $O/2-kf-$s.log | head -10
  done
fi
wait $MK; tail -1 $O/makeq.log
if part "3 memra-bench tg128 off / on / 16 / dyn / dyn16" 150; then
  for round in 1 2; do
    modes="off on 16 dyn dyn16"; [ $round = 2 ] && modes="off on dyn"
    for f in q4_k_m q8_0; do
      for s in $modes; do
        MEMRA_GEMV_STREAM=$s timeout 40 $B/bin/memra-bench /tmp/m8q/llama8b-$f.gguf --backend cuda --tests tg128 \
          --reps 3 2>&1 | grep -E "^\| .*tg|rror|memra-bench:" | cut -d'|' -f6-9 | sed "s/^/round $round $f stream $s: /"
      done
    done
  done
fi
echo "######## done (t=$(( $(date +%s) - T0S )) s)"
