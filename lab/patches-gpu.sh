#!/bin/bash
# lab/patches-gpu.sh GGUF FP8 F32 — one GPU call (~6 min; the timing tables left out) for three of the
# thirty-fourth session's patches, each from its own pack: GGUF = lab/gguf-types.patch's (lab/gguf-types-gpu.sh),
# FP8 = lab/fp8-block.patch + fp8-block-moe.patch's (lab/fp8-block-gpu.sh), F32 = lab/f32-gemm-fixed.patch's (lab/f32-gemm-fixed-gpu.sh);
# the three scripts one after the other, so that one machine start serves them, each script's logs under its own
# folder of $OUT. A pack name "-" skips its script.
# Prepare (here): the packs b117, b120, b119 of lab/README.md (or rebuild them: each script's Prepare line); carry
# ["gpu/b117.tar.xz", "gpu/b120.tar.xz", "gpu/b119.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
G=${1:?usage: lab/patches-gpu.sh GGUF FP8 F32}; F=${2:?}; X=${3:?}
O=$OUT
run() { # label, script, pack: the script's logs under $OUT/label, its checks only (QUICK: no timing tables)
  [ "$3" = - ] && return
  echo "######## $1 ($3)"
  mkdir -p "$O/$1"
  OUT="$O/$1" QUICK=1 bash "$2" "$3"
}
run gguf-types lab/gguf-types-gpu.sh "$G"
run fp8-block lab/fp8-block-gpu.sh "$F"
run f32-gemm-fixed lab/f32-gemm-fixed-gpu.sh "$X"
echo "######## done"
