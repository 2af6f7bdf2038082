#!/bin/bash
# lab/prefill-fuse-gpu.sh NAME — one GPU call (~5 min after the machine starts): lab/prefill-fuse.patch, the prefill's
# element-wise work folded into the kernels beside it, the same bits: (1) each residual add made by the RMSNorm after
# it (cuda_forward.c general_forward: cuda_rmsnorm_in with the residual; the last layer's add stays), (2) the GEMM's
# bf16 parts of x written by the kernel that makes x (cuda_gemm_x_claim: the RMSNorms before q|k|v and gate|up, the
# GLU before down, the bf16 rounding of the attention's output before o) instead of kernel_x_split_bf16 — toggled by
# MEMRA_GEMM_X_PRODUCERS=off. The twenty-ninth run's prefill breakdown (bench/RESULTS.md): adds 2 × 54 µs, splits
# 24 + 24 + 24 + 82 µs a layer of a 4.03 ms 4096-token layer (~6 % together with bf16 activations).
# Runs: kernel_gemm --quick (its check_x_producers: every producer's output, residual and GEMM bit-identical to the
# plain kernel + the GEMM's own split, three modes, f32 / bf16 activations, BF16 and Q4_K), kernel_forward fixtures
# with the producers on and off (GPU vs CPU, greedy 64, batch 16 = alone), then memra-bench pp512 / pp4096 (--ubatch
# 4096, bf16 activations; and pp4096 with f32 activations) for NAME, NAME with MEMRA_GEMM_X_PRODUCERS=off and
# NAME/x0 (main) alternated twice, and fresh servers at c=64 × 512 × 256 (bf16 activations) for NAME and x0's
# server (NAME/x0 holds memra-bench only: pass X0 as a second pack to compare servers).
# Prepare: build main and `lab/final-pack.sh X0`; `git apply lab/prefill-fuse.patch && make build &&
# lab/final-pack.sh NAME X0 && git checkout src tests`; carry ["gpu/NAME.tar.xz", "gpu/X0.tar.xz", ".whl"].
# Lands if every check passes and pp4096 is faster with the producers than without and than x0 in both rounds.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/prefill-fuse-gpu.sh NAME [X0]}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
timeout 150 $B/kernels/kernel_gemm --quick > $OUT/kg.log 2>&1; echo "rc $?" >> $OUT/kg.log
ts "kernel_gemm --quick $(tail -1 $OUT/kg.log) $(grep -E '[0-9]+ checks' $OUT/kg.log | tail -1)"; grep -E 'FAIL|DIFFERENT' $OUT/kg.log | head -5
grep -c "writing the GEMM's parts.*bit-identical" $OUT/kg.log
for p in on off; do
  MEMRA_GEMM_X_PRODUCERS=$p MEMRA_FORWARD_PART=fixtures timeout 100 $B/kernels/kernel_forward > $OUT/kf$p.log 2>&1; echo "rc $?" >> $OUT/kf$p.log
  ts "kernel_forward producers $p $(tail -1 $OUT/kf$p.log) $(grep -E 'checks,' $OUT/kf$p.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf$p.log | head -3
done
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do
  for v in on off x0; do
    exe=$B/bin/memra-bench; [ $v = x0 ] && exe=$B/x0/memra-bench
    MEMRA_GEMM_X_PRODUCERS=$([ $v = off ] && echo off || echo on) MEMRA_ACT_TYPE=bf16 timeout 60 $exe $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v bf16: /"
    MEMRA_GEMM_X_PRODUCERS=$([ $v = off ] && echo off || echo on) timeout 60 $exe $M --backend cuda --tests pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v f32: /"
  done
done
ts bench
if [ -n "${2:-}" ]; then
  tar -xJf "gpu/$2.tar.xz" -C /tmp
  for k in $1 $2; do
    mkdir -p $OUT/s$k; MEMRA_ACT_TYPE=bf16 BUILD=/tmp/$k RUN_TMO=200 OUT=$OUT/s$k timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs$k.log 2>&1
    echo "$k server rc $? $(grep '| 64 |' $OUT/s$k/server-load.md | tail -1 | cut -d'|' -f10-13)"; rm -rf $OUT/s$k
  done
fi
ts done
