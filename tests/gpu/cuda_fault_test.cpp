// Faults at the CUDA runtime calls of the backend's CUDA path (cuda_faults.h), end to end through Module on the
// CUDA-mode llm fixture, and the GPU-free NvInfer's faults at every NvInfer call on the same CUDA-mode engine. Each
// case: the failing call gives a clear Error whose message names the call, and afterwards the delegate runs
// correctly (or, for a load-time fault, the load is refused and a new load runs). Leaks show under
// compute-sanitizer's leak check, which the bundle runs this suite under (run_bundle.sh).

#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cuda_faults.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "etrt_gpufree/faults.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_loading.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace faults = ::etrt::cuda_faults;
namespace gpufree = ::etrt::gpufree;
using ::etrt::module_test::expect_logits;
using ::etrt::module_test::run_ids;
using ::etrt::module_test::token_ids;
using ::executorch::extension::Module;
using ::testing::HasSubstr;

std::string fixture(const std::string& name) {
  const char* dir = std::getenv("ETRT_GPU_FIXTURE_DIR");
  return std::string(dir != nullptr ? dir : ETRT_GPU_FIXTURE_DIR) + "/" + name + ".pte";
}

// The CUDA-mode llm program, loaded with CUDA graphs on or off; its IO is memory-planned host memory, so every
// execution stages its input and output through device buffers. The switch strategy: a prefill switches the one
// context with setOptimizationProfileAsync, the call CudaNvInferFault fails at execute.
std::unique_ptr<Module> load_llm(bool graphs, et::Error* loaded) {
  return etrt::testing::load_module(
      fixture("llm"), {{etrt::kOptionProfileStrategy, etrt::kStrategySwitch}, {etrt::kOptionCudaGraphs, graphs}},
      loaded);
}

