// Weight streaming through the adapter: what an engine built with streamable weights reports, the budget's
// range, and TensorRT's rule that the budget cannot move while a context exists.

#include <gtest/gtest.h>

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

// x [1, 4] -> x W, W a [4, 4] constant: 64 bytes of weights.
Builder weights_builder(const std::string& label, bool streaming) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, 4}))
      .add_output("y", DataType::kFloat32, make_shape({1, 4}))
      .add_constant("w", make_shape({4, 4}), std::vector<float>(16, 1.0f))
      .matmul("x", "w", "y")
      .enable_weight_streaming(streaming);
  return b;
}

TEST(WeightStreaming, StreamingEngineReportsItsWeightsAndStartsWithAllOfThemResident) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->streamable_weights_size(), 64);
  EXPECT_EQ(engine->weight_streaming_budget(), 64);
  EXPECT_EQ(engine->weight_streaming_automatic_budget(), 32);
  Diagnostic why;
  EXPECT_EQ(engine->set_weight_streaming_budget(0, why), Error::Ok) << why.c_str();
  EXPECT_EQ(engine->weight_streaming_budget(), 0);
}

TEST(WeightStreaming, BudgetOutsideZeroToTheStreamableSizeIsRefusedAndChangesNothing) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  Diagnostic why;
  EXPECT_EQ(engine->set_weight_streaming_budget(65, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(),
                  "setWeightStreamingBudgetV2(65) failed: setWeightStreamingBudgetV2(65): the "
                  "budget must be in [0, 64]"))
      << why.c_str();
  EXPECT_EQ(engine->set_weight_streaming_budget(-1, why), Error::InvalidArgument);
  EXPECT_EQ(engine->weight_streaming_budget(), 64);
}

TEST(WeightStreaming, BudgetCannotChangeWhileAContextExists) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  Diagnostic why;
  {
    std::unique_ptr<ExecutionContext> context = new_context(*engine);
    ASSERT_NE(context, nullptr);
    // The adapter reports every refused budget as InvalidArgument, this one included.
    EXPECT_EQ(engine->set_weight_streaming_budget(16, why), Error::InvalidArgument);
    EXPECT_TRUE(has(why.c_str(), "has 1 execution context(s); the budget can change only before the first"))
        << why.c_str();
  }
  EXPECT_EQ(engine->set_weight_streaming_budget(16, why), Error::Ok) << why.c_str();
}

TEST(WeightStreaming, EngineWithoutStreamableWeightsRefusesABudget) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), false)));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->streamable_weights_size(), 0);
  Diagnostic why;
  EXPECT_EQ(engine->set_weight_streaming_budget(0, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "was not built with weight streaming")) << why.c_str();
}

}  // namespace
}  // namespace etrt::gpufree::testing
