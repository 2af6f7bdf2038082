#!/bin/bash
# lab/attn-pvt3-gpu.sh NAME — one GPU call (~5 min) for lab/attn-tc-pvt.patch built with MEMRA_ATTN_TC_PVT=3
# (`PVT=3 lab/attn-pvt-build.sh NAME`): P·V transposed only in the q-in-shared-memory kernels. The twenty-seventh
# run's first call measured mode 2 (rows form too): same bits, 64 × 640 73.3 → 68.5 µs, 16 × 640 27.2 → 26.0, 8 × 512
# 13.5 → 12.9, 16 × 4096 87.5 → 83.2, but 32 × 640 44.1 → 51.7 (the rows form's register kernel, which a launch of
# 32-33 rows of 8 kv heads takes). Mode 3 keeps that kernel as main's. Checks (kernel_attn digests, kernel_forward
# fixtures), kernel timings x0 / t1 alternated twice (and t1 with q forced into shared memory at 32 rows: would the
# rows form's rule do better to take it there?), memra-bench tg128, d4096, tg32x8/16/32/64@d512.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-pvt3-gpu.sh NAME (gpu/NAME.tar.xz)}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
for v in x0 t1; do
  ( timeout 200 $B/$v/kernel_attn --quick > /tmp/kq-$v.log 2>&1; echo "rc $?" >> /tmp/kq-$v.log ) &
done
( MEMRA_FORWARD_PART=fixtures timeout 200 $B/t1/kernel_forward > /tmp/kf.log 2>&1; echo "rc $?" >> /tmp/kf.log ) &
wait $(jobs -p | grep -v "^$MK$")
for v in x0 t1; do
  ts "kernel_attn --quick $v $(tail -1 /tmp/kq-$v.log) $(grep -E '[0-9]+ checks' /tmp/kq-$v.log | tail -1)"
  grep -o 'digest [0-9a-f]*' /tmp/kq-$v.log > /tmp/dig-$v.txt
done
grep -E 'FAIL|differs|changes' /tmp/kq-t1.log | head -5
cmp -s /tmp/dig-x0.txt /tmp/dig-t1.txt && echo "digests t1 = main ($(wc -l < /tmp/dig-x0.txt))" || echo "DIGESTS t1 DIFFER from main: $(diff /tmp/dig-x0.txt /tmp/dig-t1.txt | grep -c '^>') of $(wc -l < /tmp/dig-x0.txt)"
ts "kernel_forward t1 $(tail -1 /tmp/kf.log) $(grep -E 'checks,' /tmp/kf.log | tail -1)"; grep -E 'CHECK failed' /tmp/kf.log | head -3
export MEMRA_ATTN_DECODE=tc
for r in 1 2; do for v in x0 t1; do
  for shape in "640 64" "640 48" "640 32" "640 24" "640 16" "512 8" "4096 16" "4096 1"; do
    timeout 30 $B/$v/kernel_attn --one $shape 2>&1 | grep -E "^\| [0-9]+ \| [0-9]+ \| auto tc \| bf16 \| auto" | sed "s/^/$v: /"
  done
done
for shape in "640 32" "640 40"; do
  MEMRA_ATTN_TC_Q=smem timeout 30 $B/t1/kernel_attn --one $shape 2>&1 | grep -E "^\| [0-9]+ \| [0-9]+ \| auto tc \| bf16 \| auto" | sed "s/^/t1 smem: /"
  timeout 30 $B/x0/kernel_attn --one $shape 2>&1 | grep -E "^\| [0-9]+ \| [0-9]+ \| auto tc \| bf16 \| auto" | sed "s/^/x0 (again): /"
done; done
unset MEMRA_ATTN_DECODE
ts "kernel timings done"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for r in 1 2; do for v in x0 t1; do
  timeout 120 $B/$v/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests tg128,tg128@d4096,tg32x8@d512,tg32x16@d512,tg32x32@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg" | sed "s/^/$v: /"
done; done
ts done
