// End-to-end: .pte files packed at build time from GPU-free NvInfer engines, loaded
// from disk and run through executorch::extension::Module with libetrt
// registered as "TensorRTBackend". Assertions are on outputs and on the
// GPU-free NvInfer engine's own trace (what the engine did), not on what the backend
// says it did.
//
// One suite for both engine kinds (module_suite.h): every case runs on
// host-mode engines and, in the GPU suite (tests/gpu, -DETRT_WITH_CUDA=ON), on
// CUDA-mode engines, each under both profile strategies: ModuleTest.<case>/
// Host_Switch and .../Host_ContextPerProfile in the CPU executable;
// Gpu/ModuleTest.<case>/Cuda_Switch, .../Cuda_ContextPerProfile and the two
// host ones in the GPU executable. A CUDA engine's inputs and outputs here are
// ExecuTorch's planned host tensors, so every call there also exercises
// staging: host inputs copied in on the stream, outputs copied back and ready
// when forward() returns. Device IO, streams and lifetimes are in
// tests/gpu/cuda_path_test.cpp.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_suite.h"

namespace etrt::module_test {
namespace {

// Parameterized by engine and strategy.
class ModuleTest : public ::testing::TestWithParam<ModuleParam> {
 protected:
  void TearDown() override { gpufree::clear_all_traces(); }

  Engine engine() const { return GetParam().engine; }
  Strategy strategy() const { return GetParam().strategy; }
  std::string fixture(const std::string& name) const { return module_test::fixture(engine(), name); }

  // Loads `name`.pte under this case's strategy (and auto_select_profiles where given), its methods and
  // delegates, and clears the engine's trace so each test sees only its own executions.
  std::unique_ptr<Module> load(const std::string& name, std::optional<bool> auto_select = std::nullopt) {
    return load_module(fixture(name), strategy(), auto_select);
  }
  int64_t strategy_switches(int64_t changes) const { return switch_calls_for(strategy(), changes); }
};

// ---- profile choice through the guard ----

TEST_P(ModuleTest, WithoutAGuardTheDecodeProfileZeroRuns) {
  auto module = load("llm");
  const auto ids = token_ids(1);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(gpufree::last_enqueue_profile("llm"), 0);
  EXPECT_EQ(switch_calls("llm"), 0);
}

// Without a guard a multi-profile engine chooses by shape, first-fit: prefill on profile 1, and decode back on
// profile 0 even where profile 1 also fits (the overlap engine: [1,1] and [1,1..2048]).
TEST_P(ModuleTest, WithoutAGuardAMultiProfileEngineChoosesTheFirstProfileThatFits) {
  auto module = load("overlap");
  const auto prompt = token_ids(64), step = token_ids(1);
  expect_logits(run_ids(*module, prompt), prompt);
  EXPECT_EQ(gpufree::last_enqueue_profile("overlap"), kPrefill);
  expect_logits(run_ids(*module, step), step);
  EXPECT_EQ(gpufree::last_enqueue_profile("overlap"), kDecode);
}

TEST_P(ModuleTest, WithAutomaticSelectionTurnedOffAPrefillShapeFailsNamingTheBounds) {
  auto module = load("llm", /*auto_select=*/false);
  EXPECT_EQ(run_ids(*module, token_ids(64)).error, et::Error::InvalidArgument);
  const std::string message = last_error_message();
  EXPECT_THAT(message, HasSubstr("input_ids"));
  EXPECT_THAT(message, HasSubstr("64"));
  EXPECT_THAT(message, HasSubstr("profile 0"));
  EXPECT_EQ(gpufree::count_enqueues("llm"), 0);
}

TEST_P(ModuleTest, PinningProfileOneRunsAPrefillShapeOnProfileOne) {
  auto module = load("llm");
  const auto ids = token_ids(64);
  OptimizationProfileGuard guard(kPrefill);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(gpufree::last_enqueue_profile("llm"), kPrefill);
  EXPECT_EQ(switch_calls("llm"), strategy_switches(1));
}

TEST_P(ModuleTest, PinningProfileZeroRunsDecodeOnProfileZero) {
  auto module = load("llm");
  const auto ids = token_ids(1);
  OptimizationProfileGuard guard(kDecode);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(gpufree::last_enqueue_profile("llm"), kDecode);
}

TEST_P(ModuleTest, AutoChoosesTheProfileFromTheInputShape) {
  auto module = load("llm");
  auto automatic = OptimizationProfileGuard::automatic();
  const auto prompt = token_ids(100);
  expect_logits(run_ids(*module, prompt), prompt);
  EXPECT_EQ(gpufree::last_enqueue_profile("llm"), kPrefill);
  const auto token = token_ids(1);
  expect_logits(run_ids(*module, token), token);
  EXPECT_EQ(gpufree::last_enqueue_profile("llm"), kDecode);
}

TEST_P(ModuleTest, PrefillDecodePrefillChangesProfileOncePerRegimeChange) {
  auto module = load("llm");
  ExecutionReport report;
  {
    OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_ids(*module, token_ids(40)), token_ids(40));
  }
  {
    OptimizationProfileGuard guard(kDecode);
    for (int step = 0; step < 5; ++step) expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  }
  {
    OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_ids(*module, token_ids(33)), token_ids(33));
  }
  // 0 -> 1 (prefill), 1 -> 0 (decode), 0 -> 1 (prefill again): three regime changes.
  EXPECT_EQ(report.switches(), 3u);
  EXPECT_EQ(switch_calls("llm"), strategy_switches(3));
  EXPECT_EQ(gpufree::count_enqueues("llm"), 7);
}

