"""tests/py/test_tokenize_chat.py — `memra-tokenize --chat` against transformers' conventions.

The reference is jinja2 configured as transformers does (tests/py/test_templates.py's
reference_render) with the context apply_chat_template builds: the caller's keys,
`tools`/`documents` None unless given, `add_generation_prompt` False unless given,
and the tokenizer's special tokens that exist (for Qwen3: its tokenizer_config.json
says bos_token null, eos_token <|im_end|>, pad_token <|endoftext|>, unk_token null).
"""
import json
import os
import subprocess

import pytest
from memra_build import tool

from test_templates import SYSTEM, USER1, ASSIST1, USER2, WEATHER_TOOL, USER_WEATHER, TOOL_CALL, TOOL_RESULT
from test_templates import reference_render

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("MEMRA_SHARED", os.path.join(ROOT, "..", "shared"))
QWEN3 = os.path.join(SHARED, "testdata", "tokenizers", "qwen3")
TEMPLATES = os.path.join(SHARED, "testdata", "templates")
SMOLLM2 = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")



def run_chat(path, ctx, tmp_path, template=None):
    f = tmp_path / "ctx.json"
    f.write_text(json.dumps(ctx, ensure_ascii=False), encoding="utf-8")
    cmd = [tool("memra-tokenize"), "--chat", str(f)] + (["--template", template] if template else []) + [path]
    return subprocess.run(cmd, capture_output=True, timeout=60)


def qwen3_reference_context(ctx):
    cfg = json.load(open(os.path.join(QWEN3, "tokenizer_config.json"), encoding="utf-8"))
    full = {"tools": None, "documents": None, "add_generation_prompt": False}
    for k in ("bos_token", "eos_token", "unk_token", "pad_token"):
        if cfg.get(k) is not None:
            full[k] = cfg[k]
    full.update(ctx)
    return full, cfg["chat_template"]


CONVERSATIONS = [
    {"messages": [USER1], "add_generation_prompt": True},
    {"messages": [SYSTEM, USER1, ASSIST1, USER2], "add_generation_prompt": True},
    {"messages": [SYSTEM, USER1, ASSIST1]},
    {"messages": [USER_WEATHER, TOOL_CALL, TOOL_RESULT], "tools": [WEATHER_TOOL], "add_generation_prompt": True},
    {"messages": [USER1], "add_generation_prompt": True, "enable_thinking": False},
]


@pytest.mark.parametrize("i", range(len(CONVERSATIONS)))
def test_qwen3_own_template(i, tmp_path):
    ctx = CONVERSATIONS[i]
    full, source = qwen3_reference_context(ctx)
    want, error = reference_render(source, full)
    assert error is None, error
    out = run_chat(QWEN3, ctx, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode("utf-8") == want


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
                                  "google-gemma-2-2b-it.jinja", "HuggingFaceTB-SmolLM3-3B.jinja"])
def test_template_file_with_explicit_tokens(name, tmp_path):
    path = os.path.join(TEMPLATES, name)
    source = open(path, encoding="utf-8").read()
    ctx = {"messages": [USER1, ASSIST1, USER2], "add_generation_prompt": True,
           "bos_token": "<s>", "eos_token": "</s>", "date_string": "30 Nov 2026"}
    # the given tokens win; Qwen3's pad token comes from the tokenizer; it has no
    # unk token, so that variable stays undefined
    full = {"tools": None, "documents": None, "pad_token": "<|endoftext|>"}
    full.update(ctx)
    want, error = reference_render(source, full)
    out = run_chat(QWEN3, ctx, tmp_path, template=path)
    if error is not None:
        assert out.returncode == 1 and out.stderr, (error, out)
    else:
        assert out.returncode == 0, out.stderr
        assert out.stdout.decode("utf-8") == want


@pytest.mark.skipif(not os.path.exists(SMOLLM2), reason="default model not fetched")
def test_default_model_gguf_template(tmp_path):
    import gguf
    r = gguf.GGUFReader(SMOLLM2)
    source = r.fields["tokenizer.chat_template"].contents()
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    bos = tokens[r.fields["tokenizer.ggml.bos_token_id"].contents()]
    eos = tokens[r.fields["tokenizer.ggml.eos_token_id"].contents()]
    pad = tokens[r.fields["tokenizer.ggml.padding_token_id"].contents()]
    unk = tokens[r.fields["tokenizer.ggml.unknown_token_id"].contents()]
    ctx = {"messages": [USER1], "add_generation_prompt": True}
    full = dict(tools=None, documents=None, bos_token=bos, eos_token=eos, unk_token=unk, pad_token=pad, **ctx)
    want, error = reference_render(source, full)
    assert error is None, error
    out = run_chat(SMOLLM2, ctx, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode("utf-8") == want


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\"messages\": [", encoding="utf-8")
    out = subprocess.run([tool("memra-tokenize"), "--chat", str(bad), QWEN3], capture_output=True, timeout=60)
    assert out.returncode == 1 and str(bad).encode() in out.stderr
    arr = tmp_path / "arr.json"
    arr.write_text("[]", encoding="utf-8")
    out = subprocess.run([tool("memra-tokenize"), "--chat", str(arr), QWEN3], capture_output=True, timeout=60)
    assert out.returncode == 1 and b"JSON object" in out.stderr
    tmpl = tmp_path / "loop.jinja"
    tmpl.write_text("line one\n{% for x in messages %}{{ x.nope(1) }}{% endfor %}", encoding="utf-8")
    out = run_chat(QWEN3, {"messages": [USER1]}, tmp_path, template=str(tmpl))
    assert out.returncode == 1 and b"template line 2" in out.stderr, out.stderr
    out = subprocess.run([tool("memra-tokenize"), "--template", str(tmpl), QWEN3], capture_output=True, timeout=60)
    assert out.returncode == 2
