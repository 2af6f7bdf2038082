#!/bin/bash
# lab/prefill-lab-gpu.sh NAME — one GPU call (~8 min) for the two waiting prefill experiments, each against main's
# build in the same call. gpu/NAME.tar.xz holds NAME/x0 (main: bin/{memra-server,memra-bench}, kernel_attn) and
# NAME/x (main with lab/span-gemm.patch and lab/attn-prefill-bm.patch applied: the same files plus kernel_gemm and
# kernel_forward). Build: see lab/README.md.
#   attn-prefill-bm.patch: the prefill attention's K fragments by ldmatrix, the mask only on tiles that need it, and
#     128 query rows a CTA for unsplit spans (MEMRA_ATTN_PREFILL_BM=128, the patch's default; 64 = the old shape with
#     the first two changes). Every prefill digest of kernel_attn must equal main's, for BM 64 and 128 (a row's
#     float operations are the same); the table's ms side by side.
#   span-gemm.patch: a step's consecutive GEMM spans as one GEMM, cuBLASLt algorithms without a split K
#     (kernel_gemm: a span inside an 80-row GEMM keeps its bits).
# Then kernel_forward (f32 and bf16 activations, the latter also with MEMRA_ATTN=fast: does the plain-bf16
# attention stay inside the mode's 5e-3?), memra-bench BF16 pp512/pp4096 main vs lab (f32, bf16, bf16 + fast
# attention), and the server at c=64 × 512 × 256, main vs lab, bf16 activations (the twenty-third run: bf16
# 3974-4360 tok/s, p99 1.22-1.29 s; f32 3198, p99 2.12 s).
cd "$(dirname "$0")/.."
. lab/gpu-prelude.sh "${1:?usage: lab/prefill-lab-gpu.sh NAME (gpu/NAME.tar.xz)}"
( python3 tools/make_test_models.py /tmp/tiny --tiny --formats bf16 > $OUT/tiny.log 2>&1 && python3 tools/make_test_models.py /tmp/t128 --tiny --tiny-head-dim 128 --formats q4_k_m,q8_0 >> $OUT/tiny.log 2>&1; echo "tiny rc $?" >> $OUT/tiny.log ) &
TK=$!
for v in main:x0:128 lab64:x:64 lab128:x:128; do
  IFS=: read -r name dir bm <<< "$v"
  MEMRA_ATTN_PREFILL_BM=$bm timeout 120 $B/$dir/kernel_attn --prefill > $OUT/ka-$name.log 2>&1
  ts "kernel_attn --prefill $name rc $? $(grep -E '[0-9]+ checks' $OUT/ka-$name.log | tail -1)"
  grep -o 'digest [0-9a-f]*' $OUT/ka-$name.log > $OUT/dig-$name.txt
done
for name in lab64 lab128; do
  cmp -s $OUT/dig-main.txt $OUT/dig-$name.txt && echo "digests $name = main ($(wc -l < $OUT/dig-main.txt))" || echo "DIGESTS $name DIFFER from main"
done
grep -m1 "^| pos0" $OUT/ka-main.log
for name in main lab64 lab128; do grep -E "^\| [0-9]+ \| [0-9]+ \|" $OUT/ka-$name.log | sed "s/^/$name /"; done
timeout 100 $B/x/kernel_gemm --quick > $OUT/kg.log 2>&1; ts "kernel_gemm rc $?"; grep -E "CHECK failed|checks,|inside a GEMM" $OUT/kg.log | tail -8
wait $TK; ts "tiny: $(tail -1 $OUT/tiny.log)"
KF="MEMRA_EXTRA_MODELS=/tmp/t128/llama8b-q4_k_m.gguf,/tmp/t128/llama8b-q8_0.gguf MEMRA_DEEP_MODEL=/tmp/tiny/hf-bf16 MEMRA_FORWARD_PART=fixtures MEMRA_KV_TYPE=bf16"
env $KF timeout 150 $B/x/kernel_forward > $OUT/kf.log 2>&1; ts "kernel_forward f32 act rc $?"; grep -E "CHECK failed|checks," $OUT/kf.log | tail -4
env $KF MEMRA_ACT_TYPE=bf16 timeout 150 $B/x/kernel_forward > $OUT/kf-act.log 2>&1; ts "kernel_forward bf16 act rc $?"; grep -E "CHECK failed|checks,|near tie" $OUT/kf-act.log | tail -5
env $KF MEMRA_ACT_TYPE=bf16 MEMRA_ATTN=fast timeout 150 $B/x/kernel_forward > $OUT/kf-fast.log 2>&1; ts "kernel_forward bf16 act + fast attention rc $?"; grep -E "CHECK failed|checks,|near tie|worst" $OUT/kf-fast.log | tail -6
wait $MK; ts "m8b: $(tail -1 $OUT/make.log)"
M=/tmp/m8b/hf-bf16
bench() { # label dir env...
  local label=$1 dir=$2; shift 2
  env "$@" timeout 100 $B/$dir/bin/memra-bench $M --backend cuda --tests pp512,pp4096 --reps 3 2>&1 | grep -E "^\| .*pp" | sed "s/^/$label: /"
}
for round in 1 2; do
  bench main-f32 x0 MEMRA_ACT_TYPE=f32; bench lab-f32 x MEMRA_ACT_TYPE=f32
  bench main-bf16 x0 MEMRA_ACT_TYPE=bf16; bench lab-bf16 x MEMRA_ACT_TYPE=bf16
  [ $round = 1 ] && { bench lab-bf16-fast x MEMRA_ACT_TYPE=bf16 MEMRA_ATTN=fast; bench lab-bf16-bm64 x MEMRA_ACT_TYPE=bf16 MEMRA_ATTN_PREFILL_BM=64; }
done
ts "benches done"
srv() { # label dir act
  MEMRA_ACT_TYPE=$3 MEMRA_LOG_LEVEL=debug OUT=/tmp/srv BUILD=$B/$2 NO_BENCH=1 RUN_TMO=60 timeout 80 \
    bench/run-server.sh /tmp/m8b/hf-bf16 "64x512x256" > /tmp/srv.txt 2>&1
  echo "$1 rc $? $(grep -o '"agg_tok_s": [0-9.]*\|"ttft_p50_ms": [0-9.]*\|"ttft_p99_ms": [0-9.]*\|"texts_sha256": "[0-9a-f]*"' /tmp/srv/load.log | tr '\n' ' ')"
  rm -rf /tmp/srv
}
srv lab-bf16 x bf16; srv main-bf16 x0 bf16; srv lab-f32 x f32; srv lab-bf16-again x bf16
ts done
