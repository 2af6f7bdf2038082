#!/bin/bash
# lab/span-gemm-gpu.sh NAME — one GPU call for lab/span-gemm.patch (one GEMM over a step's consecutive GEMM spans;
# gemm.cu takes only algorithms without a split K). gpu/NAME.tar.xz holds x/bin/{memra-server,memra-bench} and
# x/{kernel_gemm,kernel_forward} built with the patch applied. Checks: kernel_gemm --quick (a span's rows inside an
# 80-row GEMM = the span alone, every mode), kernel_forward with the defaults and with bf16 activations (318 each,
# 0 failed expected); then memra-bench BF16 pp512/pp4096 in both activation modes (single-span prefill: should not
# lose; the twenty-third run's call 3: f32 18.3-18.5 k / 15.6 k, bf16 31.4 k / 23.9-25.1 k) and the server at
# c=64 × 512 × 256 (three 512-token prompts a step share one GEMM now: expect above call 3's bf16 3974-4360 tok/s,
# p99 1.22-1.29 s, and f32 3198, p99 2.12 s).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/span-gemm-gpu.sh NAME (gpu/NAME.tar.xz)}"
( python3 tools/make_test_models.py /tmp/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 && python3 tools/make_test_models.py /tmp/t128 --tiny --tiny-head-dim 128 --formats q4_k_m,q8_0 >> $OUT/tiny.log 2>&1; echo "tiny rc $?" >> $OUT/tiny.log ) &
TK=$!
timeout 100 $B/x/kernel_gemm --quick > $OUT/kg.log 2>&1; ts "kernel_gemm rc $?"; grep -E "CHECK failed|checks,|inside a GEMM" $OUT/kg.log | tail -12
wait $TK; ts "tiny: $(tail -1 $OUT/tiny.log)"
KF="MEMRA_EXTRA_MODELS=/tmp/t128/llama8b-q4_k_m.gguf,/tmp/t128/llama8b-q8_0.gguf MEMRA_DEEP_MODEL=/tmp/tiny/hf-bf16 MEMRA_FORWARD_PART=fixtures"
env $KF MEMRA_KV_TYPE=bf16 timeout 150 $B/x/kernel_forward > $OUT/kf.log 2>&1; ts "kernel_forward default rc $?"; grep -E "CHECK failed|checks," $OUT/kf.log | tail -4
env $KF MEMRA_KV_TYPE=bf16 MEMRA_ACT_TYPE=bf16 timeout 150 $B/x/kernel_forward > $OUT/kf-act.log 2>&1; ts "kernel_forward act bf16 rc $?"; grep -E "CHECK failed|checks,|near tie" $OUT/kf-act.log | tail -5
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
for act in f32 bf16; do
  MEMRA_ACT_TYPE=$act timeout 100 $B/x/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --reps 3 2>&1 | grep -E "^\| .*pp" | sed "s/^/$act: /"
done
run() { # label act
  MEMRA_ACT_TYPE=$2 MEMRA_LOG_LEVEL=debug OUT=/tmp/srv BUILD=$B/x NO_BENCH=1 RUN_TMO=60 timeout 80 \
    bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/srv.txt 2>&1
  echo "$1 rc $? $(grep -o '"agg_tok_s": [0-9.]*\|"ttft_p50_ms": [0-9.]*\|"ttft_p99_ms": [0-9.]*\|"texts_sha256": "[0-9a-f]*"' /tmp/srv/load.log | tr '\n' ' ')"
  rm -rf /tmp/srv
}
run srv-bf16 bf16; run srv-f32 f32; run srv-bf16-again bf16
ts done
