# lab/gpu-prelude.sh NAME — sourced (from the repository root) by the lab's GPU scripts: unpacks gpu/NAME.tar.xz into
# /tmp (B=/tmp/NAME), installs the carried wheels (.whl; docs/SERVING.md says which: no typing_extensions) into
# /tmp/site, defines ts (elapsed seconds), mbench, mbench_ab, ka_one, gguf_rows, m8q_models, gguf_models, kf_fixtures
# and kf_extra (below), and, unless PRELUDE_MODEL=0, starts the random 8B BF16 model's generation in the background (MK:
# its pid, empty without it; make.log's last line its status). With REQUIRE_GPU=TEXT (e.g. H200) it first stops the
# script (exit 3) unless the GPU's name holds TEXT: a call that wants one kind's figures costs seconds, not minutes,
# when the other kind is lent (forty-fifth session: every call got an H100).
set -u
if [ -n "${REQUIRE_GPU:-}" ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "$REQUIRE_GPU"; then
  echo "not a $REQUIRE_GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader); stopped"
  exit 3
fi
T0=$(date +%s); ts() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
tar -xJf "gpu/$1.tar.xz" -C /tmp
B=/tmp/$1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl | grep -v typing_extensions) > $OUT/pip.log 2>&1
export PYTHONPATH=/tmp/site
MK=
if [ "${PRELUDE_MODEL:-1}" != 0 ]; then
  ( python3 tools/make_test_models.py /tmp/m8b --formats bf16 > $OUT/make.log 2>&1; echo "make rc $?" >> $OUT/make.log ) &
  MK=$!
