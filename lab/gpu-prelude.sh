# lab/gpu-prelude.sh NAME — sourced (from the repository root) by the lab's GPU scripts: unpacks gpu/NAME.tar.xz
# into /tmp (B=/tmp/NAME), installs the carried wheels (.whl; docs/SERVING.md says which: no typing_extensions)
# into /tmp/site, defines ts (elapsed seconds), mbench and mbench_ab (below), and, unless PRELUDE_MODEL=0, starts
# the random 8B BF16 model's generation in the background (MK: its pid, empty without it; make.log's last line its
# status).
set -u
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
