#!/bin/bash
# lab/mma-grid-ab-gpu.sh NAME — one GPU call (~2.5 min on a warm machine that ran lab/issue5-table-gpu.sh NAME, else
# ~3.5): the landed `MEMRA_GEMV_MMA_GRID=auto` against `tiles` (the old grid) and `resident`: kernel_gemv --mma (every
# check, then the Q4_K / Q6_K table), then memra-bench on the random 8B Q4_K_M, tg128 / tg128x4 / tg128x8, two rounds;
# last, cuobjdump's SASS of the lone-token gate|up mma kernel ($OUT/sass-mma.txt).
# NAME: a pack of `make build` (lab/final-pack.sh NAME); carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
if [ -d "/tmp/$1" ]; then
  T0=$(date +%s); ts() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }; B=/tmp/$1
  mbench() { local l=$1 m=$2 t=$3; shift 3
    env "$@" timeout "${TO:-150}" "$B/bin/memra-bench" "$m" --backend cuda --tests "$t" --reps 3 2>&1 |
      grep -E "^\| .*(tg|pp)|rror|memra-bench:" | grep -v "^memra-bench: [a-z0-9]* (" | cut -d'|' -f6-9 | sed "s/^/$l: /"; }
else
  PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/mma-grid-ab-gpu.sh NAME}"
fi
[ -f /tmp/m8q/llama8b-q4_k_m.gguf ] || python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1
timeout 200 $B/kernels/kernel_gemv --mma > $O/g-gemv.log 2>&1
echo "kernel_gemv rc $? $(grep -E 'checks,' $O/g-gemv.log | tail -1)"
grep -E "FAIL|DIFFER|mma grid" $O/g-gemv.log | head -12
grep -E "^\| (Q4_K|Q6_K) " $O/g-gemv.log
for r in 1 2; do
  for gm in auto tiles resident; do
    TO=90 mbench "r$r $gm" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128x4,tg128x8 MEMRA_GEMV_MMA_GRID=$gm
  done
done
# the SASS of the lone-token gate|up kernel (mk_q4k, 1 n-tile, K split 4, 2 stages) for an instruction count
CO=/usr/local/cuda/bin/cuobjdump
if [ -x $CO ]; then
  $CO -sass $B/kernels/kernel_gemv 2> /dev/null |
    awk '/Function : /{p = ($0 ~ /kernel_gemv_mma.*mk_q4k.*Li1ELi4ELi2E/)} p' > $O/sass-mma.txt
  echo "sass lines $(wc -l < $O/sass-mma.txt)"
else
  echo "no cuobjdump: $(ls /usr/local/cuda/bin | tr '\n' ' ')"
fi
ts "######## done"
