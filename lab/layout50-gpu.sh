#!/bin/bash
# lab/layout50-gpu.sh NAME — one GPU call (~1 min warm): does the decode attention read faster when a kv head's
# positions are contiguous? kernel_attn --one DEPTH ROWS bf16 cold H:KVH moves the same bytes over the same CTAs
# (tensor cores, bf16 cache, the split form of < 8 rows) with a kv head's 16 positions of a block ever more
# contiguous: one row of the 8B shape's 32:8 heads (each position's slice of a kv head 256 bytes, 2 KB apart: the
# cache's layout), 2 rows of 16:4 (1 KB apart), 4 of 8:2 (512 B), 7 of 4:1 (a block's 16 positions one 4 KB piece; 7/8
# of the bytes, 224 CTAs against 256). GB/s rising with contiguity says the cache layout (positions of a kv head
# together in a block) is worth its change; flat says the kernel's rate is held elsewhere. NAME: a pack holding
# NAME/kernels/kernel_attn of 79cdf4b or later; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/layout50-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2; do
  for a in "4096 1 cold 32:8" "4096 2 cold 16:4" "4096 4 cold 8:2" "4096 7 cold 4:1" "1024 1 cold 32:8" \
           "1024 7 cold 4:1"; do
    echo "r$r $a: $(ka_one $B/kernels/kernel_attn $a | cut -d'|' -f2,3,7,8,9)"
  done
done
