"""Bad requests against memra-server: each gets the right 4xx status and an
OpenAI-shaped error body naming the field, and the server keeps serving.
Also: the openai client's exception classes, body and header limits, keep-alive,
and the timeout for a client that stalls."""
import socket
import time

import openai
import pytest

from memra_server import ALIAS, Server

MSG = [{"role": "user", "content": "hi"}]


def chat(**kw):
    return {"model": ALIAS, "messages": MSG, "max_tokens": 2, **kw}


# (method, path, body, status, param) — param None: the error names no field
CASES = [
    ("POST", "/v1/chat/completions", b"{not json", 400, None),
    ("POST", "/v1/chat/completions", b"", 400, None),
    ("POST", "/v1/chat/completions", b"[1, 2]", 400, None),
    ("POST", "/v1/chat/completions", b'{"model": "smol", "messages": [], "model": "x"}', 400, None),
    ("POST", "/v1/chat/completions", b'{"model":"smol","messages":[{"role":"user","content":"\xff"}]}', 400, None),
    ("POST", "/v1/chat/completions", {"messages": MSG}, 400, "model"),
    ("POST", "/v1/chat/completions", {"model": ALIAS}, 400, "messages"),
    ("POST", "/v1/chat/completions", {"model": ALIAS, "messages": []}, 400, "messages"),
    ("POST", "/v1/chat/completions", {"model": ALIAS, "messages": "hi"}, 400, "messages"),
    ("POST", "/v1/chat/completions", {"model": ALIAS, "messages": [{"role": "user"}]}, 400, "messages[0].content"),
    ("POST", "/v1/chat/completions", {"model": ALIAS, "messages": [{"role": "king", "content": "x"}]}, 400,
     "messages[0].role"),
    ("POST", "/v1/chat/completions", {"model": ALIAS, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}, 400, "messages[0].content[0].type"),
    ("POST", "/v1/chat/completions", chat(temperature="hot"), 400, "temperature"),
    ("POST", "/v1/chat/completions", chat(temperature=3), 400, "temperature"),
    ("POST", "/v1/chat/completions", chat(top_p=-0.5), 400, "top_p"),
    ("POST", "/v1/chat/completions", chat(n=0), 400, "n"),
    ("POST", "/v1/chat/completions", chat(n="2"), 400, "n"),
    ("POST", "/v1/chat/completions", chat(max_tokens=0), 400, "max_tokens"),
    ("POST", "/v1/chat/completions", chat(max_tokens=100000), 400, "messages"),
    ("POST", "/v1/chat/completions", chat(presence_penalty=5), 400, "presence_penalty"),
    ("POST", "/v1/chat/completions", chat(logprobs=True, top_logprobs=50), 400, "top_logprobs"),
    ("POST", "/v1/chat/completions", chat(top_logprobs=2), 400, "top_logprobs"),
    ("POST", "/v1/chat/completions", chat(logit_bias={"abc": 1}), 400, "logit_bias.abc"),
    ("POST", "/v1/chat/completions", chat(logit_bias={"99999999": 1}), 400, "logit_bias.99999999"),
    ("POST", "/v1/chat/completions", chat(logit_bias={"5": 500}), 400, "logit_bias.5"),
    ("POST", "/v1/chat/completions", chat(stop=[1, 2]), 400, "stop[0]"),
    ("POST", "/v1/chat/completions", chat(stream="yes"), 400, "stream"),
    ("POST", "/v1/chat/completions", chat(stream_options={"include_usage": True}), 400, "stream_options"),
    ("POST", "/v1/chat/completions", chat(seed="x"), 400, "seed"),
    ("POST", "/v1/chat/completions", chat(temprature=0.5), 400, "temprature"),
    ("POST", "/v1/chat/completions", chat(tools=[{"type": "function", "function": {"name": "f"}}]), 400, "tools"),
    ("POST", "/v1/chat/completions", chat(response_format={"type": "json_object"}), 400, "response_format"),
    ("POST", "/v1/chat/completions", chat(model="no-such-model"), 404, "model"),
    ("POST", "/v1/completions", {"model": ALIAS}, 400, "prompt"),
    ("POST", "/v1/completions", {"model": ALIAS, "prompt": 5}, 400, "prompt"),
    ("POST", "/v1/completions", {"model": ALIAS, "prompt": [1, -4]}, 400, "prompt[1]"),
    ("POST", "/v1/completions", {"model": ALIAS, "prompt": [999999]}, 400, "prompt[0]"),
    ("POST", "/v1/completions", {"model": ALIAS, "prompt": "x", "logprobs": 30}, 400, "logprobs"),
    ("POST", "/v1/completions", {"model": ALIAS, "prompt": "x", "echo": True}, 400, "echo"),
    ("POST", "/v1/completions", {"model": ALIAS, "prompt": "x", "messages": MSG}, 400, "messages"),
    ("POST", "/tokenize", {"model": ALIAS}, 400, "prompt"),
    ("POST", "/detokenize", {"model": ALIAS, "tokens": [1, 99999999]}, 400, "tokens[1]"),
    ("POST", "/detokenize", {"model": "nope", "tokens": [1]}, 404, "model"),
    ("GET", "/v1/chat/completions", None, 405, None),
    ("PUT", "/v1/completions", b"{}", 405, None),
    ("DELETE", "/v1/models", None, 405, None),
    ("GET", "/v1/nothing-here", None, 404, None),
    ("POST", "/v2/chat/completions", chat(), 404, None),
    ("GET", "/v1/models/no-such-model", None, 404, "model"),
]


