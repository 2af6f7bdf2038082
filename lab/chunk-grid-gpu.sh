#!/bin/bash
# lab/chunk-grid-gpu.sh NAME — one GPU call (sourcing lab/gpu-prelude.sh NAME: gpu/NAME.tar.xz holding x/bin/memra-server
# of main at or after 77774eb) that checks the scheduler's fixed prefill grid on the CUDA backend: the 8B BF16 model
# served at c=64 × 512 × 256 with --batch-tokens 2048, 1024 and 2048 again, each a fresh server. With the grid every
# 512-token prompt is one span whatever the step holds, so the three runs must print one texts_sha256 — the
# whole-prompt texts of the twenty-second run's call 6, 9dea640727fe71c7 (batch-tokens 40000) — where the old rule
# gave ea0dfbea3b26689c or 6a605453e29b9ab6 by arrival order. Also prints each run's aggregate tok/s and TTFT
# (the old rule, same model: 3129-3238 tok/s, TTFT p99 2.33-2.40 s at 2048) and the prefill steps' shapes; then
# 4096 and 8192 (the same texts again), whose TTFT and aggregate say whether the CUDA default (2048 since b9c1eb1)
# should be larger (the old rule with every prompt whole at 40000: 3385-3479 tok/s, p99 2.03-2.08 s).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/chunk-grid-gpu.sh NAME (gpu/NAME.tar.xz)}"
# with x/kernel_attn in the tarball: the prefill checks first (2550651 reshaped the f32 cache's tile load; its
# digests must equal the twenty-second run's call 3, bench/round-h200-2026-12-03b.log)
if [ -x $B/x/kernel_attn ]; then
  timeout 200 $B/x/kernel_attn --prefill > $OUT/ka.log 2>&1; ts "kernel_attn --prefill rc $?"
  grep -E "checks|failed" $OUT/ka.log | tail -2; grep -o "digest [0-9a-f]*" $OUT/ka.log | tr '\n' ' '; echo
fi
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
run() { # label batch-tokens
  BATCH_TOKENS=$2 MEMRA_LOG_LEVEL=debug OUT=/tmp/srv BUILD=$B/x NO_BENCH=1 RUN_TMO=60 timeout 80 \
    bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/srv.txt 2>&1
  echo "$1 rc $? $(grep -o '"agg_tok_s": [0-9.]*\|"ttft_p50_ms": [0-9.]*\|"ttft_p99_ms": [0-9.]*\|"texts_sha256": "[0-9a-f]*"' /tmp/srv/load.log | tr '\n' ' ')"
  grep -E "step of [0-9]* sequences, [0-9]* prefill tokens" /tmp/srv/server.log |
    sed -E 's/.*step of ([0-9]*) sequences, ([0-9]*) prefill tokens.*/\1\/\2/' | tr '\n' ' '; echo
  rm -rf /tmp/srv
}
run b2048 2048; run b1024 1024; run b2048-again 2048; run b4096 4096; run b8192 8192
ts done
