#!/usr/bin/env python3
"""bench/tokenizer_bench.py — encode speed of memra's tokenizer against the
Python `tokenizers` package, on the same text, in the same run.

    python3 bench/tokenizer_bench.py [--build build] [--tokenizer PATH] [--runs 5]

Texts: the 1.2 MB multilingual test corpus (tools/make_tokenizer_corpus.py)
and a 1 MB English prose + code text made from it. For each, memra's figure
comes from `memra-tokenize --bench FILE` (best of N runs, one thread, load
time excluded); the reference is `Tokenizer.encode(text)` on the whole text
(best of N, load excluded) and `encode_batch(lines)` (the reference's
multi-threaded path, all cores). Ids are checked equal before timing.
Prints one table row per text; copy the rows into bench/RESULTS.md.
"""
import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import make_tokenizer_corpus  # noqa: E402


def english_text(nbytes):
    r = random.Random(5)
    parts, size = [], 0
    pool = make_tokenizer_corpus.PROSE[:1] + make_tokenizer_corpus.PROSE[-1:] + make_tokenizer_corpus.CODE
    while size < nbytes:
        p = r.choice(pool) + " "
        parts.append(p)
        size += len(p.encode())
    return "".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.environ.get("MEMRA_BUILD", str(ROOT / "build")))
    ap.add_argument("--tokenizer", default=str(ROOT.parent / "shared" / "testdata" / "tokenizers" / "qwen3"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    import tokenizers

    exe = str(pathlib.Path(a.build) / "bin" / "memra-tokenize")
    tk_path = pathlib.Path(a.tokenizer)
    ref = tokenizers.Tokenizer.from_file(str(tk_path / "tokenizer.json" if tk_path.is_dir() else tk_path))
    texts = {
        "multilingual corpus (1.2 MB)": make_tokenizer_corpus.make(1_200_000, seed=1234),
        "English prose + code (1.0 MB)": english_text(1_000_000),
    }
    print(f"tokenizer: {a.tokenizer}; tokenizers {tokenizers.__version__}; {os.cpu_count()} CPUs")
    print("| text | bytes | tokens | memra MB/s | tokenizers encode MB/s | tokenizers encode_batch MB/s | speed-up (1 thread) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in texts.items():
            data = text.encode("utf-8")
            f = pathlib.Path(tmp) / "text.txt"
            f.write_bytes(data)
            ours = json.loads(subprocess.run([exe, str(tk_path)], input=data, capture_output=True, check=True).stdout)
            ref_ids = ref.encode(text).ids
            if ours != ref_ids:
                print(f"{name}: ids differ from the reference; not timing", file=sys.stderr)
                sys.exit(1)
            out = subprocess.run([exe, "--bench", str(f), "--runs", str(a.runs), str(tk_path)], capture_output=True,
                                 check=True, text=True).stdout
            m = json.loads(out)
            best = 1e9
            for _ in range(a.runs):
                t0 = time.perf_counter()
                ref.encode(text)
                best = min(best, time.perf_counter() - t0)
            lines = text.splitlines(keepends=True)
            best_b = 1e9
            for _ in range(a.runs):
                t0 = time.perf_counter()
                ref.encode_batch(lines)
                best_b = min(best_b, time.perf_counter() - t0)
            ref_mbs = len(data) / 1e6 / best
            batch_mbs = len(data) / 1e6 / best_b
            print(f"| {name} | {len(data)} | {len(ref_ids)} | {m['mb_per_s']:.1f} | {ref_mbs:.2f} | {batch_mbs:.2f} | "
                  f"{m['mb_per_s'] / ref_mbs:.0f}x |")


if __name__ == "__main__":
    main()
