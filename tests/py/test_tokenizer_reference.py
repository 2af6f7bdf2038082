"""tests/py/test_tokenizer_reference.py — memra's tokenizer against the Python
`tokenizers` package, through the memra-tokenize CLI.

- Qwen3's tokenizer.json (shared/testdata/tokenizers/qwen3): a 1.2 MB
  multilingual corpus from tools/make_tokenizer_corpus.py (prose in many
  scripts, code, CJK, Arabic, emoji with joiners, digit and whitespace runs,
  NFC-unstable text, special-token look-alikes) must encode to exactly the
  reference ids, as one text and as ~2000 separate pieces; decoding the ids
  must give the reference's decode (with and without special tokens), which
  is the original text wherever the reference round-trips.
- Invalid UTF-8 on stdin is encoded like the reference encodes
  bytes.decode("utf-8", "replace").
- The default model (SmolLM2 GGUF, pre-tokenizer "smollm"), when fetched, is
  compared with an independent reference: a `tokenizers` BPE built from the
  GGUF's own vocabulary and merges with SmolLM2's published pre-tokenizer
  (individual digits, then GPT-2 byte-level regex).
- Malformed tokenizer.json files fail with a message naming the file.

Needs MEMRA_BUILD (the build folder holding bin/memra-tokenize).
"""
import json
import os
import pathlib
import random
import subprocess
import sys
import unicodedata

import pytest
from memra_build import tool

tokenizers = pytest.importorskip("tokenizers")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("MEMRA_SHARED", ROOT.parent / "shared"))
QWEN3 = SHARED / "testdata" / "tokenizers" / "qwen3"
DEFAULT_MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

sys.path.insert(0, str(ROOT / "tools"))
import make_tokenizer_corpus  # noqa: E402


def run(args, data: bytes):
    p = subprocess.run([tool("memra-tokenize")] + args, input=data, capture_output=True, timeout=600)
    return p


def encode(path, data: bytes, extra=()):
    p = run(list(extra) + [str(path)], data)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return json.loads(p.stdout)


def decode(path, ids, special=False):
    p = run(["--decode"] + (["--special"] if special else []) + [str(path)], json.dumps(ids).encode())
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p.stdout.decode("utf-8")


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def assert_same_ids(ref_tok, ours, ref, what):
    if ours == ref:
        return
    i = first_diff(ours, ref)
    ctx_ref = ref_tok.decode(ref[max(0, i - 8):i + 8], skip_special_tokens=False)
    ctx_ours = ref_tok.decode(ours[max(0, i - 8):i + 8], skip_special_tokens=False)
    pytest.fail(f"{what}: ids differ at {i} (of {len(ref)} ref / {len(ours)} ours)\n"
                f"ref  {ref[max(0, i - 8):i + 8]} {ctx_ref!r}\nours {ours[max(0, i - 8):i + 8]} {ctx_ours!r}")


@pytest.fixture(scope="module")
def corpus():
    text = make_tokenizer_corpus.make(1_200_000, seed=1234)
    assert len(text.encode("utf-8")) >= 1_000_000
    return text


@pytest.fixture(scope="module")
def qwen3():
    return tokenizers.Tokenizer.from_file(str(QWEN3 / "tokenizer.json"))


def test_qwen3_corpus_ids(corpus, qwen3):
    ref = qwen3.encode(corpus).ids
    ours = encode(QWEN3, corpus.encode("utf-8"))
    assert_same_ids(qwen3, ours, ref, "1.2 MB corpus")


def test_qwen3_corpus_ids_from_tokenizer_json_path(qwen3):
    text = "Hello <|im_start|>system\nYou are ünïcödé 👩‍👩‍👧‍👦 12345\n<|im_end|>"
    assert encode(QWEN3 / "tokenizer.json", text.encode()) == qwen3.encode(text).ids


