#!/usr/bin/env bash
# scripts/run-fuzzers.sh FUZZ_BUILD SECONDS — build the libFuzzer targets with
# clang (ASan + UBSan) in their own tree and run each for SECONDS from its seed
# corpus tests/fuzz/corpus/<target>/. New inputs go to a scratch copy, so the
# committed corpus only changes when someone adds a seed on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_BUILD=${1:-build-fuzz}; SECONDS_EACH=${2:-60}
CC=clang cmake -S . -B "$FUZZ_BUILD" -DMEMRA_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
if ! cmake --build "$FUZZ_BUILD" -j "$(nproc)" >"$FUZZ_BUILD/build.log" 2>&1; then
  echo "run-fuzzers: the fuzz build failed; last lines of $FUZZ_BUILD/build.log:" >&2
  tail -40 "$FUZZ_BUILD/build.log" >&2
  exit 1
fi
shopt -s nullglob
targets=("$FUZZ_BUILD"/fuzz/fuzz_*)
if [ ${#targets[@]} -eq 0 ]; then
  echo "run-fuzzers: no fuzz targets built" >&2
  exit 1
fi
fail=0
for t in "${targets[@]}"; do
  name=$(basename "$t")
  work="$FUZZ_BUILD/corpus-work/$name"
  mkdir -p "$work" "$FUZZ_BUILD/artifacts"
  cp -n tests/fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
  dict=(); [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  echo "fuzz: $name for ${SECONDS_EACH}s"
  if ! "$t" -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=0 -artifact_prefix="$FUZZ_BUILD/artifacts/$name-" "${dict[@]}" "$work" \
        >"$FUZZ_BUILD/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of $FUZZ_BUILD/$name.log:" >&2
    tail -40 "$FUZZ_BUILD/$name.log" >&2
    fail=1
  else
    grep -E "^#[0-9]+.*DONE" "$FUZZ_BUILD/$name.log" | tail -1 || true
  fi
done
exit $fail
