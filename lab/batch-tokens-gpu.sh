#!/bin/bash
# lab/batch-tokens-gpu.sh NAME — one GPU call (~6 min): the server at c=64 × 512 × 256 (8B BF16, bf16
# activations) with `--batch-tokens` 2048 (the CUDA default), 4096 and 8192, alternated twice. Why: since the
# twenty-fifth run a step's consecutive prompt spans run as one GEMM, so a larger step budget makes larger GEMMs
# (the 4096-row GEMMs of a layer run at 88 % of the bf16 peak, 2048-row ones less); the twenty-third run found 4096
# and 8192 no better than 2048 when every span had its own GEMMs. The prefill phase sets TTFT p99 (1.19-1.21 s in
# the twenty-fifth run; goal ≤ 1 s). If a larger budget wins on both throughput and p99, it becomes the default
# (docs/FLAGS.md `--batch-tokens`), after a look at c=1 TTFT (a step's decode rows wait for its prefill).
# Pack here: P=/tmp/NAME; rm -rf $P; mkdir -p $P/bin; make build; cp build/bin/memra-server $P/bin/;
#   strip $P/bin/*; mkdir -p gpu; tar -cJf gpu/NAME.tar.xz -C /tmp NAME   (carry ["gpu/NAME.tar.xz", ".whl"];
#   .whl as docs/SERVING.md says, with .whl/tok-llama3 from bench/make_llama3_tokenizer.py)
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/batch-tokens-gpu.sh NAME (gpu/NAME.tar.xz)}"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for r in 1 2; do for bt in 2048 4096 8192; do
  MEMRA_ACT_TYPE=bf16 BATCH_TOKENS=$bt OUT=/tmp/srv BUILD=$B NO_BENCH=1 RUN_TMO=45 timeout 60 \
    bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/srv.txt 2>&1
  echo "batch-tokens $bt rc $? $(grep -o '"agg_tok_s": [0-9.]*\|"ttft_p50_ms": [0-9.]*\|"ttft_p99_ms": [0-9.]*\|"texts_sha256": "[0-9a-f]*"\|"failed": [0-9]*' /tmp/srv/load.log | tr '\n' ' ')"
  [ $r = 1 ] && [ $bt = 2048 ] && tail -5 /tmp/srv.txt
  rm -rf /tmp/srv
done; done
ts done
