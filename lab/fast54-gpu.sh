#!/bin/bash
# lab/fast54-gpu.sh NAME — one call (~5 min): issue 5's prefill rows at --ubatch 4096 with bf16 activations, each beside
# `MEMRA_GEMM=fast` (one bf16 GEMM on the weights rounded to bf16 — for GGUF the kept dequantized copy) in two
# alternated rounds, for the random 8B Q8_0, Q4_K_M and BF16 models; then their tg128 / tg128@d4096 at the defaults. On
# an H100 (fifty-fourth run) fast ran the GGUF models at 39.7-41.5 k against 25.4-28.8 k; this asks the same of the BF16
# model and of an H200. NAME: a pack of `make build`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/fast54-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
m8q_models q8_0,q4_k_m
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for m in q8_0 q4_k_m; do
  M=/tmp/m8q/llama8b-$m.gguf
  MEMRA_ACT_TYPE=bf16 XA="--ubatch 4096" TO=90 mbench_ab "$m ub4096" $M pp4096 MEMRA_GEMM exact fast
done
for m in q8_0 q4_k_m; do TO=90 mbench "$m" /tmp/m8q/llama8b-$m.gguf tg128,tg128@d4096; done
rm -rf /tmp/m8q
wait $MK; ts "m8b $(tail -1 $OUT/make.log)"
MEMRA_ACT_TYPE=bf16 XA="--ubatch 4096" mbench_ab "bf16 ub4096" /tmp/m8b/hf-bf16 pp4096 MEMRA_GEMM exact fast
mbench "bf16" /tmp/m8b/hf-bf16 tg128,tg128@d4096
ts done
