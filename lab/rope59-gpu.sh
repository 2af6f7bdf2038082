#!/bin/bash
# lab/rope59-gpu.sh NAME — one call (~4 min): a lone token's RoPE and KV write in its q|k[|v] GEMV's epilogue as
# landed (cuda_fwd_gemv_rope_kv, MEMRA_DECODE_ROPE: `on`, the default, the int8 tensor-core GEMV — Q4_K_M's q|k, its
# Q6_K v apart; `all` also the dp4a ones — Q8_0's q|k|v) at the pack gpu/NAME (`make build`, then
# `bash lab/final-pack.sh NAME`): kernel_gemv --quick (its rope epilogue checks: bit-identical to the GEMV then the
# RoPE kernel, every form), kernel_forward's fixtures under =all with the tiny head_dim-128 Q4_K_M and Q8_0 beside
# them (batch 16 = alone checks the epilogue against the batch's RoPE kernel in the model), then the random 8B Q4_K_M
# (off / on) and Q8_0 (off / all) tg128 / tg128@d4096, two rounds with f32 activations and one with bf16. If =all
# passes and wins on Q8_0, make it the default (backend_cuda.c, FLAGS.md). Carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/rope59-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gguf_models q4_k_m,q8_0
kg_quick 200
grep -E "rope epilogue" $OUT/kernel_gemv.log | head -3
wait $MT; ts "tiny models: $(tail -1 /tmp/t128.log)"
for act in f32 bf16; do
  env MEMRA_EXTRA_MODELS=gpu/t128/llama8b-q4_k_m.gguf,gpu/t128/llama8b-q8_0.gguf MEMRA_ACT_TYPE=$act \
    MEMRA_DECODE_ROPE=all MEMRA_FORWARD_PART=fixtures timeout 90 $B/kernels/kernel_forward > $OUT/2-kf-$act.log 2>&1
  echo "kernel_forward $act rc $? $(grep -E 'checks,' $OUT/2-kf-$act.log | tail -1)"
  grep -E "CHECK failed" $OUT/2-kf-$act.log | head -4
  grep -E "^\| llama8b-" $OUT/2-kf-$act.log | head -4
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for m in q4_k_m q8_0; do
  M=/tmp/m8q/llama8b-$m.gguf
  on=on; [ $m = q8_0 ] && on=all
  TO=60 mbench_ab "$m f32" $M tg128,tg128@d4096 MEMRA_DECODE_ROPE off $on
  for x in off $on; do TO=60 mbench "$m bf16 $x" $M tg128,tg128@d4096 MEMRA_ACT_TYPE=bf16 MEMRA_DECODE_ROPE=$x; done
done
ts done
