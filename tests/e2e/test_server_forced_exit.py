"""A forced exit of memra-server (a second SIGTERM, or MEMRA_DRAIN_S running
out) while requests are in flight — streamed and not, running and waiting in
admission's queue — exits 0 and frees them: built with -DMEMRA_SANITIZE=ON
(MEMRA_BUILD pointing at that build), LeakSanitizer reports no leak and
AddressSanitizer no error at exit. On a plain build the same test checks the
exit status and that the server said it cancelled work.

The requests are read over raw sockets by threads that stop reading after the
first chunk; the server is killed under them."""
import http.client
import json
import pathlib
import signal
import threading
import time

from memra_server import ALIAS, Server, server_binary, wait_until

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def asan_build():
    return b"__asan_init" in pathlib.Path(server_binary()).read_bytes()


def ban_eog(srv):
    status, _, data = srv.request("POST", "/tokenize", {"prompt": "<|endoftext|><|im_end|>",
                                                         "add_special_tokens": False})
    assert status == 200, data
    return {str(t): -100 for t in data["tokens"]}


class Req(threading.Thread):
    """One long completion (stream or not), left hanging when the server dies."""

    def __init__(self, srv, bias, i, stream):
        super().__init__(daemon=True)
        self.srv, self.bias, self.i, self.stream = srv, bias, i, stream
        self.sent = threading.Event()
        self.first = threading.Event()

    def run(self):
        try:
            conn = http.client.HTTPConnection(self.srv.host, self.srv.port, timeout=120)
            body = {"model": ALIAS, "prompt": f"Tell a long story number {self.i}:", "max_tokens": 400,
                    "stream": self.stream, "logit_bias": self.bias, "n": 1 + self.i % 2, "seed": self.i}
            conn.request("POST", "/v1/completions", body=json.dumps(body),
                         headers={"Content-Type": "application/json"})
            self.sent.set()
            r = conn.getresponse()
            if self.stream:
                r.readline()
                self.first.set()
            r.read()
        except Exception:  # noqa: BLE001 - the server is killed under us on purpose
            pass
        finally:
            self.sent.set()
            self.first.set()


def load_up(srv):
    bias = ban_eog(srv)
    reqs = [Req(srv, bias, i, stream=i % 3 != 2) for i in range(9)]
    for r in reqs:
        r.start()
    for r in reqs:
        assert r.sent.wait(30)
    # some running (2 slots, max-running 3), the rest waiting in admission's queue
    assert wait_until(lambda: srv.health()["running"] >= 2, timeout=60), srv.log
    time.sleep(0.5)
    return reqs


def check_clean(srv, rc):
    log = srv.log
    for mark in SANITIZER_MARKS:
        assert mark not in log, log[-6000:]
    assert rc == 0, f"exit status {rc}\n{log[-6000:]}"


def start_server(*flags):
    env = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0"} if asan_build() else {}
    return Server("--slots", "2", "--ctx", "512", "--max-running", "3", *flags, env=env)


def test_second_sigterm_frees_in_flight_requests():
    srv = start_server("--drain", "120")
    try:
        load_up(srv)
        srv.proc.send_signal(signal.SIGTERM)
        assert wait_until(lambda: "draining" in srv.log, timeout=10), srv.log
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.proc.wait(timeout=120)
        time.sleep(0.3)  # the stderr reader thread catches up
        assert "exiting now" in srv.log, srv.log
        check_clean(srv, rc)
    finally:
        srv.stop()


def test_drain_timeout_frees_in_flight_requests():
    srv = start_server("--drain", "1")
    try:
        load_up(srv)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.proc.wait(timeout=120)
        time.sleep(0.3)
        assert time.monotonic() - t0 < 60
        assert "still in flight after 1 s" in srv.log, srv.log
        check_clean(srv, rc)
    finally:
        srv.stop()

