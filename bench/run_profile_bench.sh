#!/usr/bin/env bash
# Runs etrt_bench_profile with repetitions and prints, per case, the median
# time of etrt's policy layer, of the vector-based baseline, their ratio, and
# the allocations per iteration of each. Fails if etrt's path allocates.
#
#   bench/run_profile_bench.sh [path/to/etrt_bench_profile] [extra benchmark flags...]
#
# Build it in Release first, e.g.
#   .venv/bin/cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C build-release etrt_bench_profile
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${1:-$ROOT/build-release/bench/etrt_bench_profile}"
shift || true
if [[ ! -x "$BIN" ]]; then
  echo "run_profile_bench.sh: no benchmark binary at $BIN; build etrt_bench_profile in Release first." >&2
  exit 2
fi

OUT="$(mktemp -t etrt_bench_profile.XXXXXX.json)"
trap 'rm -f "$OUT"' EXIT

"$BIN" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT" --benchmark_out_format=json "$@" >&2

python3 - "$OUT" <<'PYEOF'
import json, sys

with open(sys.argv[1]) as f:
    report = json.load(f)

medians = {}
for b in report["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    impl, case = b["run_name"].split("/", 1)
    medians.setdefault(case, {})[impl] = (b["real_time"], b.get("allocs_per_iter", float("nan")))

ctx = report.get("context", {})
print(f"\n{ctx.get('host_name', '?')}: {ctx.get('num_cpus', '?')} CPUs @ {ctx.get('mhz_per_cpu', '?')} MHz, "
      f"build {ctx.get('library_build_type', '?')} benchmark library; medians of 10 repetitions (ns, real time)\n")
header = f"{'case':32} {'etrt ns':>9} {'baseline ns':>12} {'speedup':>8} {'etrt allocs':>12} {'baseline allocs':>16}"
print(header)
print("-" * len(header))
ok = True
for case in sorted(medians):
    m = medians[case]
    if "ours" not in m or "baseline" not in m:
        continue
    (ours, ours_allocs), (base, base_allocs) = m["ours"], m["baseline"]
    print(f"{case:32} {ours:9.1f} {base:12.1f} {base / ours:7.2f}x {ours_allocs:12.2f} {base_allocs:16.2f}")
    ok = ok and ours_allocs == 0
if not ok:
    print("\nFAIL: etrt's choose+validate path allocated.", file=sys.stderr)
    sys.exit(1)
PYEOF
