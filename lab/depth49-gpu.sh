#!/bin/bash
# lab/depth49-gpu.sh NAME — one GPU call (~5 min; ~9 on an H200): where a lone Q4_K_M token's depth-4096 cost goes
# (issue 5: tg128@d4096 ≤ 8 % slower than d0; −8.3 / −8.4 % on the H200). 1. the tensor-core decode attention on a
# bf16 cache alone by depth (kernel_attn --one: KV from DRAM; two rows at 2048 — one row at 4096's bytes over twice
# the CTAs; and `warm` — one copy read again from L2 — at 512 and 4096: what the kernel could gain if its keys and
# values were in L2); 2. ncu's detail sections (speed of light, memory, warp stalls, occupancy, scheduler) of the
# split kernel and the combine at depths 4096 and 512; 3. the random 8B Q4_K_M tg128 and tg128@d4096 with the
# attention, the combine or both left out (NAME/sk/memra-bench: a build with lab/skip-kernels.patch; numerics
# meaningless then), the base first and last; 4. on an H200 only, issue
# 5's GGUF rows (gpu-prelude.sh's gguf_rows, as lab/check47-gpu.sh ROWS_ONLY=1: Q8_0 / Q4_K_M pp512 / pp4096 with bf16
# activations, pp4096 at --ubatch 4096, tg128 / tg128@d4096) at the pack's build.
# Carry ["gpu/NAME.tar.xz", ".whl", "lab/depth49-gpu.sh"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/depth49-gpu.sh NAME}"
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
H200=$(echo "$G" | grep -q H200 && echo 1)
FM=$([ -n "$H200" ] && echo q8_0,q4_k_m || echo q4_k_m)
m8q_models $FM
KA=$B/kernels/kernel_attn
one() { ka_one $KA "$@"; } # DEPTH BATCH [warm]
ts "1. the kernel alone (µs a launch incl. combine; one row, bf16 KV, tensor cores, head split auto)"
for dep in 64 512 1024 2048 4096 8192; do one $dep 1; done
# the same bytes as one row at 4096 over twice the CTAs, half the chunks each (64 splits' probe; two waves here)
one 2048 2 | sed 's/^/two rows: /'
for dep in 512 4096; do one $dep 1 warm | sed 's/^/warm: /'; done
ts "2. ncu"
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --section SpeedOfLight \
--section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
--section SchedulerStats"
for dep in 4096 512; do
  MEMRA_ATTN_DECODE=tc timeout 120 $NCU -k regex:attn --launch-skip 400 -c 2 $KA --one $dep 1 bf16 \
    > $O/ncu-$dep.txt 2>&1
  ts "ncu depth $dep rc $?"
  grep -E "^  [a-zA-Z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|\
Registers Per|Block Limit|Grid Size|Stall|L2 Hit|Mem Busy|Max Bandwidth|Eligible|Issued Warp|Dynamic Shared|\
Waves Per SM|No Eligible|Active Warps" $O/ncu-$dep.txt | cut -c1-150 | head -70
done
while ! grep -q "^rc" /tmp/makeq.log 2>/dev/null; do sleep 2; done; ts "m8q $(tail -1 /tmp/makeq.log)"
ts "3. Q4_K_M with kernels left out"
M=/tmp/m8q/llama8b-q4_k_m.gguf
MB=$B/sk/memra-bench TO=100 mbench "base" $M tg128,tg128@d4096 X=0
MB=$B/sk/memra-bench TO=100 mbench "no combine" $M tg128,tg128@d4096 MEMRA_LAB_SKIP=kernel_attn_combine
MB=$B/sk/memra-bench TO=100 mbench "no split kernel" $M tg128,tg128@d4096 MEMRA_LAB_SKIP=kernel_attn_decode
MB=$B/sk/memra-bench TO=100 mbench "neither" $M tg128,tg128@d4096 MEMRA_LAB_SKIP=kernel_attn_decode,kernel_attn_combine
MB=$B/sk/memra-bench TO=100 mbench "base" $M tg128,tg128@d4096 X=0
if [ -n "$H200" ]; then
  ts "4. issue 5's GGUF rows"
  for m in q8_0 q4_k_m; do
    gguf_rows $m tg
  done
fi
ts done
