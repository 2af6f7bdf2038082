"""200 streams dropped mid-stream (issue 7): in waves of 25, streamed chat and
completion requests (some with n=2, end-of-generation banned so they would run
long) are read until a few content chunks have arrived and then abandoned —
half with an orderly close, half with a reset (SO_LINGER 0). Afterwards the
server's KV-in-use gauge returns to its idle value, nothing is running or
waiting, every dropped request is counted as status 499, and the server still
answers correctly: the same greedy completion as before the waves."""
import json
import random
import socket
import struct
import threading

import pytest
from memra_server import ALIAS, Server, metric_samples, model_metric, wait_until

# The KV-in-use gauge of /metrics: blocks of the paged KV pool referenced by running sequences
# (cached prefix blocks nobody references are not "in use"; idle is 0).
KV_GAUGE = "memra_kv_blocks_used"
N_STREAMS = 200
WAVE = 25


@pytest.fixture(scope="module")
def srv():
    s = Server("--slots", "8", "--ctx", "512", "--batch-tokens", "256")
    yield s
    assert s.stop() == 0, s.log


def kv_in_use(srv):
    return model_metric(srv, KV_GAUGE)


def dropped_count(srv):
    return sum(smp.value for smp in metric_samples(srv) if smp.name == "memra_requests_total"
               and smp.labels.get("status") == "499")


def greedy(srv):
    status, _, data = srv.request("POST", "/v1/completions", {"model": ALIAS, "prompt": "The three primary colors are",
                                                              "max_tokens": 24, "temperature": 0})
    assert status == 200, data
    return data["choices"][0]["text"], data["usage"]


def drop_stream(srv, bias, i, errors):
    """Start stream i, read until it has sent a few content chunks, then leave."""
    rnd = random.Random(i)
    chat = i % 2 == 0
    body = {"model": ALIAS, "max_tokens": 300, "stream": True, "logit_bias": bias, "seed": i,
            "n": 2 if i % 5 == 0 else 1}
    if chat:
        body["messages"] = [{"role": "user", "content": f"Write a long story about the number {i}."}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = f"Story {i}: once upon a time"
        path = "/v1/completions"
    data = json.dumps(body).encode()
    want = rnd.randint(1, 6)
    s = socket.create_connection((srv.host, srv.port), timeout=120)
    try:
        s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                  % (path.encode(), len(data)) + data)
        buf, got = b"", 0
        while got < want:
            chunk = s.recv(4096)
            if not chunk:
                errors.append(f"stream {i}: closed by the server after {got} chunks: {buf[:300]!r}")
                return
            buf += chunk
            got = buf.count(b'"content":"') + buf.count(b'"text":"') - buf.count(b'"content":""') - \
                buf.count(b'"text":""')
            if not buf.startswith(b"HTTP/1.1 200"):
                errors.append(f"stream {i}: {buf[:300]!r}")
                return
        if b"[DONE]" in buf:
            errors.append(f"stream {i}: finished before it was dropped")
        if i % 2:  # a reset instead of an orderly close
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError as e:
        errors.append(f"stream {i}: {e!r}")
    finally:
        s.close()


def test_200_mid_stream_disconnects_return_the_pool_to_idle(srv):
    status, _, data = srv.request("POST", "/tokenize", {"prompt": "<|endoftext|><|im_end|>",
                                                        "add_special_tokens": False})
    assert status == 200, data
    bias = {str(t): -100 for t in data["tokens"]}
    ref_text, ref_usage = greedy(srv)
    assert wait_until(lambda: srv.health()["running"] == 0, timeout=30)
    idle = kv_in_use(srv)
    dropped0 = dropped_count(srv)

    errors = []
    for w in range(0, N_STREAMS, WAVE):
        threads = [threading.Thread(target=drop_stream, args=(srv, bias, i, errors), daemon=True)
                   for i in range(w, min(w + WAVE, N_STREAMS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        assert not any(t.is_alive() for t in threads), "a stream hung"
    assert not errors, errors[:5]

    assert wait_until(lambda: kv_in_use(srv) == idle, timeout=60), (kv_in_use(srv), idle)
    h = srv.health()
    assert h["running"] == 0 and h["waiting"] == 0, h
    assert wait_until(lambda: dropped_count(srv) - dropped0 == N_STREAMS, timeout=30), dropped_count(srv) - dropped0
    # still serving, and correctly: the same greedy text as before the waves
    assert greedy(srv)[0] == ref_text
    assert kv_in_use(srv) == idle
