// TensorRT's execution-context contract, rule by rule, through etrt's TensorRT
// adapter: every call TensorRT would refuse is refused with a message and
// changes nothing. A refusal the GPU-free implementation makes is recorded in
// its trace, word for word the reason the adapter passes on after its own
// "<NvInfer call> failed: "; a call the adapter itself refuses (a bad index, an
// out-of-range profile) never reaches NvInfer and leaves the trace untouched.

#include <gtest/gtest.h>

#include <thread>

#include "etrt_gpufree/faults.h"

#include "gpufree_fixtures.h"

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

class GpufreeContract : public ::testing::Test {
 protected:
  void SetUp() override {
    label_ = test_label();
    engine_ = load_llm(label_);
    ASSERT_NE(engine_, nullptr);
    context_ = new_context(*engine_);
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
  Diagnostic why_;  // the reason of the test's latest failed call
  AlignedVector<int64_t> ids_ = {1, 2, 3};
  AlignedVector<float> logits_ = AlignedVector<float>(kMaxPrefill * kLogits);
};

// The same over an engine built for TensorRT 8.6 without PreviewFeature::kPROFILE_SHARING_0806: a profile is held by
// one live context at a time.
class GpufreeContract86 : public GpufreeContract {
 protected:
  void SetUp() override {
    label_ = test_label();
    engine_ = load(build_or_fail(llm_builder(label_).set_tensorrt_version(TensorRTVersion::k8_6)));
    ASSERT_NE(engine_, nullptr);
    context_ = new_context(*engine_);
    ASSERT_NE(context_, nullptr);
  }
};

TEST_F(GpufreeContract, NewContextStartsOnProfileZero) {
  EXPECT_EQ(context_->optimization_profile(), 0);
  std::vector<TraceEvent> created = events_of(label_, TraceKind::kCreateContext);
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0].profile, 0);
}

TEST_F(GpufreeContract, SwitchToAnOutOfRangeProfileFailsAndChangesNothing) {
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  for (int32_t bad : {2, -1, 1000}) {
    EXPECT_EQ(context_->set_optimization_profile(bad, nullptr, why_), Error::InvalidArgument);
    EXPECT_TRUE(has(why_.c_str(), "profile " + std::to_string(bad) + " does not exist; the engine has 2 (0..1)"))
        << why_.c_str();
  }
  EXPECT_EQ(context_->optimization_profile(), 0);
  Shape ids;
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(ids, make_shape({1, 1})) << "a failed switch must not unset input shapes";
  EXPECT_EQ(count_switches(label_), 0);
  // The adapter refuses an index outside the engine's profiles itself: setOptimizationProfileAsync never runs.
  expect_not_traced(label_, TraceKind::kSetOptimizationProfile);
  EXPECT_EQ(trace_counters(label_).failures, 0);
  AlignedVector<float> logits;
  AlignedVector<int64_t> one = {2};
  EXPECT_EQ(run_llm(*context_, one, &logits, why_), Error::Ok) << "still on profile 0: " << why_.c_str();
}

TEST_F(GpufreeContract, SwitchUnsetsEveryInputShape) {
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  Shape ids;
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(ids, make_shape({1, -1}));
  ASSERT_EQ(context_->set_tensor_address(0, ids_.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(1, logits_.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(nullptr, why_), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "input 'ids' has no shape on profile 1")) << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kEnqueue, why_.c_str());
}

TEST_F(GpufreeContract, SwitchingBackToTheActiveProfileStillUnsetsShapesAndCounts) {
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_optimization_profile(kDecode, nullptr, why_), Error::Ok) << why_.c_str();
  Shape ids;
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(ids, make_shape({1, -1}));
  EXPECT_EQ(count_switches(label_), 1) << "a same-profile switch is a call the backend should not make";
}

