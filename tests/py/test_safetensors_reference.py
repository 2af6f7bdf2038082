"""tests/py/test_safetensors_reference.py — memra's safetensors and HF-folder
readers against the safetensors package.

Checkpoints are written with safetensors.numpy.save_file (every dtype the
format has: bf16 and fp8 through ml_dtypes), single and sharded (with the
model.safetensors.index.json transformers writes), and inside a Hugging Face
folder. `memra-inspect --json` must report what safetensors.safe_open reports
(names, dtypes, shapes, __metadata__), and the bytes at the offset memra gives
must be exactly the array bytes that were saved.

Needs MEMRA_BUILD (the build folder holding bin/memra-inspect).
"""
import json
import pathlib
import subprocess

import ml_dtypes
import numpy as np
from memra_build import inspect_json, tool
from safetensors import safe_open
from safetensors.numpy import save_file


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "f64": rng.standard_normal((2, 3)),
        "f32": rng.standard_normal((4, 5)).astype(np.float32),
        "f16": rng.standard_normal(7).astype(np.float16),
        "bf16": rng.standard_normal((3, 2)).astype(ml_dtypes.bfloat16),
        "f8_e4m3": rng.standard_normal((2, 4)).astype(ml_dtypes.float8_e4m3fn),
        "f8_e5m2": rng.standard_normal(5).astype(ml_dtypes.float8_e5m2),
        "i64": rng.integers(-99, 99, 3).astype(np.int64),
        "i32": rng.integers(-99, 99, (2, 2)).astype(np.int32),
        "i16": rng.integers(-99, 99, 3).astype(np.int16),
        "i8": rng.integers(-99, 99, 6).astype(np.int8),
        "u8": rng.integers(0, 255, 6).astype(np.uint8),
        "u16": rng.integers(0, 999, 2).astype(np.uint16),
        "u32": rng.integers(0, 999, 2).astype(np.uint32),
        "u64": rng.integers(0, 999, 2).astype(np.uint64),
        "bool": rng.integers(0, 2, (3, 3)).astype(np.bool_),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "model.layers.0.mlp.down_proj.weight": rng.standard_normal((1, 2, 3, 4)).astype(np.float32),
        "eight_dims": np.ones((1, 2, 1, 2, 1, 2, 1, 2), dtype=np.float16),
    }


def compare(path, saved):
    """memra's view of path must match safe_open on each file, and the bytes
    at memra's offsets must be the saved arrays' bytes."""
    ours = inspect_json(path)
    files = ours["files"]
    by_name = {t["name"]: t for t in ours["tensors"]}
    assert sorted(by_name) == sorted(saved)
    ref_meta = {}
    for fi, f in enumerate(files):
        with safe_open(f, framework="numpy") as st:
            for k, v in (st.metadata() or {}).items():
                ref_meta.setdefault(k, v)
            for name in st.keys():
                t = by_name[name]
                sl = st.get_slice(name)
                assert t["file"] == fi, name
                assert t["dtype"] == sl.get_dtype(), name
                assert t["shape"] == list(sl.get_shape()), name
        blob = pathlib.Path(f).read_bytes()
        for t in ours["tensors"]:
            if t["file"] == fi:
                a = saved[t["name"]]
                assert t["n_bytes"] == a.nbytes, t["name"]
                assert t["n_elements"] == a.size, t["name"]
                assert blob[t["offset"]:t["offset"] + t["n_bytes"]] == np.ascontiguousarray(a).tobytes(), t["name"]
    assert {k: v["value"] for k, v in ours["metadata"].items()} == ref_meta
    assert all(v["type"] == "STR" for v in ours["metadata"].values())
    return ours


def test_single_file(tmp_path):
    saved = arrays()
    path = tmp_path / "all.safetensors"
    save_file(saved, str(path), metadata={"format": "pt", "note": "ünïcode ✓"})
    ours = compare(path, saved)
    assert ours["format"] == "safetensors"
    assert len(ours["files"]) == 1


def test_no_metadata(tmp_path):
    saved = {"w": np.arange(12, dtype=np.float32).reshape(3, 4)}
    path = tmp_path / "plain.safetensors"
    save_file(saved, str(path))
    ours = compare(path, saved)
    assert ours["metadata"] == {}


def write_sharded(folder, saved, n_shards=3):
    names = sorted(saved)
    weight_map = {}
    for s in range(n_shards):
        shard = f"model-{s + 1:05d}-of-{n_shards:05d}.safetensors"
        part = {n: saved[n] for n in names[s::n_shards]}
        save_file(part, str(folder / shard), metadata={"format": "pt"})
        weight_map.update({n: shard for n in part})
    total = sum(a.nbytes for a in saved.values())
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return weight_map


def test_sharded(tmp_path):
    saved = arrays(1)
    weight_map = write_sharded(tmp_path, saved)
    ours = compare(tmp_path / "model.safetensors.index.json", saved)
    assert len(ours["files"]) == 3
    for t in ours["tensors"]:
        assert pathlib.Path(ours["files"][t["file"]]).name == weight_map[t["name"]]


def test_hf_folder(tmp_path):
    saved = arrays(2)
    config = {"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "rope_theta": 1000000.0,
              "torch_dtype": "bfloat16", "num_hidden_layers": 2}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "generation_config.json").write_text(json.dumps({"temperature": 0.6, "top_p": 0.95}))
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "tokenizer_config.json").write_text("{}")
    save_file(saved, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    ours = compare(tmp_path, saved)
    assert ours["format"] == "hf-folder"
    assert ours["config"] == config
    assert ours["generation_config"] == {"temperature": 0.6, "top_p": 0.95}
    assert ours["tokenizer_json"] == str(tmp_path / "tokenizer.json")
    assert ours["tokenizer_config"] == str(tmp_path / "tokenizer_config.json")
    assert "chat_template" not in ours


def test_hf_folder_sharded(tmp_path):
    saved = arrays(3)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    write_sharded(tmp_path, saved, n_shards=2)
    ours = compare(tmp_path, saved)
    assert ours["format"] == "hf-folder" and len(ours["files"]) == 2


def test_errors_exit_1(tmp_path):
    bad = tmp_path / "bad.safetensors"
    header = b'{"w":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}}'
    bad.write_bytes(len(header).to_bytes(8, "little") + header + b"\0")
    p = subprocess.run([tool("memra-inspect"), str(bad)], capture_output=True)
    assert p.returncode == 1
    assert f"{bad}: tensor 'w': unknown dtype 'Q9'" in p.stderr.decode()
    p = subprocess.run([tool("memra-inspect"), "--json", str(tmp_path)], capture_output=True)
    assert p.returncode == 1 and f"{tmp_path}: no config.json" in p.stderr.decode()
