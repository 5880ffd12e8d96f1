// TensorRT's execution-context contract, rule by rule, through etrt's TensorRT
// adapter: every call TensorRT would refuse is refused with a message and
// changes nothing. A refusal the GPU-free implementation makes is recorded in
// its trace, word for word the reason the adapter passes on after its own
// "<NvInfer call> failed: "; a call the adapter itself refuses (a bad index, an
// out-of-range profile) never reaches NvInfer and leaves the trace untouched.

#include <gtest/gtest.h>

#include <thread>

#include "etrt_gpufree/faults.h"

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

// The last event of `label` is a failed `kind` whose error is the GPU-free implementation's reason, which the
// adapter's `message` ends with (after "<NvInfer call> ... failed: ").
void expect_refusal_traced(const std::string& label, TraceKind kind, const char* message) {
  std::vector<TraceEvent> events = trace_events(label);
  ASSERT_FALSE(events.empty());
  const TraceEvent& last = events.back();
  EXPECT_EQ(last.kind, kind) << to_string(last);
  EXPECT_FALSE(last.ok) << to_string(last);
  ASSERT_FALSE(last.error.empty()) << to_string(last);
  const std::string text = message;
  ASSERT_GE(text.size(), last.error.size() + 2) << text;
  EXPECT_EQ(text.substr(text.size() - last.error.size()), last.error) << text;
  EXPECT_EQ(text.substr(text.size() - last.error.size() - 2, 2), ": ") << text;
}

// No call of `kind` reached the GPU-free implementation (the adapter refused it first).
void expect_not_traced(const std::string& label, TraceKind kind) {
  EXPECT_TRUE(events_of(label, kind).empty()) << dump(label);
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
    set_enqueue_hook(label_, {});
    context_.reset();
    engine_.reset();
    clear_trace(label_);
  }

  std::string label_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  AlignedVector<int64_t> ids_ = {1, 2, 3};
  AlignedVector<float> logits_ = AlignedVector<float>(kMaxPrefill * kLogits);
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
    EXPECT_TRUE(
        has(context_->last_error(), "profile " + std::to_string(bad) + " does not exist; the engine has 2 (0..1)"))
        << context_->last_error();
  }
  EXPECT_EQ(context_->optimization_profile(), 0);
  Shape ids;
  ASSERT_TRUE(context_->tensor_shape(0, &ids));
  EXPECT_EQ(ids, make_shape({1, 1})) << "a failed switch must not unset input shapes";
  EXPECT_EQ(count_switches(label_), 0);
  // The adapter refuses an index outside the engine's profiles itself: setOptimizationProfileAsync never runs.
  expect_not_traced(label_, TraceKind::kSetOptimizationProfile);
  EXPECT_EQ(trace_counters(label_).failures, 0);
  AlignedVector<float> logits;
  AlignedVector<int64_t> one = {2};
  EXPECT_TRUE(run_llm(*context_, one, &logits)) << "still on profile 0: " << context_->last_error();
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
  EXPECT_TRUE(has(context_->last_error(), "'logits' is an output, not an input")) << context_->last_error();
  EXPECT_FALSE(context_->set_input_shape(2, make_shape({1, 1})));
  EXPECT_TRUE(has(context_->last_error(), "IO index 2 is outside 0..1")) << context_->last_error();
  EXPECT_FALSE(context_->set_input_shape(-1, make_shape({1, 1})));
  EXPECT_TRUE(has(context_->last_error(), "IO index -1 is outside 0..1")) << context_->last_error();
  Shape too_deep;
  too_deep.rank = kMaxRank + 1;
  EXPECT_FALSE(context_->set_input_shape(0, too_deep));
  EXPECT_TRUE(has(context_->last_error(), "rank 9 is outside 0..8")) << context_->last_error();
  expect_not_traced(label_, TraceKind::kSetInputShape);
}

TEST_F(ReferenceContract, OutputShapeHasDynamicDimsUntilEveryInputIsSet) {
  Shape logits;
  ASSERT_TRUE(context_->tensor_shape(1, &logits));
  EXPECT_EQ(logits, make_shape({1, -1, 3}));
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  ASSERT_TRUE(context_->tensor_shape(1, &logits));
  EXPECT_EQ(logits, make_shape({1, 1, 3}));
  EXPECT_FALSE(context_->tensor_shape(7, &logits));
  EXPECT_TRUE(has(context_->last_error(), "IO index 7 is outside 0..1")) << context_->last_error();
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

TEST_F(ReferenceContract, SetTensorAddressRefusesAddressesNot256ByteAligned) {
  // TensorRT requires every I/O address to be 256-byte aligned; aligned to the element type is not enough.
  ASSERT_TRUE(context_->set_input_shape(0, make_shape({1, 1})));
  AlignedBuffer raw(512);
  for (size_t offset : {size_t{8}, size_t{4}, size_t{128}}) {
    uint8_t* misaligned = raw.data + offset;
    EXPECT_FALSE(context_->set_tensor_address(0, misaligned)) << "offset " << offset;
    EXPECT_TRUE(has(context_->last_error(), "setTensorAddress('ids') failed: ")) << context_->last_error();
    EXPECT_TRUE(has(context_->last_error(), "not 256-byte aligned")) << context_->last_error();
    expect_refusal_traced(label_, TraceKind::kSetTensorAddress, context_->last_error());
    EXPECT_EQ(trace_events(label_).back().address, misaligned);
  }
  ASSERT_TRUE(context_->set_tensor_address(1, logits_.data())) << context_->last_error();
  EXPECT_FALSE(context_->enqueue(nullptr)) << "a refused address must not have been taken";
  EXPECT_TRUE(has(context_->last_error(), "input 'ids' has no address")) << context_->last_error();
  ASSERT_TRUE(context_->set_tensor_address(0, ids_.data())) << context_->last_error();
  EXPECT_TRUE(context_->enqueue(nullptr)) << context_->last_error();
}

TEST_F(ReferenceContract, SetTensorAddressRefusesBadIndices) {
  EXPECT_FALSE(context_->set_tensor_address(5, ids_.data()));
  EXPECT_TRUE(has(context_->last_error(), "IO index 5 is outside 0..1")) << context_->last_error();
  EXPECT_FALSE(context_->set_tensor_address(-1, ids_.data()));
  expect_not_traced(label_, TraceKind::kSetTensorAddress);
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
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  ASSERT_NE(context, nullptr) << engine->last_error();
  ASSERT_TRUE(context->set_input_shape(0, make_shape({0})));
  ASSERT_TRUE(context->set_tensor_address(0, nullptr) && context->set_tensor_address(1, nullptr));
  EXPECT_TRUE(context->enqueue(nullptr)) << context->last_error();
}

TEST_F(ReferenceContract, AFailedCallLeavesTheContextUsable) {
  EXPECT_FALSE(context_->set_optimization_profile(9, nullptr));
  EXPECT_FALSE(context_->set_input_shape(0, make_shape({1, 9})));
  EXPECT_FALSE(context_->enqueue(nullptr));
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr));
  AlignedVector<float> logits;
  EXPECT_TRUE(run_llm(*context_, ids_, &logits)) << context_->last_error();
  EXPECT_EQ(logits, expected_logits(ids_));
}

