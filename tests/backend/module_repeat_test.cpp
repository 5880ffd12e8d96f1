// Repeated executions (Executor::repeats_last, docs/host-cost.md): a call that repeats the last successful one -- the
// same request, and tensors of the same types, shapes and addresses, all bound in place -- goes straight to the
// enqueue. These tests pass the runner's own 256-byte-aligned buffers (unplanned IO), so every argument is bound in
// place and every call after the first is a candidate; each changes one thing a repeat must not overlook and checks
// the outputs, and the engine's trace for what the delegate gave it.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt_gpufree/faults.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_suite.h"

namespace etrt::module_test {
namespace {

using gpufree::TraceKind;

// The address the engine `label` was last given for IO tensor `io`, or nullptr.
const void* bound(const std::string& label, int32_t io) {
  const void* address = nullptr;
  for (const auto& e : events_of(label, TraceKind::kSetTensorAddress, true))
    if (e.io_index == io) address = e.address;
  return address;
}

// ---- unplanned_io: input_ids [1, n] (int64) -> logits [1, n, H], decode [1,1] and prefill [1,32..2048] ----

class RepeatTest : public ::testing::TestWithParam<Strategy> {
 protected:
  static constexpr char kLabel[] = "unplanned_io";
  static constexpr size_t kMaxTokens = 2048;
  static constexpr size_t kH = static_cast<size_t>(fixtures::kHidden);

  void SetUp() override {
    module_ = load_module(module_test::fixture(kLabel), GetParam());
    for (auto* ids : {&ids_a_, &ids_b_}) *ids = aligned_buffer<int64_t>(kMaxTokens);
    for (auto* out : {&out_a_, &out_b_}) *out = aligned_buffer<float>(kMaxTokens * kH);
  }
  void TearDown() override {
    gpufree::clear_faults();
    gpufree::clear_all_traces();
  }

  // Writes `ids` into `in`, makes `out` the output (room for [1, 2048, H], as set_output asks) and runs forward().
  Outcome run(const std::vector<int64_t>& ids, int64_t* in, float* out) {
    for (size_t i = 0; i < ids.size(); ++i) in[i] = ids[i];
    EXPECT_EQ(module_->set_output(
                  from_blob(out, {1, static_cast<int32_t>(kMaxTokens), static_cast<int32_t>(kH)}, ScalarType::Float)),
              et::Error::Ok);
    Outcome outcome =
        read_output(module_->forward(from_blob(in, {1, static_cast<int32_t>(ids.size())}, ScalarType::Long)));
    if (outcome.error == et::Error::Ok) {
      EXPECT_EQ(outcome.values, std::vector<float>(out, out + ids.size() * kH)) << "the output is the runner's buffer";
    }
    return outcome;
  }
  Outcome run_a(const std::vector<int64_t>& ids) { return run(ids, ids_a_.get(), out_a_.get()); }

