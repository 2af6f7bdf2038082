#!/usr/bin/env python3
"""tools/make_fixtures.py — reference fixtures for the engine, made with transformers.

Builds tiny random-weight models of every supported architecture with
transformers (fixed seeds), saves them as Hugging Face folders (config.json +
model.safetensors) and converts them to GGUF with the `gguf` package (tensor
names, Q/K permutation for llama, Gemma's 1 + w norms and the metadata written
here, as llama.cpp's converter lays them out). For each weight format it
records transformers' float32 logits on fixed token-id prompts, computed on the
weights exactly as the file holds them (rounded to F16/BF16, FP8 times its
scales, or GGUF-quantized then dequantized with gguf.quants.dequantize), and a
64-token greedy continuation. tests/unit/test_backend_cpu_fixtures.c compares
memra against these.

gguf.quants.quantize implements Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 but not Q2_K,
Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL or IQ4_XS; for those this script has its own
simple (round-to-nearest, min/max scale) encoders, checked here by decoding them back with gguf.quants.dequantize.
The reference for a quantized file is always transformers on gguf-py's
dequantization of that file's bytes, so encoder quality does not matter for
exactness — only validity.

Also writes a few broken models (missing tensor, wrong shape, unsupported
dtype, unsupported architecture, missing config field) that memra must refuse.

Usage: python3 tools/make_fixtures.py [--only GROUP,...] [OUT_DIR]   (default tests/fixtures/engine)
A full run makes the folder anew; a regenerated ref moves by torch's last bits, so --only makes just the named
groups (a model, "bad" or "cli") again in the existing folder and keeps the other files and manifest entries
as they are (the manifest's prompts and torch / transformers versions must be this run's; the groups' new
entries go last, where a full run puts them for the last group, qwen3_moe_fp8).
Needs: torch, transformers (tools/requirements.txt), numpy, gguf, safetensors.
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
import gguf
from gguf import GGMLQuantizationType as QT
from safetensors.numpy import save_file

from rope_llama3 import llama3_rope_factors

VOCAB = 256
PROMPT_LENS = [7, 16, 33]
GREEDY_TOKENS = 64
SEED = 1234


# ---------------------------------------------------------------- configs

def configs():
    """name → (transformers config class name, kwargs, gguf arch)."""
    common = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return {
        # Llama 3.x with llama3 RoPE scaling (all three wavelength regimes at head_dim 16), untied output
        "llama": ("LlamaConfig", dict(common, intermediate_size=128, tie_word_embeddings=False,
                                      rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                       "original_max_position_embeddings": 32}), "llama"),
        "qwen2": ("Qwen2Config", dict(common, intermediate_size=128, tie_word_embeddings=True,
                                      rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}), "qwen2"),
        "qwen3": ("Qwen3Config", dict(common, intermediate_size=128, tie_word_embeddings=True,
                                      rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}), "qwen3"),
        "qwen3_moe": ("Qwen3MoeConfig", dict(common, intermediate_size=128, moe_intermediate_size=32, num_experts=4,
                                             num_experts_per_tok=2, norm_topk_prob=True, tie_word_embeddings=False,
                                             rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
                      "qwen3moe"),
        # Gemma 3: 6 layers = 5 sliding + 1 global (llama.cpp's fixed pattern), window 4, linear-scaled global
        # RoPE, query_pre_attn_scalar = head_dim (what llama.cpp assumes for GGUF), tied
        "gemma3": ("Gemma3TextConfig", dict(common, num_hidden_layers=6, intermediate_size=64, sliding_window=4,
                                            query_pre_attn_scalar=16, final_logit_softcapping=None,
                                            attn_logit_softcapping=None, tie_word_embeddings=True,
                                            layer_types=["sliding_attention"] * 5 + ["full_attention"],
                                            rope_parameters={
                                                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                                "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                                   "rope_theta": 1000000.0}}), "gemma3"),
        # the quantized-format model: rows of 256 for the K-quants and IQ4_XS, several 128-blocks for FP8
        # (one layer keeps the seven quantized files small; the float models cover depth)
        "llamaq": ("LlamaConfig", dict(common, hidden_size=256, num_hidden_layers=1, num_attention_heads=4,
                                       num_key_value_heads=2,
                                       head_dim=64, intermediate_size=256, tie_word_embeddings=True,
                                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), "llama"),
        # Qwen3-MoE in block FP8 as Qwen3-30B-A3B-FP8 stores it: hidden 128 and expert size 256, so every expert
        # matrix is whole 128 × 128 blocks, two along one axis (the CUDA backend keeps such experts as stored,
        # with their scale tables)
        "qwen3_moe_fp8": ("Qwen3MoeConfig", dict(common, hidden_size=128, intermediate_size=128,
                                                 moe_intermediate_size=256, num_experts=4, num_experts_per_tok=2,
                                                 norm_topk_prob=True, tie_word_embeddings=False,
                                                 rope_parameters={"rope_type": "default",
                                                                  "rope_theta": 1000000.0}), "qwen3moe"),
        # the broken-model fixtures start from this one
        "tiny": ("LlamaConfig", dict(common, vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, num_key_value_heads=1, intermediate_size=32,
                                     tie_word_embeddings=True,
                                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), "llama"),
    }


def build_model(name):
    cls_name, kw, _ = configs()[name]
    cfg = getattr(transformers, cls_name)(**kw)
    cfg.dtype = "float32"
    torch.manual_seed(SEED + sum(map(ord, name)))
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    gemma = name.startswith("gemma")
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("embed_tokens.weight"):
                # logits (tied or not) come out with a spread of a few units
                p.copy_(torch.randn_like(p) * 2.0 / np.sqrt(p.shape[1]))
            elif pname.endswith("lm_head.weight"):
                p.copy_(torch.randn_like(p) * 2.0 / np.sqrt(p.shape[1]))
            elif "norm" in pname:
                p.copy_((0.0 if gemma else 1.0) + 0.2 * torch.randn_like(p))
            elif pname.endswith("bias"):
                p.copy_(0.3 * torch.randn_like(p))
            else:
                fan_in = p.shape[-1]
                p.copy_(torch.randn_like(p) / np.sqrt(fan_in))
    model.eval()
    return model


def state_np(model):
    sd = {k: v.detach().float().numpy().copy() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)
    return sd


# ---------------------------------------------------------------- references

def prompts():
    rng = np.random.default_rng(SEED)
    return [rng.integers(3, VOCAB, size=n).tolist() for n in PROMPT_LENS]


def reference(model, sd):
    """transformers float32 logits for every prompt position, and the greedy continuation of prompt 0."""
    full = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in sd.items()}
    if model.config.tie_word_embeddings:
        full["lm_head.weight"] = full["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(full, strict=False)
    assert not unexpected and all(k == "lm_head.weight" for k in missing), (missing, unexpected)
    logits = []
    with torch.no_grad():
        for p in prompts():
            out = model(torch.tensor([p])).logits[0].float().numpy()
            logits.append(out)
        ids = torch.tensor([prompts()[0]])
        gen = model.generate(ids, max_new_tokens=GREEDY_TOKENS, do_sample=False, min_new_tokens=GREEDY_TOKENS,
                             eos_token_id=None, pad_token_id=0)
        greedy = gen[0, len(prompts()[0]):].tolist()
        # smallest top-1/top-2 gap along the greedy path (ties would make the test meaningless)
        seq = torch.tensor([prompts()[0] + greedy[:-1]])
        lg = model(seq).logits[0, len(prompts()[0]) - 1:].float()
        top2 = torch.topk(lg, 2, dim=-1).values
        margin = float((top2[:, 0] - top2[:, 1]).min())
        assert lg.argmax(-1).tolist() == greedy, "greedy path is not reproducible in one forward"
    return np.concatenate(logits, 0).astype(np.float32), greedy, margin


# ---------------------------------------------------------------- weight formats

def round_dtype(a, dt):
    return torch.from_numpy(a).to(dt).float().numpy()


def fp8_tensor(w):
    s = np.float32(np.abs(w).max() / 448.0)
    q = torch.from_numpy(w / s).to(torch.float8_e4m3fn)
    return q, np.array([s], np.float32), q.float().numpy() * s


def fp8_block(w):
    r, c = w.shape
    br, bc = -(-r // 128), -(-c // 128)
    s = np.zeros((br, bc), np.float32)
    for i in range(br):
        for j in range(bc):
            s[i, j] = np.abs(w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]).max() / 448.0
    se = np.repeat(np.repeat(s, 128, 0), 128, 1)[:r, :c]
    q = torch.from_numpy(w / se).to(torch.float8_e4m3fn)
    return q, s, q.float().numpy() * se


def is_matrix(name, arr):
    return arr.ndim >= 2 and "embed_tokens" not in name and "lm_head" not in name


def save_hf(out_dir, model, sd, kind):
    """HF folder with weights as F32/BF16/F16, or F8_E4M3 (+ scales) for the linear layers. A kind ending in
    "-split" ("f32-split", "fp8block-split") stores the MoE experts as one 2-D tensor per expert and projection,
    the layout of checkpoints saved before transformers 5 (the published Qwen3-MoE, Qwen3-30B-A3B-FP8), each
    in the kind's format (block FP8: its own block scales)."""
    os.makedirs(out_dir, exist_ok=True)
    cfg = model.config.to_dict()
    split = kind.endswith("-split")
    fmt = kind[:-len("-split")] if split else kind
    tensors, eff = {}, {}

    def expert(name, w):
        """one expert's projection (rows, cols) in fmt; returns what the file holds, as float32"""
        if fmt == "fp8block":
            q, s, e = fp8_block(w)
            tensors[name], tensors[name + "_scale_inv"] = q, s
            return e
        assert fmt == "f32", kind
        tensors[name] = np.ascontiguousarray(w)
        return w

    for k, v in sd.items():
        if split and k.endswith("mlp.experts.gate_up_proj"):
            # (n_expert, 2·ffn, dim), gate rows first
            f = v.shape[1] // 2
            eff[k] = np.stack([np.concatenate([expert(k.replace("gate_up_proj", f"{e}.gate_proj.weight"), v[e, :f]),
                                               expert(k.replace("gate_up_proj", f"{e}.up_proj.weight"), v[e, f:])])
                               for e in range(v.shape[0])])
        elif split and k.endswith("mlp.experts.down_proj"):
            eff[k] = np.stack([expert(k.replace("down_proj", f"{e}.down_proj.weight"), v[e])
                               for e in range(v.shape[0])])
        elif fmt == "f32":
            tensors[k], eff[k] = v, v
        elif fmt in ("bf16", "f16"):
            dt = torch.bfloat16 if fmt == "bf16" else torch.float16
            t = torch.from_numpy(v).to(dt)
            tensors[k], eff[k] = t, t.float().numpy()
        elif fmt in ("fp8", "fp8block") and is_matrix(k, v) and v.ndim == 2:
            q, s, e = (fp8_tensor if fmt == "fp8" else fp8_block)(v)
            tensors[k] = q
            tensors[k + ("_scale" if fmt == "fp8" else "_scale_inv")] = s
            eff[k] = e
        else:
            tensors[k], eff[k] = v, v
    if fmt == "fp8block":
        cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128]}
    from safetensors.torch import save_file as save_torch
    save_torch({k: (v if isinstance(v, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(v))).contiguous()
                for k, v in tensors.items()}, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
    return eff


# ---- GGUF encoders gguf-py lacks (row-wise, blocks of 256; IQ4_NL 32) -------------------------------

KVALUES_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)


