#!/bin/bash
# lab/decode-land-gpu.sh NAME — one GPU call (~5 min): a change to the decode attention checked and timed against
# the pack's baseline (NAME/x0/{memra-bench,kernel_attn}: lab/final-pack.sh NAME BASE, then BASE's kernel_attn copied
# into NAME/x0). kernel_attn --decode-tc for both (the tensor-core decode checks; the digests must be equal when the
# change keeps every operation), kernel_attn --one (one row at 512 / 4096, the tensor-core kernels on a bf16 cache),
# kernel_forward's fixtures; the random 8B Q4_K_M and Q8_0 tg128, tg128@d512, tg128@d4096 base and new alternated
# twice (BF16=1: the random 8B BF16 too, once; QUICK=1: every kernel_attn check of the new build too); on an H200
# issue 5's GGUF pp4096 at --ubatch 4096 (bf16 activations) at the new build.
# Carry ["gpu/NAME.tar.xz", ".whl", "lab/decode-land-gpu.sh"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/decode-land-gpu.sh NAME}"
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log
  if [ -n "${BF16:-}" ]; then
    python3 tools/make_test_models.py /tmp/m8b --formats bf16 > /tmp/make.log 2>&1; echo "rc $?" >> /tmp/make.log
  fi ) &
MQ=$!
for v in base new; do
  KA=$([ $v = base ] && echo $B/x0/kernel_attn || echo $B/kernels/kernel_attn)
  timeout 100 $KA --decode-tc > /tmp/dtc-$v.log 2>&1
  ts "$v kernel_attn --decode-tc rc $? $(grep -E '[0-9]+ checks' /tmp/dtc-$v.log | tail -1)"
  grep -o "digest [0-9a-f]*" /tmp/dtc-$v.log > /tmp/dig-$v.txt
  for db in "512 1" "4096 1"; do
    ka_one $KA $db | sed "s/^/$v: /"
  done
done
echo "digests new vs base: $(wc -l < /tmp/dig-new.txt) lines, $(diff /tmp/dig-base.txt /tmp/dig-new.txt > /dev/null && echo same || echo DIFFERENT)"
cp /tmp/dtc-new.log $O/
if [ -n "${QUICK:-}" ]; then # every kernel_attn check (decode, prefill, bf16 KV, split deals, ...) of the new build
  timeout 200 $B/kernels/kernel_attn --quick > $O/ka-quick.log 2>&1
  ts "new kernel_attn --quick rc $? $(grep -E '[0-9]+ checks' $O/ka-quick.log | tail -1)"
fi
kf_fixtures 1- 150
while ! grep -q "^rc" /tmp/makeq.log 2>/dev/null; do sleep 2; done; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for m in q4_k_m q8_0; do
    for v in base new; do
      MB=$([ $v = base ] && echo $B/x0/memra-bench || echo $B/bin/memra-bench)
      MB=$MB TO=100 mbench "r$r $m $v" /tmp/m8q/llama8b-$m.gguf tg128,tg128@d512,tg128@d4096
    done
  done
done
ts "gguf done"
if [ -n "${BF16:-}" ]; then
  wait $MQ; ts "m8b $(tail -1 /tmp/make.log)"
  for v in base new; do
    MB=$([ $v = base ] && echo $B/x0/memra-bench || echo $B/bin/memra-bench)
    MB=$MB TO=100 mbench "bf16 $v" /tmp/m8b/hf-bf16 tg128,tg128@d4096
  done
fi
if echo "$G" | grep -q H200; then
  for m in q8_0 q4_k_m; do
    XA="--ubatch 4096" TO=90 mbench "$m bf16-act ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 MEMRA_ACT_TYPE=bf16
  done
fi
ts done
