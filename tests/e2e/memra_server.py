"""memra_server.py — helpers for the server end-to-end tests: a real memra-server process.

The server is the binary of the build under test ($MEMRA_BUILD/bin/memra-server),
on the CPU backend, serving the default model (models/, fetched by
scripts/fetch-model.sh) as "smol". It listens on a free port (--addr
127.0.0.1:0; the port is read from its "listening on" line, printed before the
models load), Server() waits for /readyz 200 unless wait_ready=False, and it is
stopped with SIGTERM at the end, which must give a clean exit.
"""
import http.client
import json
import os
import pathlib
import re
import subprocess
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smol"


def server_binary():
    build = pathlib.Path(os.environ.get("MEMRA_BUILD", ROOT / "build"))
    exe = build / "bin" / "memra-server"
    if not exe.exists():
        pytest.fail(f"{exe} is not built (run make, or set MEMRA_BUILD)")
    if not MODEL.exists():
        pytest.fail(f"{MODEL} is missing (run scripts/fetch-model.sh)")
    return exe


class Server:
    """One memra-server process; .url is its base URL, .log its stderr so far."""

    def __init__(self, *flags, env=None, wait_ready=True):
        e = dict(os.environ)
        e.update({"MEMRA_MODELS": f"{ALIAS}={MODEL}", "MEMRA_BACKEND": "cpu", "MEMRA_PROGRESS": "0"})
        e.update(env or {})
        self.proc = subprocess.Popen(
            [str(server_binary()), "--addr", "127.0.0.1:0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, text=True)
        self._log = []
        threading.Thread(target=self._drain, daemon=True).start()
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://([\d.]+):(\d+)", line)
        if not m:
            self.proc.wait(timeout=10)
            raise RuntimeError(f"memra-server did not start: {line!r}\n{self.log}")
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = f"http://{self.host}:{self.port}"
        # the listener opens before the models load: wait until /readyz says 200
        if wait_ready and not wait_until(self._ready, timeout=300, step=0.05):
            self.stop()
            raise RuntimeError(f"memra-server did not become ready\n{self.log}")

    def _ready(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"memra-server exited with {self.proc.returncode} while loading\n{self.log}")
        try:
            return self.request("GET", "/readyz", timeout=10)[0] == 200
        except OSError:
            return False

    def _drain(self):
        for line in self.proc.stderr:
            self._log.append(line)

    @property
    def log(self):
        return "".join(self._log)

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, headers, parsed JSON or raw bytes) of one HTTP request."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            try:
                data = json.loads(data)
            except ValueError:
                pass
            return r.status, dict(r.getheaders()), data
        finally:
            conn.close()

    def health(self):
        status, _, data = self.request("GET", "/health")
        assert status == 200, data
        return data["models"][0]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def metric_samples(srv):
    """Every sample of srv's /metrics (which must answer 200), read with prometheus_client's parser."""
    status, _, data = srv.request("GET", "/metrics")
    assert status == 200
    text = data.decode() if isinstance(data, bytes) else data
    return [smp for fam in text_string_to_metric_families(text) for smp in fam.samples]


def model_metric(srv, name):
    """The value of the one sample `name` labelled with the served model (ALIAS)."""
    vals = [smp.value for smp in metric_samples(srv) if smp.name == name and smp.labels.get("model") == ALIAS]
    assert len(vals) == 1, f"{name} for model {ALIAS}: {len(vals)} samples in /metrics"
    return vals[0]


def wait_until(pred, timeout=30.0, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()
