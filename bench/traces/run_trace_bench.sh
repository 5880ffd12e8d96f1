#!/usr/bin/env bash
# "Auto by default?" (docs/auto-by-default.md): runs LLM-shaped request traces
# through Module and etrt's backend under runner pins, auto sticky, auto
# first-fit and the default, each with profile_strategy switch and
# context_per_profile, at modelled switch costs of 0.48 ms and 3.6 ms, and
# prints the tables as Markdown. Then the same with short decodes (mean 2
# steps), where the overlap engine's sticky policy can win. About 30 s.
#
#   bench/traces/run_trace_bench.sh [path/to/etrt_bench_traces] [extra flags...]
#
# Build it in Release first:
#   .venv/bin/cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C build-release etrt_bench_traces
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${1:-$ROOT/build-release/bench/traces/etrt_bench_traces}"
shift || true
if [[ ! -x "$BIN" ]]; then
  echo "run_trace_bench.sh: no benchmark binary at $BIN; build etrt_bench_traces in Release first." >&2
  exit 2
fi
"$BIN" "$@"
echo
echo "## Short decodes"
echo
"$BIN" --decode-mean 2 --concurrency 4 "$@"
