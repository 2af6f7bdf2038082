#!/usr/bin/env python3
"""tools/make_test_models.py — random-weight test models at the Llama-3-8B shape, for memra-bench.

Speed figures need a model of the real size, not real weights: this builds LlamaForCausalLM at the
Meta-Llama-3.1-8B configuration (hidden 4096, 32 layers, 32 heads / 8 KV heads, FFN 14336, vocab 128256,
rope_theta 500000, llama3 RoPE scaling), initialised by transformers from a fixed seed, in bf16, and writes
it as
  OUT/hf-bf16/         save_pretrained: config.json + sharded safetensors (BF16); no tokenizer
  OUT/hf-fp8block/     the same model with its layer matrices in FP8 E4M3 and a float32 scale a 128 × 128 block
                       (weight_scale_inv, quantization_config.weight_block_size [128, 128]: the layout of Qwen3 /
                       DeepSeek FP8 checkpoints), embeddings, output and norms in BF16; sharded safetensors + index
  OUT/llama8b-f16.gguf GGUF F16 (vectors F32), llama arch metadata, Q/K rows permuted as llama.cpp does
  OUT/llama8b-q8_0.gguf GGUF Q8_0
  OUT/llama8b-q4_k_m.gguf GGUF "Q4_K_M": llama.cpp's type mix (Q6_K for output.weight and for the attn_v /
                       ffn_down tensors of the layers llama.cpp's use_more_bits picks, Q4_K elsewhere), encoded
                       by this script's own Q4_K / Q6_K encoders (the simple min/max scale search of
                       tools/make_fixtures.py, not llama.cpp's iterative one: same bytes per weight, other values)
No file holds a tokenizer: memra-bench opens models without one (it feeds random token ids).

Run it on the GPU machine (quantization runs in torch on the GPU; it also runs on the CPU, slowly):
  python3 tools/make_test_models.py OUT [--formats bf16,f16,q8_0,q4_k_m,fp8block] [--seed 0] [--tiny]
--tiny builds a 2-layer model of width 256 (vocab 1024) instead, to check the script and the files here
(--tiny-head-dim 128: 2 heads of 128 instead of 4 of 64).
--arch qwen3moe builds Qwen3MoeForCausalLM at Qwen3-30B-A3B's shape instead (128 experts, 8 a token, hidden 2048,
expert size 768, vocab 151936; --layers N of its 48; BF16 (1.26 GB a layer + 1.24 GB of embeddings) and / or
fp8block (0.63 GB a layer: Qwen3-30B-A3B-FP8's layout, experts one tensor each, the router BF16)).
Every quantized type is checked against the gguf package on the first rows of the first tensor it encodes:
at least 99.9 % of the bytes must equal the reference encoder's (Q8_0: gguf.quants.quantize; Q4_K / Q6_K:
tools/make_fixtures.py's numpy encoders) and the dequantized rows (gguf.quants.dequantize) must stay within 0.2 of
max|w|. In the 2026-11-30 H200 run Q4_K and Q6_K matched byte for byte and Q8_0 in 99.9957 % of the bytes (torch on
the GPU against numpy; the few differing bytes were not looked into).
Disk: BF16 16.1 GB + F16 16.1 GB + Q8_0 8.5 GB + Q4_K_M 4.9 GB + FP8 block 9.1 GB.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import transformers
import gguf

from rope_llama3 import llama3_rope_factors
from gguf import GGMLQuantizationType as QT

SEED = 0


def llama8b_config(tiny, tiny_head_dim=64):
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    kw = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
              num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
              rms_norm_eps=1e-5, hidden_act="silu", tie_word_embeddings=False, bos_token_id=128000,
              eos_token_id=128001, attention_bias=False, mlp_bias=False)
    if tiny:
        kw.update(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=256 // tiny_head_dim, num_key_value_heads=max(1, 128 // tiny_head_dim),
                  head_dim=tiny_head_dim, bos_token_id=1, eos_token_id=2)
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = rope
    else:
        kw["rope_theta"] = rope.pop("rope_theta")
        kw["rope_scaling"] = rope
    return transformers.LlamaConfig(**kw)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- quantizers (torch, on the model's device) --------------------------------------------------------

def roundf(x):
    """Round half away from zero (C roundf; gguf's np_roundf)."""
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def q8_0(w):
    """(rows, cols) → (rows, cols/32*34) uint8, gguf.quants' Q8_0 arithmetic in float32."""
    x = w.float().reshape(-1, 32)
    d = x.abs().amax(-1, keepdim=True) / 127
    inv = torch.where(d == 0, torch.zeros_like(d), 1 / d)
    q = roundf(x * inv).to(torch.int8)
    out = torch.cat([d.to(torch.float16).view(torch.uint8), q.view(torch.uint8)], 1)
    return out.reshape(w.shape[0], -1)


def _f16(x):
    return x.to(torch.float16)


def _div0(a, b):
    return torch.where(b > 0, a / torch.where(b > 0, b, torch.ones_like(b)), torch.zeros_like(a))


def q4_k(w):
    """tools/make_fixtures.py's enc_q4_k in torch: (rows, cols) → (rows, cols/256*144) uint8."""
    x = w.float().reshape(-1, 8, 32)
    nb = x.shape[0]
    lo = torch.clamp(x.amin(-1), max=0.0)
    hi = x.amax(-1)
    scale_f = (hi - lo) / 15
    min_f = -lo
    d = _f16(scale_f.amax(-1) / 63.0)
    dmin = _f16(min_f.amax(-1) / 63.0)
    dd, dm = d.float()[:, None], dmin.float()[:, None]
    sc = torch.clamp(torch.round(_div0(scale_f, dd)), 0, 63).to(torch.uint8)
    m = torch.clamp(torch.round(_div0(min_f, dm)), 0, 63).to(torch.uint8)
    es, em = dd * sc.float(), dm * m.float()
    q = torch.round(_div0(x + em[..., None], es[..., None].expand_as(x)))
    q = torch.clamp(q, 0, 15).to(torch.uint8).reshape(nb, 256)
    packed = torch.zeros((nb, 12), dtype=torch.uint8, device=w.device)
    for j in range(4):
        packed[:, j] = sc[:, j] | ((sc[:, j + 4] >> 4) << 6)
        packed[:, j + 4] = m[:, j] | ((m[:, j + 4] >> 4) << 6)
        packed[:, j + 8] = (sc[:, j + 4] & 0xF) | ((m[:, j + 4] & 0xF) << 4)
    qs = torch.zeros((nb, 128), dtype=torch.uint8, device=w.device)
    for c in range(4):
        qs[:, 32 * c:32 * c + 32] = q[:, 64 * c:64 * c + 32] | (q[:, 64 * c + 32:64 * c + 64] << 4)
    out = torch.cat([d.view(torch.uint8).reshape(-1, 2), dmin.view(torch.uint8).reshape(-1, 2), packed, qs], 1)
    return out.reshape(w.shape[0], -1)


def q6_k(w):
    """tools/make_fixtures.py's enc_q6_k in torch: (rows, cols) → (rows, cols/256*210) uint8."""
    x = w.float().reshape(-1, 16, 16)
    nb = x.shape[0]
    scale_f = x.abs().amax(-1) / 31.0
    d = _f16(scale_f.amax(-1) / 127.0)
    dd = d.float()[:, None]
    sc = torch.clamp(torch.round(_div0(scale_f, dd)), -128, 127)
    es = (dd * sc)[..., None].expand_as(x)
    q = torch.clamp(torch.round(_div0(x, es)) + 32, 0, 63).to(torch.uint8).reshape(nb, 256)
    ql = torch.zeros((nb, 128), dtype=torch.uint8, device=w.device)
    qh = torch.zeros((nb, 64), dtype=torch.uint8, device=w.device)
    for h in range(2):
        n = 128 * h
        q1, q2, q3, q4 = (q[:, n + 32 * i:n + 32 * i + 32] for i in range(4))
        ql[:, 64 * h:64 * h + 32] = (q1 & 0xF) | ((q3 & 0xF) << 4)
        ql[:, 64 * h + 32:64 * h + 64] = (q2 & 0xF) | ((q4 & 0xF) << 4)
        qh[:, 32 * h:32 * h + 32] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    out = torch.cat([ql, qh, sc.to(torch.int8).view(torch.uint8), d.view(torch.uint8).reshape(-1, 2)], 1)
    return out.reshape(w.shape[0], -1)


ENCODERS = {QT.Q8_0: q8_0, QT.Q4_K: q4_k, QT.Q6_K: q6_k}
_checked = set()


def check_encoder(qt, w, q):
    """Once per type: the torch bytes against the reference (gguf's quantizer or make_fixtures' encoders)."""
    if qt in _checked:
        return
    _checked.add(qt)
    rows = w[:16].float().cpu().numpy()
    mine = q[:16].cpu().numpy()
    if qt == QT.Q8_0:
        ref = gguf.quants.quantize(rows, qt)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import make_fixtures  # noqa: E402 (its numpy encoders are the reference here)
        enc = {QT.Q4_K: make_fixtures.enc_q4_k, QT.Q6_K: make_fixtures.enc_q6_k}[qt]
        ref = enc(rows.reshape(-1, 256)).reshape(rows.shape[0], -1)
    same = np.mean(mine == ref)
    deq = gguf.quants.dequantize(mine, qt)
    err = np.abs(deq - rows).max() / np.abs(rows).max()
    log(f"check {qt.name}: {100 * same:.4f} % of bytes equal to the reference encoder's, "
        f"dequantized max|err|/max|w| = {err:.4f}")
    assert same > 0.999 and err < 0.2, f"{qt.name} encoder disagrees with the reference"


# ---- GGUF ----------------------------------------------------------------------------------------------

def permute_qk(w, n_head):
    """llama.cpp's reordering of llama Q/K rows: RoPE on halves → RoPE on adjacent pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


def gguf_name(name):
    if name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if name == "model.norm.weight":
        return "output_norm.weight"
    if name == "lm_head.weight":
        return "output.weight"
    parts = name.split(".")
    i, rest = int(parts[2]), ".".join(parts[3:])
    return f"blk.{i}." + {
        "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight"}[rest]


def use_more_bits(i, n):
    """llama.cpp's choice of the layers whose attn_v / ffn_down get Q6_K in Q4_K_M."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_type(gname, fmt, n_layers):
    if fmt == "f16":
        return QT.F16
    if fmt == "q8_0":
        return QT.Q8_0
    if gname == "output.weight":
        return QT.Q6_K
    if gname.endswith(("attn_v.weight", "ffn_down.weight")) and use_more_bits(int(gname.split(".")[1]), n_layers):
        return QT.Q6_K
    return QT.Q4_K


def save_gguf(path, cfg, sd, fmt):
    log(f"writing {path}")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"memra test model, Llama-3-8B shape, random (seed {SEED}), {fmt.upper()}")
    w.add_file_type({"f16": gguf.LlamaFileType.MOSTLY_F16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
                     "q4_k_m": gguf.LlamaFileType.MOSTLY_Q4_K_M}[fmt])
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
    rp = cfg.rope_parameters if hasattr(cfg, "rope_parameters") else dict(cfg.rope_scaling, rope_theta=cfg.rope_theta)
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_tensor("rope_freqs.weight", llama3_rope_factors(cfg.head_dim, rp))
    counts = {}
    for name, t in sd.items():
        gname = gguf_name(name)
        if name.endswith("q_proj.weight"):
            t = permute_qk(t, cfg.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            t = permute_qk(t, cfg.num_key_value_heads)
        if t.ndim == 1:
            w.add_tensor(gname, t.float().cpu().numpy())
            continue
        qt = tensor_type(gname, fmt, cfg.num_hidden_layers)
        counts[qt.name] = counts.get(qt.name, 0) + 1
        if qt == QT.F16:
            w.add_tensor(gname, t.to(torch.float16).cpu().numpy())
        else:
            q = ENCODERS[qt](t)
            check_encoder(qt, t, q)
            w.add_tensor(gname, q.cpu().numpy(), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    log(f"wrote {path}: {os.path.getsize(path) / 1e9:.2f} GB, matrices {counts}")


def fp8_block(w):
    """w (r, c) → (q (r, c) float8_e4m3fn, s (⌈r/128⌉, ⌈c/128⌉) float32) with w ≈ q · s blockwise: s = max|w| of
    the block / 448 (E4M3's largest finite value; 1 for an all-zero block), q = w / s rounded to nearest by torch."""
    r, c = w.shape
    br, bc = -(-r // 128), -(-c // 128)
    wp = torch.zeros(br * 128, bc * 128, dtype=torch.float32, device=w.device)
    wp[:r, :c] = w.float()
    blocks = wp.view(br, 128, bc, 128)
    s = blocks.abs().amax(dim=(1, 3)) / 448.0
    s = torch.where(s > 0, s, torch.ones_like(s))
    q = (blocks / s[:, None, :, None]).view(br * 128, bc * 128)[:r, :c].to(torch.float8_e4m3fn)
    return q.contiguous(), s.contiguous()


def split_experts(sd):
    """transformers 5 keeps a MoE layer's experts fused (mlp.experts.gate_up_proj (E, 2·ffn, dim), gate rows first;
    mlp.experts.down_proj (E, dim, ffn)); published FP8 checkpoints (Qwen3-30B-A3B-FP8) hold one 2-D tensor per
    expert and projection, each with its own block scales: yields (name, tensor) in that layout."""
    for name, t in sd.items():
        if name.endswith("mlp.experts.gate_up_proj"):
            f = t.shape[1] // 2
            for e in range(t.shape[0]):
                yield name.replace("gate_up_proj", f"{e}.gate_proj.weight"), t[e, :f]
                yield name.replace("gate_up_proj", f"{e}.up_proj.weight"), t[e, f:]
        elif name.endswith("mlp.experts.down_proj"):
            for e in range(t.shape[0]):
                yield name.replace("down_proj", f"{e}.down_proj.weight"), t[e]
        else:
            yield name, t


def save_fp8block(out, model, sd):
    """OUT/hf-fp8block: every layer matrix (2-D, not the embeddings, the output or a MoE router) in block FP8 with
    its weight_scale_inv, the rest in BF16, MoE experts one tensor each (split_experts); shards of ≤ 4 GB and
    model.safetensors.index.json, as published FP8 checkpoints are laid out. Checks each block's dequantization
    against the BF16 weight on the first matrix."""
    from safetensors.torch import save_file
    os.makedirs(out, exist_ok=True)
    tensors = {}
    checked = False
    for name, t in split_experts(sd):
        if t.ndim == 2 and "embed_tokens" not in name and "lm_head" not in name and not name.endswith("mlp.gate.weight"):
            q, s = fp8_block(t)
            if not checked:  # |q·s − w| ≤ half E4M3's spacing at the top of its range (32 between 416 and 448),
                # give or take the f32 rounding of this check's own product and difference
                se = s.repeat_interleave(128, 0).repeat_interleave(128, 1)[:t.shape[0], :t.shape[1]]
                err = float(((q.float() * se - t.float()).abs() / se).max())
                if not err <= 16.0 * (1 + 2 ** -10):
                    sys.exit(f"make_test_models: fp8 block check failed on {name}: |q·s − w| = {err} s > 16 s")
                log(f"fp8 block check on {name}: max |q·s − w| = {err:.3g} s (≤ 16 s: E4M3's rounding)")
                checked = True
            tensors[name] = q.cpu()
            tensors[name.replace(".weight", ".weight_scale_inv")] = s.cpu()
        else:
            tensors[name] = t.to(torch.bfloat16).cpu()
    shards, cur, size, total = [], {}, 0, 0
    for name, t in tensors.items():
        nb = t.numel() * t.element_size()
        if cur and size + nb > 4 << 30:
            shards.append(cur)
            cur, size = {}, 0
        cur[name] = t
        size += nb
        total += nb
    shards.append(cur)
    wmap = {}
    for i, sh in enumerate(shards):
        fn = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: v.contiguous() for k, v in sh.items()}, os.path.join(out, fn), metadata={"format": "pt"})
        wmap.update({k: fn for k in sh})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f, indent=1)
    c = model.config.to_dict()
    c["architectures"] = [type(model).__name__]
    c["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                "weight_block_size": [128, 128]}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=1, sort_keys=True)
    log(f"wrote {out}: {total / 1e9:.2f} GB in {len(shards)} shards")


def qwen3moe_config(tiny, layers):
    """Qwen3-30B-A3B's configuration (128 experts, 8 a token, expert size 768), with `layers` of its 48."""
    kw = dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
              num_hidden_layers=layers or 48, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
              num_experts=128, num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1,
              mlp_only_layers=[], max_position_embeddings=40960, rms_norm_eps=1e-6, hidden_act="silu",
              tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151645, attention_bias=False)
    if tiny:
        kw.update(vocab_size=1024, hidden_size=256, moe_intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_experts=16, num_experts_per_tok=4,
                  bos_token_id=1, eos_token_id=2)
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": 1000000.0}
    else:
        kw["rope_theta"] = 1000000.0
    return transformers.Qwen3MoeConfig(**kw)


