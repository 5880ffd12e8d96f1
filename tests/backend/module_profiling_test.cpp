// ExecuTorch's profiling tools see etrt (docs/profiling.md): with an event tracer attached to the Module, each
// execution logs its steps as named delegate events whose metadata says which profile it ran on and whether it
// switched. A recording tracer checks what is logged, event by event; ETDumpGen from the wheel
// (libexecutorch_etdump) checks that ExecuTorch's own tracer takes them. tests/export/test_profiling.py reads such
// dumps with ExecuTorch's Inspector.

#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/event_tracer.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "etrt/profile_guard.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_suite.h"
#include "recording_tracer.h"

namespace etrt::module_test {
namespace {

using et::DelegateDebugIntId;
using ::testing::ElementsAre;

std::vector<std::string> names(const std::vector<Logged>& run) {
  std::vector<std::string> out;
  for (const Logged& e : run) out.push_back(e.name);
  return out;
}

const Logged* find(const std::vector<Logged>& run, const std::string& name) {
  for (const Logged& e : run)
    if (e.name == name) return &e;
  return nullptr;
}

// "profile":1,"switched":true -- the choice's metadata, up to what the test names.
std::string choice(int32_t profile, bool switched, bool pin_ignored = false) {
  return std::string("{\"profile\":") + std::to_string(profile) + ",\"switched\":" + (switched ? "true" : "false") +
         ",\"pin_ignored\":" + (pin_ignored ? "true" : "false");
}

constexpr const char* kChoice = "etrt profile choice";
constexpr const char* kSwitch = "etrt profile switch";
const std::vector<std::string> kSwitchingSteps = {
    kChoice, kSwitch, "etrt set shapes", "etrt stage inputs", "etrt enqueue", "etrt copy back"};
const std::vector<std::string> kSteadySteps = {kChoice, "etrt set shapes", "etrt stage inputs", "etrt enqueue",
                                               "etrt copy back"};

class ProfilingTest : public ::testing::TestWithParam<Strategy> {
 protected:
  // The llm fixture (decode [1,1], prefill [1,32..2048]) with a recording tracer.
  void load(const std::string& name = "llm") {
    auto tracer = std::make_unique<RecordingTracer>();
    tracer_ = tracer.get();
    module_ = std::make_unique<Module>(module_test::fixture(name), Module::LoadMode::File, std::move(tracer));
    ASSERT_EQ(etrt::testing::load_with_options(*module_, suite_load_options(GetParam())), et::Error::Ok)
        << last_error_message();
    tracer_->runs.clear();
  }
  Outcome run(size_t tokens) { return run_ids(*module_, token_ids(tokens)); }

  void TearDown() override {
    if (tracer_ != nullptr) {
      EXPECT_EQ(tracer_->unexpected, 0) << "etrt logs whole events (log_profiling_delegate)";
    }
  }