TEST_F(ReferenceContract, FirstEnqueueAfterASwitchMustUseTheSwitchStream) {
  int stream_a = 0, stream_b = 0;
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, &stream_a));
  AlignedVector<float> logits;
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
  AlignedVector<int64_t> one = {4};
  AlignedVector<float> logits;
  EXPECT_FALSE(run_llm(*other, one, &logits));
  EXPECT_TRUE(has(other->last_error(), "profile 0 is held by execution context #")) << other->last_error();
  expect_refusal_traced(label_, TraceKind::kEnqueue, other->last_error());
  EXPECT_TRUE(run_llm(*context_, one, &logits)) << context_->last_error();
}

TEST_F(ReferenceContract, DestroyingAContextFreesItsProfile) {
  std::unique_ptr<ExecutionContext> other = engine_->create_context({});
  context_.reset();
  AlignedVector<int64_t> one = {4};
  AlignedVector<float> logits;
  EXPECT_TRUE(run_llm(*other, one, &logits)) << other->last_error();
  EXPECT_EQ(logits, expected_logits(one));
}

TEST_F(ReferenceContract, ContextPerProfileRunsBothRegimesWithOneSwitch) {
  std::unique_ptr<ExecutionContext> prefill = engine_->create_context({});
  ASSERT_TRUE(prefill->set_optimization_profile(kPrefill, nullptr));
  AlignedVector<int64_t> prompt = {1, 2, 3, 4}, token = {5};
  AlignedVector<float> logits;
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
  set_enqueue_hook(label_, [&] {
    if (hook_calls++ > 0) return;
    // Another thread enqueues the very context whose enqueue is in progress.
    std::thread([&] {
      competing_ok = context_->enqueue(nullptr);
      competing_error = context_->last_error();
    }).join();
  });
  AlignedVector<float> logits;
  AlignedVector<int64_t> one = {2};
  EXPECT_TRUE(run_llm(*context_, one, &logits)) << context_->last_error();
  set_enqueue_hook(label_, {});
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(logits, expected_logits(one));
  EXPECT_FALSE(competing_ok);
  EXPECT_TRUE(has(competing_error, "enqueueV3 under profile 0 failed: ")) << competing_error;
  EXPECT_TRUE(has(competing_error, "another enqueue on this context is still in progress")) << competing_error;
  EXPECT_EQ(trace_counters(label_).failed_enqueues, 1) << dump(label_);
  EXPECT_EQ(count_enqueues(label_), 1);
}

TEST_F(ReferenceContract, DestroyingTheEngineBeforeItsContextLeavesTheContextUsable) {
  // The adapter's contexts share ownership of the NvInfer engine, so TensorRT's order (contexts before their
  // engine) holds whatever order the caller destroys the adapter's objects in.
  engine_.reset();
  EXPECT_TRUE(events_of(label_, TraceKind::kDestroyEngine).empty()) << "the NvInfer engine must still be alive";
  ASSERT_TRUE(context_->set_optimization_profile(kPrefill, nullptr)) << context_->last_error();
  AlignedVector<float> logits;
  ASSERT_TRUE(run_llm(*context_, ids_, &logits)) << context_->last_error();
  EXPECT_EQ(logits, expected_logits(ids_));
  Shape shape;
  ASSERT_TRUE(context_->tensor_shape(1, &shape)) << context_->last_error();
  EXPECT_EQ(shape, make_shape({1, 3, 3}));

  context_.reset();
  std::vector<TraceEvent> events = trace_events(label_);
  ASSERT_GE(events.size(), 2u) << dump(label_);
  EXPECT_EQ(events[events.size() - 2].kind, TraceKind::kDestroyContext) << dump(label_);
  EXPECT_EQ(events.back().kind, TraceKind::kDestroyEngine) << "the engine goes after its last context\n"
                                                           << dump(label_);
  EXPECT_TRUE(events.back().ok) << to_string(events.back());
  EXPECT_EQ(trace_counters(label_).failures, 0) << dump(label_);
}

}  // namespace
}  // namespace etrt::gpufree::testing
