#!/usr/bin/env python3
"""lab/ncu_sum.py CSV [UNIT] — sums an ncu --csv run of gpu__time_duration.sum and launch__grid_size per kernel name
and grid, and prints them per UNIT (a decode step or a forward pass, counted by the embedding kernel's launches):
launches, µs a launch, µs a UNIT; the 30 largest. Used by lab/ncu-batch-gpu.sh and lab/ncu-prefill-gpu.sh."""
import collections
import csv
import re
import sys

rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
unit = sys.argv[2] if len(sys.argv) > 2 else "step"
h = rows[0]
ki, mi, vi, ui, ii = (h.index(k) for k in ("Kernel Name", "Metric Name", "Metric Value", "Metric Unit", "ID"))
dur, grid, name = {}, {}, {}
for r in rows[1:]:
    v = float(r[vi].replace(",", ""))
    name[r[ii]] = re.sub(r"\(.*", "", r[ki])[:90]
    if r[mi] == "gpu__time_duration.sum":
        u = r[ui]
        dur[r[ii]] = v / 1000 if u in ("ns", "nsecond") else v * 1000 if u in ("ms", "msecond") else v
    else:
        grid[r[ii]] = int(v)
tot = collections.defaultdict(float)
cnt = collections.Counter()
for i in dur:
    k = (name[i], grid.get(i, 0))
    tot[k] += dur[i]
    cnt[k] += 1
units = max((c for (n, g), c in cnt.items() if "embed" in n), default=1)
print(f"kernels {len(dur)}; {units} × {unit} (by the embedding launches); all {sum(tot.values()) / units:.1f} us a {unit}")
for (n, g), t in sorted(tot.items(), key=lambda x: -x[1])[:30]:
    print(f"| {n} | {g} | {cnt[(n, g)]} | {t / cnt[(n, g)]:.2f} | {t / units:.1f} |")
