"""Bounded admission against a real memra-server (docs/SERVING.md, "API keys and
tenants"): a tenant over its concurrency cap gets 429 with Retry-After and
X-RateLimit-* headers (the openai client raises RateLimitError) while another
tenant is still served; a tenant's queue holds max_queued requests and runs
them when its running request ends; interactive requests start before batch
ones; a request that can never fit gets 400 at once, even while its tenant is
busy; and a flood beyond the queue bound is refused without growing memory.

A "hold" is a streamed request that runs until the test closes it (the
model's end-of-generation tokens are banned), so the tests control exactly
what runs."""
import concurrent.futures
import http.client
import json
import os
import threading
import time

import openai
import pytest

from memra_server import ALIAS, Server, wait_until
from test_server_auth import gen_key, write_ring

MSG = [{"role": "user", "content": "hi"}]


def auth(key):
    return {"Authorization": f"Bearer {key}"} if key else {}


def eog_bias(s, key):
    status, _, data = s.request("POST", "/tokenize", {"prompt": "<|endoftext|><|im_end|>",
                                                      "add_special_tokens": False}, headers=auth(key))
    assert status == 200, data
    return {str(t): -100 for t in data["tokens"]}


# tokens a Hold may generate: it must outlast every check made while it runs, however fast the backend
# decodes (~100 tok/s on the CPU since 2026-12-05; 200 was enough at 50), so the servers that hold have a
# context of at least 1024
HOLD_TOKENS = 960


class Hold:
    """A streamed chat request that generates until close()."""

    def __init__(self, s, key, bias):
        self.conn = http.client.HTTPConnection(s.host, s.port, timeout=120)
        body = {"model": ALIAS, "messages": MSG, "max_tokens": HOLD_TOKENS, "stream": True, "logit_bias": bias}
        self.conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                          headers={"Content-Type": "application/json", **auth(key)})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        line = self.resp.readline()  # the first SSE line: the request runs
        assert line.startswith(b"data: "), line

    def close(self):
        self.conn.sock.close()
        self.conn.close()


def chat_raw(s, key, max_tokens=2, **kw):
    return s.request("POST", "/v1/chat/completions", {"model": ALIAS, "messages": MSG, "max_tokens": max_tokens, **kw},
                     headers=auth(key))


def wait_queued(s, tenant, n_before):
    """Wait for the server's n_before+1-th "request queued" line for tenant."""
    needle = f"tenant {tenant}: request queued"
    assert wait_until(lambda: s.log.count(needle) > n_before, timeout=30), s.log


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def tenants(tmp_path_factory):
    """A server with tenants capped (1 running, 0 queued), queued (1 running, 1
    queued), free (no cap), and batch (a batch-lane tenant)."""
    keys, entries = {}, []
    for name, extra in [("capped", {"max_concurrent": 1, "max_queued": 0}),
                        ("queued", {"max_concurrent": 1, "max_queued": 1}),
                        ("free", {}), ("batch", {"lane": "batch"})]:
        k, e = gen_key(name)
        e.update(extra)
        keys[name] = k
        entries.append(e)
    ring = tmp_path_factory.mktemp("ring") / "keys.json"
    write_ring(ring, entries)
    s = Server("--slots", "4", "--ctx", "1024", "--log-level", "debug", env={"MEMRA_API_KEYS": str(ring)})
    yield s, keys, eog_bias(s, keys["free"])
    assert s.stop() == 0, s.log


def test_over_cap_429_while_another_tenant_is_served(tenants):
    s, keys, bias = tenants
    hold = Hold(s, keys["capped"], bias)
    try:
        status, h, data = chat_raw(s, keys["capped"])
        assert status == 429, data
        assert data["error"]["code"] == "rate_limit_exceeded" and "capped" in data["error"]["message"]
        assert h["Retry-After"] == "1"
        assert h["X-RateLimit-Limit"] == "1"
        assert h["X-RateLimit-Remaining"] == "0"
        assert int(h["X-RateLimit-Reset"]) >= 1
        c = openai.OpenAI(base_url=s.url + "/v1", api_key=keys["capped"], max_retries=0, timeout=60)
        with pytest.raises(openai.RateLimitError) as ei:
            c.chat.completions.create(model=ALIAS, messages=MSG, max_tokens=2)
        assert ei.value.status_code == 429
        # another tenant is served meanwhile
        status, _, data = chat_raw(s, keys["free"])
        assert status == 200 and data["usage"]["completion_tokens"] >= 1
    finally:
        hold.close()
    # the cap frees when the held request ends (its client left)
    assert wait_until(lambda: chat_raw(s, keys["capped"])[0] == 200, timeout=30)


