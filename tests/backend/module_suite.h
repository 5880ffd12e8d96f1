#pragma once
// The Module suite's parameters and loading (module_e2e_test.cpp, compiled into the CPU executable and into the
// GPU suite's): which engines run -- host-mode (tests/backend's fixtures) or CUDA-mode (tests/gpu's: the same
// programs, names, model and expected values) -- and which profile strategy the delegates load with. The CPU
// executable runs the host engines; the GPU executable (-DETRT_WITH_CUDA=ON) the CUDA engines and the host ones.
// tests/gpu/gpu_module_util.h builds the CUDA-only suites on the same pieces.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_test_util.h"

namespace etrt::module_test {

namespace et = ::executorch::runtime;
namespace gpufree = ::etrt::gpufree;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using ::testing::HasSubstr;

// The llm fixture's profiles: decode [1,1] and prefill [1,32..2048].
inline constexpr int32_t kDecode = 0;
inline constexpr int32_t kPrefill = 1;

// Where the engines keep their tensors: host memory, or CUDA device memory (the delegate stages host tensors).
enum class Engine { kHost, kCuda };
// The load option profile_strategy (etrt/options.h): one context switched between profiles, or one per profile.
enum class Strategy { kSwitch, kContextPerProfile };

struct ModuleParam {
  Engine engine;
  Strategy strategy;
};

inline const char* engine_label(Engine e) { return e == Engine::kHost ? "Host" : "Cuda"; }
inline const char* strategy_label(Strategy s) { return s == Strategy::kSwitch ? "Switch" : "ContextPerProfile"; }
inline const char* strategy_value(Strategy s) {
  return s == Strategy::kSwitch ? kStrategySwitch : kStrategyContextPerProfile;
}

inline void PrintTo(Engine e, std::ostream* os) { *os << engine_label(e); }
inline void PrintTo(Strategy s, std::ostream* os) { *os << strategy_value(s); }
inline void PrintTo(const ModuleParam& p, std::ostream* os) {
  *os << engine_label(p.engine) << "_" << strategy_label(p.strategy);
}

// Test names: .../Host, .../Switch, .../Cuda_ContextPerProfile.
inline std::string engine_name(const ::testing::TestParamInfo<Engine>& info) { return engine_label(info.param); }
inline std::string strategy_name(const ::testing::TestParamInfo<Strategy>& info) { return strategy_label(info.param); }
inline std::string param_name(const ::testing::TestParamInfo<ModuleParam>& info) {
  return std::string(engine_label(info.param.engine)) + "_" + strategy_label(info.param.strategy);
}

// The engines this executable has fixtures for: host where ETRT_FIXTURE_DIR is defined, CUDA where
// ETRT_GPU_FIXTURE_DIR is.
inline std::vector<Engine> built_engines() {
  std::vector<Engine> engines;
#ifdef ETRT_FIXTURE_DIR
  engines.push_back(Engine::kHost);
#endif
#ifdef ETRT_GPU_FIXTURE_DIR
  engines.push_back(Engine::kCuda);
#endif
  return engines;
}

// Every built engine under both strategies.
inline std::vector<ModuleParam> built_params() {
  std::vector<ModuleParam> params;
  for (Engine e : built_engines())
    for (Strategy s : {Strategy::kSwitch, Strategy::kContextPerProfile}) params.push_back({e, s});
  return params;
}

// The build tree's fixtures of `engine`, or the folder $ETRT_HOST_FIXTURE_DIR / $ETRT_GPU_FIXTURE_DIR names where the
// GPU suite runs from a copy (a GPU machine that received tests/gpu/make_bundle.sh's bundle, docs/gpu-testing.md).
inline std::string fixture(Engine engine, const std::string& name) {
  const bool host = engine == Engine::kHost;
  const char* dir = std::getenv(host ? "ETRT_HOST_FIXTURE_DIR" : "ETRT_GPU_FIXTURE_DIR");
  if (dir == nullptr || *dir == '\0') {
#ifdef ETRT_FIXTURE_DIR
    if (host) dir = ETRT_FIXTURE_DIR;
#endif
#ifdef ETRT_GPU_FIXTURE_DIR
    if (!host) dir = ETRT_GPU_FIXTURE_DIR;
#endif
  }
  EXPECT_NE(dir, nullptr) << "this executable was built without " << engine_label(engine) << " fixtures";
  return std::string(dir != nullptr ? dir : ".") + "/" + name + ".pte";
}

// The suite's load options: the strategy, and auto_select_profiles where given.
inline testing::LoadOptions suite_load_options(Strategy strategy, std::optional<bool> auto_select = std::nullopt) {
  testing::LoadOptions options = {{kOptionProfileStrategy, strategy_value(strategy)}};
  if (auto_select) options.emplace_back(kOptionAutoSelect, *auto_select);
  return options;
}

// Loads the program at `path` under `strategy`, its method forward and the delegates in it, then clears the
// engines' traces, so a test sees only its own executions.
inline std::unique_ptr<Module> load_module(const std::string& path, Strategy strategy,
                                           std::optional<bool> auto_select = std::nullopt) {
  auto module = std::make_unique<Module>(path);
  EXPECT_EQ(testing::load_with_options(*module, suite_load_options(strategy, auto_select)), et::Error::Ok)
      << last_error_message();
  gpufree::clear_all_traces();
  return module;
}

// The set_optimization_profile calls `changes` profile changes cost the engine: one each with one context, none with
// a context per profile (each was bound to its profile at load).
inline int64_t switch_calls_for(Strategy strategy, int64_t changes) {
  return strategy == Strategy::kSwitch ? changes : 0;
}

// The foreign fixture's output: the llm's logits plus one, added by a non-TensorRT delegate (EtrtTestAddOne) that
// reads the TensorRT delegate's output on the host.
inline void expect_logits_plus_one(const Outcome& out, const std::vector<int64_t>& ids) {
  ASSERT_EQ(out.error, et::Error::Ok) << last_error_message();
  const auto want = fixtures::expected_logits(ids);
  ASSERT_EQ(out.values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out.values[i], want[i] + 1.0f, 1e-5f) << "element " << i;
}

}  // namespace etrt::module_test
