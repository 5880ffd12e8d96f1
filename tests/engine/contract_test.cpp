// TensorRT's execution-context contract, rule by rule: every call TensorRT
// would refuse is refused with a message, recorded in the trace, and changes
// nothing.

#include <gtest/gtest.h>

#include <thread>

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

bool has(const char* text, const std::string& part) { return std::string(text).find(part) != std::string::npos; }

// The last event of `label` is a failed `kind` carrying `message`.
void expect_refusal_traced(const std::string& label, TraceKind kind, const char* message) {
  std::vector<TraceEvent> events = trace_events(label);
  ASSERT_FALSE(events.empty());
  const TraceEvent& last = events.back();
  EXPECT_EQ(last.kind, kind) << to_string(last);
  EXPECT_FALSE(last.ok) << to_string(last);
  EXPECT_EQ(last.error, message);
}

class ReferenceContract : public ::testing::Test {
 protected:
  void SetUp() override {
    label_ = test_label();
    engine_ = load_llm(label_);
    ASSERT_NE(engine_, nullptr);
    context_ = engine_->create_context({});
    ASSERT_NE(context_, nullptr);
  }
  void TearDown() override {
    context_.reset();
    engine_.reset();
    clear_trace(label_);
  }

  std::string label_;
  std::unique_ptr<ReferenceEngine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  std::vector<int64_t> ids_ = {1, 2, 3};
  std::vector<float> logits_ = std::vector<float>(kMaxPrefill * kLogits);
};

TEST_F(ReferenceContract, NewContextStartsOnProfileZero) {
  EXPECT_EQ(context_->optimization_profile(), 0);
  std::vector<TraceEvent> created = events_of(label_, TraceKind::kCreateContext);
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0].profile, 0);
}

TEST_F(ReferenceContract, SwitchToAnOutOfRangeProfileFailsAndChangesNothing) {
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  for (int32_t bad : {2, -1, 1000}) {
    EXPECT_FALSE(context_->set_optimization_profile(bad, nullptr));
    EXPECT_TRUE(has(context_->last_error(), "out of range, engine '" + label_ + "' has 2 profile(s), 0..1"))
        << context_->last_error();
    expect_refusal_traced(label_, TraceKind::kSetOptimizationProfile, context_->last_error());
  }
  EXPECT_EQ(context_->optimization_profile(), 0);
  Shape ids;
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, 1})) << "a failed switch must not unset input shapes";
  EXPECT_EQ(count_switches(label_), 0);
  EXPECT_EQ(trace_counters(label_).failed_switches, 3);
}

TEST_F(ReferenceContract, SwitchUnsetsEveryInputShape) {
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  Shape ids;
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, -1}));
  ASSERT_TRUE(context_->set_tensor_address(0, ids_.data()) && context_->set_tensor_address(1, logits_.data()));
  EXPECT_FALSE(context_->enqueue(nullptr));
  EXPECT_TRUE(has(context_->last_error(), "input 'ids' has no shape on profile 1")) << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kEnqueue, context_->last_error());
}

TEST_F(ReferenceContract, SwitchingBackToTheActiveProfileStillUnsetsShapesAndCounts) {
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  ASSERT_TRUE(context_->set_optimization_profile(kDecode, nullptr));
  Shape ids;
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, -1}));
  EXPECT_EQ(count_switches(label_), 1) << "a same-profile switch is a call the backend should not make";
}

TEST_F(ReferenceContract, SetInputShapeOutsideTheActiveProfileFails) {
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({1, 4})));
  EXPECT_TRUE(has(context_->last_error(),
                  "set_input_shape('ids', [1, 4]): dim 1 = 4 is outside [1, 1] of the "
                  "active profile 0"))
      << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kSetInputShape, context_->last_error());

  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({1, 1})));
  EXPECT_TRUE(has(context_->last_error(), "outside [2, 8] of the active profile 1")) << context_->last_error();
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({1, 9})));
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({2, 4}))) << "static dims are checked too";
  EXPECT_TRUE(context_->set_input_shape(0, make_shape({1, 8})));
}

TEST_F(ReferenceContract, SetInputShapeWithTheWrongRankFails) {
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({1})));
  EXPECT_TRUE(has(context_->last_error(), "rank 1, the input has rank 2")) << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kSetInputShape, context_->last_error());
}

TEST_F(ReferenceContract, SetInputShapeOnAnOutputOrABadIndexFails) {
  EXPECT_FALSE(context_->set_input_shape(1, make_shape({1, 1, 3})));
  EXPECT_TRUE(has(context_->last_error(), "'logits' is an output")) << context_->last_error();
  EXPECT_FALSE(context_->set_input_shape(2, make_shape({1, 1})));
  EXPECT_TRUE(has(context_->last_error(), "io index 2 is out of range 0..1")) << context_->last_error();
  EXPECT_FALSE(context_->set_input_shape(-1, make_shape({1, 1})));
}