def test_qwen3_pieces(corpus, qwen3):
    """The corpus cut into ~2000 pieces at random places (inside characters'
    neighbourhoods, inside special tokens, inside whitespace runs)."""
    r = random.Random(7)
    pieces, i = [], 0
    while i < len(corpus) and len(pieces) < 2000:
        n = r.choice([1, 2, 3, 5, 8, 20, 50, 200, 1000])
        pieces.append(corpus[i:i + n])
        i += n + r.randint(0, 300)
    pieces += ["", " ", "  ", "\n", "\n\n\n", " \n ", "\t", "<|im_start|>", "<|im_start|><|im_end|>",
               " " * 1000, "\n" * 500, "9" * 500, "a" * 3000, "é" * 700, "\u3000" * 100]
    data = "".join(json.dumps(p) + "\n" for p in pieces).encode()
    p = run(["--jsonl", str(QWEN3)], data)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    lines = p.stdout.decode().splitlines()
    assert len(lines) == len(pieces)
    refs = qwen3.encode_batch(pieces)
    for k, (piece, line, ref) in enumerate(zip(pieces, lines, refs)):
        assert_same_ids(qwen3, json.loads(line), ref.ids, f"piece {k} {piece[:40]!r}")


def test_qwen3_nfc_stress(qwen3):
    """3000 random strings of characters that NFC composes, reorders or maps
    (combining marks, Hangul jamo and syllables, kana voicing marks, CJK
    compatibility ideographs, singletons like U+212B) mixed with inert ones."""
    r = random.Random(11)
    pool = ([chr(c) for c in range(0x4E00, 0x4E40)] + [chr(c) for c in range(0x1100, 0x1113)] +
            [chr(c) for c in range(0x1161, 0x1176)] + [chr(c) for c in range(0x11A8, 0x11C3)] +
            [chr(c) for c in range(0xAC00, 0xAC20)] + [chr(c) for c in range(0x300, 0x370)] +
            ["\u3099", "\u309a", "か", "は", "ヒ", "\uf900", "\uf901", "\u212b", "e", "A", "ا", "\u0653", "\u0654",
             "😀", "\u200d", "\ufe0f", "ﬁ", " ", "x", "\u0958", "\u0915", "\u093c"])
    strs = ["".join(r.choice(pool) for _ in range(r.randint(1, 30))) for _ in range(3000)]
    p = run(["--jsonl", str(QWEN3)], "".join(json.dumps(s) + "\n" for s in strs).encode())
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    for s, line, ref in zip(strs, p.stdout.decode().splitlines(), qwen3.encode_batch(strs)):
        assert json.loads(line) == ref.ids, s


def test_qwen3_decode(corpus, qwen3):
    ids = qwen3.encode(corpus).ids
    assert decode(QWEN3, ids, special=True) == qwen3.decode(ids, skip_special_tokens=False)
    assert decode(QWEN3, ids, special=False) == qwen3.decode(ids, skip_special_tokens=True)


def test_qwen3_round_trip(corpus, qwen3):
    """Qwen3 normalizes to NFC, so the reference round-trips NFC text: so must we."""
    text = unicodedata.normalize("NFC", corpus)
    ref_ids = qwen3.encode(text).ids
    assert qwen3.decode(ref_ids, skip_special_tokens=False) == text
    ours = encode(QWEN3, text.encode("utf-8"))
    assert decode(QWEN3, ours, special=True) == text


def test_qwen3_decode_partial_characters(qwen3):
    """Ids that split a character: decode replaces the broken bytes as the reference does."""
    ids = qwen3.encode("日本語🚀é").ids
    for cut in range(1, len(ids)):
        part = ids[:cut]
        assert decode(QWEN3, part) == qwen3.decode(part)
        tail = ids[cut:]
        assert decode(QWEN3, tail) == qwen3.decode(tail)


def test_invalid_utf8_like_reference(qwen3):
    samples = [b"abc\xffdef", b"\xe6\x97", b"x\xe6\x97\xa5\xe6y", b"\xf0\x9f\x9a", b"\xc0\xaf ok",
               b"\xed\xa0\x80 surrogate", b"\xf4\x90\x80\x80 too big", b"caf\xe9 latin-1", b"\x80\x80\x80"]
    for raw in samples:
        ref = qwen3.encode(raw.decode("utf-8", "replace")).ids
        assert encode(QWEN3, raw) == ref, raw


def test_no_add_special_and_no_parse_special(qwen3):
    text = "<|im_start|>user hi<|im_end|>"
    ours = encode(QWEN3, text.encode(), extra=["--no-parse-special"])
    # without special-token parsing the markers are plain text: the reference
    # with the special tokens' text pre-split by the regex gives the same ids
    plain = tokenizers.Tokenizer.from_file(str(QWEN3 / "tokenizer.json"))
    ref = plain.encode(text, add_special_tokens=False).ids
    assert 151644 in ref and 151644 not in ours
    assert decode(QWEN3, ours) == text


