#!/bin/bash
# lab/kvp49-gpu.sh NAME — one GPU call (~4 min): the layer's settled keys and values asked into L2 before its q|k|v
# GEMVs (lab/kv-prefetch.patch: MEMRA_LAB_KV_PREFETCH=1, a kernel after the attention's RMSNorm issuing
# cp.async.bulk.prefetch.L2 of the rows' KV blocks), so the attention finds them there: random 8B Q4_K_M tg128 /
# tg128@d512 / tg128@d4096 (TESTS) off and on alternated twice, Q8_0 once (FORMATS=q4_k_m: Q4_K_M only). Bits
# unchanged (no operation changes).
# NAME: a pack of the patched build; carry ["gpu/NAME.tar.xz", ".whl", "lab/kvp49-gpu.sh"].
cd "$(dirname "$0")/.."
PRELUDE_MODEL=0 . lab/gpu-prelude.sh "${1:?usage: lab/kvp49-gpu.sh NAME}"
nvidia-smi --query-gpu=name --format=csv,noheader
python3 tools/make_test_models.py /tmp/m8q --formats ${FORMATS:-q8_0,q4_k_m} > /tmp/makeq.log 2>&1; ts "m8q rc $?"
TO=100 mbench_ab q4_k_m /tmp/m8q/llama8b-q4_k_m.gguf ${TESTS:-tg128,tg128@d512,tg128@d4096} MEMRA_LAB_KV_PREFETCH 0 1
[ -f /tmp/m8q/llama8b-q8_0.gguf ] && for x in 0 1; do
  TO=100 mbench "q8_0 $x" /tmp/m8q/llama8b-q8_0.gguf tg128,tg128@d4096 MEMRA_LAB_KV_PREFETCH=$x
done
ts done
