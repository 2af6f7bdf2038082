#!/bin/bash
# lab/side-gpu.sh NAME — one GPU call (~7 min): a decode batch's k|v GEMV on a side stream beside q's
# (MEMRA_DECODE_SIDE, cuda_ctx_side_begin). kernel_mmv --quick and kernel_forward's fixtures (0 failed expected);
# memra-bench on the random 8B BF16 model with MEMRA_DECODE_SIDE on / off alternated twice, f32 and bf16
# activations; fresh servers at c=64 × 512 × 256: f32 with MEMRA_DECODE_MMV=all (batch-invariant bits, so the texts
# must not depend on the side stream or on arrival order) side on and off, and bf16 activations side on.
# gpu/NAME.tar.xz from lab/final-pack.sh NAME; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/side-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( timeout 200 $B/kernels/kernel_mmv --quick > /tmp/kernel_mmv.log 2>&1; echo "rc $?" >> /tmp/kernel_mmv.log
  MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > /tmp/kernel_forward.log 2>&1; echo "rc $?" >> /tmp/kernel_forward.log ) &
KC=$!
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16 TESTS=tg128,tg32x16@d512,tg32x64@d512
for r in 1 2; do for side in on off; do for act in f32 bf16; do
  MEMRA_DECODE_SIDE=$side MEMRA_ACT_TYPE=$act timeout 120 $B/bin/memra-bench $M --backend cuda --tests $TESTS --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/side $side $act: /"
done; done; done
ts "bench"
wait $KC
for k in kernel_mmv kernel_forward; do
  ts "$k $(tail -1 /tmp/$k.log) $(grep -E '[0-9]+ checks' /tmp/$k.log | tail -1)"; grep -E 'FAIL|CHECK failed' /tmp/$k.log | head -3
done
grep -E "side q" /tmp/kernel_mmv.log
for side in on off; do
  MEMRA_DECODE_SIDE=$side MEMRA_DECODE_MMV=all MEMRA_ACT_TYPE=f32 NO_BENCH=1 BUILD=$B RUN_TMO=150 timeout 200 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
  ts "server f32 mmv=all side $side rc $?"; grep -i -E "error|fail" /tmp/rs.log | head -3
done
MEMRA_DECODE_SIDE=on MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=150 timeout 200 bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
ts "server bf16 side on rc $?"; grep -i -E "error|fail" /tmp/rs.log | head -3
python3 -c "
import json
for l in open('$OUT/server-load.jsonl'):
    d=json.loads(l); print(d['concurrency'], d['client_procs'], d['agg_tok_s'], d['wall_s'], d['ttft_p50_ms'], d['ttft_p99_ms'], d['itl_p50_ms'], d['itl_p99_ms'], d['texts_sha256'])"
ts done