  std::unique_ptr<Module> module_;
  RecordingTracer* tracer_ = nullptr;
};

TEST_P(ProfilingTest, PrefillDecodePrefillLogEachStepWithTheProfileAndTheSwitch) {
  load();
  for (size_t tokens : {48, 1, 48}) expect_logits(run(tokens), token_ids(tokens));
  const auto& runs = tracer_->runs;
  ASSERT_EQ(runs.size(), 3U);
  const int32_t profiles[] = {kPrefill, kDecode, kPrefill};
  for (size_t r = 0; r < 3; ++r) {
    SCOPED_TRACE("execution " + std::to_string(r));
    EXPECT_EQ(names(runs[r]), kSwitchingSteps);
    EXPECT_THAT(find(runs[r], kChoice)->metadata, ::testing::StartsWith(choice(profiles[r], true)));
    EXPECT_THAT(find(runs[r], kChoice)->metadata, ::testing::HasSubstr("\"ok\":true"));
    const std::string from = std::to_string(r == 0 ? kDecode : profiles[r - 1]);
    EXPECT_THAT(find(runs[r], kSwitch)->metadata,
                ::testing::StartsWith("{\"from\":" + from + ",\"to\":" + std::to_string(profiles[r])));
    EXPECT_THAT(find(runs[r], kSwitch)->metadata,
                ::testing::HasSubstr(GetParam() == Strategy::kSwitch ? "\"switch\"" : "\"context_per_profile\""));
    uint64_t previous_stop = 0;
    for (const Logged& e : runs[r]) {
      EXPECT_EQ(e.id, et::kUnsetDelegateDebugIntId) << e.name << ": events are named, not numbered";
      EXPECT_LE(e.start, e.stop) << e.name;
      EXPECT_LE(previous_stop, e.start) << e.name << " starts after the step before it";
      previous_stop = e.stop;
    }
  }
}

TEST_P(ProfilingTest, ADecodeStepThatRepeatsTheLastOneLogsNoSwitch) {
  load();
  for (size_t tokens : {1, 1}) expect_logits(run(tokens), token_ids(tokens));
  ASSERT_EQ(tracer_->runs.size(), 2U);
  EXPECT_EQ(names(tracer_->runs[1]), kSteadySteps);
  EXPECT_THAT(find(tracer_->runs[1], kChoice)->metadata, ::testing::StartsWith(choice(kDecode, false)));
}

TEST_P(ProfilingTest, APinAStaticEngineIgnoresIsLoggedAsIgnored) {
  load("single_static");
  OptimizationProfileGuard pin(1);
  std::vector<float> in = {1, 2, 3, 4};
  ASSERT_TRUE(module_->forward(from_blob(in.data(), {1, 4}, ScalarType::Float)).ok()) << last_error_message();
  ASSERT_EQ(tracer_->runs.size(), 1U);
  EXPECT_THAT(find(tracer_->runs[0], kChoice)->metadata, ::testing::StartsWith(choice(0, false, true)));
}

TEST_P(ProfilingTest, ARefusedExecutionLogsItsChoiceAsNotOk) {
  load();
  OptimizationProfileGuard pin(kDecode);
  EXPECT_EQ(run(48).error, et::Error::InvalidArgument);
  ASSERT_EQ(tracer_->runs.size(), 1U);
  EXPECT_THAT(names(tracer_->runs[0]), ElementsAre(kChoice)) << "nothing ran after the refusal";
  EXPECT_THAT(find(tracer_->runs[0], kChoice)->metadata, ::testing::HasSubstr("\"ok\":false"));
}

TEST_P(ProfilingTest, AnUntracedModuleRunsTheSameSteps) {
  // The same program without a tracer, beside a traced one: same outputs, and the untraced one logs nothing anywhere.
  load();
  auto plain = load_module(module_test::fixture("llm"), GetParam());
  for (size_t tokens : {48, 1, 1, 48}) {
    expect_logits(run(tokens), token_ids(tokens));
    expect_logits(run_ids(*plain, token_ids(tokens)), token_ids(tokens));
  }
  EXPECT_EQ(tracer_->runs.size(), 4U);
}

// A traced execution draws on a shared scratch pool as an untraced one does: the pool grows when a method with a larger
// need loads, and the traced delegates move to the new buffer before their next enqueue (scratch_pool.h).
TEST(ProfilingSharedScratch, TracedExecutionsTakeThePoolAndMoveWhenItGrows) {
  auto tracer = std::make_unique<RecordingTracer>();
  RecordingTracer* const seen = tracer.get();
  Module module(module_test::fixture("scratch_methods"), Module::LoadMode::File, std::move(tracer));
  ASSERT_EQ(etrt::testing::load_with_options(module, {{kOptionSharedScratch, true}}), et::Error::Ok)
      << last_error_message();
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 3.25f};
  const auto forward = [&] {
    auto result = module.forward(from_blob(x.data(), {1, 4}, ScalarType::Float));
    EXPECT_TRUE(result.ok()) << last_error_message();
    if (!result.ok()) return std::vector<float>{};
    const auto& y = result.get()[0].toTensor();
    return std::vector<float>(y.const_data_ptr<float>(), y.const_data_ptr<float>() + y.numel());
  };
  const auto memory_given = [] { return count("scratch_chain_0", gpufree::TraceKind::kSetDeviceMemory); };
  gpufree::clear_trace("scratch_chain_0");
  EXPECT_EQ(forward(), fixtures::scratch_chain_expected(x));
  EXPECT_EQ(memory_given(), 1) << "given the pool before its first enqueue\n" << trace_text("scratch_chain_0");
  ASSERT_EQ(module.load_method("big"), et::Error::Ok) << last_error_message();
  EXPECT_EQ(forward(), fixtures::scratch_chain_expected(x));
  EXPECT_EQ(memory_given(), 2) << "moved to the grown pool\n" << trace_text("scratch_chain_0");
  EXPECT_FALSE(seen->runs.empty());
}

INSTANTIATE_TEST_SUITE_P(Strategies, ProfilingTest, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

// ExecuTorch's own tracer, from the wheel: it aborts on a delegate event that is both named and numbered, so this
// also checks how etrt names its events. The dump is a flatbuffer; its strings are stored as they are.
TEST(ProfilingETDump, ETDumpGenKeepsEveryStepOfPrefillDecodePrefill) {
  auto tracer = std::make_unique<executorch::etdump::ETDumpGen>();
  auto* etdump = tracer.get();
  Module module(module_test::fixture("llm"), Module::LoadMode::File, std::move(tracer));
  for (size_t tokens : {48, 1, 48}) expect_logits(run_ids(module, token_ids(tokens)), token_ids(tokens));
  const executorch::etdump::ETDumpResult result = etdump->get_etdump_data();
  ASSERT_NE(result.buf, nullptr);
  const std::string bytes(static_cast<const char*>(result.buf), result.size);
  for (const std::string& name : kSwitchingSteps) EXPECT_THAT(bytes, ::testing::HasSubstr(name));
  for (int32_t profile : {kPrefill, kDecode}) EXPECT_THAT(bytes, ::testing::HasSubstr(choice(profile, true)));
  // Where the Inspector test of tests/export, or a person, can read it.
  if (const char* out = std::getenv("ETRT_ETDUMP_OUT"); out != nullptr && *out != '\0')
    std::ofstream(out, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::free(result.buf);
}

}  // namespace
}  // namespace etrt::module_test
