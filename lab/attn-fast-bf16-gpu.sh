#!/bin/bash
# lab/attn-fast-bf16-gpu.sh NAME — one GPU call (~4 min after the machine starts), no code change: whether bf16
# activations could take the prefill attention's one-product numerics (MEMRA_ATTN=fast: the pre-scaled q and P each
# rounded once to bf16, as transformers' flash kernels compute a bf16 model; 0.70 against 0.96 ms a layer at 4096
# tokens, ~26 % of a pass in exact mode) without breaking kernel_forward's GPU-vs-CPU rule for bf16 activations
# (logits within 5e-3 of the range, every greedy parting a near tie). The CPU keeps exact attention here, so this
# measures the worst case; if it holds, the change is the default of MEMRA_ATTN under MEMRA_ACT_TYPE=bf16 (one line in
# backend_cuda.c) plus docs; if not, the CPU's attention must round q·scale·log2(e) and P the same way (lab/README.md).
# Runs: kernel_forward fixtures with bf16 activations, MEMRA_ATTN exact then fast (their tables: GPU vs CPU, greedy,
# near ties), memra-bench pp512 / pp4096 (--ubatch 4096 and 512) with bf16 activations, exact and fast alternated
# twice, then fresh servers c=64 × 512 × 256 with bf16 activations, exact and fast.
# Prepare: `make build && lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/attn-fast-bf16-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
for m in exact fast; do
  MEMRA_ACT_TYPE=bf16 MEMRA_ATTN=$m MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $OUT/kf-$m.log 2>&1
  echo "rc $?" >> $OUT/kf-$m.log
  ts "kernel_forward bf16 activations, MEMRA_ATTN=$m: $(tail -1 $OUT/kf-$m.log) $(grep -E 'checks,' $OUT/kf-$m.log | tail -1)"
  grep -E 'CHECK failed|near tie' $OUT/kf-$m.log | head -8; grep -E '^\| ' $OUT/kf-$m.log | cut -d'|' -f2-7
done
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for m in exact fast; do
  MEMRA_ACT_TYPE=bf16 MEMRA_ATTN=$m timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$m ub4096: /"
  MEMRA_ACT_TYPE=bf16 MEMRA_ATTN=$m timeout 60 $B/bin/memra-bench $M --backend cuda --tests pp4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$m ub512: /"
done; done
ts bench
for m in exact fast; do
  mkdir -p $OUT/s$m; MEMRA_ATTN=$m MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=$B RUN_TMO=200 OUT=$OUT/s$m timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs$m.log 2>&1
  echo "$m server rc $? $(grep -E '^\| [0-9]' $OUT/s$m/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s$m
done
ts done
