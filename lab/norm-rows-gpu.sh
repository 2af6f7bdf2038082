#!/bin/bash
# lab/norm-rows-gpu.sh NAME — one GPU call (~3 min after the machine starts): lab/norm-rows.patch, the prefill
# GEMM's input RMSNorm (cuda_rmsnorm_in_gemm, rows ≤ 4096) on 128 threads a row instead of 1024, each thread playing
# eight of kernel_rmsnorm4's with its reduction order (the same bits; 9 rows an SM in flight instead of 2). The
# thirtieth run's profile: 77.6 µs a launch at 4096 tokens, 67 % of its bytes' floor, 5.0 ms of a 119 ms pass.
# Runs: kernel_gemm --quick (check_x_producers, n 1024 and 4096: the claimed norm against kernel_rmsnorm4 bit for
# bit), kernel_forward fixtures, memra-bench pp512 / pp4096 (--ubatch 4096, bf16 activations; pp4096 f32) of NAME and
# NAME/x0 alternated twice, ncu's duration of the norm kernels in one pp4096 pass of each.
# Prepare: `git apply lab/norm-rows.patch && make build && lab/final-pack.sh NAME X0 && git checkout src tests`;
# carry ["gpu/NAME.tar.xz", ".whl"]. Lands if the checks pass and pp4096 is not slower in both rounds with the
# norm's ncu time lower.
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/norm-rows-gpu.sh NAME}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
timeout 150 $B/kernels/kernel_gemm --quick > $OUT/kg.log 2>&1; echo "rc $?" >> $OUT/kg.log
ts "kernel_gemm --quick $(tail -1 $OUT/kg.log) $(grep -E '[0-9]+ checks' $OUT/kg.log | tail -1)"; grep -E 'FAIL|DIFFERENT' $OUT/kg.log | head -5
grep -c "writing the GEMM's parts.*bit-identical" $OUT/kg.log
MEMRA_FORWARD_PART=fixtures timeout 100 $B/kernels/kernel_forward > $OUT/kf.log 2>&1; echo "rc $?" >> $OUT/kf.log
ts "kernel_forward $(tail -1 $OUT/kf.log) $(grep -E 'checks,' $OUT/kf.log | tail -1)"; grep -E 'CHECK failed' $OUT/kf.log | head -3
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for r in 1 2; do for v in new x0; do
  exe=$B/bin/memra-bench; [ $v = x0 ] && exe=$B/x0/memra-bench
  MEMRA_ACT_TYPE=bf16 timeout 60 $exe $M --backend cuda --tests pp512,pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v bf16 ub4096: /"
  timeout 60 $exe $M --backend cuda --tests pp4096 --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$v f32 ub4096: /"
done; done
ts bench
for v in new x0; do
  exe=$B/bin/memra-bench; [ $v = x0 ] && exe=$B/x0/memra-bench
  MEMRA_ACT_TYPE=bf16 timeout 120 /usr/local/cuda/bin/ncu --clock-control none -k regex:rmsnorm \
    --metrics gpu__time_duration.sum,launch__grid_size --csv \
    $exe $M --backend cuda --tests pp4096 --ubatch 4096 --reps 1 > /tmp/ncu$v.csv 2> /tmp/ncu$v.err
  echo "$v ncu rc $?"; python3 lab/ncu_sum.py /tmp/ncu$v.csv pass | grep -E "rmsnorm"
done
ts done
