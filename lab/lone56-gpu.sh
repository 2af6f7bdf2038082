#!/bin/bash
# lab/lone56-gpu.sh NAME — one call (~5 min): the lone-token Q4_K tensor-core GEMV on (sub-block, plane) columns
# (gemv_mma.cu mk_q4k1, MEMRA_LAB_MMA_LONE=off the old form in the same binary, =x16 the new one under bf16
# activations only) and the ring's copies 8 lanes a row (issue_w), at a pack of `make build` whose x0 holds the
# memra-bench and kernel_gemv of the build before the copy change (`lab/final-pack.sh NAME BASE` plus BASE's
# kernel_gemv in NAME/x0). kernel_gemv --quick (its x16 pass checks a lone row's bits against a batch's), kernel_gemv
# --mma x16 (µs alone): new / old form, kernel_forward's fixtures (f32, bf16, bf16 KV), then
# the random 8B Q4_K_M tg128 / tg128x4 with bf16 activations (two rounds) and f32 (one): the original
# code (x0, off) and both changes (new build, on). Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/lone56-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
m8q_models q4_k_m
timeout 200 $B/kernels/kernel_gemv --quick > $OUT/kernel_gemv.log 2>&1
ts "kernel_gemv --quick rc $? $(grep -E 'checks,' $OUT/kernel_gemv.log | tail -1)"
grep -E "CHECK failed" $OUT/kernel_gemv.log | head -5
mma() { # LABEL KERNEL_GEMV LONE [x16]
  MEMRA_LAB_MMA_LONE=$3 timeout 200 $2 --mma $4 > $OUT/mma-$1.log 2>&1
  ts "$1: kernel_gemv --mma $4, lone $3, rc $?"; grep -E "^\| Q4_K" $OUT/mma-$1.log | head -8
}
mma x16-new-on $B/kernels/kernel_gemv on x16
mma x16-new-off $B/kernels/kernel_gemv off x16
kf_fixtures "" 150
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for ra in "1 bf16" "1 f32" "2 bf16"; do
  set -- $ra
  MB=$B/x0/memra-bench TO=90 mbench "r$1 $2 orig" $M tg128,tg128x4 MEMRA_ACT_TYPE=$2 MEMRA_LAB_MMA_LONE=off
  TO=90 mbench "r$1 $2 lone+copy" $M tg128,tg128x4 MEMRA_ACT_TYPE=$2 MEMRA_LAB_MMA_LONE=on
done
ts done
