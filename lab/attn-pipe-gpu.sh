#!/bin/bash
# lab/attn-pipe-gpu.sh NAME — one GPU call (~7 min) for lab/attn-tc-pipe.patch: the tensor-core decode attention
# computing the next (split, chunk) pair's scores beside this pair's softmax and O += P·V (the twenty-fifth run's
# profile of the rows form at 64 × 640: 12.5 % occupancy, `wait` stalls — chained fixed-latency instructions — the
# largest; every accumulator's operations and order unchanged, so the same bits). gpu/NAME.tar.xz from
# lab/attn-pipe-build.sh: x0 = main, p3 / p4 = the patch with 3 / 4 ring stages in the rows form (one pair fewer
# in flight than main with the same stages: the next pair's K is consumed a step early).
# Lands if: kernel_attn's decode digests equal main's (p3 and p4), 64 × 640 (tc) faster, memra-bench tg32x64@d512
# faster and tg128 / tg128@d4096 (the split form, one row) not slower.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-pipe-gpu.sh NAME (gpu/NAME.tar.xz)}"
# the three checks at once (~80 s each alone; they time nothing)
for v in x0 p3 p4; do
  ( timeout 200 $B/$v/kernel_attn --quick > $OUT/kq-$v.log 2>&1; echo "rc $?" >> $OUT/kq-$v.log ) &
done
wait $(jobs -p | grep -v "^$MK$")
for v in x0 p3 p4; do
  ts "kernel_attn --quick $v $(tail -1 $OUT/kq-$v.log) $(grep -E '[0-9]+ checks' $OUT/kq-$v.log | tail -1)"
  grep -o 'digest [0-9a-f]*' $OUT/kq-$v.log > $OUT/dig-$v.txt
done
for v in p3 p4; do
  cmp -s $OUT/dig-x0.txt $OUT/dig-$v.txt && echo "digests $v = main ($(wc -l < $OUT/dig-x0.txt))" || echo "DIGESTS $v DIFFER from main"
done
rm -f $OUT/kq-*.log   # only a few files come back: keep $OUT small
export MEMRA_ATTN_DECODE=tc   # kernel_attn --one times the f32 kernels unless told
for r in 1 2; do for v in x0 p3 p4; do
  for shape in "640 64" "640 32" "4096 1"; do
    timeout 60 $B/$v/kernel_attn --one $shape 2>&1 | grep -E "^\| [0-9]+ \| [0-9]+ \| (auto|rows|split) tc \| bf16 \| auto" | sed "s/^/$v: /"
  done
done; done
unset MEMRA_ATTN_DECODE
ts "kernel timings done"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for r in 1 2; do for v in x0 p3 p4; do
  timeout 120 $B/$v/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests tg128,tg128@d4096,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg" | sed "s/^/$v: /"
done; done
ts "benches done"
# If the call has time left: the server at c=64 with bf16 activations and a larger step budget, now that a step's
# prompt spans share one GEMM (the twenty-third run found 4096 / 8192 no better than 2048 when every span had its own)
for bt in 2048 4096 8192; do
  [ $(( $(date +%s) - T0 )) -lt 470 ] || { echo "no time left for batch-tokens $bt"; continue; }
  MEMRA_ACT_TYPE=bf16 BATCH_TOKENS=$bt OUT=/tmp/srv BUILD=$B/x0 NO_BENCH=1 RUN_TMO=45 timeout 60 \
    bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/srv.txt 2>&1
  echo "batch-tokens $bt rc $? $(grep -o '"agg_tok_s": [0-9.]*\|"ttft_p50_ms": [0-9.]*\|"ttft_p99_ms": [0-9.]*\|"texts_sha256": "[0-9a-f]*"\|"failed": [0-9]*' /tmp/srv/load.log | tr '\n' ' ')"
  rm -rf /tmp/srv
done
ts done