class CudaFault : public ::testing::Test {
 protected:
  void SetUp() override {
    faults::reset();
    gpufree::clear_faults();
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    faults::reset();
    gpufree::clear_faults();
    gpufree::clear_all_traces();
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
  // One decode step, on the caller's stream when `on_stream`.
  et::Error step(Module& module, bool on_stream = false) {
    std::unique_ptr<etrt::CudaStreamGuard> guard;
    if (on_stream) guard = std::make_unique<etrt::CudaStreamGuard>(stream_);
    return run_ids(module, token_ids(1)).error;
  }
  void expect_step_runs(Module& module, bool on_stream = false) {
    std::unique_ptr<etrt::CudaStreamGuard> guard;
    if (on_stream) guard = std::make_unique<etrt::CudaStreamGuard>(stream_);
    expect_logits(run_ids(module, token_ids(1)), token_ids(1));
  }
  cudaStream_t stream_ = nullptr;
};

// ---- faults at load: refused cleanly, and the next load runs ----

struct LoadFault {
  const char* function;
};
void PrintTo(const LoadFault& f, std::ostream* os) { *os << f.function; }

class CudaLoadFault : public CudaFault, public ::testing::WithParamInterface<LoadFault> {};

TEST_P(CudaLoadFault, IsRefusedNamingTheCallAndTheNextLoadRuns) {
  faults::arm(GetParam().function);
  et::Error loaded = et::Error::Ok;
  {
    auto module = load_llm(false, &loaded);
    EXPECT_EQ(faults::fired(), 1) << GetParam().function << " was not called at load";
    EXPECT_NE(loaded, et::Error::Ok);
    EXPECT_THAT(etrt::last_error_message(), HasSubstr(GetParam().function));
  }
  auto module = load_llm(false, &loaded);
  ASSERT_EQ(loaded, et::Error::Ok) << etrt::last_error_message();
  expect_step_runs(*module);
}

INSTANTIATE_TEST_SUITE_P(Calls, CudaLoadFault,
                         ::testing::Values(LoadFault{"cudaGetDeviceCount"}, LoadFault{"cudaMalloc"},
                                           LoadFault{"cudaEventCreateWithFlags"}, LoadFault{"cudaStreamSynchronize"}),
                         [](const ::testing::TestParamInfo<LoadFault>& p) { return std::string(p.param.function); });

// ---- faults while executing: a clear error, and the next execution runs ----

struct ExecuteFault {
  const char* function;
  int nth;          // which of the step's calls of `function` fails
  bool on_stream;   // the step runs on the caller's stream
  et::Error error;  // what the step returns
};
void PrintTo(const ExecuteFault& f, std::ostream* os) { *os << f.function << " #" << f.nth; }

class CudaExecuteFault : public CudaFault, public ::testing::WithParamInterface<ExecuteFault> {};

TEST_P(CudaExecuteFault, FailsNamingTheCallAndTheNextStepRuns) {
  const ExecuteFault& f = GetParam();
  et::Error loaded = et::Error::Ok;
  auto module = load_llm(false, &loaded);
  ASSERT_EQ(loaded, et::Error::Ok) << etrt::last_error_message();
  // A first step without a caller stream leaves work recorded on the per-thread stream: a step on the caller's
  // stream then waits for it (cudaStreamWaitEvent).
  expect_step_runs(*module);
  faults::arm(f.function, f.nth);
  EXPECT_EQ(step(*module, f.on_stream), f.error);
  EXPECT_EQ(faults::fired(), 1) << f.function << " #" << f.nth << " was not called";
  EXPECT_THAT(etrt::last_error_message(), HasSubstr(f.function));
  expect_step_runs(*module, f.on_stream);
  expect_step_runs(*module);
}

INSTANTIATE_TEST_SUITE_P(
    Calls, CudaExecuteFault,
    ::testing::Values(ExecuteFault{"cudaStreamGetDevice", 1, true, et::Error::InvalidArgument},
                      ExecuteFault{"cudaStreamWaitEvent", 1, true, et::Error::Internal},
                      ExecuteFault{"cudaMemcpyAsync", 1, false, et::Error::Internal},  // staging the input
                      ExecuteFault{"cudaMemcpyAsync", 2, false, et::Error::Internal},  // copying the output back
                      ExecuteFault{"cudaEventRecord", 1, false, et::Error::Internal},
                      ExecuteFault{"cudaEventSynchronize", 1, false, et::Error::Internal}),
    [](const ::testing::TestParamInfo<ExecuteFault>& p) {
      return std::string(p.param.function) + "_" + std::to_string(p.param.nth) + (p.param.on_stream ? "_Stream" : "");
    });

// ---- CUDA graphs: a failed capture turns graphs off for good; a failed replay fails one step ----

class CudaGraphFault : public CudaFault, public ::testing::WithParamInterface<const char*> {};

TEST_P(CudaGraphFault, AFailedCaptureFallsBackToPlainEnqueuesForGood) {
  et::Error loaded = et::Error::Ok;
  auto module = load_llm(true, &loaded);
  ASSERT_EQ(loaded, et::Error::Ok) << etrt::last_error_message();
  expect_step_runs(*module, true);  // plain: the first enqueue with these shapes
  faults::arm(GetParam());
  expect_step_runs(*module, true);  // would capture; the capture fails, this step enqueues plainly
  EXPECT_EQ(faults::fired(), 1) << GetParam() << " was not called";
  for (int i = 0; i < 3; ++i) expect_step_runs(*module, true);
  EXPECT_EQ(faults::calls("cudaStreamBeginCapture"), 1) << "graphs must stay off after a failed capture";
  EXPECT_EQ(faults::calls("cudaGraphLaunch"), 0);
}

INSTANTIATE_TEST_SUITE_P(Calls, CudaGraphFault,
                         ::testing::Values("cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate"),
                         [](const ::testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

TEST_F(CudaFault, AFailedGraphLaunchFailsThatStepNamingTheCallAndTheNextReplayRuns) {
  et::Error loaded = et::Error::Ok;
  auto module = load_llm(true, &loaded);
  ASSERT_EQ(loaded, et::Error::Ok) << etrt::last_error_message();
  expect_step_runs(*module, true);  // plain
  expect_step_runs(*module, true);  // captured and replayed
  ASSERT_EQ(faults::calls("cudaGraphLaunch"), 1);
  faults::arm("cudaGraphLaunch");
  EXPECT_EQ(step(*module, true), et::Error::Internal);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("cudaGraphLaunch"));
  expect_step_runs(*module, true);  // after a failure the context's state is not trusted: a plain enqueue
  expect_step_runs(*module, true);  // steady again: the graph is replayed
  EXPECT_EQ(faults::calls("cudaGraphLaunch"), 3);
}

// ---- the GPU-free NvInfer's faults at every NvInfer call, on a CUDA-mode engine ----

struct NvInferFault {
  gpufree::Call call;
  bool at_load;
};
void PrintTo(const NvInferFault& f, std::ostream* os) { *os << gpufree::to_string(f.call); }

class CudaNvInferFault : public CudaFault, public ::testing::WithParamInterface<NvInferFault> {};

TEST_P(CudaNvInferFault, FailsNamingTheCallAndLeavesTheRuntimeUsable) {
  const NvInferFault& f = GetParam();
  const char* name = gpufree::to_string(f.call);
  et::Error loaded = et::Error::Ok;
  if (f.at_load) {
    gpufree::inject_fault(f.call, 1, "llm");
    {
      auto module = load_llm(false, &loaded);
      EXPECT_NE(loaded, et::Error::Ok);
      EXPECT_THAT(etrt::last_error_message(), HasSubstr(name));
    }
    gpufree::clear_faults();
    auto module = load_llm(false, &loaded);
    ASSERT_EQ(loaded, et::Error::Ok) << etrt::last_error_message();
    expect_step_runs(*module);
    return;
  }
  auto module = load_llm(false, &loaded);
  ASSERT_EQ(loaded, et::Error::Ok) << etrt::last_error_message();
  // The first execution, a prefill step: a switch, then every input shape, output shape and address is set.
  gpufree::inject_fault(f.call, 1, "llm");
  {
    etrt::OptimizationProfileGuard prefill(1);
    EXPECT_NE(run_ids(*module, token_ids(64)).error, et::Error::Ok);
    EXPECT_THAT(etrt::last_error_message(), HasSubstr(name));
    gpufree::clear_faults();
    expect_logits(run_ids(*module, token_ids(64)), token_ids(64));
  }
  expect_step_runs(*module);
}

INSTANTIATE_TEST_SUITE_P(Calls, CudaNvInferFault,
                         ::testing::Values(NvInferFault{gpufree::Call::kDeserializeCudaEngine, true},
                                           NvInferFault{gpufree::Call::kCreateExecutionContext, true},
                                           NvInferFault{gpufree::Call::kSetOptimizationProfileAsync, false},
                                           NvInferFault{gpufree::Call::kSetInputShape, false},
                                           NvInferFault{gpufree::Call::kGetTensorShape, false},
                                           NvInferFault{gpufree::Call::kSetTensorAddress, false},
                                           NvInferFault{gpufree::Call::kEnqueueV3, false}),
                         [](const ::testing::TestParamInfo<NvInferFault>& p) {
                           return std::string(gpufree::to_string(p.param.call));
                         });

}  // namespace
