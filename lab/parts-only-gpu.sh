#!/bin/bash
# lab/parts-only-gpu.sh NAME X0 — one GPU call (~7 min after the machine starts): lab/parts-only.patch on top of the
# landed prefill producers (MEMRA_GEMM_X_PRODUCERS): a producer that claimed the GEMM's input (the RMSNorms before
# q|k|v and gate|up, the GLU, the attention output's bf16 rounding) writes the GEMM's bf16 parts only, not its f32
# output as well (nothing but that GEMM reads it; cuda_forward.c asserts cuda_gemm_x_ready before such a GEMM), and
# the GLU and rounding producers four elements a thread. At 4096 tokens ~430 MB a layer less written (~100 µs of a
# ~4 ms layer at 4.3 TB/s). The same bits. X0 is main's build (the landed producers + the swizzled decode ring):
# its kernel_forward fixtures and a final figure set (tg128, tg32x64@d512, the server at c=64 with
# MEMRA_ATTN_SPLIT_CHUNKS 2 and 4) run here too.
# Runs: NAME's kernel_gemm --quick (check_x_producers: GEMM and residual bit-identical with the parts only),
# kernel_forward fixtures of NAME (producers on, off) and X0, memra-bench pp512 / pp4096 (--ubatch 4096, bf16
# activations; pp4096 f32) of NAME and NAME/x0 alternated twice (pp512 / pp4096 at the default ubatch once), X0's
# tg128 / tg128@d4096 / tg32x64@d512, then fresh servers c=64 × 512 × 256 (bf16 activations): NAME (with c=1
# first), X0, X0 with MEMRA_ATTN_SPLIT_CHUNKS=4, NAME with 4.
# Prepare: build main, `lab/final-pack.sh X0`; `git apply lab/parts-only.patch && make build &&
# lab/final-pack.sh NAME X0 && git checkout src tests`; carry ["gpu/NAME.tar.xz", "gpu/X0.tar.xz", ".whl"].
# Lands if every check passes and pp4096 (bf16 and f32 activations) is faster than x0's in both rounds.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/parts-only-gpu.sh NAME X0}"
X0=${2:?X0}; tar -xJf "gpu/$X0.tar.xz" -C /tmp
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
timeout 150 $B/kernels/kernel_gemm --quick > $OUT/kg.log 2>&1; echo "rc $?" >> $OUT/kg.log
ts "kernel_gemm --quick $(tail -1 $OUT/kg.log) $(grep -E '[0-9]+ checks' $OUT/kg.log | tail -1)"; grep -E 'FAIL|DIFFERENT' $OUT/kg.log | head -5
grep -c "writing the GEMM's parts.*bit-identical" $OUT/kg.log
for v in on off x0; do
  exe=$B/kernels/kernel_forward; [ $v = x0 ] && exe=/tmp/$X0/kernels/kernel_forward
  MEMRA_GEMM_X_PRODUCERS=$([ $v = off ] && echo off || echo on) MEMRA_FORWARD_PART=fixtures timeout 100 $exe > $OUT/kf$v.log 2>&1; echo "rc $?" >> $OUT/kf$v.log
  ts "kernel_forward $v $(tail -1 $OUT/kf$v.log) $(grep -E 'checks,' $OUT/kf$v.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf$v.log | head -3
done
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do
  for v in new x0; do
    exe=$B/bin/memra-bench; [ $v = x0 ] && exe=$B/x0/memra-bench
    MEMRA_ACT_TYPE=bf16 timeout 60 $exe $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v bf16 ub4096: /"
    timeout 60 $exe $M --backend cuda --tests pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v f32 ub4096: /"
    [ $r = 1 ] && MEMRA_ACT_TYPE=bf16 timeout 60 $exe $M --backend cuda --tests pp512,pp4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v bf16 ub512: /"
  done
done
ts "pp bench"
timeout 90 /tmp/$X0/bin/memra-bench $M --backend cuda --tests tg128,tg128@d4096 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$X0: /"
MEMRA_ACT_TYPE=bf16 timeout 90 /tmp/$X0/bin/memra-bench $M --backend cuda --tests tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$X0 bf16: /"
ts "tg bench"
srv() { # name build sc tests
  mkdir -p $OUT/s$1; [ "$4" = 64x512x256 ] && export NO_BENCH=1 || unset NO_BENCH; MEMRA_ATTN_SPLIT_CHUNKS=$3 MEMRA_ACT_TYPE=bf16 BUILD=/tmp/$2 RUN_TMO=200 OUT=$OUT/s$1 timeout 170 bench/run-server.sh $M "$4" > /tmp/rs$1.log 2>&1
  echo "$1 server rc $? $(grep -E '^\| [0-9]' $OUT/s$1/server-load.md | cut -d"|" -f5,10-15 | tr '\n' ';')"
  grep -h -E "tg128" $OUT/s$1/bench-tg128.md 2>/dev/null | tail -1
}
srv new $1 2 "1x512x256 64x512x256"
srv x0 $X0 2 "64x512x256"
srv x0sc4 $X0 4 "64x512x256"
srv newsc4 $1 4 "64x512x256"
ts done
