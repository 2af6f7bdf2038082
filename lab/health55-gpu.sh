#!/bin/bash
# lab/health55-gpu.sh NAME — one call (~5 min): every GPU check of tests/kernels/run-gpu.sh at a pack of `make build`
# (QUICK=1: the checks without the timing tables; MEMRA_FORWARD_PART=fixtures: the default model SmolLM2 does not
# travel, so its part, run-gen and sample-same are left out), with a line a test and the failed checks. Carry
# ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/health55-gpu.sh NAME}"
QUICK=1 MEMRA_FORWARD_PART=fixtures timeout 560 tests/kernels/run-gpu.sh $B > $OUT/run-gpu.log 2>&1
ts "run-gpu.sh rc $?"
grep -E "^== |cases,|checks|CHECK failed|FAIL" $OUT/run-gpu.log | grep -v "^== .* exit 0$" | head -80
