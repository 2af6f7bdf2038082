#!/bin/bash
# lab/gemv-q-gpu.sh — one GPU call (~2-3 min after the machine starts): the standalone batch-1 Q4_K / Q6_K / Q8_0
# GEMV prototype (lab/gemv-q/gemv_q_test.cu, a weight stream: one or two persistent CTAs an SM, a producer warp
# bulk-copying a contiguous range through a shared-memory ring, the product's decoders and dp4a on it). Every
# variant is checked first (odd shapes, then the 8B shapes on the timed data: double reference ≤ 1e-4, the product's
# dp4a bits where a row is one chunk, one cb one set of bits), then timed against the product's kernels (cuda_gemv's
# engine form and its other launch shapes) at the Llama-3-8B shapes, with PDL (as the product launches) and without.
# What to look for: "all checks passed"; in the PDL tables each variant's %BW on the 2-66 MB shapes against the
# engine and best-product columns (issue 5 wants ≥ 80 % of 4.3 TB/s; today 22-64 %), half against half-e (what the
# next GEMV streaming beside this one is worth), big against half (ring depth, 16 against 8 consumer warps), two
# (two CTAs an SM), e-cb8 / e-cb4 (smaller stages, split K), e-xl1 (x through L1); carry / carry16 / carry-cb8
# (lab/gemv-q/stream_carry.cuh: the engine's own bits — Q4_K's tensor-core sums through dp4a — which a landing
# needs: "= engine" on every check line, and their %BW against half-e's, what keeping the bits costs); the
# "place" lines (a 1-CTA/SM variant with "at most 2 a SM" ran unevenly); the serial tables (the launch's fixed
# cost without overlap).
# A hung variant: the program's watchdog exits 3 naming it (skip=NAME) and the run is repeated without it.
# Prepare (here): the nvcc line in the program's header (links build/*.a of `make build`) → gpu/gemv_q_test
#   (lab/prepare-gpu.sh does it; `gpu/gemv_q_test --plans` prints every variant's launch plan without a GPU);
#   carry ["gpu/gemv_q_test"].
cd "$(dirname "$0")/.."
B=gpu/gemv_q_test
T0=$(date +%s)
echo "== before"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu --format=csv
ldd $B | grep -E 'cublas|not found'
SKIP=
for try in 1 2 3 4 5 6 7 8; do
  left=$(( 320 - ($(date +%s) - T0) ))
  if [ $left -lt 40 ]; then echo "== no time left for try $try"; break; fi
  echo "== try $try${SKIP:+ (--skip $SKIP)}, timeout ${left} s"
  timeout -k 10 $left $B ${SKIP:+--skip $SKIP} 2>&1 | tee $OUT/gemv_q_test.$try.log
  rc=${PIPESTATUS[0]}
  echo "rc $rc"
  [ "$rc" = 3 ] || break
  hung=$(grep -o 'skip=[A-Za-z0-9-]*' $OUT/gemv_q_test.$try.log | tail -1 | cut -d= -f2)
  [ -n "$hung" ] || break
  SKIP=${SKIP:+$SKIP,}$hung
done
echo "== after ($(( $(date +%s) - T0 )) s)"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
