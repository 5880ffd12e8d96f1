// Fault injection (etrt_gpufree/faults.h) at every NvInfer call etrt's TensorRT
// adapter makes: the adapter call fails with TensorRT's reason ("injected
// fault ...") in last_error(), the fault is counted, nothing changes, and the
// very next identical call succeeds -- the engine or context stays usable and
// computes the right results.

#include "etrt_gpufree/faults.h"

#include <gtest/gtest.h>

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

class ReferenceFault : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_faults();
    label_ = test_label();
    bytes_ = build_or_fail(llm_builder(label_));
  }
  void TearDown() override {
    clear_faults();
    clear_trace(label_);
  }

  // Loads bytes_ and makes a context for it (kept in engine_ / context_).
  void load_with_context(bool user_managed_memory = false) {
    engine_ = load(bytes_);
    ASSERT_NE(engine_, nullptr);
    context_ = engine_->create_context({user_managed_memory});
    ASSERT_NE(context_, nullptr) << engine_->last_error();
  }

  // The last event of the trace is `kind`, refused with the injected fault.
  void expect_refusal_traced(TraceKind kind) {
    std::vector<TraceEvent> events = trace_events(label_);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().kind, kind) << to_string(events.back());
    EXPECT_FALSE(events.back().ok);
    EXPECT_EQ(events.back().error.rfind("injected fault", 0), 0u) << to_string(events.back());
  }

  std::string label_;
  std::vector<uint8_t> bytes_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  AlignedVector<int64_t> prompt_ = {5, 0, 3};
  AlignedVector<float> logits_;
};

TEST_F(ReferenceFault, CreateInferRuntime) {
  const int64_t fired = faults_fired();
  inject_fault(Call::kCreateInferRuntime);
  std::string error;
  EXPECT_EQ(engine::tensorrt::deserialize(bytes_.data(), bytes_.size(), 0, &error), nullptr);
  EXPECT_TRUE(has(error, "createInferRuntime failed")) << error;
  EXPECT_TRUE(has(error, "injected fault")) << error;
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_TRUE(trace_events(label_).empty()) << dump(label_);

  load_with_context();
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr)) << context_->last_error();
  ASSERT_TRUE(run_llm(*context_, prompt_, &logits_)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(prompt_));
  EXPECT_EQ(faults_fired(), fired + 1);
}

TEST_F(ReferenceFault, DeserializeCudaEngine) {
  const int64_t fired = faults_fired();
  inject_fault(Call::kDeserializeCudaEngine);
  std::string error;
  EXPECT_EQ(engine::tensorrt::deserialize(bytes_.data(), bytes_.size(), 0, &error), nullptr);
  EXPECT_TRUE(has(error, "TensorRT could not deserialize the engine")) << error;
  EXPECT_TRUE(has(error, "injected fault: deserializeCudaEngine")) << error;
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_TRUE(events_of(label_, TraceKind::kLoadEngine).empty()) << dump(label_);

  load_with_context();
  EXPECT_EQ(events_of(label_, TraceKind::kLoadEngine).size(), 1u);
  AlignedVector<int64_t> token = {4};
  ASSERT_TRUE(run_llm(*context_, token, &logits_)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(token));
}

TEST_F(ReferenceFault, ADeserializeFaultScopedToALabelFiresOnlyOnThatEnginesBytes) {
  const int64_t fired = faults_fired();
  inject_fault(Call::kDeserializeCudaEngine, 1, label_);
  // Another engine's bytes load, and do not use up the fault.
  const std::vector<uint8_t> other = build_or_fail(llm_builder(label_ + ".other"));
  EXPECT_NE(load(other), nullptr);
  clear_trace(label_ + ".other");
  // Malformed bytes fail on their own and do not use it up either.
  std::string error;
  const std::vector<uint8_t> cut(bytes_.begin(), bytes_.begin() + 30);
  EXPECT_EQ(engine::tensorrt::deserialize(cut.data(), cut.size(), 0, &error), nullptr);
  EXPECT_FALSE(has(error, "injected fault")) << error;
  EXPECT_EQ(faults_fired(), fired);
  // This engine's bytes: the fault fires.
  EXPECT_EQ(engine::tensorrt::deserialize(bytes_.data(), bytes_.size(), 0, &error), nullptr);
  EXPECT_TRUE(has(error, "injected fault: deserializeCudaEngine")) << error;
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_TRUE(events_of(label_, TraceKind::kLoadEngine).empty()) << dump(label_);
  load_with_context();
  EXPECT_EQ(events_of(label_, TraceKind::kLoadEngine).size(), 1u);
}

