#!/bin/bash
# tests/kernels/run-gpu.sh — what the GPU machine runs for the kernel tests:
# the GPU's identity and clocks, then every tests/kernels/kernel_* executable
# of the build (checks against the CPU reference first, timing tables last).
# Nothing is compiled there: build here (cmake --build build-cuda) and carry
# the build folder. Usage: tests/kernels/run-gpu.sh [build-dir] ; logs go to
# $OUT when set (the device tool's output folder), else /tmp.
set -uo pipefail
B=${1:-build-cuda}
LOG=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
    --format=csv | tee "$LOG/gpu.txt"
rc=0
for k in "$B"/kernels/kernel_*; do
    [ -x "$k" ] || continue
    name=$(basename "$k")
    echo "== $name"
    "$k" > "$LOG/$name.log" 2>&1
    r=$?
    [ $r -ne 0 ] && rc=$r
    grep -E "FAIL|CHECK failed|cases," "$LOG/$name.log" | head -40
    # the tables: everything from the first "## " heading on
    sed -n '/^## /,$p' "$LOG/$name.log"
    echo "== $name exit $r"
done
exit $rc
