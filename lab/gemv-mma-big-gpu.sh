#!/bin/bash
# lab/gemv-mma-big-gpu.sh NAME — one GPU call (~4 min; BUDGET=seconds, default 300) for lab/gemv-mma-big.patch:
# `MEMRA_GEMV_MMA=big` runs Q4_K on the int8 tensor cores only for matrices of ≥ 8192 rows (the 8B's gate|up), the
# rest (q|k|v, o, Q4_K downs) on the dp4a kernels at K split 4, which the thirty-ninth run's kernel_gemv --ks measured
# faster for a lone token (H100: q/o 5.67 against 6.21 µs, qkv 7.97 / 8.87, down 14.75 / 17.98; gate+up 30.86 /
# 28.67, the tensor cores' win). Build: `git worktree add --detach /tmp/wt-gu HEAD`, `git apply lab/gemv-mma-big.patch`
# there, `make build JOBS=8`, then from there `bash lab/final-pack.sh NAME`, copy gpu/NAME.tar.xz here; carry
# ["gpu/NAME.tar.xz", ".whl"]. Parts:
#   1. kernel_forward's fixtures with MEMRA_GEMV_MMA=big, f32 and bf16 (a row alone = in a batch: the tiny models'
#      Q4_K matrices are under 8192 rows, so this checks the dp4a side only; kernel_gemv covers both kernels);
#   2. memra-bench on the random 8B Q4_K_M: tg128, tg128x4, tg128x8 with on / big / off, two rounds.
# Land only with the rule as a per-weight flag (gate|up's, fused or not), not by rows (cuda_ops.h's LAB note).
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemv-mma-big-gpu.sh NAME}"
left() { echo $(( ${BUDGET:-300} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MQ=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
if part "1 checks" 60; then
  for act in f32 bf16; do
    MEMRA_GEMV_MMA=big MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $O/1-kf-$act.log 2>&1
    echo "kernel_forward big $act rc $? $(grep -E 'checks,' $O/1-kf-$act.log | tail -1)"; grep -E "CHECK failed" $O/1-kf-$act.log | head -4
  done
fi
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
if part "2 tg, MEMRA_GEMV_MMA on / big / off" 60; then
  for r in 1 2; do
    for m in on big off; do
      TO=90 mbench "r$r mma $m" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_GEMV_MMA=$m
    done
  done
fi
ts "######## done"