TEST_F(ReferenceFault, CreateExecutionContext) {
  engine_ = load(bytes_);
  ASSERT_NE(engine_, nullptr);
  const int64_t fired = faults_fired();
  inject_fault(Call::kCreateExecutionContext, 1, label_);
  EXPECT_EQ(engine_->create_context({}), nullptr);
  EXPECT_TRUE(has(engine_->last_error(), "createExecutionContext(kSTATIC) on device 0 failed: "))
      << engine_->last_error();
  EXPECT_TRUE(has(engine_->last_error(), "injected fault")) << engine_->last_error();
  EXPECT_EQ(faults_fired(), fired + 1);
  std::vector<TraceEvent> created = events_of(label_, TraceKind::kCreateContext);
  ASSERT_EQ(created.size(), 1u) << dump(label_);
  EXPECT_FALSE(created[0].ok);
  EXPECT_EQ(trace_counters(label_).contexts_created, 0);

  context_ = engine_->create_context({});
  ASSERT_NE(context_, nullptr) << engine_->last_error();
  EXPECT_EQ(context_->optimization_profile(), kDecode);
  AlignedVector<int64_t> token = {2};
  ASSERT_TRUE(run_llm(*context_, token, &logits_))
      << "the refused creation must not hold profile 0: " << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(token));
}

TEST_F(ReferenceFault, SetOptimizationProfileAsync) {
  load_with_context();
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetOptimizationProfileAsync, 1, label_);
  EXPECT_FALSE(context_->set_optimization_profile(kPrefill, nullptr));
  EXPECT_TRUE(has(context_->last_error(), "setOptimizationProfileAsync(1) failed: injected fault"))
      << context_->last_error();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetOptimizationProfile);
  EXPECT_EQ(context_->optimization_profile(), kDecode) << "a failed switch changes nothing";
  Shape ids;
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, 1})) << "a failed switch must not unset input shapes";

  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr)) << context_->last_error();
  EXPECT_EQ(context_->optimization_profile(), kPrefill);
  ASSERT_TRUE(run_llm(*context_, prompt_, &logits_)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(prompt_));
  EXPECT_EQ(count_switches(label_), 1);
}

TEST_F(ReferenceFault, SetInputShape) {
  load_with_context();
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetInputShape, 1, label_);
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({1, 3})));
  EXPECT_TRUE(has(context_->last_error(), "setInputShape('ids', [1, 3]) under profile 1 failed: injected fault"))
      << context_->last_error();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetInputShape);
  Shape ids;
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, -1})) << "the refused shape must not have been taken";

  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 3}))) << context_->last_error();
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, 3}));
  ASSERT_TRUE(run_llm(*context_, prompt_, &logits_)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(prompt_));
}

TEST_F(ReferenceFault, GetTensorShape) {
  load_with_context();
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 3})));
  const int64_t fired = faults_fired();
  inject_fault(Call::kGetTensorShape, 1, label_);
  Shape logits = make_shape({7});
  EXPECT_FALSE(context_->tensor_shape(1, &logits));
  EXPECT_TRUE(has(context_->last_error(), "getTensorShape('logits') returned rank -1: injected fault"))
      << context_->last_error();
  EXPECT_EQ(logits, make_shape({7})) << "a failed call leaves *out alone";
  EXPECT_EQ(faults_fired(), fired + 1);

  ASSERT_TRUE(context_->tensor_shape(1, &logits)) << context_->last_error();
  EXPECT_EQ(logits, make_shape({1, 3, 3}));
  ASSERT_TRUE(run_llm(*context_, prompt_, &logits_)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(prompt_));
}

TEST_F(ReferenceFault, SetTensorAddress) {
  load_with_context();
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 3})));
  ASSERT_TRUE(context_->set_tensor_address(0, prompt_.data()));
  logits_.assign(3 * kLogits, -99.0f);
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetTensorAddress, 1, label_);
  EXPECT_FALSE(context_->set_tensor_address(1, logits_.data()));
  EXPECT_TRUE(has(context_->last_error(), "setTensorAddress('logits') failed: injected fault"))
      << context_->last_error();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetTensorAddress);
  EXPECT_FALSE(context_->enqueue(nullptr)) << "the refused address must not have been taken";
  EXPECT_TRUE(has(context_->last_error(), "output 'logits' has no address")) << context_->last_error();

  ASSERT_TRUE(context_->set_tensor_address(1, logits_.data())) << context_->last_error();
  ASSERT_TRUE(context_->enqueue(nullptr)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(prompt_));
}

