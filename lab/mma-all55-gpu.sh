#!/bin/bash
# lab/mma-all55-gpu.sh NAME — one call (~2.5 min): with bf16 activations (the 16-bit prepared x), Q6_K's decode GEMVs
# on the tensor cores too (`MEMRA_GEMV_MMA=all`) against the default `on` (Q4_K only), random 8B Q4_K_M, tg128 /
# tg128x4 / tg128x8, two rounds alternated. NAME: a pack of `make build`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mma-all55-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
m8q_models q4_k_m
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
MEMRA_ACT_TYPE=bf16 TO=90 mbench_ab "q4_k_m bf16" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_GEMV_MMA on all
ts done