TEST_F(ReferenceContract, OutputShapeHasDynamicDimsUntilEveryInputIsSet) {
  Shape logits;
  ASSERT_TRUE(context_->tensor_shape(1, &logits));
  EXPECT_EQ(logits, make_shape({1, -1, 3}));
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  ASSERT_TRUE(context_->tensor_shape(1, &logits));
  EXPECT_EQ(logits, make_shape({1, 1, 3}));
  EXPECT_FALSE(context_->tensor_shape(7, &logits));
}

TEST_F(ReferenceContract, EnqueueFailsUntilEveryInputShapeIsSet) {
  ASSERT_TRUE(context_->set_tensor_address(0, ids_.data()) && context_->set_tensor_address(1, logits_.data()));
  EXPECT_FALSE(context_->enqueue(nullptr));
  EXPECT_TRUE(has(context_->last_error(), "input 'ids' has no shape")) << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kEnqueue, context_->last_error());
  EXPECT_EQ(trace_counters(label_).failed_enqueues, 1);
  EXPECT_EQ(count_enqueues(label_), 0);
}

TEST_F(ReferenceContract, EnqueueFailsUntilEveryTensorAddressIsSet) {
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  ASSERT_TRUE(context_->set_tensor_address(0, ids_.data()));
  EXPECT_FALSE(context_->enqueue(nullptr));
  EXPECT_TRUE(has(context_->last_error(), "output 'logits' has no address")) << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kEnqueue, context_->last_error());
  ASSERT_TRUE(context_->set_tensor_address(1, logits_.data()));
  EXPECT_TRUE(context_->enqueue(nullptr)) << context_->last_error();
}

TEST_F(ReferenceContract, SetTensorAddressRefusesMisalignedPointersAndBadIndices) {
  auto* misaligned = reinterpret_cast<uint8_t*>(ids_.data()) + 4;
  EXPECT_FALSE(context_->set_tensor_address(0, misaligned));
  EXPECT_TRUE(has(context_->last_error(), "not aligned to its 8-byte int64 elements")) << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kSetTensorAddress, context_->last_error());
  EXPECT_FALSE(context_->set_tensor_address(5, ids_.data()));
  EXPECT_TRUE(has(context_->last_error(), "io index 5 is out of range")) << context_->last_error();
}

TEST_F(ReferenceContract, EnqueueRefusesANullAddressForANonEmptyTensor) {
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  ASSERT_TRUE(context_->set_tensor_address(0, ids_.data()));
  ASSERT_TRUE(context_->set_tensor_address(1, nullptr));
  EXPECT_FALSE(context_->enqueue(nullptr));
  EXPECT_TRUE(has(context_->last_error(), "'logits' has shape [1, 1, 3] but a null address")) << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kEnqueue, context_->last_error());
}

TEST(ReferenceContractEmpty, EmptyTensorsMayBeBoundToNull) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1})).add_output("y", DataType::kFloat32, make_shape({-1}));
  b.set_profile_shape(b.add_profile(), "x", make_shape({0}), make_shape({2}), make_shape({4}));
  b.identity("x", "y");
  std::unique_ptr<ReferenceEngine> engine = load(build_or_fail(b));
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  ASSERT_TRUE(context->set_input_shape(0, make_shape({0})));
  ASSERT_TRUE(context->set_tensor_address(0, nullptr) && context->set_tensor_address(1, nullptr));
  EXPECT_TRUE(context->enqueue(nullptr)) << context->last_error();
}

TEST_F(ReferenceContract, AFailedCallLeavesTheContextUsable) {
  EXPECT_FALSE(context_->set_optimization_profile(9, nullptr));
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({1, 9})));
  EXPECT_FALSE(context_->enqueue(nullptr));
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  std::vector<float> logits;
  EXPECT_TRUE(run_llm(*context_, ids_, &logits)) << context_->last_error();
  EXPECT_EQ(logits, expected_logits(ids_));
}

TEST_F(ReferenceContract, FirstEnqueueAfterASwitchMustUseTheSwitchStream) {
  int stream_a = 0, stream_b = 0;
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, &stream_a));
  std::vector<float> logits;
  EXPECT_FALSE(run_llm(*context_, ids_, &logits, &stream_b));
  EXPECT_TRUE(has(context_->last_error(), "switch and enqueue on the same stream")) << context_->last_error();
  EXPECT_TRUE(run_llm(*context_, ids_, &logits, &stream_a)) << context_->last_error();
  EXPECT_TRUE(run_llm(*context_, ids_, &logits, &stream_b)) << "once the switch has run, any stream will do";
}