def smollm2_reference(path):
    gguf = pytest.importorskip("gguf")
    r = gguf.GGUFReader(str(path))

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    assert strings("tokenizer.ggml.pre") == ["smollm"] or bytes(r.fields["tokenizer.ggml.pre"].parts[-1]) == b"smollm"
    tokens = strings("tokenizer.ggml.tokens")
    types = [int(r.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in r.fields["tokenizer.ggml.token_type"].data]
    merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
    from tokenizers import AddedToken, decoders, models, pre_tokenizers
    tok = tokenizers.Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True),
         pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken(t, special=(ty == 3), normalized=False) for t, ty in zip(tokens, types) if ty in (3, 4)])
    return tok


@pytest.mark.skipif(not DEFAULT_MODEL.exists(), reason="default model not fetched (scripts/fetch-model.sh)")
def test_smollm2_gguf_against_equivalent_reference(corpus):
    ref_tok = smollm2_reference(DEFAULT_MODEL)
    text = corpus[:300_000]
    ref = ref_tok.encode(text, add_special_tokens=False).ids
    ours = encode(DEFAULT_MODEL, text.encode(), extra=["--no-add-special"])
    assert_same_ids(ref_tok, ours, ref, "SmolLM2 GGUF")
    assert decode(DEFAULT_MODEL, ours, special=True) == ref_tok.decode(ref, skip_special_tokens=False)
    # a few fixed strings, printed for the record
    for s in ["Hello world", "The year 2024 had 366 days.", "<|im_start|>user\nHi!<|im_end|>"]:
        assert encode(DEFAULT_MODEL, s.encode(), extra=["--no-add-special"]) == ref_tok.encode(s).ids


@pytest.mark.parametrize("content,needle", [
    (b"{", "tokenizer.json"),
    (b"[]", "top level must be an object"),
    (b'{"model": {"type": "WordPiece", "vocab": {}}}', "unsupported model type"),
    (b'{"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}}', "model.vocab"),
    (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [3]}}', "model.merges[0]"),
    (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Split", '
     b'"pattern": {"Regex": "(["}, "behavior": "Isolated"}}', "regex does not compile"),
    (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Precompiled"}}',
     "unsupported normalizer"),
])
def test_malformed_tokenizer_json(tmp_path, content, needle):
    f = tmp_path / "tokenizer.json"
    f.write_bytes(content)
    p = run([str(f)], b"hello")
    assert p.returncode == 1
    msg = p.stderr.decode()
    assert str(f) in msg and needle in msg, msg


SEEDS = sorted((ROOT / "tests" / "fuzz" / "corpus" / "fuzz_tokenizer_json").glob("*.json"))
SEED_TEXTS = ["Hello world-wide 123 <think> the  <|endoftext|> héllo", "  leading and trailing  ",
              "a-b-c--d 12a34 x!!?y", "<s>hello</s> world<unk>", "ＨＥＬＬＯ ﬁ ① 日本", "", "\n\n x \t y\n", "-x-",
              "1-2-3 4", "wo rld  ...,,", "   ", "the the  the   world"]


@pytest.mark.parametrize("path", SEEDS, ids=[p.name for p in SEEDS])
def test_component_coverage_tokenizers(path):
    """Small tokenizer.json files (the fuzzer's seeds) that together use every
    supported normalizer, pre-tokenizer, post-processor and decoder."""
    ref_tok = tokenizers.Tokenizer.from_file(str(path))
    data = "".join(json.dumps(s) + "\n" for s in SEED_TEXTS).encode()
    p = run(["--jsonl", str(path)], data)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    for s, line in zip(SEED_TEXTS, p.stdout.decode().splitlines()):
        ref = ref_tok.encode(s).ids
        assert json.loads(line) == ref, s
        assert decode(path, ref) == ref_tok.decode(ref), s
        assert decode(path, ref, special=True) == ref_tok.decode(ref, skip_special_tokens=False), s


