#!/bin/bash
# lab/stream57-gpu.sh NAME — one call (~3 min): lab/stream57/stream (build it here first: bash lab/stream57/build.sh;
# alone it needs no pack: `lab/stream57/stream 3.35` as the whole command, the argument the GPU's TB/s for the % column)
# — the lone Q4_K GEMV's access pattern with no arithmetic, tile against flat against registers — then the real
# kernel's kernel_gemv --mma x16 from the pack gpu/NAME (`make build`, `bash lab/final-pack.sh NAME`) in the same call;
# then the random 8B Q4_K_M tg128 / tg128@d512 / tg128@d4096 with MEMRA_ATTN_ROWS auto against 1 (a lone token's
# attention in the rows form: no combine launch; the same bits), two rounds.
# Carry ["gpu/NAME.tar.xz", ".whl", "lab/stream57/stream"] (the binary is git-ignored: it travels only when carried).
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/stream57-gpu.sh NAME}"
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
PEAK=3.35; case "$G" in *H200*) PEAK=4.8;; esac
m8q_models q4_k_m
timeout 200 lab/stream57/stream $PEAK 2>&1 | tee $OUT/stream.log
ts "stream rc ${PIPESTATUS[0]}"
timeout 120 $B/kernels/kernel_gemv --mma x16 > $OUT/gemv-mma.log 2>&1
ts "kernel_gemv --mma x16 rc $?"; grep -E "^\| Q4_K" $OUT/gemv-mma.log
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
TO=120 mbench_ab rows /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128@d512,tg128@d4096 MEMRA_ATTN_ROWS auto 1
ts done
