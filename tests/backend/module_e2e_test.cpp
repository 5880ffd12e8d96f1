// End-to-end: .pte files packed at build time from reference engines, loaded
// from disk and run through executorch::extension::Module with libetrt
// registered as "TensorRTBackend". Assertions are on outputs and on the
// reference engine's own trace (what the engine did), not on what the backend
// says it did.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "etrt_gpufree/trace.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "fixtures.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace ref = ::etrt::gpufree;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using ::testing::HasSubstr;
using namespace ::etrt::module_test;  // token_ids, run_ids, expect_logits, count, switch_calls, ...

constexpr int32_t kDecode = 0;
constexpr int32_t kPrefill = 1;

class ModuleTest : public ::testing::Test {
 protected:
  // Loads `name`.pte, its methods and delegates, and clears the engine's trace
  // so each test sees only its own executions.
  std::unique_ptr<Module> load(const std::string& name, const et::LoadBackendOptionsMap* options = nullptr) {
    auto module = std::make_unique<Module>(fixture(name));
    const et::Error loaded = options ? module->load(*options) : module->load();
    EXPECT_EQ(loaded, et::Error::Ok);
    EXPECT_EQ(module->load_forward(), et::Error::Ok) << etrt::last_error_message();
    ref::clear_all_traces();
    return module;
  }
};

// ---- profile choice through the guard ----

TEST_F(ModuleTest, WithoutAGuardTheDecodeProfileZeroRuns) {
  auto module = load("llm");
  const auto ids = token_ids(1);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), 0);
  EXPECT_EQ(switch_calls("llm"), 0);
}

// Without a guard a multi-profile engine chooses by shape, first-fit: prefill on profile 1, and decode back on
// profile 0 even where profile 1 also fits (the overlap engine: [1,1] and [1,1..2048]).
TEST_F(ModuleTest, WithoutAGuardAMultiProfileEngineChoosesTheFirstProfileThatFits) {
  auto module = load("overlap");
  const auto prompt = token_ids(64), step = token_ids(1);
  expect_logits(run_ids(*module, prompt), prompt);
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), kPrefill);
  expect_logits(run_ids(*module, step), step);
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), kDecode);
}

TEST_F(ModuleTest, WithAutomaticSelectionTurnedOffAPrefillShapeFailsNamingTheBounds) {
  et::BackendOptions<1> options;
  ASSERT_EQ(options.set_option(etrt::kOptionAutoSelect, false), et::Error::Ok);
  et::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options(etrt::kBackendId, options.view()), et::Error::Ok);
  auto module = load("llm", &map);
  EXPECT_EQ(run_ids(*module, token_ids(64)).error, et::Error::InvalidArgument);
  const std::string message = etrt::last_error_message();
  EXPECT_THAT(message, HasSubstr("input_ids"));
  EXPECT_THAT(message, HasSubstr("64"));
  EXPECT_THAT(message, HasSubstr("profile 0"));
  EXPECT_EQ(ref::count_enqueues("llm"), 0);
}

TEST_F(ModuleTest, PinningProfileOneRunsAPrefillShapeOnProfileOne) {
  auto module = load("llm");
  const auto ids = token_ids(64);
  etrt::OptimizationProfileGuard guard(kPrefill);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kPrefill);
  EXPECT_EQ(switch_calls("llm"), 1);
}

TEST_F(ModuleTest, PinningProfileZeroRunsDecodeOnProfileZero) {
  auto module = load("llm");
  const auto ids = token_ids(1);
  etrt::OptimizationProfileGuard guard(kDecode);
  expect_logits(run_ids(*module, ids), ids);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kDecode);
}

TEST_F(ModuleTest, AutoChoosesTheProfileFromTheInputShape) {
  auto module = load("llm");
  auto automatic = etrt::OptimizationProfileGuard::automatic();
  const auto prompt = token_ids(100);
  expect_logits(run_ids(*module, prompt), prompt);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kPrefill);
  const auto token = token_ids(1);
  expect_logits(run_ids(*module, token), token);
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kDecode);
}

TEST_F(ModuleTest, PrefillDecodePrefillSwitchesOncePerRegimeChange) {
  auto module = load("llm");
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
  // 0 -> 1 (prefill), 1 -> 0 (decode), 0 -> 1 (prefill again): three regime changes.
  EXPECT_EQ(switch_calls("llm"), 3);
  EXPECT_EQ(ref::count_enqueues("llm"), 7);
}

