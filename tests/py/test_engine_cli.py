"""tests/py/test_engine_cli.py — run-gen and memra-ppl end to end on a Hugging Face folder.

The fixture tests/fixtures/engine/cli/qwen3-tok (tools/make_fixtures.py) is a
tiny random Qwen3 with a real byte-level BPE tokenizer (trained with the
`tokenizers` package), ChatML special tokens and a chat template. The expected
outputs were produced by transformers: greedy generate() decoded with
skip_special_tokens (plain prompt, and through apply_chat_template), and the
perplexity over a text file in windows of 32 tokens. Here the command-line
programs must print the same text, and a perplexity within 1e-4 (relative)
with an f32 KV cache; with the default bf16 cache (keys and values rounded to
bfloat16) within 2e-3 (6.4e-4 measured on 2026-12-03).
"""
import json
import os
import re
import subprocess

import pytest
from memra_build import tool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FX = os.path.join(ROOT, "tests", "fixtures", "engine")
MANIFEST = json.load(open(os.path.join(FX, "manifest.json")))
CLI = MANIFEST["cli"]


@pytest.mark.parametrize("case", CLI["generate"], ids=lambda c: "chat" if c["chat"] else "plain")
def test_run_gen_matches_transformers(case):
    env = dict(os.environ)
    env.pop("MEMRA_CHAT", None)
    if case["chat"]:
        env["MEMRA_CHAT"] = "1"
    out = subprocess.run([tool("run-gen"), os.path.join(FX, CLI["path"]), *case["args"], "--threads", "2"],
                         capture_output=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    got = out.stdout.decode("utf-8")
    assert got.endswith("\n")
    assert got[:-1] == case["expected_stdout"]
    err = out.stderr.decode()
    assert re.search(r"prompt \d+ tokens .* tok/s; generation \d+ tokens, [0-9.]+ tok/s, [0-9.]+ GB/s", err), err


@pytest.mark.parametrize("kv_type,tol", [("f32", 1e-4), ("bf16", 2e-3)])
def test_memra_ppl_matches_transformers(kv_type, tol):
    out = subprocess.run([tool("memra-ppl"), os.path.join(FX, CLI["path"]), os.path.join(FX, CLI["ppl_text"]),
                          "--ctx", str(CLI["ppl_ctx"]), "--threads", "2"], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, MEMRA_KV_TYPE=kv_type))
    assert out.returncode == 0, out.stderr
    m = re.match(r"perplexity ([0-9.]+) over (\d+) tokens \((\d+) windows of (\d+)\)", out.stdout)
    assert m, out.stdout
    assert int(m.group(3)) == CLI["ppl_windows"]
    assert int(m.group(2)) == CLI["ppl_windows"] * (CLI["ppl_ctx"] - 1)
    assert abs(float(m.group(1)) - CLI["perplexity"]) <= tol * CLI["perplexity"], (m.group(1), CLI["perplexity"])


def test_run_gen_refuses_bad_model():
    out = subprocess.run([tool("run-gen"), os.path.join(FX, "bad", "missing-tensor.gguf"), "--prompt", "x"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "blk.1.ffn_up.weight" in out.stderr


def test_run_gen_usage():
    out = subprocess.run([tool("run-gen")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "usage" in out.stderr
