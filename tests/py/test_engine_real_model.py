"""tests/py/test_engine_real_model.py — memra on the real default model against transformers.

Reference: transformers with the model loaded from the same GGUF file
(from_pretrained(gguf_file=...): every tensor dequantized to float32), over
real text (the GNU GPL v3 Debian ships in /usr/share/common-licenses).

Always (no torch needed; CI): against the committed reference
tests/fixtures/real/smollm2_q4_1.json written by tools/make_real_model_ref.py
- memra's tokenizer gives transformers' ids for the whole text (count + sha256
  of all ids, and the first 512 ids exactly) and for the rendered chat prompt;
- memra-ppl over those 512 ids: top-1 agreement ≥ 99 % and perplexity within
  0.1 % of the reference;
- `MEMRA_CHAT=1 run-gen --max-tokens 48` (greedy) writes the reference answer.
Skipped only where the text is absent or is not the file the reference was
made from (sha256). The default model is fetched by `make test` before pytest;
a missing or different model file fails.

Where transformers + torch + accelerate (tools/requirements.txt) are installed,
the same checks also run against a live transformers run.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MEMRA_BUILD", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bin")
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "real", "smollm2_q4_1.json")

sys.path.insert(0, os.path.join(ROOT, "tools"))
import real_model_check as rmc  # noqa: E402
from make_real_model_ref import ids_sha256, sha256_file  # noqa: E402

with open(FIXTURE) as _f:
    REF = json.load(_f)
TEXT = REF["text"]["path"]

if not os.path.exists(TEXT):
    pytest.skip(f"{TEXT} is absent (the reference text; Debian's base-files ships it)", allow_module_level=True)
if sha256_file(TEXT) != REF["text"]["sha256"]:
    pytest.skip(f"{TEXT} has sha256 {sha256_file(TEXT)}, not {REF['text']['sha256']} the reference was made from",
                allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def model_checked():
    assert os.path.exists(MODEL), f"{MODEL} missing: run scripts/fetch-model.sh (make test does)"
    got = sha256_file(MODEL)
    assert got == REF["model"]["sha256"], f"{MODEL} has sha256 {got}, the reference was made from " \
                                          f"{REF['model']['sha256']}"
    for exe in ("memra-ppl", "run-gen", "memra-tokenize"):
        assert os.path.exists(os.path.join(BIN, exe)), f"{exe} not built in {BIN}"


@pytest.fixture(scope="module")
def memra_ppl():
    d, line = rmc.run_memra_ppl(BUILD, MODEL, TEXT, REF["ctx"])
    return d


@pytest.fixture(scope="module")
def memra_chat():
    ch = REF["chat"]
    env = dict(os.environ, MEMRA_CHAT="1")
    out = subprocess.run([os.path.join(BIN, "run-gen"), MODEL, "--prompt", ch["question"],
                          "--max-tokens", str(ch["max_new_tokens"])],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "tok/s" in out.stderr
    return out.stdout


def memra_tokenize(text, *flags):
    out = subprocess.run([os.path.join(BIN, "memra-tokenize"), *flags, MODEL], input=text.encode("utf-8"),
                         capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return json.loads(out.stdout)


# ---- against the committed reference (no torch) ----

def test_tokenizer_text_matches_reference(memra_ppl):
    with open(TEXT, "rb") as f:
        ids = memra_tokenize(f.read().decode("utf-8"))
    assert ids[:REF["ctx"]] == REF["ids"]
    assert len(ids) == REF["text"]["n_tokens"]
    assert ids_sha256(ids) == REF["text"]["all_ids_sha256"]
    assert memra_ppl["tokens"][:REF["ctx"]] == REF["ids"]  # memra-ppl's own tokenization of the file


def test_tokenizer_chat_prompt_matches_reference():
    ch = REF["chat"]
    assert memra_tokenize(ch["prompt_text"], "--no-add-special") == ch["prompt_ids"]


def test_top1_agreement_and_perplexity_vs_reference(memra_ppl):
    c = rmc.compare(memra_ppl["top1"], memra_ppl["nll"], REF["top1"], REF["nll"])
    print(f"\nvs reference: top-1 agreement {100 * c['top1_agreement']:.2f} % of {c['positions']}, perplexity "
          f"memra {c['perplexity_memra']:.6f} reference {REF['perplexity']:.6f}, "
          f"max |dNLL| {c['max_abs_dnll']:.2e}")
    assert c["top1_agreement"] >= 0.99, c
    assert abs(c["perplexity_memra"] - REF["perplexity"]) <= 1e-3 * REF["perplexity"], c


def test_chat_answer_matches_reference(memra_chat):
    assert memra_chat.strip() == REF["chat"]["answer_text"].strip(), (memra_chat, REF["chat"]["answer_text"])


# ---- against a live transformers run (only where it is installed) ----

def _live():
    for mod in ("transformers", "torch", "accelerate"):
        pytest.importorskip(mod, reason=f"{mod} not installed (tools/requirements.txt); the live check is extra")


@pytest.fixture(scope="module")
def ref_model():
    _live()
    return rmc.load_ref_model(MODEL)


def test_top1_agreement_and_perplexity_live(ref_model, memra_ppl):
    ids = memra_ppl["tokens"][:REF["ctx"]]
    top1, nll = rmc.ref_scores(ref_model, ids)
    c = rmc.compare(memra_ppl["top1"], memra_ppl["nll"], top1, nll)
    print(f"\nvs live transformers: top-1 agreement {100 * c['top1_agreement']:.2f} %, perplexity "
          f"memra {c['perplexity_memra']:.6f} transformers {c['perplexity_ref']:.6f}, "
          f"max |dNLL| {c['max_abs_dnll']:.2e}")
    assert c["top1_agreement"] >= 0.99, c
    assert abs(c["perplexity_memra"] - c["perplexity_ref"]) <= 1e-3 * c["perplexity_ref"], c


def test_chat_answer_matches_live(ref_model, memra_chat):
    ch = REF["chat"]
    _, _, _, want = rmc.ref_chat(ref_model, rmc.load_ref_tokenizer(MODEL), ch["question"], ch["max_new_tokens"])
    assert memra_chat.strip() == want.strip(), (memra_chat, want)