TEST_F(ReferenceFault, SetDeviceMemoryV2) {
  load_with_context(/*user_managed_memory=*/true);
  AlignedBuffer scratch(engine_->device_memory_size());
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetDeviceMemoryV2, 1, label_);
  EXPECT_FALSE(context_->set_device_memory(scratch.data, scratch.size));
  EXPECT_TRUE(has(context_->last_error(), "setDeviceMemoryV2(768 bytes) failed: injected fault"))
      << context_->last_error();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetDeviceMemory);
  AlignedVector<int64_t> token = {1};
  EXPECT_FALSE(run_llm(*context_, token, &logits_)) << "the refused memory must not have been taken";

  ASSERT_TRUE(context_->set_device_memory(scratch.data, scratch.size)) << context_->last_error();
  ASSERT_TRUE(run_llm(*context_, token, &logits_)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(token));
  std::vector<TraceEvent> memory = events_of(label_, TraceKind::kSetDeviceMemory);
  ASSERT_EQ(memory.size(), 2u) << dump(label_);
  EXPECT_TRUE(memory[1].ok);
  EXPECT_EQ(memory[1].address, scratch.data);
}

TEST_F(ReferenceFault, EnqueueV3) {
  load_with_context();
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  const int64_t fired = faults_fired();
  inject_fault(Call::kEnqueueV3, 1, label_);
  EXPECT_FALSE(run_llm(*context_, prompt_, &logits_));
  EXPECT_TRUE(has(context_->last_error(), "enqueueV3 under profile 1 failed: injected fault"))
      << context_->last_error();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kEnqueue);
  EXPECT_EQ(logits_, AlignedVector<float>(prompt_.size() * kLogits, -99.0f)) << "a failed enqueue computes nothing";
  EXPECT_EQ(count_enqueues(label_), 0);

  ASSERT_TRUE(context_->enqueue(nullptr)) << context_->last_error();
  EXPECT_EQ(logits_, expected_logits(prompt_));
  EXPECT_EQ(count_enqueues(label_), 1);
  EXPECT_EQ(last_enqueue_profile(label_), kPrefill);
}

TEST_F(ReferenceFault, TheNthCallFails) {
  load_with_context();
  const int64_t fired = faults_fired();
  inject_fault(Call::kEnqueueV3, 3, label_);
  AlignedVector<int64_t> token = {1};
  EXPECT_TRUE(run_llm(*context_, token, &logits_)) << context_->last_error();
  EXPECT_TRUE(run_llm(*context_, token, &logits_)) << context_->last_error();
  EXPECT_FALSE(run_llm(*context_, token, &logits_));
  EXPECT_TRUE(has(context_->last_error(), "injected fault")) << context_->last_error();
  EXPECT_TRUE(run_llm(*context_, token, &logits_)) << "a fault fires once: " << context_->last_error();
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_EQ(count_enqueues(label_), 3);
}

TEST_F(ReferenceFault, AFaultArmedForAnotherLabelDoesNotFireHere) {
  load_with_context();
  const int64_t fired = faults_fired();
  inject_fault(Call::kEnqueueV3, 1, label_ + ".other");
  AlignedVector<int64_t> token = {1};
  EXPECT_TRUE(run_llm(*context_, token, &logits_)) << context_->last_error();
  EXPECT_EQ(faults_fired(), fired);

  clear_faults();
  EXPECT_TRUE(run_llm(*context_, token, &logits_)) << context_->last_error();
  inject_fault(Call::kEnqueueV3, 1, label_);
  clear_faults();
  EXPECT_TRUE(run_llm(*context_, token, &logits_)) << "clear_faults disarms: " << context_->last_error();
  EXPECT_EQ(faults_fired(), fired);
}

TEST(ReferenceFaultNames, EveryCallHasItsNvInferName) {
  EXPECT_STREQ(to_string(Call::kCreateInferRuntime), "createInferRuntime");
  EXPECT_STREQ(to_string(Call::kDeserializeCudaEngine), "deserializeCudaEngine");
  EXPECT_STREQ(to_string(Call::kCreateExecutionContext), "createExecutionContext");
  EXPECT_STREQ(to_string(Call::kSetOptimizationProfileAsync), "setOptimizationProfileAsync");
  EXPECT_STREQ(to_string(Call::kSetInputShape), "setInputShape");
  EXPECT_STREQ(to_string(Call::kGetTensorShape), "getTensorShape");
  EXPECT_STREQ(to_string(Call::kSetTensorAddress), "setTensorAddress");
  EXPECT_STREQ(to_string(Call::kSetDeviceMemoryV2), "setDeviceMemoryV2");
  EXPECT_STREQ(to_string(Call::kEnqueueV3), "enqueueV3");
}

}  // namespace
}  // namespace etrt::gpufree::testing