def gguf_vocab(path):
    """tokens, token types and merges of a GGUF, read with a small parser of
    the GGUF layout (the gguf package's reader takes minutes on these arrays)."""
    import struct
    data = pathlib.Path(path).read_bytes()
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    pos = 8
    n_tensors, n_kv = struct.unpack_from("<QQ", data, pos)
    pos += 16

    def read_str(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return data[p + 8:p + 8 + n], p + 8 + n

    def skip_value(t, p):
        if t == 8:
            return read_str(p)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, p)
            p += 12
            if et in sizes:
                return p + n * sizes[et]
            for _ in range(n):
                p = skip_value(et, p)
            return p
        return p + sizes[t]

    out = {}
    for _ in range(n_kv):
        key, pos = read_str(pos)
        (t,) = struct.unpack_from("<I", data, pos)
        pos += 4
        key = key.decode()
        if key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
            et, n = struct.unpack_from("<IQ", data, pos)
            p, items = pos + 12, []
            for _ in range(n):
                s_, p = read_str(p)
                items.append(s_.decode("utf-8"))
            out[key] = items
        elif key == "tokenizer.ggml.token_type":
            et, n = struct.unpack_from("<IQ", data, pos)
            out[key] = list(struct.unpack_from(f"<{n}i", data, pos + 12))
        pos = skip_value(t, pos)
    merges = [tuple(m.split(" ", 1)) for m in out["tokenizer.ggml.merges"]]
    return out["tokenizer.ggml.tokens"], out["tokenizer.ggml.token_type"], merges


HF_LLAMA3_RX = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def hf_equivalent(kind):
    """A tokenizer.json built with the `tokenizers` API from a vocab GGUF's
    vocabulary and merges, in the style of a real model family's file."""
    from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers, processors
    vocab_dir = SHARED / "testdata" / "vocab"
    if kind == "llama3":  # byte-level, ignore_merges, BOS by TemplateProcessing
        tokens, types, merges = gguf_vocab(vocab_dir / "ggml-vocab-llama-bpe.gguf")
        tok = tokenizers.Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens) if types[i] == 1},
                                              merges=merges, ignore_merges=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(HF_LLAMA3_RX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, ty in zip(tokens, types) if ty == 3])
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", tokens.index("<|begin_of_text|>"))])
    elif kind == "gemma":  # ▁-escaped BPE on characters with <0xXX> byte fallback
        tokens, types, merges = gguf_vocab(vocab_dir / "ggml-vocab-gemma-4.gguf")
        tok = tokenizers.Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens) if types[i] in (1, 6)},
                                              merges=merges, byte_fallback=True))
        tok.normalizer = normalizers.Replace(" ", "▁")
        tok.pre_tokenizer = pre_tokenizers.Split(Regex("[^\\n]+|[\\n]+"), behavior="isolated")
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, ty in zip(tokens, types) if ty == 3])
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t, ty in zip(tokens, types) if ty == 4])
    else:  # deepseek-llm: a Sequence of six Split steps, then byte-level
        tokens, types, merges = gguf_vocab(vocab_dir / "ggml-vocab-deepseek-llm.gguf")
        tok = tokenizers.Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens) if types[i] == 1},
                                              merges=merges))
        rx = [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", r"[一-龥ࠀ-一가-퟿]+", r"\p{N}+", r"\s+$"]
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(x), behavior="isolated") for x in rx] +
            [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, ty in zip(tokens, types) if ty == 3])
    return tok


@pytest.mark.parametrize("kind", ["llama3", "gemma", "deepseek"])
def test_hf_loader_on_other_families(tmp_path, corpus, kind):
    """The tokenizer.json loader beyond Qwen3: Llama-3-style (ignore_merges,
    TemplateProcessing BOS), Gemma-style (byte fallback, ▁ normalizer, ByteFallback
    decoder, non-special added tokens) and a six-step Split sequence, each
    compared with `tokenizers` running the very same file."""
    ref_tok = hf_equivalent(kind)
    path = tmp_path / "tokenizer.json"
    ref_tok.save(str(path))
    ref_tok = tokenizers.Tokenizer.from_file(str(path))
    text = corpus[:250_000]
    ref = ref_tok.encode(text).ids
    ours = encode(path, text.encode())
    assert_same_ids(ref_tok, ours, ref, kind)
    assert decode(path, ref, special=True) == ref_tok.decode(ref, skip_special_tokens=False)
    assert decode(path, ref) == ref_tok.decode(ref)
