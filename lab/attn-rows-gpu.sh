#!/bin/bash
# lab/attn-rows-gpu.sh NAME — one GPU call (~5 min): the decode attention writing its output as the wgmma GEMV's
# A rows too (CUDA_ATTN_OUT_MMV: no split launch before a batch's o-projection). kernel_attn --quick (its new A-row
# checks, and digests against the build before), kernel_mmv --quick, kernel_forward's fixtures (0 failed
# expected); memra-bench on the random 8B BF16 model against NAME/x0 alternated twice, f32 and bf16 activations;
# a fresh server at c=64 × 512 × 256, f32 with MEMRA_DECODE_MMV=all: its texts must be call 5's 51b23762efa45a2d.
# gpu/NAME.tar.xz from `lab/final-pack.sh NAME X0` plus X0's kernel_attn in NAME/x0; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-rows-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( for k in kernel_attn kernel_mmv; do timeout 200 $B/kernels/$k --quick > /tmp/$k.log 2>&1; echo "rc $?" >> /tmp/$k.log; done
  MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > /tmp/kernel_forward.log 2>&1; echo "rc $?" >> /tmp/kernel_forward.log ) &
KC=$!
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16 TESTS=tg32x16@d512,tg32x64@d512
for r in 1 2; do for v in x0 new; do for act in f32 bf16; do
  bin=$B/bin/memra-bench; [ $v = x0 ] && bin=$B/x0/memra-bench
  MEMRA_ACT_TYPE=$act timeout 120 $bin $M --backend cuda --tests $TESTS --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$v $act: /"
done; done; done
ts "bench"
wait $KC
for k in kernel_attn kernel_mmv kernel_forward; do
  ts "$k $(tail -1 /tmp/$k.log) $(grep -E '[0-9]+ checks' /tmp/$k.log | tail -1)"; grep -E 'FAIL|CHECK failed|DIFFER' /tmp/$k.log | head -3
done
grep -c "as A rows in passing: att same bits, BF16 mmv on them = cuda_mmv's" /tmp/kernel_attn.log
timeout 200 $B/x0/kernel_attn --quick > /tmp/kernel_attn0.log 2>&1
echo "digests: new $(grep -o 'digest [0-9a-f]*' /tmp/kernel_attn.log | md5sum | cut -c1-12) ($(grep -c 'digest' /tmp/kernel_attn.log)), x0 $(grep -o 'digest [0-9a-f]*' /tmp/kernel_attn0.log | md5sum | cut -c1-12) ($(grep -c 'digest' /tmp/kernel_attn0.log))"
MEMRA_DECODE_MMV=all MEMRA_ACT_TYPE=f32 NO_BENCH=1 BUILD=$B RUN_TMO=150 timeout 200 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
ts "server f32 mmv=all rc $?"; grep -i -E "error|fail" /tmp/rs.log | head -3
python3 -c "
import json
for l in open('$OUT/server-load.jsonl'):
    d=json.loads(l); print(d['concurrency'], d['client_procs'], d['agg_tok_s'], d['wall_s'], d['ttft_p50_ms'], d['ttft_p99_ms'], d['texts_sha256'])"
ts done
