#!/bin/bash
# lab/attn-wg-overlap-gpu.sh NAME — one GPU call (~6 min): lab/attn-wg-overlap.patch, the wgmma prefill attention's
# third form (MEMRA_ATTN_PREFILL_WG=overlap: FlashAttention-3's intra-warpgroup overlap — tile i's P·V issued with
# tile i + 1's Q·Kᵀ, tile i + 1's mask and softmax statistics computed while P·V runs, O's rescale and P's packing
# after it; 158 registers, no wgmma serialized) against pipe (the default).
#   1. kernel_attn --prefill-wg with the default (pipe) and with overlap: test_prefill_wg's checks — every form the
#      mma.sync kernel's bits, spans alone = in the batch — and the prefill table (the first bf16-KV column is the
#      context's form);
#   2. kernel_forward fixtures with bf16 activations and MEMRA_ATTN_PREFILL_WG=overlap;
#   3. memra-bench pp512 / pp4096 at --ubatch 4096 and pp4096 at 512, bf16 activations, overlap / pipe twice;
#      pp32@d6000 / pp128@d6000 (split spans) with pipe / off twice.
# Also lab/prefill-split-skip.patch (cuda_attn_prefill_split: the backend's launches of split spans only skip the
# wgmma grid; test_prefill_wg's split spans alone take it): the table's 6000 + 32 / + 128 rows' first bf16-KV column
# should fall to the mma.sync column's (0.038 / 0.102 ms against 0.042 / 0.107 in the thirty-second run).
# Lands (overlap the default, docs/FLAGS.md's row) if 1-2 pass and 3 gains; the split skip if 1-2 pass.
# Prepare: `git apply lab/prefill-split-skip.patch lab/attn-wg-overlap.patch && make build && lab/final-pack.sh NAME`;
# carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-wg-overlap-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
for w in pipe overlap; do
  MEMRA_ATTN_PREFILL_WG=$w timeout 200 $B/kernels/kernel_attn --prefill-wg > $OUT/kp-$w.log 2>&1; echo "rc $?" >> $OUT/kp-$w.log
  ts "kernel_attn --prefill-wg ($w): $(tail -1 $OUT/kp-$w.log) $(grep -E '[0-9]+ checks' $OUT/kp-$w.log | tail -1)"; grep -E 'CHECK failed' $OUT/kp-$w.log | head -6
  grep -E "^prefill wgmma" $OUT/kp-$w.log | cut -c1-150
  grep -E '^\| [0-9]' $OUT/kp-$w.log | cut -d'|' -f2-4,15-16,19-22 | sed "s/^/$w: /"
done
MEMRA_ATTN_PREFILL_WG=overlap MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward bf16 activations, overlap: $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed|near tie' $OUT/kf.log | head -6
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for w in overlap pipe; do
  MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$w ub4096: /"; echo
  MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$w ub512: /"; echo
done; done
for r in 1 2; do for w in pipe off; do # split spans: with the split-skip patch pipe should equal off here
  MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 timeout 90 $B/bin/memra-bench $M --backend cuda --tests pp32@d6000,pp128@d6000 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$w deep: /"; echo
done; done
ts done
