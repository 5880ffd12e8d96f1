#!/usr/bin/env bash
# Runs one of the CPU benchmarks and prints what its document quotes.
#
#   bench/run_bench.sh profile|module|load|traces [path/to/binary] [extra flags...]
#
#   profile  etrt_bench_profile: etrt's policy layer against upstream's per-execute selection path
#            (bench/baseline_selection.h), medians, ratios and allocations per call; fails if etrt's path allocates
#            or the baseline does not allocate once per call (docs/profile-selection.md, "Cost")
#   module   etrt_bench_module: per-forward() host overhead through ExecuTorch's Module, etrt against a delegate that
#            does nothing, in one process; medians and the ratios to the noop delegate (docs/host-cost.md)
#   load     etrt_bench_load: load time and size per program, as the markdown table of docs/limits.md
#   traces   etrt_bench_traces: "Auto by default?", LLM-shaped request traces under each way of choosing a profile,
#            then the same with short decodes (mean 2 steps); Markdown tables, about 35 s (docs/auto-by-default.md)
#
# The Google Benchmark programs (profile, module, load) run 10 repetitions; bench/report/<name>.py prints their
# medians. Without a binary, the Release build's is taken (build-release/bench/...); build it first, e.g.
#   .venv/bin/cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release
#   .venv/bin/cmake --build build-release --target etrt_bench_module
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  echo "usage: bench/run_bench.sh profile|module|load|traces [path/to/binary] [extra flags...]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
NAME="$1"
shift
case "$NAME" in
  profile) TARGET=etrt_bench_profile DIR=bench ;;
  module) TARGET=etrt_bench_module DIR=bench/module ;;
  load) TARGET=etrt_bench_load DIR=bench/load ;;
  traces) TARGET=etrt_bench_traces DIR=bench/traces ;;
  *) usage ;;
esac

# The binary is the first argument unless that is a flag.
BIN="$ROOT/build-release/$DIR/$TARGET"
if [[ $# -ge 1 && "$1" != -* ]]; then
  BIN="$1"
  shift
fi
if [[ ! -x "$BIN" ]]; then
  echo "run_bench.sh: no benchmark binary at $BIN; build $TARGET in Release first." >&2
  exit 2
fi

if [[ "$NAME" == traces ]]; then
  "$BIN" "$@"
  echo
  echo "## Short decodes"
  echo
  "$BIN" --decode-mean 2 --concurrency 4 "$@"
  exit 0
fi

OUT="$(mktemp -t "$TARGET.XXXXXX.json")"
trap 'rm -f "$OUT"' EXIT
RUN=("$BIN" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true --benchmark_out="$OUT"
  --benchmark_out_format=json "$@")
if [[ "$NAME" == load ]]; then
  "${RUN[@]}" >/dev/null 2>&1  # the refused loads log their reason; only the table matters here
else
  "${RUN[@]}" >&2
fi
python3 "$ROOT/bench/report/$NAME.py" "$OUT"
