#!/bin/bash
# lab/final-pack.sh NAME [X0] — packs `make build`'s memra-server, memra-bench and the kernel tests kernel_attn,
# kernel_forward, kernel_gemm, kernel_gemv, kernel_mmv, kernel_moe as gpu/NAME.tar.xz (NAME/bin, NAME/kernels) for
# lab/final-gpu.sh NAME and the other scripts; with X0 (an earlier pack's name, gpu/X0.tar.xz) its memra-bench goes in as NAME/x0/memra-bench,
# the baseline an A/B script runs beside the new build.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: lab/final-pack.sh NAME}
P=/tmp/$NAME
rm -rf "$P"; mkdir -p "$P/bin" "$P/kernels"
cp build/bin/memra-server build/bin/memra-bench "$P/bin/"
cp build/kernels/kernel_attn build/kernels/kernel_forward build/kernels/kernel_gemm build/kernels/kernel_gemv \
   build/kernels/kernel_mmv build/kernels/kernel_moe "$P/kernels/"
strip "$P"/bin/* "$P"/kernels/*
if [ -n "${2:-}" ]; then
  mkdir -p "$P/x0"
  tar -xJf "gpu/$2.tar.xz" -C "$P/x0" --strip-components=2 "$2/bin/memra-bench"
fi
mkdir -p gpu; tar -cJf "gpu/$NAME.tar.xz" -C /tmp "$NAME"
ls -la "gpu/$NAME.tar.xz"
