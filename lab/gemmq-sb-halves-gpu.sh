#!/bin/bash
# lab/gemmq-sb-halves-gpu.sh — one GPU call (~30 s after the start): lab/gemmq-sb.patch's `MEMRA_GEMM_Q_SB=halves`
# (the wide form's superblocks in two accumulation chains a warpgroup) — kernel_gemm --promoted with it (its checks
# stop at the narrow / wide comparison, which this form does not keep) and the random 8B Q4_K_M's pp4096 at
# --ubatch 4096 with bf16 activations, off then halves. Needs the pack gpu/sb.tar.xz of main + lab/gemmq-sb.patch; carry
# ["gpu/sb.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh sb
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
m8q_models q4_k_m
MEMRA_GEMM_Q_SB=halves timeout 100 $B/kernels/kernel_gemm --promoted > $O/kg-halves.log 2>&1
ts "kernel_gemm sb halves rc $? $(tail -1 $O/kg-halves.log)"; grep -E "^\| Q4_K \| xbf16 promoted \|" $O/kg-halves.log
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for sb in off halves; do
  XA="--ubatch 4096" TO=90 mbench "r1 q4_k_m sb $sb ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_Q_SB=$sb
done
ts done