TEST_P(ModuleTest, AShapeNoProfileAcceptsFailsUnderAutoListingEveryProfile) {
  auto module = load("llm");
  auto automatic = OptimizationProfileGuard::automatic();
  // 8 tokens: more than decode's 1, fewer than prefill's 32.
  EXPECT_EQ(run_ids(*module, token_ids(8)).error, et::Error::InvalidArgument);
  const std::string message = last_error_message();
  EXPECT_THAT(message, HasSubstr("profile 0"));
  EXPECT_THAT(message, HasSubstr("profile 1"));
  EXPECT_THAT(message, HasSubstr("2048"));
  EXPECT_THAT(message, HasSubstr("OptimizationProfileGuard"));
}

TEST_P(ModuleTest, ASteadyStateExecutionRepeatsOnlyTheEnqueue) {
  auto module = load("llm");
  for (int step = 0; step < 4; ++step) expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  // The context keeps shapes and addresses between enqueues: only the first call sets them.
  EXPECT_EQ(count("llm", gpufree::TraceKind::kSetInputShape), 1);
  EXPECT_EQ(count("llm", gpufree::TraceKind::kSetTensorAddress), 2);
  EXPECT_EQ(gpufree::count_enqueues("llm"), 4);
  // A new shape is set again; a switch makes the backend set everything again, and so does the first use of the
  // prefill profile's own context.
  {
    OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_ids(*module, token_ids(40)), token_ids(40));
    expect_logits(run_ids(*module, token_ids(41)), token_ids(41));
  }
  EXPECT_EQ(count("llm", gpufree::TraceKind::kSetInputShape), 3);
  EXPECT_EQ(count("llm", gpufree::TraceKind::kSetTensorAddress), 4);
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  // Back on decode: the switch sets the shape again; the decode profile's own context still holds it.
  EXPECT_EQ(count("llm", gpufree::TraceKind::kSetInputShape), strategy() == Strategy::kSwitch ? 4 : 3);
  EXPECT_EQ(gpufree::trace_counters("llm").failures, 0);
}

// ---- overlapping profiles: 0 = exactly one token, 1 = 1..2048 ----

TEST_P(ModuleTest, StickyAutoKeepsTheWideProfileForOneTokenAfterAPrefill) {
  auto module = load("overlap");
  auto automatic = OptimizationProfileGuard::automatic(AutoPolicy::kStickyFirstFit);
  expect_logits(run_ids(*module, token_ids(10)), token_ids(10));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(gpufree::last_enqueue_profile("overlap"), 1);
  EXPECT_EQ(switch_calls("overlap"), strategy_switches(1));
}

