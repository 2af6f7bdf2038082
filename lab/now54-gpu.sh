#!/bin/bash
# lab/now54-gpu.sh MAIN SB — one call (~6 min on an H200, ~3 on another GPU): on an H200 first issue 5's GGUF rows
# at the current build (`QUICK=1 lab/rows51-gpu.sh MAIN`: Q8_0 / Q4_K_M pp4096 at --ubatch 4096 with bf16
# activations, tg128 / tg128@d4096), then the same pp4096 rows under `MEMRA_GEMM=fast` (one bf16 product on the
# kept dequantized copy: what llama.cpp's prefill computes), then on any GPU lab/gemmq-sb-gpu.sh SB (the promoted
# GEMM's superblock form, off / on / serial / pair). MAIN, SB: packs of `make build` (SB with lab/gemmq-sb.patch
# applied); carry ["gpu/MAIN.tar.xz", "gpu/SB.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "GPU: $name"
if echo "$name" | grep -q H200; then
  QUICK=1 bash lab/rows51-gpu.sh "${1:?usage: lab/now54-gpu.sh MAIN SB}"
  ( PRELUDE_MODEL=0 . lab/gpu-prelude.sh "$1"
    for m in q8_0 q4_k_m; do
      XA="--ubatch 4096" TO=90 mbench "$m fast ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 MEMRA_GEMM=fast MEMRA_ACT_TYPE=bf16
    done )
fi
bash lab/gemmq-sb-gpu.sh "${2:?usage: lab/now54-gpu.sh MAIN SB}"