@pytest.mark.parametrize("method,path,body,status,param", CASES,
                         ids=[f"{i}-{c[0]}-{c[1]}-{c[3]}" for i, c in enumerate(CASES)])
def test_bad_request(server, method, path, body, status, param):
    got, headers, data = server.request(method, path, body)
    assert got == status, data
    assert headers.get("Content-Type") == "application/json"
    assert set(data) == {"error"}, data
    err = data["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert err["type"] == "invalid_request_error" and err["message"]
    assert err["param"] == param, err
    if status == 405:
        assert headers.get("Allow")
    # the server keeps serving
    assert server.request("GET", "/health")[0] == 200


def test_body_over_the_limit(server):
    big = b'{"model": "smol", "messages": [{"role": "user", "content": "' + b"a" * (10 << 20) + b'"}]}'
    status, _, data = server.request("POST", "/v1/chat/completions", big)
    assert status == 413, data
    assert data["error"]["type"] == "invalid_request_error"
    assert server.request("GET", "/health")[0] == 200


def test_huge_body_refused_unread(server):
    # far over the limit: refused from Content-Length, before the body is read
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 1000000000\r\n\r\n{")
    reply = s.recv(65536)
    s.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert server.request("GET", "/health")[0] == 200


def test_headers_over_the_limit(server):
    status, _, _ = server.request("GET", "/health", headers={"X-Big": "b" * (100 << 10)})
    assert 400 <= status < 500
    assert server.request("GET", "/health")[0] == 200


def test_openai_client_exceptions(client):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=MSG)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=ALIAS, messages=MSG, temperature=9)
    assert e.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=ALIAS, messages=MSG, extra_body={"bogus_field": 1})
    assert e.value.body["param"] == "bogus_field" and e.value.body["code"] == "unknown_parameter"


def test_keep_alive(server):
    import http.client
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    for _ in range(3):
        conn.request("GET", "/v1/models")
        r = conn.getresponse()
        assert r.status == 200 and r.read()
    conn.request("POST", "/v1/completions", body=b'{"model":"smol","prompt":"Hi","max_tokens":2}',
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200 and r.read()
    conn.close()


def test_slow_client_times_out():
    s = Server("--timeout", "1", "--slots", "2", "--ctx", "256")
    try:
        sock = socket.create_connection((s.host, s.port), timeout=30)
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")  # and then nothing
        t0 = time.time()
        assert sock.recv(1024) == b""  # the server closes the stalled connection
        assert time.time() - t0 < 10
        sock.close()
        assert s.request("GET", "/health")[0] == 200
    finally:
        assert s.stop() == 0, s.log


# malformed HTTP is answered by libevent's parser (HTML bodies): 400, or 501 for a
# method HTTP does not define (RFC 9110 §9.1) — never a 500 — and the server goes on
@pytest.mark.parametrize("junk,status", [
    (b"\x00\x01\x02garbage\r\n\r\n", 400), (b"GET\r\n\r\n", 400), (b"GET /health HTTP/9.9\r\n\r\n", 400),
    (b"POST /tokenize HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400), (b"BREW /coffee HTTP/1.1\r\n\r\n", 501)])
def test_malformed_http(server, junk, status):
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(junk)
    reply = s.recv(65536)
    s.close()
    assert reply.startswith(b"HTTP/1.1 %d " % status), reply[:100]
    assert server.request("GET", "/health")[0] == 200


def test_http_1_0(server):
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(b"GET /v1/models HTTP/1.0\r\n\r\n")
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    assert out.startswith(b"HTTP/1.0 200") and out.endswith(b"]}"), out[:300]


def test_chunked_request_body(server):
    body = b'{"prompt": "Hello there"}'
    half = len(body) // 2
    req = (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
           b"Connection: close\r\n\r\n" + b"%x\r\n" % half + body[:half] + b"\r\n" + b"%x\r\n" % (len(body) - half) +
           body[half:] + b"\r\n0\r\n\r\n")
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(req)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    assert out.startswith(b"HTTP/1.1 200"), out[:200]
    assert b'"count":2' in out


def test_pipelined_requests(server):
    one = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    last = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(one + one + last)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    assert out.count(b"HTTP/1.1 200") == 3, out[:500]