def test_tenant_queue(tenants):
    s, keys, bias = tenants
    hold = Hold(s, keys["queued"], bias)
    n = s.log.count("tenant queued: request queued")
    waiting = concurrent.futures.ThreadPoolExecutor(1).submit(chat_raw, s, keys["queued"])
    try:
        # the second request waits (queue of 1); a third is refused
        wait_queued(s, "queued", n)
        assert chat_raw(s, keys["queued"])[0] == 429
        assert not waiting.done()
        # a request that can never fit gets 400, not 429, even with the queue full
        status, _, data = chat_raw(s, keys["queued"], max_tokens=100000)
        assert status == 400 and data["error"]["code"] == "context_length_exceeded", data
    finally:
        hold.close()
    status, _, data = waiting.result(timeout=60)
    assert status == 200 and data["usage"]["completion_tokens"] >= 1
    # now one runs and the queue has room: an impossible request is refused at once
    hold = Hold(s, keys["queued"], bias)
    try:
        t0 = time.time()
        status, _, data = chat_raw(s, keys["queued"], max_tokens=100000)
        assert status == 400 and data["error"]["code"] == "context_length_exceeded", data
        long_prompt = "word " * 1200  # > 1024 positions
        status, _, data = s.request("POST", "/v1/completions", {"model": ALIAS, "prompt": long_prompt,
                                                                "max_tokens": 2}, headers=auth(keys["queued"]))
        assert status == 400 and data["error"]["code"] == "context_length_exceeded", data
        assert time.time() - t0 < 10
    finally:
        hold.close()
    assert wait_until(lambda: chat_raw(s, keys["queued"])[0] == 200, timeout=30)


def test_interactive_before_batch():
    """--max-running 1: while one request runs, a batch request and then an
    interactive one wait; the interactive one starts first."""
    kb, eb = gen_key("bulk")
    eb["lane"] = "batch"
    ki, ei = gen_key("live")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        ring = os.path.join(d, "keys.json")
        write_ring(ring, [eb, ei])
        s = Server("--slots", "2", "--ctx", "1024", "--max-running", "1", "--log-level", "debug",
                   env={"MEMRA_API_KEYS": ring})
        try:
            bias = eog_bias(s, ki)
            hold = Hold(s, ki, bias)
            done = []
            lock = threading.Lock()

            def run(key, tag):
                r = chat_raw(s, key, max_tokens=4)
                with lock:
                    done.append((tag, r[0]))

            pool = concurrent.futures.ThreadPoolExecutor(2)
            fb = pool.submit(run, kb, "batch")
            wait_queued(s, "bulk", 0)  # the batch request waits first
            fi = pool.submit(run, ki, "interactive")
            wait_queued(s, "live", 0)
            assert done == []
            hold.close()
            fb.result(timeout=60)
            fi.result(timeout=60)
            assert done == [("interactive", 200), ("batch", 200)], done
        finally:
            assert s.stop() == 0, s.log


def test_bounded_flood():
    """Open server, --max-running 1 --max-queue 4: while one request runs, a
    flood of 300 requests gets 4 places in the queue and 296 answers of 429,
    and the server's resident memory grows by less than 16 MiB."""
    s = Server("--slots", "2", "--ctx", "2048", "--max-running", "1", "--max-queue", "4")
    try:
        bias = eog_bias(s, None)
        content = "x" * 2000
        n = s.request("POST", "/tokenize", {"model": ALIAS, "messages": [{"role": "user", "content": content}]})[2]
        assert n["count"] < 1000, n["count"]  # each flood request fits (else 400 at once)
        # warm up: a first request's allocations (engine buffers) are not the flood's
        assert chat_raw(s, None)[0] == 200
        hold = Hold(s, None, bias)
        before = rss_kib(s.proc.pid)
        body = {"model": ALIAS, "messages": [{"role": "user", "content": content}], "max_tokens": 2}
        statuses = []
        lock = threading.Lock()

        def one(_):
            st = s.request("POST", "/v1/chat/completions", body, timeout=120)[0]
            with lock:
                statuses.append(st)

        pool = concurrent.futures.ThreadPoolExecutor(12)
        futs = [pool.submit(one, i) for i in range(300)]
        assert wait_until(lambda: len(statuses) >= 296, timeout=120), len(statuses)
        time.sleep(0.5)
        after = rss_kib(s.proc.pid)
        assert statuses.count(429) == 296 and len(statuses) == 296, sorted(set(statuses))
        assert after - before < 16 * 1024, (before, after)
        hold.close()
        for f in futs:
            f.result(timeout=120)
        assert statuses.count(200) == 4 and statuses.count(429) == 296
        print(f"flood: RSS {before} KiB before, {after} KiB after 296 refusals with 4 queued")
    finally:
        assert s.stop() == 0, s.log