TEST_P(ModuleTest, StickyAutoStaysOnProfileZeroForOneTokenFromAFreshLoad) {
  auto module = load("overlap");
  auto automatic = OptimizationProfileGuard::automatic(AutoPolicy::kStickyFirstFit);
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(gpufree::last_enqueue_profile("overlap"), 0);
  EXPECT_EQ(switch_calls("overlap"), 0);
}

TEST_P(ModuleTest, FirstFitAutoReturnsToProfileZeroForOneTokenAfterAPrefill) {
  auto module = load("overlap");
  auto automatic = OptimizationProfileGuard::automatic(AutoPolicy::kFirstFit);
  expect_logits(run_ids(*module, token_ids(10)), token_ids(10));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(gpufree::last_enqueue_profile("overlap"), 0);
  EXPECT_EQ(switch_calls("overlap"), strategy_switches(2));
}

TEST_P(ModuleTest, OverlappingProfilesGiveIdenticalOutputs) {
  auto module = load("overlap");
  const auto ids = token_ids(1);
  Outcome on_zero, on_one;
  {
    OptimizationProfileGuard guard(0);
    on_zero = run_ids(*module, ids);
  }
  {
    OptimizationProfileGuard guard(1);
    on_one = run_ids(*module, ids);
  }
  ASSERT_EQ(on_zero.error, et::Error::Ok);
  ASSERT_EQ(on_one.error, et::Error::Ok);
  EXPECT_EQ(on_zero.shape, on_one.shape);
  EXPECT_EQ(on_zero.values, on_one.values);
  EXPECT_EQ(gpufree::last_enqueue_profile("overlap"), 1);
}

// ---- bad requests and bad inputs ----

TEST_P(ModuleTest, AnOutOfRangePinFailsAndTheEngineSwitchesNothing) {
  auto module = load("llm");
  OptimizationProfileGuard guard(5);
  EXPECT_EQ(run_ids(*module, token_ids(1)).error, et::Error::InvalidArgument);
  EXPECT_THAT(last_error_message(), HasSubstr("5"));
  EXPECT_THAT(last_error_message(), HasSubstr("2 optimization profiles"));
  EXPECT_EQ(switch_calls("llm"), 0);
  EXPECT_EQ(gpufree::count_enqueues("llm"), 0);
}

TEST_P(ModuleTest, ANegativePinFailsAndTheEngineSwitchesNothing) {
  auto module = load("llm");
  OptimizationProfileGuard guard(-1);
  EXPECT_EQ(run_ids(*module, token_ids(1)).error, et::Error::InvalidArgument);
  EXPECT_EQ(switch_calls("llm"), 0);
}

TEST_P(ModuleTest, ARefusedCallLeavesTheNextValidCallWorking) {
  auto module = load("llm");
  {
    OptimizationProfileGuard guard(kPrefill);
    EXPECT_EQ(run_ids(*module, token_ids(8)).error, et::Error::InvalidArgument);  // below prefill's 32
    EXPECT_THAT(last_error_message(), HasSubstr("[32, 2048]"));
    expect_logits(run_ids(*module, token_ids(32)), token_ids(32));
  }
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(gpufree::trace_counters("llm").failures, 0) << "the refusal must happen before the engine is touched";
}

TEST_P(ModuleTest, AWrongDtypeIsRefusedNamingTheInput) {
  auto module = load("llm");
  std::vector<float> not_ids(4, 1.0f);
  auto tensor = from_blob(not_ids.data(), {1, 4}, ScalarType::Float);
  EXPECT_NE(module->forward(tensor).error(), et::Error::Ok);
  EXPECT_EQ(gpufree::count_enqueues("llm"), 0);
}

