#!/bin/bash
# lab/ncu-batch-gpu.sh NAME — one GPU call (~6 min): where a 64-row BF16 decode step goes, per kernel (ncu, each
# kernel alone: memra-bench tg2x64 at depth 0 — 16 warm-up steps + 2 — on the random 8B BF16 model; printed per
# kernel name and grid: launches, µs a launch, µs a step), beside memra-bench's own tg32x64 at depth 0 and 512;
# then lab/batch-tokens-procs-gpu.sh's server runs (--batch-tokens 2048 / 8192, 8 client processes, twice).
# NAME/bin from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/ncu-batch-gpu.sh NAME (gpu/NAME.tar.xz)}"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
MEMRA_ACT_TYPE=bf16 $B/bin/memra-bench $M --backend cuda --tests tg32x64,tg32x64@d512 --reps 3 2>&1 | tail -4
ts "bench"
MEMRA_ACT_TYPE=bf16 timeout 200 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size --csv \
  $B/bin/memra-bench $M --backend cuda --tests tg2x64 --reps 1 > /tmp/ncu.csv 2> /tmp/ncu.err
ts "ncu rc $? $(wc -l < /tmp/ncu.csv) lines"; tail -3 /tmp/ncu.err
python3 - /tmp/ncu.csv <<'PY'
import csv, sys, collections, re
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h = rows[0]; ki, mi, vi, ui, ii = (h.index(k) for k in ("Kernel Name", "Metric Name", "Metric Value", "Metric Unit", "ID"))
dur, grid, name = {}, {}, {}
for r in rows[1:]:
    v = float(r[vi].replace(",", ""))
    name[r[ii]] = re.sub(r"\(.*", "", r[ki])[:80]
    if r[mi] == "gpu__time_duration.sum":
        u = r[ui]; dur[r[ii]] = v / 1000 if u in ("ns", "nsecond") else v * 1000 if u in ("ms", "msecond") else v
    else:
        grid[r[ii]] = int(v)
tot = collections.defaultdict(float); cnt = collections.Counter()
for i in dur:
    k = (name[i], grid.get(i, 0)); tot[k] += dur[i]; cnt[k] += 1
steps = 18
print(f"kernels {len(dur)}; all {sum(tot.values())/steps:.1f} us a step (18 steps)")
for (n, g), t in sorted(tot.items(), key=lambda x: -x[1])[:40]:
    print(f"| {n} | {g} | {cnt[(n, g)]} | {t/cnt[(n, g)]:.2f} | {t/steps:.1f} |")
PY
for r in 1 2; do for bt in 2048 8192; do
  BATCH_TOKENS=$bt LOAD_PROCS=8 MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=150 timeout 200 \
    bench/run-server.sh $M "64x512x256" > /tmp/rs.log 2>&1
  ts "batch-tokens $bt rc $?"
done; done
python3 -c "
import json
for l in open('$OUT/server-load.jsonl'):
    d=json.loads(l); print(d['client_procs'], d['agg_tok_s'], d['wall_s'], d['ttft_p50_ms'], d['ttft_p99_ms'], d['itl_p99_ms'], d['texts_sha256'])"
ts done
