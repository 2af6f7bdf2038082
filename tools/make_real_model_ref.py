#!/usr/bin/env python3
"""tools/make_real_model_ref.py — write the committed transformers reference for the default model.

CI does not install torch, so tests/py/test_engine_real_model.py compares memra
with this file instead of with a live transformers run. Everything in it comes
from transformers (tools/requirements.txt) on the same GGUF file memra runs
(from_pretrained(gguf_file=...): every tensor dequantized to float32):
  - model: file name and sha256;
  - text: path, sha256, and how it was cut: the whole file (UTF-8) is tokenized
    by transformers' tokenizer with its default special tokens (BOS if the model
    asks for one, as memra-ppl does); the count and sha256 of ALL its ids are
    kept (a whole-file tokenizer check) and the first ctx ids are stored. The
    tokenizer is transformers' GGUF one with the pre-tokenizer the GGUF's
    tokenizer.ggml.pre names put back (transformers ignores that field; see
    real_model_check.load_ref_tokenizer);
  - scores over those ctx ids in one forward pass: the top-1 token at each of
    the ctx positions, the NLL of the next token at each of the first ctx-1
    (rounded to 1e-6) and the perplexity exp(mean NLL);
  - chat: the question, the prompt apply_chat_template renders (one user
    message + generation prompt) as text and as ids, and the greedy answer
    (generate(do_sample=False), max_new_tokens) as ids and as text without
    special tokens.
Deterministic: greedy decoding, deterministic torch algorithms, no sampling.

Usage: python3 tools/make_real_model_ref.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
           [--text /usr/share/common-licenses/GPL-3] [--ctx 512] [--max-tokens 48]
           [--out tests/fixtures/real/smollm2_q4_1.json]
"""
import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_model_check as rmc  # noqa: E402

QUESTION = "What is the capital of France? Answer in one sentence."


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ids_sha256(ids):
    """sha256 of the ids written as decimal numbers joined by ',' (ASCII), e.g. "1,2,3"."""
    return hashlib.sha256(",".join(str(int(i)) for i in ids).encode("ascii")).hexdigest()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=rmc.DEFAULT_MODEL)
    ap.add_argument("--text", default=rmc.DEFAULT_TEXT)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("--out", default=os.path.join(rmc.ROOT, "tests", "fixtures", "real", "smollm2_q4_1.json"))
    a = ap.parse_args(argv)

    import torch
    import transformers
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)

    tok = rmc.load_ref_tokenizer(a.model)
    model = rmc.load_ref_model(a.model)
    with open(a.text, "rb") as f:
        text = f.read().decode("utf-8")
    all_ids = tok(text)["input_ids"]
    if len(all_ids) < a.ctx:
        raise SystemExit(f"{a.text}: {len(all_ids)} tokens, fewer than --ctx {a.ctx}")
    ids = all_ids[:a.ctx]
    top1, nll = rmc.ref_scores(model, ids)
    nll = [round(x, 6) for x in nll]
    prompt_text, prompt_ids, answer_ids, answer_text = rmc.ref_chat(model, tok, a.question, a.max_tokens)

    ref = {
        "about": "transformers reference for memra on the default model; written by tools/make_real_model_ref.py, "
                 "checked by tests/py/test_engine_real_model.py",
        "generator": {"script": "tools/make_real_model_ref.py", "transformers": transformers.__version__,
                      "torch": torch.__version__,
                      "weights": "from_pretrained(gguf_file=...): every tensor dequantized to float32"},
        "model": {"file": os.path.basename(a.model), "sha256": sha256_file(a.model)},
        "tokenizer": {"source": "transformers AutoTokenizer.from_pretrained(gguf_file=...), its pre-tokenizer set "
                                "from the GGUF's tokenizer.ggml.pre (real_model_check.load_ref_tokenizer)",
                      "gguf_pre": rmc.gguf_pre_tokenizer(a.model),
                      "pre_tokenizer": str(tok.backend_tokenizer.pre_tokenizer)},
        "text": {"path": a.text, "sha256": sha256_file(a.text),
                 "cut": f"whole file decoded as UTF-8, tokenized with the tokenizer's default special tokens "
                        f"(add_special_tokens=True); first {a.ctx} ids kept",
                 "n_tokens": len(all_ids), "all_ids_sha256": ids_sha256(all_ids),
                 "all_ids_sha256_of": "the ids as decimal numbers joined by ',' (ASCII)"},
        "ctx": a.ctx,
        "ids": ids,
        "top1": top1,
        "nll": nll,
        "nll_note": "nll[i] = -log softmax(logits[i])[ids[i+1]], float64 log-softmax of the float32 logits, "
                    "rounded to 1e-6; top1[i] = argmax logits[i]",
        "perplexity": rmc.perplexity(nll),
        "chat": {"question": a.question, "prompt_text": prompt_text, "prompt_ids": prompt_ids,
                 "max_new_tokens": a.max_tokens, "answer_ids": answer_ids, "answer_text": answer_text,
                 "decoding": "greedy: generate(do_sample=False); answer_text = decode(skip_special_tokens=True)"},
    }
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False, separators=(",", ": "))
        f.write("\n")
    print(f"{a.out}: {len(ids)} ids of {len(all_ids)}, perplexity {ref['perplexity']:.4f}, "
          f"answer {answer_text!r}")
    return ref


if __name__ == "__main__":
    main()
