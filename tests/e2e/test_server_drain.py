"""Graceful drain of memra-server on SIGTERM, on a server of its own per test:
streams accepted before the signal all finish (finish_reason and data: [DONE]),
requests after it get 503 server_shutting_down while the listener stays open
for probes (/readyz 503 "draining", /livez 200), and the process exits 0 once
the last answer is written; a second SIGTERM, or MEMRA_DRAIN_S running out,
ends it at once with exit status 0. Streams run with the end-of-generation
tokens banned so they last until max_tokens."""
import http.client
import json
import signal
import threading
import time

import openai
import pytest

from memra_server import ALIAS, Server, wait_until

N_STREAMS = 4
# long enough that streams outlast the checks made while they run, however fast the backend
# (64 was, until the CPU backend decoded SmolLM2 at ~100 tok/s: then a stream could end within the 1 s drain)
MAX_TOKENS = 200


def ban_eog(srv):
    status, _, data = srv.request("POST", "/tokenize", {"prompt": "<|endoftext|><|im_end|>",
                                                         "add_special_tokens": False})
    assert status == 200, data
    return {str(t): -100 for t in data["tokens"]}


class Stream(threading.Thread):
    """One streamed completion read over raw HTTP, so "data: [DONE]" is seen as sent."""

    def __init__(self, srv, bias, i, max_tokens=MAX_TOKENS):
        super().__init__(daemon=True)
        self.srv, self.bias, self.i, self.max_tokens = srv, bias, i, max_tokens
        self.first = threading.Event()
        self.status, self.finish, self.done, self.n_chunks, self.error = None, None, False, 0, None

    def run(self):
        try:
            conn = http.client.HTTPConnection(self.srv.host, self.srv.port, timeout=120)
            body = {"model": ALIAS, "prompt": f"Story {self.i}:", "max_tokens": self.max_tokens, "stream": True,
                    "logit_bias": self.bias, "temperature": 0.8, "seed": self.i}
            conn.request("POST", "/v1/completions", body=json.dumps(body),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            self.status = r.status
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    self.done = True
                    continue
                c = json.loads(line[6:])
                self.n_chunks += 1
                self.first.set()
                if c["choices"] and c["choices"][0]["finish_reason"]:
                    self.finish = c["choices"][0]["finish_reason"]
            conn.close()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = repr(e)
        finally:
            self.first.set()


def start_streams(srv, n):
    bias = ban_eog(srv)
    streams = [Stream(srv, bias, i) for i in range(n)]
    for s in streams:
        s.start()
    for s in streams:
        assert s.first.wait(60), "no first chunk"
    return streams


def test_sigterm_drains_in_flight_streams():
    srv = Server("--slots", "4", "--ctx", "256", env={"MEMRA_DRAIN_S": "60"})
    try:
        streams = start_streams(srv, N_STREAMS)
        assert all(s.status == 200 and s.error is None for s in streams), [s.error for s in streams]
        srv.proc.send_signal(signal.SIGTERM)
        assert wait_until(lambda: "draining" in srv.log, timeout=10)  # the loop has taken the signal
        # while draining: probes answer, new work is refused with 503
        status, _, r = srv.request("GET", "/readyz")
        assert (status, r) == (503, {"status": "draining"})
        assert srv.request("GET", "/livez")[0] == 200
        _, _, h = srv.request("GET", "/health")
        assert h["draining"] is True and h["ready"] is False and h["in_flight"] >= 2
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=30)
        with pytest.raises(openai.APIStatusError) as e:
            client.completions.create(model=ALIAS, prompt="late", max_tokens=2)
        assert e.value.status_code == 503 and e.value.body["code"] == "server_shutting_down"
        assert any(s.is_alive() for s in streams), "the streams ended before the checks; raise MAX_TOKENS"
        for s in streams:
            s.join(120)
        for s in streams:
            assert s.error is None, s.error
            assert s.finish == "length" and s.done, (s.finish, s.done, s.n_chunks, srv.log)
        assert srv.proc.wait(timeout=30) == 0, srv.log
        assert "every request answered" in srv.log
    finally:
        srv.stop()


def test_second_sigterm_exits_at_once():
    srv = Server("--slots", "2", "--ctx", "256", env={"MEMRA_DRAIN_S": "60"})
    try:
        streams = start_streams(srv, 2)
        srv.proc.send_signal(signal.SIGTERM)
        assert wait_until(lambda: "draining" in srv.log, timeout=10)
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=10) == 0, srv.log
        assert time.time() - t0 < 5
        for s in streams:
            s.join(30)
        assert not all(s.done for s in streams)  # cut, not drained
    finally:
        srv.stop()


def test_drain_deadline():
    srv = Server("--slots", "2", "--ctx", "512", env={"MEMRA_DRAIN_S": "1"})
    try:
        bias = ban_eog(srv)
        s = Stream(srv, bias, 0, max_tokens=480)  # still running when the 1 s drain runs out
        s.start()
        assert s.first.wait(60)
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=15) == 0, srv.log
        assert time.time() - t0 < 5
        assert "still in flight after 1 s" in srv.log
    finally:
        srv.stop()


def test_sigterm_when_idle_exits_at_once():
    srv = Server("--slots", "2", "--ctx", "256")
    assert srv.request("GET", "/readyz")[0] == 200
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(timeout=10) == 0, srv.log
    assert time.time() - t0 < 3
