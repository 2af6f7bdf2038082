#!/bin/bash
# lab/server-ab-gpu.sh NAME VAR A B [ROUNDS] — one GPU call (~1 min + 35 s a server): issue 6's figure under two values
# of one environment setting, the same binary, fresh servers at c=64 × 512 × 256 with bf16 activations (load.py over
# 8 client processes), VAR=A then VAR=B, ROUNDS times (default 3); then memra-bench tg32x64@d512 and tg128 with each.
# For settings whose kernel-level figures disagree with the server's spread (±1.5 % a fresh server), e.g.
# `MEMRA_ATTN_SPLIT_CHUNKS 2 3` (the thirtieth run: 64-row step +1.5 %, a lone row at depth 512 −0.7 %).
# NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/server-ab-gpu.sh NAME VAR A B [ROUNDS]}"
VAR=${2:?VAR}; A=${3:?A}; BV=${4:?B}; R=${5:-3}
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in $(seq "$R"); do for val in "$A" "$BV"; do
  mkdir -p $OUT/s; env "$VAR=$val" MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s timeout 100 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
  echo "$VAR=$val server rc $? $(grep -E '^\| [0-9]' $OUT/s/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s
done; done
for val in "$A" "$BV"; do
  env "$VAR=$val" MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests tg128,tg128@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$VAR=$val: /"; echo
done
ts done
