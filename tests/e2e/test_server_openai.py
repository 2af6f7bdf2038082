"""memra-server driven by the official openai package: chat and completions,
streamed and not, stop strings, max_tokens, seeds, logprobs, n, usage, prefix
reuse, 16 concurrent streams (greedy, and sampled with seeds) against the same
requests run alone, and a client that disconnects mid-stream."""
import concurrent.futures as cf
import http.client
import json
import socket
import time

from memra_server import ALIAS, wait_until

USER = [{"role": "user", "content": "What is the capital of France?"}]


def chat_text(client, **kw):
    r = client.chat.completions.create(model=ALIAS, **kw)
    return r, r.choices[0].message.content


def test_models_list(client, server):
    models = client.models.list()
    assert [m.id for m in models.data] == [ALIAS]
    assert models.data[0].object == "model" and models.data[0].owned_by == "memra"
    m = client.models.retrieve(ALIAS)
    assert m.id == ALIAS


def test_chat_completion_shape(client):
    r, text = chat_text(client, messages=USER, max_tokens=16, temperature=0)
    assert r.id.startswith("chatcmpl-") and r.object == "chat.completion"
    assert r.model == ALIAS and abs(r.created - time.time()) < 600
    assert len(r.choices) == 1 and r.choices[0].index == 0
    assert r.choices[0].message.role == "assistant" and text
    assert r.choices[0].finish_reason in ("stop", "length")
    u = r.usage
    assert u.prompt_tokens > 5 and 1 <= u.completion_tokens <= 16
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    assert u.prompt_tokens_details.cached_tokens >= 0
    assert "Paris" in text  # the default model knows this one (greedy)


