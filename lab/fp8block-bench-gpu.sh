#!/bin/bash
# lab/fp8block-bench-gpu.sh NAME — one GPU call (~4 min): the first real-size figures for FP8 checkpoints with
# 128 × 128 block scales (Qwen3 / DeepSeek FP8; read as stored on the GPU since the thirty-sixth session, where only
# the kernel tables were measured: make_test_models had no block-FP8 writer). Makes the random Llama-3-8B in BF16
# and as hf-fp8block (tools/make_test_models.py --formats bf16,fp8block: layer matrices FP8 E4M3 + a scale a block,
# embeddings / output BF16; ~8.1 GB read a decoded token → floor 1.88 ms, 530 tok/s at 4.3 TB/s), then memra-bench
# tg128, pp512 and pp4096 on it with MEMRA_FP8_BLOCK=native (the default) and =f32 (expanded to float32, the
# path before), and BF16's tg128 / pp4096 beside them as the baseline of the same call.
# What to look for: native's tg128 GB/s and % of limit (the GEMVs' 70-79 % of the kernel tables, plus the small
# kernels), native against f32 (4× fewer bytes), pp4096 against BF16's (the block-scaled GEMM against bf16's).
# MOE=1 adds (~2 min) Qwen3-30B-A3B's shape at 12 of its 48 layers in BF16 and block FP8 (make_test_models --arch
# qwen3moe: experts one tensor each with their scale tables, the router BF16 — the layout of Qwen3-30B-A3B-FP8):
# tg128 / pp512, native against f32 — the MoE experts' block-FP8 kernels at real size (kernel_moe's table is a layer).
# Prepare: lab/prepare-gpu.sh (gpu/NAME.tar.xz, .whl); carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/fp8block-bench-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
python3 tools/make_test_models.py /tmp/m8f --formats bf16,fp8block > $OUT/make.log 2>&1; ts "models: rc $?"
grep -E "fp8 block check|wrote" $OUT/make.log
mbench "fp8block native" /tmp/m8f/hf-fp8block tg128,pp512,pp4096 MEMRA_FP8_BLOCK=native
mbench "fp8block native bf16-act" /tmp/m8f/hf-fp8block pp4096 MEMRA_FP8_BLOCK=native MEMRA_ACT_TYPE=bf16
mbench "fp8block f32" /tmp/m8f/hf-fp8block tg128,pp512 MEMRA_FP8_BLOCK=f32
mbench "bf16" /tmp/m8f/hf-bf16 tg128,pp4096
mbench "bf16 bf16-act" /tmp/m8f/hf-bf16 pp4096 MEMRA_ACT_TYPE=bf16
if [ "${MOE:-0}" = 1 ]; then
  rm -rf /tmp/m8f # disk: the MoE models next
  python3 tools/make_test_models.py /tmp/mq3 --arch qwen3moe --layers 12 --formats bf16,fp8block > $OUT/make-moe.log 2>&1
  ts "moe models: rc $?"
  grep -E "fp8 block check|wrote" $OUT/make-moe.log
  mbench "moe fp8block native" /tmp/mq3/hf-fp8block tg128,pp512 MEMRA_FP8_BLOCK=native
  mbench "moe fp8block f32" /tmp/mq3/hf-fp8block tg128,pp512 MEMRA_FP8_BLOCK=f32
  mbench "moe bf16" /tmp/mq3/hf-bf16 tg128,pp512
fi
ts "done"
