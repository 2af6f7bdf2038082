#!/bin/bash
# lab/stages-gpu.sh NAME VARS — one GPU call (~8 min): the tensor-core decode attention's ring stages of the split form
# (attn_decode_tc.cu MEMRA_ATTN_TC_STAGES: 3 in NAME, each of gpu/VARS.tar.xz's VARS/vN/{memra-bench,kernel_attn}
# built with N). A lone row at depth 4096 has 4 chunks a split: 3 stages keep 3 in flight, 4 all of them. First the
# forty-seventh session's last build checked (kernel_gemm --promoted, kernel_forward's fixtures); then for each build
# kernel_attn --decode-tc (its digests must equal NAME's: the stages change no operation), kernel_attn --one tables
# (one row at 512 / 4096 / 16384, 4 rows at 4096) and the random 8B Q4_K_M / Q8_0 tg128 and tg128@d4096, alternated
# twice; on an H200 at the end issue 5's GGUF prefill rows at NAME (lab/check47-gpu.sh's).
# Carry ["gpu/NAME.tar.xz", "gpu/VARS.tar.xz", ".whl", "lab/stages-gpu.sh"].
cd "$(dirname "$0")/.."
O=$OUT
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/stages-gpu.sh NAME VARS}"
tar -xJf "gpu/${2:?VARS}.tar.xz" -C /tmp
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
( python3 tools/make_test_models.py /tmp/m8q --formats q8_0,q4_k_m > /tmp/makeq.log 2>&1; echo "rc $?" >> /tmp/makeq.log ) &
MQ=$!
VS=$(ls -d /tmp/vars/v* | xargs -n1 basename | tr '\n' ' ')
timeout 120 $B/kernels/kernel_gemm --promoted > $O/kg.log 2>&1
ts "kernel_gemm --promoted rc $? $(grep -cE 'FAIL|DIFFERENT|STALE' $O/kg.log) bad, $(tail -1 $O/kg.log)"
kf_fixtures 1- 150
for v in base $VS; do
  KA=$([ $v = base ] && echo $B/kernels/kernel_attn || echo /tmp/vars/$v/kernel_attn)
  timeout 100 $KA --decode-tc > /tmp/dtc-$v.log 2>&1
  ts "$v kernel_attn --decode-tc rc $? $(grep -E '[0-9]+ checks' /tmp/dtc-$v.log | tail -1)"
  grep -o "digest [0-9a-f]*" /tmp/dtc-$v.log > /tmp/dig-$v.txt
  [ $v = base ] || echo "$v digests vs base: $(wc -l < /tmp/dig-$v.txt) lines, $(diff /tmp/dig-base.txt /tmp/dig-$v.txt > /dev/null && echo same || echo DIFFERENT)"
  for db in "512 1" "4096 1" "16384 1" "4096 4"; do
    MEMRA_ATTN_DECODE=tc timeout 60 $KA --one $db 2>&1 | grep -E "^\| [0-9]" | grep -E "tc \| bf16 \| auto" | sed "s/^/$v: /"
  done
done
cp /tmp/dtc-base.log $O/
wait $MQ; ts "m8q $(tail -1 /tmp/makeq.log)"
for r in 1 2; do
  for v in base $VS; do
    MB=$([ $v = base ] && echo $B/bin/memra-bench || echo /tmp/vars/$v/memra-bench)
    MB=$MB TO=100 mbench "r$r q4_k_m $v" /tmp/m8q/llama8b-q4_k_m.gguf tg128,tg128@d4096
    [ $r = 1 ] && MB=$MB TO=100 mbench "r$r q8_0 $v" /tmp/m8q/llama8b-q8_0.gguf tg128,tg128@d4096
  done
done
ts "decode done"
if echo "$G" | grep -q H200; then
  for m in q8_0 q4_k_m; do
    TO=90 mbench "$m bf16-act" /tmp/m8q/llama8b-$m.gguf pp512,pp4096 MEMRA_ACT_TYPE=bf16
    XA="--ubatch 4096" TO=90 mbench "$m bf16-act ub4096" /tmp/m8q/llama8b-$m.gguf pp4096 MEMRA_ACT_TYPE=bf16
  done
fi
ts done