TEST_F(GpufreeContract, SetInputShapeOutsideTheActiveProfileFails) {
  EXPECT_EQ(context_->set_input_shape(0, make_shape({1, 4}), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(),
                  "set_input_shape('ids', [1, 4]): dim 1 = 4 is outside [1, 1] of the "
                  "active profile 0"))
      << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kSetInputShape, why_.c_str());

  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "outside [2, 8] of the active profile 1")) << why_.c_str();
  EXPECT_EQ(context_->set_input_shape(0, make_shape({1, 9}), why_), Error::InvalidArgument);
  EXPECT_EQ(context_->set_input_shape(0, make_shape({2, 4}), why_), Error::InvalidArgument)
      << "static dims are checked too";
  EXPECT_EQ(context_->set_input_shape(0, make_shape({1, 8}), why_), Error::Ok) << why_.c_str();
}

TEST_F(GpufreeContract, SetInputShapeWithTheWrongRankFails) {
  EXPECT_EQ(context_->set_input_shape(0, make_shape({1}), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "rank 1, the input has rank 2")) << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kSetInputShape, why_.c_str());
}

TEST_F(GpufreeContract, SetInputShapeOnAnOutputOrABadIndexFails) {
  EXPECT_EQ(context_->set_input_shape(1, make_shape({1, 1, 3}), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "'logits' is an output, not an input")) << why_.c_str();
  EXPECT_EQ(context_->set_input_shape(2, make_shape({1, 1}), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "IO index 2 is outside 0..1")) << why_.c_str();
  EXPECT_EQ(context_->set_input_shape(-1, make_shape({1, 1}), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "IO index -1 is outside 0..1")) << why_.c_str();
  Shape too_deep;
  too_deep.rank = kMaxRank + 1;
  EXPECT_EQ(context_->set_input_shape(0, too_deep, why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "rank 9 is outside 0..8")) << why_.c_str();
  expect_not_traced(label_, TraceKind::kSetInputShape);
}

TEST_F(GpufreeContract, OutputShapeHasDynamicDimsUntilEveryInputIsSet) {
  Shape logits;
  ASSERT_EQ(context_->tensor_shape(1, &logits, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits, make_shape({1, -1, 3}));
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->tensor_shape(1, &logits, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits, make_shape({1, 1, 3}));
  EXPECT_EQ(context_->tensor_shape(7, &logits, why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "IO index 7 is outside 0..1")) << why_.c_str();
}

TEST_F(GpufreeContract, EnqueueFailsUntilEveryInputShapeIsSet) {
  ASSERT_EQ(context_->set_tensor_address(0, ids_.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(1, logits_.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(nullptr, why_), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "input 'ids' has no shape")) << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kEnqueue, why_.c_str());
  EXPECT_EQ(trace_counters(label_).failed_enqueues, 1);
  EXPECT_EQ(count_enqueues(label_), 0);
}

TEST_F(GpufreeContract, EnqueueFailsUntilEveryTensorAddressIsSet) {
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(0, ids_.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(nullptr, why_), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "output 'logits' has no address")) << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kEnqueue, why_.c_str());
  ASSERT_EQ(context_->set_tensor_address(1, logits_.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(nullptr, why_), Error::Ok) << why_.c_str();
}

