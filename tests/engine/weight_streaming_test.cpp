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
  EXPECT_TRUE(engine->set_weight_streaming_budget(0)) << engine->last_error();
  EXPECT_EQ(engine->weight_streaming_budget(), 0);
}

TEST(WeightStreaming, BudgetOutsideZeroToTheStreamableSizeIsRefusedAndChangesNothing) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  EXPECT_FALSE(engine->set_weight_streaming_budget(65));
  EXPECT_TRUE(has(engine->last_error(), "setWeightStreamingBudgetV2(65) failed: setWeightStreamingBudgetV2(65): the "
                                        "budget must be in [0, 64]"))
      << engine->last_error();
  EXPECT_FALSE(engine->set_weight_streaming_budget(-1));
  EXPECT_EQ(engine->weight_streaming_budget(), 64);
}

TEST(WeightStreaming, BudgetCannotChangeWhileAContextExists) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  {
    std::unique_ptr<ExecutionContext> context = engine->create_context({});
    ASSERT_NE(context, nullptr) << engine->last_error();
    EXPECT_FALSE(engine->set_weight_streaming_budget(16));
    EXPECT_TRUE(has(engine->last_error(), "has 1 execution context(s); the budget can change only before the first"))
        << engine->last_error();
  }
  EXPECT_TRUE(engine->set_weight_streaming_budget(16)) << engine->last_error();
}

TEST(WeightStreaming, EngineWithoutStreamableWeightsRefusesABudget) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), false)));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->streamable_weights_size(), 0);
  EXPECT_FALSE(engine->set_weight_streaming_budget(0));
  EXPECT_TRUE(has(engine->last_error(), "was not built with weight streaming")) << engine->last_error();
}

}  // namespace
}  // namespace etrt::gpufree::testing
