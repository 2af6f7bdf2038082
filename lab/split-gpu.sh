#!/bin/bash
# lab/split-gpu.sh NAME — one GPU call (~8 min): the wgmma GEMV's A rows written by the decode step's RMSNorms
# and joined GLU (cuda_rmsnorm_in_split, cuda_fwd_glu_rows_split: no split launch before q, gate|up, down and
# the logits). kernel_mmv / kernel_attn / kernel_gemm --quick and kernel_forward's fixtures (0 failed expected);
# memra-bench on the random 8B BF16 model, the new build against NAME/x0 (the build before) alternated twice, f32
# and bf16 activations; fresh servers: c=1 and c=64 with bf16 activations, c=64 with f32 (texts against the
# earlier runs' 9dea640727fe71c7); then lab/ncu-batch-gpu.sh's per-kernel table of a 64-row step.
# gpu/NAME.tar.xz from `lab/final-pack.sh NAME X0`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/split-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( for k in kernel_mmv kernel_attn kernel_gemm; do timeout 200 $B/kernels/$k --quick > /tmp/$k.log 2>&1; echo "rc $?" >> /tmp/$k.log; done
  MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > /tmp/kernel_forward.log 2>&1; echo "rc $?" >> /tmp/kernel_forward.log ) &
KC=$!
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
wait $KC
for k in kernel_mmv kernel_attn kernel_gemm kernel_forward; do
  ts "$k $(tail -1 /tmp/$k.log) $(grep -E '[0-9]+ checks' /tmp/$k.log | tail -1)"; grep -E 'FAIL|CHECK failed' /tmp/$k.log | head -3
done
grep -E "split " /tmp/kernel_mmv.log | head -12
M=/tmp/m8b/hf-bf16 TESTS=tg128,tg32x64@d512
for r in 1 2; do for v in x0 new; do for act in f32 bf16; do
  bin=$B/bin/memra-bench; [ $v = x0 ] && bin=$B/x0/memra-bench
  MEMRA_ACT_TYPE=$act timeout 120 $bin $M --backend cuda --tests $TESTS --reps 3 2>&1 | grep -E "^\| .*tg" | sed "s/^/$v $act: /"
done; done; done
ts "bench"
MEMRA_ACT_TYPE=bf16 BUILD=$B RUN_TMO=200 timeout 330 bench/run-server.sh $M "1x512x256 64x512x256" > /tmp/rs.log 2>&1
ts "run-server bf16 rc $?"
MEMRA_ACT_TYPE=f32 NO_BENCH=1 BUILD=$B RUN_TMO=200 timeout 200 bench/run-server.sh $M "64x512x256" > /tmp/rs2.log 2>&1
ts "run-server f32 rc $?"
python3 -c "
import json
for l in open('$OUT/server-load.jsonl'):
    d=json.loads(l); print(d['concurrency'] if 'concurrency' in d else d.get('c'), d['client_procs'], d['agg_tok_s'], d['wall_s'], d['ttft_p50_ms'], d['ttft_p99_ms'], d['itl_p50_ms'], d['itl_p99_ms'], d['texts_sha256'])"
cat $OUT/bench-tg128.md 2>/dev/null | tail -2
MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 150 /usr/local/cuda/bin/ncu --clock-control none \
  --metrics gpu__time_duration.sum,launch__grid_size --csv \
  $B/bin/memra-bench $M --backend cuda --tests tg2x64 --reps 1 > /tmp/ncu.csv 2> /tmp/ncu.err
ts "ncu rc $? $(wc -l < /tmp/ncu.csv) lines"; tail -2 /tmp/ncu.err
sed -n '/^python3 - \/tmp\/ncu.csv/,/^PY$/p' lab/ncu-batch-gpu.sh | sed '1d;$d' > /tmp/ncu.py
python3 /tmp/ncu.py /tmp/ncu.csv
ts done
