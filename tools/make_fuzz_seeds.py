#!/usr/bin/env python3
"""tools/make_fuzz_seeds.py — write the seed corpora of the model-file fuzzers.

  python3 tools/make_fuzz_seeds.py            # writes tests/fuzz/corpus/fuzz_format_*/

GGUF seeds come from the gguf package's GGUFWriter, safetensors seeds from the
safetensors package (numpy), so the fuzzers start from files written by the
reference implementations: a few small valid files of different shapes, plus
truncated copies that stop inside the metadata, the tensor table and the data.
Each seed is kept under a few KiB so libFuzzer mutates it quickly. Output is
deterministic (fixed seeds), so re-running changes nothing.
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


def main():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        make_gguf(tmp)
        make_safetensors(tmp)


if __name__ == "__main__":
    main()
