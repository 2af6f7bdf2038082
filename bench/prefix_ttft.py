#!/usr/bin/env python3
"""bench/prefix_ttft.py — issue 7's prefix-cache figure: time to first token of a
second turn that shares a long prefix with a first (cold) turn.

For each repetition r: a prefix of exactly P token ids ("Conversation r. " with BOS,
then a filler text, via the server's POST /tokenize), then
  cold turn: prefix + N ids of question A, streamed, max_tokens 1;
  warm turn: prefix + N ids of question B (same prefix, different ending).
Two TTFTs per turn:
  client: request sent → first streamed chunk (official openai client, one request
          at a time) — for a prompt of 6000 token ids this includes ~40-70 ms of the
          client's own request building (its validation of the id list), measured
          with the server out of the way;
  server: the server's own, request arrival → first generated token, from the
          change of memra_time_to_first_token_seconds_sum in /metrics across the
          turn (the only request in flight) — what the prefix cache controls.
The warm turn's usage must report cached_tokens > 0 (else the run fails):
the server reuses whole 16-token blocks of the prefix and recomputes the rest.
Prints one JSON line with medians over the repetitions, and a markdown row.

  python3 bench/prefix_ttft.py --url http://127.0.0.1:8080 --model m -p 6000 -n 32 -r 5
"""
import argparse
import json
import statistics
import sys
import time
import urllib.request

import openai

FILLER = ("In the archive there were letters from every decade, tied with string and sorted by the hand of "
          "someone who had cared about order more than about memory. ")


def tokenize(url, model, text, special, key):
    req = urllib.request.Request(url.rstrip("/") + "/tokenize",
                                 data=json.dumps({"model": model, "prompt": text,
                                                  "add_special_tokens": special}).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())["tokens"]


def server_ttft_sum(url, model, key):
    """(sum, count) of the server's TTFT histogram for model, from /metrics."""
    req = urllib.request.Request(url.rstrip("/") + "/metrics", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        text = r.read().decode()
    got = {}
    for line in text.splitlines():
        for part in ("sum", "count"):
            head = f"memra_time_to_first_token_seconds_{part}{{"
            if line.startswith(head) and f'model="{model}"' in line:
                got[part] = got.get(part, 0.0) + float(line.rsplit(" ", 1)[1])
    if "sum" not in got or "count" not in got:
        raise RuntimeError(f"/metrics has no memra_time_to_first_token_seconds for model {model}")
    return got["sum"], got["count"]


def turn(client, model, ids, url, key):
    s0, n0 = server_ttft_sum(url, model, key)
    t0 = time.perf_counter()
    first = None
    cached = None
    prompt_tokens = None
    stream = client.completions.create(model=model, prompt=ids, max_tokens=1, temperature=0, stream=True,
                                       stream_options={"include_usage": True})
    for chunk in stream:
        if first is None and chunk.choices:
            first = time.perf_counter() - t0
        if chunk.usage:
            prompt_tokens = chunk.usage.prompt_tokens
            d = chunk.usage.prompt_tokens_details
            cached = d.cached_tokens if d is not None else 0
    if first is None or prompt_tokens is None:
        raise RuntimeError("the stream had no choice chunk or no usage chunk")
    s1, n1 = server_ttft_sum(url, model, key)
    if n1 - n0 != 1:
        raise RuntimeError(f"the server's TTFT count moved by {n1 - n0} during one turn (another client?)")
    return first * 1000.0, prompt_tokens, cached, (s1 - s0) * 1000.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("-p", "--prefix-tokens", type=int, default=6000)
    ap.add_argument("-n", "--new-tokens", type=int, default=32)
    ap.add_argument("-r", "--reps", type=int, default=5)
    ap.add_argument("--api-key", default="none")
    ap.add_argument("--label", default="")
    args = ap.parse_args(argv)
    if args.prefix_tokens < 16 or args.new_tokens < 1 or args.reps < 1:
        print("prefix_ttft.py: need -p ≥ 16, -n ≥ 1, -r ≥ 1", file=sys.stderr)
        return 2
    text = FILLER
    filler = tokenize(args.url, args.model, text, False, args.api_key)
    while len(filler) < args.prefix_tokens + 2 * args.new_tokens:
        text += FILLER
        filler = tokenize(args.url, args.model, text, False, args.api_key)
    qa = tokenize(args.url, args.model, " Question A: what was in the first letter? " + FILLER * 4, False,
                  args.api_key)[:args.new_tokens]
    qb = tokenize(args.url, args.model, " Question B: who sorted the letters, and when? " + FILLER * 4, False,
                  args.api_key)[:args.new_tokens]
    client = openai.OpenAI(base_url=args.url.rstrip("/") + "/v1", api_key=args.api_key, timeout=600, max_retries=0)
    cold, warm, cached, cold_srv, warm_srv = [], [], [], [], []
    for r in range(args.reps):
        prefix = (tokenize(args.url, args.model, f"Conversation {r}. ", True, args.api_key) + filler)
        prefix = prefix[:args.prefix_tokens]
        c_ms, c_pt, c_cached, c_srv = turn(client, args.model, prefix + qa, args.url, args.api_key)
        w_ms, w_pt, w_cached, w_srv = turn(client, args.model, prefix + qb, args.url, args.api_key)
        if w_pt != args.prefix_tokens + len(qb) or not w_cached:
            print(f"prefix_ttft.py: repetition {r}: warm turn prompt_tokens {w_pt}, cached_tokens {w_cached}: "
                  "the prefix was not reused", file=sys.stderr)
            return 1
        cold.append(c_ms)
        warm.append(w_ms)
        cold_srv.append(c_srv)
        warm_srv.append(w_srv)
        cached.append(w_cached)
        print(f"rep {r}: cold {c_ms:.1f} ms (server {c_srv:.1f}, cached {c_cached}), warm {w_ms:.1f} ms "
              f"(server {w_srv:.1f}, cached {w_cached} of {w_pt})", file=sys.stderr)
    out = {"label": args.label, "prefix_tokens": args.prefix_tokens, "new_tokens": args.new_tokens,
           "reps": args.reps, "cold_ttft_ms_median": statistics.median(cold),
           "warm_ttft_ms_median": statistics.median(warm), "warm_ttft_ms_min": min(warm),
           "warm_ttft_ms_max": max(warm), "cached_tokens_median": statistics.median(cached),
           "server_cold_ttft_ms_median": statistics.median(cold_srv),
           "server_warm_ttft_ms_median": statistics.median(warm_srv),
           "server_warm_ttft_ms_min": min(warm_srv), "server_warm_ttft_ms_max": max(warm_srv)}
    print(json.dumps(out))
    print(f"| {args.label} | {args.prefix_tokens} | {args.new_tokens} | {args.reps} | "
          f"{out['cold_ttft_ms_median']:.1f} | {out['warm_ttft_ms_median']:.1f} | "
          f"{out['server_cold_ttft_ms_median']:.1f} | {out['server_warm_ttft_ms_median']:.1f} | "
          f"{out['cached_tokens_median']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