TEST_F(GpufreeContract, SetTensorAddressRefusesAddressesNot256ByteAligned) {
  // TensorRT requires every I/O address to be 256-byte aligned; aligned to the element type is not enough.
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  AlignedBuffer raw(512);
  for (size_t offset : {size_t{8}, size_t{4}, size_t{128}}) {
    uint8_t* misaligned = raw.data + offset;
    EXPECT_EQ(context_->set_tensor_address(0, misaligned, why_), Error::Internal) << "offset " << offset;
    EXPECT_TRUE(has(why_.c_str(), "setTensorAddress('ids') failed: ")) << why_.c_str();
    EXPECT_TRUE(has(why_.c_str(), "not 256-byte aligned")) << why_.c_str();
    expect_refusal_traced(label_, TraceKind::kSetTensorAddress, why_.c_str());
    EXPECT_EQ(trace_events(label_).back().address, misaligned);
  }
  ASSERT_EQ(context_->set_tensor_address(1, logits_.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_NE(context_->enqueue(nullptr, why_), Error::Ok) << "a refused address must not have been taken";
  EXPECT_TRUE(has(why_.c_str(), "input 'ids' has no address")) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(0, ids_.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(nullptr, why_), Error::Ok) << why_.c_str();
}

TEST_F(GpufreeContract, SetTensorAddressRefusesBadIndices) {
  EXPECT_EQ(context_->set_tensor_address(5, ids_.data(), why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "IO index 5 is outside 0..1")) << why_.c_str();
  EXPECT_EQ(context_->set_tensor_address(-1, ids_.data(), why_), Error::InvalidArgument);
  expect_not_traced(label_, TraceKind::kSetTensorAddress);
}

TEST_F(GpufreeContract, EnqueueRefusesANullAddressForANonEmptyTensor) {
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(0, ids_.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(1, nullptr, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(nullptr, why_), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "'logits' has shape [1, 1, 3] but a null address")) << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kEnqueue, why_.c_str());
}

// TensorRT 8.6 refuses a null address at enqueueV3 even for an empty tensor (tests/contract); so does the GPU-free
// implementation, so a backend that binds null fails here first.
TEST(GpufreeContractEmpty, EvenAnEmptyTensorNeedsANonNullAddress) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1})).add_output("y", DataType::kFloat32, make_shape({-1}));
  b.set_profile_shape(b.add_profile(), "x", make_shape({0}), make_shape({2}), make_shape({4}));
  b.identity("x", "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  ASSERT_EQ(context->set_input_shape(0, make_shape({0}), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(0, nullptr, why), Error::Ok) << "refused at enqueue, not here: " << why.c_str();
  alignas(256) static float y[1];
  ASSERT_EQ(context->set_tensor_address(1, y, why), Error::Ok) << why.c_str();
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Internal);
  EXPECT_TRUE(has(why.c_str(), "'x' has shape [0] but a null address")) << why.c_str();
  alignas(256) static float x[1];
  ASSERT_EQ(context->set_tensor_address(0, x, why), Error::Ok) << why.c_str();
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
}

TEST_F(GpufreeContract, AFailedCallLeavesTheContextUsable) {
  EXPECT_EQ(context_->set_optimization_profile(9, nullptr, why_), Error::InvalidArgument);
  EXPECT_EQ(context_->set_input_shape(0, make_shape({1, 9}), why_), Error::InvalidArgument);
  EXPECT_NE(context_->enqueue(nullptr, why_), Error::Ok);
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  AlignedVector<float> logits;
  EXPECT_EQ(run_llm(*context_, ids_, &logits, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits, expected_logits(ids_));
}

TEST_F(GpufreeContract, FirstEnqueueAfterASwitchMustUseTheSwitchStream) {
  int stream_a = 0, stream_b = 0;
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, &stream_a, why_), Error::Ok) << why_.c_str();
  AlignedVector<float> logits;
  EXPECT_EQ(run_llm(*context_, ids_, &logits, why_, &stream_b), Error::Internal)
      << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "switch and enqueue on the same stream")) << why_.c_str();
  EXPECT_EQ(run_llm(*context_, ids_, &logits, why_, &stream_a), Error::Ok) << why_.c_str();
  EXPECT_EQ(run_llm(*context_, ids_, &logits, why_, &stream_b), Error::Ok)
      << "once the switch has run, any stream will do: " << why_.c_str();
}

TEST_F(GpufreeContract86, SwitchToAProfileAnotherLiveContextHoldsFailsAndChangesNothing) {
  std::unique_ptr<ExecutionContext> other = new_context(*engine_);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(other->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();

  EXPECT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "profile 1 is held by execution context #")) << why_.c_str();
  EXPECT_TRUE(has(why_.c_str(), "built for TensorRT 8.6 without PreviewFeature::kPROFILE_SHARING_0806")) << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kSetOptimizationProfile, why_.c_str());
  EXPECT_EQ(context_->optimization_profile(), kDecode);
  Shape ids;
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(ids, make_shape({1, 1}));
}

