#!/bin/bash
# lab/pipe49-gpu.sh NAME — one GPU call (~8 min): three steps of the tensor-core decode attention (attn_decode_tc.cu;
# each keeps the bits) checked and timed against the base (NAME/x0): A (NAME/x4) each pair's KV row looked up a step
# before its copies (tc_row), A+B (NAME/x5) also the next chunk's scores beside this chunk's update
# (MEMRA_ATTN_TC_PIPE), A+B+C (the pack's build) also whole accumulator tiles (MEMRA_ATTN_TC_WHOLE).
# kernel_attn --decode-tc digests (must be equal), kernel_attn --one (one row of a bf16 cache at 512 / 4096, 4 rows
# at 512), the new build's kernel_forward fixtures, random 8B Q4_K_M tg128 / tg128@d512 / tg128@d4096 of the four
# alternated twice, Q8_0 base and new once. NAME/x0, x4, x5: memra-bench and kernel_attn of each.
# Carry ["gpu/NAME.tar.xz", ".whl", "lab/pipe49-gpu.sh"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/pipe49-gpu.sh NAME}"
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1
  echo "rc $?" >> /tmp/makeq.log ) &
kab() { case $1 in base) echo $B/x0/$2 ;; new) echo $B/${3:-bin}/$2 ;; A) echo $B/x4/$2 ;; AB) echo $B/x5/$2 ;; esac; }
for v in base A AB new; do
  KA=$(kab $v kernel_attn kernels)
  timeout 100 $KA --decode-tc > /tmp/dtc-$v.log 2>&1
  ts "$v kernel_attn --decode-tc rc $? $(grep -E '[0-9]+ checks' /tmp/dtc-$v.log | tail -1)"
  grep -o "digest [0-9a-f]*" /tmp/dtc-$v.log > /tmp/dig-$v.txt
  for db in "512 1" "4096 1" "512 4"; do
    MEMRA_ATTN_DECODE=tc timeout 60 $KA --one $db bf16 2>&1 | grep -E "^\| [0-9]" | grep -E "auto tc \| bf16 \| auto" |
      sed "s/^/$v: /"
  done
done
for v in A AB new; do
  echo "digests $v vs base: $(wc -l < /tmp/dig-$v.txt) lines, $(diff /tmp/dig-base.txt /tmp/dig-$v.txt > /dev/null &&
    echo same || echo DIFFERENT)"
done
cp /tmp/dtc-new.log $O/
kf_fixtures 1- 150
while ! grep -q "^rc" /tmp/makeq.log 2>/dev/null; do sleep 2; done; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for v in base A AB new; do
    MB=$(kab $v memra-bench) TO=100 mbench "r$r q4_k_m $v" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128@d512,tg128@d4096
  done
done
for v in base new; do
  MB=$(kab $v memra-bench) TO=100 mbench "q8_0 $v" /tmp/m8q/llama8b-q8_0.gguf tg128,tg128@d4096
done
ts done
