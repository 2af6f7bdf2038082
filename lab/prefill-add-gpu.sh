#!/bin/bash
# lab/prefill-add-gpu.sh NAME — one GPU call (~2 min after the machine starts): the prefill's residual adds made by
# the RMSNorm after them (lab/prefill-add.patch on cuda_forward.c general_forward; the same bits). kernel_forward's fixtures (GPU vs CPU
# logits, greedy 64, batch 1 vs 16: the prefill path), then memra-bench pp512 / pp4096 at --ubatch 4096 with bf16
# activations, NAME against NAME/x0 (lab/final-pack.sh NAME X0) alternated twice. Carry ["gpu/NAME.tar.xz", ".whl"].
# Prepare: build main, `lab/final-pack.sh X0`; `git apply lab/prefill-add.patch && make build && lab/final-pack.sh NAME X0 &&
# git checkout src`. Lands if kernel_forward reports 0 failed and pp4096 is not slower (expected ~+1.5 %: 2 × 54 µs
# a layer of a 130 ms pass).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/prefill-add-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
MEMRA_FORWARD_PART=fixtures timeout 100 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf.log | head -3
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for r in 1 2; do for k in bin x0; do
  MEMRA_ACT_TYPE=bf16 timeout 60 $B/$k/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$k: /"
done; done
ts done
