#!/usr/bin/env python3
"""tests/kernels/sample_same.py — one side of the GPU machine's end-to-end check that sampling on the device
gives the tokens sampling on the host gives (tests/kernels/sample-same.sh runs it against memra-server with
MEMRA_SAMPLE_DEVICE=on and then off, and compares the two files).

Sends a fixed set of seeded /v1/completions requests with the official `openai` package, all at once (so they
share decode steps): greedy, temperature alone (the device draw), top_k (the device's top-k candidates), top_p and
min_p without top_k (the device's nucleus candidates, the row when they cannot decide), each at a peaked and a
flat temperature, several seeds each; prompts are token ids from the server's /tokenize. Writes one JSON object
{request name: [completion text, finish_reason, completion_tokens]} to --out.

  python3 tests/kernels/sample_same.py --url http://127.0.0.1:8080 --model m --out on.json
"""
import argparse
import asyncio
import json
import urllib.request

import openai

KINDS = [  # name, sampling fields (extra_body for the non-OpenAI ones)
    ("greedy", {"temperature": 0}),
    ("t0.8", {"temperature": 0.8}),
    ("t0.8-k40", {"temperature": 0.8, "top_k": 40}),
    ("t0.3-p0.9", {"temperature": 0.3, "top_p": 0.9}),
    ("t0.8-p0.9", {"temperature": 0.8, "top_p": 0.9}),
    ("t0.8-minp0.05", {"temperature": 0.8, "min_p": 0.05}),
    ("t0.5-p0.95-minp0.02", {"temperature": 0.5, "top_p": 0.95, "min_p": 0.02}),
    ("t1.2-p0.5", {"temperature": 1.2, "top_p": 0.5}),
]


def tokenize(url, model, text):
    req = urllib.request.Request(url.rstrip("/") + "/tokenize",
                                 data=json.dumps({"model": model, "prompt": text}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())["tokens"]


async def one(client, model, name, fields, prompt, seed, max_tokens):
    std = {k: v for k, v in fields.items() if k in ("temperature", "top_p")}
    extra = {k: v for k, v in fields.items() if k not in std}
    r = await client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens, seed=seed,
                                        extra_body=extra or None, **std)
    c = r.choices[0]
    return name, [c.text, c.finish_reason, r.usage.completion_tokens]


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=48)
    args = ap.parse_args()
    client = openai.AsyncOpenAI(base_url=args.url.rstrip("/") + "/v1", api_key="unused", timeout=600)
    tasks = []
    for i, (name, fields) in enumerate(KINDS):
        for s in range(args.seeds):
            prompt = tokenize(args.url, args.model, f"Story {i}.{s}: the machine woke up and")
            tasks.append(one(client, args.model, f"{name}/seed{s}", fields, prompt, 1000 + 17 * s + i,
                             args.max_tokens))
    out = dict(await asyncio.gather(*tasks))
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"{len(out)} requests, {sum(v[2] for v in out.values())} tokens -> {args.out}")


if __name__ == "__main__":
    asyncio.run(main())
