#!/bin/bash
# bench/run-server.sh — the serving figures of issue 6 on the GPU machine: memra-server on a model, driven by
# bench/load.py (the official openai client) at c=1 and c=64 with 512-token prompts and max_tokens 256, then
# memra-bench tg128 on the same model for the c=1 comparison (when the binary is there). Nothing is compiled
# there: build here (cmake --build build-bench --target memra-server memra-bench) and carry build-bench/bin and
# .whl (the openai wheels and its dependencies, plus .whl/tok-llama3 from bench/make_llama3_tokenizer.py).
#
# Usage (repository root): bench/run-server.sh MODEL_PATH [CONFIGS]
#   MODEL_PATH  a .gguf with a tokenizer, or a Hugging Face folder; a folder without tokenizer.json (the random
#               8B test models of tools/make_test_models.py) is served through a side folder of links with
#               .whl/tok-llama3's Llama-3 tokenizer added (the model folder itself is not changed)
#   CONFIGS     space-separated CxPxG (concurrency x prompt tokens x max_tokens), default "1x512x256 64x512x256"
# Env: BACKEND (cuda; cpu checks this script anywhere), BUILD (build-bench), SLOTS (64), CTX (1024),
#      BATCH_TOKENS (8192, the CUDA default), REQS_C1 (4: requests of a c=1 config; others send c requests),
#      LOAD_TMO (600 s for the model to load), RUN_TMO (420 s per load.py config), GPU (nvidia-smi's name, else "cpu"), LABEL,
#      NO_BENCH=1 (skip memra-bench), LOAD_PROCS (8: load.py's client processes, --procs), TEMPERATURE (0:
#      greedy; > 0 samples: on the CUDA backend the device's temperature draw), TOP_K (sent with every request
#      when set: the device's top-k candidates, the sampler's draw from them on the host), TOP_P / MIN_P (sent
#      when set; without TOP_K: the device's nucleus candidates, the row only when they cannot decide); the
#      label says which.
# Logs and results go to $OUT when set (server.log, load.log, server-load.jsonl, server-load.md, bench-tg128.md),
# else /tmp/run-server. Exit status: 0 when every config ran without a failed request, else 1.
set -uo pipefail
MODEL=${1:?usage: bench/run-server.sh MODEL_PATH [CONFIGS]}
CONFIGS=${2:-1x512x256 64x512x256}
LOG=${OUT:-/tmp/run-server}
mkdir -p "$LOG"
BUILD=${BUILD:-build-bench}
SERVER=$BUILD/bin/memra-server
BENCH=$BUILD/bin/memra-bench
BACKEND=${BACKEND:-cuda}
export PYTHONUNBUFFERED=1
fail() { echo "run-server.sh: $*" | tee -a "$LOG/load.log" >&2; exit 1; }

[ -x "$SERVER" ] || fail "$SERVER is not built (cmake --build $BUILD --target memra-server; carry $BUILD/bin)"
[ -e "$MODEL" ] || fail "$MODEL does not exist"
if [ -z "${GPU:-}" ]; then
    GPU=cpu
    [ "$BACKEND" = cuda ] && GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
fi
: > "$LOG/load.log"

# the openai package: carried as wheels where it is missing (the GPU image has python3 but not openai)
if ! python3 -c "import openai" 2>/dev/null; then
    ls .whl/*.whl > /dev/null 2>&1 || fail "python3 has no openai package and .whl/ holds no wheels"
    # not typing_extensions: an older copy than the image's would shadow it and break the image's anyio
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        $(ls .whl/*.whl | grep -v typing_extensions) >> "$LOG/load.log" 2>&1 ||
        fail "installing .whl/*.whl failed (see load.log)"
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    python3 -c "import openai" >> "$LOG/load.log" 2>&1 || fail "openai does not import from the wheels"
fi

. bench/serve-lib.sh

# a folder without a tokenizer: a side folder of links plus the Llama-3 tokenizer
SERVE=$(serve_path "$MODEL" /tmp/run-server-model 2>> "$LOG/load.log") || fail "cannot serve $MODEL (load.log)"
[ "$SERVE" = "$MODEL" ] || echo "== $MODEL has no tokenizer: serving $SERVE (links + the Llama-3 tokenizer)" | tee -a "$LOG/load.log"

stop_server() { [ -n "${SERVER_PID:-}" ] || return 0; server_stop >> "$LOG/load.log"; tail -1 "$LOG/load.log"; }
trap stop_server EXIT

t0=$(date +%s)
MEMRA_MODELS="m=$SERVE" MEMRA_BACKEND=$BACKEND MEMRA_PROGRESS=0 server_start "$LOG/server.out" "$LOG/server.log" \
    "${LOAD_TMO:-600}" "$SERVER" --addr 127.0.0.1:0 --slots "${SLOTS:-64}" --ctx "${CTX:-1024}" \
    --batch-tokens "${BATCH_TOKENS:-8192}" 2>> "$LOG/load.log" || fail "the server did not come up (load.log, server.log)"
URL=$SERVER_URL
echo "== server at $URL, $SERVE ($BACKEND) loaded" | tee -a "$LOG/load.log"
echo "== ready after $(( $(date +%s) - t0 )) s" | tee -a "$LOG/load.log"

status=0
for cfg in $CONFIGS; do
    IFS=x read -r c p g <<< "$cfg"
    n=$c
    [ "$c" = 1 ] && n=${REQS_C1:-4}
    echo "== load.py c=$c prompt=$p max_tokens=$g requests=$n" | tee -a "$LOG/load.log"
    timeout "${RUN_TMO:-420}" python3 bench/load.py --url "$URL" --model m -c "$c" -p "$p" -g "$g" -n "$n" \
        --temperature "${TEMPERATURE:-0}" --top-k "${TOP_K:-0}" --top-p "${TOP_P:-1}" --min-p "${MIN_P:-0}" \
        --procs "${LOAD_PROCS:-8}" --gpu "$GPU" --label "${LABEL:-$(basename "$MODEL")} ($BACKEND${TEMPERATURE:+, temperature $TEMPERATURE}${TOP_K:+, top_k $TOP_K}${TOP_P:+, top_p $TOP_P}${MIN_P:+, min_p $MIN_P})" \
        --json "$LOG/server-load.jsonl" --md "$LOG/server-load.md" >> "$LOG/load.log" 2>&1
    rc=$?
    [ $rc = 124 ] && echo "load.py timed out after ${RUN_TMO:-420} s" | tee -a "$LOG/load.log"
    [ $rc = 0 ] || { status=1; echo "load.py exit $rc (c=$c)" | tee -a "$LOG/load.log"; tail -3 "$LOG/load.log"; }
    kill -0 "$SERVER_PID" 2>/dev/null || { SERVER_PID=; fail "the server died during c=$c (server.log)"; }
done
curl -s "$URL/metrics" > "$LOG/metrics.txt"
stop_server

# the c=1 comparison: memra-bench tg128 on the same model (one process, after the server freed the GPU)
if [ -x "$BENCH" ] && [ -z "${NO_BENCH:-}" ]; then
    echo "== memra-bench tg128 $MODEL" | tee -a "$LOG/load.log"
    timeout 300 "$BENCH" "$MODEL" --backend "$BACKEND" --tests tg128 --reps 3 > "$LOG/bench-tg128.md" \
        2>> "$LOG/load.log" || echo "memra-bench exit $?" | tee -a "$LOG/load.log"
    cat "$LOG/bench-tg128.md"
fi
echo "== results"
cat "$LOG/server-load.md" 2>/dev/null
exit $status
