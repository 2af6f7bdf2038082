#!/usr/bin/env python3
"""tools/make_tokenizer_fuzz_seeds.py — seed files for the tokenizer fuzzers.

    python3 tools/make_tokenizer_fuzz_seeds.py

Writes tests/fuzz/corpus/fuzz_tokenizer_gguf/*.gguf: three vocabulary-only
GGUF files made with the gguf package's GGUFWriter, one per tokenizer model
memra reads from GGUF ("gpt2" byte-level BPE with a pre-tokenizer name,
"llama" SentencePiece scores with byte tokens, "gemma4" BPE on ▁ text), each
with special-token ids, add_bos/add_eos flags and a chat template, so the
fuzzer starts from files that load and encode.
(The tokenizer.json seeds in tests/fuzz/corpus/fuzz_tokenizer_json/ are
written by hand-made JSON and checked against `tokenizers` in
tests/py/test_tokenizer_reference.py.)
"""
import pathlib
import tempfile

import gguf

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fuzz" / "corpus" / "fuzz_tokenizer_gguf"

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def bytelevel_alphabet():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write(name, build):
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / name
        w = gguf.GGUFWriter(str(path), arch="llama")
        build(w)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / name).write_bytes(path.read_bytes())


def gpt2(w):
    toks = bytelevel_alphabet()
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "Ġ"), ("e", "r"), ("o", "r"), ("Ġw", "or")]
    merges.insert(6, ("Ġ", "w"))
    for a, b in merges:
        toks.append(a + b)
    types = [NORMAL] * len(toks)
    toks += ["<|endoftext|>", "<|im_start|>", "<think>"]
    types += [CONTROL, CONTROL, USER_DEFINED]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges([f"{a} {b}" for a, b in merges])
    w.add_bos_token_id(len(toks) - 3)
    w.add_eos_token_id(len(toks) - 3)
    w.add_add_bos_token(True)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}")


def spm(w):
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256
    words = ["▁", "a", "e", "h", "l", "o", "w", "r", "d", "▁h", "el", "lo", "▁hel", "▁hello", "▁w", "or", "▁world"]
    toks += words
    types += [NORMAL] * len(words)
    scores = [0.0] * 259 + [-float(i) for i in range(len(words))]
    toks.append("</tool>")
    types.append(USER_DEFINED)
    scores.append(0.0)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)
    w.add_add_space_prefix(True)


def gemma4(w):
    toks = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{i:02X}>" for i in range(256)]
    types = [CONTROL] * 4 + [BYTE] * 256
    words = ["▁", "\n", "\n\n", "\t", "a", "b", "▁a", "ab", "▁ab", "▁▁"]
    toks += words
    types += [NORMAL] * len(words)
    merges = ["▁ a", "a b", "▁a b", "▁ ▁"]
    w.add_tokenizer_model("gemma4")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * len(toks))
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)


def main():
    write("gpt2_qwen2.gguf", gpt2)
    write("llama_spm.gguf", spm)
    write("gemma4.gguf", gemma4)


if __name__ == "__main__":
    main()
