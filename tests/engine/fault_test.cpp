// Fault injection (etrt_gpufree/faults.h) at every NvInfer call etrt's TensorRT
// adapter makes: the adapter call fails with TensorRT's reason ("injected
// fault ...") in its Diagnostic, the fault is counted, nothing changes, and the
// very next identical call succeeds -- the engine or context stays usable and
// computes the right results.

#include "etrt_gpufree/faults.h"

#include <gtest/gtest.h>

#include "gpufree_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

class GpufreeFault : public ::testing::Test {
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
    context_ = new_context(*engine_, {user_managed_memory});
    ASSERT_NE(context_, nullptr);
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
  Diagnostic why_;  // the reason of the test's latest failed call
  AlignedVector<int64_t> prompt_ = {5, 0, 3};
  AlignedVector<float> logits_;
};

TEST_F(GpufreeFault, CreateInferRuntime) {
  const int64_t fired = faults_fired();
  inject_fault(Call::kCreateInferRuntime);
  std::unique_ptr<Engine> engine;
  EXPECT_EQ(engine::tensorrt::deserialize(bytes_.data(), bytes_.size(), 0, &engine, why_), Error::Internal);
  EXPECT_EQ(engine, nullptr);
  EXPECT_TRUE(has(why_.c_str(), "createInferRuntime failed")) << why_.c_str();
  EXPECT_TRUE(has(why_.c_str(), "injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_TRUE(trace_events(label_).empty()) << dump(label_);

  load_with_context();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(run_llm(*context_, prompt_, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(prompt_));
  EXPECT_EQ(faults_fired(), fired + 1);
}

TEST_F(GpufreeFault, DeserializeCudaEngine) {
  const int64_t fired = faults_fired();
  inject_fault(Call::kDeserializeCudaEngine);
  std::unique_ptr<Engine> engine;
  // The adapter cannot tell a failed deserializeCudaEngine's cause and blames the bytes.
  EXPECT_EQ(engine::tensorrt::deserialize(bytes_.data(), bytes_.size(), 0, &engine, why_), Error::InvalidArgument);
  EXPECT_EQ(engine, nullptr);
  EXPECT_TRUE(has(why_.c_str(), "TensorRT could not deserialize the engine")) << why_.c_str();
  EXPECT_TRUE(has(why_.c_str(), "injected fault: deserializeCudaEngine")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_TRUE(events_of(label_, TraceKind::kLoadEngine).empty()) << dump(label_);

  load_with_context();
  EXPECT_EQ(events_of(label_, TraceKind::kLoadEngine).size(), 1u);
  AlignedVector<int64_t> token = {4};
  ASSERT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(token));
}

TEST_F(GpufreeFault, ADeserializeFaultScopedToALabelFiresOnlyOnThatEnginesBytes) {
  const int64_t fired = faults_fired();
  inject_fault(Call::kDeserializeCudaEngine, 1, label_);
  // Another engine's bytes load, and do not use up the fault.
  const std::vector<uint8_t> other = build_or_fail(llm_builder(label_ + ".other"));
  EXPECT_NE(load(other), nullptr);
  clear_trace(label_ + ".other");
  // Malformed bytes fail on their own and do not use it up either.
  std::unique_ptr<Engine> engine;
  const std::vector<uint8_t> cut(bytes_.begin(), bytes_.begin() + 30);
  EXPECT_EQ(engine::tensorrt::deserialize(cut.data(), cut.size(), 0, &engine, why_), Error::InvalidArgument);
  EXPECT_FALSE(has(why_.c_str(), "injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired);
  // This engine's bytes: the fault fires.
  EXPECT_EQ(engine::tensorrt::deserialize(bytes_.data(), bytes_.size(), 0, &engine, why_), Error::InvalidArgument);
  EXPECT_EQ(engine, nullptr);
  EXPECT_TRUE(has(why_.c_str(), "injected fault: deserializeCudaEngine")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_TRUE(events_of(label_, TraceKind::kLoadEngine).empty()) << dump(label_);
  load_with_context();
  EXPECT_EQ(events_of(label_, TraceKind::kLoadEngine).size(), 1u);
}

TEST_F(GpufreeFault, CreateExecutionContext) {
  engine_ = load(bytes_);
  ASSERT_NE(engine_, nullptr);
  const int64_t fired = faults_fired();
  inject_fault(Call::kCreateExecutionContext, 1, label_);
  EXPECT_EQ(engine_->create_context({}, &context_, why_), Error::Internal);
  EXPECT_EQ(context_, nullptr) << "the context is set on success only";
  EXPECT_TRUE(has(why_.c_str(), "createExecutionContext(kSTATIC) on device 0 failed: ")) << why_.c_str();
  EXPECT_TRUE(has(why_.c_str(), "injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  std::vector<TraceEvent> created = events_of(label_, TraceKind::kCreateContext);
  ASSERT_EQ(created.size(), 1u) << dump(label_);
  EXPECT_FALSE(created[0].ok);
  EXPECT_EQ(trace_counters(label_).contexts_created, 0);

  ASSERT_EQ(engine_->create_context({}, &context_, why_), Error::Ok) << why_.c_str();
  ASSERT_NE(context_, nullptr);
  EXPECT_EQ(context_->optimization_profile(), kDecode);
  AlignedVector<int64_t> token = {2};
  ASSERT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok)
      << "the refused creation must not hold profile 0: " << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(token));
}

TEST_F(GpufreeFault, SetOptimizationProfileAsync) {
  load_with_context();
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetOptimizationProfileAsync, 1, label_);
  EXPECT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "setOptimizationProfileAsync(1) failed: injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetOptimizationProfile);
  EXPECT_EQ(context_->optimization_profile(), kDecode) << "a failed switch changes nothing";
  Shape ids;
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(ids, make_shape({1, 1})) << "a failed switch must not unset input shapes";

  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->optimization_profile(), kPrefill);
  ASSERT_EQ(run_llm(*context_, prompt_, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(prompt_));
  EXPECT_EQ(count_switches(label_), 1);
}

TEST_F(GpufreeFault, SetInputShape) {
  load_with_context();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetInputShape, 1, label_);
  // The adapter reports every setInputShape refusal as the caller's shape, whatever TensorRT's error code.
  EXPECT_EQ(context_->set_input_shape(0, make_shape({1, 3}), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "setInputShape('ids', [1, 3]) under profile 1 failed: injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetInputShape);
  Shape ids;
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(ids, make_shape({1, -1})) << "the refused shape must not have been taken";

  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 3}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(ids, make_shape({1, 3}));
  ASSERT_EQ(run_llm(*context_, prompt_, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(prompt_));
}

TEST_F(GpufreeFault, GetTensorShape) {
  load_with_context();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 3}), why_), Error::Ok) << why_.c_str();
  const int64_t fired = faults_fired();
  inject_fault(Call::kGetTensorShape, 1, label_);
  Shape logits = make_shape({7});
  EXPECT_EQ(context_->tensor_shape(1, &logits, why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "getTensorShape('logits') returned rank -1: injected fault")) << why_.c_str();
  EXPECT_EQ(logits, make_shape({7})) << "a failed call leaves *out alone";
  EXPECT_EQ(faults_fired(), fired + 1);

  ASSERT_EQ(context_->tensor_shape(1, &logits, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits, make_shape({1, 3, 3}));
  ASSERT_EQ(run_llm(*context_, prompt_, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(prompt_));
}

TEST_F(GpufreeFault, SetTensorAddress) {
  load_with_context();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 3}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(0, prompt_.data(), why_), Error::Ok) << why_.c_str();
  logits_.assign(3 * kLogits, -99.0f);
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetTensorAddress, 1, label_);
  EXPECT_EQ(context_->set_tensor_address(1, logits_.data(), why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "setTensorAddress('logits') failed: injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetTensorAddress);
  EXPECT_NE(context_->enqueue(nullptr, why_), Error::Ok) << "the refused address must not have been taken";
  EXPECT_TRUE(has(why_.c_str(), "output 'logits' has no address")) << why_.c_str();

  ASSERT_EQ(context_->set_tensor_address(1, logits_.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->enqueue(nullptr, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(prompt_));
}

TEST_F(GpufreeFault, SetDeviceMemoryV2) {
  load_with_context(/*user_managed_memory=*/true);
  AlignedBuffer scratch(engine_->device_memory_size());
  const int64_t fired = faults_fired();
  inject_fault(Call::kSetDeviceMemoryV2, 1, label_);
  EXPECT_EQ(context_->set_device_memory(scratch.data, scratch.size, why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "setDeviceMemoryV2(768 bytes) failed: injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kSetDeviceMemory);
  AlignedVector<int64_t> token = {1};
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::InvalidState)
      << "the refused memory must not have been taken: " << why_.c_str();

  ASSERT_EQ(context_->set_device_memory(scratch.data, scratch.size, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(token));
  std::vector<TraceEvent> memory = events_of(label_, TraceKind::kSetDeviceMemory);
  ASSERT_EQ(memory.size(), 2u) << dump(label_);
  EXPECT_TRUE(memory[1].ok);
  EXPECT_EQ(memory[1].address, scratch.data);
}

TEST_F(GpufreeFault, EnqueueV3) {
  load_with_context();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  const int64_t fired = faults_fired();
  inject_fault(Call::kEnqueueV3, 1, label_);
  EXPECT_EQ(run_llm(*context_, prompt_, &logits_, why_), Error::Internal) << "not the caller's data";
  EXPECT_TRUE(has(why_.c_str(), "enqueueV3 under profile 1 failed: injected fault")) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  expect_refusal_traced(TraceKind::kEnqueue);
  EXPECT_EQ(logits_, AlignedVector<float>(prompt_.size() * kLogits, -99.0f)) << "a failed enqueue computes nothing";
  EXPECT_EQ(count_enqueues(label_), 0);

  ASSERT_EQ(context_->enqueue(nullptr, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits_, expected_logits(prompt_));
  EXPECT_EQ(count_enqueues(label_), 1);
  EXPECT_EQ(last_enqueue_profile(label_), kPrefill);
}

TEST_F(GpufreeFault, TheNthCallFails) {
  load_with_context();
  const int64_t fired = faults_fired();
  inject_fault(Call::kEnqueueV3, 3, label_);
  AlignedVector<int64_t> token = {1};
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "injected fault")) << why_.c_str();
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << "a fault fires once: " << why_.c_str();
  EXPECT_EQ(faults_fired(), fired + 1);
  EXPECT_EQ(count_enqueues(label_), 3);
}

TEST_F(GpufreeFault, AFaultArmedForAnotherLabelDoesNotFireHere) {
  load_with_context();
  const int64_t fired = faults_fired();
  inject_fault(Call::kEnqueueV3, 1, label_ + ".other");
  AlignedVector<int64_t> token = {1};
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(faults_fired(), fired);

  clear_faults();
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << why_.c_str();
  inject_fault(Call::kEnqueueV3, 1, label_);
  clear_faults();
  EXPECT_EQ(run_llm(*context_, token, &logits_, why_), Error::Ok) << "clear_faults disarms: " << why_.c_str();
  EXPECT_EQ(faults_fired(), fired);
}

TEST(GpufreeFaultNames, EveryCallHasItsNvInferName) {
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
