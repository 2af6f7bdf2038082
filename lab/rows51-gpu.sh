#!/bin/bash
# lab/rows51-gpu.sh NAME — one call on an H200 (~5 min; stops at once on another GPU): issue 5's GGUF rows at the
# current build (pp512 / pp4096 with bf16 activations, pp4096 at --ubatch 4096, tg128 / tg128@d4096: gguf_rows), the
# same tg rows with bf16 activations (the throughput setting, under which the decode attention takes one bf16 product a
# pair: MEMRA_ATTN_DECODE_ONE's default), then the BF16 model's pp4096 at --ubatch 4096 (bf16 activations) and tg128 /
# tg128@d4096; first the decode attention alone (kernel_attn --one: one row at depths 64, 512, 4096, its KV cold, and at
# 4096 in L2). QUICK=1 (~2 min after the start): Q8_0 / Q4_K_M pp4096 at --ubatch 4096 (bf16 activations), tg128 /
# tg128@d4096 only. NAME: a pack of `make build`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
[ -n "${QUICK:-}" ] && PRELUDE_MODEL=0
REQUIRE_GPU=H200 . lab/gpu-prelude.sh "${1:?usage: lab/rows51-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
m8q_models q8_0,q4_k_m
if [ -n "${QUICK:-}" ]; then # the GGUF rows alone: pp4096 at --ubatch 4096 (bf16 activations), tg128 / @d4096
  wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
  for m in q8_0 q4_k_m; do
    XA="--ubatch 4096" TO=90 mbench "$m bf16-act ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 MEMRA_ACT_TYPE=bf16
    TO=90 mbench "$m" /tmp/m8q/llama8b-$m.gguf tg128,tg128@d4096
  done
  ts done; exit 0
fi
for a in "64 1 cold" "512 1 cold" "4096 1 cold" "4096 1 warm"; do
  echo "kernel_attn --one $a: $(ka_one $B/kernels/kernel_attn $a | cut -d'|' -f2,3,7,8,9)"
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for m in q8_0 q4_k_m; do
  gguf_rows $m tg
  TO=90 mbench "$m bf16-act" /tmp/m8q/llama8b-$m.gguf tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16
done
rm -rf /tmp/m8q
wait $MK; ts "m8b $(tail -1 $OUT/make.log)"
XA="--ubatch 4096" mbench "bf16 bf16-act ub4096" /tmp/m8b/hf-bf16 pp4096 MEMRA_ACT_TYPE=bf16
mbench "bf16" /tmp/m8b/hf-bf16 tg128,tg128@d4096
mbench "bf16 bf16-act" /tmp/m8b/hf-bf16 tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16
ts done
