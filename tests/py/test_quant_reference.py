"""Bit-exactness of memra's weight-format arithmetic (src/quant) against the references.

Block types: random blocks (numpy, fixed seeds) are dequantized by the Python
`gguf` package (gguf.quants.dequantize, the reference named by issue 4) and by
`memra-quant-check TYPE IN OUT` (quant_dequantize_row); the float32 results must
be equal bit for bit. Every byte of a block is random except its f16 scale
fields, which are set to finite values: once to typical magnitudes, once to any
finite f16 bit pattern (zeros, subnormals, up to ±65504). NaN/inf scales are
excluded on purpose: they only produce NaNs whose bit patterns (sign/payload of
inf·0, NaN·q) depend on the arithmetic order, not on the format.

Scalar conversions are checked exhaustively: all 65536 f16 and bf16 values and
all 256 values of each FP8 type decoded to f32 (numpy float16, ml_dtypes
bfloat16 / float8_e4m3fn / float8_e5m2, which follow PyTorch), and f32 → f16 /
bf16 rounding on every f16/bf16 value, every midpoint between neighbours and
its f32 neighbours (the round-to-nearest-even ties), and a million random f32
bit patterns.

The dequantization is compiled once per SIMD level (core/cpu_simd.h) and every
level must give these bits: the block and exhaustive tests run at the CPU's own
level and again capped by MEMRA_CPU_SIMD=avx2 and =base.

Needs MEMRA_BUILD (the build folder holding bin/memra-quant-check).
"""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from memra_build import tool

gguf = pytest.importorskip("gguf")
ml_dtypes = pytest.importorskip("ml_dtypes")
from gguf import GGMLQuantizationType as GQ  # noqa: E402
from gguf.quants import dequantize  # noqa: E402


# type name → byte offsets of the f16 scale fields inside one block (GGUF layouts,
# as in gguf-py quants.py; see src/quant/quant_internal.h)
BLOCK_TYPES = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "IQ4_NL": [0], "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2],
    "Q6_K": [208], "IQ4_XS": [0],
}
N_BLOCKS = 4096


# the SIMD levels the dequantization runs at: the CPU's own (None), then capped
SIMD_LEVELS = [None, "avx2", "base"]


def run_tool(*args, simd=None):
    env = {k: v for k, v in os.environ.items() if k != "MEMRA_CPU_SIMD"}
    if simd:
        env["MEMRA_CPU_SIMD"] = simd
    subprocess.run([tool("memra-quant-check"), *map(str, args)], check=True, env=env)


def memra_dequantize(tmp_path, type_name, data: np.ndarray, simd=None) -> np.ndarray:
    src, dst = tmp_path / f"{type_name}.in", tmp_path / f"{type_name}.out"
    src.write_bytes(np.ascontiguousarray(data).tobytes())
    run_tool(type_name, src, dst, simd=simd)
    return np.fromfile(dst, dtype="<u4")


def random_f16_fields(rng, n, mode):
    if mode == "typical":
        v = (rng.standard_normal(n) * 0.02).astype(np.float16)
        return v.view(np.uint16)
    # any finite f16: exponent field 0..30 (zeros, subnormals, normals up to 65504)
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
    exp = (bits >> 10) & 0x1F
    bits = np.where(exp == 0x1F, bits & ~np.uint16(0x4000), bits).astype(np.uint16)
    # also force a share of exact subnormals and extremes
    k = n // 8
    bits[:k] = rng.integers(0, 0x400, size=k, dtype=np.uint16) | (rng.integers(0, 2, size=k, dtype=np.uint16) << 15)
    bits[k:2 * k] = np.uint16(0x7BFF) | (rng.integers(0, 2, size=k, dtype=np.uint16) << 15)
    rng.shuffle(bits)
    return bits


@pytest.mark.parametrize("simd", SIMD_LEVELS)
@pytest.mark.parametrize("mode", ["typical", "any_finite"])
@pytest.mark.parametrize("type_name", sorted(BLOCK_TYPES))
def test_block_dequantize_bit_exact(tmp_path, type_name, mode, simd):
    qtype = GQ[type_name]
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    seed = (sorted(BLOCK_TYPES).index(type_name) * 2 + (mode == "typical")) + 1234
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(N_BLOCKS, type_size), dtype=np.uint8)
    for off in BLOCK_TYPES[type_name]:
        f = random_f16_fields(rng, N_BLOCKS, mode)
        blocks[:, off:off + 2] = f.view(np.uint8).reshape(N_BLOCKS, 2)
    want = dequantize(blocks.reshape(-1), qtype).astype(np.float32, copy=False).view(np.uint32).reshape(-1)
    assert want.size == N_BLOCKS * block_size
    got = memra_dequantize(tmp_path, type_name, blocks, simd)
    assert got.size == want.size
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (
        f"{type_name}: {bad.size} of {want.size} differ; first at element {bad[0]} (block {bad[0] // block_size}): "
        f"memra {got[bad[0]]:#010x} vs gguf {want[bad[0]]:#010x}")


@pytest.mark.parametrize("simd", SIMD_LEVELS)
def test_f16_to_f32_exhaustive(tmp_path, simd):
    allh = np.arange(1 << 16, dtype=np.uint16)
    want = dequantize(allh.view(np.uint8), GQ.F16).view(np.uint32)  # numpy float16 → float32
    assert np.array_equal(want, allh.view(np.float16).astype(np.float32).view(np.uint32))
    got = memra_dequantize(tmp_path, "F16", allh, simd)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("simd", SIMD_LEVELS)
