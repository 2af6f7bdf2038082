#!/bin/bash
# lab/mb61-gpu.sh NAME — one call (~5 min) at the pack gpu/NAME (main + lab/mb61.patch; memra-bench, kernel_gemv and
# kernel_forward only; carry ["gpu/NAME.tar.xz", ".whl"]): the lone vector's register dp4a GEMV at K split 4 built
# for MEMRA_LAB_MB = 4 (landed: 102 registers for Q8_0's 4 rows a warp, 4 blocks an SM, so o's and down's 1024 blocks
# take two waves), 6 (80 registers) or 8 (64, some spills: one wave). The same operations, so the same bits:
# 1. kernel_gemv --quick at 4 and at 8; kernel_forward's fixtures with the tiny head_dim-128 Q8_0 beside them at 8
#    (f32 / bf16: a batch runs the unchanged batch kernels, so batch = alone checks the bits);
# 2. random 8B Q8_0 tg128 / tg128@d4096, MB 4 / 8 two rounds (f32), 6 one round, bf16 4 / 8; Q4_K_M (its Q6_K v and
#    downs) 4 / 8 / 6 one round;
# 3. lab/mma-all55-gpu.sh's question in one round: with bf16 activations Q4_K_M's Q6_K GEMVs on the tensor cores too
#    (MEMRA_GEMV_MMA=all) against the default `on`, tg128 / tg128x8.
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mb61-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gguf_models q8_0,q4_k_m
kg_quick 150
cp $OUT/kernel_gemv.log $OUT/kernel_gemv-mb4.log
kg_quick 150 MEMRA_LAB_MB=8
kf_extra "MB=8" q8_0 MEMRA_LAB_MB=8
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q8_0.gguf
TO=60 mbench_ab "q8_0 f32 MB" $M tg128,tg128@d4096 MEMRA_LAB_MB 4 8
TO=60 mbench "q8_0 f32 MB 6" $M tg128,tg128@d4096 MEMRA_LAB_MB=6
for x in 4 8; do TO=60 mbench "q8_0 bf16 MB $x" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_MB=$x; done
M=/tmp/m8q/llama8b-q4_k_m.gguf
for x in 4 8 6; do TO=60 mbench "q4_k_m f32 MB $x" $M tg128,tg128@d4096 MEMRA_LAB_MB=$x; done
for x in on all; do TO=60 mbench "q4_k_m bf16 MMA $x" $M tg128,tg128x8 MEMRA_ACT_TYPE=bf16 MEMRA_GEMV_MMA=$x; done
ts done
