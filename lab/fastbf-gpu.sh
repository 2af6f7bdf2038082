#!/bin/bash
# lab/fastbf-gpu.sh NAME — one call (~4 min): may `MEMRA_GEMM=fast` (the GGUF / FP8 weight rounded to bf16, one
# product) be the prefill GEMM under bf16 activations? kernel_forward's fixtures (every GGUF type, FP8, BF16, F16)
# with bf16 activations, every span of ≥ 4 tokens on the GEMM, in `exact` then `fast`, each fixture's GPU-vs-CPU
# error against the 5e-3 bound those activations carry; the same at the default thresholds; the tiny head_dim-128
# Q4_K_M / Q8_0 as extras; then the random 8B Q8_0 / Q4_K_M prefill rows exact vs fast (pp512, pp4096, pp4096 at
# --ubatch 4096). NAME: a pack of `make build`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/fastbf-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
gguf_models q8_0,q4_k_m
kf_bf() { # LABEL VAR=value...: the fixtures with bf16 activations, those variables set; a line each fixture
  local l=$1; shift
  env MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures "$@" timeout 150 $B/kernels/kernel_forward > $OUT/kf-$l.log 2>&1
  ts "kernel_forward $l rc $? $(grep -E 'checks,' $OUT/kf-$l.log | tail -1)"
  grep -E 'CHECK failed' $OUT/kf-$l.log | head -6
  grep -E '^\| [a-z]' $OUT/kf-$l.log | grep -v "^| model" | cut -d'|' -f2,3,5,7 | sed "s/^/$l:/"
}
kf_bf exact4 MEMRA_GEMM=exact MEMRA_GEMM_MIN_TOKENS=4
kf_bf fast4 MEMRA_GEMM=fast MEMRA_GEMM_MIN_TOKENS=4
kf_bf fast MEMRA_GEMM=fast
wait $MT; ts "tiny models: $(tail -1 /tmp/t128.log)"
for f in q4_k_m q8_0; do
  for g in exact fast; do
    env MEMRA_EXTRA_MODELS=gpu/t128/llama8b-$f.gguf MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures MEMRA_GEMM=$g \
      MEMRA_GEMM_MIN_TOKENS=4 timeout 150 $B/kernels/kernel_forward > $OUT/kx-$f-$g.log 2>&1
    echo "extra $f $g rc $? $(grep -E 'checks,' $OUT/kx-$f-$g.log | tail -1)"
    grep -E "CHECK failed" $OUT/kx-$f-$g.log | head -4
    grep -E "^\| llama8b-$f" $OUT/kx-$f-$g.log | cut -d'|' -f2,3,5,7 | head -2
  done
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for m in q8_0 q4_k_m; do
  M=/tmp/m8q/llama8b-$m.gguf
  MEMRA_ACT_TYPE=bf16 TO=90 mbench_ab "$m" $M pp512,pp4096 MEMRA_GEMM exact fast
  MEMRA_ACT_TYPE=bf16 XA="--ubatch 4096" TO=90 mbench_ab "$m ub4096" $M pp4096 MEMRA_GEMM exact fast
done
ts done
