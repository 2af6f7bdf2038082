"""The paged KV pool and its prefix cache through a real memra-server
(docs/SERVING.md, "Prefix cache and KV pool"):

- two tenants (keyring) send the same prompt: the second request of the same
  tenant reports cached_tokens > 0, the other tenant's first reports 0, and the
  same tenant with another cache_salt reports 0; the greedy text is the same
  every time (reuse changes speed, not results);
- a server with a small pool (--kv-blocks) evicts cached prefixes under
  pressure and keeps serving: greedy texts equal those of cold runs;
- KV exhausted: a running batch-lane request is preempted for an interactive
  one and still returns its correct (cold-run) text; with no batch work to
  preempt a new interactive request is refused with 503 and Retry-After (plain
  and streamed), and served once the pool frees.
(200 mid-stream disconnects returning memra_kv_blocks_used to idle:
test_server_disconnect.py.)

Cold reference texts come from the session server (a large pool) with a fresh
random cache_salt, so nothing there is cached either."""
import concurrent.futures
import http.client
import json
import uuid

import openai
import pytest
from memra_server import ALIAS, Server, model_metric, wait_until
from test_server_auth import gen_key, write_ring

# topics for distinct prompts (their first block differs)
TOPICS = ["rivers", "mountains", "libraries", "bridges", "orchards", "harbors"]


def long_prompt(topic, words=70):
    return (f"Here is a long note about {topic}. " +
            " ".join(f"{topic[:3]}{i}" for i in range(words)) + ". Summarize it:")


def auth(key):
    return {"Authorization": f"Bearer {key}"} if key else {}


def complete(s, prompt, key=None, max_tokens=8, **extra):
    body = {"model": ALIAS, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}
    status, headers, data = s.request("POST", "/v1/completions", body, headers=auth(key), timeout=300)
    return status, headers, data


def ok(s, prompt, key=None, **kw):
    status, _, data = complete(s, prompt, key, **kw)
    assert status == 200, data
    return data["choices"][0]["text"], data["usage"]


def cold(server, prompt, **kw):
    """The greedy text of a cold run on the session server (a salt nobody else used)."""
    return ok(server, prompt, cache_salt=uuid.uuid4().hex, **kw)[0]


def n_tokens(s, prompt, key=None):
    status, _, data = s.request("POST", "/tokenize", {"prompt": prompt}, headers=auth(key))
    assert status == 200, data
    return data["count"]


@pytest.fixture(scope="module")
def tenants(tmp_path_factory):
    keys, entries = {}, []
    for name, extra in [("alice", {}), ("bob", {}), ("bat", {"lane": "batch"})]:
        k, e = gen_key(name)
        e.update(extra)
        keys[name] = k
        entries.append(e)
    ring = tmp_path_factory.mktemp("ring") / "keys.json"
    write_ring(ring, entries)
    return ring, keys


def test_prefix_cache_is_per_tenant_and_salt(tenants):
    ring, keys = tenants
    s = Server("--slots", "4", "--ctx", "512", env={"MEMRA_API_KEYS": str(ring)})
    try:
        a, b = keys["alice"], keys["bob"]
        p = long_prompt("rivers")
        n = n_tokens(s, p, a)
        assert n >= 64
        text, u = ok(s, p, a)
        assert u["prompt_tokens"] == n and u["prompt_tokens_details"]["cached_tokens"] == 0
        # the same tenant again: every full block of the prompt is found (at least one token recomputed)
        t2, u2 = ok(s, p, a)
        assert u2["prompt_tokens_details"]["cached_tokens"] == min(n // 16 * 16, n - 1) > 0
        assert t2 == text
        # another tenant never sees alice's prefix
        t3, u3 = ok(s, p, b)
        assert u3["prompt_tokens_details"]["cached_tokens"] == 0 and t3 == text
        # alice with a salt is another namespace too; the salted prefix is then cached for that salt
        t4, u4 = ok(s, p, a, cache_salt="s1")
        assert u4["prompt_tokens_details"]["cached_tokens"] == 0 and t4 == text
        t5, u5 = ok(s, p, a, cache_salt="s1")
        assert u5["prompt_tokens_details"]["cached_tokens"] > 0 and t5 == text
        # both completion routes take cache_salt; a bad one is a 400 naming it
        c = openai.OpenAI(base_url=s.url + "/v1", api_key=a, max_retries=0, timeout=120)
        r = c.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": p}], max_tokens=2,
                                      temperature=0, extra_body={"cache_salt": "chat"})
        assert r.usage.prompt_tokens_details.cached_tokens == 0
        r = c.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": p}], max_tokens=2,
                                      temperature=0, extra_body={"cache_salt": "chat"})
        assert r.usage.prompt_tokens_details.cached_tokens > 0
        for bad in (7, "", "x" * 257):
            status, _, data = complete(s, p, a, cache_salt=bad)
            assert status == 400 and data["error"]["param"] == "cache_salt", data
        assert model_metric(s, "memra_kv_blocks_used") == 0
    finally:
        assert s.stop() == 0, s.log


