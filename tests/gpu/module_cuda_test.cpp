// End-to-end on the CUDA path: tests/backend's cases on CUDA-mode fixtures (the
// same model and expected values), under both profile strategies, loaded and
// run through executorch::extension::Module with libetrt registered. Inputs
// and outputs here are ExecuTorch's planned host tensors, so every call also
// exercises staging: host inputs copied in on the stream, outputs copied back
// and ready when forward() returns. Device IO, streams and lifetimes are in
// cuda_path_test.cpp.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "etrt_gpufree/trace.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "fixtures.h"
#include "gpu_module_util.h"

namespace etrt::gpu_test {
namespace {

TEST_P(CudaModule, WithoutAGuardTheDecodeProfileZeroRuns) {
  auto module = load("llm");
  const auto ids = token_ids(1);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), 0);
  EXPECT_EQ(switch_calls("llm"), 0);
}

// Without a guard a multi-profile engine chooses by shape, first-fit: prefill on profile 1, decode on profile 0.
TEST_P(CudaModule, WithoutAGuardAMultiProfileEngineChoosesTheFirstProfileThatFits) {
  auto module = load("overlap");
  const auto prompt = token_ids(64), step = token_ids(1);
  expect_logits(run_ids(*module, prompt), prompt);
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), kPrefill);
  expect_logits(run_ids(*module, step), step);
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), kDecode);
}

TEST_P(CudaModule, PinningProfileOneRunsAPrefillShapeOnProfileOne) {
  auto module = load("llm");
  const auto ids = token_ids(64);
  etrt::OptimizationProfileGuard guard(kPrefill);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kPrefill);
  EXPECT_EQ(switch_calls("llm"), strategy_switches(1));
}

TEST_P(CudaModule, AutoChoosesTheProfileFromTheInputShape) {
  auto module = load("llm");
  auto automatic = etrt::OptimizationProfileGuard::automatic();
  const auto prompt = token_ids(100);
  expect_logits(run_ids(*module, prompt), prompt);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kPrefill);
  const auto token = token_ids(1);
  expect_logits(run_ids(*module, token), token);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kDecode);
}

TEST_P(CudaModule, PrefillDecodePrefillChangesProfileOncePerRegimeChange) {
  auto module = load("llm");
  etrt::ExecutionReport report;
  {
    etrt::OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_ids(*module, token_ids(40)), token_ids(40));
  }
  {
    etrt::OptimizationProfileGuard guard(kDecode);
    for (int step = 0; step < 5; ++step) expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  }
  {
    etrt::OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_ids(*module, token_ids(33)), token_ids(33));
  }
  EXPECT_EQ(report.switches(), 3u);
  EXPECT_EQ(switch_calls("llm"), strategy_switches(3));
  EXPECT_EQ(ref::count_enqueues("llm"), 7);
}

TEST_P(CudaModule, StickyAutoKeepsTheWideProfileForOneTokenAfterAPrefill) {
  auto module = load("overlap");
  auto automatic = etrt::OptimizationProfileGuard::automatic(etrt::AutoPolicy::kStickyFirstFit);
  expect_logits(run_ids(*module, token_ids(10)), token_ids(10));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), 1);
}

TEST_P(CudaModule, FirstFitAutoReturnsToProfileZeroForOneTokenAfterAPrefill) {
  auto module = load("overlap");
  auto automatic = etrt::OptimizationProfileGuard::automatic(etrt::AutoPolicy::kFirstFit);
  expect_logits(run_ids(*module, token_ids(10)), token_ids(10));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), 0);
  EXPECT_EQ(switch_calls("overlap"), strategy_switches(2));
}

TEST_P(CudaModule, AnOutOfRangePinFailsAndTheEngineSwitchesNothing) {
  auto module = load("llm");
  etrt::OptimizationProfileGuard guard(5);
  EXPECT_EQ(run_ids(*module, token_ids(1)).error, et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("2 optimization profiles"));
  EXPECT_EQ(switch_calls("llm"), 0);
  EXPECT_EQ(ref::count_enqueues("llm"), 0);
}

TEST_P(CudaModule, ARefusedCallLeavesTheNextValidCallWorking) {
  auto module = load("llm");
  {
    etrt::OptimizationProfileGuard guard(kPrefill);
    EXPECT_EQ(run_ids(*module, token_ids(8)).error, et::Error::InvalidArgument);  // below prefill's 32
    EXPECT_THAT(etrt::last_error_message(), HasSubstr("[32, 2048]"));
    expect_logits(run_ids(*module, token_ids(32)), token_ids(32));
  }
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(ref::trace_counters("llm").failures, 0) << "the refusal must happen before the engine is touched";
}

TEST_P(CudaModule, ANonzeroProfileProducesTheLargestOutputWithinThePlannedBuffer) {
  auto module = load("big_output");
  {
    etrt::OptimizationProfileGuard guard(0);
    expect_logits(run_ids(*module, token_ids(1)), token_ids(1));  // [1,1,16]
  }
  etrt::OptimizationProfileGuard guard(1);
  expect_logits(run_ids(*module, token_ids(64)), token_ids(64));  // [1,64,16]
}

