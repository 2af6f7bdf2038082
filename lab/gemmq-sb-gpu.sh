#!/bin/bash
# lab/gemmq-sb-gpu.sh NAME — one GPU call (~3 min): lab/gemmq-sb.patch, the promoted GEMM's superblock form for Q4_K /
# Q5_K under bf16 activations (`MEMRA_GEMM_Q_SB=on`: sc·q and x·2^-e in f16, a superblock's 16 products into one
# partial promoted once; `pair`: two superblocks an iteration; `halves`: two accumulation chains a warpgroup, lab only
# — not the narrow form's bits), now with a sixth ring stage in its wide form (it holds a stage a tile longer than the
# plain form) and `serial` (each tile's products waited for and its stage released before the next tile's, as the
# plain form does: one stage held, the same bits). Its five-stage form was measured slower than the plain one on an
# H100 (bench/RESULTS.md, fifty-third run; the patch as measured is at commit f893ab6); this call asks whether the
# ring was what it lacked. kernel_gemm --promoted with `on` (its checks — a span's bits alone / at an offset / inside
# a longer GEMM: the narrow and the wide form — then the promoted GEMM's timing on the 8B shapes, to set beside the
# run's `off` table in bench/round-2026-12-07b.log), then the random 8B Q4_K_M's pp4096 at --ubatch 4096 and pp512
# with bf16 activations, off / on / serial / pair alternated, two rounds. NAME: a pack of `make build` with the patch
# applied (`git apply lab/gemmq-sb.patch`, `make build`, `bash lab/final-pack.sh NAME`); carry ["gpu/NAME.tar.xz",
# ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemmq-sb-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
m8q_models q4_k_m
MEMRA_GEMM_Q_SB=on timeout 150 $B/kernels/kernel_gemm --promoted > $O/kg-on.log 2>&1
ts "kernel_gemm --promoted sb on rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg-on.log) bad, $(tail -1 $O/kg-on.log)"
grep -E "FAIL|DIFFERENT|STALE|CHECK failed" $O/kg-on.log | head -6
grep -E "^\| Q4_K \| xbf16 promoted \|" $O/kg-on.log
MEMRA_GEMM_Q_SB=serial timeout 100 $B/kernels/kernel_gemm --quick > $O/kg-serial.log 2>&1
ts "kernel_gemm --quick sb serial rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg-serial.log) bad," \
  "$(tail -1 $O/kg-serial.log)"
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for r in 1 2; do
  for sb in off on serial pair; do
    XA="--ubatch 4096" TO=90 mbench "r$r q4_k_m sb $sb ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_Q_SB=$sb
    [ $r = 1 ] && TO=90 mbench "r$r q4_k_m sb $sb" $M pp512 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_Q_SB=$sb
  done
done
ts done
