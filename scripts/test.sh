#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs, builds,
# runs the C++ tests, runs them again under AddressSanitizer and
# UndefinedBehaviorSanitizer, builds the CUDA path (compile only, and its cpu
# tests), fuzzes for a minute, runs the stress test under ThreadSanitizer,
# then the Python tests and the Python runtime on real exports (.venv-export).
# Exits non-zero on any failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/bootstrap.sh

CMAKE=.venv/bin/cmake
CTEST=.venv/bin/ctest
JOBS="${ETRT_JOBS:-$(nproc)}"
echo "test.sh: $(df -P -k . | awk 'NR == 2 {printf "%d GiB free on %s", $4 / 1048576, $6}') (the whole run needs about 12)"

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

echo "== build with the CUDA path (-DETRT_WITH_CUDA=ON), compile only"
# CI has no GPU: everything is built, the GPU suite (tests/gpu, label gpu) and
# its benchmark (bench/gpu) included, but only the cpu-labelled tests run,
# which also shows that host engines never touch CUDA in a CUDA build. Running
# the GPU suite needs a GPU: docs/gpu-testing.md.
NVCC="$(command -v nvcc || true)"
if [[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]]; then NVCC=/usr/local/cuda/bin/nvcc; fi
if [[ -n "$NVCC" ]]; then
  $CMAKE -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETRT_WITH_CUDA=ON -DETRT_BUILD_TESTS=ON \
    -DETRT_BUILD_EXAMPLES=OFF -DCMAKE_CUDA_COMPILER="$NVCC"
  $CMAKE --build build-cuda -j "$JOBS"
  echo "== C++ tests (cpu label) of the CUDA build"
  $CTEST --test-dir build-cuda -L cpu --output-on-failure --no-tests=error -j "$JOBS"
elif [[ "${ETRT_SKIP_CUDA_BUILD:-0}" == 1 ]]; then
  echo "skipped: no nvcc, and ETRT_SKIP_CUDA_BUILD=1"
else
  echo "test.sh: no CUDA toolkit (nvcc not on PATH nor in /usr/local/cuda/bin); install it, or set" \
    "ETRT_SKIP_CUDA_BUILD=1 to skip the CUDA compile check" >&2
  exit 1
fi

echo "== build the fuzzers (clang: libFuzzer + ASan + UBSan)"
# tests/fuzz, docs/testing.md. Only the three harnesses are built; their seeds come from build/'s fixtures, built
# above.
$CMAKE -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DETRT_SANITIZE=address,undefined -DETRT_BUILD_FUZZERS=ON \
  -DETRT_BUILD_BENCHMARKS=OFF -DETRT_BUILD_EXAMPLES=OFF -DETRT_FUZZ_FIXTURE_DIR="$ROOT/build/tests/backend/fixtures"
$CMAKE --build build-fuzz -j "$JOBS" --target etrt_fuzz_blob etrt_fuzz_engine etrt_fuzz_module
echo "== fuzz: the three harnesses at once, ${ETRT_FUZZ_SECONDS:-60} s each, fixed seed; any finding fails"
bash tests/fuzz/run_fuzzers.sh --build build-fuzz --time "${ETRT_FUZZ_SECONDS:-60}" --seed 1 --fresh

echo "== build (ThreadSanitizer): the stress tests only (tests/stress, the engine cache's)"
$CMAKE -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETRT_SANITIZE=thread \
  -DETRT_BUILD_BENCHMARKS=OFF -DETRT_BUILD_EXAMPLES=OFF
$CMAKE --build build-tsan -j "$JOBS" --target etrt_test_stress etrt_test_engine_cache
echo "== stress tests under ThreadSanitizer"
ETRT_STRESS_ITERATIONS=500 ETRT_STRESS_SECONDS=15 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  $CTEST --test-dir build-tsan -L stress --output-on-failure --no-tests=error -j "$JOBS"

echo "== Python tests"
.venv/bin/python -m pytest tests/python -q

echo "== Python runtime and real exports (.venv-export: ExecuTorch and torch from PyPI, etrt pip-installed into it)"
bash scripts/free_disk_for_exports.sh "$ROOT"  # ~10 GiB free for .venv-export, else the finished trees go
bash scripts/bootstrap.sh --export
.venv-export/bin/python -m pip install -q ./python
.venv-export/bin/python -m pytest tests/export -q

echo "== all tests passed"