TEST_P(CudaModule, AnOutputLargerThanItsPlannedCapacityIsAClearErrorNotAnOverflow) {
  auto module = load("small_capacity");
  etrt::OptimizationProfileGuard guard(1);
  expect_logits(run_ids(*module, token_ids(32)), token_ids(32));
  EXPECT_EQ(run_ids(*module, token_ids(40)).error, et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("640 elements"));
  EXPECT_EQ(ref::count_enqueues("small_capacity"), 1);
  // The failed call switched nothing back: the next one runs on the same profile.
  expect_logits(run_ids(*module, token_ids(20)), token_ids(20));
}

TEST_P(CudaModule, ASingleProfileEngineNeverIssuesASwitch) {
  auto module = load("single_static");
  std::vector<float> x = {1, 2, 3, 4};
  for (int32_t pin : {0, 1, 3}) {
    etrt::OptimizationProfileGuard guard(pin);
    auto out = read_output(module->forward(from_blob(x.data(), {1, 4}, ScalarType::Float)));
    ASSERT_EQ(out.error, et::Error::Ok) << etrt::last_error_message();
    EXPECT_EQ(out.values, (std::vector<float>{2, 4, 6, 8}));
  }
  EXPECT_EQ(switch_calls("single_static"), 0);
  EXPECT_EQ(ref::count_enqueues("single_static"), 3);
}

TEST_P(CudaModule, ADynamicOneProfileEngineRunsUnderAuto) {
  auto module = load("single_dynamic");
  auto automatic = etrt::OptimizationProfileGuard::automatic();
  expect_logits(run_ids(*module, token_ids(40)), token_ids(40));
  EXPECT_EQ(switch_calls("single_dynamic"), 0);
}

TEST_P(CudaModule, AStaticDelegateBesideAMultiProfileOneIgnoresThePin) {
  auto module = load("mixed");
  auto ids = token_ids(48);
  std::vector<float> x = {1, 2, 3, 4};
  etrt::OptimizationProfileGuard guard(kPrefill);
  auto result = module->forward(
      {from_blob(ids.data(), {1, 48}, ScalarType::Long), from_blob(x.data(), {1, 4}, ScalarType::Float)});
  ASSERT_TRUE(result.ok()) << etrt::last_error_message();
  expect_logits(read_output(result, 0), ids);
  EXPECT_EQ(read_output(result, 1).values, (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(ref::last_enqueue_profile("mixed_multi"), kPrefill);
  EXPECT_EQ(ref::last_enqueue_profile("mixed_static"), 0);
}

// EtrtTestAddOne reads the TensorRT delegate's host output on the host the moment execute() returns: the staged
// output must have been copied back and the copy finished by then.
TEST_P(CudaModule, AHostDelegateReadsTheStagedOutputCompleteRightAfterExecute) {
  auto module = load("foreign");
  Stream stream;
  etrt::CudaStreamGuard on(stream.get());
  etrt::OptimizationProfileGuard guard(kPrefill);
  for (size_t tokens : {40u, 2048u, 33u}) {
    spin(stream, 5);  // the delegate's work queues behind this; execute() must still return complete outputs
    const auto ids = token_ids(tokens);
    auto out = run_ids(*module, ids);
    ASSERT_EQ(out.error, et::Error::Ok) << etrt::last_error_message();
    auto want = etrt::fixtures::expected_logits(ids);
    ASSERT_EQ(out.values.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out.values[i], want[i] + 1.0f, 1e-5f) << i;
  }
}

TEST_P(CudaModule, TwoThreadsWithDifferentGuardsEachGetTheirOwnProfile) {
  auto decode_module = load("llm");
  auto prefill_module = load("llm");
  std::atomic<int> failures{0};
  auto worker = [&](Module& module, int32_t profile, size_t tokens) {
    etrt::OptimizationProfileGuard guard(profile);
    etrt::ExecutionReport report;
    for (int i = 0; i < 20; ++i) {
      // Decode takes exactly one token; prefill lengths vary, so the copies and resizes change between calls.
      const auto ids = token_ids(tokens == 1 ? 1 : tokens + static_cast<size_t>(i % 3));
      const Outcome out = run_ids(module, ids);
      const auto want = etrt::fixtures::expected_logits(ids);
      bool same = out.error == et::Error::Ok && out.values.size() == want.size();
      // The device's fused multiply-adds round differently from the host's reference: compare within 1e-5.
      for (size_t k = 0; same && k < want.size(); ++k) same = std::abs(out.values[k] - want[k]) <= 1e-5f;
      if (!same) ++failures;
    }
    for (const auto& e : report.entries())
      if (e.profile != profile) ++failures;
  };
  std::thread a(worker, std::ref(*decode_module), kDecode, 1);
  std::thread b(worker, std::ref(*prefill_module), kPrefill, 40);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Strategies, CudaModule, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

// ---- load-time refusals (strategy-independent) ----

TEST(CudaModuleLoad, ABlobNamingADeviceThisMachineDoesNotHaveIsRefusedAtLoadNamingIt) {
  Module module(fixture("llm_device9"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("CUDA device 9"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("CUDA device(s)"));
}

}  // namespace
}  // namespace etrt::gpu_test