def f16(x):
    return np.asarray(x, np.float32).astype(np.float16)


def _kquant_scales(x, nsub, qmax):
    """x: (nb, 256) → per-sub-block 6-bit scales/mins, super-block d/dmin (Q4_K/Q5_K)."""
    xs = x.reshape(len(x), nsub, -1)
    lo = np.minimum(xs.min(-1), 0.0)
    hi = xs.max(-1)
    scale_f = (hi - lo) / qmax
    min_f = -lo
    d = f16(scale_f.max(-1) / 63.0)
    dmin = f16(min_f.max(-1) / 63.0)
    dd, dm = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    sc = np.clip(np.round(np.divide(scale_f, dd, out=np.zeros_like(scale_f), where=dd > 0)), 0, 63).astype(np.uint8)
    m = np.clip(np.round(np.divide(min_f, dm, out=np.zeros_like(min_f), where=dm > 0)), 0, 63).astype(np.uint8)
    es, em = dd * sc, dm * m
    q = np.round(np.divide(xs + em[..., None], es[..., None], out=np.zeros_like(xs), where=es[..., None] > 0))
    q = np.clip(q, 0, qmax).astype(np.uint8).reshape(len(x), 256)
    packed = np.zeros((len(x), 12), np.uint8)
    for j in range(4):
        packed[:, j] = sc[:, j] | ((sc[:, j + 4] >> 4) << 6)
        packed[:, j + 4] = m[:, j] | ((m[:, j + 4] >> 4) << 6)
        packed[:, j + 8] = (sc[:, j + 4] & 0xF) | ((m[:, j + 4] & 0xF) << 4)
    return d, dmin, packed, q


