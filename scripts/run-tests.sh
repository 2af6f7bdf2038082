#!/usr/bin/env bash
# scripts/run-tests.sh BUILD FUZZ_BUILD FUZZ_SECONDS — every test, in order:
# 1. unit tests through ctest (C, CPU), 2. each libFuzzer target for a bounded
# time from its committed seed corpus, 3. pytest (reference comparisons against
# the Python packages, and the server end-to-end tests).
# Exits non-zero if any part fails; all parts run so one failure hides nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}; FUZZ_BUILD=${2:-build-fuzz}; FUZZ_SECONDS=${3:-60}
status=0

# Tests that use the default model find it in models/; fetched once, verified.
scripts/fetch-model.sh >/dev/null || { echo "run-tests: could not fetch the default model" >&2; exit 1; }

echo "== unit tests (ctest)"
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)") || status=1

echo "== fuzzers (${FUZZ_SECONDS}s each)"
scripts/run-fuzzers.sh "$FUZZ_BUILD" "$FUZZ_SECONDS" || status=1

if compgen -G "tests/py/test_*.py" >/dev/null || compgen -G "tests/e2e/test_*.py" >/dev/null; then
  echo "== python tests (pytest)"
  MEMRA_BUILD="$PWD/$BUILD" python3 -m pytest -q tests/py tests/e2e || status=1
fi
exit $status
