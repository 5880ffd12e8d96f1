// Each op's numerics on small inputs with hand-computed results, and output
// shapes that follow the input shapes.

#include <gtest/gtest.h>

#include <cstring>

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

// Runs a one-profile engine with fully static IO: binds `inputs` then `outputs` in IO order (each 256-byte
// aligned, as TensorRT requires of IO addresses).
void run_static(const Builder& b, std::vector<void*> inputs, std::vector<void*> outputs) {
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  ASSERT_NE(context, nullptr) << engine->last_error();
  int32_t io = 0;
  for (void* p : inputs) {
    ASSERT_TRUE(context->set_input_shape(io, engine->io_tensor(io).shape)) << context->last_error();
    ASSERT_TRUE(context->set_tensor_address(io++, p)) << context->last_error();
  }
  for (void* p : outputs) ASSERT_TRUE(context->set_tensor_address(io++, p)) << context->last_error();
  ASSERT_TRUE(context->enqueue(nullptr)) << context->last_error();
}

TEST(ReferenceOps, EmbeddingLooksUpTheRowOfEachId) {
  Builder b(test_label());
  b.add_input("ids", DataType::kInt64, make_shape({2, 2}))
      .add_output("y", DataType::kFloat32, make_shape({2, 2, 2}))
      .add_constant("table", make_shape({3, 2}), {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f})
      .embedding("ids", "table", "y");
  alignas(256) int64_t ids[] = {2, 0, 1, 2};
  alignas(256) float y[8] = {};
  run_static(b, {ids}, {y});
  const float expected[] = {2.0f, 2.5f, 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], expected[i]) << i;
}

TEST(ReferenceOps, EmbeddingAcceptsInt32Ids) {
  Builder b(test_label());
  b.add_input("ids", DataType::kInt32, make_shape({2}))
      .add_output("y", DataType::kFloat32, make_shape({2, 1}))
      .add_constant("table", make_shape({3, 1}), {7.0f, 8.0f, 9.0f})
      .embedding("ids", "table", "y");
  alignas(256) int32_t ids[] = {2, 1};
  alignas(256) float y[2] = {};
  run_static(b, {ids}, {y});
  EXPECT_FLOAT_EQ(y[0], 9.0f);
  EXPECT_FLOAT_EQ(y[1], 8.0f);
}

TEST(ReferenceOps, EmbeddingIdOutsideTheVocabularyFailsTheEnqueueNamingIt) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  ASSERT_TRUE(context->set_optimization_profile(kPrefill, nullptr));
  AlignedVector<int64_t> ids = {1, kVocab};
  AlignedVector<float> logits;
  EXPECT_FALSE(run_llm(*context, ids, &logits));
  EXPECT_TRUE(has(context->last_error(), "enqueueV3 under profile 1 failed: ")) << context->last_error();
  EXPECT_TRUE(has(context->last_error(), "id 6 at flat position 1 of 'ids' is outside the vocabulary [0, 6)"))
      << context->last_error();

  ids = {-1, 0};
  EXPECT_FALSE(run_llm(*context, ids, &logits));
  EXPECT_TRUE(has(context->last_error(), "id -1 at flat position 0")) << context->last_error();

  ids = {0, 5};
  EXPECT_TRUE(run_llm(*context, ids, &logits))
      << "a failed enqueue leaves the context usable: " << context->last_error();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(ReferenceOps, AddSumsTwoTensorsOfOneShape) {
  Builder b(test_label());
  b.add_input("a", DataType::kFloat32, make_shape({3}))
      .add_input("b", DataType::kFloat32, make_shape({3}))
      .add_output("y", DataType::kFloat32, make_shape({3}))
      .add("a", "b", "y");
  alignas(256) float a[] = {1.0f, 2.0f, 3.0f};
  alignas(256) float c[] = {0.5f, -2.0f, 10.0f};
  alignas(256) float y[3] = {};
  run_static(b, {a, c}, {y});
  EXPECT_FLOAT_EQ(y[0], 1.5f);
  EXPECT_FLOAT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[2], 13.0f);
}

TEST(ReferenceOps, AddBroadcastsAConstantBiasOverTheLastDim) {
  Builder b(test_label());
  b.add_input("a", DataType::kFloat32, make_shape({2, 3}))
      .add_output("y", DataType::kFloat32, make_shape({2, 3}))
      .add_constant("bias", make_shape({3}), {10.0f, 20.0f, 30.0f})
      .add("bias", "a", "y");  // the bias may come first
  alignas(256) float a[] = {1, 2, 3, 4, 5, 6};
  alignas(256) float y[6] = {};
  run_static(b, {a}, {y});
  const float expected[] = {11, 22, 33, 14, 25, 36};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], expected[i]) << i;
}

