#!/bin/bash
# lab/gemm-q-land-gpu.sh NAME [checks|timing|bench] — the promoted GGUF prefill GEMM in the product
# (lab/gemm-q.patch: gemm_q.cu, MEMRA_GEMM_PROMOTE), after lab/gemm-q-gpu.sh showed the standalone kernel right
# and fast.
#   checks (~3 min): kernel_gemm --quick (every GGUF type promoted and not, which weights take it, kept copies,
#     batch invariance, x tiles across types and new contents, the producers' claims), kernel_forward's fixtures
#     with every prefill span on the GEMM and MEMRA_GEMM_PROMOTE=on (the llamaq GGUF fixtures' 256-wide matrices
#     take it), f32 and bf16 activations.
#   timing (~6 min): kernel_gemm in full (its tables with the promoted and kept rows).
#   bench (~8 min): random 8B Q8_0 and Q4_K_M, memra-bench pp512,pp4096 with bf16 activations, promote off / on /
#     off / on alternated in one call, and pp4096 at --ubatch 4096 off / on; Q4_K_M with f32 activations (exact)
#     off / on.
# Prepare: `git apply lab/gemm-q.patch && make build -j2 JOBS=2 && bash lab/final-pack.sh NAME && git checkout src
#   tests docs && git clean -fq src`, then rebuild main; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/gemm-q-land-gpu.sh NAME [checks|timing|bench]}"
PART=${2:-checks}
if [ "$PART" = timing ]; then
  ts "kernel_gemm (checks and timing)"
  timeout 560 $B/kernels/kernel_gemm > $OUT/kernel_gemm.log 2>&1; echo "kernel_gemm rc $?"
  grep -E "FAIL|cases," $OUT/kernel_gemm.log | head -10
  sed -n '/^## /,$p' $OUT/kernel_gemm.log
elif [ "$PART" = checks ]; then
  ts "kernel_gemm --quick"
  timeout 240 $B/kernels/kernel_gemm --quick > $OUT/kernel_gemm.log 2>&1; echo "kernel_gemm rc $?"
  grep -E "FAIL|cases," $OUT/kernel_gemm.log | head -30
  grep -E "promoted" $OUT/kernel_gemm.log | grep -v "^|" | head -60
  sed -n '/^## /,$p' $OUT/kernel_gemm.log
  for act in f32 bf16; do
    ts "kernel_forward fixtures, MEMRA_GEMM_PROMOTE=on, $act activations"
    MEMRA_ACT_TYPE=$act MEMRA_GEMM_PROMOTE=on MEMRA_GEMM_MIN_TOKENS=4 MEMRA_FORWARD_PART=fixtures \
      timeout 200 $B/kernels/kernel_forward > $OUT/kf-$act.log 2>&1; echo "kernel_forward rc $?"
    grep -E "FAIL|CHECK failed|cases," $OUT/kf-$act.log | head -20
    sed -n '/^## /,$p' $OUT/kf-$act.log | grep -iE "^\| (llamaq|model)|q8|q4|q5|iq4" | head -30
  done
else
  python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $OUT/makeq.log 2>&1; ts "m8q: rc $?"
  for f in q8_0 q4_k_m; do
    M=/tmp/m8q/llama8b-$f.gguf
    for p in off on off on; do
      MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p timeout 100 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 \
        --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$f bf16 promote $p: /"
    done
    for p in off on; do
      MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_PROMOTE=$p timeout 100 $B/bin/memra-bench $M --backend cuda --tests pp4096 \
        --ubatch 4096 --reps 3 2>&1 | grep -E "^\| .*pp|rror" | sed "s/^/$f bf16 promote $p ub4096: /"
    done
    [ $f = q4_k_m ] && for p in off on; do
      MEMRA_GEMM_PROMOTE=$p timeout 100 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --reps 3 2>&1 |
        grep -E "^\| .*pp|rror" | sed "s/^/$f exact promote $p: /"
    done
  done
fi
ts done
