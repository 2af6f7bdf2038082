#!/bin/bash
# lab/attn-heads-warps-gpu.sh — one GPU call for lab/attn-heads-warps.patch: the rows forms (f32 and tensor-core
# decode attention) merge their CTA's heads in parallel, one warp a head (attn_combine_row_warp: attn_combine_row's
# float operations in its order), instead of one head after the other by the whole CTA. Prepare here:
#   main build copied to /tmp/bNN/m (bin/memra-bench, kernels/kernel_attn), then `git apply lab/attn-heads-warps.patch`,
#   make build, copy to /tmp/bNN/w, strip, tar -cJf gpu/bNN.tar.xz -C /tmp bNN; run with carry ["gpu", ".whl"].
# Lands when: kernel_attn --quick passes with main's 24 digests (the same bits), and the rows form is faster
# (kernel_attn --one 640 64 and 640 32 under MEMRA_ATTN_DECODE=tc and f32; tg64x32 / tg64x64 with a bf16 KV cache).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh ${1:?usage: lab/attn-heads-warps-gpu.sh bNN}
timeout 300 $B/w/kernel_attn --quick > $OUT/ka.log 2>&1; echo "kernel_attn w rc $?"; grep -E "CHECK failed|checks," $OUT/ka.log | head
grep -o "digest [0-9a-f]*" $OUT/ka.log | tr '\n' ' '; echo
for one in "640 64" "640 32" "4096 16"; do for m in tc f32; do for v in m w; do
  echo "one $one $m $v: $(MEMRA_ATTN_DECODE=$m timeout 60 $B/$v/kernel_attn --one $one 2>&1 | grep "^| [0-9]" | grep rows | grep -v never | awk -F'|' '{print $4,$5,$8}' | tr '\n' ';')"
done; done; done
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
for i in 1 2; do for v in m w; do
  echo "== $v: $(MEMRA_KV_TYPE=bf16 timeout 100 $B/$v/bin/memra-bench /tmp/m8b/hf-bf16 --backend cuda --tests tg64x32@d512,tg64x64@d512 --reps 3 2>&1 | grep -E '^\| .*tg|rror' | awk -F'|' '{print $6, $7}' | tr '\n' ';')"
done; done
