#!/bin/bash
# lab/load-procs-gpu.sh NAME — one GPU call (~3.5 min): is bench/load.py's single client process what paces the
# c=64 serving figure? The server's own histograms (call 5 of the twenty-seventh run: most inter-token gaps 5-10 ms,
# TTFT ~0.5 s on average against the client's 0.95 s p50) say the server is ahead of what the client reports. Two
# fresh servers (bf16 activations, c=64 × 512 × 256): load.py spread over 8 client processes, then over one.
# NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/load-procs-gpu.sh NAME (gpu/NAME.tar.xz)}"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for p in 8 1; do
  LOAD_PROCS=$p MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=150 timeout 200 bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/rs$p.log 2>&1
  ts "procs $p rc $?"; grep -E "^\| .* \| 64 \|" /tmp/rs$p.log | tail -1 | cut -d'|' -f5-17
done
python3 -c "
import json
for l in open('$OUT/server-load.jsonl'):
    d=json.loads(l); print(d['client_procs'], d['agg_tok_s'], d['wall_s'], d['ttft_p50_ms'], d['ttft_p99_ms'], d['itl_p50_ms'], d['tpot_p50_ms'], d['decode_tok_s_per_stream'], d['texts_sha256'])"
ts done
