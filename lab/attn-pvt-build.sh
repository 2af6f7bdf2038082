#!/bin/bash
# lab/attn-pvt-build.sh NAME — builds what lab/attn-pvt-gpu.sh NAME runs, here (no GPU needed): main's kernel_attn
# and memra-bench (build/, `make build`) as NAME/x0, and kernel_attn, kernel_forward and memra-bench with
# attn_decode_tc.cu taken from main + lab/attn-tc-pvt.patch as NAME/t1 (the .cu compiled alone into a temporary
# folder and linked before libmemra_backend_cuda.a: its object defines every symbol of the library's member, which
# is then not pulled in). Packs gpu/NAME.tar.xz.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: lab/attn-pvt-build.sh NAME}
ROOT=$PWD P=/tmp/$NAME
cmake --build build -j "$(nproc)" --target kernel_attn kernel_forward memra-bench >/dev/null
rm -rf "$P"; mkdir -p "$P/x0" "$P/t1"
cp build/kernels/kernel_attn build/bin/memra-bench "$P/x0/"
TMP=$(mktemp -d)
cp src/backend/cuda/attn_decode_tc.cu "$TMP/attn_decode_tc.cu"
(cd "$TMP" && patch -s -p4 < "$ROOT/lab/attn-tc-pvt.patch")
L=/usr/local/cuda/targets/x86_64-linux/lib
cd build
nvcc -forward-unknown-to-host-compiler -DMEMRA_HAVE_CUDA=1 \
  --options-file CMakeFiles/memra_backend_cuda.dir/includes_CUDA.rsp -gencode=arch=compute_90a,code=sm_90a \
  -Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror -O3 -DNDEBUG -D_GNU_SOURCE \
  ${PVT:+-DMEMRA_ATTN_TC_PVT=$PVT} -x cu -c "$TMP/attn_decode_tc.cu" -o "$TMP/tc_t1.o"
eval g++ CMakeFiles/kernel_attn.dir/tests/kernels/kernel_attn.c.o "$TMP/tc_t1.o" -o "$P/t1/kernel_attn" \
  $(cat CMakeFiles/kernel_attn.dir/linkLibs.rsp) -L$L/stubs -L$L
eval g++ CMakeFiles/kernel_forward.dir/tests/kernels/kernel_forward.c.o "$TMP/tc_t1.o" -o "$P/t1/kernel_forward" \
  $(cat CMakeFiles/kernel_forward.dir/linkLibs.rsp) -L$L/stubs -L$L
eval g++ -static-libgcc CMakeFiles/memra-bench.dir/src/cli/bench.c.o "$TMP/tc_t1.o" -o "$P/t1/memra-bench" \
  $(cat CMakeFiles/memra-bench.dir/linkLibs.rsp) -L$L/stubs -L$L
cd "$ROOT"; rm -rf "$TMP"
strip "$P"/*/kernel_attn "$P"/*/memra-bench "$P"/t1/kernel_forward
mkdir -p gpu; tar -cJf "gpu/$NAME.tar.xz" -C /tmp "$NAME"
ls -la "gpu/$NAME.tar.xz"