TEST_F(ModuleTest, AShapeNoProfileAcceptsFailsUnderAutoListingEveryProfile) {
  auto module = load("llm");
  auto automatic = etrt::OptimizationProfileGuard::automatic();
  // 8 tokens: more than decode's 1, fewer than prefill's 32.
  EXPECT_EQ(run_ids(*module, token_ids(8)).error, et::Error::InvalidArgument);
  const std::string message = etrt::last_error_message();
  EXPECT_THAT(message, HasSubstr("profile 0"));
  EXPECT_THAT(message, HasSubstr("profile 1"));
  EXPECT_THAT(message, HasSubstr("2048"));
  EXPECT_THAT(message, HasSubstr("OptimizationProfileGuard"));
}

TEST_F(ModuleTest, ASteadyStateExecutionRepeatsOnlyTheEnqueue) {
  auto module = load("llm");
  for (int step = 0; step < 4; ++step) expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  // The context keeps shapes and addresses between enqueues: only the first call sets them.
  EXPECT_EQ(count("llm", ref::TraceKind::kSetInputShape), 1);
  EXPECT_EQ(count("llm", ref::TraceKind::kSetTensorAddress), 2);
  EXPECT_EQ(ref::count_enqueues("llm"), 4);
  // A new shape is set again; a switch makes the backend set everything again.
  {
    etrt::OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_ids(*module, token_ids(40)), token_ids(40));
    expect_logits(run_ids(*module, token_ids(41)), token_ids(41));
  }
  EXPECT_EQ(count("llm", ref::TraceKind::kSetInputShape), 3);
  EXPECT_EQ(count("llm", ref::TraceKind::kSetTensorAddress), 4);
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(count("llm", ref::TraceKind::kSetInputShape), 4);
  EXPECT_EQ(ref::trace_counters("llm").failures, 0);
}

// ---- overlapping profiles: 0 = exactly one token, 1 = 1..2048 ----

TEST_F(ModuleTest, StickyAutoKeepsTheWideProfileForOneTokenAfterAPrefill) {
  auto module = load("overlap");
  auto automatic = etrt::OptimizationProfileGuard::automatic(etrt::AutoPolicy::kStickyFirstFit);
  expect_logits(run_ids(*module, token_ids(10)), token_ids(10));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), 1);
  EXPECT_EQ(switch_calls("overlap"), 1);
}

TEST_F(ModuleTest, StickyAutoStaysOnProfileZeroForOneTokenFromAFreshLoad) {
  auto module = load("overlap");
  auto automatic = etrt::OptimizationProfileGuard::automatic(etrt::AutoPolicy::kStickyFirstFit);
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), 0);
  EXPECT_EQ(switch_calls("overlap"), 0);
}

TEST_F(ModuleTest, FirstFitAutoReturnsToProfileZeroForOneTokenAfterAPrefill) {
  auto module = load("overlap");
  auto automatic = etrt::OptimizationProfileGuard::automatic(etrt::AutoPolicy::kFirstFit);
  expect_logits(run_ids(*module, token_ids(10)), token_ids(10));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), 0);
  EXPECT_EQ(switch_calls("overlap"), 2);
}

TEST_F(ModuleTest, OverlappingProfilesGiveIdenticalOutputs) {
  auto module = load("overlap");
  const auto ids = token_ids(1);
  Outcome on_zero, on_one;
  {
    etrt::OptimizationProfileGuard guard(0);
    on_zero = run_ids(*module, ids);
  }
  {
    etrt::OptimizationProfileGuard guard(1);
    on_one = run_ids(*module, ids);
  }
  ASSERT_EQ(on_zero.error, et::Error::Ok);
  ASSERT_EQ(on_one.error, et::Error::Ok);
  EXPECT_EQ(on_zero.shape, on_one.shape);
  EXPECT_EQ(on_zero.values, on_one.values);
  EXPECT_EQ(ref::last_enqueue_profile("overlap"), 1);
}

// ---- bad requests and bad inputs ----