TEST_F(ReferenceContract, SwitchToAProfileAnotherLiveContextHoldsFailsAndChangesNothing) {
  std::unique_ptr<ExecutionContext> other = engine_->create_context({});
  ASSERT_TRUE(other->set_optimization_profile(kPrefill, nullptr));
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));

  EXPECT_FALSE(context_->set_optimization_profile(kPrefill, nullptr));
  EXPECT_TRUE(has(context_->last_error(), "profile 1 is held by execution context #")) << context_->last_error();
  EXPECT_TRUE(has(context_->last_error(), "TensorRT <= 8.5")) << context_->last_error();
  expect_refusal_traced(label_, TraceKind::kSetOptimizationProfile, context_->last_error());
  EXPECT_EQ(context_->optimization_profile(), kDecode);
  Shape ids;
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, 1}));
}

TEST_F(ReferenceContract, EnqueueOnAProfileAnotherLiveContextHoldsFails) {
  // context_ took profile 0 at creation; `other` starts on profile 0 too, but cannot run it.
  std::unique_ptr<ExecutionContext> other = engine_->create_context({});
  EXPECT_EQ(other->optimization_profile(), 0);
  std::vector<int64_t> one = {4};
  std::vector<float> logits;
  EXPECT_FALSE(run_llm(*other, one, &logits));
  EXPECT_TRUE(has(other->last_error(), "profile 0 is held by execution context #")) << other->last_error();
  expect_refusal_traced(label_, TraceKind::kEnqueue, other->last_error());
  EXPECT_TRUE(run_llm(*context_, one, &logits)) << context_->last_error();
}

TEST_F(ReferenceContract, DestroyingAContextFreesItsProfile) {
  std::unique_ptr<ExecutionContext> other = engine_->create_context({});
  context_.reset();
  std::vector<int64_t> one = {4};
  std::vector<float> logits;
  EXPECT_TRUE(run_llm(*other, one, &logits)) << other->last_error();
  EXPECT_EQ(logits, expected_logits(one));
}

TEST_F(ReferenceContract, ContextPerProfileRunsBothRegimesWithOneSwitch) {
  std::unique_ptr<ExecutionContext> prefill = engine_->create_context({});
  ASSERT_TRUE(prefill->set_optimization_profile(kPrefill, nullptr));
  std::vector<int64_t> prompt = {1, 2, 3, 4}, token = {5};
  std::vector<float> logits;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(run_llm(*prefill, prompt, &logits)) << prefill->last_error();
    EXPECT_EQ(logits, expected_logits(prompt));
    for (int step = 0; step < 4; ++step) {
      ASSERT_TRUE(run_llm(*context_, token, &logits)) << context_->last_error();
      EXPECT_EQ(logits, expected_logits(token));
    }
  }
  EXPECT_EQ(count_switches(label_), 1);
  EXPECT_EQ(count_enqueues(label_), 15);
  EXPECT_EQ(last_enqueue_profile(label_), kDecode);
}

TEST_F(ReferenceContract, EnqueueWhileAnotherEnqueueOnTheSameContextIsInProgressFails) {
  bool competing_ok = true;
  std::string competing_error;
  int hook_calls = 0;
  engine_->set_enqueue_hook_for_testing([&](ExecutionContext& running) {
    if (hook_calls++ > 0) return;
    // Another thread enqueues the very context whose enqueue is in progress.
    std::thread([&] {
      competing_ok = running.enqueue(nullptr);
      competing_error = running.last_error();
    }).join();
  });
  std::vector<float> logits;
  std::vector<int64_t> one = {2};
  EXPECT_TRUE(run_llm(*context_, one, &logits)) << context_->last_error();
  EXPECT_EQ(logits, expected_logits(one));
  EXPECT_FALSE(competing_ok);
  EXPECT_NE(competing_error.find("another enqueue on this context is still in progress"), std::string::npos)
      << competing_error;
  EXPECT_EQ(trace_counters(label_).failed_enqueues, 1) << dump(label_);
  EXPECT_EQ(count_enqueues(label_), 1);
}

TEST_F(ReferenceContract, ContextOutlivingItsEngineIsRefusedAndRecorded) {
  engine_.reset();
  EXPECT_FALSE(context_->set_optimization_profile(kPrefill, nullptr));
  EXPECT_TRUE(has(context_->last_error(), "was destroyed; destroy its contexts first")) << context_->last_error();
  std::vector<TraceEvent> destroyed = events_of(label_, TraceKind::kDestroyEngine);
  ASSERT_EQ(destroyed.size(), 1u);
  EXPECT_FALSE(destroyed[0].ok);
  EXPECT_NE(destroyed[0].error.find("destroyed while 1 execution context(s) are alive"), std::string::npos);
  std::vector<int64_t> one = {1};
  std::vector<float> logits;
  EXPECT_FALSE(run_llm(*context_, one, &logits));
  EXPECT_TRUE(has(context_->last_error(), "enqueue: engine '" + label_ + "' was destroyed")) << context_->last_error();
}

}  // namespace
}  // namespace etrt::gpufree::testing
