"""bench/load.py (the load driver of the GPU serving figures) run briefly on the
CPU against the default model: its JSON line is sane — every request answered,
prompts of exactly P tokens (the server's usage says so), generated tokens as
usage reports them (cross-checked with the server's own
memra_generated_tokens_total counter), percentiles ordered, aggregate rate =
generated / wall, the streams' texts the same at 3 in flight as one at a time
(their digest), also spread over two client processes (--procs 2) — and its
markdown row is written under a header. Not a timed
test: no figure is compared with a bar. Also: bench/run-server.sh with
BACKEND=cpu on the default model runs the server + driver end to end."""
import json
import os
import pathlib
import subprocess
import sys

import pytest
from memra_server import ALIAS, MODEL, ROOT, Server, model_metric, server_binary

LOAD = ROOT / "bench" / "load.py"


@pytest.fixture(scope="module")
def srv():
    s = Server("--slots", "4", "--ctx", "256", "--batch-tokens", "128")
    yield s
    assert s.stop() == 0, s.log


def generated_total(srv):
    return model_metric(srv, "memra_generated_tokens_total")


def run_load(srv, tmp_path, *args):
    js, md = tmp_path / "out.jsonl", tmp_path / "out.md"
    p = subprocess.run([sys.executable, str(LOAD), "--url", srv.url, "--model", ALIAS, "--json", str(js),
                        "--md", str(md), *args], capture_output=True, text=True, timeout=600)
    return p, js, md


def test_load_driver_json_is_sane(srv, tmp_path):
    before = generated_total(srv)
    p, js, md = run_load(srv, tmp_path, "-c", "3", "-p", "40", "-g", "12", "-n", "5", "--warmup", "0")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert json.loads(js.read_text().strip()) == s
    assert (s["concurrency"], s["requests"], s["prompt_tokens"], s["max_tokens"]) == (3, 5, 40, 12)
    assert s["ok"] == 5 and s["failed"] == 0 and s["prompt_tokens_mismatch"] == 0, s
    # generated tokens come from usage, and match what the server counted
    assert 5 <= s["generated_tokens"] <= 5 * 12
    assert generated_total(srv) - before == s["generated_tokens"]
    if s["finish_length"] == 5:
        assert s["generated_tokens"] == 60
    assert s["wall_s"] > 0
    assert abs(s["agg_tok_s"] - s["generated_tokens"] / s["wall_s"]) <= 0.1 + 1e-3 * s["agg_tok_s"]
    assert 0 < s["ttft_p50_ms"] <= s["ttft_p99_ms"] < s["wall_s"] * 1e3
    assert 0 <= s["itl_p50_ms"] <= s["itl_p99_ms"]
    assert 0 < s["tpot_p50_ms"] <= s["tpot_p99_ms"]
    assert s["decode_tok_s_per_stream"] > 0
    lines = md.read_text().splitlines()
    assert lines[0].startswith("| date | GPU | model | c | prompt |") and lines[1].startswith("| --- |")
    assert len(lines) == 3 and lines[2].count("|") == lines[0].count("|")
    # the same greedy requests one at a time: the same texts (the digest of every stream's text in request order)
    p1, _, _ = run_load(srv, tmp_path, "-c", "1", "-p", "40", "-g", "12", "-n", "5", "--warmup", "0")
    assert p1.returncode == 0, p1.stderr
    s1 = json.loads(p1.stdout.strip().splitlines()[-1])
    assert len(s["texts_sha256"]) == 16 and s1["texts_sha256"] == s["texts_sha256"], (s, s1)
    # spread over two client processes (--procs): every request answered, in request order, the same texts
    p2, _, _ = run_load(srv, tmp_path, "-c", "3", "-p", "40", "-g", "12", "-n", "5", "--warmup", "0", "--procs", "2")
    assert p2.returncode == 0, p2.stderr
    s2 = json.loads(p2.stdout.strip().splitlines()[-1])
    assert (s2["client_procs"], s2["ok"], s2["requests"], s2["failed"]) == (2, 5, 5, 0), s2
    assert s2["texts_sha256"] == s["texts_sha256"] and s["client_procs"] == 1, (s, s2)
    assert 0 < s2["ttft_p50_ms"] <= s2["ttft_p99_ms"] < s2["wall_s"] * 1e3


def test_load_driver_fails_clearly_without_a_server(tmp_path):
    p = subprocess.run([sys.executable, str(LOAD), "--url", "http://127.0.0.1:9", "--model", ALIAS, "-p", "8"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "cannot build the prompts" in p.stderr, p.stderr


def run_server_script(tmp_path, configs, **env):
    """bench/run-server.sh on the CPU backend with a small server; its rows."""
    build = pathlib.Path(server_binary()).parent.parent
    env = dict(os.environ, OUT=str(tmp_path), BACKEND="cpu", BUILD=str(build), SLOTS="4", CTX="256",
               BATCH_TOKENS="128", NO_BENCH="1", **env)
    p = subprocess.run(["bash", str(ROOT / "bench" / "run-server.sh"), str(MODEL), configs], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return [json.loads(x) for x in (tmp_path / "server-load.jsonl").read_text().splitlines()]


def test_run_server_script_on_the_cpu(tmp_path):
    rows = run_server_script(tmp_path, "1x24x6 3x32x8", REQS_C1="2")
    assert [(r["concurrency"], r["requests"], r["prompt_tokens"], r["max_tokens"]) for r in rows] == \
        [(1, 2, 24, 6), (3, 3, 32, 8)]
    assert all(r["failed"] == 0 and r["generated_tokens"] >= r["requests"] for r in rows), rows
    assert "server exit status 0" in (tmp_path / "load.log").read_text()
    assert (tmp_path / "server-load.md").read_text().count("\n") == 4


def test_run_server_script_sampled(tmp_path):
    """TEMPERATURE > 0: every token is sampled on the host (the engine's batch
    sampler), and the rows say so."""
    rows = run_server_script(tmp_path, "3x16x6", TEMPERATURE="0.8")
    assert len(rows) == 1 and rows[0]["failed"] == 0 and rows[0]["generated_tokens"] >= 3, rows
    assert "temperature 0.8" in rows[0]["label"]
    assert "--temperature 0.8" in (tmp_path / "server-load.md").read_text()
