# bench/run_bench.sh profile: the medians of etrt_bench_profile's JSON report (argv[1]) per case -- etrt's policy
# layer (one call and two calls), the baseline (upstream's per-execute selection path, bench/baseline_selection.h),
# the ratios and the allocations per iteration of each. Exits 1 if etrt's path allocates, or if the baseline does not
# make its one allocation per call (the compiler elided it, and it would no longer model upstream).
import json, sys

with open(sys.argv[1]) as f:
    report = json.load(f)

# medians[case][impl] = (real ns, cpu ns, allocations per iteration)
medians = {}
for b in report["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    impl, case = b["run_name"].split("/", 1)
    medians.setdefault(case, {})[impl] = (b["real_time"], b["cpu_time"], b.get("allocs_per_iter", float("nan")))

ctx = report.get("context", {})
print(f"\n{ctx.get('host_name', '?')}: {ctx.get('num_cpus', '?')} CPUs @ {ctx.get('mhz_per_cpu', '?')} MHz, "
      f"load average {ctx.get('load_avg', '?')}")
print("Medians of 10 repetitions, ns per choose+validate: real time, CPU time in parentheses.")
print("etrt = choose_and_validate(); etrt_2call = choose_profile() + validate_shapes(); ratio = baseline / etrt,")
print("on real time and (in parentheses) on CPU time, which is steadier when other processes share the CPUs.\n")
header = (f"{'case':30} {'etrt':>14} {'etrt_2call':>14} {'baseline':>15} {'ratio':>12} {'ratio 2call':>12}"
          f" {'allocs etrt/2call/base':>23}")
print(header)
print("-" * len(header))
ok = True
base_ok = True
for case in sorted(medians):
    m = medians[case]
    if not all(k in m for k in ("etrt", "etrt_2call", "baseline")):
        continue
    cell = lambda v: f"{v[0]:5.1f} ({v[1]:5.1f})"
    ratio = lambda base, ours: f"{base[0] / ours[0]:4.1f}x ({base[1] / ours[1]:4.1f}x)"
    e, e2, b = m["etrt"], m["etrt_2call"], m["baseline"]
    print(f"{case:30} {cell(e):>14} {cell(e2):>14} {cell(b):>15} {ratio(b, e):>12} {ratio(b, e2):>12}"
          f" {e[2]:9.0f} /{e2[2]:3.0f} /{b[2]:3.0f}")
    ok = ok and e[2] == 0 and e2[2] == 0
    base_ok = base_ok and b[2] == 1
if not ok:
    print("\nFAIL: etrt's choose+validate path allocated.", file=sys.stderr)
if not base_ok:
    print("\nFAIL: the baseline did not allocate exactly once per call, as upstream's path does.", file=sys.stderr)
if not (ok and base_ok):
    sys.exit(1)
