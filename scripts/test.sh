#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs, builds,
# runs the C++ tests, runs them again under AddressSanitizer and
# UndefinedBehaviorSanitizer, then the Python tests. Exits non-zero on any failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/bootstrap.sh

CMAKE=.venv/bin/cmake
CTEST=.venv/bin/ctest
JOBS="${ETRT_JOBS:-$(nproc)}"

echo "== build (RelWithDebInfo)"
$CMAKE -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
$CMAKE --build build -j "$JOBS"
echo "== C++ tests"
$CTEST --test-dir build -L cpu --output-on-failure --no-tests=error -j "$JOBS"

echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer)"
$CMAKE -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DETRT_SANITIZE=address,undefined \
  -DETRT_BUILD_BENCHMARKS=OFF -DETRT_BUILD_EXAMPLES=OFF
$CMAKE --build build-asan -j "$JOBS"
echo "== C++ tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  $CTEST --test-dir build-asan -L cpu --output-on-failure --no-tests=error -j "$JOBS"

echo "== Python tests"
.venv/bin/python -m pytest tests/python -q

echo "== all tests passed"
