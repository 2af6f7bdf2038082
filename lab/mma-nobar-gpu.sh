#!/bin/bash
# lab/mma-nobar-gpu.sh NAME — one GPU call (~2.5 min): lab/mma-nobar.patch, `MEMRA_LAB_MMA_NOBAR=on` — the lone-token
# (and batched) Q4_K mma GEMV without its epilogue's block barrier: the last of a tile's K-split warps to write its
# sums (a shared counter a tile and group parity) sums the tile while the others go on to their next tile; the sums
# have a slot a parity, and a warp waits before writing group gi's until group gi − 2's were summed. The forty-first
# run's source counters put 11.6 % of gate|up's stall samples on that barrier. The same operations in the same order
# a row: the same bits. Prepared in the forty-first session (compiled, not run). Build: `git worktree add --detach
# /tmp/wt-nb HEAD`, `git apply lab/mma-nobar.patch` there, `cmake -S . -B build -DCMAKE_BUILD_TYPE=Release; make build
# JOBS=8`, `bash lab/final-pack.sh NAME` there, copy gpu/NAME.tar.xz here; carry ["gpu/NAME.tar.xz", ".whl"]. Parts:
#   1. kernel_gemv --mma: every check ("mma grid": tiles / resident × barrier / none, the same bits), the table's last
#      column auto against nobar;
#   2. kernel_forward's fixtures with it, f32 and bf16;
#   3. memra-bench Q4_K_M tg128 / x4 / x8 off / on, two rounds;
#   4. ncu's source counters of its kernels for a lone token ($OUT/src.csv; read here with lab/ncu-source-sum.py).
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mma-nobar-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MQ=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 || ts "tiny model failed"
timeout 200 $B/kernels/kernel_gemv --mma > $O/1-gemv.log 2>&1
rc=$?
echo "kernel_gemv rc $rc $(grep -E 'checks,' $O/1-gemv.log | tail -1)"
grep -E "FAIL|DIFFER|mma grid" $O/1-gemv.log | head -12
grep -E "^\| (Q4_K|Q6_K|Q8_0) " $O/1-gemv.log
if [ $rc -eq 124 ]; then # hung (only nobar's waits can): nothing more under nobar, so the call ends in time
  ts "######## kernel_gemv timed out: the rest skipped"; exit 0
fi
for act in f32 bf16; do
  MEMRA_LAB_MMA_NOBAR=on MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 60 $B/kernels/kernel_forward \
    > $O/2-kf-$act.log 2>&1
  echo "kernel_forward nobar $act rc $? $(grep -E 'checks,' $O/2-kf-$act.log | tail -1)"
  grep -E "CHECK failed" $O/2-kf-$act.log | head -4
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
TO=90 mbench_ab nobar /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_LAB_MMA_NOBAR off on
N=/usr/local/cuda/bin/ncu
MEMRA_LAB_MMA_NOBAR=on MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 120 $N --clock-control none \
  --section SourceCounters --section WarpStateStats -k regex:kernel_gemv_mma --launch-skip 96 -c 4 -f -o /tmp/rep \
  $B/bin/memra-bench /tmp/m8q/llama8b-q4_k_m.gguf --backend cuda --tests tg4 --reps 1 > /tmp/ncu-run.log 2>&1
ts "ncu rc $?"
$N -i /tmp/rep.ncu-rep --page source --csv --print-source sass > $O/src.csv 2> /dev/null
ts "src.csv $(wc -l < $O/src.csv) lines"
ts "######## done"
