#!/bin/bash
# lab/attn-bn128-gpu.sh NAME — one GPU call (~6 min): lab/attn-bn128.patch, the wgmma prefill attention on key tiles
# of 128 (MEMRA_ATTN_PREFILL_WG=overlap128: the overlap form with S = Q·Kᵀ 64 × 128 by m64n128k16 and P·V in 8 k16
# steps — FlashAttention-3's tile for head_dim 128 — so half the tiles, cp.async waits, block barriers and softmax
# reductions a key; 186 registers, no spills, 230400 bytes of shared memory at two warpgroups) against overlap (64-key
# tiles, the default). Its softmax steps take 128 keys: not the mma.sync kernel's bits, checked against f64 instead
# (TOL_PREFILL) and a span alone against the same span in the batch. The 64-key forms' PTX is unchanged by the patch
# (compared here, labels aside). Prepared in the forty-second session (compiled, not run). Build: `git worktree add
# --detach /tmp/wt-bn HEAD`, `git apply lab/attn-bn128.patch` (with lab/mma-nobar.patch too: one pack serves both
# scripts), `cmake -S . -B build -DCMAKE_BUILD_TYPE=Release; make build JOBS=8`, `bash lab/final-pack.sh NAME`
# there, copy gpu/NAME.tar.xz here; carry ["gpu/NAME.tar.xz", ".whl"]. Parts:
#   1. kernel_attn --prefill-wg with overlap and with overlap128 as the context's form: test_prefill_wg's checks
#      (every form; ovl128 against f64) and the prefill table (its first bf16-KV column is the context's form);
#   2. kernel_forward's fixtures, bf16 activations, overlap128;
#   3. memra-bench, random 8B BF16, bf16 activations: pp512 / pp4096 at --ubatch 4096, pp4096 at 512 and
#      pp512@d3584, overlap / overlap128, two rounds.
# Lands (the default, docs/FLAGS.md's row, attn_prefill_wg.cu's header with the figures) if 1-2 pass and 3 gains.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-bn128-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
for w in overlap overlap128; do
  MEMRA_ATTN_PREFILL_WG=$w timeout 200 $B/kernels/kernel_attn --prefill-wg > $OUT/kp-$w.log 2>&1
  echo "rc $?" >> $OUT/kp-$w.log
  ts "kernel_attn --prefill-wg ($w): $(tail -1 $OUT/kp-$w.log) $(grep -E '[0-9]+ checks' $OUT/kp-$w.log | tail -1)"
  grep -E 'CHECK failed' $OUT/kp-$w.log | head -6
  grep -E "^prefill wgmma (ovl128|overlap)" $OUT/kp-$w.log | cut -c1-150 | head -12
  grep -E '^\| [0-9]' $OUT/kp-$w.log | cut -d'|' -f2-4,15-16,19-20 | sed "s/^/$w: /"
done
MEMRA_ATTN_PREFILL_WG=overlap128 MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures timeout 200 \
  $B/kernels/kernel_forward > $OUT/kf.log 2>&1
echo "rc $?" >> $OUT/kf.log
ts "kernel_forward bf16 activations, overlap128: $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"
grep -E 'CHECK failed|near tie' $OUT/kf.log | head -6
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do
  for w in overlap overlap128; do
    XA="--ubatch 4096" mbench "r$r $w ub4096" $M pp512,pp4096 MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16
    mbench "r$r $w ub512" $M pp4096,pp512@d3584 MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16
  done
done
ts "######## done"
