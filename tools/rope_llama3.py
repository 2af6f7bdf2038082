"""tools/rope_llama3.py — Llama 3.1 RoPE scaling as GGUF stores it.

llama.cpp writes Llama 3.1's frequency-dependent RoPE scaling as a tensor
`rope_freqs.weight`: one divisor per rotary frequency (head_dim / 2 of them).
Both fixture writers (make_fixtures.py, make_test_models.py) use this, and
src/model/ reads it back (its registry test checks the C formula against the
tensor these scripts write).
"""
import numpy as np


def llama3_rope_factors(head_dim, rp):
    """rp: the HF rope parameters (rope_theta, factor, low_freq_factor, high_freq_factor,
    original_max_position_embeddings). Returns float32 divisors, shape (head_dim // 2,)."""
    inv = 1.0 / (rp["rope_theta"] ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    wl = 2 * np.pi / inv
    lo, hi, f, orig = rp["low_freq_factor"], rp["high_freq_factor"], rp["factor"], \
        rp["original_max_position_embeddings"]
    smooth = (orig / wl - lo) / (hi - lo)
    fac = np.where(wl < orig / hi, 1.0, np.where(wl > orig / lo, f, 1.0 / ((1 - smooth) / f + smooth)))
    return fac.astype(np.float32)
