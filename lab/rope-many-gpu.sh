#!/bin/bash
# lab/rope-many-gpu.sh NAME — one GPU call (~4 min after the machine starts): lab/rope-many.patch, the RoPE + KV
# write kernel (kernel_qk_rope_kv) with four tokens a block from 256 tokens (head dims ≤ 128; a warp loads its head's
# values of all four before working on the first, 64 registers, 4 blocks an SM) and k / v no longer written back (only
# the cache rows were read). The thirtieth run's profile had it at 105 µs a layer of a 4096-token pass (~40 % of its
# bytes' floor). The same bits: kernel_forward's new test_rope_many (301 tokens in one launch = two launches below the
# bound, six shapes, f32 and bf16 caches) and its fixtures (GPU vs CPU, greedy 64, batch 16 = alone).
# Runs: kernel_forward fixtures, memra-bench pp512 / pp4096 (--ubatch 4096, bf16 activations; pp4096 f32; pp4096 at
# the default ubatch, bf16) and tg128 / tg32x64@d512 of NAME and NAME/x0 alternated twice, ncu's duration of the
# RoPE kernel in one pp4096 pass of each, then fresh servers c=64 × 512 × 256 (bf16 activations) of both.
# Prepare: `git apply lab/rope-many.patch && make build && lab/final-pack.sh NAME X0 && git checkout src tests`
# (X0: main's pack); carry ["gpu/NAME.tar.xz", "gpu/X0.tar.xz", ".whl"].
# Lands if the checks pass, pp4096 is faster in both rounds and tg128 / tg32x64@d512 not slower.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/rope-many-gpu.sh NAME X0}"
X0=${2:?X0}; tar -xJf "gpu/$X0.tar.xz" -C /tmp
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
MEMRA_FORWARD_PART=fixtures timeout 100 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf.log | head -3
grep -E "rope of" $OUT/kf.log
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do
  for v in new x0; do
    exe=$B/bin/memra-bench; [ $v = x0 ] && exe=$B/x0/memra-bench
    MEMRA_ACT_TYPE=bf16 timeout 60 $exe $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v bf16 ub4096: /"
    timeout 60 $exe $M --backend cuda --tests pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v f32 ub4096: /"
    MEMRA_ACT_TYPE=bf16 timeout 60 $exe $M --backend cuda --tests pp4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v bf16 ub512: /"
    timeout 60 $exe $M --backend cuda --tests tg128 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$v: /"
    MEMRA_ACT_TYPE=bf16 timeout 60 $exe $M --backend cuda --tests tg32x64@d512 --reps 3 2>&1 | grep -E "^\| .*tg|rror" | sed "s/^/$v bf16: /"
  done
done
ts bench
for v in new x0; do
  exe=$B/bin/memra-bench; [ $v = x0 ] && exe=$B/x0/memra-bench
  MEMRA_ACT_TYPE=bf16 timeout 120 /usr/local/cuda/bin/ncu --clock-control none -k regex:qk_rope \
    --metrics gpu__time_duration.sum,launch__grid_size --csv \
    $exe $M --backend cuda --tests pp4096 --ubatch 4096 --reps 1 > /tmp/ncu$v.csv 2> /tmp/ncu$v.err
  echo "$v ncu rc $?"; python3 lab/ncu_sum.py /tmp/ncu$v.csv pass | grep -E "rope|kernels"
done
ts ncu
for k in $1 $X0; do
  mkdir -p $OUT/s$k; MEMRA_ACT_TYPE=bf16 NO_BENCH=1 BUILD=/tmp/$k RUN_TMO=200 OUT=$OUT/s$k timeout 150 bench/run-server.sh $M "64x512x256" > /tmp/rs$k.log 2>&1
  echo "$k server rc $? $(grep -E '^\| [0-9]' $OUT/s$k/server-load.md | cut -d'|' -f5,10-15 | tr '\n' ';')"; rm -rf $OUT/s$k
done
ts done
