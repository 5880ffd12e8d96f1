// A bound context keeps what its engine context holds by itself (src/backend/execute/bound_context.h): every call that
// gives the context something drops what it no longer knows, so the executor never lowers a level by hand. These tests
// drive one BoundContext over a recording engine context and check which engine calls it makes, and what it then lets
// the next execution skip or repeat.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backend/device/device.h"
#include "backend/execute/bound_context.h"
#include "backend/execute/plan.h"

namespace etrt::backend {
namespace {

using Holds = BoundContext::Holds;

// An engine context that records the calls it gets, and refuses what a test tells it to.
class RecordingContext final : public engine::ExecutionContext {
 public:
  struct Calls {
    int switches = 0;
    std::vector<int32_t> shapes_set;  // the IO index of each set_input_shape, in order
    std::vector<int32_t> addresses_set;
    int memory_given = 0;
    int enqueues = 0;
  };

  RecordingContext(Calls* calls, const bool* refuse_enqueue, const int32_t* refuse_shape_of)
      : calls_(calls), refuse_enqueue_(refuse_enqueue), refuse_shape_of_(refuse_shape_of) {}

  int32_t optimization_profile() const override { return profile_; }
  Error set_optimization_profile(int32_t profile, engine::StreamHandle, Diagnostic&) override {
    ++calls_->switches;
    profile_ = profile;
    return Error::Ok;
  }
  Error set_input_shape(int32_t io_index, const Shape&, Diagnostic& why) override {
    calls_->shapes_set.push_back(io_index);
    if (io_index == *refuse_shape_of_) return fail(why, Error::InvalidArgument, "outside the profile");
    return Error::Ok;
  }
  Error tensor_shape(int32_t, Shape* out, Diagnostic&) const override {
    *out = Shape{1, {4}};
    return Error::Ok;
  }
  Error set_tensor_address(int32_t io_index, void*, Diagnostic&) override {
    calls_->addresses_set.push_back(io_index);
    return Error::Ok;
  }
  Error set_device_memory(void*, size_t, Diagnostic&) override {
    ++calls_->memory_given;
    return Error::Ok;
  }
  Error enqueue(engine::StreamHandle, Diagnostic& why) override {
    ++calls_->enqueues;
    if (*refuse_enqueue_) return fail(why, Error::InvalidArgument, "a token id outside the vocabulary");
    return Error::Ok;
  }

 private:
  Calls* calls_;
  const bool* refuse_enqueue_;
  const int32_t* refuse_shape_of_;
  int32_t profile_ = 0;
};

// Two inputs (IO 0 and 1) and one output (IO 2), as a plan binds them.
class BoundContextTest : public ::testing::Test {
 protected:
  BoundContextTest()
      : context_(0, std::make_unique<RecordingContext>(&calls_, &refuse_enqueue_, &refuse_shape_of_), 2, 1) {
    for (int32_t io : {0, 1}) {
      Argument input;
      input.engine_index = io;
      inputs_.push_back(input);
    }
  }

  // The steps an execution takes on the context before its enqueue, as the executor takes them.
  void configure(const std::vector<Shape>& shapes, void* in0, void* in1, void* out) {
    if (context_.input_shapes_differ(shapes.data(), shapes.size())) {
      size_t refused = 0;
      ASSERT_EQ(context_.set_input_shapes(shapes.data(), inputs_.data(), shapes.size(), &refused, why_), Error::Ok);
      ASSERT_EQ(context_.infer_output_shape(0, 2, why_), Error::Ok);
    }
    context_.hold_choice(request_, 0, profile::Choice{0, false});
    ASSERT_EQ(context_.set_address(0, 0, in0, why_), Error::Ok);
    ASSERT_EQ(context_.set_address(1, 1, in1, why_), Error::Ok);
    ASSERT_EQ(context_.set_address(2, 2, out, why_), Error::Ok);
  }
  Error enqueue() {
    DeviceState host;  // a host engine: the call goes straight to the context
    DeviceCall device(host, "test", why_);
    return context_.enqueue(device, /*graphs=*/nullptr, /*profile=*/0);
  }
  // One successful execution through the steps that a later call may repeat (two tensors passed).
  void run_repeatable(const std::vector<Shape>& shapes, void* in0, void* in1, void* out) {
    configure(shapes, in0, in1, out);
    ASSERT_EQ(enqueue(), Error::Ok);
    context_.remember_call(request_, 3, /*aliased_passed=*/true);
  }
  void clear() { calls_ = {}; }

