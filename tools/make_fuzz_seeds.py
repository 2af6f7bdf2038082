#!/usr/bin/env python3
"""tools/make_fuzz_seeds.py — write the seed corpora of the model-file fuzzers.

  python3 tools/make_fuzz_seeds.py   # writes tests/fuzz/corpus/fuzz_format_*/ and fuzz_engine_hfdir/

GGUF seeds come from the gguf package's GGUFWriter, safetensors seeds from the
safetensors package (numpy), so the fuzzers start from files written by the
reference implementations: a few small valid files of different shapes, plus
truncated copies that stop inside the metadata, the tensor table and the data.
Each seed is kept under a few KiB so libFuzzer mutates it quickly. Output is
deterministic (fixed seeds), so re-running changes nothing.

fuzz_engine_hfdir's seeds are whole Hugging Face folders in its record format
("@@X\n" + a file's bytes; tests/fuzz/fuzz_engine_hfdir.c): the configs of the
committed engine fixtures (tests/fixtures/engine/*/hf-f32) shrunk to hidden 8,
2 heads of 4, vocabulary 288, two layers, with random weights written by the
safetensors package, the small tokenizer.json seeds of fuzz_tokenizer_json, a
tokenizer_config.json and a chat template — each folder under 40 KiB (the
fuzzers' -max_len is 64 KiB) — plus FP8 Llamas (per-tensor and 128x128-block
scales), a sharded folder, a folder holding a GGUF, and broken variants.
Committed by hand, not made here: fuzz_engine_hfdir/misaligned-f32.hf (the
fuzzer's find of 2026-12-07: a header one byte longer, so F32 weights at odd
addresses — model/weights.c copies them to aligned memory since).
"""
import json
import pathlib
import struct

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def gguf_bytes(path, build, alignment=None):
    w = gguf.GGUFWriter(str(path), arch="seed")
    if alignment:
        w.add_custom_alignment(alignment)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def seed_meta_only(w):
    w.add_string("general.name", "seed")
    w.add_uint32("seed.block_count", 2)
    w.add_float32("seed.rope.freq_base", 10000.0)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "b", "ab", "\u2581x"])
    w.add_array("tokenizer.ggml.scores", [0.0, 0.0, -1.0, -2.0, -3.0, -4.5])
    w.add_array("tokenizer.ggml.token_type", [3, 3, 1, 1, 1, 1])
    w.add_array("tokenizer.ggml.merges", ["a b"])


def seed_all_types(w):
    w.add_uint8("u8", 1)
    w.add_int8("i8", -1)
    w.add_uint16("u16", 2)
    w.add_int16("i16", -2)
    w.add_uint32("u32", 3)
    w.add_int32("i32", -3)
    w.add_uint64("u64", 4)
    w.add_int64("i64", -4)
    w.add_float64("f64", 0.25)
    w.add_array("nested", [[1, 2], [3]])
    w.add_array("nested.str", [["x"], ["y", "z"]])
    w.add_array("bools", [True, False])
    w.add_array("empty", [])


