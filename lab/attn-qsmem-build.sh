#!/bin/bash
# lab/attn-qsmem-build.sh NAME — builds what lab/attn-qsmem-gpu.sh NAME runs, here (no GPU needed): main's
# kernel_attn and memra-bench (build/, `make build`) as NAME/x0, and the same two programs with
# attn_decode_tc.cu and mma_bf16.cuh taken from main + lab/attn-tc-qsmem.patch (a temporary include root ahead of
# src/), the .cu compiled alone and linked before libmemra_backend_cuda.a (its object defines every symbol of the
# library's member, which is then not pulled in): q1 with main's ring (3 stages), q2 with a 2-stage rows-form ring
# (MEMRA_ATTN_TC_ROWS_STAGES=2: 48 KB a CTA, 4 CTAs an SM at 126 registers). Packs gpu/NAME.tar.xz.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: lab/attn-qsmem-build.sh NAME}
ROOT=$PWD P=/tmp/$NAME
cmake --build build -j "$(nproc)" --target kernel_attn memra-bench >/dev/null
rm -rf "$P"; mkdir -p "$P/x0" "$P/q1" "$P/q2"
cp build/kernels/kernel_attn build/bin/memra-bench "$P/x0/"
INC=$(mktemp -d); mkdir -p "$INC/backend/cuda"
cp src/backend/cuda/attn_decode_tc.cu src/backend/cuda/mma_bf16.cuh "$INC/backend/cuda/"
(cd "$INC/backend/cuda" && patch -s -p4 < "$ROOT/lab/attn-tc-qsmem.patch")
L=/usr/local/cuda/targets/x86_64-linux/lib
cd build
for v in q1:3 q2:2; do
  n=${v%%:*} st=${v##*:}
  nvcc -forward-unknown-to-host-compiler -DMEMRA_HAVE_CUDA=1 -I"$INC" \
    --options-file CMakeFiles/memra_backend_cuda.dir/includes_CUDA.rsp -gencode=arch=compute_90a,code=sm_90a \
    -Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror -O3 -DNDEBUG -D_GNU_SOURCE -DMEMRA_ATTN_TC_ROWS_STAGES=$st \
    -x cu -c "$INC/backend/cuda/attn_decode_tc.cu" -o "$INC/tc_$n.o"
  eval g++ CMakeFiles/kernel_attn.dir/tests/kernels/kernel_attn.c.o "$INC/tc_$n.o" -o "$P/$n/kernel_attn" \
    $(cat CMakeFiles/kernel_attn.dir/linkLibs.rsp) -L$L/stubs -L$L
  eval g++ -static-libgcc CMakeFiles/memra-bench.dir/src/cli/bench.c.o "$INC/tc_$n.o" -o "$P/$n/memra-bench" \
    $(cat CMakeFiles/memra-bench.dir/linkLibs.rsp) -L$L/stubs -L$L
done
cd "$ROOT"; rm -rf "$INC"
strip "$P"/*/kernel_attn "$P"/*/memra-bench
mkdir -p gpu; tar -cJf "gpu/$NAME.tar.xz" -C /tmp "$NAME"
ls -la "gpu/$NAME.tar.xz"
