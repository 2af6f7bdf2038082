#!/bin/bash
# lab/pick-reps-gpu.sh NAME — one GPU call (~3 min; BUDGET=seconds, default 240) for lab/pick-reps.patch: whether
# the short spans' 10-20 % spread between runs (fortieth run, calls 8-9: Q4_K_M bf16 pp40 2487-3497 tok/s) comes
# from plan_time_pick's one timed run a candidate. Three fresh memra-bench processes each with MEMRA_LAB_PICK_REPS=1
# (main's rule) and 3 (the fastest of three), Q4_K_M and BF16 with bf16 activations, pp32 / pp40 / pp48 / pp64: a
# smaller spread across processes at 3 says it is the pick. Build as lab/gemv-mma-big-gpu.sh says, with this patch
# (both patches apply together: one worktree, one pack, both scripts in one call); carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
. lab/gpu-prelude.sh "${1:?usage: lab/pick-reps-gpu.sh NAME}" # starts the BF16 model (/tmp/m8b)
left() { echo $(( ${BUDGET:-240} - ($(date +%s) - T0) )); }
part() { if [ "$(left)" -lt "$2" ]; then echo "######## $1: skipped, $(left) s left"; return 1; fi; ts "######## $1"; }
[ -f /tmp/m8q/llama8b-q4_k_m.gguf ] || python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > /tmp/makeq.log 2>&1
ts "m8q ready"
if part "1 Q4_K_M, MEMRA_LAB_PICK_REPS 1 / 3, three processes each" 60; then
  for p in 1 2 3; do
    for r in 1 3; do
      TO=60 mbench "proc $p reps $r" /tmp/m8q/llama8b-q4_k_m.gguf pp32,pp40,pp48,pp64 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_PICK_REPS=$r
    done
  done
fi
wait $MK; ts "m8b: $(tail -1 $O/make.log)"
if part "2 BF16, the same" 60; then
  for p in 1 2 3; do
    for r in 1 3; do
      TO=60 mbench "bf16 proc $p reps $r" /tmp/m8b/hf-bf16 pp32,pp40,pp48,pp64 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_PICK_REPS=$r
    done
  done
fi
ts "######## done"