TEST_F(GpufreeContract86, AContextCreatedWhileAnotherHoldsProfileZeroStartsWithoutAProfile) {
  // context_ took profile 0 at creation; `other` gets none (TensorRT 8.6: -1, "Profile index must be set
  // explicitly"), cannot take profile 0, and runs nothing until it chooses a free profile.
  std::unique_ptr<ExecutionContext> other = new_context(*engine_);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->optimization_profile(), -1);
  AlignedVector<int64_t> one = {4};
  AlignedVector<float> logits;
  EXPECT_EQ(run_llm(*other, one, &logits, why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "the context has no optimization profile")) << why_.c_str();
  expect_refusal_traced(label_, TraceKind::kSetInputShape, why_.c_str());
  EXPECT_EQ(other->set_optimization_profile(kDecode, nullptr, why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "profile 0 is held by execution context #")) << why_.c_str();
  ASSERT_EQ(other->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  AlignedVector<int64_t> prompt = {1, 2, 3};
  EXPECT_EQ(run_llm(*other, prompt, &logits, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(run_llm(*context_, one, &logits, why_), Error::Ok) << why_.c_str();
}

TEST_F(GpufreeContract86, DestroyingAContextFreesItsProfile) {
  std::unique_ptr<ExecutionContext> other = new_context(*engine_);
  ASSERT_NE(other, nullptr);
  context_.reset();
  // Created while context_ held profile 0, `other` has none: it must choose one, and profile 0 is free now.
  ASSERT_EQ(other->set_optimization_profile(kDecode, nullptr, why_), Error::Ok) << why_.c_str();
  AlignedVector<int64_t> one = {4};
  AlignedVector<float> logits;
  EXPECT_EQ(run_llm(*other, one, &logits, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits, expected_logits(one));
}

// TensorRT 10 and later (the default), and 8.6 with kPROFILE_SHARING_0806: contexts share profiles. A second context
// starts on profile 0 while the first holds it, either may switch to a profile the other holds, and both run it.
TEST_F(GpufreeContract, ContextsShareProfilesByDefaultAndOnTensorRT86WithThePreviewFeature) {
  for (int build = 0; build < 2; ++build) {
    Builder b = llm_builder(label_);
    if (build == 1) b.set_tensorrt_version(TensorRTVersion::k8_6).set_preview_feature(PreviewFeature::kPROFILE_SHARING_0806, true);
    std::unique_ptr<Engine> engine = load(build_or_fail(b));
    ASSERT_NE(engine, nullptr);
    EXPECT_TRUE(engine->profiles_shared_across_contexts()) << "build " << build;
    std::unique_ptr<ExecutionContext> first = new_context(*engine), second = new_context(*engine);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(second->optimization_profile(), kDecode) << "build " << build;
    AlignedVector<int64_t> one = {4}, prompt = {1, 2, 3};
    AlignedVector<float> a, c;
    ASSERT_EQ(run_llm(*first, one, &a, why_), Error::Ok) << why_.c_str();
    ASSERT_EQ(run_llm(*second, one, &c, why_), Error::Ok) << why_.c_str();
    EXPECT_EQ(a, expected_logits(one));
    EXPECT_EQ(c, expected_logits(one));
    ASSERT_EQ(first->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
    ASSERT_EQ(second->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
    ASSERT_EQ(run_llm(*second, prompt, &c, why_), Error::Ok) << why_.c_str();
    ASSERT_EQ(run_llm(*first, prompt, &a, why_), Error::Ok) << why_.c_str();
    EXPECT_EQ(a, expected_logits(prompt));
    EXPECT_EQ(c, expected_logits(prompt));
  }
}

TEST_F(GpufreeContract86, ProfilesAreNotSharedWithoutThePreviewFeature) {
  EXPECT_FALSE(engine_->profiles_shared_across_contexts());
  Builder b = llm_builder(label_);
  b.set_preview_feature(PreviewFeature::kPROFILE_SHARING_0806, true);
  std::unique_ptr<Engine> ten = load(build_or_fail(b));
  ASSERT_NE(ten, nullptr);
  EXPECT_TRUE(ten->profiles_shared_across_contexts()) << "on TensorRT 10 the flag changes nothing: sharing is on";
}

// Contexts of one engine on one profile, each with its own scratch, may enqueue at the same time when profiles are
// shared (each session of an engine runs on its own thread).
TEST_F(GpufreeContract, TwoContextsOnOneSharedProfileMayEnqueueAtTheSameTime) {
  std::unique_ptr<ExecutionContext> other = new_context(*engine_);
  ASSERT_NE(other, nullptr);
  AlignedVector<int64_t> one = {4}, two = {2};
  AlignedVector<float> mine, theirs;
  Error competing = Error::InvalidState;
  std::string competing_error;
  int hook_calls = 0;
  set_enqueue_hook(label_, [&] {
    if (hook_calls++ > 0) return;  // only the outer enqueue starts the competing one
    std::thread t([&] {
      Diagnostic why;
      competing = run_llm(*other, two, &theirs, why);
      competing_error = why.c_str();
    });
    t.join();
  });
  ASSERT_EQ(run_llm(*context_, one, &mine, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(competing, Error::Ok) << competing_error;
  EXPECT_EQ(mine, expected_logits(one));
  EXPECT_EQ(theirs, expected_logits(two));
}

TEST_F(GpufreeContract, ContextPerProfileRunsBothRegimesWithOneSwitch) {
  std::unique_ptr<ExecutionContext> prefill = new_context(*engine_);
  ASSERT_NE(prefill, nullptr);
  ASSERT_EQ(prefill->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  AlignedVector<int64_t> prompt = {1, 2, 3, 4}, token = {5};
  AlignedVector<float> logits;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(run_llm(*prefill, prompt, &logits, why_), Error::Ok) << why_.c_str();
    EXPECT_EQ(logits, expected_logits(prompt));
    for (int step = 0; step < 4; ++step) {
      ASSERT_EQ(run_llm(*context_, token, &logits, why_), Error::Ok) << why_.c_str();
      EXPECT_EQ(logits, expected_logits(token));
    }
  }
  EXPECT_EQ(count_switches(label_), 1);
  EXPECT_EQ(count_enqueues(label_), 15);
  EXPECT_EQ(last_enqueue_profile(label_), kDecode);
}

TEST_F(GpufreeContract, EnqueueWhileAnotherEnqueueOnTheSameContextIsInProgressFails) {
  Error competing = Error::Ok;
  std::string competing_error;
  int hook_calls = 0;
  set_enqueue_hook(label_, [&] {
    if (hook_calls++ > 0) return;
    // Another thread enqueues the very context whose enqueue is in progress, with its own Diagnostic.
    std::thread([&] {
      Diagnostic why;
      competing = context_->enqueue(nullptr, why);
      competing_error = why.c_str();
    }).join();
  });
  AlignedVector<float> logits;
  AlignedVector<int64_t> one = {2};
  EXPECT_EQ(run_llm(*context_, one, &logits, why_), Error::Ok) << why_.c_str();
  set_enqueue_hook(label_, {});
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(logits, expected_logits(one));
  EXPECT_EQ(competing, Error::Internal) << "TensorRT reports kINVALID_STATE";
  EXPECT_TRUE(has(competing_error, "enqueueV3 under profile 0 failed: ")) << competing_error;
  EXPECT_TRUE(has(competing_error, "another enqueue on this context is still in progress")) << competing_error;
  EXPECT_EQ(trace_counters(label_).failed_enqueues, 1) << dump(label_);
  EXPECT_EQ(count_enqueues(label_), 1);
}

TEST_F(GpufreeContract, DestroyingTheEngineBeforeItsContextLeavesTheContextUsable) {
  // The adapter's contexts share ownership of the NvInfer engine, so TensorRT's order (contexts before their
  // engine) holds whatever order the caller destroys the adapter's objects in.
  engine_.reset();
  EXPECT_TRUE(events_of(label_, TraceKind::kDestroyEngine).empty()) << "the NvInfer engine must still be alive";
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, nullptr, why_), Error::Ok) << why_.c_str();
  AlignedVector<float> logits;
  ASSERT_EQ(run_llm(*context_, ids_, &logits, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(logits, expected_logits(ids_));
  Shape shape;
  ASSERT_EQ(context_->tensor_shape(1, &shape, why_), Error::Ok) << why_.c_str();
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