def enc_q4_k(x):
    d, dmin, scales, q = _kquant_scales(x, 8, 15)
    qs = np.zeros((len(x), 128), np.uint8)
    for c in range(4):
        qs[:, 32 * c:32 * c + 32] = q[:, 64 * c:64 * c + 32] | (q[:, 64 * c + 32:64 * c + 64] << 4)
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2), scales, qs], 1)


def enc_q5_k(x):
    d, dmin, scales, q = _kquant_scales(x, 8, 31)
    qs = np.zeros((len(x), 128), np.uint8)
    qh = np.zeros((len(x), 32), np.uint8)
    for c in range(4):
        a, b = q[:, 64 * c:64 * c + 32], q[:, 64 * c + 32:64 * c + 64]
        qs[:, 32 * c:32 * c + 32] = (a & 0xF) | ((b & 0xF) << 4)
        qh |= ((a >> 4) << (2 * c)) | ((b >> 4) << (2 * c + 1))
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2), scales, qh, qs], 1)


def enc_q6_k(x):
    xs = x.reshape(len(x), 16, 16)
    amax = np.abs(xs).max(-1)
    scale_f = amax / 31.0
    d = f16(scale_f.max(-1) / 127.0)
    dd = d.astype(np.float32)[:, None]
    sc = np.clip(np.round(np.divide(scale_f, dd, out=np.zeros_like(scale_f), where=dd > 0)), -128, 127)
    es = (dd * sc)[..., None]
    q = np.clip(np.round(np.divide(xs, es, out=np.zeros_like(xs), where=es > 0)) + 32, 0, 63).astype(np.uint8)
    q = q.reshape(len(x), 256)
    ql = np.zeros((len(x), 128), np.uint8)
    qh = np.zeros((len(x), 64), np.uint8)
    for h in range(2):
        n = 128 * h
        q1, q2, q3, q4 = (q[:, n + 32 * i:n + 32 * i + 32] for i in range(4))
        ql[:, 64 * h:64 * h + 32] = (q1 & 0xF) | ((q3 & 0xF) << 4)
        ql[:, 64 * h + 32:64 * h + 64] = (q2 & 0xF) | ((q4 & 0xF) << 4)
        qh[:, 32 * h:32 * h + 32] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    return np.concatenate([ql, qh, sc.astype(np.int8).view(np.uint8), d.view(np.uint8).reshape(-1, 2)], 1)


