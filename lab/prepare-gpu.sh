#!/bin/bash
# lab/prepare-gpu.sh — rebuilds, from a fresh checkout, everything the prepared GPU calls carry. gpu/ and .whl/ are
# git-ignored, so a new session's checkout has none of what an earlier session built; run this first (it takes
# ~25 min on 2 cores, so in the background: `nohup bash lab/prepare-gpu.sh > /tmp/prep.log 2>&1 &`) and the calls
# in lab/README.md can go as soon as it ends. Nothing here needs a GPU. Steps (each skipped when its output exists;
# FORCE=1 redoes all):
#   1. .whl/: the wheels the GPU image lacks — gguf 0.19.0 (tools/make_test_models.py writes the GGUF test models
#      with it), openai 3.57.0 and those of its dependencies the image lacks (docs/SERVING.md; not typing_extensions
#      or anyio: the image's own are what its packages need), for CPython 3.12 — and .whl/tok-llama3
#      (bench/make_llama3_tokenizer.py: memra-server's tokenizer for the random 8B models);
#   2. `make build` of this checkout (the prototypes link its libraries), packed as gpu/main.tar.xz
#      (lab/final-gpu.sh main);
#   3. gpu/sk.tar.xz: this checkout's HEAD + lab/skip-kernels.patch (lab/skip-kernels-gguf-gpu.sh sk), built in a
#      git worktree (/tmp/wt-sk) so that the checkout stays as it is.
# The sizes it prints are what the calls carry (64 MiB a call with the tree).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
T0=$(date +%s)
say() { echo "[prepare-gpu t=$(( $(date +%s) - T0 ))s] $*"; }
need() { [ "${FORCE:-0}" = 1 ] || [ ! -e "$1" ]; }
mkdir -p gpu .whl
J=${JOBS:-$(nproc)}

if need .whl/openai-3.57.0-py3-none-any.whl || need .whl/gguf-0.19.0-py3-none-any.whl; then
  say "wheels"
  pip_dl() { python3 -m pip download -q --disable-pip-version-check --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d .whl "$@"; }
  pip_dl openai==3.57.0
  pip_dl --no-deps gguf==0.19.0
  rm -f .whl/typing_extensions-*.whl .whl/anyio-*.whl
fi
if need .whl/tok-llama3/tokenizer.json; then
  say "Llama-3 tokenizer"
  if ! python3 -c 'import gguf' 2> /dev/null; then # the tests' packages (make test installs them) hold gguf
    scripts/install-deps.sh > /dev/null
  fi
  python3 bench/make_llama3_tokenizer.py --out .whl/tok-llama3
fi

if need gpu/main.tar.xz; then
  say "make build (this checkout)"
  make build JOBS="$J" > /tmp/prepare-main.log 2>&1 || { tail -20 /tmp/prepare-main.log; exit 1; }
  bash lab/final-pack.sh main
fi

# pack_patch NAME PATCH: HEAD + PATCH built in /tmp/wt-NAME, packed as gpu/NAME.tar.xz here
pack_patch() {
  local name=$1 patch=$2 wt=/tmp/wt-$1
  need "gpu/$name.tar.xz" || return 0
  say "$name: HEAD + $patch"
  git worktree remove --force "$wt" 2> /dev/null || rm -rf "$wt"
  git worktree prune
  git worktree add -q --detach "$wt" HEAD
  (cd "$wt" && git apply "$ROOT/$patch" && make build JOBS="$J" > "/tmp/prepare-$name.log" 2>&1 &&
     bash lab/final-pack.sh "$name") || { tail -20 "/tmp/prepare-$name.log"; exit 1; }
  mv "$wt/gpu/$name.tar.xz" gpu/
  git worktree remove --force "$wt"
}
pack_patch sk lab/skip-kernels.patch
say "done"
ls -la gpu .whl
du -sh gpu/* .whl
