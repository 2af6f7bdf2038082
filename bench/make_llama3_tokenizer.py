#!/usr/bin/env python3
"""bench/make_llama3_tokenizer.py — a Llama-3 tokenizer.json for the random 8B test models.

tools/make_test_models.py writes the 8B test models without a tokenizer (memra-bench feeds random ids), but
memra-server needs one. This writes OUT/tokenizer.json (and OUT/tokenizer_config.json) in the Hugging Face
`tokenizers` format from a GGUF vocabulary of the Llama-3 BPE tokenizer — by default the shared test vocabulary
ggml-vocab-llama-bpe.gguf (128256 tokens: the model's vocabulary size) — so bench/run-server.sh can copy them
into the HF folder of the test model on the GPU machine. The facts used (Llama-3's pre-tokenizer regex, byte-level
BPE, BOS <|begin_of_text|> added in front, control tokens as special added tokens) are those of Meta's published
tokenizer.json; the vocabulary and merges come from the GGUF file.

  python3 bench/make_llama3_tokenizer.py [--vocab FILE.gguf] [--out .whl/tok-llama3]

The default output folder lies under .whl/ (git-ignored, carried to the GPU machine with the wheels).
"""
import argparse
import json
import os
import pathlib

import gguf

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_VOCAB = ROOT.parent / "shared" / "testdata" / "vocab" / "ggml-vocab-llama-bpe.gguf"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def field_strings(reader, key):
    f = reader.fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def field_ints(reader, key):
    f = reader.fields[key]
    return [int(f.parts[i][0]) for i in f.data]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", default=str(DEFAULT_VOCAB), help="a GGUF holding a Llama-3 BPE vocabulary")
    ap.add_argument("--out", default=str(ROOT / ".whl" / "tok-llama3"))
    args = ap.parse_args()
    r = gguf.GGUFReader(args.vocab)
    model = bytes(r.fields["tokenizer.ggml.model"].parts[-1]).decode()
    pre = bytes(r.fields["tokenizer.ggml.pre"].parts[-1]).decode()
    if model != "gpt2" or pre != "llama-bpe":
        raise SystemExit(f"{args.vocab}: tokenizer {model}/{pre}, not gpt2/llama-bpe (Llama-3)")
    tokens = field_strings(r, "tokenizer.ggml.tokens")
    types = field_ints(r, "tokenizer.ggml.token_type")
    merges = field_strings(r, "tokenizer.ggml.merges")
    bos = field_ints(r, "tokenizer.ggml.bos_token_id")[0]
    eos = field_ints(r, "tokenizer.ggml.eos_token_id")[0]
    CONTROL = 3
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(tokens) if types[i] == CONTROL]
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_REGEX}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": tokens[bos], "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": tokens[bos], "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": tokens[bos], "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {tokens[bos]: {"id": tokens[bos], "ids": [bos],
                                                            "tokens": [tokens[bos]]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }
    cfg = {"bos_token": tokens[bos], "eos_token": tokens[eos], "model_max_length": 131072,
           "tokenizer_class": "PreTrainedTokenizerFast"}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(args.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=1)
    print(f"{args.out}: tokenizer.json ({len(tokens)} tokens, {len(merges)} merges, {len(added)} special), "
          f"tokenizer_config.json")


if __name__ == "__main__":
    main()