def enc_iq4_xs(x):
    xs = x.reshape(len(x), 8, 32)
    scale_f = np.abs(xs).max(-1) / 127.0
    d = f16(scale_f.max(-1) / 31.0)
    dd = d.astype(np.float32)[:, None]
    ls = np.clip(np.round(np.divide(scale_f, dd, out=np.zeros_like(scale_f), where=dd > 0)) + 32, 0, 63)
    ls = ls.astype(np.uint8)
    dl = dd * (ls.astype(np.float32) - 32)
    cand = dl[..., None, None] * KVALUES_IQ4NL  # (nb, 8, 1, 16)
    q = np.abs(xs[..., None] - cand).argmin(-1).astype(np.uint8)  # (nb, 8, 32)
    qs = (q[:, :, :16] | (q[:, :, 16:] << 4)).reshape(len(x), 128)
    scales_l = np.zeros((len(x), 4), np.uint8)
    scales_h = np.zeros(len(x), np.uint16)
    for ib in range(8):
        scales_l[:, ib // 2] |= (ls[:, ib] & 0xF) << (4 * (ib % 2))
        scales_h |= ((ls[:, ib] >> 4).astype(np.uint16) << (2 * ib))
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), scales_h.view(np.uint8).reshape(-1, 2), scales_l, qs], 1)


def _pack_2bit(q):
    """(nb, 256) values 0..3 → qs (nb, 64): qs[32·n + l] bits 2j..2j+1 hold element 128·n + 32·j + l (Q2_K, Q3_K)."""
    qs = np.zeros((len(q), 64), np.uint8)
    for n in range(2):
        for j in range(4):
            qs[:, 32 * n:32 * n + 32] |= (q[:, 128 * n + 32 * j:128 * n + 32 * j + 32] & 3) << (2 * j)
    return qs


def enc_q2_k(x):
    """scales[16] (low nibble the scale, high the min of each 16) | qs[64] | f16 d | f16 dmin; w = d·sc·q − dmin·m."""
    xs = x.reshape(len(x), 16, 16)
    lo = np.minimum(xs.min(-1), 0.0)
    scale_f, min_f = (xs.max(-1) - lo) / 3.0, -lo
    d, dmin = f16(scale_f.max(-1) / 15.0), f16(min_f.max(-1) / 15.0)
    dd, dm = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    sc = np.clip(np.round(np.divide(scale_f, dd, out=np.zeros_like(scale_f), where=dd > 0)), 0, 15).astype(np.uint8)
    m = np.clip(np.round(np.divide(min_f, dm, out=np.zeros_like(min_f), where=dm > 0)), 0, 15).astype(np.uint8)
    es, em = (dd * sc)[..., None], (dm * m)[..., None]
    q = np.clip(np.round(np.divide(xs + em, es, out=np.zeros_like(xs), where=es > 0)), 0, 3).astype(np.uint8)
    return np.concatenate([sc | (m << 4), _pack_2bit(q.reshape(len(x), 256)), d.view(np.uint8).reshape(-1, 2),
                           dmin.view(np.uint8).reshape(-1, 2)], 1)