// A token id outside the embedding's vocabulary is the caller's data, which only the engine can see: TensorRT's gather
// stores zeros for it (seen on TensorRT 8.6, tests/contract) and the GPU-free NvInfer's engines do the same, host
// and CUDA alike. The forward succeeds with that row zero; keeping ids in range is the runner's job (docs/tensorrt.md).
TEST_P(ModuleTest, ATokenIdOutsideTheVocabularyGathersAZeroRow) {
  auto module = load("llm");
  std::vector<int64_t> prompt = token_ids(32);
  prompt[5] = fixtures::kVocab;
  // Row `row` of `out` ([1, S, kHidden]) is all zero; every other row is what the model computes for its id.
  const auto expect_zero_row = [](const Outcome& out, const std::vector<int64_t>& ids, size_t row) {
    const auto hidden = static_cast<size_t>(fixtures::kHidden);
    ASSERT_EQ(out.error, et::Error::Ok) << last_error_message();
    ASSERT_EQ(out.values.size(), ids.size() * hidden);
    for (size_t r = 0; r < ids.size(); ++r) {
      const std::vector<float> want = r == row ? std::vector<float>(hidden, 0.0f) : fixtures::expected_logits({ids[r]});
      for (size_t h = 0; h < hidden; ++h) EXPECT_NEAR(out.values[r * hidden + h], want[h], 1e-5f) << "row " << r;
    }
  };
  expect_zero_row(run_ids(*module, prompt), prompt, 5);
  expect_zero_row(run_ids(*module, {-1}), {-1}, 0);
  expect_logits(run_ids(*module, token_ids(32)), token_ids(32));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
}

// ---- output capacity ----

TEST_P(ModuleTest, ANonzeroProfileProducesTheLargestOutputWithinThePlannedBuffer) {
  auto module = load("big_output");
  {
    OptimizationProfileGuard guard(0);
    expect_logits(run_ids(*module, token_ids(1)), token_ids(1));  // [1,1,16]
  }
  OptimizationProfileGuard guard(1);
  expect_logits(run_ids(*module, token_ids(64)), token_ids(64));  // [1,64,16]
}

TEST_P(ModuleTest, AnOutputLargerThanItsPlannedCapacityIsAClearErrorNotAnOverflow) {
  auto module = load("small_capacity");
  OptimizationProfileGuard guard(1);
  expect_logits(run_ids(*module, token_ids(32)), token_ids(32));  // fits the 32-token plan
  EXPECT_EQ(run_ids(*module, token_ids(40)).error, et::Error::InvalidArgument);
  EXPECT_THAT(last_error_message(), HasSubstr("logits"));
  EXPECT_THAT(last_error_message(), HasSubstr("640 elements"));
  EXPECT_THAT(last_error_message(), HasSubstr("512"));
  EXPECT_EQ(gpufree::count_enqueues("small_capacity"), 1);
  // The failed call switched nothing back: the next one runs on the same profile.
  expect_logits(run_ids(*module, token_ids(20)), token_ids(20));
}

// ---- one-profile engines ----

TEST_P(ModuleTest, ASingleProfileEngineNeverIssuesASwitch) {
  auto module = load("single_static");
  std::vector<float> x = {1, 2, 3, 4};
  for (int32_t pin : {0, 1, 3}) {
    OptimizationProfileGuard guard(pin);
    ExecutionReport report;
    auto out = read_output(module->forward(from_blob(x.data(), {1, 4}, ScalarType::Float)));
    ASSERT_EQ(out.error, et::Error::Ok) << last_error_message();
    EXPECT_EQ(out.values, (std::vector<float>{2, 4, 6, 8}));
    ASSERT_EQ(report.entries().size(), 1u);
    EXPECT_EQ(report.entries()[0].profile, 0);
    EXPECT_EQ(report.entries()[0].pin_ignored, pin != 0);
  }
  EXPECT_EQ(switch_calls("single_static"), 0);
  EXPECT_EQ(gpufree::count_enqueues("single_static"), 3);
}

TEST_P(ModuleTest, ADynamicOneProfileEngineRefusesANonzeroPinSayingWhy) {
  auto module = load("single_dynamic");
  OptimizationProfileGuard guard(1);
  EXPECT_EQ(run_ids(*module, token_ids(4)).error, et::Error::InvalidArgument);
  EXPECT_THAT(last_error_message(), HasSubstr("single optimization profile"));
  EXPECT_EQ(switch_calls("single_dynamic"), 0);
}

