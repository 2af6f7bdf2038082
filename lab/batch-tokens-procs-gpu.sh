#!/bin/bash
# lab/batch-tokens-procs-gpu.sh NAME — one GPU call (~3 min): the server's step budget again, now that bench/load.py
# spreads the streams over 8 client processes (the twenty-sixth run compared 2048 / 8192 with one client process,
# which paced the figure: 8192 took 6-10 % off TTFT p99 then, and p99 is now 1.05-1.09 s against the 1 s goal).
# Fresh servers, c=64 × 512 × 256, bf16 activations, --batch-tokens 2048 / 8192 alternated twice.
# NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/batch-tokens-procs-gpu.sh NAME (gpu/NAME.tar.xz)}"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for r in 1 2; do for bt in 2048 8192; do
  BATCH_TOKENS=$bt LOAD_PROCS=8 MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=150 timeout 200 \
    bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/rs.log 2>&1
  ts "batch-tokens $bt rc $?"
done; done
python3 -c "
import json
for l in open('$OUT/server-load.jsonl'):
    d=json.loads(l); print(d['client_procs'], d['agg_tok_s'], d['wall_s'], d['ttft_p50_ms'], d['ttft_p99_ms'], d['itl_p99_ms'], d['texts_sha256'])"
ts done