def enc_q3_k(x):
    """hmask[32] | qs[64] | scales[12] (16 six-bit scales, s − 32) | f16 d; w = d·(s − 32)·(q − 4), q 0..7 with its
    high bit in hmask (element 128·n + 32·j + l: bit 4·n + j of hmask[l])."""
    xs = x.reshape(len(x), 16, 16)
    scale_f = np.maximum(xs.max(-1) / 3.0, -xs.min(-1) / 4.0)  # q − 4 in −4..3: no value clipped
    d = f16(scale_f.max(-1) / 31.0)
    dd = d.astype(np.float32)[:, None]
    s = np.clip(np.round(np.divide(scale_f, dd, out=np.zeros_like(scale_f), where=dd > 0)), 0, 31)
    es = (dd * s)[..., None]
    q = np.clip(np.round(np.divide(xs, es, out=np.zeros_like(xs), where=es > 0)), -4, 3) + 4
    q = q.astype(np.uint8).reshape(len(x), 256)
    hmask = np.zeros((len(x), 32), np.uint8)
    for n in range(2):
        for j in range(4):
            hmask |= (q[:, 128 * n + 32 * j:128 * n + 32 * j + 32] >> 2) << (4 * n + j)
    sv = (s + 32).astype(np.uint8)  # 32..63
    packed = np.zeros((len(x), 12), np.uint8)
    for j in range(16):  # low nibble: byte j % 8 (high nibble from 8 on); top 2 bits: byte 8 + j % 4, shift 2·(j / 4)
        packed[:, j % 8] |= (sv[:, j] & 0xF) << (4 * (j // 8))
        packed[:, 8 + j % 4] |= (sv[:, j] >> 4) << (2 * (j // 4))
    return np.concatenate([hmask, _pack_2bit(q), packed, d.view(np.uint8).reshape(-1, 2)], 1)


def enc_iq4_nl(x):
    """Blocks of 32: f16 d | qs[16] (element i < 16 the low nibble of qs[i], else the high of qs[i − 16]); w = d·kv."""
    d = f16(np.abs(x).max(-1) / 127.0)
    cand = d.astype(np.float32)[:, None, None] * KVALUES_IQ4NL  # (nb, 1, 16)
    q = np.abs(x[..., None] - cand).argmin(-1).astype(np.uint8)  # (nb, 32)
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), q[:, :16] | (q[:, 16:] << 4)], 1)


OWN_ENCODERS = {QT.Q2_K: enc_q2_k, QT.Q3_K: enc_q3_k, QT.Q4_K: enc_q4_k, QT.Q5_K: enc_q5_k, QT.Q6_K: enc_q6_k,
                QT.IQ4_XS: enc_iq4_xs, QT.IQ4_NL: enc_iq4_nl}


def quantize(w, qt):
    """(rows, cols) float32 → (bytes array (rows, row_bytes), dequantized (rows, cols))."""
    if qt == QT.F32:
        return w.astype(np.float32), w.astype(np.float32)
    if qt == QT.F16:
        h = w.astype(np.float16)
        return h, h.astype(np.float32)
    if qt == QT.I32:  # only for the broken-model fixture
        i = np.round(w * 100).astype(np.int32)
        return i, i.astype(np.float32)
    if qt in OWN_ENCODERS:
        blocks = w.reshape(-1, 32 if qt == QT.IQ4_NL else 256).astype(np.float32)
        q = OWN_ENCODERS[qt](blocks).reshape(w.shape[0], -1)
        deq = gguf.quants.dequantize(q, qt)
        err = np.abs(deq - w).max() / max(np.abs(w).max(), 1e-30)
        assert err < (0.35 if qt in (QT.Q2_K, QT.Q3_K) else 0.2), f"{qt.name} encoder round trip error {err}"
        return q, deq
    q = gguf.quants.quantize(w.astype(np.float32), qt)
    return q, gguf.quants.dequantize(q, qt)


# ---- GGUF conversion ----------------------------------------------------------------------------------

def permute_qk(w, n_head):
    """llama.cpp's reordering of llama Q/K rows: RoPE on halves → RoPE on adjacent pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_names(name, cfg):
    """HF tensor name → [(gguf name, transform)]; transform maps the HF array."""
    arch = cfg.model_type
    gemma = arch.startswith("gemma")
    if name == "model.embed_tokens.weight":
        return [("token_embd.weight", None)]
    if name == "model.norm.weight":
        return [("output_norm.weight", (lambda a: a + 1.0) if gemma else None)]
    if name == "lm_head.weight":
        return [("output.weight", None)]
    parts = name.split(".")
    i, rest = int(parts[2]), ".".join(parts[3:])
    b = f"blk.{i}."
    simple = {
        "input_layernorm.weight": "attn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
        "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
        "self_attn.v_proj.bias": "attn_v.bias",
        "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
        "post_attention_layernorm.weight": "post_attention_norm.weight" if gemma else "ffn_norm.weight",
        "pre_feedforward_layernorm.weight": "ffn_norm.weight",
        "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight", "mlp.gate.weight": "ffn_gate_inp.weight",
        "mlp.experts.down_proj": "ffn_down_exps.weight",
    }
    if rest == "mlp.experts.gate_up_proj":
        f = cfg.moe_intermediate_size
        return [(b + "ffn_gate_exps.weight", lambda a: a[:, :f]), (b + "ffn_up_exps.weight", lambda a: a[:, f:])]
    if rest not in simple:
        raise KeyError(name)
    t = None
    if arch == "llama" and rest == "self_attn.q_proj.weight":
        t = lambda a: permute_qk(a, cfg.num_attention_heads)
    elif arch == "llama" and rest == "self_attn.k_proj.weight":
        t = lambda a: permute_qk(a, cfg.num_key_value_heads)
    elif gemma and rest.endswith("norm.weight"):
        t = lambda a: a + 1.0
    return [(b + simple[rest], t)]


def save_gguf(path, model, sd, qt, arch_override=None, drop=(), reshape=None, dtype_override=None):
    """Write sd as GGUF with 2-D+ weights in type qt (vectors F32); returns the HF-layout state the file
    holds (dequantized), for the reference."""
    cfg = model.config
    arch = arch_override or configs_arch(cfg)
    w = gguf.GGUFWriter(path, arch)
    w.add_name("memra fixture")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    rp = cfg.rope_parameters
    if cfg.model_type.startswith("gemma"):
        w.add_rope_freq_base(rp["full_attention"]["rope_theta"])
        w.add_sliding_window(cfg.sliding_window)
        if rp["full_attention"].get("rope_type") == "linear":
            w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(rp["full_attention"]["factor"])
    else:
        w.add_rope_freq_base(rp["rope_theta"])
    if cfg.model_type == "qwen3_moe":
        w.add_expert_count(cfg.num_experts)
        w.add_expert_used_count(cfg.num_experts_per_tok)
        w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    eff = {}
    if rp.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(cfg.head_dim, rp))
    for name, arr in sd.items():
        for gname, t in gguf_names(name, cfg):
            a = t(arr) if t else arr
            if gname in drop:
                continue
            if arr.ndim == 1:
                eff_a, data, raw = a, a.astype(np.float32), None
            else:
                rows = a.reshape(-1, a.shape[-1])
                tq = dtype_override.get(gname, qt) if dtype_override else qt
                q, deq = quantize(rows, tq)
                data = q.reshape(*a.shape[:-1], q.shape[-1])
                eff_a = deq.reshape(a.shape)
                raw = tq if tq not in (QT.F32, QT.F16, QT.I32) else None
            if reshape and gname in reshape:
                data = data.reshape(reshape[gname])
                eff_a = eff_a.reshape(reshape[gname])
            w.add_tensor(gname, data, raw_dtype=raw)
            eff[gname] = eff_a
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return gguf_to_hf_state(eff, sd, cfg)


def configs_arch(cfg):
    return {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3_moe": "qwen3moe",
            "gemma3_text": "gemma3"}[cfg.model_type]


def gguf_to_hf_state(eff, sd, cfg):
    """Undo the GGUF layout on the dequantized tensors: the state transformers runs for the reference."""
    out = {}
    for name, arr in sd.items():
        maps = gguf_names(name, cfg)
        if any(g not in eff for g, _ in maps):
            continue  # a tensor left out of a broken-model fixture
        if name.endswith("experts.gate_up_proj"):
            out[name] = np.concatenate([eff[maps[0][0]], eff[maps[1][0]]], 1)
            continue
        a = eff[maps[0][0]]
        rest = name.split(".", 3)[-1] if name.startswith("model.layers.") else name
        if cfg.model_type == "llama" and rest == "self_attn.q_proj.weight":
            a = permute_back(a, cfg.num_attention_heads)
        elif cfg.model_type == "llama" and rest == "self_attn.k_proj.weight":
            a = permute_back(a, cfg.num_key_value_heads)
        elif cfg.model_type.startswith("gemma") and name.endswith("norm.weight"):
            a = a - 1.0
        out[name] = a
    return out


def permute_back(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# ---------------------------------------------------------------- main

class Fixtures:
    """The output folder and its manifest, which the groups below add to."""

    def __init__(self, out, manifest):
        self.out, self.manifest = out, manifest

    def add_ref(self, rname, model, eff):
        assert rname not in self.manifest["refs"], rname
        logits, greedy, margin = reference(model, eff)
        logits.tofile(os.path.join(self.out, "refs", rname + ".f32"))
        self.manifest["refs"][rname] = {"file": "refs/" + rname + ".f32", "vocab": VOCAB, "greedy": greedy,
                                        "logit_range": float(logits.max() - logits.min()),
                                        "min_greedy_margin": margin}
        print(f"  ref {rname}: range {logits.max() - logits.min():.2f}, greedy margin {margin:.4f}", flush=True)
        return rname

    def add_model(self, path, rname, fmt, dtype):
        self.manifest["models"].append({"path": path, "ref": rname, "format": fmt, "dtype": dtype})


def make_float_model(fx, name):
    """One architecture in float formats: HF F32 and GGUF F16 (and the HF formats of llama, the split experts
    of qwen3_moe)."""
    model = build_model(name)
    sd = state_np(model)
    eff = save_hf(os.path.join(fx.out, name, "hf-f32"), model, sd, "f32")
    fx.add_model(f"{name}/hf-f32", fx.add_ref(f"{name}-f32", model, eff), "hf", "F32")
    eff = save_gguf(os.path.join(fx.out, name, "f16.gguf"), model, sd, QT.F16)
    fx.add_model(f"{name}/f16.gguf", fx.add_ref(f"{name}-gguf-f16", model, eff), "gguf", "F16")
    if name == "qwen3_moe":
        save_hf(os.path.join(fx.out, name, "hf-f32-split"), model, sd, "f32-split")
        fx.add_model(f"{name}/hf-f32-split", f"{name}-f32", "hf", "F32 (per-expert tensors)")
    if name == "llama":
        for kind in ["bf16", "f16", "fp8"]:
            eff = save_hf(os.path.join(fx.out, name, f"hf-{kind}"), model, sd, kind)
            fx.add_model(f"{name}/hf-{kind}", fx.add_ref(f"{name}-hf-{kind}", model, eff), "hf", kind.upper())


def make_llamaq(fx):
    """The quantized formats: HF block FP8 and every GGUF quantization memra reads."""
    model = build_model("llamaq")
    sd = state_np(model)
    eff = save_hf(os.path.join(fx.out, "llamaq", "hf-fp8block"), model, sd, "fp8block")
    fx.add_model("llamaq/hf-fp8block", fx.add_ref("llamaq-fp8block", model, eff), "hf", "F8_E4M3 block-128")
    for qt in [QT.Q8_0, QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.IQ4_NL, QT.Q2_K, QT.Q3_K, QT.Q4_K, QT.Q5_K, QT.Q6_K,
               QT.IQ4_XS]:
        fn = f"llamaq/{qt.name.lower()}.gguf"
        eff = save_gguf(os.path.join(fx.out, fn), model, sd, qt)
        fx.add_model(fn, fx.add_ref(f"llamaq-{qt.name.lower()}", model, eff), "gguf", qt.name)


def make_moe_fp8(fx):
    """Qwen3-MoE in block FP8 with one 2-D tensor per expert and projection (weight + weight_scale_inv), as
    Qwen3-30B-A3B-FP8 stores it; every 2-D layer matrix (attention, router, experts) in F8_E4M3 with 128 × 128
    block scales, embeddings, output and norms F32. The experts are whole 128 × 128 blocks: gate and up 2 × 1
    of them, down 1 × 2."""
    name = "qwen3_moe_fp8"
    model = build_model(name)
    sd = state_np(model)
    rng = np.random.default_rng(SEED)
    for k, v in sd.items():
        if ".mlp.experts." in k:
            # each 128 × 128 block of an expert at its own magnitude (× 0.5 .. 2), so that a block read with
            # another block's scale moves the logits
            f = np.exp2(rng.uniform(-1.0, 1.0, (v.shape[0], v.shape[1] // 128, v.shape[2] // 128)))
            sd[k] = (v * np.repeat(np.repeat(f, 128, 1), 128, 2)).astype(np.float32)
    eff = save_hf(os.path.join(fx.out, name, "hf-fp8block-split"), model, sd, "fp8block-split")
    fx.add_model(f"{name}/hf-fp8block-split", fx.add_ref(f"{name}-fp8block", model, eff), "hf",
                 "F8_E4M3 block-128 split")
    print(f"  router: smallest probability gap, last expert chosen to first left out: {router_min_gap(model):.2e}",
          flush=True)


def router_min_gap(model):
    """Over every token of every prompt and every MoE layer, the smallest gap between the router probabilities of
    the last expert chosen and the first left out (a near tie could route memra and transformers differently)."""
    k, gaps = model.config.num_experts_per_tok, []

    def hook(_mod, _inp, out):
        logits = out[0] if isinstance(out, tuple) else out
        p = torch.softmax(logits.float().reshape(-1, logits.shape[-1]), -1)
        top = torch.topk(p, k + 1, dim=-1).values
        gaps.append(float((top[:, k - 1] - top[:, k]).min()))

    hs = [layer.mlp.gate.register_forward_hook(hook) for layer in model.model.layers]
    with torch.no_grad():
        for p in prompts():
            model(torch.tensor([p]))
    for h in hs:
        h.remove()
    return min(gaps)


def make_bad(fx):
    """Broken models: each must be refused with a message naming the tensor or field."""
    small = build_model("tiny")
    sd = state_np(small)
    bad = os.path.join(fx.out, "bad")
    os.makedirs(bad)
    # the valid tiny model the broken ones are made from (also a fuzz seed)
    save_gguf(os.path.join(bad, "tiny-valid.gguf"), small, sd, QT.F16)
    save_gguf(os.path.join(bad, "missing-tensor.gguf"), small, sd, QT.F16, drop=("blk.1.ffn_up.weight",))
    fx.manifest["bad"].append({"path": "bad/missing-tensor.gguf", "expect": "blk.1.ffn_up.weight"})
    save_gguf(os.path.join(bad, "wrong-shape.gguf"), small, sd, QT.F16,
              reshape={"blk.0.attn_k.weight": (32, 16)})
    fx.manifest["bad"].append({"path": "bad/wrong-shape.gguf", "expect": "blk.0.attn_k.weight"})
    save_gguf(os.path.join(bad, "bad-arch.gguf"), small, sd, QT.F16, arch_override="mamba")
    fx.manifest["bad"].append({"path": "bad/bad-arch.gguf", "expect": "general.architecture"})
    # an unsupported dtype: a weight stored as I32 (a GGUF type, but not a weight format memra computes)
    save_gguf(os.path.join(bad, "bad-dtype.gguf"), small, sd, QT.F16, dtype_override={"blk.0.attn_v.weight": QT.I32})
    fx.manifest["bad"].append({"path": "bad/bad-dtype.gguf", "expect": "blk.0.attn_v.weight"})
    d = os.path.join(bad, "hf-missing-field")
    save_hf(d, small, sd, "f32")
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    del c["num_attention_heads"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=1, sort_keys=True)
    fx.manifest["bad"].append({"path": "bad/hf-missing-field", "expect": "num_attention_heads"})


def make_cli(fx):
    fx.manifest["cli"] = make_cli_fixture(fx.out)


# the groups in the order a full run makes them (and lists them in the manifest)
GROUPS = {
    "llama": lambda fx: make_float_model(fx, "llama"),
    "qwen2": lambda fx: make_float_model(fx, "qwen2"),
    "qwen3": lambda fx: make_float_model(fx, "qwen3"),
    "qwen3_moe": lambda fx: make_float_model(fx, "qwen3_moe"),
    "gemma3": lambda fx: make_float_model(fx, "gemma3"),
    "llamaq": make_llamaq,
    "qwen3_moe_fp8": make_moe_fp8,
    "bad": make_bad,
    "cli": make_cli,
}


def new_manifest():
    return {
        "generator": "tools/make_fixtures.py",
        "transformers": transformers.__version__, "torch": torch.__version__, "gguf": "gguf-py",
        "metric": "max over prompt positions and vocabulary of |logit_memra - logit_ref|, divided by "
                  "(max - min) of the reference logits of that file; must be <= 1e-3",
        "prompts": prompts(), "greedy_prompt": 0, "greedy_tokens": GREEDY_TOKENS,
        "refs": {}, "models": [], "bad": [],
    }


def drop_group(out, manifest, name):
    """Remove a group's files and manifest entries (--only), so that it can be made again."""
    if os.path.isdir(os.path.join(out, name)):
        shutil.rmtree(os.path.join(out, name))
    if name == "bad":
        manifest["bad"] = []
    elif name == "cli":
        manifest.pop("cli", None)
    else:
        manifest["models"] = [m for m in manifest["models"] if not m["path"].startswith(name + "/")]
        for r in [r for r in manifest["refs"] if r.startswith(name + "-")]:
            path = os.path.join(out, manifest["refs"].pop(r)["file"])
            if os.path.exists(path):
                os.remove(path)


def main():
    import argparse
    ap = argparse.ArgumentParser(description="make the engine fixtures (tests/fixtures/engine)")
    ap.add_argument("out", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                           "engine"))
    ap.add_argument("--only", help="comma-separated groups to make again in an existing folder, the rest and "
                                   "their manifest entries kept as they are (groups: " + ", ".join(GROUPS) + ")")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if args.only:
        # regenerating everything moves the other refs by torch's last bits: make only these, keep the rest
        only = args.only.split(",")
        unknown = [g for g in only if g not in GROUPS]
        if unknown:
            sys.exit(f"unknown group(s) {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        fresh = new_manifest()
        for key in ["prompts", "greedy_prompt", "greedy_tokens", "transformers", "torch"]:
            if manifest.get(key) != fresh[key]:
                sys.exit(f"{out}/manifest.json: {key} is {manifest.get(key)}, this run's {fresh[key]}: "
                         "make all the fixtures again (no --only)")
        for g in only:
            drop_group(out, manifest, g)
        groups = [g for g in GROUPS if g in only]
    else:
        if os.path.isdir(out):
            shutil.rmtree(out)
        manifest = new_manifest()
        groups = list(GROUPS)
    os.makedirs(os.path.join(out, "refs"), exist_ok=True)
    fx = Fixtures(out, manifest)
    for g in groups:
        print(g, flush=True)
        GROUPS[g](fx)

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(out) for fn in fns)
    print(f"wrote {out}: {total / 1e6:.2f} MB")


