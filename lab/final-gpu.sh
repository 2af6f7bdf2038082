#!/bin/bash
# lab/final-gpu.sh NAME — one GPU call (~6 min) on a session's final build: gpu/NAME.tar.xz holds NAME/bin
# (memra-server, memra-bench) and NAME/kernels (kernel_attn, kernel_forward) of `make build` (pack with
# lab/final-pack.sh NAME). kernel_attn --quick and kernel_forward's fixtures (0 failed), then the server at
# c=1 and c=64 × 512 × 256 with bf16 activations (bench/run-server.sh, memra-bench tg128 after it); FINAL_F32=1
# adds c=64 with the default f32 activations (its files under $OUT/f32).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/final-gpu.sh NAME (gpu/NAME.tar.xz)}"
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( timeout 200 $B/kernels/kernel_attn --quick > /tmp/kq.log 2>&1; echo "rc $?" >> /tmp/kq.log ) &
( MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > /tmp/kf.log 2>&1; echo "rc $?" >> /tmp/kf.log ) &
wait $(jobs -p | grep -v "^$MK$")
ts "kernel_attn --quick $(tail -1 /tmp/kq.log) $(grep -E '[0-9]+ checks' /tmp/kq.log | tail -1)"; grep -E 'FAIL' /tmp/kq.log | head -3
ts "kernel_forward $(tail -1 /tmp/kf.log) $(grep -E 'checks,' /tmp/kf.log | tail -1)"; grep -E 'CHECK failed' /tmp/kf.log | head -3
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
MEMRA_ACT_TYPE=bf16 BUILD=$B RUN_TMO=200 timeout 330 bench/run-server.sh /tmp/m8b/hf-bf16 "1x512x256 64x512x256" > /tmp/rs.log 2>&1
ts "run-server rc $?"; cat $OUT/server-load.md $OUT/bench-tg128.md 2>/dev/null | tail -8; grep -i -E "texts_sha|error|fail" /tmp/rs.log | head -5
if [ "${FINAL_F32:-0}" = 1 ]; then # the default f32 activations at c=64 too
  mkdir -p $OUT/f32; OUT0=$OUT; OUT=$OUT/f32
  BUILD=$B RUN_TMO=200 timeout 200 bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/rs32.log 2>&1
  ts "run-server f32 rc $?"; cat $OUT/server-load.md 2>/dev/null | tail -3; grep -i -E "texts_sha|error|fail" /tmp/rs32.log | head -5
  OUT=$OUT0
fi
ts done
