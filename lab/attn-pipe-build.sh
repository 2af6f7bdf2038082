#!/bin/bash
# lab/attn-pipe-build.sh NAME — builds what lab/attn-pipe-gpu.sh NAME runs, here (no GPU needed): main's
# kernel_attn and memra-bench (build/, `make build`) as NAME/x0 (with bin/memra-server for the batch-tokens sweep), and the same two programs with
# src/backend/cuda/attn_decode_tc.cu replaced by main's + lab/attn-tc-pipe.patch, compiled with
# MEMRA_ATTN_TC_ROWS_STAGES 3 (p3) and 4 (p4) and linked before libmemra_backend_cuda.a (the object defines every
# symbol of the library's member, so the member is not pulled in). Packs gpu/NAME.tar.xz (carry it and .whl).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: lab/attn-pipe-build.sh NAME}
ROOT=$PWD P=/tmp/$NAME
cmake --build build -j "$(nproc)" --target kernel_attn memra-bench memra-server >/dev/null
rm -rf "$P"; mkdir -p "$P/x0" "$P/p3" "$P/p4"
cp build/kernels/kernel_attn build/bin/memra-bench "$P/x0/"; mkdir -p "$P/x0/bin"; cp build/bin/memra-server "$P/x0/bin/"
SRC=$(mktemp -d); cp src/backend/cuda/attn_decode_tc.cu "$SRC/"
(cd "$SRC" && patch -s -p4 < "$ROOT/lab/attn-tc-pipe.patch")
L=/usr/local/cuda/targets/x86_64-linux/lib
cd build
for st in 3 4; do
  nvcc -forward-unknown-to-host-compiler -DMEMRA_HAVE_CUDA=1 --options-file CMakeFiles/memra_backend_cuda.dir/includes_CUDA.rsp \
    -gencode=arch=compute_90a,code=sm_90a -Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror -O3 -DNDEBUG -D_GNU_SOURCE \
    -DMEMRA_ATTN_TC_ROWS_STAGES=$st -I"$ROOT/src" -x cu -c "$SRC/attn_decode_tc.cu" -o "$SRC/tc_p$st.o"
  eval g++ CMakeFiles/kernel_attn.dir/tests/kernels/kernel_attn.c.o "$SRC/tc_p$st.o" -o "$P/p$st/kernel_attn" \
    $(cat CMakeFiles/kernel_attn.dir/linkLibs.rsp) -L$L/stubs -L$L
  eval g++ -static-libgcc CMakeFiles/memra-bench.dir/src/cli/bench.c.o "$SRC/tc_p$st.o" -o "$P/p$st/memra-bench" \
    $(cat CMakeFiles/memra-bench.dir/linkLibs.rsp) -L$L/stubs -L$L
done
cd "$ROOT"; rm -rf "$SRC"
strip "$P"/*/kernel_attn "$P"/*/memra-bench "$P"/x0/bin/memra-server
mkdir -p gpu; tar -cJf "gpu/$NAME.tar.xz" -C /tmp "$NAME"
ls -la "gpu/$NAME.tar.xz"
