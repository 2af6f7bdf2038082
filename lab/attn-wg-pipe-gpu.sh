#!/bin/bash
# lab/attn-wg-pipe-gpu.sh NAME — one GPU call (~6 min): the wgmma prefill attention's two forms (MEMRA_ATTN_PREFILL_WG
# pipe, the default: the next tile's Q·Kᵀ issued before this tile's softmax; serial) against the mma.sync kernel (off).
#   1. kernel_attn --prefill: the prefill checks (both forms the mma.sync kernel's bits, spans alone = in the batch)
#      and the prefill table (bf16 KV: bf16 = pipe, mma.sync, serial columns);
#   2. kernel_forward fixtures with bf16 activations (the defaults);
#   3. memra-bench pp512 / pp4096 at --ubatch 4096 and pp4096 at 512 with bf16 activations, pipe / serial / off twice,
#      and pipe with MEMRA_ATTN_PREFILL_BM=64 (one warpgroup a CTA).
# Prepare: `make build && lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-wg-pipe-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
timeout 300 $B/kernels/kernel_attn --prefill > $OUT/kp.log 2>&1; echo "rc $?" >> $OUT/kp.log
ts "kernel_attn --prefill: $(tail -1 $OUT/kp.log) $(grep -E '[0-9]+ checks' $OUT/kp.log | tail -1)"; grep -E 'CHECK failed' $OUT/kp.log | head -6
grep -E "^prefill wgmma" $OUT/kp.log | cut -c1-150
grep -E '^\| [0-9]' $OUT/kp.log | cut -d'|' -f2-4,15-16,19-22
MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward bf16 activations: $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed|near tie' $OUT/kf.log | head -6
grep -E '^\| ' $OUT/kf.log | cut -d'|' -f2,5,7 | tr '\n' ';' | cut -c1-900; echo
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for w in pipe serial off; do
  MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$w ub4096: /"; echo
  MEMRA_ATTN_PREFILL_WG=$w MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/$w ub512: /"; echo
done; done
MEMRA_ATTN_PREFILL_BM=64 MEMRA_ACT_TYPE=bf16 timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | cut -d'|' -f6-8 | tr '\n' ' ' | sed "s/^/pipe BM 64 ub4096: /"; echo
ts done