def seed_tensors(w):
    rng = np.random.default_rng(7)
    w.add_uint32("seed.context_length", 64)
    w.add_tensor("token_embd.weight", rng.standard_normal((4, 8)).astype(np.float32))
    w.add_tensor("blk.0.attn_norm.weight", np.ones(8, dtype=np.float16))
    w.add_tensor("blk.0.ffn_up.weight", rng.integers(0, 256, (2, 18), dtype=np.uint8),
                 raw_dtype=gguf.GGMLQuantizationType.Q4_0)
    w.add_tensor("blk.0.ffn_down.weight", rng.integers(0, 256, (1, 144), dtype=np.uint8),
                 raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.add_tensor("x.4d", rng.standard_normal((1, 2, 2, 2)).astype(np.float32))


def write(dirname, name, data):
    d = CORPUS / dirname
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def make_gguf(tmp):
    files = {
        "meta_only.gguf": gguf_bytes(tmp / "a.gguf", seed_meta_only),
        "all_types.gguf": gguf_bytes(tmp / "b.gguf", seed_all_types),
        "tensors.gguf": gguf_bytes(tmp / "c.gguf", seed_tensors),
        "tensors_align64.gguf": gguf_bytes(tmp / "d.gguf", seed_tensors, alignment=64),
    }
    for name, data in files.items():
        write("fuzz_format_gguf", name, data)
    t = files["tensors.gguf"]
    write("fuzz_format_gguf", "trunc_meta.gguf", files["meta_only.gguf"][:300])
    write("fuzz_format_gguf", "trunc_tensor_table.gguf", t[:250])
    write("fuzz_format_gguf", "trunc_data.gguf", t[:-10])


def st_bytes(header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def make_safetensors(tmp):
    from safetensors.numpy import save

    rng = np.random.default_rng(11)
    single = save({"w": rng.standard_normal((3, 4)).astype(np.float32),
                   "b": np.arange(5, dtype=np.int64),
                   "h": np.ones((2, 2), dtype=np.float16),
                   "u": np.arange(3, dtype=np.uint8)},
                  metadata={"format": "pt", "note": "seed"})
    write("fuzz_format_safetensors", "single.safetensors", single)
    write("fuzz_format_safetensors", "scalar_empty.safetensors",
          save({"s": np.array(1.5, dtype=np.float32), "e": np.zeros((0, 3), dtype=np.float32)}))
    # dtypes numpy lacks, written by hand: bf16 and fp8 blobs
    write("fuzz_format_safetensors", "bf16_fp8.safetensors",
          st_bytes({"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
                    "b": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [8, 12]},
                    "__metadata__": {"format": "pt"}}, bytes(range(12))))
    write("fuzz_format_safetensors", "trunc_header.safetensors", single[:30])
    write("fuzz_format_safetensors", "trunc_data.safetensors", single[:-4])


HF_DIMS = {"hidden_size": 8, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
           "intermediate_size": 16, "moe_intermediate_size": 8, "vocab_size": 288, "num_hidden_layers": 2}
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def hf_shapes(cfg):
    """Tensor name -> shape of a shrunk folder (the fixtures' names, the new sizes)."""
    H, nh, nkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    V, I, L = cfg["vocab_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    mt = cfg["model_type"]
    t = {"model.embed_tokens.weight": [V, H], "model.norm.weight": [H]}
    if not cfg.get("tie_word_embeddings"):
        t["lm_head.weight"] = [V, H]
    for i in range(L):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = [H]
        t[p + "post_attention_layernorm.weight"] = [H]
        t[p + "self_attn.q_proj.weight"] = [nh * hd, H]
        t[p + "self_attn.k_proj.weight"] = [nkv * hd, H]
        t[p + "self_attn.v_proj.weight"] = [nkv * hd, H]
        t[p + "self_attn.o_proj.weight"] = [H, nh * hd]
        if mt == "qwen2":
            t[p + "self_attn.q_proj.bias"] = [nh * hd]
            t[p + "self_attn.k_proj.bias"] = [nkv * hd]
            t[p + "self_attn.v_proj.bias"] = [nkv * hd]
        if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
            t[p + "self_attn.q_norm.weight"] = [hd]
            t[p + "self_attn.k_norm.weight"] = [hd]
        if mt == "gemma3_text":
            t[p + "pre_feedforward_layernorm.weight"] = [H]
            t[p + "post_feedforward_layernorm.weight"] = [H]
        if mt == "qwen3_moe":
            E, M = cfg["num_local_experts"], cfg["moe_intermediate_size"]
            t[p + "mlp.gate.weight"] = [E, H]
            t[p + "mlp.experts.gate_up_proj"] = [E, 2 * M, H]
            t[p + "mlp.experts.down_proj"] = [E, H, M]
        else:
            t[p + "mlp.gate_proj.weight"] = [I, H]
            t[p + "mlp.up_proj.weight"] = [I, H]
            t[p + "mlp.down_proj.weight"] = [H, I]
    return t


def hf_config(arch):
    cfg = json.loads((ROOT / "tests" / "fixtures" / "engine" / arch / "hf-f32" / "config.json").read_text())
    for k in ("id2label", "label2id", "_name_or_path", "transformers_version"):
        cfg.pop(k, None)
    cfg.update(HF_DIMS)
    if cfg["model_type"] == "qwen3_moe":
        cfg.update(num_local_experts=2, num_experts_per_tok=1)
    if cfg["model_type"] == "gemma3_text":
        cfg.update(layer_types=["sliding_attention", "full_attention"], _sliding_window_pattern=2,
                   query_pre_attn_scalar=4)
    return cfg


def records(files):
    """A folder in fuzz_engine_hfdir's input format: code -> bytes."""
    return b"\n".join(b"@@" + code.encode() + b"\n" + data for code, data in files.items())


def make_hfdir():
    from safetensors.numpy import save

    rng = np.random.default_rng(13)
    tok_dir = CORPUS / "fuzz_tokenizer_json"
    tok_cfg = json.dumps({"bos_token": "<s>", "eos_token": "<|im_end|>", "chat_template": CHAT_TEMPLATE}).encode()
    folders = {}
    for arch, tok, dtype, tie in (("llama", "bytelevel.json", np.float32, False),
                                  ("qwen2", "splits.json", np.float16, True),
                                  ("qwen3", "splits.json", np.float32, False),
                                  ("qwen3_moe", "bytelevel.json", np.float16, False),
                                  ("gemma3", "spm_bytefallback.json", np.float16, True)):
        cfg = hf_config(arch)
        cfg["tie_word_embeddings"] = tie
        cfg["torch_dtype"] = cfg["dtype"] = "float16" if dtype == np.float16 else "float32"
        weights = {n: (rng.standard_normal(s) * 0.5).astype(dtype) for n, s in sorted(hf_shapes(cfg).items())}
        folders[arch] = {"c": json.dumps(cfg, indent=1).encode(), "w": save(weights, metadata={"format": "pt"}),
                         "t": (tok_dir / tok).read_bytes(), "k": tok_cfg,
                         "g": json.dumps({"bos_token_id": 1, "eos_token_id": [2, 3], "temperature": 0.7}).encode()}
    # Qwen3 with its template in chat_template.jinja (and none in tokenizer_config.json)
    q = dict(folders["qwen3"])
    q["k"] = json.dumps({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}).encode()
    q["j"] = CHAT_TEMPLATE.encode()
    folders["qwen3-jinja"] = q
    # Llama in two shards with model.safetensors.index.json
    cfg = json.loads(folders["llama"]["c"])
    names = sorted(hf_shapes(cfg))
    rng = np.random.default_rng(17)
    shards = [{}, {}]
    for k, n in enumerate(names):
        shards[k % 2][n] = rng.standard_normal(hf_shapes(cfg)[n]).astype(np.float32)
    index = {"metadata": {"total_size": sum(v.nbytes for s in shards for v in s.values())},
             "weight_map": {n: f"model-0000{k % 2 + 1}-of-00002.safetensors" for k, n in enumerate(names)}}
    sharded = {c: d for c, d in folders["llama"].items() if c != "w"}
    sharded.update(i=json.dumps(index).encode(), a=save(shards[0]), b=save(shards[1]))
    folders["llama-sharded"] = sharded
    # broken: a required field missing, a tensor of the wrong shape, the weights cut short
    bad = dict(folders["llama"])
    cfg = json.loads(bad["c"])
    del cfg["num_attention_heads"]
    bad["c"] = json.dumps(cfg).encode()
    folders["bad-missing-field"] = bad
    bad = dict(folders["qwen3"])
    cfg = json.loads(bad["c"])
    cfg["intermediate_size"] = 24
    bad["c"] = json.dumps(cfg).encode()
    folders["bad-wrong-shape"] = bad
    bad = dict(folders["llama"])
    bad["w"] = bad["w"][:-100]
    folders["bad-truncated"] = bad
    # Llama with FP8 E4M3 linear weights: a per-tensor weight_scale, and 128x128-block weight_scale_inv
    cfg = json.loads(folders["llama"]["c"])
    for name, block in (("llama-fp8", False), ("llama-fp8block", True)):
        c = dict(cfg)
        if block:
            c["quantization_config"] = {"activation_scheme": "dynamic", "quant_method": "fp8",
                                        "weight_block_size": [128, 128]}
        tensors = {}
        for n, shape in sorted(hf_shapes(c).items()):
            if n.endswith("_proj.weight"):
                fp8 = rng.integers(0, 0x7E, shape, dtype=np.uint8) | (rng.integers(0, 2, shape, dtype=np.uint8) << 7)
                tensors[n] = ("F8_E4M3", shape, fp8.tobytes())
                scale = n + ("_scale_inv" if block else "_scale")
                tensors[scale] = ("F32", [1, 1] if block else [1], np.array([0.05], np.float32).tobytes())
            else:
                tensors[n] = ("F32", shape, (rng.standard_normal(shape) * 0.5).astype(np.float32).tobytes())
        header, blob = {"__metadata__": {"format": "pt"}}, b""
        for n, (dt, shape, data) in tensors.items():
            header[n] = {"dtype": dt, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
            blob += data
        folders[name] = dict(folders["llama"], c=json.dumps(c).encode(), w=st_bytes(header, blob))
    # a folder holding one GGUF (the fuzz_backend_cpu_model seed) and its tokenizer files
    folders["gguf-folder"] = {"f": (CORPUS / "fuzz_backend_cpu_model" / "tiny-valid.gguf").read_bytes(),
                              "t": folders["llama"]["t"], "k": tok_cfg}
    for name, files in folders.items():
        data = records(files)
        assert len(data) < 40 * 1024, (name, len(data))
        write("fuzz_engine_hfdir", name + ".hf", data)


def main():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        make_gguf(tmp)
        make_safetensors(tmp)
    make_hfdir()


if __name__ == "__main__":
    main()