  RecordingContext::Calls calls_;
  bool refuse_enqueue_ = false;
  int32_t refuse_shape_of_ = -1;
  BoundContext context_;
  std::vector<Argument> inputs_;
  ProfileRequest request_ = ProfileRequest::pinned(0);
  Diagnostic why_;
  const std::vector<Shape> shapes_ = {Shape{2, {1, 4}}, Shape{1, {3}}};
  alignas(256) float a_[64] = {}, b_[64] = {}, c_[64] = {};
};

TEST_F(BoundContextTest, ANewContextIsGivenEveryShapeAndAddress) {
  EXPECT_EQ(context_.holds(), Holds::kNothing);
  configure(shapes_, a_, b_, c_);
  EXPECT_EQ(calls_.shapes_set, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(calls_.addresses_set, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(context_.holds(), Holds::kShapes);
}

TEST_F(BoundContextTest, ASteadyExecutionGivesTheEngineNothingButTheEnqueue) {
  run_repeatable(shapes_, a_, b_, c_);
  clear();
  configure(shapes_, a_, b_, c_);
  ASSERT_EQ(enqueue(), Error::Ok);
  EXPECT_TRUE(calls_.shapes_set.empty());
  EXPECT_TRUE(calls_.addresses_set.empty());
  EXPECT_EQ(calls_.enqueues, 1);
  EXPECT_EQ(context_.holds(), Holds::kRan) << "the steps' own call is not the one remembered";
}

TEST_F(BoundContextTest, OnlyTheShapeThatChangedIsSetAgain) {
  configure(shapes_, a_, b_, c_);
  clear();
  configure({shapes_[0], Shape{1, {5}}}, a_, b_, c_);
  EXPECT_EQ(calls_.shapes_set, (std::vector<int32_t>{1}));
  EXPECT_TRUE(calls_.addresses_set.empty()) << "a new shape keeps the addresses the context holds";
}

TEST_F(BoundContextTest, AfterASwitchTheSameShapesAndAddressesAreSetAgain) {
  configure(shapes_, a_, b_, c_);
  ASSERT_EQ(context_.switch_profile(1, nullptr, why_), Error::Ok);
  EXPECT_EQ(context_.holds(), Holds::kNothing);
  clear();
  configure(shapes_, a_, b_, c_);
  EXPECT_EQ(calls_.shapes_set, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(calls_.addresses_set, (std::vector<int32_t>{0, 1, 2}));
}

TEST_F(BoundContextTest, ARefusedShapeMakesTheNextExecutionSetEveryShapeAgain) {
  configure(shapes_, a_, b_, c_);
  refuse_shape_of_ = 1;
  size_t refused = 0;
  const std::vector<Shape> wider = {Shape{2, {1, 8}}, Shape{1, {9}}};
  EXPECT_EQ(context_.set_input_shapes(wider.data(), inputs_.data(), 2, &refused, why_), Error::InvalidArgument);
  EXPECT_EQ(refused, 1u);
  EXPECT_LT(context_.holds(), Holds::kShapes);
  refuse_shape_of_ = -1;
  clear();
  configure(shapes_, a_, b_, c_);
  EXPECT_EQ(calls_.shapes_set, (std::vector<int32_t>{0, 1})) << "input 0 was set to [1,8] before the refusal";
}

TEST_F(BoundContextTest, AnAddressItHoldsIsNotSetAgainAndANewOneEndsTheRepeat) {
  run_repeatable(shapes_, a_, b_, c_);
  EXPECT_TRUE(context_.repeats(request_, 3));
  clear();
  ASSERT_EQ(context_.set_address(0, 0, a_, why_), Error::Ok);
  EXPECT_TRUE(calls_.addresses_set.empty());
  EXPECT_TRUE(context_.repeats(request_, 3));
  ASSERT_EQ(context_.set_address(0, 0, b_, why_), Error::Ok);
  EXPECT_EQ(calls_.addresses_set, (std::vector<int32_t>{0}));
  EXPECT_FALSE(context_.repeats(request_, 3));
  EXPECT_EQ(context_.holds(), Holds::kShapes) << "the shapes still hold";
}

TEST_F(BoundContextTest, NewScratchMemoryEndsTheRepeatButKeepsShapesAndAddresses) {
  run_repeatable(shapes_, a_, b_, c_);
  ASSERT_EQ(context_.set_device_memory(c_, sizeof(c_), why_), Error::Ok);
  EXPECT_FALSE(context_.repeats(request_, 3));
  EXPECT_EQ(context_.holds(), Holds::kShapes) << "no CUDA graph of the old memory is replayed";
  clear();
  configure(shapes_, a_, b_, c_);
  EXPECT_TRUE(calls_.shapes_set.empty());
  EXPECT_TRUE(calls_.addresses_set.empty());
}

TEST_F(BoundContextTest, ARepeatIsOnlyForTheSameRequestAndArgumentCount) {
  run_repeatable(shapes_, a_, b_, c_);
  EXPECT_TRUE(context_.repeats(request_, 3));
  EXPECT_FALSE(context_.repeats(ProfileRequest::pinned(1), 3));
  EXPECT_FALSE(context_.repeats(request_, 2));
}

TEST_F(BoundContextTest, AnExecutionThroughTheStepsEndsTheRepeatOfTheOneBefore) {
  run_repeatable(shapes_, a_, b_, c_);
  context_.hold_choice(request_, 0, profile::Choice{0, false});
  EXPECT_FALSE(context_.repeats(request_, 3));
  EXPECT_EQ(context_.holds(), Holds::kRan) << "it may still replay the graph of the unchanged configuration";
}

TEST_F(BoundContextTest, AFailedEnqueueLeavesTheNextCallToTakeTheStepsAndEnqueuePlainly) {
  run_repeatable(shapes_, a_, b_, c_);
  refuse_enqueue_ = true;
  EXPECT_EQ(enqueue(), Error::InvalidArgument);
  EXPECT_FALSE(context_.repeats(request_, 3));
  EXPECT_EQ(context_.holds(), Holds::kShapes);
  refuse_enqueue_ = false;
  ASSERT_EQ(enqueue(), Error::Ok);
  EXPECT_EQ(context_.holds(), Holds::kRan);
}

TEST_F(BoundContextTest, ARepeatThatFailsAfterItsEnqueueIsNotRepeatedAgain) {
  run_repeatable(shapes_, a_, b_, c_);
  ASSERT_EQ(enqueue(), Error::Ok);
  EXPECT_TRUE(context_.repeats(request_, 3)) << "a successful repeat stays repeatable";
  context_.repeat_failed();
  EXPECT_FALSE(context_.repeats(request_, 3));
  EXPECT_EQ(context_.holds(), Holds::kShapes);
}

TEST_F(BoundContextTest, TheChoiceIsReusedOnlyForTheSameRequestActiveProfileAndShapes) {
  configure(shapes_, a_, b_, c_);
  profile::Choice choice{-1, false};
  EXPECT_TRUE(context_.holds_choice_for(request_, 0, shapes_.data(), 2, &choice));
  EXPECT_EQ(choice.profile, 0);
  EXPECT_FALSE(
      context_.holds_choice_for(ProfileRequest::automatic(AutoPolicy::kFirstFit), 0, shapes_.data(), 2, &choice));
  EXPECT_FALSE(context_.holds_choice_for(request_, 1, shapes_.data(), 2, &choice));
  const std::vector<Shape> other = {shapes_[0], Shape{1, {7}}};
  EXPECT_FALSE(context_.holds_choice_for(request_, 0, other.data(), 2, &choice));
  ASSERT_EQ(context_.switch_profile(1, nullptr, why_), Error::Ok);
  EXPECT_FALSE(context_.holds_choice_for(request_, 0, shapes_.data(), 2, &choice)) << "a switch forgets it";
}

}  // namespace
}  // namespace etrt::backend
