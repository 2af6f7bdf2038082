#!/bin/bash
# lab/gemm-holes-gpu.sh NAME — cuBLASLt's holes at 32 / 48 / 64 tokens (bench/RESULTS.md, thirty-ninth run) and
# lab/gemm-holes.patch's two ways around them (~5 min): MEMRA_LAB_GEMM_PICK first (today: the heuristic's first
# algorithm without a split K) / nref (the heuristic asked at n + 8, its choice checked at n) / time (every no-split
# candidate of n and n + 8 timed once when the plan is made). 1. the candidates and picks at pp48 (log); 2.
# kernel_forward's fixtures under MEMRA_GEMM_MIN_TOKENS=4 with time (another algorithm: within tolerance, batch 16 =
# alone); 3. memra-bench ppN on the random 8B Q4_K_M (dequantized GEMM) with every span on the GEMM, bf16 and f32
# activations, each pick; 4. the same on the random 8B BF16 (plain GEMM) if time is left.
cd "$(dirname "$0")/.."
O=$OUT
. lab/gpu-prelude.sh "${1:?usage: lab/gemm-holes-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
python3 tools/make_test_models.py /tmp/m8q --formats q4_k_m > $O/makeq.log 2>&1; ts "q4_k_m: $(tail -1 $O/makeq.log)"
M=/tmp/m8q/llama8b-q4_k_m.gguf
ts "######## 1 log at pp48"
for pk in first time; do
  MEMRA_LAB_GEMM_LOG=1 MEMRA_LAB_GEMM_PICK=$pk MEMRA_ACT_TYPE=bf16 MEMRA_GEMM_MIN_TOKENS=8 timeout 60 $B/bin/memra-bench $M \
    --backend cuda --tests pp48 --reps 1 > $O/log-$pk.txt 2>&1
  grep LABGEMM $O/log-$pk.txt | grep -E "k 4096 .*(pick|timed|cand)" | grep -E "m 4096 |m 28672 " | head -30
done
ts "######## 2 fixtures, pick time"
MEMRA_LAB_GEMM_PICK=time MEMRA_GEMM_MIN_TOKENS=4 MEMRA_FORWARD_PART=fixtures timeout 120 $B/kernels/kernel_forward > $O/kf.log 2>&1
echo "rc $?"; grep -E "CHECK failed|cases," $O/kf.log | head -6
ts "######## 3 q4_k_m ppN"
T=pp32,pp36,pp48,pp52,pp64,pp72,pp80,pp128,pp512
for act in bf16 f32; do
  for pk in first nref time; do
    TO=120 mbench "q4_k_m $act $pk" $M $T MEMRA_ACT_TYPE=$act MEMRA_GEMM_MIN_TOKENS=8 MEMRA_LAB_GEMM_PICK=$pk
  done
done
wait $MK; ts "######## 4 bf16 model: $(tail -1 $O/make.log)"
for pk in first time; do
  TO=120 mbench "bf16 model bf16-act $pk" /tmp/m8b/hf-bf16 pp16,pp32,pp36,pp48,pp64,pp80,pp512 MEMRA_ACT_TYPE=bf16 MEMRA_LAB_GEMM_PICK=$pk
done
ts "######## done"
