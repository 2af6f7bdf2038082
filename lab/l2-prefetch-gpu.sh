#!/bin/bash
# lab/l2-prefetch-gpu.sh NAME — lab/l2-prefetch.patch measured (~3 min; after lab/defaults-gpu.sh in the same call,
# whose /tmp/m8q models it reuses, else it makes them): a lone token's o weight (and gate|up's first 8 / 16 MB)
# prefetched into L2 on the side stream while the decode attention runs, so the o GEMV reads from L2 (the HBM is
# idle during RoPE and the attention). MEMRA_LAB_PREFETCH off / o / o+gu / o+gu2: kernel_forward's fixtures with
# o+gu2 (the bits must not move), then tg128 / tg128x4 on the random 8B Q8_0 and Q4_K_M, two rounds.
# Pack: HEAD + the patch built in a worktree, `bash lab/final-pack.sh NAME`; carry gpu/NAME.tar.xz and .whl.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/l2-prefetch-gpu.sh NAME}"
[ -f /tmp/m8q/llama8b-q4_k_m.gguf ] || python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $O/pf-makeq.log 2>&1
ts "######## pf: kernel_forward fixtures, MEMRA_LAB_PREFETCH=o+gu2"
MEMRA_LAB_PREFETCH=o+gu2 MEMRA_FORWARD_PART=fixtures timeout 120 $B/kernels/kernel_forward > $O/pf-kf.log 2>&1
echo "rc $?"; grep -E "FAIL|CHECK failed|cases," $O/pf-kf.log | head -10
for r in 1 2; do
  ts "######## pf: round $r"
  for m in q8_0 q4_k_m; do
    for p in off o o+gu o+gu2; do
      TO=60 mbench "pf $m $p" /tmp/m8q/llama8b-$m.gguf tg128,tg128x4 MEMRA_LAB_PREFETCH=$p
    done
  done
done
ts "######## pf done"
