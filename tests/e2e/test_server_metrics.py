"""GET /metrics (Prometheus text, parsed by prometheus_client's own parser),
/health, /livez and /readyz on a memra-server of its own, so the counters can
be matched exactly against what this test sent. The model alias holds a
double quote and a backslash, so the label escaping goes through the real
parser too. Also: a client that leaves mid-stream counts as 499, and the
tenant label comes from the API key."""
import json
import socket

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memra_server import MODEL, Server, wait_until

ALIAS = 'sm"o\\l'  # escaped in label values as sm\"o\\l


@pytest.fixture(scope="module")
def srv():
    s = Server("--models", f"{ALIAS}={MODEL}", "--slots", "4", "--ctx", "256")
    yield s
    assert s.stop() == 0, s.log


def scrape(srv):
    status, headers, data = srv.request("GET", "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    fams = {f.name: f for f in text_string_to_metric_families(data.decode())}
    return fams


def value(fams, family, sample_name, **labels):
    for s in fams[family].samples:
        if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return 0.0


def cached_tokens_found(usages):
    """What usage reported as cached; the pool's hit counter can only be larger (it also counts the
    one position of a fully cached prompt that is recomputed for its logits)."""
    return sum(u.prompt_tokens_details.cached_tokens for u in usages if u.prompt_tokens_details)


def test_metrics_families_and_types(srv):
    fams = scrape(srv)
    want = {
        "memra_requests": "counter", "memra_requests_in_flight": "gauge",
        "memra_prompt_tokens": "counter", "memra_cached_tokens": "counter", "memra_generated_tokens": "counter",
        "memra_engine_steps": "counter", "memra_sequences_running": "gauge", "memra_sequences_waiting": "gauge",
        "memra_kv_blocks_used": "gauge", "memra_kv_blocks_free": "gauge", "memra_kv_blocks_cached": "gauge",
        "memra_kv_evictions": "counter", "memra_prefix_cache_hit_tokens": "counter", "memra_preemptions": "counter",
        "memra_kv_refusals": "counter", "memra_prefix_cache_hit_ratio": "gauge",
        "memra_time_to_first_token_seconds": "histogram", "memra_inter_token_latency_seconds": "histogram",
        "memra_e2e_request_latency_seconds": "histogram", "memra_queue_time_seconds": "histogram",
    }
    for name, typ in want.items():
        assert name in fams, name
        assert fams[name].type == typ, name
    # the alias came back through the parser unchanged (escaping round-trip); a fresh server's
    # pool is all free: 4 sequences x 256 positions / 16 per block
    assert value(fams, "memra_kv_blocks_free", "memra_kv_blocks_free", model=ALIAS) == 64


def test_metrics_match_what_was_sent(srv):
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    before = scrape(srv)
    usages = []
    for q in ("Hi", "What is 2+2?", "What is 2+2?"):  # the repeat reuses its prefix (cached_tokens)
        r = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": q}], max_tokens=4,
                                           temperature=0)
        usages.append(r.usage)
    chunks = list(client.completions.create(model=ALIAS, prompt="The quick brown fox", max_tokens=5,
                                            temperature=0, stream=True, stream_options={"include_usage": True}))
    usages.append(chunks[-1].usage)
    assert usages[2].prompt_tokens_details.cached_tokens > 0
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}], max_tokens=2)
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model=ALIAS, prompt="x", max_tokens=2, extra_body={"bogus": 1})
    assert srv.request("GET", "/livez")[0] == 200

    f = scrape(srv)
    req = "memra_requests_total"

    def delta(family, sample, **labels):
        return value(f, family, sample, **labels) - value(before, family, sample, **labels)

    d = "anonymous"  # the open server's tenant (admission.c)
    assert delta("memra_requests", req, route="/v1/chat/completions", status="200", tenant=d) == 3
    assert delta("memra_requests", req, route="/v1/completions", status="200", tenant=d) == 1
    assert delta("memra_requests", req, route="/v1/chat/completions", status="404", tenant=d) == 1
    assert delta("memra_requests", req, route="/v1/completions", status="400", tenant=d) == 1
    assert delta("memra_requests", req, route="/livez", status="200", tenant=d) == 1
    assert delta("memra_requests", req, route="/metrics", status="200", tenant=d) == 1  # the scrape before
    m = {"model": ALIAS}
    assert delta("memra_prompt_tokens", "memra_prompt_tokens_total", **m) == sum(u.prompt_tokens for u in usages)
    assert delta("memra_generated_tokens", "memra_generated_tokens_total", **m) == \
        sum(u.completion_tokens for u in usages)
    cached = sum(u.prompt_tokens_details.cached_tokens for u in usages if u.prompt_tokens_details)
    assert delta("memra_cached_tokens", "memra_cached_tokens_total", **m) == cached
    ratio = value(f, "memra_prefix_cache_hit_ratio", "memra_prefix_cache_hit_ratio", **m)
    total_p = value(f, "memra_prompt_tokens", "memra_prompt_tokens_total", **m)
    total_c = value(f, "memra_cached_tokens", "memra_cached_tokens_total", **m)
    assert ratio == pytest.approx(total_c / total_p, abs=1e-5)

    # histograms: one TTFT, queue and end-to-end observation per finished choice (4); inter-token
    # gaps at most one per token after the first; buckets cumulative, +Inf == count
    n_choices = len(usages)
    for name, want in (("memra_time_to_first_token_seconds", n_choices), ("memra_queue_time_seconds", n_choices),
                       ("memra_e2e_request_latency_seconds", n_choices)):
        assert delta(name, name + "_count", **m) == want, name
    itl = delta("memra_inter_token_latency_seconds", "memra_inter_token_latency_seconds_count", **m)
    assert 0 < itl <= sum(u.completion_tokens for u in usages) - n_choices
    for name in ("memra_time_to_first_token_seconds", "memra_inter_token_latency_seconds",
                 "memra_e2e_request_latency_seconds", "memra_queue_time_seconds"):
        buckets = [s for s in f[name].samples if s.name == name + "_bucket"]
        les = [float(s.labels["le"]) for s in buckets]
        counts = [s.value for s in buckets]
        assert les == sorted(les) and les[-1] == float("inf")
        assert counts == sorted(counts)
        assert counts[-1] == value(f, name, name + "_count", **m)
        assert value(f, name, name + "_sum", **m) > 0
    e2e_sum = delta("memra_e2e_request_latency_seconds", "memra_e2e_request_latency_seconds_sum", **m)
    ttft_sum = delta("memra_time_to_first_token_seconds", "memra_time_to_first_token_seconds_sum", **m)
    assert 0 < ttft_sum <= e2e_sum

    # idle engine: nothing running or waiting, no block referenced; the prompts' full blocks stay
    # cached (the repeated one was found there), the rest is free
    for g, want in (("memra_sequences_running", 0), ("memra_sequences_waiting", 0), ("memra_kv_blocks_used", 0)):
        assert value(f, g, g, **m) == want, g
    free, cached = (value(f, g, g, **m) for g in ("memra_kv_blocks_free", "memra_kv_blocks_cached"))
    assert cached > 0 and free + cached == 64
    assert delta("memra_prefix_cache_hit_tokens", "memra_prefix_cache_hit_tokens_total", **m) >= cached_tokens_found(
        usages)
    for c in ("memra_preemptions", "memra_kv_refusals"):
        assert value(f, c, c + "_total", **m) == 0, c
    assert value(f, "memra_engine_steps", "memra_engine_steps_total", **m) > 0


