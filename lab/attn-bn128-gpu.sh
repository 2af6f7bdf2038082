#!/bin/bash
# lab/attn-bn128-gpu.sh NAME check|bench|ncu — two GPU calls (~5 + ~7 min; ncu a third, ~2 min, when a form
# disappoints): the wgmma prefill attention on key tiles of 128, three forms against overlap (64-key tiles, the
# default):
#   overlap128 (lab/attn-bn128.patch): the overlap form with S = Q·Kᵀ 64 × 128 by m64n128k16 and P·V in 8 k16 steps
#     — FlashAttention-3's tile for head_dim 128 — so half the tiles, cp.async waits, block barriers and softmax
#     reductions a key; 186 registers, no spills, 230400 bytes of shared memory at two warpgroups. Its softmax steps
#     take 128 keys: not the mma.sync kernel's bits, checked against f64 (TOL_PREFILL) instead.
#   ws128 (lab/attn-ws.patch, on top of it): overlap128 with a producer warpgroup — its first warp copies each tile by
#     TMA (one KV block × 64 dims a copy, 128-byte swizzle, at most 32 copies a tile: one a lane) onto the stage's
#     full mbarrier, the consumer warps release a stage on its empty mbarrier — and FlashAttention-3's register
#     trade (setmaxnreg: producer 24, consumers 240; no spills). Must give overlap128's bits.
#   ws128pp (the same patch): ws128 with the two consumer warpgroups taking turns to issue their products (named
#     barriers: FlashAttention-3's ping-pong). overlap128's bits too.
# Each: a span alone = the same span in a batch. The 64-key forms' PTX is unchanged by the patches (up to the kernel
# parameter's size). Prepared in the forty-second session (compiled, not run). Pack: l42 (lab/README.md: HEAD with
# lab/mma-nobar.patch, gemv-mma-q8.patch, attn-bn128.patch and attn-ws.patch applied in that order, `make build`,
# `bash lab/final-pack.sh l42`); carry ["gpu/l42.tar.xz", ".whl"].
# check: 1. kernel_attn --prefill-wg with each form as the context's: test_prefill_wg's
#           checks (every form) and the prefill table (its first bf16-KV column is the context's form);
#        2. kernel_forward's fixtures with bf16 activations under each new form, with a tiny head_dim-128 BF16
#           model (MEMRA_EXTRA_MODELS: the engine's own pool, tables and TMA maps; logits vs CPU, greedy, batch,
#           rollback, paged, chunked).
# bench: memra-bench, random 8B BF16, bf16 activations: pp512 / pp4096 at --ubatch 4096 each form, two rounds; then
#        pp4096 at 512 and pp512@d3584 each form once.
# ncu: each form's 4096-token attention launch (memra-bench pp4096 --ubatch 4096, eager, bf16 activations; one
#        launch past the warm-up) under ncu's speed-of-light, warp-state and scheduler sections ($OUT/ncu-FORM.txt).
# Run bench (and ncu) with FORMS="overlap ..." naming only the forms whose checks passed: a form that hangs would
# spend the call's time in memra-bench's timeouts. A form lands (the default, docs/FLAGS.md's row, the kernel's
# header with the figures) if check passes and bench gains.
cd "$(dirname "$0")/.."
PART=${2:?usage: lab/attn-bn128-gpu.sh NAME check|bench|ncu}
[ "$PART" = check ] && PRELUDE_MODEL=0
. lab/gpu-prelude.sh "${1:?usage: lab/attn-bn128-gpu.sh NAME check|bench|ncu}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
FORMS=${FORMS:-overlap overlap128 ws128 ws128pp} # (bench, ncu: name only the forms whose checks passed)
if [ "$PART" = check ]; then
  ( python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1
    python3 tools/make_test_models.py gpu/t128 --tiny --tiny-head-dim 128 --formats bf16 > /tmp/t128.log 2>&1
    echo "rc $?" >> /tmp/t128.log ) &
  MT=$!
  # the first run (overlap the context's form) checks every form; a failure or a hang (timeout: rc 124) there
  # skips the other forms' tables and the producer-warp forms in kernel_forward, to stay inside the call's limit
  KF="overlap128 ws128 ws128pp"
  for w in $FORMS; do
    MEMRA_ATTN_PREFILL_WG=$w timeout $([ $w = overlap ] && echo 180 || echo 100) $B/kernels/kernel_attn --prefill-wg \
      > $OUT/kp-$w.log 2>&1
    rc=$?
    echo "rc $rc" >> $OUT/kp-$w.log
    ts "kernel_attn --prefill-wg ($w): $(tail -1 $OUT/kp-$w.log) $(grep -E '[0-9]+ checks' $OUT/kp-$w.log | tail -1)"
    grep -E 'CHECK failed' $OUT/kp-$w.log | head -6
    [ $w = overlap ] && grep -E "^prefill wgmma (ovl128|ws128)" $OUT/kp-$w.log | cut -c1-150 | head -16
    grep -E '^\| [0-9]' $OUT/kp-$w.log | cut -d'|' -f2-4,15-16,19-20 | sed "s/^/$w: /"
    if [ $w = overlap ] && [ $rc -ne 0 ]; then
      ts "the checks failed: the other forms' tables skipped, kernel_forward under overlap128 only"
      KF=overlap128
      break
    fi
  done
  wait $MT; ts "tiny models: $(tail -1 /tmp/t128.log)"
  for w in $KF; do
    MEMRA_EXTRA_MODELS=gpu/t128/hf-bf16 MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures \
      timeout 60 $B/kernels/kernel_forward > $OUT/kf-$w.log 2>&1
    echo "rc $?" >> $OUT/kf-$w.log
    ts "kernel_forward bf16 activations, $w: $(tail -1 $OUT/kf-$w.log) $(grep -E 'checks,' $OUT/kf-$w.log | tail -1)"
    grep -E 'CHECK failed|near tie' $OUT/kf-$w.log | head -6
    grep -E '^\| (extra|t128|hf-bf16)' $OUT/kf-$w.log | head -3
  done
elif [ "$PART" = ncu ]; then
  wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
  for w in $FORMS; do
    MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 MEMRA_CUDA_GRAPH=0 timeout 120 /usr/local/cuda/bin/ncu \
      --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      -k regex:kernel_attn_prefill_w --launch-skip 40 -c 1 \
      $B/bin/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests pp4096 --ubatch 4096 --reps 1 > $OUT/ncu-$w.txt 2>&1
    ts "ncu $w rc $?"
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issued Ipc|No Eligible|Warp Cycles Per Issued" \
      $OUT/ncu-$w.txt | head -8
  done
else
  wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
  M=/tmp/m8b/hf-bf16
  for r in 1 2; do
    for w in $FORMS; do
      XA="--ubatch 4096" mbench "r$r $w ub4096" $M pp512,pp4096 MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16
    done
  done
  for w in $FORMS; do
    mbench "$w ub512" $M pp4096,pp512@d3584 MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16
  done
fi
ts "######## done"
