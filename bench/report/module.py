# bench/run_bench.sh module: the medians of etrt_bench_module's JSON report (argv[1]), ns per Module::forward(), and
# the ratios to the do-nothing delegate.
import json, sys
report = json.load(open(sys.argv[1]))
med = {b["run_name"]: b for b in report["benchmarks"] if b.get("aggregate_name") == "median"}
base = med.get("BM_NoopDelegate")
print("\nMedians of 10 repetitions, ns per Module::forward(); ratio = case / noop delegate\n")
print(f"{'case':40} {'real ns':>9} {'cpu ns':>9} {'ratio':>7} {'allocs/forward':>15}")
for name, b in med.items():
    if name.startswith("BM_OwnCostPaired"):
        continue
    ratio = b["real_time"] / base["real_time"] if base else float("nan")
    print(f"{name:40} {b['real_time']:9.0f} {b['cpu_time']:9.0f} {ratio:6.2f}x {b.get('allocs_per_forward', float('nan')):15.1f}")
engine = med.get("BM_EngineEnqueue")
aligned = med.get("BM_NoopAligned")
if aligned and engine:
    print("\netrt's own cost per forward(), same IO (the runner's aligned buffers), cpu time:"
          "\n(etrt forward() - the engine's enqueue alone) / noop forward()\n")
    for name in ("BM_EtrtAlignedNoGuard", "BM_EtrtAlignedPinnedDecode"):
        if name in med:
            own = med[name]["cpu_time"] - engine["cpu_time"]
            print(f"{name:40} ({med[name]['cpu_time']:.0f} - {engine['cpu_time']:.0f}) / {aligned['cpu_time']:.0f}"
                  f" = {own / aligned['cpu_time']:.2f}x")
together = med.get("BM_NoopAlignedThenEngineEnqueue")
if aligned and together:
    # The engine's cost inside a forward(), where it competes with ExecuTorch's code for the instruction cache:
    # (noop forward() + enqueue) - noop forward(), measured in one loop.
    in_forward = together["cpu_time"] - aligned["cpu_time"]
    print("\netrt's own cost per forward(), the engine charged what it costs beside a forward(), cpu time:"
          "\n(etrt forward() - ((noop forward() + enqueue) - noop forward())) / noop forward()\n")
    for name in ("BM_EtrtAlignedNoGuard", "BM_EtrtAlignedPinnedDecode"):
        if name in med:
            own = med[name]["cpu_time"] - in_forward
            print(f"{name:40} ({med[name]['cpu_time']:.0f} - {in_forward:.0f}) / {aligned['cpu_time']:.0f}"
                  f" = {own / aligned['cpu_time']:.2f}x")
paired = next((b for name, b in med.items() if name.startswith("BM_OwnCostPaired")), None)
if paired:
    # The figure to quote: the blocks run round by round, so noise lands on all five cases alike.
    print("\netrt's own cost per forward(), paired round by round (BM_OwnCostPaired: 101 rounds of 2,000 calls a"
          "\nblock; medians over the rounds, then the median of the 10 repetitions), wall time:\n")
    print(f"  noop {paired['noop_ns']:.0f} ns, etrt {paired['etrt_ns']:.0f} ns, etrt pinned {paired['etrt_pinned_ns']:.0f} ns,"
          f" engine alone {paired['engine_ns']:.0f} ns, noop then engine {paired['noop_then_engine_ns']:.0f} ns")
    print(f"  (etrt - engine alone) / noop                    = {paired['own_ratio_engine_alone']:.2f}x")
    print(f"  (etrt - (noop then engine - noop)) / noop       = {paired['own_ratio_engine_beside']:.2f}x")
    print(f"  (etrt pinned - engine alone) / noop             = {paired['own_ratio_pinned']:.2f}x")
