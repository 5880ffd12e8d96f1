// etrt_bench_profile: choosing + validating a profile, etrt's policy layer
// against upstream's per-execute path (baseline_selection.h), on the same tables
// and shapes in the same run. bench/run_bench.sh profile prints medians and
// ratios. Per case three rows: etrt/ (choose_and_validate, the call execute()
// makes), etrt_2call/ (choose_profile then validate_shapes) and baseline/.
//
// Every benchmark reports allocs_per_iter, counted by the replaced global
// operator new (alloc_counter.cpp); etrt's must be 0 (execute() does not
// allocate), the baseline's 1 (upstream's one std::vector<Dims> per call).

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "baseline_selection.h"
#include "common/shape.h"
#include "profile/selection.h"

namespace etrt::bench {
namespace {

using profile::Choice;
using profile::InputBounds;
using profile::ProfileTable;

struct Engine {
  const char* name;
  int32_t num_profiles;
  std::vector<InputBounds> inputs;
};

// An input [1, S] whose S range per profile is given; opt is the midpoint.
InputBounds token_input(const char* name, const std::vector<std::pair<int64_t, int64_t>>& seq_ranges) {
  InputBounds in;
  in.name = name;
  for (const auto& [lo, hi] : seq_ranges) {
    in.min.push_back(make_shape({int64_t{1}, lo}));
    in.opt.push_back(make_shape({int64_t{1}, (lo + hi) / 2}));
    in.max.push_back(make_shape({int64_t{1}, hi}));
  }
  return in;
}

// A KV-cache input [1, 8, past, 64] with past in [0, 2048] in every profile.
InputBounds cache_input(const char* name, int32_t num_profiles) {
  InputBounds in;
  in.name = name;
  for (int32_t p = 0; p < num_profiles; ++p) {
    in.min.push_back(make_shape<int64_t>({1, 8, 0, 64}));
    in.opt.push_back(make_shape<int64_t>({1, 8, 1024, 64}));
    in.max.push_back(make_shape<int64_t>({1, 8, 2048, 64}));
  }
  return in;
}

// The target case of docs/design.md ("Targets"): 4 inputs, decode [1, 1] and prefill [1, 32..2048].
Engine engine_4x2() {
  const std::vector<std::pair<int64_t, int64_t>> seq = {{1, 1}, {32, 2048}};
  return {"4in_2prof",
          2,
          {token_input("input_ids", seq), token_input("attention_mask", seq), token_input("position_ids", seq),
           cache_input("past_key_values", 2)}};
}

// 8 inputs, 4 profiles: decode, short, medium and long prompts.
Engine engine_8x4() {
  const std::vector<std::pair<int64_t, int64_t>> seq = {{1, 1}, {2, 128}, {129, 512}, {513, 2048}};
  return {"8in_4prof",
          4,
          {token_input("input_ids", seq), token_input("attention_mask", seq), token_input("position_ids", seq),
           token_input("cache_position", seq), cache_input("past_key_0", 4), cache_input("past_value_0", 4),
           cache_input("past_key_1", 4), cache_input("past_value_1", 4)}};
}

std::vector<Shape> shapes_for(const Engine& engine, int64_t seq_len) {
  std::vector<Shape> shapes;
  for (const InputBounds& in : engine.inputs) {
    shapes.push_back(in.min[0].rank == 2 ? make_shape({int64_t{1}, seq_len}) : make_shape<int64_t>({1, 8, 100, 64}));
  }
  return shapes;
}

// The same engine description in upstream's shape: [profile][input] (min, max) Dims.
BaselineHandle baseline_handle(const Engine& engine) {
  BaselineHandle handle;
  handle.num_inputs = engine.inputs.size();
  handle.bounds.resize(static_cast<size_t>(engine.num_profiles));
  const auto dims = [](const Shape& s) {
    BaselineDims out;
    out.nbDims = s.rank;
    for (int32_t d = 0; d < s.rank; ++d) out.d[d] = s.d[d];
    return out;
  };
  for (size_t p = 0; p < handle.bounds.size(); ++p) {
    for (const InputBounds& in : engine.inputs) handle.bounds[p].push_back({dims(in.min[p]), dims(in.max[p])});
  }
  return handle;
}

struct Case {
  std::string name;  // "<engine>/<shapes>/<history>"
  Engine engine;
  int64_t seq_len;
  int32_t active;
  int32_t expected;
};

void report_allocations(benchmark::State& state, int64_t before) {
  state.counters["allocs_per_iter"] =
      benchmark::Counter(static_cast<double>(etrt::allocation_count() - before), benchmark::Counter::kAvgIterations);
}

// How etrt is called: one call (what execute() does) or the two documented steps.
enum class EtrtCall { kOneCall, kTwoCalls };

void bench_etrt(benchmark::State& state, const Case& c, EtrtCall how) {
  ProfileTable table;
  Diagnostic error;
  if (ProfileTable::build(c.engine.num_profiles, c.engine.inputs, &table, error) != Error::Ok) {
    state.SkipWithError(error.c_str());
    return;
  }
  const std::vector<Shape> shapes = shapes_for(c.engine, c.seq_len);
  const ProfileRequest request = ProfileRequest::automatic(AutoPolicy::kStickyFirstFit);
  const int64_t before = etrt::allocation_count();
  for (auto _ : state) {
    // One execute()'s worth: a fresh diagnostic, choose, validate.
    Diagnostic why;
    Choice choice;
    const Shape* data = shapes.data();
    benchmark::DoNotOptimize(data);  // the shapes are new on every execute()
    const Span<const Shape> inputs(data, shapes.size());
    const bool ok = how == EtrtCall::kOneCall
                        ? profile::choose_and_validate(table, request, c.active, inputs, &choice, why) == Error::Ok
                        : profile::choose_profile(table, request, c.active, inputs, &choice, why) == Error::Ok &&
                              profile::validate_shapes(table, choice.profile, inputs, why) == Error::Ok;
    if (!ok || choice.profile != c.expected) {
      state.SkipWithError(why.empty() ? "unexpected profile" : why.c_str());
      break;
    }
    benchmark::DoNotOptimize(choice);
  }
  report_allocations(state, before);
}

void bench_baseline(benchmark::State& state, const Case& c) {
  const BaselineHandle handle = baseline_handle(c.engine);
  const std::vector<Shape> shapes = shapes_for(c.engine, c.seq_len);
  const int64_t before = etrt::allocation_count();
  for (auto _ : state) {
    int32_t chosen = -1;
    const Shape* data = shapes.data();
    benchmark::DoNotOptimize(data);
    if (!baseline_choose_and_validate(handle, c.active, data, shapes.size(), &chosen) || chosen != c.expected) {
      state.SkipWithError("baseline chose an unexpected profile");
      break;
    }
    benchmark::DoNotOptimize(chosen);
  }
  report_allocations(state, before);
}

std::vector<Case> cases() {
  const Engine e4 = engine_4x2();
  const Engine e8 = engine_8x4();
  return {
      {"4in_2prof/decode/active_fits", e4, 1, 0, 0}, {"4in_2prof/prefill/active_fits", e4, 512, 1, 1},
      {"4in_2prof/decode/rescan", e4, 1, 1, 0},      {"4in_2prof/prefill/rescan", e4, 512, 0, 1},
      {"8in_4prof/decode/active_fits", e8, 1, 0, 0}, {"8in_4prof/prefill/active_fits", e8, 1000, 3, 3},
      {"8in_4prof/decode/rescan", e8, 1, 3, 0},      {"8in_4prof/prefill/rescan", e8, 1000, 0, 3},
  };
}

}  // namespace
}  // namespace etrt::bench

int main(int argc, char** argv) {
  // Kept alive for the whole run: the registered lambdas refer to them.
  static const std::vector<etrt::bench::Case> all = etrt::bench::cases();
  for (const auto& c : all) {
    using etrt::bench::EtrtCall;
    benchmark::RegisterBenchmark(("etrt/" + c.name).c_str(), [&c](benchmark::State& state) {
      etrt::bench::bench_etrt(state, c, EtrtCall::kOneCall);
    });
    benchmark::RegisterBenchmark(("etrt_2call/" + c.name).c_str(), [&c](benchmark::State& state) {
      etrt::bench::bench_etrt(state, c, EtrtCall::kTwoCalls);
    });
    benchmark::RegisterBenchmark(("baseline/" + c.name).c_str(),
                                 [&c](benchmark::State& state) { etrt::bench::bench_baseline(state, c); });
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