def test_bf16_to_f32_exhaustive(tmp_path, simd):
    allh = np.arange(1 << 16, dtype=np.uint16)
    want = allh.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    assert np.array_equal(want, dequantize(allh.view(np.uint8), GQ.BF16).view(np.uint32))
    got = memra_dequantize(tmp_path, "BF16", allh, simd)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("simd", SIMD_LEVELS)
@pytest.mark.parametrize("type_name,np_type", [("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2")])
def test_fp8_to_f32_exhaustive(tmp_path, type_name, np_type, simd):
    allb = np.arange(256, dtype=np.uint8)
    with np.errstate(invalid="ignore"):
        want = allb.view(getattr(ml_dtypes, np_type)).astype(np.float32).view(np.uint32)
    got = memra_dequantize(tmp_path, type_name, allb, simd)
    assert np.array_equal(got, want), [(hex(i), hex(g), hex(w)) for i, (g, w) in enumerate(zip(got, want)) if g != w]


def test_f32_dequantize_is_identity(tmp_path):
    bits = np.random.default_rng(7).integers(0, 1 << 32, size=4096, dtype=np.uint32)
    assert np.array_equal(memra_dequantize(tmp_path, "F32", bits), bits)


def rounding_inputs(narrow_bits_to_f32):
    """f32 inputs that exercise round-to-nearest-even into a narrower type: every
    narrow value, every midpoint between neighbours, the f32 values one ulp on
    either side of those, and random f32 bit patterns."""
    with np.errstate(invalid="ignore"):
        vals = narrow_bits_to_f32.astype(np.float64)
    finite = np.isfinite(vals)
    v = np.sort(vals[finite])
    mids = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact in f32: the narrow types have ≤ 11 bits
    mids32 = mids.view(np.uint32)
    near = np.concatenate([mids32, mids32 + 1, mids32 - 1])
    rnd = np.random.default_rng(99).integers(0, 1 << 32, size=1 << 20, dtype=np.uint32)
    specials = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                         0x7F802000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x33000000, 0x33000001,
                         0x7F7FFFFF, 0xFF7FFFFF, 1, 0x80000001], dtype=np.uint32)
    return np.concatenate([narrow_bits_to_f32.view(np.uint32), near, rnd, specials]).astype(np.uint32)


def test_f32_to_f16_rounding(tmp_path):
    allh = np.arange(1 << 16, dtype=np.uint16)
    inputs = rounding_inputs(allh.view(np.float16).astype(np.float32))
    f = inputs.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = f.astype(np.float16).view(np.uint16)
    src, dst = tmp_path / "f32.in", tmp_path / "f16.out"
    src.write_bytes(inputs.tobytes())
    run_tool("--to", "F16", src, dst)
    got = np.fromfile(dst, dtype="<u2")
    nan = np.isnan(f)
    bad = np.nonzero((got != want) & ~nan)[0]
    assert bad.size == 0, f"{bad.size} differ; first input {inputs[bad[0]]:#010x}: memra {got[bad[0]]:#06x} numpy {want[bad[0]]:#06x}"
    # NaN → NaN of the same sign (numpy's own NaN payload rule differs between its scalar and SIMD paths)
    assert np.all(((got[nan] & 0x7C00) == 0x7C00) & ((got[nan] & 0x3FF) != 0))
    assert np.array_equal(got[nan] >> 15, (inputs[nan] >> 31).astype(np.uint16))


def test_f32_to_bf16_rounding(tmp_path):
    allh = np.arange(1 << 16, dtype=np.uint16)
    inputs = rounding_inputs(allh.view(ml_dtypes.bfloat16).astype(np.float32))
    f = inputs.view(np.float32)
    with np.errstate(invalid="ignore"):
        want = f.astype(ml_dtypes.bfloat16).view(np.uint16)
    src, dst = tmp_path / "f32.in", tmp_path / "bf16.out"
    src.write_bytes(inputs.tobytes())
    run_tool("--to", "BF16", src, dst)
    got = np.fromfile(dst, dtype="<u2")
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, f"{bad.size} differ; first input {inputs[bad[0]]:#010x}: memra {got[bad[0]]:#06x} ml_dtypes {want[bad[0]]:#06x}"


MODEL = Path(__file__).resolve().parents[2] / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.skipif(not MODEL.exists(), reason="default model not fetched (scripts/fetch-model.sh)")
def test_real_model_tensors_bit_exact(tmp_path):
    """Every quantized tensor of the default model (real Q4_1 / Q8_0 data, as
    trained weights look), dequantized by gguf-py and by memra: equal bits.
    Each tensor contributes its first 64 rows; one memra run per type."""
    reader = gguf.GGUFReader(str(MODEL))
    by_type = {}
    for t in reader.tensors:
        if t.tensor_type.name in BLOCK_TYPES:
            by_type.setdefault(t.tensor_type.name, []).append(t)
    assert by_type, "the model holds no block-quantized tensor"
    for name, tensors in by_type.items():
        parts = [np.ascontiguousarray(t.data[:64]).reshape(-1) for t in tensors]
        want = np.concatenate([dequantize(p, tensors[0].tensor_type).astype(np.float32, copy=False)
                               .view(np.uint32).reshape(-1) for p in parts])
        got = memra_dequantize(tmp_path, name, np.concatenate(parts))
        bad = np.nonzero(got != want)[0]
        if bad.size:
            block_size, type_size = gguf.GGML_QUANT_SIZES[tensors[0].tensor_type]
            ends = np.cumsum([p.size // type_size * block_size for p in parts])
            culprit = tensors[int(np.searchsorted(ends, bad[0], side="right"))].name
            pytest.fail(f"{name}: {bad.size} values differ, first in {culprit}")
