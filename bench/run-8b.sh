#!/bin/bash
# bench/run-8b.sh — what the GPU machine runs for the 8B baseline (issue 5):
# make the random Llama-3-8B-shape test models (tools/make_test_models.py, the
# gguf package carried as a wheel in .whl/), then memra-bench with the CUDA
# backend on each format, one process per model, each under a timeout so one
# slow test cannot eat the call. Nothing is compiled there: build here
# (cmake --build build-bench --target memra-bench) and carry build-bench/bin.
# Usage (repository root): bench/run-8b.sh [formats] [tests] [reps] [timeout_s]
# Env: TINY=1 builds the tiny models, BACKEND=cpu benches on the CPU (a check of this script anywhere).
# Logs go to $OUT when set (4 files), else /tmp; the models to $MODELS (default /tmp/m8b).
set -uo pipefail
FORMATS=${1:-bf16,f16,q8_0,q4_k_m}
TESTS=${2:-pp512,tg128,pp4096,tg128@d4096}
REPS=${3:-3}
TMO=${4:-110}
LOG=${OUT:-/tmp}
T=/tmp/b8 # per-model files (the device tool brings back 8 files at most)
mkdir -p "$T"
M=${MODELS:-/tmp/m8b}
B=build-bench/bin/memra-bench
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
    --format=csv | tee "$LOG/gpu.txt"
df -h /tmp | tail -1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site || exit 1
python3 tools/make_test_models.py "$M" --formats "$FORMATS" ${TINY:+--tiny} 2>&1 | grep -v -i "warn" | tee "$LOG/make_test_models.log"
df -h /tmp | tail -1
ls -la "$M" "$M/hf-bf16"
: > "$LOG/bench.md"
for f in ${FORMATS//,/ }; do
    p="$M/llama8b-$f.gguf"
    [ "$f" = bf16 ] && p="$M/hf-bf16"
    echo "== memra-bench $p"
    timeout "$TMO" "$B" "$p" --backend "${BACKEND:-cuda}" --tests "$TESTS" --reps "$REPS" > "$T/bench-$f.md" \
        2> "$T/bench-$f.log"
    echo "exit $? ($f)"
    tail -3 "$T/bench-$f.log"
    grep -v "^| model\|^| ---" "$T/bench-$f.md" | sed "s/^| llama |/| $f |/" >> "$LOG/bench.md"
done
echo "== results (reps $REPS, median; timeout ${TMO}s per model)"
echo "| model | format | weights | backend | test | tok/s | GB/s or TFLOP/s | % of limit |"
cat "$LOG/bench.md"
tail -n +1 "$T"/bench-*.log > "$LOG/bench-stderr.log"
