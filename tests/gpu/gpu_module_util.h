#pragma once
// What the GPU suite's Module tests share: loading a fixture under a profile
// strategy, running token ids, and checking logits against
// tests/backend/fixtures.h, the same expected values as the CPU suite.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/options.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "etrt_gpufree/trace.h"
#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "fixtures.h"
#include "gpu_test_util.h"
#include "module_test_util.h"

namespace etrt::gpu_test {

namespace et = ::executorch::runtime;
namespace ref = ::etrt::gpufree;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using ::testing::HasSubstr;

inline constexpr int32_t kDecode = 0;
inline constexpr int32_t kPrefill = 1;

// The fixtures' directory: the build tree's, or $ETRT_GPU_FIXTURE_DIR where the suite runs from a copy (a GPU
// machine that received a bundle, see docs/gpu-testing.md).
inline std::string fixture(const std::string& name) {
  const char* dir = std::getenv("ETRT_GPU_FIXTURE_DIR");
  return std::string(dir != nullptr ? dir : ETRT_GPU_FIXTURE_DIR) + "/" + name + ".pte";
}

// The helpers the CPU suite uses, on the same fixtures and expected values.
using ::etrt::module_test::count;
using ::etrt::module_test::expect_logits;
using ::etrt::module_test::expect_values;
using ::etrt::module_test::Outcome;
using ::etrt::module_test::read_output;
using ::etrt::module_test::run_ids;
using ::etrt::module_test::switch_calls;
using ::etrt::module_test::token_ids;

enum class Strategy { kSwitch, kContextPerProfile };

inline void PrintTo(Strategy s, std::ostream* os) {
  *os << (s == Strategy::kSwitch ? "switch" : "context_per_profile");
}

inline std::string strategy_name(const ::testing::TestParamInfo<Strategy>& info) {
  return info.param == Strategy::kSwitch ? "Switch" : "ContextPerProfile";
}

// Every case runs under both load-time strategies (load option profile_strategy).
class CudaModule : public ::testing::TestWithParam<Strategy> {
 protected:
  void TearDown() override { ref::clear_all_traces(); }

  // Loads `name`.pte under this case's strategy and clears the traces, so a test sees only its own executions.
  std::unique_ptr<Module> load(const std::string& name) {
    et::BackendOptions<2> options;
    EXPECT_EQ(
        options.set_option(etrt::kOptionProfileStrategy,
                           GetParam() == Strategy::kSwitch ? etrt::kStrategySwitch : etrt::kStrategyContextPerProfile),
        et::Error::Ok);
    et::LoadBackendOptionsMap map;
    EXPECT_EQ(map.set_options(etrt::kBackendId, options.view()), et::Error::Ok);
    auto module = std::make_unique<Module>(fixture(name));
    EXPECT_EQ(module->load(map), et::Error::Ok);
    EXPECT_EQ(module->load_forward(), et::Error::Ok) << etrt::last_error_message();
    ref::clear_all_traces();
    return module;
  }

  // set_optimization_profile calls `changes` profile changes cost: one each with one context, none with a context
  // per profile (each was bound to its profile at load).
  int64_t strategy_switches(int64_t changes) const { return GetParam() == Strategy::kSwitch ? changes : 0; }
};

}  // namespace etrt::gpu_test
