// Each op's numerics on small inputs with hand-computed results, and output
// shapes that follow the input shapes.

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include <cmath>
#include <cstring>

#include "gpufree_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

// Runs a one-profile engine with fully static IO: binds `inputs` then `outputs` in IO order (each 256-byte
// aligned, as TensorRT requires of IO addresses).
void run_static(const Builder& b, std::vector<void*> inputs, std::vector<void*> outputs) {
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  int32_t io = 0;
  for (void* p : inputs) {
    ASSERT_EQ(context->set_input_shape(io, engine->io_tensor(io).shape, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_tensor_address(io++, p, why), Error::Ok) << why.c_str();
  }
  for (void* p : outputs) ASSERT_EQ(context->set_tensor_address(io++, p, why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
}

TEST(GpufreeOps, EmbeddingLooksUpTheRowOfEachId) {
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

TEST(GpufreeOps, EmbeddingAcceptsInt32Ids) {
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

// TensorRT's gather stores zeros for an index outside the table (seen on TensorRT 8.6: tests/contract); the
// GPU-free embedding does the same instead of failing the enqueue.
TEST(GpufreeOps, EmbeddingIdsOutsideTheVocabularyGatherZeroRows) {
  Builder b(test_label());
  b.add_input("ids", DataType::kInt64, make_shape({4}))
      .add_output("rows", DataType::kFloat32, make_shape({4, 2}))
      .add_constant("table", make_shape({3, 2}), {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f})
      .embedding("ids", "table", "rows");
  alignas(256) int64_t ids[] = {2, 3, -1, 0};
  alignas(256) float rows[8];
  std::fill(std::begin(rows), std::end(rows), -7.0f);
  run_static(b, {ids}, {rows});
  const float expected[] = {5.0f, 6.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 2.0f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rows[i], expected[i]) << i;
}

TEST(GpufreeOps, AddSumsTwoTensorsOfOneShape) {
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

TEST(GpufreeOps, AddBroadcastsAConstantBiasOverTheLastDim) {
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

TEST(GpufreeOps, AddOfShapesThatDisagreeAtRuntimeFailsTheEnqueue) {
  Builder b(test_label());
  b.add_input("a", DataType::kFloat32, make_shape({-1}))
      .add_input("b", DataType::kFloat32, make_shape({-1}))
      .add_output("y", DataType::kFloat32, make_shape({-1}));
  const int32_t p = b.add_profile();
  b.set_profile_shape(p, "a", make_shape({1}), make_shape({2}), make_shape({4}))
      .set_profile_shape(p, "b", make_shape({1}), make_shape({2}), make_shape({4}))
      .add("a", "b", "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  alignas(256) float a[4] = {};
  alignas(256) float c[4] = {};
  alignas(256) float y[4] = {};
  Diagnostic why;
  ASSERT_EQ(context->set_input_shape(0, make_shape({2}), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_input_shape(1, make_shape({3}), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(0, a, why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(1, c, why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(2, y, why), Error::Ok) << why.c_str();
  Shape out;
  EXPECT_EQ(context->tensor_shape(2, &out, why), Error::Internal);
  EXPECT_TRUE(has(why.c_str(), "getTensorShape('y') returned rank -1: ")) << why.c_str();
  EXPECT_TRUE(has(why.c_str(), "operands 'a' [2] and 'b' [3] must have the same shape")) << why.c_str();
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why.c_str(), "operands 'a' [2] and 'b' [3] must have the same shape")) << why.c_str();
}

TEST(GpufreeOps, ScaleMultipliesByTheConstantFactor) {
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

TEST(GpufreeOps, MatMulMultipliesEveryRowByTheConstantWeight) {
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

TEST(GpufreeOps, IdentityCopiesEveryDtypeBitForBit) {
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

TEST(GpufreeOps, LlmShapedChainComputesTheExpectedLogits) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  AlignedVector<int64_t> ids = {0, 3, 5, 1};
  AlignedVector<float> logits;
  ASSERT_EQ(run_llm(*context, ids, &logits, why), Error::Ok) << why.c_str();
  const AlignedVector<float> expected = expected_logits(ids);
  ASSERT_EQ(logits.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(logits[i], expected[i]) << i;
}

TEST(GpufreeOps, OutputShapesFollowTheInputShapes) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Shape logits;
  Diagnostic why;
  ASSERT_EQ(context->set_input_shape(0, make_shape({1, 1}), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->tensor_shape(1, &logits, why), Error::Ok) << why.c_str();
  EXPECT_EQ(logits, make_shape({1, 1, 3}));

  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  for (int64_t s : {2, 5, 8}) {
    ASSERT_EQ(context->set_input_shape(0, make_shape({int64_t{1}, s}), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->tensor_shape(1, &logits, why), Error::Ok) << why.c_str();
    EXPECT_EQ(logits, make_shape({int64_t{1}, s, int64_t{3}}));
    Shape ids;
    ASSERT_EQ(context->tensor_shape(0, &ids, why), Error::Ok) << why.c_str();
    EXPECT_EQ(ids, make_shape({int64_t{1}, s}));
  }
}

TEST(GpufreeOps, OutputsAreWrittenForTheCurrentShapeOnly) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  AlignedVector<int64_t> ids = {4, 2};
  AlignedVector<float> logits(kMaxPrefill * kLogits, -99.0f);
  ASSERT_EQ(context->set_input_shape(0, make_shape({1, 2}), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(0, ids.data(), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(1, logits.data(), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
  const AlignedVector<float> expected = expected_logits(ids);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(logits[i], expected[i]) << i;
  for (size_t i = 2 * kLogits; i < logits.size(); ++i) EXPECT_EQ(logits[i], -99.0f) << i;
}


// ---- kv_cache_update (TensorRT's IKVCacheUpdateLayer) and causal_attention ----

// cache [2, 4, 2] <- update [2, 2, 2] at rows idx[b], idx[b] + 1: IO cache, update, idx, cache_out.
Builder kv_cache_builder(const std::string& label, DataType index_type) {
  Builder b(label);
  b.add_input("cache", DataType::kFloat32, make_shape({2, 4, 2}))
      .add_input("update", DataType::kFloat32, make_shape({2, 2, 2}))
      .add_input("idx", index_type, make_shape({2}))
      .add_output("cache_out", DataType::kFloat32, make_shape({2, 4, 2}))
      .kv_cache_update("cache", "update", "idx", "cache_out");
  return b;
}

// Every cache element distinct (100 + its flat index), every update element too (-(1 + its flat index)).
void fill_kv(float* cache, float* update) {
  for (int i = 0; i < 16; ++i) cache[i] = static_cast<float>(100 + i);
  for (int i = 0; i < 8; ++i) update[i] = -static_cast<float>(1 + i);
}

// Binds `pointers` in IO order on a new context of a static engine (shapes as declared); the caller enqueues.
std::unique_ptr<ExecutionContext> bind_static(Engine& engine, const std::vector<void*>& pointers) {
  std::unique_ptr<ExecutionContext> context = new_context(engine);
  if (context == nullptr) return nullptr;
  Diagnostic why;
  for (int32_t io = 0; io < static_cast<int32_t>(pointers.size()); ++io) {
    if (engine.io_tensor(io).is_input) {
      EXPECT_EQ(context->set_input_shape(io, engine.io_tensor(io).shape, why), Error::Ok) << why.c_str();
    }
    EXPECT_EQ(context->set_tensor_address(io, pointers[static_cast<size_t>(io)], why), Error::Ok) << why.c_str();
  }
  return context;
}

template <typename Index>
void expect_rows_land_at_the_write_index_in_place(DataType index_type) {
  alignas(256) float cache[16];
  alignas(256) float update[8];
  alignas(256) Index idx[2] = {1, 2};
  fill_kv(cache, update);
  // The output is bound to the cache's own memory, as TensorRT requires of a KV-cache update.
  run_static(kv_cache_builder(test_label(), index_type), {cache, update, idx}, {cache});
  // Batch 0 (rows of 2 floats at 0, 2, 4, 6): rows 1 and 2 become update rows 0 and 1; rows 0 and 3 keep theirs.
  // Batch 1 (at 8, 10, 12, 14): rows 2 and 3 become update rows 2 and 3.
  const float expected[16] = {100, 101, -1, -2, -3, -4, 106, 107, 108, 109, 110, 111, -5, -6, -7, -8};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(cache[i], expected[i]) << i;
}

TEST(GpufreeOps, KvCacheUpdateWritesTheUpdateAtEachBatchsWriteIndexInPlaceWithInt64Indices) {
  expect_rows_land_at_the_write_index_in_place<int64_t>(DataType::kInt64);
}

TEST(GpufreeOps, KvCacheUpdateWritesTheUpdateAtEachBatchsWriteIndexInPlaceWithInt32Indices) {
  expect_rows_land_at_the_write_index_in_place<int32_t>(DataType::kInt32);
}

TEST(GpufreeOps, KvCacheUpdateAtTheLastRowsAndAtRowZeroFillsTheEnds) {
  alignas(256) float cache[16];
  alignas(256) float update[8];
  alignas(256) int64_t idx[2] = {2, 0};  // batch 0: rows 2..3 (the last two), batch 1: rows 0..1
  fill_kv(cache, update);
  run_static(kv_cache_builder(test_label(), DataType::kInt64), {cache, update, idx}, {cache});
  const float expected[16] = {100, 101, 102, 103, -1, -2, -3, -4, -5, -6, -7, -8, 112, 113, 114, 115};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(cache[i], expected[i]) << i;
}

TEST(GpufreeOps, KvCacheUpdateRangePastTheCacheFailsTheEnqueueNamingItAndWritesNothing) {
  std::unique_ptr<Engine> engine = load(build_or_fail(kv_cache_builder(test_label(), DataType::kInt64)));
  ASSERT_NE(engine, nullptr);
  alignas(256) float cache[16];
  alignas(256) float update[8];
  alignas(256) int64_t idx[2] = {0, 3};  // batch 1: rows 3..4 of a 4-row cache
  fill_kv(cache, update);
  std::unique_ptr<ExecutionContext> context = bind_static(*engine, {cache, update, idx, cache});
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  EXPECT_EQ(context->enqueue(nullptr, why), Error::InvalidArgument) << "the caller's data: " << why.c_str();
  const std::string error = why.c_str();
  EXPECT_TRUE(has(error, "kv_cache_update of 'cache'")) << error;
  EXPECT_TRUE(has(error, "write index 3 of batch 1 in 'idx' puts 2 rows outside the cache's 4")) << error;
  for (int i = 0; i < 16; ++i) EXPECT_EQ(cache[i], static_cast<float>(100 + i)) << "batch 0 was written too: " << i;

  idx[0] = -1;
  idx[1] = 0;
  EXPECT_EQ(context->enqueue(nullptr, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "write index -1 of batch 0")) << why.c_str();

  idx[0] = 2;
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Ok) << "a failed enqueue leaves the context usable: " << why.c_str();
  EXPECT_EQ(cache[4], -1.0f);
}

TEST(GpufreeOps, KvCacheUpdateWithItsOutputBoundElsewhereThanTheCacheIsRefusedByEnqueue) {
  std::unique_ptr<Engine> engine = load(build_or_fail(kv_cache_builder(test_label(), DataType::kInt64)));
  ASSERT_NE(engine, nullptr);
  alignas(256) float cache[16];
  alignas(256) float update[8];
  alignas(256) int64_t idx[2] = {0, 0};
  alignas(256) float elsewhere[16] = {};
  fill_kv(cache, update);
  std::unique_ptr<ExecutionContext> context = bind_static(*engine, {cache, update, idx, elsewhere});
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  const std::string error = why.c_str();
  EXPECT_TRUE(has(error, "output 'cache_out' is a KV-cache update of input 'cache'")) << error;
  EXPECT_TRUE(has(error, "must be bound to the same address")) << error;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(cache[i], static_cast<float>(100 + i)) << i;
    EXPECT_EQ(elsewhere[i], 0.0f) << i;
  }
  ASSERT_EQ(context->set_tensor_address(3, cache, why), Error::Ok) << why.c_str();
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
  EXPECT_EQ(cache[0], -1.0f);
}

TEST(GpufreeOps, TheSeamReportsEachKvCacheOutputsAliasedInput) {
  // getAliasedInputTensor through the adapter: engine::TensorDesc::aliased_input is the cache's IO index.
  Builder b(test_label());
  b.add_input("pos", DataType::kInt32, make_shape({1}))
      .add_input("k", DataType::kFloat32, make_shape({1, 4, 2}))
      .add_input("v", DataType::kFloat32, make_shape({1, 4, 2}))
      .add_input("x", DataType::kFloat32, make_shape({1, 1, 2}))
      .add_output("y", DataType::kFloat32, make_shape({1, 1, 2}))
      .add_output("v_out", DataType::kFloat32, make_shape({1, 4, 2}))
      .add_output("k_out", DataType::kFloat32, make_shape({1, 4, 2}))
      .kv_cache_update("k", "x", "pos", "k_out")
      .kv_cache_update("v", "x", "pos", "v_out")
      .causal_attention("x", "k_out", "v_out", "pos", 1.0f, "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->num_io_tensors(), 7);
  EXPECT_EQ(engine->io_tensor(6).name, "k_out");
  EXPECT_EQ(engine->io_tensor(6).aliased_input, 1);
  EXPECT_EQ(engine->io_tensor(5).name, "v_out");
  EXPECT_EQ(engine->io_tensor(5).aliased_input, 2);
  EXPECT_EQ(engine->io_tensor(4).aliased_input, -1) << "an ordinary output aliases nothing";
  for (int32_t i = 0; i < 4; ++i) EXPECT_EQ(engine->io_tensor(i).aliased_input, -1) << engine->io_tensor(i).name;
}

TEST(GpufreeOps, LlmShapedEngineWithoutAKvCacheReportsNoAlias) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  ASSERT_NE(engine, nullptr);
  for (int32_t i = 0; i < engine->num_io_tensors(); ++i) EXPECT_EQ(engine->io_tensor(i).aliased_input, -1);
}

// q [2, 2, 1] at positions pos [2] over k [2, 3, 1], v [2, 3, 2], scale 2 -> out [2, 2, 2].
Builder attention_builder(const std::string& label, DataType position_type) {
  Builder b(label);
  b.add_input("q", DataType::kFloat32, make_shape({2, 2, 1}))
      .add_input("k", DataType::kFloat32, make_shape({2, 3, 1}))
      .add_input("v", DataType::kFloat32, make_shape({2, 3, 2}))
      .add_input("pos", position_type, make_shape({2}))
      .add_output("out", DataType::kFloat32, make_shape({2, 2, 2}))
      .causal_attention("q", "k", "v", "pos", 2.0f, "out");
  return b;
}

template <typename Position>
void expect_hand_computed_attention(DataType position_type) {
  const float half_ln3 = 0.5f * std::log(3.0f);  // scale 2 turns q . k = ln(3) / 2 into a score of ln 3
  alignas(256) float q[4] = {1, 1, 1, 1};
  alignas(256) float k[6] = {0, half_ln3, half_ln3, 0, half_ln3, half_ln3};
  alignas(256) float v[12] = {1, 0, 0, 1, 10, 10,   // batch 0: keys 0, 1, 2
                              1, 0, 0, 1, 10, 10};  // batch 1
  alignas(256) Position pos[2] = {1, 0};
  alignas(256) float out[8] = {};
  run_static(attention_builder(test_label(), position_type), {q, k, v, pos}, {out});
  // Batch 0 (position 1): query 0 sees keys 0..1, scores [0, ln 3] -> weights [1/4, 3/4]; key 2 (value 10) is
  // masked. Query 1 sees keys 0..2, scores [0, ln 3, ln 3] -> weights [1/7, 3/7, 3/7].
  // Batch 1 (position 0): query 0 sees key 0 only; query 1 sees keys 0..1 -> [1/4, 3/4].
  const float expected[8] = {0.25f, 0.75f, 31.0f / 7.0f, 33.0f / 7.0f, 1.0f, 0.0f, 0.25f, 0.75f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(out[i], expected[i], 1e-5f) << i;
}

TEST(GpufreeOps, CausalAttentionMatchesAHandComputedCaseWithInt64Positions) {
  expect_hand_computed_attention<int64_t>(DataType::kInt64);
}

TEST(GpufreeOps, CausalAttentionMatchesAHandComputedCaseWithInt32Positions) {
  expect_hand_computed_attention<int32_t>(DataType::kInt32);
}

TEST(GpufreeOps, CausalAttentionNeverReadsAKeyPastTheQuerysPosition) {
  // Both batches at position 0 with 2 queries: keys 0..1 are visible, key 2 and its value are NaN, so any weight
  // on it would make the output NaN.
  const float nan = std::nanf("");
  alignas(256) float q[4] = {1, -1, 0.5f, 2};
  alignas(256) float k[6] = {0.3f, -0.2f, nan, 0.7f, 0.2f, nan};
  alignas(256) float v[12] = {1, 2, 3, 4, nan, nan, 5, 6, 7, 8, nan, nan};
  alignas(256) int64_t pos[2] = {0, 0};
  alignas(256) float out[8] = {};
  run_static(attention_builder(test_label(), DataType::kInt64), {q, k, v, pos}, {out});
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(std::isnan(out[i])) << i;
  // A query that sees one key returns that key's value.
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f);
  EXPECT_FLOAT_EQ(out[4], 5.0f);
  EXPECT_FLOAT_EQ(out[5], 6.0f);
  // Batch 0's query 1 (q = -1) over keys 0.3, -0.2, scale 2: scores -0.6, 0.4 -> key 1 weighs e / (1 + e).
  const float w0 = std::exp(1.0f) / (1.0f + std::exp(1.0f));
  EXPECT_NEAR(out[2], (1.0f - w0) * 1.0f + w0 * 3.0f, 1e-5f);
  EXPECT_NEAR(out[3], (1.0f - w0) * 2.0f + w0 * 4.0f, 1e-5f);
  // Batch 1's query 1 (q = 2) over keys 0.7, 0.2: scores 2.8, 0.8 -> key 1 weighs 1 / (1 + e^2).
  const float w1 = 1.0f / (1.0f + std::exp(2.0f));
  EXPECT_NEAR(out[6], (1.0f - w1) * 5.0f + w1 * 7.0f, 1e-5f);
  EXPECT_NEAR(out[7], (1.0f - w1) * 6.0f + w1 * 8.0f, 1e-5f);
}

TEST(GpufreeOps, CausalAttentionPositionPastTheKeysFailsTheEnqueueNamingIt) {
  std::unique_ptr<Engine> engine = load(build_or_fail(attention_builder(test_label(), DataType::kInt64)));
  ASSERT_NE(engine, nullptr);
  alignas(256) float q[4] = {};
  alignas(256) float k[6] = {};
  alignas(256) float v[12] = {};
  alignas(256) int64_t pos[2] = {0, 2};  // batch 1: queries at positions 2 and 3 of 3 keys
  alignas(256) float out[8] = {};
  std::unique_ptr<ExecutionContext> context = bind_static(*engine, {q, k, v, pos, out});
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  EXPECT_EQ(context->enqueue(nullptr, why), Error::InvalidArgument) << "the caller's data: " << why.c_str();
  const std::string error = why.c_str();
  EXPECT_TRUE(has(error, "causal_attention -> 'out'")) << error;
  EXPECT_TRUE(has(error, "position 2 of batch 1 in 'pos' with 2 queries reaches past the 3 keys")) << error;

  pos[1] = -1;
  EXPECT_EQ(context->enqueue(nullptr, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "position -1 of batch 1")) << why.c_str();

  pos[1] = 1;
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
}

}  // namespace
}  // namespace etrt::gpufree::testing
