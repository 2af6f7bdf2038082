"""tests/py/test_gguf_reference.py — memra's GGUF reader against the gguf package.

GGUF files are written with gguf.GGUFWriter (every value type, string and
nested arrays, plain and quantized tensors, a custom alignment), then read by
both `memra-inspect --json PATH` and gguf.GGUFReader, and every metadata value
and tensor (name, dtype, shape, byte size, offset) must agree. The vocab GGUFs
in ../shared/testdata/vocab and the default model (models/, when fetched) are
compared the same way.

Needs MEMRA_BUILD (the build folder holding bin/memra-inspect).
"""
import math
import os
import pathlib
import subprocess

import gguf
import numpy as np
import pytest
from memra_build import inspect_json, tool

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("MEMRA_SHARED", ROOT.parent / "shared"))
DEFAULT_MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# GGUFValueType names → memra's (mf_vtype_name)
VT = {
    "UINT8": "U8", "INT8": "I8", "UINT16": "U16", "INT16": "I16", "UINT32": "U32", "INT32": "I32",
    "FLOAT32": "F32", "BOOL": "BOOL", "STRING": "STR", "ARRAY": "ARR", "UINT64": "U64", "INT64": "I64",
    "FLOAT64": "F64",
}


def norm_memra(v, leaf_type):
    """memra-inspect writes non-finite floats as strings ("nan", "inf", "-inf")."""
    if leaf_type not in ("FLOAT32", "FLOAT64"):
        return v
    if isinstance(v, list):
        return [norm_memra(x, leaf_type) for x in v]
    return float(v) if isinstance(v, str) else v


def same(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, str) or isinstance(b, str):
            return False
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, str) and isinstance(b, int) or isinstance(b, str) and isinstance(a, int):
        return str(a) == str(b)  # U64 above INT64_MAX
    return a == b


def flatten(v):
    return [y for x in v for y in flatten(x)] if isinstance(v, list) else [v]


def compare(path):
    """Everything GGUFReader sees, memra-inspect must see the same way."""
    ours = inspect_json(path)
    ref = gguf.GGUFReader(str(path))
    assert ours["format"] == "gguf"
    assert ours["gguf_version"] == int(ref.fields["GGUF.version"].parts[-1][0])
    meta = ours["metadata"]
    ref_keys = [k for k in ref.fields if not k.startswith("GGUF.")]
    assert list(meta) == ref_keys
    for key in ref_keys:
        f = ref.fields[key]
        m = meta[key]
        assert m["type"] == VT[f.types[0].name], key
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            assert m["elem_type"] == VT[f.types[1].name], key
        want = f.contents()
        got = norm_memra(m["value"], f.types[-1].name)
        if len(f.types) > 2:  # nested arrays: GGUFReader.contents() flattens them
            got = flatten(got)
        assert same(got, want), f"{key}: {str(got)[:200]} != {str(want)[:200]}"
    assert len(ours["tensors"]) == len(ref.tensors)
    for t, r in zip(ours["tensors"], ref.tensors):
        assert t["name"] == r.name
        assert t["dtype"] == r.tensor_type.name
        assert t["shape"] == [int(x) for x in reversed(r.shape)], r.name  # memra: outermost first
        assert t["n_elements"] == int(r.n_elements)
        assert t["n_bytes"] == int(r.n_bytes)
        assert t["file"] == 0
        assert t["offset"] == int(r.data_offset), r.name
    return ours