TEST_P(ModuleTest, ADynamicOneProfileEngineRunsUnderAuto) {
  auto module = load("single_dynamic");
  auto automatic = OptimizationProfileGuard::automatic();
  expect_logits(run_ids(*module, token_ids(40)), token_ids(40));
  EXPECT_EQ(switch_calls("single_dynamic"), 0);
}

// ---- several delegates in one program ----

TEST_P(ModuleTest, AStaticDelegateBesideAMultiProfileOneIgnoresThePin) {
  auto module = load("mixed");
  auto ids = token_ids(48);
  std::vector<float> x = {1, 2, 3, 4};
  OptimizationProfileGuard guard(kPrefill);
  ExecutionReport report;
  auto result = module->forward(
      {from_blob(ids.data(), {1, 48}, ScalarType::Long), from_blob(x.data(), {1, 4}, ScalarType::Float)});
  ASSERT_TRUE(result.ok()) << last_error_message();
  expect_logits(read_output(result, 0), ids);
  EXPECT_EQ(read_output(result, 1).values, (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(gpufree::last_enqueue_profile("mixed_multi"), kPrefill);
  EXPECT_EQ(gpufree::last_enqueue_profile("mixed_static"), 0);
  EXPECT_EQ(switch_calls("mixed_static"), 0);
  ASSERT_EQ(report.entries().size(), 2u);
  EXPECT_TRUE(report.entries()[1].pin_ignored);
}

// EtrtTestAddOne reads the TensorRT delegate's output on the host the moment execute() returns (a CUDA engine's
// output staged back, complete); tests/gpu/cuda_path_test.cpp does the same behind queued device work.
TEST_P(ModuleTest, ANonTensorRTDelegateInTheSameProgramIgnoresTheRequest) {
  auto module = load("foreign");
  const auto ids = token_ids(40);
  OptimizationProfileGuard guard(kPrefill);
  expect_logits_plus_one(run_ids(*module, ids), ids);
  EXPECT_EQ(gpufree::last_enqueue_profile("foreign_multi"), kPrefill);
}

// ---- load-time options ----

TEST_P(ModuleTest, TheAutoLoadOptionMakesAutoTheDefaultForThatModule) {
  auto module = load("llm", /*auto_select=*/true);
  expect_logits(run_ids(*module, token_ids(64)), token_ids(64));
  EXPECT_EQ(gpufree::last_enqueue_profile("llm"), kPrefill);
  // A pin still wins over the module's default.
  OptimizationProfileGuard guard(kPrefill);
  EXPECT_EQ(run_ids(*module, token_ids(1)).error, et::Error::InvalidArgument);
}

// ---- observability and threads ----

TEST_P(ModuleTest, TheReportAndCountersSayWhichProfileRanAndHowManySwitches) {
  auto module = load("llm");
  et::BackendOption before[2];
  std::strcpy(before[0].key, kCounterProfileSwitches);
  std::strcpy(before[1].key, kCounterExecutions);
  ASSERT_EQ(et::get_option(kBackendId, et::Span<et::BackendOption>(before, 2)), et::Error::Ok);

  ExecutionReport report;
  {
    OptimizationProfileGuard guard(kPrefill);
    ASSERT_EQ(run_ids(*module, token_ids(32)).error, et::Error::Ok);
  }
  ASSERT_EQ(run_ids(*module, token_ids(1)).error, et::Error::Ok);
  ASSERT_EQ(report.entries().size(), 2u);
  EXPECT_EQ(report.entries()[0].profile, kPrefill);
  EXPECT_EQ(report.entries()[1].profile, kDecode);
  EXPECT_EQ(report.entries()[0].num_profiles, 2);
  EXPECT_THAT(std::string(report.entries()[0].delegate), HasSubstr("forward"));
  EXPECT_EQ(report.switches(), 2u);

  // The delegate's profile changes, whichever strategy carries them out.
  et::BackendOption after[3];
  std::strcpy(after[0].key, kCounterProfileSwitches);
  std::strcpy(after[1].key, kCounterExecutions);
  std::strcpy(after[2].key, kCounterLastProfile);
  ASSERT_EQ(et::get_option(kBackendId, et::Span<et::BackendOption>(after, 3)), et::Error::Ok);
  EXPECT_EQ(std::get<int>(after[0].value) - std::get<int>(before[0].value), 2);
  EXPECT_EQ(std::get<int>(after[1].value) - std::get<int>(before[1].value), 2);
  EXPECT_EQ(std::get<int>(after[2].value), kDecode);
}

TEST_P(ModuleTest, TwoThreadsWithDifferentGuardsEachGetTheirOwnProfile) {
  auto decode_module = load("llm");
  auto prefill_module = load("llm");
  const int calls = engine() == Engine::kHost ? 50 : 20;
  std::atomic<int> failures{0};
  auto worker = [&](Module& module, int32_t profile, size_t tokens) {
    OptimizationProfileGuard guard(profile);
    ExecutionReport report;
    for (int i = 0; i < calls; ++i) {
      // Decode takes exactly one token; prefill lengths vary, so the shapes (and a CUDA engine's copies) change
      // between calls.
      const auto ids = token_ids(tokens == 1 ? 1 : tokens + static_cast<size_t>(i % 3));
      const Outcome out = run_ids(module, ids);
      const auto want = fixtures::expected_logits(ids);
      bool same = out.error == et::Error::Ok && out.values.size() == want.size();
      // A device's fused multiply-adds round differently from the host's reference: compare within 1e-5.
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

// The GPU suite's names start Gpu/: its host instantiations would otherwise share the CPU executable's names, which
// CTest keeps in one list (labels set on one would land on the other).
#ifdef ETRT_GPU_FIXTURE_DIR
INSTANTIATE_TEST_SUITE_P(Gpu, ModuleTest, ::testing::ValuesIn(built_params()), param_name);
#else
INSTANTIATE_TEST_SUITE_P(, ModuleTest, ::testing::ValuesIn(built_params()), param_name);
#endif

// ---- what one strategy does, on each engine ----

// Parameterized by engine only: cases about loading, or about one strategy.
class ModuleEngineTest : public ::testing::TestWithParam<Engine> {
 protected:
  void TearDown() override { gpufree::clear_all_traces(); }
  std::string fixture(const std::string& name) const { return module_test::fixture(GetParam(), name); }
};

TEST_P(ModuleEngineTest, ContextPerProfileRunsTransitionsWithoutSwitchCalls) {
  auto module = load_module(fixture("llm"), Strategy::kContextPerProfile);
  ExecutionReport report;
  for (int round = 0; round < 2; ++round) {
    {
      OptimizationProfileGuard guard(kPrefill);
      expect_logits(run_ids(*module, token_ids(50)), token_ids(50));
    }
    OptimizationProfileGuard guard(kDecode);
    expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  }
  EXPECT_EQ(switch_calls("llm"), 0);  // every context was bound to its profile at load
  EXPECT_EQ(report.switches(), 4u);   // but the delegate changed profile four times
  std::vector<uint64_t> contexts;
  for (const auto& e : gpufree::trace_events("llm"))
    if (e.kind == gpufree::TraceKind::kEnqueue) contexts.push_back(e.context_id);
  ASSERT_EQ(contexts.size(), 4u);
  EXPECT_NE(contexts[0], contexts[1]);
  EXPECT_EQ(contexts[0], contexts[2]);
}

// The default strategy (etrt/options.h): a load that names no profile_strategy gives a multi-profile engine a
// context per profile, sharing one scratch buffer, and never switches at execute; a one-profile engine keeps its
// one context and the memory TensorRT gives it, as with the switch strategy.
TEST_P(ModuleEngineTest, WithoutAStrategyOptionAMultiProfileEngineRunsAContextPerProfile) {
  gpufree::clear_all_traces();
  et::Error status = et::Error::Ok;
  auto llm = testing::load_module(fixture("llm"), {}, &status);
  ASSERT_EQ(status, et::Error::Ok) << last_error_message();
  EXPECT_EQ(gpufree::trace_counters("llm").contexts_created - gpufree::trace_counters("llm").contexts_destroyed, 2)
      << trace_text("llm");
  EXPECT_EQ(count("llm", gpufree::TraceKind::kSetDeviceMemory), 2) << trace_text("llm");  // one buffer, two contexts
  gpufree::clear_all_traces();
  ExecutionReport report;
  std::vector<uint64_t> contexts;
  for (int32_t profile : {kPrefill, kDecode, kPrefill}) {
    OptimizationProfileGuard guard(profile);
    const auto ids = token_ids(profile == kPrefill ? 40 : 1);
    expect_logits(run_ids(*llm, ids), ids);
    EXPECT_EQ(gpufree::last_enqueue_profile("llm"), profile);
  }
  EXPECT_EQ(report.switches(), 3u);
  EXPECT_EQ(switch_calls("llm"), 0) << trace_text("llm");
  for (const auto& e : gpufree::trace_events("llm"))
    if (e.kind == gpufree::TraceKind::kEnqueue) contexts.push_back(e.context_id);
  ASSERT_EQ(contexts.size(), 3u);
  EXPECT_NE(contexts[0], contexts[1]);
  EXPECT_EQ(contexts[0], contexts[2]);

  auto single = testing::load_module(fixture("single_dynamic"), {}, &status);
  ASSERT_EQ(status, et::Error::Ok) << last_error_message();
  for (size_t n : {1u, 64u, 3u}) expect_logits(run_ids(*single, token_ids(n)), token_ids(n));
  const gpufree::TraceCounters c = gpufree::trace_counters("single_dynamic");
  EXPECT_EQ(c.contexts_created, 1) << trace_text("single_dynamic");
  EXPECT_EQ(count("single_dynamic", gpufree::TraceKind::kSetDeviceMemory), 0) << trace_text("single_dynamic");
  EXPECT_EQ(switch_calls("single_dynamic"), 0) << trace_text("single_dynamic");
  EXPECT_EQ(c.failures, 0) << trace_text("single_dynamic");
}

// ---- refusing what cannot run ----

TEST_P(ModuleEngineTest, AnUnknownLoadOptionFailsTheLoadNamingIt) {
  Module module(fixture("llm"));
  ASSERT_EQ(etrt::testing::load_with_options(module, {{"auto_selct", true}}, /*method=*/nullptr), et::Error::Ok);
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(last_error_message(), HasSubstr("auto_selct"));
}

TEST_P(ModuleEngineTest, AShapeTensorInputIsRefusedAtLoad) {
  Module module(fixture("shape_tensor"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(last_error_message(), HasSubstr("shape tensor"));
}

TEST_P(ModuleEngineTest, ATruncatedBlobIsRefusedAtLoad) {
  Module module(fixture("truncated"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(last_error_message(), HasSubstr("TensorRT blob"));
}

TEST_P(ModuleEngineTest, ABlobWhoseSignatureDisagreesWithItsEngineIsRefusedAtLoad) {
  Module module(fixture("signature_mismatch"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(last_error_message(), HasSubstr("[1,1024]"));
  EXPECT_THAT(last_error_message(), HasSubstr("[1,2048]"));
  EXPECT_THAT(last_error_message(), HasSubstr("profile 1 max"));
}

TEST_P(ModuleEngineTest, ABlobWhoseSignatureAgreesWithItsEngineLoads) {
  Module module(fixture("llm"));  // every fixture blob carries its engine's signature
  EXPECT_EQ(module.load_forward(), et::Error::Ok) << last_error_message();
}

TEST_P(ModuleEngineTest, ATensorRTPlanOnTheGpuFreeNvInferSaysHowToRebuild) {
  Module module(fixture("tensorrt_plan"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(last_error_message(), HasSubstr("TensorRT could not deserialize the engine"));
  EXPECT_THAT(last_error_message(), HasSubstr("-DTENSORRT_ROOT="));
}

#ifdef ETRT_GPU_FIXTURE_DIR
INSTANTIATE_TEST_SUITE_P(Gpu, ModuleEngineTest, ::testing::ValuesIn(built_engines()), engine_name);
#else
INSTANTIATE_TEST_SUITE_P(, ModuleEngineTest, ::testing::ValuesIn(built_engines()), engine_name);
#endif

}  // namespace
}  // namespace etrt::module_test
