#!/usr/bin/env bash
# On the GPU machine, with NVIDIA's TensorRT on LD_LIBRARY_PATH (docs/gpu-testing.md), from the bundle
# make_nvidia_bundle.sh staged:
#   1. the NvInfer contract suite, which builds the models' plans (kept in LOG_DIR/plans);
#   2. the Module suite's programs: plans, blobs and packer specs (etrt_nvidia_make_programs), packed into .pte files
#      by the project's packer (python3 -m etrt.pte, with the bundle's flatc and ExecuTorch schema);
#   3. the Module suite over them;
#   4. the figures' benchmarks (bench/nvidia: a decode step, and sessions over one engine), when the bundle has them;
#   5. both suites again under compute-sanitizer memcheck and racecheck, on the same plans and programs.
# Prints the [observed] lines and one summary line per run; logs in LOG_DIR. Exit status 0 when all passed.
#
#   bash run_nvidia.sh LOG_DIR [python3]
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOGS="${1:?usage: run_nvidia.sh LOG_DIR [python3]}"
PY="${2:-python3}"
mkdir -p "$LOGS/plans" "$LOGS/programs"
export LD_LIBRARY_PATH="$HERE:${LD_LIBRARY_PATH:-}" ETRT_CONTRACT_PLAN_DIR="$LOGS/plans"
export ETRT_NVIDIA_PROGRAM_DIR="$LOGS/programs"
status=0
summary() { echo "$1: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$2" | tr '\n' ' ')$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$2" | sort -u | tr '\n' ' ')"; }

"$HERE/etrt_nvidia_contract_tests" > "$LOGS/contract.log" 2>&1 || status=1
grep -E "^\[observed\]" "$LOGS/contract.log"
summary "contract" "$LOGS/contract.log"

if "$HERE/etrt_nvidia_make_programs" "$LOGS/programs" > "$LOGS/programs.log" 2>&1; then
  for spec in "$LOGS"/programs/*.json; do
    ETRT_FLATC="$HERE/flatc" ETRT_EXECUTORCH_SCHEMA_DIR="$HERE/schema" PYTHONPATH="$HERE/python" \
      "$PY" -m etrt.pte --spec "$spec" --out "${spec%.json}.pte" >> "$LOGS/programs.log" 2>&1 || status=1
  done
else
  status=1
fi
echo "programs: $(ls "$LOGS"/programs/*.pte 2>/dev/null | xargs -n1 basename 2>/dev/null | tr '\n' ' ')"
"$HERE/etrt_nvidia_module_tests" > "$LOGS/module.log" 2>&1 || status=1
summary "module" "$LOGS/module.log"

if [[ -x "$HERE/etrt_bench_nvidia_decode" ]]; then
  "$HERE/etrt_bench_nvidia_decode" "$LOGS/programs" "$LOGS/plans/deep_decoder_48.plan" > "$LOGS/bench.log" 2>&1 \
    || status=1
  cat "$LOGS/bench.log"
fi
# Sessions over one engine: a plan that shares profiles (nv_llm_sharing) and one that does not (nv_llm).
if [[ -x "$HERE/etrt_bench_nvidia_sessions" ]]; then
  for program in nv_llm_sharing nv_llm; do
    "$HERE/etrt_bench_nvidia_sessions" --reps 5 "$LOGS/programs/$program.pte" >> "$LOGS/sessions.log" 2>&1 || status=1
  done
  cat "$LOGS/sessions.log"
fi

if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck; do
    for suite in contract module; do
      compute-sanitizer --tool "$tool" --error-exitcode 1 "$HERE/etrt_nvidia_${suite}_tests" \
        > "$LOGS/$suite.$tool.log" 2>&1 || status=1
      summary "$suite $tool" "$LOGS/$suite.$tool.log"
    done
  done
fi
exit "$status"
