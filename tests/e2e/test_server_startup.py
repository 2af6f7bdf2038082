"""memra-server start-up: the listener opens before the models load, so while
they load the probes answer (/health and /livez 200, /readyz 503 "loading")
and every API route answers 503 `model_loading` in OpenAI's error shape with
Retry-After; then the server becomes ready and serves. The load is made to
last with the test-only --test-load-delay-ms flag (a sleep on the loader
thread before it loads). Also: a SIGTERM while loading exits 0, and a model
that fails to load ends the process with status 1 and the reason; the KV type
and activation type flags (--kv-type bf16 / --act-type bf16 serve and say so;
an unknown type exits 2 naming the flag)."""
import os
import signal
import subprocess
import time

import pytest

from memra_server import ALIAS, MODEL, Server, server_binary, wait_until

DELAY_MS = 3000


def check_loading_error(status, headers, data):
    assert status == 503, data
    assert headers.get("Retry-After"), headers
    assert set(data) == {"error"}, data
    err = data["error"]
    assert err["code"] == "model_loading" and err["type"] == "server_error", err
    assert set(err) == {"message", "type", "param", "code"} and err["message"], err


def test_probes_and_api_while_loading_then_ready():
    t0 = time.monotonic()
    s = Server("--slots", "2", "--ctx", "256", "--test-load-delay-ms", str(DELAY_MS), wait_ready=False)
    try:
        assert time.monotonic() - t0 < DELAY_MS / 1000, "the listener opened only after the load"
        status, _, data = s.request("GET", "/livez")
        assert status == 200 and data["status"] == "ok", data
        status, _, data = s.request("GET", "/health")
        assert status == 200 and data["state"] == "loading" and data["ready"] is False, data
        assert data["models"] == [{"id": ALIAS, "state": "loading"}], data
        status, headers, data = s.request("GET", "/readyz")
        assert status == 503 and data == {"status": "loading"}, data
        assert headers.get("Retry-After"), headers
        body = {"model": ALIAS, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
        check_loading_error(*s.request("POST", "/v1/chat/completions", body))
        check_loading_error(*s.request("POST", "/v1/completions", {"model": ALIAS, "prompt": "hi"}))
        check_loading_error(*s.request("POST", "/tokenize", {"model": ALIAS, "prompt": "hi"}))
        check_loading_error(*s.request("GET", "/v1/models"))
        check_loading_error(*s.request("GET", f"/v1/models/{ALIAS}"))
        check_loading_error(*s.request("GET", "/metrics"))
        status, _, data = s.request("GET", "/no/such/route")  # routing still answers 404
        assert status == 404 and data["error"]["code"] == "unknown_url", data
        # still loading (the delay has not run out): the answers above were not luck
        assert time.monotonic() - t0 < DELAY_MS / 1000, "test too slow to observe the loading state"

        assert wait_until(lambda: s.request("GET", "/readyz")[0] == 200, timeout=300)
        assert time.monotonic() - t0 >= DELAY_MS / 1000
        status, _, data = s.request("GET", "/readyz")
        assert data == {"status": "ready"}, data
        status, _, data = s.request("POST", "/v1/completions",
                                    {"model": ALIAS, "prompt": "The capital of France is", "max_tokens": 4,
                                     "temperature": 0})
        assert status == 200 and data["usage"]["completion_tokens"] >= 1, data
        status, _, data = s.request("GET", "/health")
        assert status == 200 and data["ready"] is True and data["status"] == "ok", data
        assert "ready: 1 model loaded" in s.log
    finally:
        assert s.stop() == 0, s.log


def test_sigterm_while_loading_exits_cleanly():
    s = Server("--slots", "2", "--ctx", "256", "--test-load-delay-ms", str(DELAY_MS), wait_ready=False)
    assert s.request("GET", "/readyz")[0] == 503
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(timeout=120) == 0, s.log


def test_model_that_fails_to_load_exits_1():
    s = Server("--slots", "2", env={"MEMRA_MODELS": f"{ALIAS}=/nonexistent/model.gguf"}, wait_ready=False)
    rc = s.proc.wait(timeout=60)
    assert rc == 1, s.log
    assert wait_until(lambda: "/nonexistent/model.gguf" in s.log, timeout=10), s.log
    assert f"model '{ALIAS}'" in s.log, s.log


@pytest.mark.parametrize("flag,marker", [("--kv-type", "blocks ({})"), ("--act-type", "(bf16), {} activations")])
def test_type_flag_bf16_serves_the_same_greedy_text(flag, marker):
    prompt = {"model": ALIAS, "prompt": "The capital of France is", "max_tokens": 12, "temperature": 0}
    texts = {}
    for value in ("f32", "bf16"):
        s = Server("--slots", "2", "--ctx", "256", flag, value)
        try:
            assert marker.format(value) in s.log, s.log
            status, _, data = s.request("POST", "/v1/completions", prompt)
            assert status == 200, data
            texts[value] = data["choices"][0]["text"]
            assert texts[value], data
        finally:
            assert s.stop() == 0, s.log
    # keys and values, or every matmul's input, rounded to bfloat16 move the logits by ~1e-3 of their range: on
    # this prompt the greedy text is f32's (a near tie could flip a token; then this prompt must change)
    assert texts["bf16"] == texts["f32"], texts


@pytest.mark.skipif("MEMRA_KV_TYPE" in os.environ, reason="MEMRA_KV_TYPE is set here: not the default")
def test_kv_type_default_is_bf16():
    s = Server("--slots", "2", "--ctx", "256")
    try:
        assert "blocks (bf16)" in s.log, s.log  # docs/FLAGS.md: the default since 2026-12-03
    finally:
        assert s.stop() == 0, s.log


def test_batch_tokens_default_by_backend():
    # unset: 512 tokens a step on the CPU (8192 on CUDA), at least two a slot (src/server/models.c)
    for slots, want in (("2", 512), ("260", 520)):
        s = Server("--slots", slots, "--ctx", "32")
        try:
            assert f"(bf16), f32 activations, {want} tokens a step" in s.log, s.log
        finally:
            assert s.stop() == 0, s.log
    s = Server("--slots", "2", "--ctx", "256", "--batch-tokens", "100")
    try:
        assert "(bf16), f32 activations, 100 tokens a step" in s.log, s.log
    finally:
        assert s.stop() == 0, s.log


@pytest.mark.parametrize("var,value", [("MEMRA_KV_TYPE", "f8"), ("MEMRA_ACT_TYPE", "fp8")])
def test_type_unknown_exits_2(var, value):
    env = dict(os.environ, MEMRA_MODELS=f"{ALIAS}={MODEL}", MEMRA_BACKEND="cpu", **{var: value})
    r = subprocess.run([str(server_binary()), "--addr", "127.0.0.1:0"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert var in r.stderr and f"'{value}'" in r.stderr, r.stderr
