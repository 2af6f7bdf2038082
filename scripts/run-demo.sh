#!/usr/bin/env bash
# scripts/run-demo.sh BUILD — what `make run` does after building: fetch the
# default model once, print a chat answer from it, then start the server on it
# (in the foreground; Ctrl-C stops it). Each stage runs when its program exists.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODEL=$(scripts/fetch-model.sh)
BIN="$BUILD/bin"

if [ -x "$BIN/run-gen" ]; then
  echo "== chat with $MODEL (memra's run-gen; GPU when present, CPU otherwise)"
  MEMRA_CHAT=1 "$BIN/run-gen" "$MODEL" --max-tokens 128 \
    --prompt "${MEMRA_PROMPT:-What is the capital of France? Answer in one sentence.}"
else
  echo "== $MODEL (run-gen is not built yet; showing its contents)"
  "$BIN/memra-inspect" "$MODEL" | head -60
fi

if [ -x "$BIN/memra-server" ]; then
  addr=${MEMRA_ADDR:-127.0.0.1:8080}
  echo "== starting memra-server on http://$addr (Ctrl-C to stop); try:"
  echo "   curl http://$addr/v1/chat/completions -H 'Content-Type: application/json' \\"
  echo "     -d '{\"model\":\"smollm2\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello!\"}]}'"
  MEMRA_MODELS="smollm2=$MODEL" MEMRA_ADDR="$addr" exec "$BIN/memra-server"
fi
