#!/bin/bash
# lab/gemv-rp-gpu.sh NAME — one GPU call (~6 min): lab/gemv-rp.patch (on top of the l42 stack; pack l43), Q4_K
# repacked once for the tensor-core GEMV — each lane loads its 16-row tile superblock straight into the registers
# the mma reads (no cp.async ring, no shared-memory reads), 1-3 superblocks in flight a warp — in the kernel and in
# the engine (MEMRA_LAB_GEMV_RP=DEPTH: the Q4_K matrices and the fused q|k / gate|up repacked at load, their
# tensor-core GEMVs on the copy). The ring kernel's bits (the same superblocks a warp, the same sums). Prepared in
# the forty-third session (compiled: no spills at depths 1-2; 8 bytes at 3; not run). Parts:
#   1. kernel_gemv --rp: the bits against the ring kernel (5 shapes, batches 1 / 3 / 8, depths 1-3) and the reference,
#      then the table: every 8B shape at batch 1 and gate/up at 2 / 4 / 8, ring (auto grid, tiles) vs rp d1-d3;
#   2. kernel_forward's fixtures with MEMRA_LAB_GEMV_RP=2, f32 and bf16 activations, with a tiny head_dim-128
#      Q4_K_M GGUF (MEMRA_EXTRA_MODELS: fused q|k beside a Q6_K v, gate|up; lone and batched decode);
#   3. memra-bench, random 8B Q4_K_M: tg128 / x4 / x8, MEMRA_LAB_GEMV_RP 0 / 2 and 0 / 3, two rounds each.
# Lands (the repack at load by default, docs/FLAGS.md's row, the kernel in its own file with the ring kernel's
# epilogue shared) if 1-2 pass and 3 gains.
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemv-rp-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
gguf_models q4_k_m
timeout 200 $B/kernels/kernel_gemv --rp > $OUT/1-rp.log 2>&1
echo "kernel_gemv --rp rc $? $(grep -E 'checks,' $OUT/1-rp.log | tail -1)"
grep -E "CHECK failed|^check rp|^\|" $OUT/1-rp.log | head -24
kf_extra rp q4_k_m MEMRA_LAB_GEMV_RP=2
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
TO=100 mbench_ab rp2 /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_LAB_GEMV_RP 0 2
TO=100 mbench_ab rp3 /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_LAB_GEMV_RP 0 3
ts "######## done"