  std::unique_ptr<Module> module_;
  AlignedBuffer<int64_t> ids_a_, ids_b_;
  AlignedBuffer<float> out_a_, out_b_;
};

TEST_P(RepeatTest, EachRepeatedStepRunsOnWhatItsInputHoldsNowAndSetsNothing) {
  for (int64_t id : {3, 11, 3, 30, 7}) expect_logits(run_a({id}), {id});
  EXPECT_EQ(gpufree::count_enqueues(kLabel), 5);
  EXPECT_EQ(count(kLabel, TraceKind::kSetInputShape), 1) << trace_text(kLabel);
  EXPECT_EQ(count(kLabel, TraceKind::kSetTensorAddress), 2) << trace_text(kLabel);
  EXPECT_EQ(switch_calls(kLabel), 0);
}

TEST_P(RepeatTest, AnotherInputBufferOfTheSameShapeIsBoundBeforeTheEnqueue) {
  expect_logits(run_a({5}), {5});
  expect_logits(run_a({6}), {6});
  expect_logits(run({9}, ids_b_.get(), out_a_.get()), {9});
  EXPECT_EQ(bound(kLabel, 0), ids_b_.get()) << trace_text(kLabel);
  ids_b_[0] = 1;  // what B holds must no longer matter once A is bound again
  expect_logits(run_a({12}), {12});
  EXPECT_EQ(bound(kLabel, 0), ids_a_.get()) << trace_text(kLabel);
  EXPECT_EQ(count(kLabel, TraceKind::kSetTensorAddress), 4) << trace_text(kLabel);
}

TEST_P(RepeatTest, AnotherOutputBufferIsBoundAndTheOldOneIsLeftAlone) {
  expect_logits(run_a({5}), {5});
  expect_logits(run_a({6}), {6});
  const std::vector<float> kept(out_a_.get(), out_a_.get() + kH);
  expect_logits(run({8}, ids_a_.get(), out_b_.get()), {8});
  EXPECT_EQ(bound(kLabel, 1), out_b_.get()) << trace_text(kLabel);
  EXPECT_EQ(std::vector<float>(out_a_.get(), out_a_.get() + kH), kept) << "the previous output buffer was written";
}

TEST_P(RepeatTest, ANewInputShapeIsSetAndTheOutputResizedToIt) {
  OptimizationProfileGuard guard(kPrefill);
  expect_logits(run_a(token_ids(40)), token_ids(40));
  expect_logits(run_a(token_ids(40)), token_ids(40));
  const Outcome longer = run_a(token_ids(41));
  expect_logits(longer, token_ids(41));
  EXPECT_EQ(longer.shape, (std::vector<int32_t>{1, 41, static_cast<int32_t>(kH)}));
  EXPECT_EQ(count(kLabel, TraceKind::kSetInputShape), 2) << trace_text(kLabel);
  EXPECT_EQ(gpufree::last_enqueue_profile(kLabel), kPrefill);
}

TEST_P(RepeatTest, ANewRequestIsChosenForAgainAndAPinThatRefusesTheShapeFails) {
  expect_logits(run_a({4}), {4});
  expect_logits(run_a({4}), {4});
  {
    // Profile 1 takes 32 tokens or more: the same one-token call is refused under it, whatever ran before.
    OptimizationProfileGuard guard(kPrefill);
    clear_last_error();
    EXPECT_EQ(run_a({4}).error, et::Error::InvalidArgument);
    EXPECT_THAT(last_error_message(), HasSubstr("input_ids"));
    EXPECT_THAT(last_error_message(), HasSubstr("profile 1"));
  }
  {
    OptimizationProfileGuard guard(kDecode);
    expect_logits(run_a({5}), {5});
  }
  expect_logits(run_a({6}), {6});
  EXPECT_EQ(gpufree::count_enqueues(kLabel), 4);
  EXPECT_EQ(gpufree::last_enqueue_profile(kLabel), kDecode);
  EXPECT_EQ(switch_calls(kLabel), 0);
}

TEST_P(RepeatTest, ARepeatAfterASwitchAwayAndBackRunsOnTheProfileItAsksFor) {
  ExecutionReport report;
  expect_logits(run_a({4}), {4});
  {
    OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_a(token_ids(32)), token_ids(32));
  }
  expect_logits(run_a({4}), {4});
  expect_logits(run_a({4}), {4});
  ASSERT_EQ(report.total(), 4u);
  const auto entries = report.entries();
  EXPECT_EQ(entries[1].profile, kPrefill);
  EXPECT_EQ(entries[2].profile, kDecode);
  EXPECT_TRUE(entries[2].switched);
  EXPECT_EQ(entries[3].profile, kDecode);
  EXPECT_FALSE(entries[3].switched);
  EXPECT_TRUE(entries[3].ok);
  EXPECT_EQ(report.switches(), 2u);
  EXPECT_EQ(gpufree::last_enqueue_profile(kLabel), kDecode);
}

TEST_P(RepeatTest, ARefusedEnqueueOfARepeatLeavesTheNextOneAnEnqueueAlone) {
  expect_logits(run_a({4}), {4});
  expect_logits(run_a({5}), {5});
  gpufree::clear_all_traces();
  gpufree::inject_fault(gpufree::Call::kEnqueueV3, 1, kLabel);
  clear_last_error();
  EXPECT_NE(run_a({6}).error, et::Error::Ok);
  EXPECT_THAT(last_error_message(), HasSubstr("injected fault"));
  expect_logits(run_a({7}), {7});
  EXPECT_EQ(count(kLabel, TraceKind::kSetInputShape), 0) << trace_text(kLabel);
  EXPECT_EQ(count(kLabel, TraceKind::kSetTensorAddress), 0) << trace_text(kLabel);
  EXPECT_EQ(gpufree::count_enqueues(kLabel), 1);
}

INSTANTIATE_TEST_SUITE_P(, RepeatTest, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

// ---- a 0-d output: TensorRT says [1], ExecuTorch's tensor has rank 0 (scalar_output: y = 3x) ----

TEST(RepeatScalarOutput, RepeatsWithARankZeroOutput) {
  auto module = load_module(module_test::fixture("scalar_output_unplanned"), Strategy::kSwitch);
  auto x = aligned_buffer<float>(1);
  auto y = aligned_buffer<float>(1);
  ASSERT_EQ(module->set_output(from_blob(y.get(), {}, ScalarType::Float)), et::Error::Ok);
  for (float v : {1.0f, 2.5f, -4.0f}) {
    x[0] = v;
    auto result = module->forward(from_blob(x.get(), {1}, ScalarType::Float));
    ASSERT_TRUE(result.ok()) << last_error_message();
    EXPECT_EQ(result.get()[0].toTensor().dim(), 0);
    EXPECT_FLOAT_EQ(y[0], 3.0f * v);
  }
  EXPECT_EQ(gpufree::count_enqueues("scalar_output"), 3);
  EXPECT_EQ(count("scalar_output", TraceKind::kSetTensorAddress), 2) << trace_text("scalar_output");
}

// ---- an in-place KV cache (kv engine: x [1, 1..4, 2] written at row pos of cache [1, 8, 2]; y = 2x) ----

constexpr size_t kCacheFloats = 16;

// The caller's aligned buffers for one decode step of the kv engine: x [1, 1, 2], pos [1], cache [1, 8, 2], and the
// outputs y [1, 4, 2] and cache_out [1, 8, 2]; cache and cache_out start at -1.
struct KvBuffers {
  AlignedBuffer<float> x = aligned_buffer<float>(2);
  AlignedBuffer<int64_t> pos = aligned_buffer<int64_t>(1);
  AlignedBuffer<float> cache = aligned_buffer<float>(kCacheFloats);
  AlignedBuffer<float> y = aligned_buffer<float>(8);
  AlignedBuffer<float> cache_out = aligned_buffer<float>(kCacheFloats);

  KvBuffers() {
    for (size_t i = 0; i < kCacheFloats; ++i) cache[i] = cache_out[i] = -1.0f;
  }
  et::Result<std::vector<et::EValue>> step(Module& module) {
    return module.forward({from_blob(x.get(), {1, 1, 2}, ScalarType::Float),
                           from_blob(pos.get(), {1}, ScalarType::Long),
                           from_blob(cache.get(), {1, 8, 2}, ScalarType::Float)});
  }
  std::vector<float> cache_values() const { return std::vector<float>(cache.get(), cache.get() + kCacheFloats); }
  std::vector<float> cache_out_values() const {
    return std::vector<float>(cache_out.get(), cache_out.get() + kCacheFloats);
  }
};

// Decode steps on the caller's aligned x, pos and cache: each step's row lands in the cache and stays there. With
// `write_back`, the cache's write-back output gets the updated cache after every step.
void expect_decode_steps_update_the_cache(const std::string& name, bool write_back) {
  auto module = load_module(module_test::fixture(name), Strategy::kSwitch);
  KvBuffers b;
  ASSERT_EQ(module->set_output(from_blob(b.y.get(), {1, 4, 2}, ScalarType::Float), 0), et::Error::Ok);
  if (write_back) {
    ASSERT_EQ(module->set_output(from_blob(b.cache_out.get(), {1, 8, 2}, ScalarType::Float), 1), et::Error::Ok);
  }
  std::vector<float> expected(kCacheFloats, -1.0f);
  for (int64_t step = 0; step < 4; ++step) {
    b.x[0] = static_cast<float>(10 * step + 1);
    b.x[1] = static_cast<float>(10 * step + 2);
    b.pos[0] = step;
    expected[static_cast<size_t>(step) * 2] = b.x[0];
    expected[static_cast<size_t>(step) * 2 + 1] = b.x[1];
    auto result = b.step(*module);
    ASSERT_TRUE(result.ok()) << last_error_message();
    EXPECT_EQ(b.cache_values(), expected) << "step " << step;
    EXPECT_EQ(std::vector<float>(b.y.get(), b.y.get() + 2), (std::vector<float>{2 * b.x[0], 2 * b.x[1]}))
        << "step " << step;
    if (write_back) EXPECT_EQ(b.cache_out_values(), expected) << "step " << step;
  }
  EXPECT_EQ(gpufree::count_enqueues("kv"), 4);
  EXPECT_EQ(count("kv", TraceKind::kSetInputShape), 3) << "x, pos and cache, once\n" << trace_text("kv");
  EXPECT_EQ(bound("kv", 4), b.cache.get()) << "cache_out is written where cache is\n" << trace_text("kv");
}

TEST(RepeatKvCache, DelegateOwnedCacheIsUpdatedInPlaceByEveryRepeatedStep) {
  expect_decode_steps_update_the_cache("kv_unplanned_owned", /*write_back=*/false);
}

TEST(RepeatKvCache, WriteBackOutputGetsTheUpdatedCacheAfterEveryRepeatedStep) {
  expect_decode_steps_update_the_cache("kv_unplanned_write_back", /*write_back=*/true);
}

// A write-back output ExecuTorch planned no memory for (unplanned, and no set_output) is refused before the enqueue,
// naming it and what to do, with the cache untouched; given memory, the same module runs. The repeat path checks it
// too: after a successful step, a write-back output set to no memory is not a repeat, and is refused.
TEST(RepeatKvCache, AWriteBackOutputWithNoMemoryIsRefusedBeforeTheCacheChanges) {
  auto module = load_module(module_test::fixture("kv_unplanned_write_back"), Strategy::kSwitch);
  KvBuffers b;
  b.x[0] = 5.0f;
  b.x[1] = 6.0f;
  b.pos[0] = 0;
  ASSERT_EQ(module->set_output(from_blob(b.y.get(), {1, 4, 2}, ScalarType::Float), 0), et::Error::Ok);
  EXPECT_FALSE(b.step(*module).ok());
  EXPECT_THAT(last_error_message(), HasSubstr("has no memory"));
  EXPECT_THAT(last_error_message(), HasSubstr("Module::set_output"));
  EXPECT_EQ(b.cache_values(), std::vector<float>(kCacheFloats, -1.0f)) << "refused before the enqueue";
  EXPECT_EQ(gpufree::count_enqueues("kv"), 0);

  ASSERT_EQ(module->set_output(from_blob(b.cache_out.get(), {1, 8, 2}, ScalarType::Float), 1), et::Error::Ok);
  ASSERT_TRUE(b.step(*module).ok()) << last_error_message();
  std::vector<float> expected(kCacheFloats, -1.0f);
  expected[0] = 5.0f;
  expected[1] = 6.0f;
  EXPECT_EQ(b.cache_out_values(), expected);

  // The same call again, but the write-back output's memory taken away: refused, not repeated.
  ASSERT_EQ(module->set_output(from_blob(nullptr, {1, 8, 2}, ScalarType::Float), 1), et::Error::Ok);
  b.x[0] = 7.0f;
  EXPECT_FALSE(b.step(*module).ok());
  EXPECT_THAT(last_error_message(), HasSubstr("has no memory"));
  EXPECT_EQ(b.cache_values(), expected) << "refused before the enqueue";
  EXPECT_EQ(gpufree::count_enqueues("kv"), 1);
}

}  // namespace
}  // namespace etrt::module_test
