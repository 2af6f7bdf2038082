#!/usr/bin/env python3
"""bench/load.py — the load driver for memra-server's serving figures (issue 6).

N concurrent streams (asyncio + the official `openai` package; --procs spreads them over client processes), each a
/v1/completions request whose prompt is exactly P tokens and max_tokens G:
  - prompts are token ids, so the count is exact: request i is the server's own
    POST /tokenize of "Request i. " (with BOS) followed by the ids of a long
    filler text, cut to P ids. Every prompt differs from its first tokens, so
    a prefix cache cannot skip a whole prompt;
  - no ignore_eos: generated tokens are what each stream's final usage chunk
    reports (stream_options.include_usage), never G × N;
  - figures: aggregate generated tok/s (Σ completion_tokens / wall time from
    the first request sent to the last answer), TTFT (request sent → first
    streamed chunk) p50/p99, inter-token latency p50/p99 (the gaps between
    content chunks; a chunk may carry more than one token when the server
    coalesces them, so TPOT — (last chunk − first chunk) / (tokens − 1) per
    stream — is reported too), and the streamed decode rate per stream
    (1 / mean TPOT; the c=1 decode figure when run with -c 1).
Output: one JSON line (stdout, and appended to --json FILE) and one markdown row
(appended to --md FILE). Exit status 1 when a request failed or the usage is
missing, 2 for bad arguments or an unreachable server.

  python3 bench/load.py --url http://127.0.0.1:8080 --model m -c 64 -p 512 -g 256
"""
import argparse
import asyncio
import datetime
import hashlib
import json
import sys
import time
import urllib.error
import urllib.request

import openai

FILLER = ("The history of computing is a story of people who wanted to count faster than their hands allowed. "
          "From the abacus to mechanical calculators, from punched cards to vacuum tubes, every generation built "
          "machines that the next one found slow. Memory grew from a few words to billions of bytes, and the "
          "programs grew with it: compilers, operating systems, networks, databases, and finally models that "
          "write text one token at a time. ")


def percentile(xs, q):
    """Linear interpolation between closest ranks (numpy's default); None when empty."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def post_json(url, path, body, api_key, timeout):
    req = urllib.request.Request(url.rstrip("/") + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def build_prompts(args):
    """n prompts of exactly args.prompt_tokens ids each."""
    tok = lambda text, special: post_json(args.url, "/tokenize", {"model": args.model, "prompt": text,
                                                                  "add_special_tokens": special},
                                          args.api_key, args.timeout)["tokens"]
    text = FILLER
    filler = tok(text, False)
    while len(filler) < args.prompt_tokens:
        text += FILLER
        filler = tok(text, False)
    prompts = []
    for i in range(args.requests):
        head = tok(f"Request {i}. ", True)
        ids = (head + filler)[:args.prompt_tokens]
        if len(ids) != args.prompt_tokens:
            raise RuntimeError(f"could not build a prompt of {args.prompt_tokens} tokens (got {len(ids)})")
        prompts.append(ids)
    return prompts


async def one_stream(client, args, ids, t_origin):
    """Send one streamed completion; returns its timings and usage (or an error)."""
    res = {"sent": None, "first": None, "last": None, "gaps": [], "completion_tokens": None,
           "prompt_tokens": None, "finish": None, "error": None, "text": []}
    res["sent"] = time.perf_counter() - t_origin
    try:
        extra = {"top_k": args.top_k} if args.top_k else {}
        if args.min_p:
            extra["min_p"] = args.min_p
        kw = {"top_p": args.top_p} if args.top_p < 1 else {}
        stream = await client.completions.create(model=args.model, prompt=ids, max_tokens=args.gen_tokens,
                                                 temperature=args.temperature, stream=True, extra_body=extra or None,
                                                 **kw,
                                                 stream_options={"include_usage": True})
        prev = None
        async for chunk in stream:
            now = time.perf_counter() - t_origin
            if chunk.choices:
                c = chunk.choices[0]
                if c.finish_reason:
                    res["finish"] = c.finish_reason
                if c.text:
                    res["text"].append(c.text)
                    if res["first"] is None:
                        res["first"] = now
                    elif prev is not None:
                        res["gaps"].append(now - prev)
                    prev = now
                    res["last"] = now
            if chunk.usage:
                res["completion_tokens"] = chunk.usage.completion_tokens
                res["prompt_tokens"] = chunk.usage.prompt_tokens
        if res["completion_tokens"] is None:
            res["error"] = "no usage chunk in the stream"
    except Exception as e:  # noqa: BLE001 - counted and reported, the run goes on
        res["error"] = f"{type(e).__name__}: {e}"
    res["done"] = time.perf_counter() - t_origin
    return res


async def run(args, prompts, t_origin=None):
    client = openai.AsyncOpenAI(base_url=args.url.rstrip("/") + "/v1", api_key=args.api_key, max_retries=0,
                                timeout=args.timeout)
    sem = asyncio.Semaphore(args.concurrency)
    if t_origin is None:
        t_origin = time.perf_counter()

    async def limited(ids):
        async with sem:
            return await one_stream(client, args, ids, t_origin)

    try:
        results = await asyncio.gather(*(limited(p) for p in prompts))
    finally:
        await client.close()
    return results


def run_share(args, prompts, t_start):
    """One worker process's share (--procs): its own event loop and client, sending from t_start on (a
    CLOCK_MONOTONIC time, the same clock in every process: time.perf_counter on Linux); times are relative to
    t_start, as the parent's."""
    late = time.perf_counter() - t_start
    if late > 0:
        raise RuntimeError(f"a client process started {late:.2f} s after the common start time")
    time.sleep(-late)
    return asyncio.run(run(args, prompts, t_start))


