"""API keys and tenants against a real memra-server (docs/SERVING.md, "API keys
and tenants"): the open server says so at start-up; MEMRA_API_KEY admits one
key; a MEMRA_API_KEYS keyring with two tenants admits its enabled keys, answers
401 for a missing or unknown key and 403 for a disabled one (the openai client
raises AuthenticationError / PermissionDeniedError); probes stay open; the
keyring is reloaded when the file changes and a broken rewrite keeps the old
ring; --gen-key prints a key and the entry holding its sha256."""
import hashlib
import json
import os
import re
import subprocess
import time

import openai
import pytest

from memra_server import ALIAS, MODEL, Server, server_binary, wait_until

MSG = [{"role": "user", "content": "hi"}]
BODY = {"model": ALIAS, "messages": MSG, "max_tokens": 2}


def gen_key(tenant):
    """(key, keyring entry) from `memra-server --gen-key TENANT`."""
    p = subprocess.run([str(server_binary()), "--gen-key", tenant], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    key, entry = p.stdout.splitlines()
    return key, json.loads(entry)


def write_ring(path, entries):
    tmp = str(path) + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"keys": entries}, f)
    os.replace(tmp, path)


def client(server, key):
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0, timeout=120)


def chat(server, key):
    return client(server, key).chat.completions.create(model=ALIAS, messages=MSG, max_tokens=2)


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def test_gen_key_prints_key_and_entry():
    key, entry = gen_key("acme")
    assert re.fullmatch(r"memra-[A-Za-z0-9_-]{43}", key)
    assert entry["sha256"] == hashlib.sha256(key.encode()).hexdigest()
    assert entry["tenant"] == "acme" and entry["enabled"] is True and entry["lane"] == "interactive"
    assert gen_key("acme")[0] != key
    p = subprocess.run([str(server_binary()), "--gen-key", "bad name"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "tenant" in p.stderr


def test_open_server_says_so(server, client):
    assert wait_until(lambda: "no API keys configured" in server.log, timeout=5)
    r = client.chat.completions.create(model=ALIAS, messages=MSG, max_tokens=2)
    assert r.choices[0].finish_reason in ("length", "stop")


def test_single_key():
    s = Server("--slots", "2", "--ctx", "256", env={"MEMRA_API_KEY": "s3cret-key"})
    try:
        assert "no API keys configured" not in s.log
        assert chat(s, "s3cret-key").usage.completion_tokens >= 1
        with pytest.raises(openai.AuthenticationError) as ei:
            chat(s, "wrong-key")
        assert ei.value.status_code == 401
        assert ei.value.body["code"] == "invalid_api_key"
        status, _, data = s.request("POST", "/v1/chat/completions", BODY)
        assert status == 401 and data["error"]["type"] == "invalid_request_error"
        status, _, _ = s.request("POST", "/v1/chat/completions", BODY, headers={"Authorization": "Basic czNjcmV0"})
        assert status == 401
        status, _, data = s.request("GET", "/v1/models")
        assert status == 401
        status, _, data = s.request("GET", "/v1/models", headers=auth("s3cret-key"))
        assert status == 200 and data["data"][0]["id"] == ALIAS
        status, _, _ = s.request("POST", "/tokenize", {"prompt": "hi"})
        assert status == 401
        status, _, data = s.request("GET", "/health")  # probes stay open
        assert status == 200 and data["status"] == "ok"
    finally:
        assert s.stop() == 0, s.log


def test_keyring_two_tenants_reload(tmp_path):
    ka, ea = gen_key("alpha")
    kb, eb = gen_key("beta")
    kd, ed = gen_key("alpha")
    ed["enabled"] = False
    ring = tmp_path / "keys.json"
    write_ring(ring, [ea, eb, ed])
    s = Server("--slots", "2", "--ctx", "256", env={"MEMRA_API_KEYS": str(ring)})
    try:
        # the server's stderr is read by another thread: wait for the line, don't race it
        assert wait_until(lambda: "API keys: 3" in s.log, timeout=5), s.log
        assert chat(s, ka).usage.completion_tokens >= 1
        assert chat(s, kb).usage.completion_tokens >= 1
        with pytest.raises(openai.PermissionDeniedError) as ei:
            chat(s, kd)
        assert ei.value.status_code == 403 and ei.value.body["code"] == "api_key_disabled"
        with pytest.raises(openai.AuthenticationError):
            chat(s, "memra-" + "x" * 43)
        status, _, data = s.request("GET", "/health")
        assert status == 200

        # rewrite: beta removed, the disabled key enabled, a new tenant gamma
        kc, ec = gen_key("gamma")
        ed["enabled"] = True
        write_ring(ring, [ea, ed, ec])
        assert wait_until(lambda: s.request("GET", "/v1/models", headers=auth(kc))[0] == 200, timeout=10), s.log
        assert wait_until(lambda: "reloaded: 3 keys" in s.log, timeout=5), s.log
        assert s.request("GET", "/v1/models", headers=auth(kb))[0] == 401
        assert s.request("GET", "/v1/models", headers=auth(kd))[0] == 200
        assert chat(s, kc).usage.completion_tokens >= 1

        # a broken rewrite keeps the ring in force and says why
        with open(ring, "w") as f:
            f.write('{"keys": [{"sha256": "nothex", "tenant": "x"}]}')
        assert wait_until(lambda: "not reloaded" in s.log, timeout=10), s.log
        assert wait_until(lambda: "keys[0].sha256" in s.log, timeout=5), s.log
        assert s.request("GET", "/v1/models", headers=auth(kc))[0] == 200
        assert s.request("GET", "/v1/models", headers=auth(ka))[0] == 200
        assert s.request("GET", "/v1/models", headers=auth(kb))[0] == 401

        # and a good rewrite after it is read again
        write_ring(ring, [eb])
        assert wait_until(lambda: s.request("GET", "/v1/models", headers=auth(kb))[0] == 200, timeout=10), s.log
        assert s.request("GET", "/v1/models", headers=auth(ka))[0] == 401
    finally:
        assert s.stop() == 0, s.log


def test_bad_keyring_refuses_to_start(tmp_path):
    ring = tmp_path / "keys.json"
    ring.write_text('{"keys": [{"sha256": "00", "tenant": "a"}]}')
    env = dict(os.environ, MEMRA_MODELS=f"{ALIAS}={MODEL}", MEMRA_BACKEND="cpu", MEMRA_PROGRESS="0",
               MEMRA_API_KEYS=str(ring))
    p = subprocess.run([str(server_binary()), "--addr", "127.0.0.1:0"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1 and "keys[0].sha256" in p.stderr, p.stderr
    env["MEMRA_API_KEY"] = "k"
    p = subprocess.run([str(server_binary()), "--addr", "127.0.0.1:0"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1 and "both set" in p.stderr, p.stderr


def test_metrics_auth(tmp_path):
    """--metrics-auth 1 puts /metrics behind a key; without it /metrics is open."""
    s = Server("--slots", "1", "--ctx", "128", "--metrics-auth", "1", env={"MEMRA_API_KEY": "mk"})
    try:
        assert s.request("GET", "/metrics")[0] == 401
        assert s.request("GET", "/metrics", headers=auth("mk"))[0] != 401
        assert s.request("GET", "/health")[0] == 200
    finally:
        assert s.stop() == 0, s.log
    s = Server("--slots", "1", "--ctx", "128", env={"MEMRA_API_KEY": "mk"})
    try:
        assert s.request("GET", "/metrics")[0] != 401
    finally:
        assert s.stop() == 0, s.log