def main():
    global SEED
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--formats", default="bf16,f16,q8_0,q4_k_m")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--tiny-head-dim", type=int, default=64, choices=(64, 128),
                    help="--tiny: heads of 64 (4 heads, 2 kv heads) or 128 (2 heads, 1 kv head)")
    ap.add_argument("--arch", default="llama", choices=("llama", "qwen3moe"),
                    help="qwen3moe: Qwen3-30B-A3B's shape (Qwen3MoeForCausalLM), bf16 / fp8block only")
    ap.add_argument("--layers", type=int, default=0, help="qwen3moe: layers (default 48, the real model's)")
    a = ap.parse_args()
    SEED = a.seed
    fmts = a.formats.split(",")
    for f in fmts:
        if f not in ("bf16", "f16", "q8_0", "q4_k_m", "fp8block"):
            sys.exit(f"make_test_models: unknown format {f}")
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, gguf {gguf.__file__}")
    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    moe = a.arch == "qwen3moe"
    if moe and not set(fmts) <= {"bf16", "fp8block"}:
        sys.exit("make_test_models: --arch qwen3moe writes --formats bf16 and fp8block only")
    cfg = qwen3moe_config(a.tiny, a.layers) if moe else llama8b_config(a.tiny, a.tiny_head_dim)
    torch.manual_seed(SEED)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(dev):
        model = (transformers.Qwen3MoeForCausalLM if moe else transformers.LlamaForCausalLM)(cfg)
    torch.set_default_dtype(torch.float32)
    model.eval()
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    n = sum(v.numel() for v in sd.values())
    log(f"model on {dev}: {n / 1e9:.3f} B parameters, {len(sd)} tensors, "
        f"dtypes {sorted({str(v.dtype) for v in sd.values()})}, std(q_proj 0) {sd['model.layers.0.self_attn.q_proj.weight'].float().std():.4f}")
    if moe:  # transformers' init leaves the routers at zero std in some versions: every token would tie
        for k, v in sd.items():
            if k.endswith("mlp.gate.weight") and float(v.float().std()) == 0.0:
                v.normal_(0.0, 0.02)
    if "bf16" in fmts:
        p = os.path.join(a.out, "hf-bf16")
        model.save_pretrained(p, max_shard_size="5GB")
        with open(os.path.join(p, "config.json")) as f:
            c = json.load(f)
        log(f"wrote {p}: {sorted(os.listdir(p))}, dtype {c.get('dtype', c.get('torch_dtype'))}")
    if "fp8block" in fmts:
        save_fp8block(os.path.join(a.out, "hf-fp8block"), model, sd)
    for f in fmts:
        if f not in ("bf16", "fp8block"):
            save_gguf(os.path.join(a.out, f"llama8b-{f}.gguf"), cfg, sd, f)


if __name__ == "__main__":
    main()
