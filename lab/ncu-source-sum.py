#!/usr/bin/env python3
"""lab/ncu-source-sum.py SRC.CSV [SECTION] — sums what lab/ncu-source-gpu.sh brings back ($OUT/src.csv: ncu's source
page with the SASS, one section a profiled launch): lists the sections (kernel, instructions executed, stall samples),
then for SECTION (default: the one with the most instructions executed) the stall reasons' shares, the opcodes' shares
of executed instructions and of stall samples, and the 16 SASS lines with the most samples with their top reason.
Runs here, not on the GPU machine."""
import collections
import csv
import sys


def sections(path):
    out, cur, hdr = [], None, None
    for r in csv.reader(open(path)):
        if not r:
            continue
        if r[0] == "Kernel Name":
            cur = {"name": r[1], "rows": []}
            out.append(cur)
            hdr = None
        elif r[0] == "Address":
            hdr = cur["hdr"] = r
        elif hdr:
            cur["rows"].append(r)
    return out


def num(v):
    try:
        return int(v)
    except ValueError:
        return 0


def main():
    secs = sections(sys.argv[1])
    for k, s in enumerate(secs):
        h = s["hdr"]
        ie, smp = h.index("Instructions Executed"), h.index("Warp Stall Sampling (All Samples)")
        print("%d %s: %d instructions, %d samples" % (k, s["name"][:90], sum(num(r[ie]) for r in s["rows"]),
                                                    sum(num(r[smp]) for r in s["rows"])))
    pick = int(sys.argv[2]) if len(sys.argv) > 2 else max(
        range(len(secs)), key=lambda k: sum(num(r[secs[k]["hdr"].index("Instructions Executed")]) for r in secs[k]["rows"]))
    s = secs[pick]
    h = s["hdr"]
    ie, smp, src = h.index("Instructions Executed"), h.index("Warp Stall Sampling (All Samples)"), h.index("Source")
    stalls = [i for i, c in enumerate(h) if c.startswith("stall_") and "Not Issued" not in c]
    reasons, execd, sampled = collections.Counter(), collections.Counter(), collections.Counter()
    for r in s["rows"]:
        words = r[src].split()
        if not words:
            continue
        op = (words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]
        execd[op] += num(r[ie])
        sampled[op] += num(r[smp])
        for i in stalls:
            reasons[h[i]] += num(r[i])
    total_s, total_e = max(sum(reasons.values()), 1), max(sum(execd.values()), 1)
    print("\nsection %d: %d instructions executed, %d stall samples" % (pick, total_e, total_s))
    print("stall reasons: " + ", ".join("%s %.1f %%" % (k[6:], 100 * v / total_s) for k, v in reasons.most_common(10)))
    for op, v in execd.most_common(22):
        print("  %-10s %5.1f %% of executed  %5.1f %% of samples" % (op, 100 * v / total_e, 100 * sampled[op] / total_s))
    print("SASS lines with the most samples:")
    for r in sorted(s["rows"], key=lambda r: -num(r[smp]))[:16]:
        top = max(stalls, key=lambda i: num(r[i]))
        print("  %5s  %-62s %s %s" % (r[smp], r[src].strip()[:62], h[top][6:], r[top]))


if __name__ == "__main__":
    main()
