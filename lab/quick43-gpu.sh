#!/bin/bash
# lab/quick43-gpu.sh NAME — one GPU call (~7 min) for a session with little device time left: the forty-third
# session's pack (l43: the l42 stack + lab/gemv-rp.patch) checked and timed where it matters most, in one call.
#   1. kernel_gemv --rp: Q4_K repacked for the tensor-core GEMV (lab/gemv-rp.patch) — its bits against the ring
#      kernel (5 shapes, batches 1 / 3 / 8, depths 1-3), then its table beside the ring kernel (~1-2 min);
#   2. kernel_attn --prefill-wg under overlap: test_prefill_wg's checks of every wgmma prefill form (overlap128,
#      ws128, ws128pp among them) and the prefill table (timeout 150 s: a form that hangs ends it);
#   3. if 2 passed: memra-bench pp4096 --ubatch 4096 on the random 8B BF16, bf16 activations, under overlap /
#      overlap128 / ws128 / ws128pp, one round (the full A/B is lab/attn-bn128-gpu.sh NAME bench).
# Pack: l43 (lab/README.md); carry ["gpu/l43.tar.xz", ".whl"]. Output ≤ 8 files.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/quick43-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $B/kernels/kernel_gemv --rp > $OUT/rp.log 2>&1
echo "rc $?" >> $OUT/rp.log
ts "kernel_gemv --rp: $(tail -2 $OUT/rp.log | tr '\n' ' ')"
grep -E 'CHECK failed|^check rp|^\|' $OUT/rp.log | head -24
MEMRA_ATTN_PREFILL_WG=overlap timeout 150 $B/kernels/kernel_attn --prefill-wg > $OUT/kp.log 2>&1
rc=$?
echo "rc $rc" >> $OUT/kp.log
ts "kernel_attn --prefill-wg: $(tail -2 $OUT/kp.log | tr '\n' ' ')"
grep -E 'CHECK failed' $OUT/kp.log | head -6
grep -E "^prefill wgmma (ovl128|ws128)" $OUT/kp.log | cut -c1-150 | head -12
grep -E '^\| [0-9]' $OUT/kp.log | cut -d'|' -f2-4,15-16,19-20 | head -8
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
if [ $rc -eq 0 ]; then
  for w in overlap overlap128 ws128 ws128pp; do
    XA="--ubatch 4096" TO=90 mbench "$w ub4096" /tmp/m8b/hf-bf16 pp4096 MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16
  done
fi
ts "######## done"
