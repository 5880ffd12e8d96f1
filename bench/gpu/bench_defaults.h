#pragma once
// Google Benchmark's Initialize with the GPU benchmarks' defaults (10 repetitions, aggregates only, 0.2 s each)
// put before the command line's flags, so that flags given on the command line win.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace etrt::bench {

inline void initialize_with_defaults(int argc, char** argv) {
  std::string defaults[] = {"--benchmark_repetitions=10", "--benchmark_report_aggregates_only=true",
                            "--benchmark_min_time=0.2"};
  std::vector<char*> args = {argv[0]};
  for (std::string& d : defaults) args.push_back(d.data());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
}

}  // namespace etrt::bench