TEST(ReferenceOps, AddOfShapesThatDisagreeAtRuntimeFailsTheEnqueue) {
  Builder b(test_label());
  b.add_input("a", DataType::kFloat32, make_shape({-1}))
      .add_input("b", DataType::kFloat32, make_shape({-1}))
      .add_output("y", DataType::kFloat32, make_shape({-1}));
  const int32_t p = b.add_profile();
  b.set_profile_shape(p, "a", make_shape({1}), make_shape({2}), make_shape({4}))
      .set_profile_shape(p, "b", make_shape({1}), make_shape({2}), make_shape({4}))
      .add("a", "b", "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  alignas(256) float a[4] = {};
  alignas(256) float c[4] = {};
  alignas(256) float y[4] = {};
  ASSERT_TRUE(context->set_input_shape(0, make_shape({2})));
  ASSERT_TRUE(context->set_input_shape(1, make_shape({3})));
  ASSERT_TRUE(context->set_tensor_address(0, a) && context->set_tensor_address(1, c) &&
              context->set_tensor_address(2, y));
  Shape out;
  EXPECT_FALSE(context->tensor_shape(2, &out));
  EXPECT_TRUE(has(context->last_error(), "getTensorShape('y') returned rank -1: ")) << context->last_error();
  EXPECT_TRUE(has(context->last_error(), "operands 'a' [2] and 'b' [3] must have the same shape"))
      << context->last_error();
  EXPECT_FALSE(context->enqueue(nullptr));
  EXPECT_TRUE(has(context->last_error(), "operands 'a' [2] and 'b' [3] must have the same shape"))
      << context->last_error();
}

TEST(ReferenceOps, ScaleMultipliesByTheConstantFactor) {
  Builder b(test_label());
  b.add_input("a", DataType::kFloat32, make_shape({3}))
      .add_output("y", DataType::kFloat32, make_shape({3}))
      .scale("a", -0.5f, "y");
  alignas(256) float a[] = {2.0f, 0.0f, -8.0f};
  alignas(256) float y[3] = {};
  run_static(b, {a}, {y});
  EXPECT_FLOAT_EQ(y[0], -1.0f);
  EXPECT_FLOAT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[2], 4.0f);
}

TEST(ReferenceOps, MatMulMultipliesEveryRowByTheConstantWeight) {
  Builder b(test_label());
  b.add_input("a", DataType::kFloat32, make_shape({1, 2, 3}))
      .add_output("y", DataType::kFloat32, make_shape({1, 2, 2}))
      .add_constant("w", make_shape({3, 2}), {1, 2, 3, 4, 5, 6})
      .matmul("a", "w", "y");
  // [1 2 3] x w = [1+6+15, 2+8+18] = [22, 28]; [0 1 -1] x w = [3-5, 4-6] = [-2, -2]
  alignas(256) float a[] = {1, 2, 3, 0, 1, -1};
  alignas(256) float y[4] = {};
  run_static(b, {a}, {y});
  EXPECT_FLOAT_EQ(y[0], 22.0f);
  EXPECT_FLOAT_EQ(y[1], 28.0f);
  EXPECT_FLOAT_EQ(y[2], -2.0f);
  EXPECT_FLOAT_EQ(y[3], -2.0f);
}

TEST(ReferenceOps, IdentityCopiesEveryDtypeBitForBit) {
  const DataType kTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
                             DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,    DataType::kBool};
  for (DataType t : kTypes) {
    SCOPED_TRACE(to_string(t));
    Builder b(test_label());
    b.add_input("a", t, make_shape({5})).add_output("y", t, make_shape({5})).identity("a", "y");
    alignas(256) uint8_t a[40];
    alignas(256) uint8_t y[40] = {};
    for (int i = 0; i < 40; ++i) a[i] = static_cast<uint8_t>(i * 7 + 1);
    if (t == DataType::kBool)
      for (uint8_t& v : a) v &= 1;
    run_static(b, {a}, {y});
    const size_t n = 5 * element_size(t);
    EXPECT_EQ(std::memcmp(a, y, n), 0);
    for (size_t i = n; i < 40; ++i) EXPECT_EQ(y[i], 0) << "wrote past the tensor at byte " << i;
  }
}

TEST(ReferenceOps, LlmShapedChainComputesTheExpectedLogits) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  ASSERT_TRUE(context->set_optimization_profile(kPrefill, nullptr));
  AlignedVector<int64_t> ids = {0, 3, 5, 1};
  AlignedVector<float> logits;
  ASSERT_TRUE(run_llm(*context, ids, &logits)) << context->last_error();
  const AlignedVector<float> expected = expected_logits(ids);
  ASSERT_EQ(logits.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(logits[i], expected[i]) << i;
}

TEST(ReferenceOps, OutputShapesFollowTheInputShapes) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  Shape logits;
  ASSERT_TRUE(context->set_input_shape(0, make_shape({1, 1})));
  ASSERT_TRUE(context->tensor_shape(1, &logits));
  EXPECT_EQ(logits, make_shape({1, 1, 3}));

  ASSERT_TRUE(context->set_optimization_profile(kPrefill, nullptr));
  for (int64_t s : {2, 5, 8}) {
    ASSERT_TRUE(context->set_input_shape(0, make_shape({int64_t{1}, s})));
    ASSERT_TRUE(context->tensor_shape(1, &logits));
    EXPECT_EQ(logits, make_shape({int64_t{1}, s, int64_t{3}}));
    Shape ids;
    ASSERT_TRUE(context->tensor_shape(0, &ids));
    EXPECT_EQ(ids, make_shape({int64_t{1}, s}));
  }
}

TEST(ReferenceOps, OutputsAreWrittenForTheCurrentShapeOnly) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  ASSERT_TRUE(context->set_optimization_profile(kPrefill, nullptr));
  AlignedVector<int64_t> ids = {4, 2};
  AlignedVector<float> logits(kMaxPrefill * kLogits, -99.0f);
  ASSERT_TRUE(context->set_input_shape(0, make_shape({1, 2})));
  ASSERT_TRUE(context->set_tensor_address(0, ids.data()) && context->set_tensor_address(1, logits.data()));
  ASSERT_TRUE(context->enqueue(nullptr)) << context->last_error();
  const AlignedVector<float> expected = expected_logits(ids);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(logits[i], expected[i]) << i;
  for (size_t i = 2 * kLogits; i < logits.size(); ++i) EXPECT_EQ(logits[i], -99.0f) << i;
}

}  // namespace
}  // namespace etrt::gpufree::testing
