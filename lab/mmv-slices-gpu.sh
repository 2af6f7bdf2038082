#!/bin/bash
# lab/mmv-slices-gpu.sh NAME [MAIN] — one GPU call (~8 min): lab/mmv-slices.patch, the wgmma batched GEMV's 4096-row weights
# (q, o, down) in 8 K slices instead of 4 (MEMRA_MMV_WG_WAVES=2: two blocks an SM, the pick taking 107 KB / 99 KB
# launch shapes). The twenty-eighth run's 64-row breakdown has q/o/down at 22.8 µs a launch against floors of
# 7.8 / 7.8 / 27.3 (short K slices whose pipelines never fill, one block an SM). Changes those weights' bits (another
# summation order, the same for every batch). Runs, with the patched build (env unset = main's behaviour):
# kernel_mmv --quick and kernel_forward's fixtures with MEMRA_MMV_WG_WAVES=2 (0 failed expected), kernel_mmv's
# timing table with and without it (q/o, down, k|v rows printed), memra-bench tg32x16@d512 / tg32x64@d512 f32 and
# bf16 activations alternated twice, and once with MEMRA_DECODE_SIDE=off (k|v beside q has less room with S = 8).
# With MAIN (a pack of main's own build) its kernel_mmv --quick and kernel_forward fixtures run first. Checks run
# before the timings, never beside them.
# Lands if =2 is ≥ 2 % faster at 16 and 64 streams in both rounds: then S and the pick change for good (no env).
# Prepare: `git apply lab/mmv-slices.patch && make build && lab/final-pack.sh NAME && git checkout src`;
# carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/mmv-slices-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
# MAIN (optional second pack, main's own build): its kernel_mmv --quick and kernel_forward fixtures first
if [ -n "${2:-}" ]; then
  tar -xJf "gpu/$2.tar.xz" -C /tmp
  timeout 150 /tmp/$2/kernels/kernel_mmv --quick > /tmp/km.log 2>&1; echo "rc $?" >> /tmp/km.log
  ts "main kernel_mmv --quick $(tail -1 /tmp/km.log) $(grep -E '[0-9]+ checks' /tmp/km.log | tail -1)"; grep -E 'FAIL' /tmp/km.log | head -3
  MEMRA_FORWARD_PART=fixtures timeout 150 /tmp/$2/kernels/kernel_forward > /tmp/kfm.log 2>&1; echo "rc $?" >> /tmp/kfm.log
  ts "main kernel_forward $(tail -1 /tmp/kfm.log) $(grep -E 'checks,' /tmp/kfm.log | tail -1)"; grep -E 'CHECK failed' /tmp/kfm.log | head -3
fi
MEMRA_MMV_WG_WAVES=2 timeout 150 $B/kernels/kernel_mmv --quick > /tmp/kq.log 2>&1; echo "rc $?" >> /tmp/kq.log
MEMRA_MMV_WG_WAVES=2 MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > /tmp/kf.log 2>&1; echo "rc $?" >> /tmp/kf.log
ts "kernel_mmv waves 2 $(tail -1 /tmp/kq.log) $(grep -E '[0-9]+ checks' /tmp/kq.log | tail -1)"; grep -E 'FAIL' /tmp/kq.log | head -3
ts "kernel_forward waves 2 $(tail -1 /tmp/kf.log) $(grep -E 'checks,' /tmp/kf.log | tail -1)"; grep -E 'CHECK failed' /tmp/kf.log | head -3
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16 TESTS=tg32x16@d512,tg32x64@d512
for r in 1 2; do for w in 1 2; do for act in f32 bf16; do
  MEMRA_MMV_WG_WAVES=$w MEMRA_ACT_TYPE=$act timeout 120 $B/bin/memra-bench $M --backend cuda --tests $TESTS --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/waves $w $act: /"
done; done; done
MEMRA_DECODE_SIDE=off MEMRA_MMV_WG_WAVES=2 MEMRA_ACT_TYPE=bf16 timeout 120 $B/bin/memra-bench $M --backend cuda --tests $TESTS --reps 3 2>&1 | grep -E "^\| .*tg" | sed "s/^/waves 2 bf16 side off: /"
ts "bench"
for w in 1 2; do
  MEMRA_MMV_WG_WAVES=$w timeout 100 $B/kernels/kernel_mmv > /tmp/kt$w.log 2>&1
  grep -E "^\| (q/o|down|k\|v) [0-9x]+ \| (16|32|64) \|" /tmp/kt$w.log | sed "s/^/waves $w: /"
done
cp /tmp/k*.log $OUT/ 2>/dev/null
ts done