def test_health_livez_readyz(srv):
    status, _, h = srv.request("GET", "/health")
    assert status == 200
    assert h["status"] == "ok" and h["ready"] is True and h["draining"] is False
    assert h["in_flight"] == 1 and h["uptime_s"] > 0  # this request
    (mod,) = h["models"]
    for k in ("id", "running", "waiting", "slots", "tokens_generated", "steps"):  # the fields /health always had
        assert k in mod, k
    assert mod["id"] == ALIAS and mod["slots"] == 4 and mod["stalled"] is False
    assert mod["last_progress_s"] >= 0
    assert srv.request("GET", "/livez") == (200, srv.request("GET", "/livez")[1], {"status": "ok"})
    status, _, r = srv.request("GET", "/readyz")
    assert (status, r) == (200, {"status": "ready"})
    status, headers, _ = srv.request("POST", "/readyz")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


def test_client_gone_mid_stream_counts_499(srv):
    """A stream whose client leaves is counted as 499 and is no longer in flight."""
    before = scrape(srv)
    body = json.dumps({"model": ALIAS, "prompt": "Once upon a time", "max_tokens": 200, "stream": True,
                        "temperature": 1.0, "logit_bias": {"0": -100, "2": -100}})
    sock = socket.create_connection((srv.host, srv.port), timeout=30)
    sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    assert b"200 OK" in sock.recv(4096)
    sock.close()

    def settled():
        f = scrape(srv)
        return (value(f, "memra_requests", "memra_requests_total", route="/v1/completions", status="499")
                - value(before, "memra_requests", "memra_requests_total", route="/v1/completions", status="499")
                == 1 and value(f, "memra_requests_in_flight", "memra_requests_in_flight") == 1)

    assert wait_until(settled, timeout=30)


def test_tenant_label_from_api_key():
    s = Server("--slots", "2", "--ctx", "256", env={"MEMRA_API_KEY": "k-metrics-test"})
    try:
        ok = s.request("POST", "/v1/completions", {"model": "smol", "prompt": "Hi", "max_tokens": 2},
                       headers={"Authorization": "Bearer k-metrics-test"})
        assert ok[0] == 200, ok
        assert s.request("POST", "/v1/completions", {"model": "smol", "prompt": "Hi", "max_tokens": 2})[0] == 401
        f = scrape(s)  # /metrics is open by default
        req = "memra_requests_total"
        # MEMRA_API_KEY's tenant is "default"; a request refused before its key is known is "none"
        assert value(f, "memra_requests", req, route="/v1/completions", status="200", tenant="default") == 1
        assert value(f, "memra_requests", req, route="/v1/completions", status="401", tenant="none") == 1
    finally:
        assert s.stop() == 0, s.log