def client_procs(args, n):
    """The client processes n requests are spread over: --procs, at most one a stream in flight or a request."""
    return min(args.procs, args.concurrency, n)


def run_procs(args, prompts):
    """The requests over args.procs processes: request i goes to process i % procs, each with concurrency
    ceil(c / procs) at most (c in all), so that one Python process's parsing of the streamed chunks (the openai
    package's models, ~0.1 ms a chunk) does not pace 64 streams. Results in request order."""
    import concurrent.futures
    import multiprocessing
    procs = client_procs(args, len(prompts))
    if procs <= 1:
        return asyncio.run(run(args, prompts))
    shares = [list(range(k, len(prompts), procs)) for k in range(procs)]
    conc = [args.concurrency // procs + (1 if k < args.concurrency % procs else 0) for k in range(procs)]
    t_start = time.perf_counter() + 4.0  # every worker started (spawned, openai imported) before it
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=procs, mp_context=ctx) as ex:
        futs = [ex.submit(run_share, argparse.Namespace(**{**vars(args), "concurrency": conc[k]}),
                          [prompts[i] for i in shares[k]], t_start) for k in range(procs)]
        parts = [f.result() for f in futs]
    results = [None] * len(prompts)
    for k in range(procs):
        for i, r in zip(shares[k], parts[k]):
            results[i] = r
    return results


def summarize(args, results):
    ok = [r for r in results if not r["error"]]
    failed = [r for r in results if r["error"]]
    wall = (max(r["done"] for r in results) - min(r["sent"] for r in results)) if results else 0.0
    generated = sum(r["completion_tokens"] for r in ok)
    ttft = [(r["first"] - r["sent"]) * 1e3 for r in ok if r["first"] is not None]
    gaps = [g * 1e3 for r in ok for g in r["gaps"]]
    tpot = [(r["last"] - r["first"]) * 1e3 / (r["completion_tokens"] - 1) for r in ok
            if r["first"] is not None and r["completion_tokens"] and r["completion_tokens"] > 1]
    mean_tpot = sum(tpot) / len(tpot) if tpot else None
    bad_prompt = [r["prompt_tokens"] for r in ok if r["prompt_tokens"] != args.prompt_tokens]
    rnd = lambda x, n=2: None if x is None else round(x, n)
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "gpu": args.gpu, "label": args.label, "model": args.model, "url": args.url,
        "concurrency": args.concurrency, "client_procs": client_procs(args, len(results)),
        "requests": len(results), "prompt_tokens": args.prompt_tokens,
        "max_tokens": args.gen_tokens, "ok": len(ok), "failed": len(failed),
        "errors": sorted({r["error"] for r in failed})[:5],
        "prompt_tokens_mismatch": len(bad_prompt),
        "generated_tokens": generated,
        "finish_length": sum(1 for r in ok if r["finish"] == "length"),
        "wall_s": rnd(wall, 3),
        "agg_tok_s": rnd(generated / wall if wall > 0 else None, 1),
        "ttft_p50_ms": rnd(percentile(ttft, 50)), "ttft_p99_ms": rnd(percentile(ttft, 99)),
        "itl_p50_ms": rnd(percentile(gaps, 50), 3), "itl_p99_ms": rnd(percentile(gaps, 99), 3),
        "tpot_p50_ms": rnd(percentile(tpot, 50), 3), "tpot_p99_ms": rnd(percentile(tpot, 99), 3),
        "decode_tok_s_per_stream": rnd(1e3 / mean_tpot if mean_tpot else None, 1),
        # every stream's text in request order: two greedy runs (two builds, or one alone against a batch) with the
        # same digest generated the same text
        "texts_sha256": hashlib.sha256("\0".join("".join(r["text"]) for r in results).encode()).hexdigest()[:16],
    }


