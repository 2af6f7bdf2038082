#!/bin/bash
# lab/issue5-table-gpu.sh NAME — one GPU call (~6 min; BUDGET=seconds, default 420): issue 5's table at the current
# defaults on whatever GPU is lent (its name printed first; the 39th and 40th sessions' defaults have only H100
# figures): the random 8B BF16, Q8_0 and Q4_K_M — pp512 / pp4096 with bf16 activations and exact, pp4096 at
# --ubatch 4096, tg128, tg128@d4096 and tg128x8 — after kernel_forward's fixtures (f32, bf16); with FAST=1 also the
# GGUF prefill rows in MEMRA_GEMM=fast (bf16 activations). Pack: `make build`
# then `bash lab/final-pack.sh NAME`; carry ["gpu/NAME.tar.xz", ".whl"]. Output ≤ 8 files.
cd "$(dirname "$0")/.."
O=$OUT
. lab/gpu-prelude.sh "${1:?usage: lab/issue5-table-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
left() { echo $(( ${BUDGET:-420} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
m8q_models q8_0,q4_k_m
if [ -z "${NOFIX:-}" ] && part "1 fixtures" 100; then kf_fixtures 1- 150; fi # NOFIX=1: not the fixtures
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
table() { # label, model path
  TO=150 mbench "$1 bf16-act" "$2" pp512,pp4096 MEMRA_ACT_TYPE=bf16
  XA="--ubatch 4096" TO=90 mbench "$1 bf16-act ub4096" "$2" pp4096 MEMRA_ACT_TYPE=bf16
  TO=150 mbench "$1 exact" "$2" pp512,pp4096
  if [ -n "${FAST:-}" ] && [ "$1" != bf16 ]; then # FAST=1: the GGUF rows in MEMRA_GEMM=fast too
    TO=90 mbench "$1 fast" "$2" pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM=fast
    XA="--ubatch 4096" TO=90 mbench "$1 fast ub4096" "$2" pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM=fast
  fi
  TO=150 mbench "$1" "$2" tg128,tg128@d4096,tg128x8
}
if part "2 GGUF" 120; then
  for m in q8_0 q4_k_m; do table "$m" /tmp/m8q/llama8b-$m.gguf; done
fi
wait $MK; ts "m8b: $(tail -1 $O/make.log)"
if part "3 BF16" 90; then table bf16 /tmp/m8b/hf-bf16; fi
ts "######## done"
