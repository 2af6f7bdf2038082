#!/bin/bash
# tests/kernels/sample-same.sh — on the GPU machine: memra-server on MODEL twice, with the device's sampling
# (MEMRA_SAMPLE_DEVICE=on: greedy picks, temperature draws, top-k and nucleus candidates) and without it (off:
# every sampled row comes to the host), the same seeded requests to both (tests/kernels/sample_same.py), and the
# outputs compared: they must be the same text, request by request. MEMRA_DECODE_MMV=all keeps every sequence's
# logits independent of how the requests happen to share steps, so the two runs see the same logits.
# MMV=off (env) runs MEMRA_DECODE_MMV=off instead: decode groups of 8 sequences on the CUDA-core GEMV (as every
# GGUF model's), so the 24 requests' steps run three groups, and the nucleus rows of the first groups must keep
# their z past the next group's logits (backend_cuda.c's z_stash) for the host's draw from it to match.
# Usage (repository root, build carried): tests/kernels/sample-same.sh MODEL_PATH [BUILD (build-bench)]
# A folder without tokenizer.json (the random 8B test models) is served with .whl/tok-llama3's tokenizer; the
# server's start and stop are bench/serve-lib.sh's, as in bench/run-server.sh. Exit 0 when every request matched.
set -uo pipefail
MODEL=${1:?usage: tests/kernels/sample-same.sh MODEL_PATH [BUILD]}
BUILD=${2:-build-bench}
LOG=${OUT:-/tmp/sample-same}
mkdir -p "$LOG"
if ! python3 -c "import openai" 2>/dev/null; then # the GPU image lacks it: the carried wheels (.whl)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl > "$LOG/pip.log" 2>&1 || { echo "sample-same: no openai package and .whl/ does not install"; exit 1; }
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
. bench/serve-lib.sh
SERVE=$(serve_path "$MODEL" /tmp/sample-same-model) || exit 1
trap server_stop EXIT
rc=0
for mode in on off; do
    MEMRA_MODELS="m=$SERVE" MEMRA_SAMPLE_DEVICE=$mode MEMRA_DECODE_MMV=${MMV:-all} MEMRA_PROGRESS=0 \
        server_start "$LOG/server-$mode.out" "$LOG/server-$mode.log" 600 \
        "$BUILD/bin/memra-server" --addr 127.0.0.1:0 --slots 32 --ctx 1024 --batch-tokens 2048 || exit 1
    python3 tests/kernels/sample_same.py --url "$SERVER_URL" --model m --out "$LOG/out-$mode.json" || rc=1
    server_stop
done
python3 - "$LOG/out-on.json" "$LOG/out-off.json" <<'PY' || rc=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
same = [k for k in a if a[k] == b.get(k)]
diff = [k for k in a if a[k] != b.get(k)]
print(f"sample-same: {len(same)} of {len(a)} requests the same with the device's sampling on and off")
for k in diff:
    print(f"  {k}: on {a[k]!r}\n  {' ' * len(k)}  off {b.get(k)!r}")
sys.exit(1 if diff or len(a) != len(b) else 0)
PY
exit $rc
