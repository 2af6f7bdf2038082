#!/bin/bash
# lab/xtma51-gpu.sh NAME — one GPU call (~5 min): the promoted GGUF GEMM reading x's own k tiles from x's bf16 rows by
# TMA (MEMRA_GEMM_X_TILES=off, the new default) instead of from tiles a pass made before the GEMM (=on, the form
# before), checked and timed. Checks: kernel_gemm --promoted (every promoted GEMM also run both ways: the same bits),
# kernel_forward's fixtures (f32, bf16, bf16 KV). Timing: random 8B Q8_0 / Q4_K_M with bf16 activations, pp4096 at
# --ubatch 4096 (two rounds) and pp512 (one), x tiles off / on alternated; exact (f32 activations, two x parts) pp512
# one round. QUICK=1 (~3 min): the checks (kernel_gemm --quick), then Q8_0's pp4096 at --ubatch 4096 off / on once. On
# an H200 the rows are issue 5's. NAME: a pack of `make build` (lab/final-pack.sh NAME); carry ["gpu/NAME.tar.xz",
# ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/xtma51-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
FMTS=q8_0,q4_k_m; [ -n "${QUICK:-}" ] && FMTS=q8_0
m8q_models $FMTS
KG=--promoted; [ -n "${QUICK:-}" ] && KG=--quick
timeout 180 $B/kernels/kernel_gemm $KG > $OUT/kg.log 2>&1
ts "kernel_gemm $KG rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $OUT/kg.log) bad, $(tail -1 $OUT/kg.log)"
echo "x tiles by TMA / by the pass: $(grep -c 'x tiles by TMA.*bit-identical' $OUT/kg.log) bit-identical," \
  "$(grep -c 'x tiles by TMA.*DIFFERENT' $OUT/kg.log) different"
grep -E "CHECK failed" $OUT/kg.log | head -4
grep -E "^\| (Q8_0|Q4_K|Q4_0)" $OUT/kg.log | tail -12
kf_fixtures 1- 150
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
if [ -n "${QUICK:-}" ]; then
  for v in off on; do
    XA="--ubatch 4096" TO=90 mbench "q8_0 bf16-act ub4096 x_tiles=$v" /tmp/m8q/llama8b-q8_0.gguf pp4096 \
      MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_X_TILES=$v
  done
  ts done; exit 0
fi
for r in 1 2; do
  for m in q8_0 q4_k_m; do
    for v in off on; do
      XA="--ubatch 4096" TO=90 mbench "r$r $m bf16-act ub4096 x_tiles=$v" /tmp/m8q/llama8b-$m.gguf pp4096 \
        MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_X_TILES=$v
      [ $r = 1 ] && TO=90 mbench "r$r $m bf16-act x_tiles=$v" /tmp/m8q/llama8b-$m.gguf pp512 MEMRA_ACT_TYPE=bf16 \
        MEMRA_GEMM_X_TILES=$v
    done
  done
done
for m in q8_0 q4_k_m; do
  for v in off on; do
    TO=90 mbench "$m exact x_tiles=$v" /tmp/m8q/llama8b-$m.gguf pp512 MEMRA_GEMM_X_TILES=$v
  done
done
ts done
