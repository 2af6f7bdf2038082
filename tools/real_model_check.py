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

The pieces are functions so that tools/make_real_model_ref.py (which writes the
committed reference tests/fixtures/real/smollm2_q4_1.json) and
tests/py/test_engine_real_model.py (which compares memra with that reference
without torch) share them: run_memra_ppl and compare need no torch; load_ref_model,
ref_scores and ref_chat import torch/transformers when called.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEFAULT_MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


def run_memra_ppl(build, model, text, ctx, threads=0):
    """memra-ppl on one window of ctx tokens of the file text.
    Returns (its --dump dict: tokens, top1, nll, perplexity; its stdout line)."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "memra.json")
        cmd = [os.path.join(build, "bin", "memra-ppl"), model, text, "--ctx", str(ctx), "--max-windows", "1",
               "--threads", str(threads), "--dump", dump]
        run = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            raise RuntimeError(f"memra-ppl failed ({run.returncode}): {run.stderr.strip()}")
        with open(dump) as f:
            return json.load(f), run.stdout.strip()


def perplexity(nll):
    """exp(mean NLL)."""
    return math.exp(sum(nll) / len(nll))


def compare(top1, nll, ref_top1, ref_nll):
    """Agreement of two runs over the same ids: top-1 equal fraction, both perplexities, max |dNLL|."""
    if len(top1) != len(ref_top1) or len(nll) != len(ref_nll):
        raise ValueError(f"length mismatch: top1 {len(top1)} vs {len(ref_top1)}, nll {len(nll)} vs {len(ref_nll)}")
    return {"positions": len(top1),
            "top1_agreement": sum(int(x == y) for x, y in zip(top1, ref_top1)) / len(top1),
            "perplexity_memra": perplexity(nll), "perplexity_ref": perplexity(ref_nll),
            "max_abs_dnll": max(abs(x - y) for x, y in zip(nll, ref_nll))}


def load_ref_model(model):
    """transformers' model from the GGUF file, every tensor dequantized to float32."""
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    m = AutoModelForCausalLM.from_pretrained(os.path.dirname(os.path.abspath(model)),
                                             gguf_file=os.path.basename(model), dtype=torch.float32)
    return m.eval()


def gguf_pre_tokenizer(model):
    """The GGUF's tokenizer.ggml.pre string ("" when absent)."""
    from gguf import GGUFReader
    f = GGUFReader(model).fields.get("tokenizer.ggml.pre")
    return bytes(f.parts[f.data[0]]).decode("utf-8") if f is not None else ""


def load_ref_tokenizer(model):
    """transformers' tokenizer from the GGUF file. transformers' GGUF loader ignores tokenizer.ggml.pre and
    always pre-tokenizes with the GPT-2 regex alone; for pre "smollm" (the default model) that cuts a blank
    line, two spaces and "0" as "\\n\\n " + " " + "0" where SmolLM2's own tokenizer.json (Digits with
    individual_digits, then ByteLevel) gives "\\n\\n  " + "0". So the pre-tokenizer "smollm" names is put back."""
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(model)), gguf_file=os.path.basename(model))
    if gguf_pre_tokenizer(model) == "smollm":
        from tokenizers import pre_tokenizers
        tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True),
             pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return tok


def ref_scores(ref_model, ids):
    """One forward pass over ids: argmax at every position, NLL of ids[i+1] at every position but the last
    (log-softmax in float64 of the float32 logits)."""
    import torch
    with torch.no_grad():
        logits = ref_model(torch.tensor([list(ids)])).logits[0].float()
    logp = torch.log_softmax(logits.double(), -1)
    top1 = logits.argmax(-1).tolist()
    nll = [-float(logp[i, ids[i + 1]]) for i in range(len(ids) - 1)]
    return top1, nll


def ref_chat(ref_model, tok, question, max_new_tokens):
    """apply_chat_template (one user message, generation prompt) + greedy generate.
    Returns (rendered prompt text, prompt ids, answer ids, answer text without special tokens)."""
    import torch
    msgs = [{"role": "user", "content": question}]
    prompt_text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt",
                                  return_dict=True)["input_ids"]
    with torch.no_grad():
        gen = ref_model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False)
    answer_ids = gen[0, ids.shape[1]:].tolist()
    return prompt_text, ids[0].tolist(), answer_ids, tok.decode(answer_ids, skip_special_tokens=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("MEMRA_BUILD", os.path.join(ROOT, "build")))
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--text", default=DEFAULT_TEXT)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)

    d, memra_line = run_memra_ppl(a.build, a.model, a.text, a.ctx, a.threads)
    ref_top1, ref_nll = ref_scores(load_ref_model(a.model), d["tokens"][:a.ctx])
    c = compare(d["top1"], d["nll"], ref_top1, ref_nll)
    res = {"model": os.path.basename(a.model), "text": a.text, "positions": a.ctx,
           "top1_agreement": c["top1_agreement"], "perplexity_memra": c["perplexity_memra"],
           "perplexity_transformers": c["perplexity_ref"], "max_abs_dnll": c["max_abs_dnll"],
           "memra_ppl_output": memra_line}
    print(f"top-1 agreement with transformers: {100 * res['top1_agreement']:.2f} % of {a.ctx} positions")
    print(f"perplexity: memra {res['perplexity_memra']:.4f}   "
          f"transformers (dequantized GGUF, float32) {res['perplexity_transformers']:.4f}")
    print(f"max |NLL difference| per token: {res['max_abs_dnll']:.2e}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    r = main()
    sys.exit(0 if r["top1_agreement"] >= 0.99 else 1)
