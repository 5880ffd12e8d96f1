#!/usr/bin/env bash
# On the GPU machine, with NVIDIA's TensorRT on LD_LIBRARY_PATH: the NvInfer contract suite against it, then under
# compute-sanitizer memcheck and racecheck (reusing the plans the first run built). Logs go to LOG_DIR.
#
#   bash run_nvidia.sh LOG_DIR
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOGS="${1:?usage: run_nvidia.sh LOG_DIR}"
mkdir -p "$LOGS" "$LOGS/plans"
export LD_LIBRARY_PATH="$HERE:${LD_LIBRARY_PATH:-}" ETRT_CONTRACT_PLAN_DIR="$LOGS/plans"
status=0
"$HERE/etrt_nvidia_contract_tests" > "$LOGS/contract.log" 2>&1 || status=1
grep -E "^\[observed\]|PASSED|FAILED" "$LOGS/contract.log"
if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 1 "$HERE/etrt_nvidia_contract_tests" > "$LOGS/$tool.log" 2>&1 \
      || status=1
    echo "$tool: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$LOGS/$tool.log" | tr '\n' ' ')$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$LOGS/$tool.log" | tr '\n' ' ')"
  done
fi
exit "$status"
