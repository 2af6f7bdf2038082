#!/bin/bash
# lab/attn-pvt-gpu.sh NAME — one GPU call (~6 min) for lab/attn-tc-pvt.patch: the tensor-core decode attention's
# P·V transposed (bf16 keys, ≤ 8 query heads a kv head): O^T += V^T · P^T, an m16n8k8 whose 16 rows are head dims,
# instead of O += P · V, whose 16 rows held the 4-8 heads of a kv head — 16 instead of 32 mma a warp a chunk, the
# same V fragments (the same ldmatrix.trans) and P's B fragment straight from S's accumulators. The patch's first
# form (every bf16 kernel of <= 8 heads a kv head) ran in the twenty-sixth run's call 6 (bench/round-h200-2026-12-03e.log):
# the same bits (kernel_attn 459 checks, all 44 digests equal main's), 64 × 640 73.4 → 68.5 µs, but 16 × 640 27.3 →
# 32.3 and 8 × 512 13.6 → 16.2 (its 3-CTA split kernel stopped spilling, so main's rule — q in shared memory where
# that kernel spills — kept q in registers at 3 CTAs an SM instead of 4) and one row at depth 4096 8.81 → 9.13.
# This form (MEMRA_ATTN_TC_PVT=2): P·V transposed only in the rows form and the q-in-shared-memory kernels (ptxas:
# rows 186 → 156 registers, rows with q in shared memory 126 → 108, split with q in shared memory 128 → 106; the
# split form of < 8 rows and the 3-CTA register kernel unchanged), and the split form's rule by occupancy (q in
# shared memory when that kernel holds more CTAs an SM: at head_dim 128 as main's rule decides; at head_dim 64 it now
# takes it too, 5 CTAs against 4, not timed: kernel_attn's checks cover its bits).
# The same products summed in the same k8 groups and order; whether the tensor core gives the same bits with the
# operands' roles swapped is what the digests say (equal: same bits; else kernel_attn's f64 tolerance and
# kernel_forward's GPU-vs-CPU checks decide, and the kernel's bits change once, in every form and batch alike).
# gpu/NAME.tar.xz from lab/attn-pvt-build.sh; carry ["gpu/NAME.tar.xz", ".whl"].
# Lands if: kernel_attn and kernel_forward pass, 64 × 640 faster and 16 × 640 / 8 × 512 / 4096 × 1 not slower (tc), memra-bench
# tg32x8/16/64@d512 faster and tg128 / tg128@d4096 not slower.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-pvt-gpu.sh NAME (gpu/NAME.tar.xz)}"
for v in x0 t1; do   # the checks at once (~80-130 s each; they time nothing)
  ( timeout 200 $B/$v/kernel_attn --quick > /tmp/kq-$v.log 2>&1; echo "rc $?" >> /tmp/kq-$v.log ) &
done
( MEMRA_FORWARD_PART=fixtures timeout 200 $B/t1/kernel_forward > /tmp/kf.log 2>&1; echo "rc $?" >> /tmp/kf.log ) &
wait $(jobs -p | grep -v "^$MK$")
for v in x0 t1; do
  ts "kernel_attn --quick $v $(tail -1 /tmp/kq-$v.log) $(grep -E '[0-9]+ checks' /tmp/kq-$v.log | tail -1)"
  grep -o 'digest [0-9a-f]*' /tmp/kq-$v.log > /tmp/dig-$v.txt
done
grep -E 'FAIL|differs|changes' /tmp/kq-t1.log | head -5
grep -E 'decode .*tc' /tmp/kq-t1.log | grep -o 'max|d|/max|ref| [0-9.e+-]*' | sort | tail -2
cmp -s /tmp/dig-x0.txt /tmp/dig-t1.txt && echo "digests t1 = main ($(wc -l < /tmp/dig-x0.txt))" || echo "DIGESTS t1 DIFFER from main: $(diff /tmp/dig-x0.txt /tmp/dig-t1.txt | grep -c '^>') of $(wc -l < /tmp/dig-x0.txt)"
ts "kernel_forward t1 $(tail -1 /tmp/kf.log) $(grep -E 'checks,' /tmp/kf.log | tail -1)"; grep -E 'CHECK failed' /tmp/kf.log | head -3
export MEMRA_ATTN_DECODE=tc   # kernel_attn --one times the f32 kernels unless told
for r in 1 2; do for v in x0 t1; do
  for shape in "640 64" "640 32" "640 16" "512 8" "4096 16" "4096 1"; do
    timeout 30 $B/$v/kernel_attn --one $shape 2>&1 | grep -E "^\| [0-9]+ \| [0-9]+ \| auto tc \| bf16 \| auto" | sed "s/^/$v: /"
  done
done; done
unset MEMRA_ATTN_DECODE
ts "kernel timings done"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for r in 1 2; do for v in x0 t1; do
  timeout 120 $B/$v/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests tg128,tg128@d4096,tg32x8@d512,tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg" | sed "s/^/$v: /"
done; done
ts done
