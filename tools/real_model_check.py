#!/usr/bin/env python3
"""tools/real_model_check.py — memra against transformers on the real default model.

Runs `memra-ppl MODEL TEXT --ctx N --max-windows 1 --dump ...` (memra tokenizes
the text and scores one window of N tokens), then runs transformers on the SAME
token ids with the model loaded from the same GGUF file
(from_pretrained(gguf_file=...), which dequantizes every tensor to float32: the
reference on the dequantized weights). Prints and returns:
  - top-1 agreement: the fraction of the N positions where memra's argmax
    equals transformers' argmax;
  - both perplexities over the N-1 scored tokens, side by side;
  - max |NLL_memra - NLL_ref| over the scored tokens.

Usage: python3 tools/real_model_check.py [--build build] [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
                                          [--text /usr/share/common-licenses/GPL-3] [--ctx 512] [--json OUT]
The default text is the GNU GPL v3 as Debian ships it (base-files): real English prose present on every
Debian machine, so nothing needs downloading. Needs torch, transformers, accelerate (tools/requirements.txt).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def main(argv=None):
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("MEMRA_BUILD", os.path.join(root, "build")))
    ap.add_argument("--model", default=os.path.join(root, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "memra.json")
        cmd = [os.path.join(a.build, "bin", "memra-ppl"), a.model, a.text, "--ctx", str(a.ctx), "--max-windows", "1",
               "--threads", str(a.threads), "--dump", dump]
        run = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            raise SystemExit(f"memra-ppl failed: {run.returncode}")
        memra_line = run.stdout.strip()
        with open(dump) as f:
            d = json.load(f)

    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(os.path.abspath(a.model)),
                                                 gguf_file=os.path.basename(a.model), dtype=torch.float32)
    model.eval()
    ids = torch.tensor([d["tokens"][:a.ctx]])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    ref_top1 = logits.argmax(-1).tolist()
    logp = torch.log_softmax(logits.double(), -1)
    ref_nll = [-float(logp[i, d["tokens"][i + 1]]) for i in range(a.ctx - 1)]
    agree = sum(int(x == y) for x, y in zip(d["top1"], ref_top1)) / a.ctx
    ppl_ref = math.exp(sum(ref_nll) / len(ref_nll))
    ppl_memra = math.exp(sum(d["nll"]) / len(d["nll"]))
    max_dnll = max(abs(x - y) for x, y in zip(d["nll"], ref_nll))
    res = {"model": os.path.basename(a.model), "text": a.text, "positions": a.ctx, "top1_agreement": agree,
           "perplexity_memra": ppl_memra, "perplexity_transformers": ppl_ref, "max_abs_dnll": max_dnll,
           "memra_ppl_output": memra_line}
    print(f"top-1 agreement with transformers: {100 * agree:.2f} % of {a.ctx} positions")
    print(f"perplexity: memra {ppl_memra:.4f}   transformers (dequantized GGUF, float32) {ppl_ref:.4f}")
    print(f"max |NLL difference| per token: {max_dnll:.2e}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    r = main()
    sys.exit(0 if r["top1_agreement"] >= 0.99 else 1)
