#!/usr/bin/env bash
# scripts/run-tests.sh BUILD FUZZ_BUILD FUZZ_SECONDS — every test, in order:
# 1. unit tests through ctest (C, CPU), 2. each libFuzzer target for a bounded
# time from its committed seed corpus, 3. pytest (reference comparisons against
# the Python packages, and the server end-to-end tests).
# Exits non-zero if any part fails; all parts run so one failure hides nothing.
# The last lines printed name every part that failed and its key lines (a
# failing check, a fuzzer's error and crash file), at most ~20: CI keeps only
# the tail of a log, and pytest's output comes last.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}; FUZZ_BUILD=${2:-build-fuzz}; FUZZ_SECONDS=${3:-60}
status=0
report=$(mktemp)
trap 'rm -f "$report"' EXIT

# Tests that use the default model find it in models/; fetched once, verified.
scripts/fetch-model.sh >/dev/null || { echo "run-tests: could not fetch the default model" >&2; exit 1; }

echo "== unit tests (ctest)"
ctest_log="$BUILD/ctest.log"
if ! (cd "$BUILD" && ctest --output-on-failure -j "$(nproc)") 2>&1 | tee "$ctest_log"; then
  status=1
  { echo "-- unit tests FAILED (whole output: $ctest_log):"
    grep -E "CHECK[A-Z_]* failed|^[[:space:]]+[0-9]+ - " "$ctest_log" | tail -8; } >> "$report"
fi

echo "== fuzzers (${FUZZ_SECONDS}s each)"
mkdir -p "$FUZZ_BUILD"; fuzz_log="$FUZZ_BUILD/run.log"
if ! scripts/run-fuzzers.sh "$FUZZ_BUILD" "$FUZZ_SECONDS" 2>&1 | tee "$fuzz_log"; then
  status=1
  { echo "-- fuzzers FAILED (whole output: $fuzz_log):"
    grep -E "FAILED|build failed|no fuzz targets|ERROR: |^SUMMARY|Test unit written|deadly signal|ALARM|out-of-memory|leak" "$fuzz_log" | tail -8; } >> "$report"
fi

if compgen -G "tests/py/test_*.py" >/dev/null || compgen -G "tests/e2e/test_*.py" >/dev/null; then
  echo "== python tests (pytest)"
  MEMRA_BUILD="$PWD/$BUILD" python3 -m pytest -q tests/py tests/e2e || { status=1; echo "-- pytest FAILED (above)" >> "$report"; }
fi

if [ $status -ne 0 ]; then
  echo "== run-tests: FAILED"
  cat "$report"
else
  echo "== run-tests: all parts passed (unit tests, fuzzers, pytest)"
fi
exit $status
