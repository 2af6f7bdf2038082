"""tests/py/test_bench_cli.py — memra-bench's JSON report on the default model, on the CPU.

Runs memra-bench with tiny settings (pp32, tg8, tg4@d8, 2 reps) and checks the report's arithmetic: the
median is the median of the per-rep times, tok/s = tokens / median, TFLOP/s = 2 · params · tok/s, GB/s =
decode bytes · tok/s, % of limit against the --flops / --bw given. params and decode bytes are checked
against the gguf package's reading of the file: every matrix multiplied per token (the blocks' matrices and
the output projection, which this model ties to token_embd) and, for the bytes, one embedding row more.
The speeds themselves are not checked beyond being positive: they depend on the machine.
"""
import json
import os
import statistics
import subprocess

import pytest
from memra_build import tool

gguf = pytest.importorskip("gguf")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def bench(*args, env=None):
    exe = tool("memra-bench")
    if not os.path.exists(MODEL):
        pytest.skip(f"{MODEL} is absent (scripts/install-deps.sh fetches it)")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, env=env)


def reference_sizes():
    r = gguf.GGUFReader(MODEL)
    mats = [t for t in r.tensors if t.name.startswith("blk.") and len(t.shape) == 2]
    emb = next(t for t in r.tensors if t.name == "token_embd.weight")
    assert not any(t.name == "output.weight" for t in r.tensors)  # tied: the output is token_embd
    params = sum(int(t.n_elements) for t in mats) + int(emb.n_elements)
    vocab = int(emb.shape[1])
    dbytes = sum(int(t.n_bytes) for t in mats) + int(emb.n_bytes) + int(emb.n_bytes) // vocab
    return params, dbytes


def test_bench_json_figures_consistent():
    env = {k: v for k, v in os.environ.items() if k not in ("MEMRA_KV_TYPE", "MEMRA_ACT_TYPE")}  # the defaults
    out = bench(MODEL, "--backend", "cpu", "--threads", "2", "--tests", "pp32,tg8,tg4@d8,tg4x3@d8", "--reps", "2",
                "--json", "--bw", "123.5", "--flops", "7", env=env)
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    params, dbytes = reference_sizes()
    assert j["params"] == params
    assert j["decode_bytes"] == dbytes
    assert (j["arch"], j["format"], j["weights"], j["backend"]) == ("llama", "gguf", "Q4_1", "cpu")
    assert j["reps"] == 2 and j["bw_gbs"] == 123.5 and j["flops_tflops"] == 7
    assert j["max_batch_tokens"] == 32  # --ubatch 512 capped by the largest prefill (32)
    assert j["kv_type"] == "bf16"  # the default (docs/FLAGS.md)
    assert j["act_type"] == "f32"  # the default (docs/FLAGS.md)
    res = {r["test"]: r for r in j["results"]}
    assert list(res) == ["pp32", "tg8", "tg4@d8", "tg4x3@d8"]
    for name, kind, n, depth, batch in (("pp32", "pp", 32, 0, 1), ("tg8", "tg", 8, 0, 1), ("tg4@d8", "tg", 4, 8, 1),
                                        ("tg4x3@d8", "tg", 4, 8, 3)):
        r = res[name]
        assert (r["kind"], r["n_tokens"], r["depth"], r["batch"]) == (kind, n, depth, batch)
        assert len(r["times_s"]) == 2 and all(t > 0 for t in r["times_s"])
        assert r["median_s"] == pytest.approx(statistics.median(r["times_s"]), rel=1e-9)
        # tok/s counts every sequence's tokens; the weights are read once a step
        assert r["tok_s"] > 0 and r["tok_s"] == pytest.approx(batch * n / r["median_s"], rel=1e-9)
        if kind == "pp":
            assert "gbs" not in r
            assert r["tflops"] == pytest.approx(2 * params * r["tok_s"] / 1e12, rel=1e-9)
            assert r["limit"] == 7 and r["pct_limit"] == pytest.approx(100 * r["tflops"] / 7, rel=1e-9)
        else:
            assert "tflops" not in r
            assert r["gbs"] == pytest.approx(dbytes * r["tok_s"] / batch / 1e9, rel=1e-9)
            assert r["limit"] == 123.5 and r["pct_limit"] == pytest.approx(100 * r["gbs"] / 123.5, rel=1e-9)
        assert r["pct_limit"] > 0


def test_bench_table_output():
    out = bench(MODEL, "--backend", "cpu", "--threads", "2", "--tests", "tg2,pp8", "--reps", "1", "--bw", "20")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("| model | format |") and len(lines) == 4
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:5] == ["llama", "gguf", "Q4_1", "cpu", "tg2"]
    assert float(cells[5]) > 0 and cells[6].endswith("GB/s") and cells[7].endswith("%")
    # the default limits are an H200's: on the CPU no % unless this machine's own is given (--bw only here)
    cells = [c.strip() for c in lines[3].strip("|").split("|")]
    assert cells[4] == "pp8" and cells[6].endswith("TFLOP/s") and cells[7] == "—"


def test_bench_json_no_limit_on_cpu_by_default():
    out = bench(MODEL, "--backend", "cpu", "--threads", "2", "--tests", "tg2", "--reps", "1", "--json")
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert j["bw_gbs"] is None and j["flops_tflops"] is None
    r = j["results"][0]
    assert r["limit"] is None and r["pct_limit"] is None and r["gbs"] > 0


@pytest.mark.parametrize("args", [["--tests", "xx12"], ["--tests", "pp0"], ["--tests", "tg8@4"], ["--reps", "0"],
                                  ["--tests", "pp8x2"], ["--tests", "tg8x0"], ["--tests", "tg8x257"],
                                  ["--bw", "-1"], ["--frobnicate"]])
def test_bench_bad_arguments(args):
    out = bench(MODEL, *args)
    assert out.returncode == 2 and "usage: memra-bench" in out.stderr


def test_bench_context_too_long():
    out = bench(MODEL, "--backend", "cpu", "--tests", "tg8@d9000000", "--reps", "1")
    assert out.returncode == 2  # depth beyond BENCH_MAX_TOKENS is a bad test name
    out = bench(MODEL, "--backend", "cpu", "--tests", "pp9000", "--reps", "1")
    assert out.returncode == 1 and "context" in out.stderr


@pytest.mark.parametrize("var,key,banner", [("MEMRA_KV_TYPE", "kv_type", "KV {}"),
                                             ("MEMRA_ACT_TYPE", "act_type", "{} activations")])
def test_bench_type_from_the_environment(var, key, banner):
    other = "f32" if var == "MEMRA_KV_TYPE" else "bf16"  # the one that is not the default
    env = dict(os.environ, **{var: other})
    out = bench(MODEL, "--backend", "cpu", "--threads", "2", "--tests", "tg4", "--reps", "1", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[key] == other
    assert banner.format(other) in out.stderr, out.stderr
    env[var] = "fp8"
    out = bench(MODEL, "--backend", "cpu", "--tests", "tg4", "--reps", "1", env=env)
    assert out.returncode != 0 and var in out.stderr and "'fp8'" in out.stderr, out.stderr
