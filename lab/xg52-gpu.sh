#!/bin/bash
# lab/xg52-gpu.sh NAME — one GPU call (~6 min): two changes to the promoted GGUF GEMM checked and timed in one build
# (lab/xtma51.patch + lab/glu52.patch): x's own k tiles read from x's bf16 rows by TMA (MEMRA_GEMM_X_TILES=off, the
# new default) instead of tiles a pass made (=on), and gate|up's GLU made in one GEMM's epilogue (MEMRA_GEMM_GLU=auto,
# the new default at > 128 tokens) instead of two bf16-y GEMMs and the GLU kernel (=off). Checks: kernel_gemm
# --promoted (every promoted GEMM both ways, bit for bit; check_glu: the GLU form against the separate path and the
# down GEMM on its claim, bit for bit), kernel_forward's fixtures (and with the GLU form on every span of the GGUF
# fixtures: their logits with it off, bit for bit). Timing: random 8B Q8_0 / Q4_K_M with bf16 activations, pp4096 at
# --ubatch 4096 in two rounds and pp512 in one, three forms alternated: pass (tiles on, GLU off: the form before), tma
# (tiles off, GLU off), tma+glu (the defaults). QUICK=1 (~3 min): kernel_gemm --quick, fixtures, Q8_0 pp4096 at
# --ubatch 4096 in the three forms, two rounds. NAME: a pack of `make build` with both patches (lab/final-pack.sh NAME);
# carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/xg52-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
FMTS=q8_0,q4_k_m; [ -n "${QUICK:-}" ] && FMTS=q8_0
m8q_models $FMTS
KG=--promoted; [ -n "${QUICK:-}" ] && KG=--quick
timeout 200 $B/kernels/kernel_gemm $KG > $OUT/kg.log 2>&1
ts "kernel_gemm $KG rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $OUT/kg.log) bad," \
  "$(grep -E 'checks,' $OUT/kg.log | tail -1)"
echo "x tiles by TMA / by the pass: $(grep -c 'x tiles by TMA.*bit-identical' $OUT/kg.log) bit-identical," \
  "$(grep -c 'x tiles by TMA.*DIFFERENT' $OUT/kg.log) different"
grep -E "GLU form" $OUT/kg.log
grep -E "CHECK failed" $OUT/kg.log | head -4
grep -E "^\| (Q8_0|Q4_K|Q4_0)" $OUT/kg.log | tail -12
kf_fixtures 1- 150
# the GLU form on every span of the GGUF fixtures (256-wide FFNs: MEMRA_GEMM_PROMOTE=on), logits against GLU off
env MEMRA_ACT_TYPE=bf16 MEMRA_FORWARD_PART=fixtures MEMRA_GEMM_PROMOTE=on MEMRA_GEMM_MIN_TOKENS=4 MEMRA_GEMM_GLU=on \
  timeout 150 $B/kernels/kernel_forward > $OUT/kf-glu.log 2>&1
ts "kernel_forward bf16, GLU form on every span: rc $? $(grep -E 'checks,' $OUT/kf-glu.log | tail -1)"
echo "fixtures' logits with GLU off: $(grep -c 'glu same' $OUT/kf-glu.log) same," \
  "$(grep -c 'glu DIFF' $OUT/kf-glu.log) DIFF"
grep -E 'CHECK failed' $OUT/kf-glu.log | head -4
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
form() { # LABEL MODEL TEST FORM [XA]
  local v
  case $4 in
    pass) v="MEMRA_GEMM_X_TILES=on MEMRA_GEMM_GLU=off" ;;
    tma) v="MEMRA_GEMM_X_TILES=off MEMRA_GEMM_GLU=off" ;;
    tma+glu) v="MEMRA_GEMM_X_TILES=off MEMRA_GEMM_GLU=auto" ;;
  esac
  XA="${5:-}" TO=90 mbench "$1 $4" "$2" "$3" MEMRA_ACT_TYPE=bf16 $v
}
if [ -n "${QUICK:-}" ]; then
  for r in 1 2; do
    for f in pass tma tma+glu; do
      form "r$r q8_0 bf16-act ub4096" /tmp/m8q/llama8b-q8_0.gguf pp4096 $f "--ubatch 4096"
    done
  done
  ts done; exit 0
fi
for r in 1 2; do
  for m in q8_0 q4_k_m; do
    for f in pass tma tma+glu; do
      form "r$r $m bf16-act ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 $f "--ubatch 4096"
    done
    ts "r$r $m"
  done
done
for m in q8_0 q4_k_m; do
  for f in pass tma tma+glu; do form "$m bf16-act" /tmp/m8q/llama8b-$m.gguf pp512 $f; done
done
ts done