MD_HEADER = ("| date | GPU | model | c | prompt | max_tokens | requests | generated | tok/s (aggregate) | "
             "TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | decode tok/s per stream | failed | command |\n"
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")


def md_row(s, command):
    f = lambda x: "-" if x is None else str(x)
    return (f"| {s['date']} | {s['gpu']} | {s['label'] or s['model']} | {s['concurrency']} | {s['prompt_tokens']} | "
            f"{s['max_tokens']} | {s['requests']} | {s['generated_tokens']} | {f(s['agg_tok_s'])} | "
            f"{f(s['ttft_p50_ms'])} | {f(s['ttft_p99_ms'])} | {f(s['itl_p50_ms'])} | {f(s['itl_p99_ms'])} | "
            f"{f(s['decode_tok_s_per_stream'])} | {s['failed']} | `{command}` |\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8080", help="the server's base URL")
    ap.add_argument("--model", required=True, help="the served alias")
    ap.add_argument("-c", "--concurrency", type=int, default=1, help="streams in flight at once")
    ap.add_argument("-p", "--prompt-tokens", type=int, default=512, help="prompt length in tokens (exact)")
    ap.add_argument("-g", "--gen-tokens", type=int, default=256, help="max_tokens of each request")
    ap.add_argument("-n", "--requests", type=int, default=0, help="requests in all (default: the concurrency)")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--top-k", type=int, default=0, help="top_k sent with every request (0: not sent)")
    ap.add_argument("--top-p", type=float, default=1.0, help="top_p sent with every request (1: not sent)")
    ap.add_argument("--min-p", type=float, default=0.0, help="min_p sent with every request (0: not sent)")
    ap.add_argument("--warmup", type=int, default=1, help="short requests sent first, not measured")
    ap.add_argument("--procs", type=int, default=1,
                    help="client processes the streams are spread over (1: one event loop for all)")
    ap.add_argument("--api-key", default="unused")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    ap.add_argument("--gpu", default="cpu", help="the GPU name for the row (nvidia-smi's)")
    ap.add_argument("--label", default="", help="what the model column says (default: the alias)")
    ap.add_argument("--json", dest="json_out", help="append the JSON line to this file")
    ap.add_argument("--md", dest="md_out", help="append the markdown row to this file (header if new)")
    args = ap.parse_args(argv)
    args.requests = args.requests or args.concurrency
    if min(args.concurrency, args.prompt_tokens, args.gen_tokens, args.requests, args.procs) < 1:
        ap.error("-c, -p, -g, -n and --procs must be at least 1")
    command = "bench/load.py " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        prompts = build_prompts(args)
    except (urllib.error.URLError, OSError, KeyError, ValueError, RuntimeError) as e:
        print(f"load.py: cannot build the prompts through {args.url}/tokenize: {e}", file=sys.stderr)
        return 2
    if args.warmup:
        warm = argparse.Namespace(**{**vars(args), "gen_tokens": 4, "concurrency": 1})
        for r in asyncio.run(run(warm, prompts[:1] * args.warmup)):
            if r["error"]:
                print(f"load.py: warm-up request failed: {r['error']}", file=sys.stderr)
                return 1
    try:
        results = run_procs(args, prompts)
    except (RuntimeError, OSError) as e:  # a client process that could not start in time, or at all
        print(f"load.py: {e} (try fewer --procs)", file=sys.stderr)
        return 1
    s = summarize(args, results)
    line = json.dumps(s)
    print(line, flush=True)
    if args.json_out:
        with open(args.json_out, "a") as f:
            f.write(line + "\n")
    if args.md_out:
        import os
        new = not os.path.exists(args.md_out) or os.path.getsize(args.md_out) == 0
        with open(args.md_out, "a") as f:
            f.write((MD_HEADER if new else "") + md_row(s, command))
    if s["failed"] or s["prompt_tokens_mismatch"]:
        print(f"load.py: {s['failed']} request(s) failed ({s['errors']}), {s['prompt_tokens_mismatch']} with a "
              f"prompt_tokens other than {args.prompt_tokens}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
