#!/bin/bash
# lab/gemm-keep-gpu.sh NAME — one GPU call (~5 min): the prefill GEMM's dequantized weights kept on the device
# (MEMRA_GEMM_KEEP, backend_cuda.c). kernel_gemm --quick (the kept copy's bits against the dequantizing call, every
# FP8 / GGUF type and mode) and kernel_forward's fixtures (0 failed expected), then GGUF Q8_0 and Q4_K_M pp512 /
# pp4096 at the default ubatch in the three numerics (exact, MEMRA_ACT_TYPE=bf16, MEMRA_GEMM=fast), MEMRA_GEMM_KEEP
# off and auto alternated in the same call. NAME/bin + NAME/kernels from lab/final-pack.sh (kernel_gemm added);
# carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
set -u
T0=$(date +%s); ts() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
tar -xJf "gpu/${1:?usage: lab/gemm-keep-gpu.sh NAME}.tar.xz" -C /tmp
B=/tmp/$1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl | grep -v typing_extensions) > $OUT/pip.log 2>&1
export PYTHONPATH=/tmp/site
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > $OUT/makeq.log 2>&1; echo "make rc $?" >> $OUT/makeq.log ) &
MK=$!
python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 || ts "tiny model failed"
( timeout 200 $B/kernels/kernel_gemm --quick > /tmp/kg.log 2>&1; echo "rc $?" >> /tmp/kg.log
  MEMRA_FORWARD_PART=fixtures timeout 200 $B/kernels/kernel_forward > /tmp/kf.log 2>&1; echo "rc $?" >> /tmp/kf.log ) &
KC=$!
wait $KC
ts "kernel_gemm --quick $(tail -1 /tmp/kg.log) $(grep -E '[0-9]+ checks' /tmp/kg.log | tail -1) kept: $(grep -c 'kept dequantized copy: bit-identical' /tmp/kg.log) identical, $(grep -c 'DIFFERENT' /tmp/kg.log) different"
grep -E 'FAIL' /tmp/kg.log | head -3
ts "kernel_forward $(tail -1 /tmp/kf.log) $(grep -E 'checks,' /tmp/kf.log | tail -1)"; grep -E 'CHECK failed' /tmp/kf.log | head -3
wait $MK; ts "m8q: $(tail -1 $OUT/makeq.log)"
for f in q8_0 q4_k_m; do
  M=/tmp/m8q/llama8b-$f.gguf
  for mode in exact act-bf16 fast; do
    case $mode in exact) E="";; act-bf16) E="MEMRA_ACT_TYPE=bf16";; fast) E="MEMRA_GEMM=fast";; esac
    for keep in off auto off auto; do
      env $E MEMRA_GEMM_KEEP=$keep timeout 100 $B/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --reps 3 > /tmp/b.log 2>&1
      grep -E "^\| .*pp" /tmp/b.log | sed "s/^/$f $mode keep=$keep: /"; grep -E "dequantized weights" /tmp/b.log | sed 's/^/  /' | head -1
    done
  done
done
MEMRA_ACT_TYPE=bf16 $B/bin/memra-bench /tmp/m8q/llama8b-q8_0.gguf --backend cuda --tests tg128 --reps 3 2>&1 | grep -E "^\| .*tg"
ts done
