#!/bin/bash
# lab/check47-gpu.sh NAME — one GPU call (~2.5 min): the forty-seventh session's last build checked — kernel_attn
# --prefill-wg (the wgmma attention's digests, its bf16 output = its f32 output rounded: wg_store_o written once),
# kernel_gemm --promoted (checks, the promoted GEMM's timing), kernel_forward's fixtures — then, on an H200 only,
# issue 5's GGUF prefill rows (random 8B Q8_0 / Q4_K_M with bf16 activations: pp512 / pp4096 and pp4096 at --ubatch
# 4096). NAME: a pack of `make build`; carry ["gpu/NAME.tar.xz", ".whl", "lab/check47-gpu.sh"]. ROWS_ONLY=1 (~3.5 min;
# with REQUIRE_GPU=H200): no checks, the GGUF prefill rows and tg128 / tg128@d4096 only.
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/check47-gpu.sh NAME}"
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
m8q_models q8_0,q4_k_m
if [ -z "${ROWS_ONLY:-}" ]; then
  timeout 90 $B/kernels/kernel_attn --prefill-wg > $O/kp.log 2>&1
  ts "kernel_attn --prefill-wg rc $?: $(grep -E '^ok|^FAIL' $O/kp.log | tr '\n' ' ') $(grep -c 'CHECK failed' $O/kp.log) failed"
  grep -E "digest" $O/kp.log | sed 's/.*prefill wgmma/wgmma/' | cut -c1-40,100-
  timeout 120 $B/kernels/kernel_gemm --promoted > $O/kg.log 2>&1
  ts "kernel_gemm --promoted rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg.log) bad, $(tail -1 $O/kg.log)"
  kf_fixtures 1- 150
fi
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
if echo "$G" | grep -q H200; then
  for m in q8_0 q4_k_m; do
    gguf_rows $m ${ROWS_ONLY:+tg}
  done
fi
ts done