# ---------------------------------------------------------------- CLI fixture

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TEXT = ("The quick brown fox jumps over the lazy dog. A tiny model reads a short text, and the engine "
        "scores every token of it. Perplexity is the exponential of the mean negative log-likelihood. ") * 4


def make_cli_fixture(out):
    """A Hugging Face folder with a real tokenizer (byte-level BPE trained here with the `tokenizers` package,
    ChatML special tokens and chat template) for the run-gen and memra-ppl command-line tests, with
    transformers' greedy answers and perplexity as the expected output."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    from transformers import PreTrainedTokenizerFast
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                             show_progress=False)
    tk.train_from_iterator([TEXT, "What is the capital of France? Hello world."], tr)
    n_vocab = tk.get_vocab_size()
    # (model_max_length set: transformers' default 1e30 is an integer jansson refuses; reported to the tokenizer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   model_max_length=256)
    fast.chat_template = CHAT_TEMPLATE

    cls_name, kw, _ = configs()["qwen3"]
    cfg = getattr(transformers, cls_name)(**dict(kw, vocab_size=n_vocab, eos_token_id=fast.eos_token_id,
                                                 bos_token_id=None, pad_token_id=fast.pad_token_id))
    torch.manual_seed(SEED + 7)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (2.0 if "embed" in pname else 1.0) / np.sqrt(p.shape[-1]))
    model.eval()
    d = os.path.join(out, "cli", "qwen3-tok")
    save_hf(d, model, state_np(model), "f32")
    model.generation_config.eos_token_id = fast.eos_token_id
    fast.save_pretrained(d)

    cases = []
    eos = [fast.convert_tokens_to_ids(t) for t in ["<|im_end|>", "<|endoftext|>"]]

    def greedy(ids, n):
        with torch.no_grad():
            g = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False, eos_token_id=eos,
                               pad_token_id=fast.pad_token_id)
        return fast.decode(g[0, len(ids):], skip_special_tokens=True)

    prompt = "Hello world"
    cases.append({"args": ["--prompt", prompt, "--max-tokens", "24"], "chat": False,
                  "expected_stdout": greedy(fast(prompt)["input_ids"], 24)})
    q = "What is the capital of France?"
    ids = fast.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, tokenize=True,
                                   return_dict=True)["input_ids"]
    cases.append({"args": ["--prompt", q, "--max-tokens", "24"], "chat": True, "expected_stdout": greedy(ids, 24)})

    # perplexity over TEXT in windows of 32 tokens, as memra-ppl computes it
    with open(os.path.join(out, "cli", "text.txt"), "w") as f:
        f.write(TEXT)
    ids = fast(TEXT)["input_ids"]
    ctx = 32
    nll = []
    with torch.no_grad():
        for w in range(len(ids) // ctx):
            win = torch.tensor([ids[w * ctx:(w + 1) * ctx]])
            lp = torch.log_softmax(model(win).logits[0].double(), -1)
            nll += [-float(lp[i, win[0, i + 1]]) for i in range(ctx - 1)]
    ppl = float(np.exp(np.mean(nll)))
    return {"path": "cli/qwen3-tok", "generate": cases, "ppl_text": "cli/text.txt", "ppl_ctx": ctx,
            "ppl_windows": len(ids) // ctx, "ppl_tokens": len(ids), "perplexity": ppl}


if __name__ == "__main__":
    main()
