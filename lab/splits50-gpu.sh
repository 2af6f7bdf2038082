#!/bin/bash
# lab/splits50-gpu.sh NAME PART — the 64-split decode attention (lab/splits64.patch on main 0edd45e: a row past 2048
# positions dealt over 64 splits of 2 chunks instead of 32 of 4; MEMRA_ATTN_SPLITS=32 the deal before) checked and
# timed against the pack's baseline (NAME/x0/{memra-bench,kernel_attn}: lab/final-pack.sh NAME BASE, then BASE's
# kernel_attn copied into NAME/x0), in two calls on one warm machine. PART 1 (~6 min on an H100): kernel_attn --one
# base / new by depth and batch (one row, 4 and 8 rows, the rows form at 32; the new build also with
# MEMRA_ATTN_TC_Q=regs: the register kernel on the 64-split grid), --decode-tc digests (the rows past 2048 positions
# change), every kernel_attn check of the new build, kernel_forward's fixtures; the random 8B Q8_0 / Q4_K_M made
# meanwhile. PART 2 (~5 min, after 1 on the same machine): Q4_K_M and Q8_0 tg128 at depths 0 / 512 / 4096 base and
# new alternated twice, the new build's 32-split deal and register kernel at depth 4096; on an H200 issue 5's GGUF
# prefill rows. Carry ["gpu/NAME.tar.xz", ".whl", "lab/splits50-gpu.sh"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/splits50-gpu.sh NAME PART}"
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
# one V DEPTH BATCH [VAR=value]: kernel_attn --one's row of the launcher's rule, tensor cores, bf16 KV
one() {
  local v=$1 ka; shift
  ka=$([ $v = base ] && echo $B/x0/kernel_attn || echo $B/kernels/kernel_attn)
  env MEMRA_ATTN_DECODE=tc ${3:-} timeout 60 $ka --one $1 $2 bf16 2>&1 | grep -E "^\| [0-9]" |
    grep "auto tc | bf16 | auto" | cut -d'|' -f2,3,8,9 | sed "s/^/$v ${3:-}: /"
}
if [ "${2:?PART 1 or 2}" = 1 ]; then
  ( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1
    echo "rc $?" >> /tmp/makeq.log ) &
  ts "1. kernel_attn --one (depth | batch | us | GB/s)"
  for r in 1 2; do
    for db in "64 1" "512 1" "2048 1" "2112 1" "4096 1" "8192 1" "4096 4" "4096 8" "4096 32"; do
      for v in base new; do one $v $db; done
    done
  done
  for db in "2112 1" "4096 1" "8192 1"; do one new $db MEMRA_ATTN_TC_Q=regs; done
  for v in base new; do
    KA=$([ $v = base ] && echo $B/x0/kernel_attn || echo $B/kernels/kernel_attn)
    timeout 100 $KA --decode-tc > /tmp/dtc-$v.log 2>&1
    ts "$v kernel_attn --decode-tc rc $? $(grep -E '[0-9]+ checks' /tmp/dtc-$v.log | tail -1)"
    grep -o "depths [0-9.]*.*digest [0-9a-f]*" /tmp/dtc-$v.log > /tmp/dig-$v.txt
  done
  n=$(diff /tmp/dig-base.txt /tmp/dig-new.txt | grep -c '^>')
  echo "digests new vs base: $(wc -l < /tmp/dig-new.txt) lines, $n differ"
  diff /tmp/dig-base.txt /tmp/dig-new.txt | grep "^>" | cut -c1-60 | sort | uniq -c | head -8
  timeout 240 $B/kernels/kernel_attn --quick > $O/ka-quick.log 2>&1
  ts "new kernel_attn --quick rc $? $(grep -E '[0-9]+ checks' $O/ka-quick.log | tail -1)"
  grep -E "CHECK failed" $O/ka-quick.log | head -5
  kf_fixtures 1- 150
  while ! grep -q "^rc" /tmp/makeq.log 2>/dev/null; do sleep 2; done; ts "m8q $(tail -1 /tmp/makeq.log)"
else
  ls /tmp/m8q/*.gguf > /dev/null || exit 4
  for r in 1 2; do
    for m in q4_k_m q8_0; do
      for v in base new; do
        MB=$([ $v = base ] && echo $B/x0/memra-bench || echo $B/bin/memra-bench)
        MB=$MB TO=100 mbench "r$r $m $v" /tmp/m8q/llama8b-$m.gguf tg128,tg128@d512,tg128@d4096
      done
    done
  done
  TO=60 mbench "q4_k_m new splits 32" /tmp/m8q/llama8b-q4_k_m.gguf tg128@d4096 MEMRA_ATTN_SPLITS=32
  TO=60 mbench "q4_k_m new regs" /tmp/m8q/llama8b-q4_k_m.gguf tg128@d4096 MEMRA_ATTN_TC_Q=regs
  if echo "$G" | grep -q H200; then
    for m in q8_0 q4_k_m; do gguf_rows $m; done
  fi
fi
ts done
