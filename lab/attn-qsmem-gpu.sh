#!/bin/bash
# lab/attn-qsmem-gpu.sh NAME — one GPU call (~6 min) for lab/attn-tc-qsmem.patch: the tensor-core decode
# attention keeps q's bf16 hi/lo parts in shared memory (read by ldmatrix at each k-step) instead of 32 registers
# a thread (64 with 16 heads a kv head) for the whole kernel. ptxas: the rows form at head_dim 128 from 186 to 126
# registers, the split form's 3-blocks-an-SM instantiation from 168 with 76 bytes of spills to 130 without. The
# twenty-fifth run's profile put the rows form at 2 CTAs an SM (registers and shared memory), 12.5 % occupancy,
# latency-bound: q1 (3-stage ring, 65 KB: 3 CTAs an SM) and q2 (2-stage rows ring, 48 KB: 4) against main (x0).
# The same q values, products and order: the decode digests must equal main's. Not measured before: the f32-key
# form (MEMRA_ATTN_DECODE=tc on an f32 cache, not a default) needs 8.7 KB more and may fall to 1 CTA an SM.
# gpu/NAME.tar.xz from lab/attn-qsmem-build.sh; carry ["gpu/NAME.tar.xz", ".whl"].
# Lands if: digests equal, 64 × 640 and 32 × 640 (tc) faster, memra-bench tg32x64@d512 faster and tg128 /
# tg128@d4096 not slower; keep the stage count that wins.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-qsmem-gpu.sh NAME (gpu/NAME.tar.xz)}"
for v in x0 q1 q2; do   # the three checks at once (~80-130 s each; they time nothing)
  ( timeout 200 $B/$v/kernel_attn --quick > /tmp/kq-$v.log 2>&1; echo "rc $?" >> /tmp/kq-$v.log ) &
done
wait $(jobs -p | grep -v "^$MK$")
for v in x0 q1 q2; do
  ts "kernel_attn --quick $v $(tail -1 /tmp/kq-$v.log) $(grep -E '[0-9]+ checks' /tmp/kq-$v.log | tail -1)"
  grep -o 'digest [0-9a-f]*' /tmp/kq-$v.log > /tmp/dig-$v.txt
done
for v in q1 q2; do
  cmp -s /tmp/dig-x0.txt /tmp/dig-$v.txt && echo "digests $v = main ($(wc -l < /tmp/dig-x0.txt))" || echo "DIGESTS $v DIFFER from main"
done
export MEMRA_ATTN_DECODE=tc   # kernel_attn --one times the f32 kernels unless told
for r in 1 2; do for v in x0 q1 q2; do
  for shape in "640 64" "640 32" "4096 1" "512 8"; do
    timeout 30 $B/$v/kernel_attn --one $shape 2>&1 | grep -E "^\| [0-9]+ \| [0-9]+ \| auto tc \| (bf16|f32) \| auto" | sed "s/^/$v: /"
  done
done; done
unset MEMRA_ATTN_DECODE
ts "kernel timings done"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for r in 1 2; do for v in x0 q1 q2; do
  timeout 120 $B/$v/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests tg128,tg128@d4096,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg" | sed "s/^/$v: /"
done; done
ts done