def write_rich(path, alignment=None):
    rng = np.random.default_rng(1234)
    w = gguf.GGUFWriter(str(path), arch="testarch")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_uint8("v.u8", 200)
    w.add_int8("v.i8", -100)
    w.add_uint16("v.u16", 60000)
    w.add_int16("v.i16", -30000)
    w.add_uint32("v.u32", 4_000_000_000)
    w.add_int32("v.i32", -2_000_000_000)
    w.add_float32("v.f32", 0.1)
    w.add_uint64("v.u64", 2**64 - 1)
    w.add_int64("v.i64", -(2**63))
    w.add_float64("v.f64", 1.0 / 3.0)
    w.add_bool("v.bool.t", True)
    w.add_bool("v.bool.f", False)
    w.add_string("v.str", "héllo wörld ✓ \U0001F600")
    w.add_string("v.str.empty", "")
    w.add_float32("v.f32.inf", float("inf"))
    w.add_array("a.int", [1, -2, 3, 2**31 - 1])
    w.add_array("a.float", [0.5, -1.25, 3.0e10])
    w.add_array("a.bool", [True, False, True])
    w.add_array("a.str", ["a", "", "ünïcödé", "<|im_start|>", "x" * 300])
    w.add_array("a.nested", [[1, 2, 3], [4], [5, 6]])
    w.add_array("a.nested.str", [["a", "b"], ["c"]])
    w.add_array("a.empty", [])
    w.add_array("tokenizer.ggml.tokens", [f"tok{i}" for i in range(5000)])
    # tensors: plain and quantized byte blobs (raw rows of the block type)
    w.add_tensor("f32.2d", rng.standard_normal((3, 5)).astype(np.float32))
    w.add_tensor("f16.1d", rng.standard_normal(7).astype(np.float16))
    w.add_tensor("i32.3d", rng.integers(-9, 9, (2, 3, 4)).astype(np.int32))
    w.add_tensor("f32.4d", rng.standard_normal((2, 1, 3, 4)).astype(np.float32))
    for qt in (gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_K,
               gguf.GGMLQuantizationType.Q6_K, gguf.GGMLQuantizationType.BF16):
        block, size = gguf.GGML_QUANT_SIZES[qt]
        rows, row_blocks = 3, 2
        blob = rng.integers(0, 256, (rows, row_blocks * size), dtype=np.uint8)
        w.add_tensor(f"q.{qt.name}", blob, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_rich_file(tmp_path):
    path = tmp_path / "rich.gguf"
    write_rich(path)
    ours = compare(path)
    assert ours["gguf_alignment"] == 32
    # nested structure as written (the reference reader flattens it)
    assert ours["metadata"]["a.nested"]["value"] == [[1, 2, 3], [4], [5, 6]]
    assert ours["metadata"]["a.nested.str"]["value"] == [["a", "b"], ["c"]]
    names = [t["name"] for t in ours["tensors"]]
    assert "q.Q4_K" in names and "f32.4d" in names
    q4k = next(t for t in ours["tensors"] if t["name"] == "q.Q4_K")
    assert q4k["shape"] == [3, 512] and q4k["dtype"] == "Q4_K"


def test_custom_alignment(tmp_path):
    path = tmp_path / "align.gguf"
    write_rich(path, alignment=256)
    ours = compare(path)
    assert ours["gguf_alignment"] == 256
    assert all(t["offset"] % 256 == 0 for t in ours["tensors"])


# GGUFReader needs seconds per 100k strings: the three smallest vocabularies
# and one of Qwen size (the unit test opens all of them).
@pytest.mark.parametrize("name", ["llama-spm", "phi-3", "gpt-2", "qwen2"])
def test_vocab_files(name):
    path = SHARED / "testdata" / "vocab" / f"ggml-vocab-{name}.gguf"
    if not path.exists():
        pytest.skip(f"{path} not present")
    compare(path)


def test_default_model():
    if not DEFAULT_MODEL.exists():
        pytest.skip(f"{DEFAULT_MODEL} not fetched")
    ours = compare(DEFAULT_MODEL)
    assert len(ours["tensors"]) == 272
    ref = gguf.GGUFReader(str(DEFAULT_MODEL))
    ref_types = sorted({r.tensor_type.name for r in ref.tensors})
    assert sorted({t["dtype"] for t in ours["tensors"]}) == ref_types


def test_errors_exit_1(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x01\x00\x00\x00" + b"\x00" * 16)
    p = subprocess.run([tool("memra-inspect"), str(bad)], capture_output=True)
    assert p.returncode == 1
    assert f"{bad}: GGUF version 1 is not supported" in p.stderr.decode()
    p = subprocess.run([tool("memra-inspect"), "--json", str(tmp_path / "missing.gguf")], capture_output=True)
    assert p.returncode == 1 and "no such file or folder" in p.stderr.decode()


def test_help_and_usage():
    p = subprocess.run([tool("memra-inspect"), "--help"], capture_output=True)
    assert p.returncode == 0 and b"usage: memra-inspect" in p.stdout
    p = subprocess.run([tool("memra-inspect")], capture_output=True)
    assert p.returncode == 2 and b"usage:" in p.stderr
    p = subprocess.run([tool("memra-inspect"), "--bogus", "x"], capture_output=True)
    assert p.returncode == 2 and b"unknown option '--bogus'" in p.stderr