def test_chat_stream_equals_non_stream(client):
    _, want = chat_text(client, messages=USER, max_tokens=12, temperature=0)
    chunks = list(client.chat.completions.create(model=ALIAS, messages=USER, max_tokens=12, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == want
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finals) == 1 and finals[0].choices[0].finish_reason in ("stop", "length")
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens >= 1
    assert all(c.usage is None for c in chunks[:-1])


def test_completions_stream_and_not(client):
    r = client.completions.create(model=ALIAS, prompt="The quick brown fox", max_tokens=10, temperature=0)
    assert r.object == "text_completion" and r.id.startswith("cmpl-")
    text = r.choices[0].text
    assert text and r.usage.completion_tokens <= 10
    chunks = list(client.completions.create(model=ALIAS, prompt="The quick brown fox", max_tokens=10,
                                            temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in chunks) == text
    assert chunks[-1].choices[0].finish_reason == r.choices[0].finish_reason


def test_completions_prompt_forms(client, server):
    status, _, tok = server.request("POST", "/tokenize", {"prompt": "Hello there", "model": ALIAS})
    assert status == 200
    by_text = client.completions.create(model=ALIAS, prompt="Hello there", max_tokens=5, temperature=0)
    by_ids = client.completions.create(model=ALIAS, prompt=tok["tokens"], max_tokens=5, temperature=0)
    assert by_text.choices[0].text == by_ids.choices[0].text
    assert by_ids.usage.prompt_tokens == tok["count"]
    two = client.completions.create(model=ALIAS, prompt=["Hello there", "One two three"], max_tokens=5,
                                    temperature=0)
    assert [c.index for c in two.choices] == [0, 1]
    assert two.choices[0].text == by_text.choices[0].text


def test_max_tokens(client, eog_bias):
    for mt in (1, 3, 7):
        r = client.chat.completions.create(model=ALIAS, messages=USER, max_tokens=mt, logit_bias=eog_bias)
        assert r.usage.completion_tokens == mt
        assert r.choices[0].finish_reason == "length"
    r = client.chat.completions.create(model=ALIAS, messages=USER, max_completion_tokens=2, logit_bias=eog_bias)
    assert r.usage.completion_tokens == 2


def test_stop_strings(client, eog_bias):
    _, full = chat_text(client, messages=USER, max_tokens=24, temperature=0, logit_bias=eog_bias)
    # a stop string from the middle of the greedy output: the text ends before it
    words = full.split(" ")
    assert len(words) > 3, full
    stop = " " + words[2]
    want = full[:full.index(stop)]
    for stream in (False, True):
        if stream:
            chunks = list(client.chat.completions.create(model=ALIAS, messages=USER, max_tokens=24,
                                                         temperature=0, logit_bias=eog_bias, stop=[stop, "zzzz"],
                                                         stream=True))
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            reason = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
            assert reason == ["stop"]
        else:
            r, text = chat_text(client, messages=USER, max_tokens=24, temperature=0, logit_bias=eog_bias,
                                stop=stop)
            assert r.choices[0].finish_reason == "stop"
        assert text == want


def test_seed_reproducible(client):
    kw = dict(messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=16, temperature=1.0)
    a = chat_text(client, seed=1234, **kw)[1]
    b = chat_text(client, seed=1234, **kw)[1]
    assert a == b
    others = {chat_text(client, seed=s, **kw)[1] for s in (1, 2, 3)}
    assert others - {a}, "three other seeds all gave the same text"


def test_n_choices(client):
    kw = dict(messages=[{"role": "user", "content": "Name a color."}], max_tokens=8, temperature=1.0, seed=7)
    r = client.chat.completions.create(model=ALIAS, n=2, **kw)
    assert [c.index for c in r.choices] == [0, 1]
    assert r.usage.completion_tokens >= 2
    # choice j uses seed + j: choice 1 of seed 7 is choice 0 of seed 8
    r8 = client.chat.completions.create(model=ALIAS, n=1, **{**kw, "seed": 8})
    assert r.choices[1].message.content == r8.choices[0].message.content
    chunks = list(client.chat.completions.create(model=ALIAS, n=2, stream=True, **kw))
    texts = ["", ""]
    for c in chunks:
        for ch in c.choices:
            texts[ch.index] += ch.delta.content or ""
    assert texts == [c.message.content for c in r.choices]


def test_chat_logprobs(client):
    r = client.chat.completions.create(model=ALIAS, messages=USER, max_tokens=8, temperature=0, logprobs=True,
                                       top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens or r.choices[0].finish_reason == "stop"
    assert "".join(t.token for t in content) == r.choices[0].message.content
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == 3
        assert bytes(t.bytes).decode("utf-8", "replace") == t.token
        tops = [x.logprob for x in t.top_logprobs]
        assert tops == sorted(tops, reverse=True)
        assert t.top_logprobs[0].token == t.token  # greedy: the chosen token is the most likely
        assert abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6


def test_completion_logprobs(client):
    r = client.completions.create(model=ALIAS, prompt="One, two, three,", max_tokens=6, temperature=0, logprobs=2)
    lp = r.choices[0].logprobs
    assert "".join(lp.tokens) == r.choices[0].text
    assert len(lp.token_logprobs) == len(lp.tokens) == len(lp.text_offset) == len(lp.top_logprobs)
    assert lp.text_offset[0] == 0 and lp.text_offset == sorted(lp.text_offset)
    for tok, l, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert tok in top and abs(top[tok] - l) < 1e-6 and 1 <= len(top) <= 3


def test_usage_cached_tokens(client):
    msgs = [{"role": "system", "content": "You are a careful assistant. " * 8},
            {"role": "user", "content": "Count to three."}]
    first = client.chat.completions.create(model=ALIAS, messages=msgs, max_tokens=2, temperature=0)
    again = client.chat.completions.create(model=ALIAS, messages=msgs, max_tokens=2, temperature=0)
    assert again.usage.prompt_tokens == first.usage.prompt_tokens
    # every full 16-position block of the prompt comes from the prefix cache (at least one token is recomputed)
    n = first.usage.prompt_tokens
    assert again.usage.prompt_tokens_details.cached_tokens == min(n // 16 * 16, n - 1) > 0
    assert again.choices[0].message.content == first.choices[0].message.content


def test_tokenize_detokenize(server):
    status, _, tok = server.request("POST", "/tokenize", {"model": ALIAS, "prompt": "Hello, world!",
                                                          "return_token_strs": True})
    assert status == 200 and tok["count"] == len(tok["tokens"]) and tok["max_model_len"] == 512
    assert "".join(tok["token_strs"]) == "Hello, world!"
    status, _, de = server.request("POST", "/detokenize", {"model": ALIAS, "tokens": tok["tokens"]})
    assert status == 200 and de == {"prompt": "Hello, world!"}
    status, _, chat = server.request("POST", "/tokenize", {"messages": USER})
    assert status == 200 and chat["count"] > tok["count"]


def test_16_concurrent_streams_match_alone(client):
    prompts = [f"Write a short sentence about the number {i}." for i in range(16)]

    def alone(p):
        return chat_text(client, messages=[{"role": "user", "content": p}], max_tokens=10, temperature=0)[1]

    def streamed(p):
        s = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": p}], max_tokens=10,
                                           temperature=0, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in s if c.choices)

    want = [alone(p) for p in prompts]
    with cf.ThreadPoolExecutor(16) as ex:
        got = list(ex.map(streamed, prompts))
    assert got == want


def test_12_concurrent_sampled_streams_match_alone(client):
    """Sampled rows of one step are drawn over the engine's sampling threads
    (sample/sample_batch.h): each sequence's draws depend on its seed and logits
    only, so its text is the same alone or beside 11 others."""
    kws = [dict(messages=[{"role": "user", "content": f"Tell me about the number {i}."}], max_tokens=12,
                temperature=0.9, top_p=0.95 if i % 2 else 1.0, seed=100 + i) for i in range(12)]
    for i, kw in enumerate(kws):
        if i % 3 == 0:
            kw["frequency_penalty"] = 0.5  # a penalty history in the mix

    def streamed(kw):
        s = client.chat.completions.create(model=ALIAS, stream=True, **kw)
        return "".join(c.choices[0].delta.content or "" for c in s if c.choices)

    want = [chat_text(client, **kw)[1] for kw in kws]
    with cf.ThreadPoolExecutor(12) as ex:
        got = list(ex.map(streamed, kws))
    assert got == want
    assert len(set(want)) > 1


def test_disconnect_mid_stream_frees_the_sequence(server, eog_bias):
    before = server.health()
    assert before["running"] == 0
    body = json.dumps({"model": ALIAS, "prompt": "Once upon a time", "max_tokens": 400, "stream": True,
                       "logit_bias": eog_bias})
    conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
    conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
    got = 0
    while got < 3:  # a few chunks: the sequence is decoding
        line = r.fp.readline()
        got += line.startswith(b"data: {")
    assert server.health()["running"] == 1
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    t0 = time.time()
    assert wait_until(lambda: server.health()["running"] == 0, timeout=30), "the sequence was not freed"
    freed_after = time.time() - t0
    generated = server.health()["tokens_generated"]
    time.sleep(0.5)
    assert server.health()["tokens_generated"] == generated, "the engine still generates for the gone client"
    assert freed_after < 30
    # and the server keeps serving
    status, _, data = server.request("POST", "/v1/completions", {"model": ALIAS, "prompt": "Hi", "max_tokens": 2})
    assert status == 200, data


def test_two_models_side_by_side():
    from memra_server import MODEL, Server
    import openai
    s = Server("--slots", "2", "--ctx", "256", env={"MEMRA_MODELS": f"first={MODEL},second={MODEL}"})
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=300)
        assert [m.id for m in c.models.list().data] == ["first", "second"]
        a = c.completions.create(model="first", prompt="The sky is", max_tokens=4, temperature=0)
        b = c.completions.create(model="second", prompt="The sky is", max_tokens=4, temperature=0)
        assert a.model == "first" and b.model == "second"
        assert a.choices[0].text == b.choices[0].text
        health = s.request("GET", "/health")[2]
        assert [m["id"] for m in health["models"]] == ["first", "second"]
    finally:
        assert s.stop() == 0, s.log


def test_disconnect_while_not_streaming_frees_the_sequence(server, eog_bias):
    assert wait_until(lambda: server.health()["running"] == 0, timeout=30)
    body = json.dumps({"model": ALIAS, "prompt": "Once upon a time", "max_tokens": 400,
                       "logit_bias": eog_bias}).encode()
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert wait_until(lambda: server.health()["running"] == 1, timeout=30)
    s.close()  # the server wrote nothing yet: it must notice the close by itself
    assert wait_until(lambda: server.health()["running"] == 0, timeout=10), "the sequence was not freed"
    status, _, data = server.request("POST", "/v1/completions", {"model": ALIAS, "prompt": "Hi", "max_tokens": 2})
    assert status == 200, data


def test_logprob_bytes_join_into_the_text(client):
    # byte-level tokens may hold part of a character: "token" reads U+FFFD there,
    # and the raw "bytes" of all tokens join into the message text
    r = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content":
                                       "Write the Japanese word for cat in hiragana and kanji: "}],
                                       max_tokens=12, temperature=0, logprobs=True)
    content = r.choices[0].logprobs.content
    joined = b"".join(bytes(t.bytes) for t in content)
    assert joined.decode("utf-8", "replace") == r.choices[0].message.content
    assert any(ord(ch) > 127 for ch in r.choices[0].message.content)
