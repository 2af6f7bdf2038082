#!/bin/bash
# lab/final-pack.sh NAME — packs `make build`'s memra-server, memra-bench, kernel_attn and kernel_forward as
# gpu/NAME.tar.xz (NAME/bin, NAME/kernels) for lab/final-gpu.sh NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: lab/final-pack.sh NAME}
P=/tmp/$NAME
rm -rf "$P"; mkdir -p "$P/bin" "$P/kernels"
cp build/bin/memra-server build/bin/memra-bench "$P/bin/"
cp build/kernels/kernel_attn build/kernels/kernel_forward build/kernels/kernel_gemm "$P/kernels/"
strip "$P"/bin/* "$P"/kernels/*
mkdir -p gpu; tar -cJf "gpu/$NAME.tar.xz" -C /tmp "$NAME"
ls -la "gpu/$NAME.tar.xz"