TEST_F(ModuleTest, AnOutOfRangePinFailsAndTheEngineSwitchesNothing) {
  auto module = load("llm");
  etrt::OptimizationProfileGuard guard(5);
  EXPECT_EQ(run_ids(*module, token_ids(1)).error, et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("5"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("2 optimization profiles"));
  EXPECT_EQ(switch_calls("llm"), 0);
  EXPECT_EQ(ref::count_enqueues("llm"), 0);
}

TEST_F(ModuleTest, ANegativePinFailsAndTheEngineSwitchesNothing) {
  auto module = load("llm");
  etrt::OptimizationProfileGuard guard(-1);
  EXPECT_EQ(run_ids(*module, token_ids(1)).error, et::Error::InvalidArgument);
  EXPECT_EQ(switch_calls("llm"), 0);
}

TEST_F(ModuleTest, ARefusedCallLeavesTheNextValidCallWorking) {
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

TEST_F(ModuleTest, AWrongDtypeIsRefusedNamingTheInput) {
  auto module = load("llm");
  std::vector<float> not_ids(4, 1.0f);
  auto tensor = from_blob(not_ids.data(), {1, 4}, ScalarType::Float);
  EXPECT_NE(module->forward(tensor).error(), et::Error::Ok);
  EXPECT_EQ(ref::count_enqueues("llm"), 0);
}

// A token id outside the embedding's vocabulary is the caller's data, which only the engine can see: the engine
// reports kINVALID_ARGUMENT, the forward fails with InvalidArgument naming the id, and the next forward runs.
TEST_F(ModuleTest, ATokenIdOutsideTheVocabularyIsAnInvalidArgumentNamingIt) {
  auto module = load("llm");
  std::vector<int64_t> prompt = token_ids(32);
  prompt[5] = etrt::fixtures::kVocab;
  EXPECT_EQ(run_ids(*module, prompt).error, et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("id 32 at flat position 5"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("outside the vocabulary [0, 32)"));
  EXPECT_EQ(run_ids(*module, {-1}).error, et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("id -1 at flat position 0"));
  expect_logits(run_ids(*module, token_ids(32)), token_ids(32));
  expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
}

// ---- output capacity ----

TEST_F(ModuleTest, ANonzeroProfileProducesTheLargestOutputWithinThePlannedBuffer) {
  auto module = load("big_output");
  {
    etrt::OptimizationProfileGuard guard(0);
    expect_logits(run_ids(*module, token_ids(1)), token_ids(1));  // [1,1,16]
  }
  etrt::OptimizationProfileGuard guard(1);
  expect_logits(run_ids(*module, token_ids(64)), token_ids(64));  // [1,64,16]
}

TEST_F(ModuleTest, AnOutputLargerThanItsPlannedCapacityIsAClearErrorNotAnOverflow) {
  auto module = load("small_capacity");
  etrt::OptimizationProfileGuard guard(1);
  expect_logits(run_ids(*module, token_ids(32)), token_ids(32));  // fits the 32-token plan
  EXPECT_EQ(run_ids(*module, token_ids(40)).error, et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("logits"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("640 elements"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("512"));
  EXPECT_EQ(ref::count_enqueues("small_capacity"), 1);
}

// ---- one-profile engines ----

TEST_F(ModuleTest, ASingleProfileEngineNeverIssuesASwitch) {
  auto module = load("single_static");
  std::vector<float> x = {1, 2, 3, 4};
  for (int32_t pin : {0, 1, 3}) {
    etrt::OptimizationProfileGuard guard(pin);
    etrt::ExecutionReport report;
    auto out = read_output(module->forward(from_blob(x.data(), {1, 4}, ScalarType::Float)));
    ASSERT_EQ(out.error, et::Error::Ok) << etrt::last_error_message();
    EXPECT_EQ(out.values, (std::vector<float>{2, 4, 6, 8}));
    ASSERT_EQ(report.entries().size(), 1u);
    EXPECT_EQ(report.entries()[0].profile, 0);
    EXPECT_EQ(report.entries()[0].pin_ignored, pin != 0);
  }
  EXPECT_EQ(switch_calls("single_static"), 0);
  EXPECT_EQ(ref::count_enqueues("single_static"), 3);
}

TEST_F(ModuleTest, ADynamicOneProfileEngineRefusesANonzeroPinSayingWhy) {
  auto module = load("single_dynamic");
  etrt::OptimizationProfileGuard guard(1);
  EXPECT_EQ(run_ids(*module, token_ids(4)).error, et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("single optimization profile"));
  EXPECT_EQ(switch_calls("single_dynamic"), 0);
}

TEST_F(ModuleTest, ADynamicOneProfileEngineRunsUnderAuto) {
  auto module = load("single_dynamic");
  auto automatic = etrt::OptimizationProfileGuard::automatic();
  expect_logits(run_ids(*module, token_ids(40)), token_ids(40));
  EXPECT_EQ(switch_calls("single_dynamic"), 0);
}

// ---- several delegates in one program ----

TEST_F(ModuleTest, AStaticDelegateBesideAMultiProfileOneIgnoresThePin) {
  auto module = load("mixed");
  auto ids = token_ids(48);
  std::vector<float> x = {1, 2, 3, 4};
  etrt::OptimizationProfileGuard guard(kPrefill);
  etrt::ExecutionReport report;
  auto result = module->forward({from_blob(ids.data(), {1, 48}, ScalarType::Long),
                                 from_blob(x.data(), {1, 4}, ScalarType::Float)});
  ASSERT_TRUE(result.ok()) << etrt::last_error_message();
  expect_logits(read_output(result, 0), ids);
  EXPECT_EQ(read_output(result, 1).values, (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(ref::last_enqueue_profile("mixed_multi"), kPrefill);
  EXPECT_EQ(ref::last_enqueue_profile("mixed_static"), 0);
  EXPECT_EQ(switch_calls("mixed_static"), 0);
  ASSERT_EQ(report.entries().size(), 2u);
  EXPECT_TRUE(report.entries()[1].pin_ignored);
}

TEST_F(ModuleTest, ANonTensorRTDelegateInTheSameProgramIgnoresTheRequest) {
  auto module = load("foreign");
  const auto ids = token_ids(40);
  etrt::OptimizationProfileGuard guard(kPrefill);
  auto out = run_ids(*module, ids);
  ASSERT_EQ(out.error, et::Error::Ok) << etrt::last_error_message();
  auto want = etrt::fixtures::expected_logits(ids);
  ASSERT_EQ(out.values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out.values[i], want[i] + 1.0f, 1e-5f);
  EXPECT_EQ(ref::last_enqueue_profile("foreign_multi"), kPrefill);
}

// ---- load-time options ----

TEST_F(ModuleTest, TheAutoLoadOptionMakesAutoTheDefaultForThatModule) {
  et::BackendOptions<2> options;
  ASSERT_EQ(options.set_option(etrt::kOptionAutoSelect, true), et::Error::Ok);
  et::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options(etrt::kBackendId, options.view()), et::Error::Ok);
  auto module = load("llm", &map);
  expect_logits(run_ids(*module, token_ids(64)), token_ids(64));
  EXPECT_EQ(ref::last_enqueue_profile("llm"), kPrefill);
  // A pin still wins over the module's default.
  etrt::OptimizationProfileGuard guard(kPrefill);
  EXPECT_EQ(run_ids(*module, token_ids(1)).error, et::Error::InvalidArgument);
}

TEST_F(ModuleTest, ContextPerProfileRunsTransitionsWithoutSwitchCalls) {
  et::BackendOptions<2> options;
  ASSERT_EQ(options.set_option(etrt::kOptionProfileStrategy, etrt::kStrategyContextPerProfile), et::Error::Ok);
  et::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options(etrt::kBackendId, options.view()), et::Error::Ok);
  auto module = load("llm", &map);
  etrt::ExecutionReport report;
  for (int round = 0; round < 2; ++round) {
    {
      etrt::OptimizationProfileGuard guard(kPrefill);
      expect_logits(run_ids(*module, token_ids(50)), token_ids(50));
    }
    etrt::OptimizationProfileGuard guard(kDecode);
    expect_logits(run_ids(*module, token_ids(1)), token_ids(1));
  }
  EXPECT_EQ(switch_calls("llm"), 0);  // every context was bound to its profile at load
  EXPECT_EQ(report.switches(), 4u);   // but the delegate changed profile four times
  std::vector<uint64_t> contexts;
  for (const auto& e : ref::trace_events("llm"))
    if (e.kind == ref::TraceKind::kEnqueue) contexts.push_back(e.context_id);
  ASSERT_EQ(contexts.size(), 4u);
  EXPECT_NE(contexts[0], contexts[1]);
  EXPECT_EQ(contexts[0], contexts[2]);
}

TEST_F(ModuleTest, AnUnknownLoadOptionFailsTheLoadNamingIt) {
  et::BackendOptions<2> options;
  ASSERT_EQ(options.set_option("auto_selct", true), et::Error::Ok);
  et::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options(etrt::kBackendId, options.view()), et::Error::Ok);
  Module module(fixture("llm"));
  ASSERT_EQ(module.load(map), et::Error::Ok);
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("auto_selct"));
}

// ---- refusing what cannot run ----

TEST_F(ModuleTest, AShapeTensorInputIsRefusedAtLoad) {
  Module module(fixture("shape_tensor"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("shape tensor"));
}

TEST_F(ModuleTest, ATruncatedBlobIsRefusedAtLoad) {
  Module module(fixture("truncated"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("TensorRT blob"));
}

TEST_F(ModuleTest, ABlobWhoseSignatureDisagreesWithItsEngineIsRefusedAtLoad) {
  Module module(fixture("signature_mismatch"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("[1,1024]"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("[1,2048]"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("profile 1 max"));
}

TEST_F(ModuleTest, ABlobWhoseSignatureAgreesWithItsEngineLoads) {
  Module module(fixture("llm"));  // every fixture blob carries its engine's signature
  EXPECT_EQ(module.load_forward(), et::Error::Ok) << etrt::last_error_message();
}

TEST_F(ModuleTest, ATensorRTPlanOnTheGpuFreeNvInferSaysHowToRebuild) {
  Module module(fixture("tensorrt_plan"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("TensorRT could not deserialize the engine"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("-DTENSORRT_ROOT="));
}

// ---- observability and threads ----

TEST_F(ModuleTest, TheReportAndCountersSayWhichProfileRanAndHowManySwitches) {
  auto module = load("llm");
  et::BackendOption before[2];
  std::strcpy(before[0].key, etrt::kCounterProfileSwitches);
  std::strcpy(before[1].key, etrt::kCounterExecutions);
  ASSERT_EQ(et::get_option(etrt::kBackendId, et::Span<et::BackendOption>(before, 2)), et::Error::Ok);

  etrt::ExecutionReport report;
  {
    etrt::OptimizationProfileGuard guard(kPrefill);
    ASSERT_EQ(run_ids(*module, token_ids(32)).error, et::Error::Ok);
  }
  ASSERT_EQ(run_ids(*module, token_ids(1)).error, et::Error::Ok);
  ASSERT_EQ(report.entries().size(), 2u);
  EXPECT_EQ(report.entries()[0].profile, kPrefill);
  EXPECT_EQ(report.entries()[1].profile, kDecode);
  EXPECT_EQ(report.entries()[0].num_profiles, 2);
  EXPECT_THAT(std::string(report.entries()[0].delegate), HasSubstr("forward"));
  EXPECT_EQ(report.switches(), 2u);

  et::BackendOption after[3];
  std::strcpy(after[0].key, etrt::kCounterProfileSwitches);
  std::strcpy(after[1].key, etrt::kCounterExecutions);
  std::strcpy(after[2].key, etrt::kCounterLastProfile);
  ASSERT_EQ(et::get_option(etrt::kBackendId, et::Span<et::BackendOption>(after, 3)), et::Error::Ok);
  EXPECT_EQ(std::get<int>(after[0].value) - std::get<int>(before[0].value), 2);
  EXPECT_EQ(std::get<int>(after[1].value) - std::get<int>(before[1].value), 2);
  EXPECT_EQ(std::get<int>(after[2].value), kDecode);
}

TEST_F(ModuleTest, TwoThreadsWithDifferentGuardsEachGetTheirOwnProfile) {
  auto decode_module = load("llm");
  auto prefill_module = load("llm");
  std::atomic<int> failures{0};
  auto worker = [&](Module& module, int32_t profile, size_t tokens) {
    etrt::OptimizationProfileGuard guard(profile);
    etrt::ExecutionReport report;
    for (int i = 0; i < 50; ++i) {
      if (run_ids(module, token_ids(tokens)).error != et::Error::Ok) ++failures;
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

}  // namespace
