#pragma once
// The do-nothing delegate the benchmarks compare etrt with (test tooling): registered with ExecuTorch as
// kNoopBackendId by noop_backend.cpp, which a benchmark compiles in. Its execute() only resizes its output
// (argument 1) to its input's (argument 0) sizes, keeping the output's trailing dims past the input's rank: input
// [1, S] and output [1, S] or [1, S, H]. That is the least any delegate must do per call, so a program calling it
// measures ExecuTorch's own per-forward() cost.

namespace etrt::testing {

inline constexpr const char* kNoopBackendId = "EtrtBenchNoop";

}  // namespace etrt::testing
