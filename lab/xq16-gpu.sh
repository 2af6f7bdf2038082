#!/bin/bash
# lab/xq16-gpu.sh NAME — one call (~5 min): the decode GEMVs' prepared activations in 16 bits (lab/xq16.patch:
# X0 = 0, the dp4a kernels skip that plane's loads and dp4a; MEMRA_LAB_XQ16 at build time) against the build before
# (NAME/x0/memra-bench): kernel_gemv --quick and kernel_forward's fixtures (f32, bf16) of the patched build, then
# the random 8B Q8_0 / Q4_K_M tg128 and tg128x8 alternated, bf16 then f32 activations. NAME: `make build` with the
# patch, packed by `lab/final-pack.sh NAME main`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/xq16-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
m8q_models q8_0,q4_k_m
timeout 120 $B/kernels/kernel_gemv --quick > $OUT/kg.log 2>&1
ts "kernel_gemv --quick rc $? $(grep -E 'checks,' $OUT/kg.log | tail -1)"; grep -E "CHECK failed" $OUT/kg.log | head -5
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1
for act in f32 bf16; do
  MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures timeout 120 $B/kernels/kernel_forward > $OUT/kf-$act.log 2>&1
  ts "kernel_forward $act rc $? $(grep -E 'checks,' $OUT/kf-$act.log | tail -1)"; grep -E "CHECK failed" $OUT/kf-$act.log | head -5
  grep -E '^\| llamaq' $OUT/kf-$act.log | cut -d'|' -f2,5,7 | tr '\n' ';'; echo
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for act in bf16 f32; do
  for m in q8_0 q4_k_m; do
    for r in 1 2; do
      MB=$B/x0/memra-bench TO=90 mbench "r$r $m $act before" /tmp/m8q/llama8b-$m.gguf tg128,tg128x8 MEMRA_ACT_TYPE=$act
      TO=90 mbench "r$r $m $act xq16" /tmp/m8q/llama8b-$m.gguf tg128,tg128x8 MEMRA_ACT_TYPE=$act
    done
  done
done
ts done
