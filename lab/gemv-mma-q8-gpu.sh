#!/bin/bash
# lab/gemv-mma-q8-gpu.sh NAME — one GPU call (~6 min): lab/gemv-mma-q8.patch (on top of lab/mma-nobar.patch),
# `MEMRA_GEMV_MMA=q8` — Q8_0's decode GEMVs on the int8 tensor cores too (gemv_mma.cu's mk_q8_0: a block of 32 a k32
# s8·s8 mma by the activations' three byte planes, F += (d · s_x) · S block by block; ~190 instructions a 16-row
# superblock of 4352 bytes against Q4_K's ~400 for 2304). Today Q8_0 runs the dp4a kernels at every batch: 8 streams
# decode 791 tok/s on the H100 against Q4_K_M's 1282, whose mma kernel made its 8 streams 1.5× faster. The same
# bits alone and in any batch (kernel_gemv's mma checks, Q8_0 added), not the dp4a kernels' bits. Prepared in the
# forty-second session (compiled: 125 registers at one vector, 196 at 8, no spills; not run). Build: with
# lab/mma-nobar.patch, lab/attn-bn128.patch and lab/attn-ws.patch in one worktree (`git apply` each, this one after
# mma-nobar), `cmake -S . -B build -DCMAKE_BUILD_TYPE=Release; make build JOBS=8`, `bash lab/final-pack.sh NAME`
# there, copy gpu/NAME.tar.xz here; carry ["gpu/NAME.tar.xz", ".whl"]. (lab/mma-nobar-gpu.sh's kernel_gemv --mma
# already runs the Q8_0 mma checks and its rows of the mma table.) Parts:
#   1. kernel_gemv --ks: every check, and the dp4a types at K split 1 / 4 beside the mma kernel (Q8_0 now), batches
#      1, 2, 4, 8;
#   2. kernel_forward's fixtures with MEMRA_GEMV_MMA=q8, f32 and bf16 activations, with a tiny head_dim-128 Q8_0
#      GGUF (MEMRA_EXTRA_MODELS: the engine's fused q|k|v and gate|up, lone and batched decode);
#   3. memra-bench, random 8B Q8_0: tg128 / x4 / x8, MEMRA_GEMV_MMA=on (default) / q8, two rounds.
# Lands (`q8` folded into `on` or `all`, docs/FLAGS.md's row) if 1-2 pass and 3 gains at x4 / x8 without losing
# tg128.
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemv-mma-q8-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
gguf_models q8_0
timeout 200 $B/kernels/kernel_gemv --ks > $OUT/1-gemv.log 2>&1
echo "kernel_gemv rc $? $(grep -E 'checks,' $OUT/1-gemv.log | tail -1)"
grep -E "FAIL|DIFFER|check mma.*Q8_0|mma grid Q8_0" $OUT/1-gemv.log | head -16
grep -E "^\| (Q8_0|Q4_K|Q6_K) " $OUT/1-gemv.log | head -40
kf_extra q8 q8_0 MEMRA_GEMV_MMA=q8
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
TO=100 mbench_ab mma /tmp/m8q/llama8b-q8_0.gguf tg128,tg128x4,tg128x8 MEMRA_GEMV_MMA on q8
ts "######## done"
