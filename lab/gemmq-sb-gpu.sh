#!/bin/bash
# lab/gemmq-sb-gpu.sh NAME — one GPU call (~5 min): the promoted GEMM's superblock form for Q4_K / Q5_K
# (`MEMRA_GEMM_Q_SB=on`, gemm_q.cu's consume_sb: sc·q and x·2^-e in f16, a superblock's partial promoted once; `pair`:
# two superblocks an iteration, consume_sb_pair) checked and timed against the same build with it off (the default).
# kernel_gemm --promoted with `pair` (its checks — every promoted type and shape, a span's bits alone / at an offset /
# inside a longer GEMM, the narrow and the wide form — then the promoted GEMM's timing on the 8B shapes),
# kernel_forward's fixtures under bf16 activations with every GGUF span on the promoted GEMM (`MEMRA_GEMM_PROMOTE=on
# MEMRA_GEMM_MIN_TOKENS=4`) off / on / pair, then the random 8B Q4_K_M with bf16 activations — pp512 / pp4096, pp4096
# at --ubatch 4096 — off / on / pair, the last again (and pair with k and v promoted too: `MEMRA_GEMM_PROMOTE=on`),
# and kernel_gemm --quick with `on` (the wide form's single superblocks). NAME: a pack of `make build` with the
# switch; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemmq-sb-gpu.sh NAME}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
m8q_models q4_k_m
MEMRA_GEMM_Q_SB=pair timeout 200 $B/kernels/kernel_gemm --promoted > $O/kg-on.log 2>&1
ts "kernel_gemm --promoted sb pair rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg-on.log) bad, $(tail -1 $O/kg-on.log)"
grep -E "FAIL|DIFFERENT|STALE|CHECK failed" $O/kg-on.log | head -6
grep -E "^check xbf16 promoted (Q4_K|Q5_K)" $O/kg-on.log | head -8
grep -E "^\| Q4_K \| xbf16 promoted \|" $O/kg-on.log
for sb in off on pair; do
  env MEMRA_GEMM_Q_SB=$sb MEMRA_GEMM_PROMOTE=on MEMRA_GEMM_MIN_TOKENS=4 MEMRA_ACT_TYPE=bf16 \
    MEMRA_FORWARD_PART=fixtures timeout 150 $B/kernels/kernel_forward > $O/kf-$sb.log 2>&1
  ts "kernel_forward bf16, all GGUF spans promoted, sb $sb: rc $? $(grep -E 'checks,' $O/kf-$sb.log | tail -1)"
  grep -E 'CHECK failed' $O/kf-$sb.log | head -4
done
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
for sb in off on pair; do
  TO=90 mbench "r1 q4_k_m sb $sb" $M pp512,pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_Q_SB=$sb
  XA="--ubatch 4096" TO=90 mbench "r1 q4_k_m sb $sb ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_Q_SB=$sb
done
for sb in off on pair; do
  XA="--ubatch 4096" TO=90 mbench "r2 q4_k_m sb $sb ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_Q_SB=$sb
done
XA="--ubatch 4096" TO=90 mbench "r2 q4_k_m sb pair, k and v promoted too, ub4096" $M pp4096 MEMRA_ACT_TYPE=bf16 \
  MEMRA_GEMM_Q_SB=pair MEMRA_GEMM_PROMOTE=on
MEMRA_GEMM_Q_SB=on timeout 150 $B/kernels/kernel_gemm --quick > $O/kg-q.log 2>&1
ts "kernel_gemm --quick sb on rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg-q.log) bad, $(tail -1 $O/kg-q.log)"
ts done
