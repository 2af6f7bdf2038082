#!/bin/bash
# lab/xe60-gpu.sh NAME — one call (~5 min) at the pack gpu/NAME (main + lab/xe60.patch: `make build`, then
# `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]):
# 1. lab/rope59-gpu.sh's checks of the landed RoPE epilogue (kernel_gemv --quick; kernel_forward's fixtures under
#    MEMRA_DECODE_ROPE=all with the tiny head_dim-128 Q4_K_M and Q8_0 beside them, f32 / bf16);
# 2. the patch: a lone vector's activations loaded before the stage wait of the tensor-core GEMV and the staged dp4a one (MEMRA_LAB_XE=1;
#    the same operations, so the same bits): kernel_gemv --quick and kernel_forward's fixtures under it, kernel_gemv --mma
#    (µs a launch) 0 / 1, then the random 8B Q4_K_M and Q8_0 tg128 / tg128@d4096 0 / 1 (two rounds f32, one bf16);
# 3. the register dp4a GEMV (the layers' K split 4) asking for a lone vector's first weights before its PDL wait
#    (MEMRA_LAB_PW=1, same bits): Q8_0 0 / 1 two rounds f32, one bf16; Q4_K_M (its Q6_K v and downs) one round;
# 4. MEMRA_DECODE_ROPE off / on (Q4_K_M) and off / all (Q8_0), two rounds f32, one bf16.
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/xe60-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gguf_models q4_k_m,q8_0
kg_quick 200
grep -E "rope epilogue" $OUT/kernel_gemv.log | head -3
cp $OUT/kernel_gemv.log $OUT/kernel_gemv-base.log
kg_quick 200 MEMRA_LAB_XE=1 MEMRA_LAB_PW=1
wait $MT; ts "tiny models: $(tail -1 /tmp/t128.log)"
for act in f32 bf16 f32xe; do
  env MEMRA_EXTRA_MODELS=gpu/t128/llama8b-q4_k_m.gguf,gpu/t128/llama8b-q8_0.gguf MEMRA_ACT_TYPE=${act%xe} \
    MEMRA_LAB_XE=$([ $act = f32xe ] && echo 1 || echo 0) MEMRA_LAB_PW=$([ $act = f32xe ] && echo 1 || echo 0) \
    MEMRA_DECODE_ROPE=all MEMRA_FORWARD_PART=fixtures timeout 90 $B/kernels/kernel_forward > $OUT/2-kf-$act.log 2>&1
  echo "kernel_forward $act rc $? $(grep -E 'checks,' $OUT/2-kf-$act.log | tail -1)"
  grep -E "CHECK failed" $OUT/2-kf-$act.log | head -4
  grep -E "^\| llama8b-" $OUT/2-kf-$act.log | head -4
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
TO=60 mbench_ab "q4_k_m f32 XE" $M tg128,tg128@d4096 MEMRA_LAB_XE 0 1
for x in 0 1; do TO=60 mbench "q4_k_m bf16 XE $x" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_XE=$x; done
M=/tmp/m8q/llama8b-q8_0.gguf
TO=60 mbench_ab "q8_0 f32 XE" $M tg128,tg128@d4096 MEMRA_LAB_XE 0 1
for x in 0 1; do TO=60 mbench "q8_0 bf16 XE $x" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_XE=$x; done
TO=60 mbench_ab "q8_0 f32 PW" $M tg128,tg128@d4096 MEMRA_LAB_PW 0 1
for x in 0 1; do TO=60 mbench "q8_0 bf16 PW $x" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_PW=$x; done
M=/tmp/m8q/llama8b-q4_k_m.gguf
for x in 0 1; do TO=60 mbench "q4_k_m f32 PW $x" $M tg128,tg128@d4096 MEMRA_LAB_PW=$x; done
for x in 0 1; do TO=60 mbench "q4_k_m f32 XE+PW $x" $M tg128,tg128@d4096 MEMRA_LAB_PW=$x MEMRA_LAB_XE=$x; done
for m in q4_k_m q8_0; do
  M=/tmp/m8q/llama8b-$m.gguf
  on=on; [ $m = q8_0 ] && on=all
  TO=60 mbench_ab "$m f32 rope" $M tg128,tg128@d4096 MEMRA_DECODE_ROPE off $on
  for x in off $on; do TO=60 mbench "$m bf16 rope $x" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16 MEMRA_DECODE_ROPE=$x; done
done
for x in 0 1; do
  MEMRA_LAB_XE=$x timeout 60 $B/kernels/kernel_gemv --mma > $OUT/mma-xe$x.log 2>&1
  echo "kernel_gemv --mma XE=$x rc $?"; grep -E "^\| Q" $OUT/mma-xe$x.log | cut -d'|' -f2-6
done
ts done
