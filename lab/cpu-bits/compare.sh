#!/usr/bin/env bash
# lab/cpu-bits/compare.sh NEW_BUILD OLD_BUILD — the CPU backend's logits of two build folders, bit for bit, over every
# engine fixture and the default model, f32 / bf16 KV, f32 / bf16 activations, 1-3 threads, at every SIMD level the
# CPU has (MEMRA_CPU_SIMD). For a change to the CPU backend or src/quant that must keep the bits (thirty-fifth
# session: four rows a pass, the AVX2 expanders — 276 comparisons a level, none differed). Run from the repository
# root; OLD_BUILD is typically a `git worktree` of the commit before, configured with -DMEMRA_CUDA=OFF.
set -euo pipefail
new=$1 old=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in new old; do
  b=${!v}
  src=$(cd "$b/.." && pwd)/src
  gcc -O2 -std=c17 -I"$src" lab/cpu-bits/cpu_bits.c -o "$tmp/bits_$v" -Wl,--start-group "$b/libmemra_backend_cpu.a" \
    "$b/libmemra_model.a" "$b/libmemra_quant.a" "$b/libmemra_format.a" "$b/libmemra_core.a" -Wl,--end-group \
    -ljansson -lm -lpthread
done
n=0 bad=0
for level in avx512 avx2 base; do
  for m in tests/fixtures/engine/{llama,llamaq,qwen2,qwen3,qwen3_moe,gemma3}/* models/SmolLM2-135M-Instruct.Q4_1.gguf; do
    [ -e "$m" ] || continue
    for kv in 0 1; do for act in 0 1; do for th in 1 2 3; do
      if ! MEMRA_CPU_SIMD=$level "$tmp/bits_new" "$m" "$tmp/n.bin" $th $kv $act 2> "$tmp/err"; then
        echo "skip $m: $(tail -1 "$tmp/err")"; continue 3
      fi
      MEMRA_CPU_SIMD=$level "$tmp/bits_old" "$m" "$tmp/o.bin" $th $kv $act 2> /dev/null
      n=$((n + 1))
      cmp -s "$tmp/n.bin" "$tmp/o.bin" || { echo "DIFFER $level $m kv_bf16=$kv act_bf16=$act threads=$th"; bad=$((bad + 1)); }
    done; done; done
  done
done
echo "$n compared, $bad differ"
[ "$bad" -eq 0 ]
