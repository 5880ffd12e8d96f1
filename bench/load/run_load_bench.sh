#!/usr/bin/env bash
# Runs etrt_bench_load with repetitions and prints, per row, the median load
# time (wall and CPU) and the size of what was loaded, as the markdown table
# docs/limits.md shows.
#
#   bench/load/run_load_bench.sh [path/to/etrt_bench_load] [extra benchmark flags...]
#
# Build it in Release first, e.g.
#   .venv/bin/cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release
#   .venv/bin/cmake --build build-release --target etrt_bench_load
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${1:-$ROOT/build-release/bench/load/etrt_bench_load}"
shift || true
if [[ ! -x "$BIN" ]]; then
  echo "run_load_bench.sh: no benchmark binary at $BIN; build etrt_bench_load in Release first." >&2
  exit 2
fi

OUT="$(mktemp -t etrt_bench_load.XXXXXX.json)"
trap 'rm -f "$OUT"' EXIT

# The refused loads log their reason; only the table matters here.
"$BIN" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT" --benchmark_out_format=json "$@" >/dev/null 2>&1

python3 - "$OUT" <<'PYEOF'
import json, sys

with open(sys.argv[1]) as f:
    report = json.load(f)
rows = []
for b in report["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name = b["run_name"].removesuffix("/real_time")
    kind, program = name.split("/", 1)
    size = b.get("file_bytes") or b.get("blob_bytes") or b.get("engine_bytes") or 0
    what = {"BM_Load": "Module load_method (.pte)", "BM_ParseBlob": "parse_blob (blob)",
            "BM_DeserializeEngine": "deserializeCudaEngine (engine)"}[kind]
    rows.append((what, program, size, b["real_time"], b["cpu_time"], b.get("error_message")))
print(f"{report['context'].get('num_cpus')} CPU(s) at {report['context'].get('mhz_per_cpu')} MHz, "
      f"load average {', '.join(f'{x:.2f}' for x in report['context'].get('load_avg', []))}")
print()
print("| what is timed | program | bytes | median wall (ms) | median CPU (ms) |")
print("|---|---|---:|---:|---:|")
for what, program, size, real, cpu, error in rows:
    print(f"| {what} | {program} | {size / 1e6:.2f} MB | {real:.2f} | {cpu:.2f} |" + (f" {error}" if error else ""))
PYEOF
