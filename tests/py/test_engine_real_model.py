"""tests/py/test_engine_real_model.py — memra on the real default model against transformers.

Reference: transformers with the model loaded from the same GGUF file
(from_pretrained(gguf_file=...): every tensor dequantized to float32).
- top-1 agreement ≥ 99 % over 512 positions of real text (the GNU GPL v3 text
  Debian ships in /usr/share/common-licenses), perplexities within 0.1 % of
  each other (tools/real_model_check.py does the work);
- `MEMRA_CHAT=1 run-gen` (greedy) writes the same answer as transformers'
  apply_chat_template + generate(do_sample=False) on the same model.

Skipped where transformers/torch (tools/requirements.txt) or the default model
(scripts/fetch-model.sh) are not installed; the CPU-only CI runs the fixture
comparisons of tests/unit/test_backend_cpu_fixtures.c instead.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MEMRA_BUILD", os.path.join(ROOT, "build"))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TEXT = "/usr/share/common-licenses/GPL-3"

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")
if not os.path.exists(MODEL):
    pytest.skip("default model not fetched (scripts/fetch-model.sh)", allow_module_level=True)
if not os.path.exists(os.path.join(BUILD, "bin", "memra-ppl")):
    pytest.skip("memra-ppl not built", allow_module_level=True)

sys.path.insert(0, os.path.join(ROOT, "tools"))
import real_model_check  # noqa: E402


@pytest.fixture(scope="module")
def ref_model():
    return transformers.AutoModelForCausalLM.from_pretrained(os.path.dirname(MODEL), gguf_file=os.path.basename(MODEL),
                                                             dtype=torch.float32).eval()


@pytest.mark.skipif(not os.path.exists(TEXT), reason="no " + TEXT)
def test_top1_agreement_and_perplexity():
    r = real_model_check.main(["--build", BUILD, "--model", MODEL, "--text", TEXT, "--ctx", "512"])
    assert r["top1_agreement"] >= 0.99, r
    assert abs(r["perplexity_memra"] - r["perplexity_transformers"]) <= 1e-3 * r["perplexity_transformers"], r


def test_chat_answer_matches_transformers(ref_model):
    question = "What is the capital of France? Answer in one sentence."
    n = 48
    env = dict(os.environ, MEMRA_CHAT="1")
    out = subprocess.run([os.path.join(BUILD, "bin", "run-gen"), MODEL, "--prompt", question, "--max-tokens", str(n)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(MODEL), gguf_file=os.path.basename(MODEL))
    ids = tok.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)["input_ids"]
    with torch.no_grad():
        gen = ref_model.generate(ids, max_new_tokens=n, do_sample=False)
    want = tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=True)
    assert out.stdout.strip() == want.strip(), (out.stdout, want)
    assert "tok/s" in out.stderr
