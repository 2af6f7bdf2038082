#!/bin/bash
# lab/ncu-token-gpu.sh NAME [FORMATS] — one GPU call (~3-4 min): where a single-stream decode token goes now, per
# kernel, for the 8B GGUF models (FORMATS: q8_0,q4_k_m by default). ncu times every kernel of memra-bench --tests tg4
# (16 warm-up steps + 4, one prompt token) alone (kernels serialized: no PDL overlap, so the sum is above the real
# token time); printed per kernel name: launches, µs in all, µs a launch, and the sum divided by the decode steps.
# NAME/bin/memra-bench from gpu/NAME.tar.xz (lab/final-pack.sh); carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/ncu-token-gpu.sh NAME [FORMATS]}"
F=${2:-q8_0,q4_k_m}
python3 tools/make_test_models.py /tmp/m8q --formats $F > $OUT/makeq.log 2>&1; ts "models rc $?"
for f in ${F//,/ }; do
  timeout 200 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    $B/bin/memra-bench /tmp/m8q/llama8b-$f.gguf --backend cuda --tests tg4 --reps 1 > /tmp/ncu-$f.csv 2> /tmp/ncu-$f.err
  ts "ncu $f rc $? $(wc -l < /tmp/ncu-$f.csv) lines"
  python3 - /tmp/ncu-$f.csv <<'PY'
import csv, sys, collections, re
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h = rows[0]; ki, mi, vi, ui = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value"), h.index("Metric Unit")
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows[1:]:
    if r[mi] != "gpu__time_duration.sum": continue
    v = float(r[vi].replace(",", "")); u = r[ui]
    us = v / 1000 if u in ("ns", "nsecond") else v * 1000 if u in ("ms", "msecond") else v  # ncu 2025+ writes "ns"
    name = re.sub(r"\(.*", "", r[ki])[:90]
    tot[name] += us; cnt[name] += 1
steps = max(cnt[n] for n in cnt if "argmax" in n.lower()) if any("argmax" in n.lower() for n in cnt) else 21
print(f"decode steps (argmax launches): {steps}; all kernels {sum(tot.values())/steps:.1f} us a step")
for n, t in sorted(tot.items(), key=lambda x: -x[1])[:25]:
    print(f"| {n} | {cnt[n]} | {t:.0f} | {t/cnt[n]:.2f} | {t/steps:.1f} |")
PY
done
ts done
