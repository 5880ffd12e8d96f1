#!/usr/bin/env bash
# Runs a bundle made by make_bundle.sh on a GPU machine: the GPU suite plainly
# (etrt_gpu_device_placed_tests included), the device-placed Python run
# (run_device_placed_python.sh, when the bundle has the exports; python3, or
# $ETRT_PYTHON), then the benchmarks (the shared-scratch memory table and the KV-cache bytes per decode step among them), then the suite under
# compute-sanitizer memcheck,
# racecheck and initcheck. One log per step in <log-dir>, and summary.txt with
# each step's exit code, duration, test counts and sanitizer verdicts.
# The demo decoder's test dumps its logits per step to
# <log-dir>/dumps/<step>/decoder_cuda_<strategy>.json; check them against
# NumPy where it is installed:
#   .venv/bin/python tests/python/test_decoder_demo.py <log-dir>/dumps/plain/*.json \
#       --weights <bundle>/fixtures/decoder_weights.json
#
#   run_bundle.sh <log-dir> [benchmark flags...]
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOGS="${1:-$HERE/logs}"
shift || true
mkdir -p "$LOGS"
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"
source "$HERE/bundle_env.sh" "$HERE"
if ((ETRT_BUNDLE_FALLBACK)); then
  echo "the machine's C++ runtime is older than the build's: using fallback/" | tee -a "$SUMMARY"
fi
{
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  compute-sanitizer --version | tail -n 2
  uname -r
  cat /etc/os-release | head -n 2
} > "$LOGS/env.txt" 2>&1

# step <log> <label> <seconds> <command...>: runs with a time limit, appends to <log>.log, records the exit code.
step() {
  local name=$1 label=$2 limit=$3
  shift 3
  local start=$SECONDS
  timeout "$limit" "$@" >> "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "$name: $label exit $rc in $((SECONDS - start)) s" | tee -a "$SUMMARY"
}

tests() {  # tests <log> <seconds each> [wrapper...]
  local log=$1 limit=$2
  shift 2
  export ETRT_GPU_DUMP_DIR="$LOGS/dumps/$log"
  mkdir -p "$ETRT_GPU_DUMP_DIR"
  for t in etrt_gpu_engine_tests etrt_gpu_module_tests etrt_gpu_fault_tests etrt_gpu_integrated_tests \
           etrt_gpu_device_placed_tests; do step "$log" "$t" "$limit" "$@" "$HERE/$t"; done
  local verdicts="^\[  (PASSED|FAILED|SKIPPED) +\]|tests? ran\.|ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY"
  grep -hE "$verdicts" "$LOGS/$log.log" |
    sed "s/^/  $log: /" | tee -a "$SUMMARY"
}

tests plain 100
if [[ -f "$HERE/run_device_placed_python.sh" ]]; then
  step python run_device_placed_python.sh 400 bash "$HERE/run_device_placed_python.sh" "${ETRT_PYTHON:-python3}"
  grep -hE "^(python |installing|PASS|FAIL|[0-9]+ failure|[A-Za-z_.]*Error: )" "$LOGS/python.log" | sed "s/^/  python: /" |
    tee -a "$SUMMARY"
else
  echo "python: LEFT OUT: the bundle has no device_placed/ (make_bundle.sh said how to write it)" | tee -a "$SUMMARY"
fi
step bench etrt_bench_gpu 240 "$HERE/etrt_bench_gpu" "$@" --benchmark_out="$LOGS/bench.json" --benchmark_out_format=json
sed -n '/^Median over the repetitions of the host time/,$p' "$LOGS/bench.log" | tee -a "$SUMMARY"
step bench_graphs etrt_bench_gpu_graphs 240 "$HERE/etrt_bench_gpu_graphs" "$@" \
  --benchmark_out="$LOGS/bench_graphs.json" --benchmark_out_format=json
sed -n '/^Median over the repetitions, per decode step/,$p' "$LOGS/bench_graphs.log" | tee -a "$SUMMARY"
step bench_scratch etrt_bench_gpu_scratch 120 "$HERE/etrt_bench_gpu_scratch" "$HERE/fixtures"
sed -n '/^Device memory of a program of N single-layer delegates/,$p' "$LOGS/bench_scratch.log" | tee -a "$SUMMARY"
step bench_profiling etrt_bench_gpu_profiling 120 "$HERE/etrt_bench_gpu_profiling" "$HERE/fixtures"
sed -n '/^etrt device time/,$p' "$LOGS/bench_profiling.log" | tee -a "$SUMMARY"
step bench_sessions etrt_bench_gpu_sessions 240 "$HERE/etrt_bench_gpu_sessions" "$HERE/fixtures/decoder_cuda.pte"
sed -n '/repetitions (medians)$/,$p' "$LOGS/bench_sessions.log" | tee -a "$SUMMARY"
if [[ -x "$HERE/etrt_bench_gpu_decoder_state" ]]; then
  step bench_decoder_state etrt_bench_gpu_decoder_state 300 "$HERE/etrt_bench_gpu_decoder_state" "$HERE/decoder_state"
  sed -n '/-layer decoder, /,$p' "$LOGS/bench_decoder_state.log" | tee -a "$SUMMARY"
fi
export ETRT_GPU_TESTS_UNDER_SANITIZER=1
tests memcheck 170 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 86
tests racecheck 110 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 86
tests initcheck 80 compute-sanitizer --tool initcheck --error-exitcode 86
cat "$SUMMARY"
