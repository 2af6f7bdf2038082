#!/bin/bash
# lab/prefill-lab-build.sh NAME — builds what lab/prefill-lab-gpu.sh NAME runs, here (no GPU needed): main's build
# (build/, `make build`) as NAME/x0 and main with lab/span-gemm.patch + lab/attn-prefill-bm.patch applied (a git
# worktree at ../lab-tree, its own build/) as NAME/x, stripped, packed as gpu/NAME.tar.xz (carry ["gpu", ".whl"]).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: lab/prefill-lab-build.sh NAME}
ROOT=$PWD LT=$PWD/../lab-tree
cmake --build build -j "$(nproc)" --target memra-server memra-bench kernel_attn >/dev/null
[ -d "$LT" ] || { git worktree add -q "$LT" HEAD && git -C "$LT" apply "$ROOT/lab/span-gemm.patch" "$ROOT/lab/attn-prefill-bm.patch"; }
cmake -S "$LT" -B "$LT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$LT/build" -j "$(nproc)" --target memra-server memra-bench kernel_attn kernel_gemm kernel_forward >/dev/null
P=/tmp/$NAME; rm -rf "$P"; mkdir -p "$P/x0/bin" "$P/x/bin"
cp build/bin/memra-server build/bin/memra-bench "$P/x0/bin/"; cp build/kernels/kernel_attn "$P/x0/"
cp "$LT"/build/bin/memra-server "$LT"/build/bin/memra-bench "$P/x/bin/"
cp "$LT"/build/kernels/kernel_attn "$LT"/build/kernels/kernel_gemm "$LT"/build/kernels/kernel_forward "$P/x/"
strip "$P"/x0/bin/* "$P"/x0/kernel_attn "$P"/x/bin/* "$P"/x/kernel_*
mkdir -p gpu; tar -cJf "gpu/$NAME.tar.xz" -C /tmp "$NAME"
ls -la "gpu/$NAME.tar.xz"