fi
# mbench LABEL MODEL TESTS [VAR=value...]: memra-bench --reps 3 on the GPU with those variables set, one line a
# test (test | tok/s | GB/s or TFLOP/s | % of the limit) and any error, each after LABEL; MB: another memra-bench
# (default $B/bin/memra-bench), XA: more arguments, TO: the timeout (default 150 s).
mbench() {
  local l=$1 m=$2 t=$3; shift 3
  env "$@" timeout "${TO:-150}" "${MB:-$B/bin/memra-bench}" "$m" --backend cuda --tests "$t" --reps 3 ${XA:-} 2>&1 |
    grep -E "^\| .*(tg|pp)|rror|memra-bench:" | grep -v "^memra-bench: [a-z0-9]* (" | cut -d'|' -f6-9 | sed "s/^/$l: /"
}
# mbench_ab LABEL MODEL TESTS VAR A B: mbench with VAR=A, then VAR=B, two rounds (labels "rR LABEL A"...).
mbench_ab() {
  local l=$1 m=$2 t=$3 v=$4 a=$5 b=$6 r x
  for r in 1 2; do
    for x in "$a" "$b"; do
      mbench "r$r $l $x" "$m" "$t" "$v=$x"
    done
  done
}
# ka_one KA DEPTH BATCH [warm|cold [H:KVH]]: the kernel_attn binary KA's --one row of the launcher's rule on the
# tensor cores, bf16 KV, head split auto (the decode attention alone, µs a launch incl. combine).
ka_one() {
  local ka=$1; shift
  MEMRA_ATTN_DECODE=tc timeout 60 "$ka" --one "$1" "$2" bf16 "${@:3}" 2>&1 | grep -E "^\| [0-9]" |
    grep "auto tc | bf16 | auto"
}
# gguf_rows FMT [tg]: issue 5's GGUF prefill rows of the random 8B /tmp/m8q/llama8b-FMT.gguf — pp512 / pp4096 with
# bf16 activations, pp4096 at --ubatch 4096 — and with `tg` its tg128 / tg128@d4096 too (labels "FMT bf16-act"...).
gguf_rows() {
  local m=/tmp/m8q/llama8b-$1.gguf
  TO=90 mbench "$1 bf16-act" $m pp512,pp4096 MEMRA_ACT_TYPE=bf16
  XA="--ubatch 4096" TO=90 mbench "$1 bf16-act ub4096" $m pp4096 MEMRA_ACT_TYPE=bf16
  if [ "${2:-}" = tg ]; then TO=90 mbench "$1" $m tg128,tg128@d4096; fi
}
# m8q_models FMTS: the random 8B GGUFs /tmp/m8q/llama8b-FMT.gguf of the comma-separated FMTS made in the background
# (MQ: its pid; /tmp/makeq.log's last line its status: rc N).
m8q_models() {
  ( python3 tools/make_test_models.py /tmp/m8q --formats "$1" > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
  MQ=$!
}
# gguf_models FMT: the random 8B GGUF /tmp/m8q/llama8b-FMT.gguf (MQ: its pid; /tmp/makeq.log's last line its status)
# and the tiny models gpu/tiny (BF16) and gpu/t128 (head_dim 128, FMT: gpu/t128/llama8b-FMT.gguf; MT: their pid;
# /tmp/t128.log) made in the background.
gguf_models() {
  m8q_models "$1"
  ( python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1
    python3 tools/make_test_models.py gpu/t128 --tiny --tiny-head-dim 128 --formats "$1" > /tmp/t128.log 2>&1
    echo "rc $?" >> /tmp/t128.log ) &
  MT=$!
}
# kf_fixtures PREFIX [TIMEOUT]: kernel_forward's fixtures, f32 then bf16 activations, then bf16 activations on a bf16
# KV cache (the server's throughput setting) with the tiny head_dim-128 BF16 model gpu/t128/hf-bf16 as an extra (its
# attention on the wgmma kernel) ($OUT/PREFIXkf-{f32,bf16,bf16kv}.log; a line each and any failed checks), after
# making the tiny models (the deep-check gpu/tiny/hf-bf16 and gpu/t128/hf-bf16) where missing.
kf_fixtures() {
  local p=$1 to=${2:-120} act
  [ -d gpu/tiny/hf-bf16 ] || python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > /tmp/tiny.log 2>&1 ||
    ts "tiny model failed"
  [ -d gpu/t128/hf-bf16 ] || python3 tools/make_test_models.py gpu/t128 --tiny --tiny-head-dim 128 --formats bf16 \
    > /tmp/t128b.log 2>&1 || ts "t128 model failed"
  for act in f32 bf16 bf16kv; do
    env MEMRA_ACT_TYPE=${act%kv} MEMRA_FORWARD_PART=fixtures \
      $([ $act = bf16kv ] && echo MEMRA_KV_TYPE=bf16 MEMRA_EXTRA_MODELS=gpu/t128/hf-bf16) \
      timeout "$to" $B/kernels/kernel_forward > $OUT/${p}kf-$act.log 2>&1
    ts "kernel_forward $act rc $? $(grep -E 'checks,' $OUT/${p}kf-$act.log | tail -1)"
    grep -E 'CHECK failed' $OUT/${p}kf-$act.log | head -4
  done
}
# kg_quick [TO] [VAR=value...]: kernel_gemv --quick (timeout TO, default 120 s) with those variables set; a line with
# its rc and checks, then any failed check ($OUT/kernel_gemv.log).
kg_quick() {
  local to=${1:-120}
  [ $# -gt 0 ] && shift
  env "$@" timeout "$to" $B/kernels/kernel_gemv --quick > $OUT/kernel_gemv.log 2>&1
  ts "kernel_gemv --quick rc $? $(grep -E 'checks,' $OUT/kernel_gemv.log | tail -1)"
  grep -E "CHECK failed" $OUT/kernel_gemv.log | head -5
}
# kf_extra LABEL FMT [VAR=value...]: once gguf_models' tiny models are made, kernel_forward's fixtures with gpu/t128's
# FMT GGUF as an extra model, f32 then bf16 activations, those variables set ($OUT/2-kf-ACT.log; a line each, any
# failed checks and the extra model's row).
kf_extra() {
  local l=$1 f=$2 act; shift 2
  wait $MT; ts "tiny models: $(tail -1 /tmp/t128.log)"
  for act in f32 bf16; do
    env MEMRA_EXTRA_MODELS=gpu/t128/llama8b-$f.gguf MEMRA_ACT_TYPE=$act MEMRA_FORWARD_PART=fixtures "$@" \
      timeout 60 $B/kernels/kernel_forward > $OUT/2-kf-$act.log 2>&1
    echo "kernel_forward $l $act rc $? $(grep -E 'checks,' $OUT/2-kf-$act.log | tail -1)"
    grep -E "CHECK failed" $OUT/2-kf-$act.log | head -4
    grep -E "^\| llama8b-$f" $OUT/2-kf-$act.log | head -2
  done
}