def test_eviction_under_pressure_keeps_greedy_text(server):
    # 24 blocks of 16 positions: room for two ~110-token prompts and their outputs, not for six
    s = Server("--slots", "2", "--ctx", "256", "--kv-blocks", "24")
    try:
        prompts = [long_prompt(t, 25) for t in TOPICS]  # ~105 tokens each
        want = {p: cold(server, p, max_tokens=12) for p in prompts}
        for rnd in range(3):
            for p in prompts:
                text, _ = ok(s, p, max_tokens=12)
                assert text == want[p], (rnd, p)
        assert model_metric(s, "memra_kv_evictions_total") > 0
        assert model_metric(s, "memra_kv_blocks_used") == 0
        assert model_metric(s, "memra_kv_blocks_free") + model_metric(s, "memra_kv_blocks_cached") == 24
    finally:
        assert s.stop() == 0, s.log


def eog_bias(s, key=None):
    status, _, data = s.request("POST", "/tokenize", {"prompt": "<|endoftext|><|im_end|>",
                                                      "add_special_tokens": False}, headers=auth(key))
    assert status == 200, data
    return {str(t): -100 for t in data["tokens"]}


class Hold:
    """A streamed completion that generates until close() (end-of-generation banned)."""

    def __init__(self, s, key, prompt, bias, max_tokens):
        self.conn = http.client.HTTPConnection(s.host, s.port, timeout=120)
        body = {"model": ALIAS, "prompt": prompt, "max_tokens": max_tokens, "stream": True, "logit_bias": bias,
                "temperature": 0}
        self.conn.request("POST", "/v1/completions", body=json.dumps(body),
                          headers={"Content-Type": "application/json", **auth(key)})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        line = self.resp.readline()  # the first SSE line: it runs
        assert line.startswith(b"data: "), line

    def close(self):
        self.conn.sock.close()
        self.conn.close()


def prompt_between(s, key, topic, lo, hi):
    """A prompt of lo..hi tokens."""
    for words in range(5, 200):
        p = long_prompt(topic, words)
        n = n_tokens(s, p, key)
        if n >= lo:
            assert n <= hi, (topic, n, lo, hi)
            return p, n
    raise AssertionError(topic)


def test_kv_exhaustion_preempts_batch_then_refuses_interactive(server, tenants):
    ring, keys = tenants
    # 16 blocks = one full context. The big prompt takes 9 blocks at admission; the mid one needs
    # 8 (more than the 7 left), plus one for its 8 generated tokens
    s = Server("--slots", "4", "--ctx", "256", "--kv-blocks", "16", env={"MEMRA_API_KEYS": str(ring)})
    try:
        bias = eog_bias(s, keys["alice"])
        big, nb = prompt_between(s, keys["alice"], "mountains", 129, 144)
        mid, nm = prompt_between(s, keys["alice"], "bridges", 113, 128)
        gen = 250 - nb
        want_batch = cold(server, big, max_tokens=gen, logit_bias=bias)
        want_mid = cold(server, mid, max_tokens=8)

        # a batch request runs and holds 9+ blocks; an interactive one that needs 8 preempts it;
        # the batch one is recomputed afterwards (prompt + what it had generated) and still right
        pool = concurrent.futures.ThreadPoolExecutor(1)
        fut = pool.submit(ok, s, big, keys["bat"], max_tokens=gen, logit_bias=bias)
        assert wait_until(lambda: model_metric(s, "memra_kv_blocks_used") >= 9 or fut.done(), timeout=120)
        assert not fut.done(), "the batch request ended before the interactive one came"
        text, u = ok(s, mid, keys["alice"], max_tokens=8)
        assert text == want_mid
        btext, busage = fut.result(timeout=300)
        assert btext == want_batch and busage["completion_tokens"] == gen
        assert model_metric(s, "memra_preemptions_total") >= 1
        assert model_metric(s, "memra_kv_refusals_total") == 0

        # an interactive request holds 9+ blocks; a new interactive one cannot fit and nothing is
        # batch work: 503 with Retry-After, as plain JSON for a stream too; served once the pool frees
        hold = Hold(s, keys["alice"], big, bias, gen)
        try:
            for stream in (False, True):
                status, h, data = complete(s, mid, keys["bob"], stream=stream)
                assert status == 503, data
                assert h["Retry-After"] == "1"
                assert data["error"]["code"] == "kv_cache_full"
            assert model_metric(s, "memra_kv_refusals_total") == 2
        finally:
            hold.close()
        assert wait_until(lambda: model_metric(s, "memra_kv_blocks_used") == 0, timeout=60)
        text, _ = ok(s, mid, keys["bob"], max_tokens=8)
        assert text == want_mid
    finally:
        assert s.stop() == 0, s.log
