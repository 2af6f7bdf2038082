#!/bin/bash
# lab/mx-gpu.sh NAME — one call (~5 min): the tensor-core decode GEMV on the 16-bit prepared x's two planes (bf16
# activations: 4 vectors an n-tile) with the dp4a kernels' X16 form, against the build before both
# (NAME/x0/memra-bench): kernel_gemv --quick (its x16 pass), kernel_forward's fixtures (f32, bf16, bf16 on a bf16 KV)
# and the tiny head_dim-128 Q4_K_M as an extra with bf16 activations, then the random 8B Q4_K_M tg128 / tg128x4 /
# tg128x8 before / after, two rounds with bf16 activations, one with f32 (unchanged). NAME: a pack of `make build`
# by `lab/final-pack.sh NAME main`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mx-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
gguf_models q4_k_m
kg_quick 120
kf_fixtures "" 150
wait $MT; ts "tiny models: $(tail -1 /tmp/t128.log)"
MEMRA_EXTRA_MODELS=gpu/t128/llama8b-q4_k_m.gguf MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures timeout 120 \
  $B/kernels/kernel_forward > $OUT/kx.log 2>&1
echo "extra q4_k_m bf16 rc $? $(grep -E 'checks,' $OUT/kx.log | tail -1)"; grep -E "CHECK failed" $OUT/kx.log | head -4
grep -E "^\| llama8b-q4_k_m" $OUT/kx.log | cut -d'|' -f2,5,7,8 | head -2
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for act in bf16 bf16 f32; do
  MB=$B/x0/memra-bench TO=90 mbench "q4_k_m $act before" $M tg128,tg128x4,tg128x8 MEMRA_ACT_TYPE=$act
  TO=90 mbench "q4_k_m $act mx" $M tg128,tg128x4,tg128x8 MEMRA_ACT_TYPE=$act
done
ts done
