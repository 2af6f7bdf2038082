#!/bin/bash
# lab/split-chunks-gpu.sh NAME — one GPU call (~6 min): MEMRA_ATTN_SPLIT_CHUNKS, the fewest chunks of 32 positions a
# decode-attention split takes (attn_decode.cuh dec_row_splits). ncu of a 64-row step at depth 512 (lab/ncu-detail-gpu.sh,
# this session) had the tensor-core rows form issue-bound-ish (0.59 instructions a cycle a scheduler, DRAM 50 %): with
# 32 splits every chunk of a row below depth 1024 is a split of its own, so each 32 positions end in a CTA-wide merge of
# the 4 warps' states and a partial written to L2, then the final combine reads them back. Runs: kernel_attn --quick
# with the default (1 = the old deal) and with 4 (its test_split_chunks covers 1 and 3 besides), kernel_forward's
# fixtures with 4 (GPU vs CPU, greedy 64, batch 1 vs 16); kernel_attn --one tables (64 × 640, 16 × 640, 1 × 128 / 512 /
# 4096) for 1, 2, 4, 8; memra-bench tg32x64@d512 / tg32x16@d512 (bf16 activations) and tg128 / tg128@d4096 for 1 and 4
# alternated twice, 2 and 8 once. NAME/bin + NAME/kernels from lab/final-pack.sh; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/split-chunks-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
timeout 150 $B/kernels/kernel_attn --quick > $OUT/ka1.log 2>&1; echo "rc $?" >> $OUT/ka1.log
ts "kernel_attn --quick sc default $(tail -1 $OUT/ka1.log) $(grep -E '[0-9]+ checks' $OUT/ka1.log | tail -1)"; grep -E 'FAIL' $OUT/ka1.log | head -3
MEMRA_ATTN_SPLIT_CHUNKS=4 timeout 150 $B/kernels/kernel_attn --quick > $OUT/ka4.log 2>&1; echo "rc $?" >> $OUT/ka4.log
ts "kernel_attn --quick sc 4 $(tail -1 $OUT/ka4.log) $(grep -E '[0-9]+ checks' $OUT/ka4.log | tail -1)"; grep -E 'FAIL' $OUT/ka4.log | head -3
MEMRA_ATTN_SPLIT_CHUNKS=4 MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $OUT/kf4.log 2>&1; echo "rc $?" >> $OUT/kf4.log
ts "kernel_forward sc 4 $(tail -1 $OUT/kf4.log) $(grep -E 'checks,' $OUT/kf4.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf4.log | head -3
for sc in 1 2 4 8; do
  for db in "640 64" "640 16" "128 1" "512 1" "4096 1"; do
    MEMRA_ATTN_DECODE=tc MEMRA_ATTN_SPLIT_CHUNKS=$sc timeout 60 $B/kernels/kernel_attn --one $db 2>&1 | grep -E "^\| [0-9]" | grep -E "\| auto tc \| bf16 \| auto" | sed "s/^/sc $sc: /"
  done
done
ts "attn tables"
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for sc in 1 4 1 4 2 8; do
  MEMRA_ATTN_SPLIT_CHUNKS=$sc MEMRA_ACT_TYPE=bf16 timeout 120 $B/bin/memra-bench $M --backend cuda --tests tg32x16@d512,tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/sc $sc bf16: /"
  MEMRA_ATTN_SPLIT_CHUNKS=$sc timeout 120 $B/bin/memra-bench $M --backend cuda --tests tg128,tg128@d4096 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/sc $sc: /"
done
ts done
