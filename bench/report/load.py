# bench/run_bench.sh load: the medians of etrt_bench_load's JSON report (argv[1]) as the markdown table
# docs/limits.md shows: load time (wall and CPU) and the size of what was loaded, per row.
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
