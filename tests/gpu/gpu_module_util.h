#pragma once
// What the GPU suite's CUDA-only Module tests (cuda_path_test.cpp, decoder_cuda_test.cpp) share: the Module suite's
// names, fixtures and loading (tests/backend/module_suite.h), on CUDA-mode fixtures under a profile strategy. The
// cases both engine kinds share are tests/backend/module_e2e_test.cpp, compiled into this suite too.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "etrt/stream_guard.h"
#include "gpu_test_util.h"
#include "module_suite.h"

namespace etrt::gpu_test {

// et, ref, Module, from_blob, kDecode/kPrefill, Strategy, strategy_name, token_ids, run_ids, expect_logits, ...
using namespace ::etrt::module_test;  // NOLINT(google-build-using-namespace): the suite's vocabulary

// A CUDA-mode fixture: the build tree's, or $ETRT_GPU_FIXTURE_DIR's where the suite runs from a bundle.
inline std::string fixture(const std::string& name) { return module_test::fixture(Engine::kCuda, name); }

// Every case runs under both load-time strategies (load option profile_strategy).
class CudaModule : public ::testing::TestWithParam<Strategy> {
 protected:
  void TearDown() override { gpufree::clear_all_traces(); }

  // Loads `name`.pte under this case's strategy and clears the traces, so a test sees only its own executions.
  std::unique_ptr<Module> load(const std::string& name) { return load_module(fixture(name), GetParam()); }

  int64_t strategy_switches(int64_t changes) const { return switch_calls_for(GetParam(), changes); }
};

}  // namespace etrt::gpu_test
