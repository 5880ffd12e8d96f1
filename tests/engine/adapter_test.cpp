// The TensorRT adapter over the GPU-free NvInfer implementation: engine bytes
// the builder made load as a host engine described exactly as the builder
// declared it; malformed bytes and IO tensors etrt cannot bind are refused at
// load with the reason.

#include "engine/tensorrt/tensorrt_engine.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "gpufree_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

// The adapter's code for `data`, with its engine in `*out` on success.
Error deserialize(const void* data, size_t size, std::unique_ptr<Engine>* out, Diagnostic& why) {
  return engine::tensorrt::deserialize(data, size, 0, out, why);
}

TEST(AdapterLoad, BuilderBytesLoadAsAHostEngineDescribedAsDeclared) {
  Builder b = llm_builder(test_label());
  b.set_device_memory_size(5000);
  const std::vector<uint8_t> bytes = build_or_fail(b);
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  ASSERT_EQ(deserialize(bytes.data(), bytes.size(), &engine, why), Error::Ok) << why.c_str();
  ASSERT_NE(engine, nullptr);

  EXPECT_EQ(engine->memory_kind(), engine::MemoryKind::kHost);
  ASSERT_EQ(engine->num_io_tensors(), 2);
  const engine::TensorDesc& ids = engine->io_tensor(0);
  EXPECT_EQ(ids.name, "ids");
  EXPECT_TRUE(ids.is_input);
  EXPECT_EQ(ids.dtype, engine::DataType::kInt64);
  EXPECT_EQ(ids.shape, make_shape({1, -1}));
  EXPECT_FALSE(ids.is_shape_tensor);
  const engine::TensorDesc& logits = engine->io_tensor(1);
  EXPECT_EQ(logits.name, "logits");
  EXPECT_FALSE(logits.is_input);
  EXPECT_EQ(logits.dtype, engine::DataType::kFloat32);
  EXPECT_EQ(logits.shape, make_shape({1, -1, 3}));

  ASSERT_EQ(engine->num_profiles(), 2);
  Shape min, opt, max;
  ASSERT_EQ(engine->profile_shape(kDecode, 0, &min, &opt, &max, why), Error::Ok) << why.c_str();
  EXPECT_EQ(min, make_shape({1, 1}));
  EXPECT_EQ(opt, make_shape({1, 1}));
  EXPECT_EQ(max, make_shape({1, 1}));
  ASSERT_EQ(engine->profile_shape(kPrefill, 0, &min, &opt, &max, why), Error::Ok) << why.c_str();
  EXPECT_EQ(min, make_shape({1, 2}));
  EXPECT_EQ(opt, make_shape({1, 4}));
  EXPECT_EQ(max, make_shape({1, 8}));
  EXPECT_EQ(engine->device_memory_size(), 5000u);
}

TEST(AdapterLoad, ProfileShapeRefusesOutputsAndProfilesTheEngineLacks) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  ASSERT_NE(engine, nullptr);
  Shape min;
  Diagnostic why;
  EXPECT_EQ(engine->profile_shape(kDecode, 1, &min, nullptr, nullptr, why), Error::InvalidArgument)
      << "outputs have no profile bounds";
  EXPECT_TRUE(has(why.c_str(), "IO index 1 is not an input")) << why.c_str();
  EXPECT_EQ(engine->profile_shape(2, 0, &min, nullptr, nullptr, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "profile 2 does not exist; the engine has 2")) << why.c_str();
  EXPECT_EQ(engine->profile_shape(kDecode, 7, &min, nullptr, nullptr, why), Error::InvalidArgument);
}

TEST(AdapterLoad, TheBytesMayBeFreedOnceLoaded) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  ASSERT_EQ(deserialize(bytes.data(), bytes.size(), &engine, why), Error::Ok) << why.c_str();
  std::fill(bytes.begin(), bytes.end(), uint8_t{0xAB});
  bytes.clear();
  bytes.shrink_to_fit();
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  ASSERT_EQ(run_llm(*context, ids, &logits, why), Error::Ok) << why.c_str();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(AdapterLoad, CudaModeBytesLoadAnywhereAsADeviceEngine) {
  Builder b = llm_builder(test_label());
  b.set_memory_kind(MemoryKind::kDevice);
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->memory_kind(), engine::MemoryKind::kDevice);
  EXPECT_EQ(engine->num_profiles(), 2);
}

TEST(AdapterLoad, TheGpuFreeImplementationDeserializesWithoutADevice) {
  EXPECT_FALSE(engine::tensorrt::deserializes_on_device());
}

TEST(AdapterLoad, BadMagicIsRefusedNamingTheMagicAndTheFix) {
  const uint8_t plan[] = {0x66, 0x74, 0x72, 0x74, 0x00, 0x01, 0x02, 0x03};
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  EXPECT_EQ(deserialize(plan, sizeof(plan), &engine, why), Error::InvalidArgument);
  EXPECT_EQ(engine, nullptr) << "the engine is set on success only";
  EXPECT_TRUE(has(why.c_str(), "TensorRT could not deserialize the engine (8 bytes)")) << why.c_str();
  EXPECT_TRUE(has(why.c_str(), "not an engine of the GPU-free NvInfer implementation")) << why.c_str();
  EXPECT_TRUE(has(why.c_str(), "magic 'ETRF'")) << why.c_str();
  EXPECT_TRUE(has(why.c_str(), "-DTENSORRT_ROOT=")) << why.c_str();
}

TEST(AdapterLoad, TruncatedBytesAreRefusedAsTruncated) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  std::vector<uint8_t> header_only(bytes.begin(), bytes.begin() + 10);
  std::string error = load_error(header_only, Error::InvalidArgument);
  EXPECT_TRUE(has(error, "truncated: 10 bytes, the header alone is 24")) << error;
  bytes.resize(bytes.size() / 2);
  error = load_error(bytes, Error::InvalidArgument);
  EXPECT_TRUE(has(error, "the header promises a")) << error;
  EXPECT_TRUE(has(error, "truncated or padded blob")) << error;
}

TEST(AdapterLoad, NullAndEmptyBytesAreRefused) {
  std::unique_ptr<Engine> engine;
  Diagnostic why;
  EXPECT_EQ(deserialize(nullptr, 0, &engine, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "no TensorRT engine bytes to deserialize")) << why.c_str();
  why.clear();
  EXPECT_EQ(deserialize(nullptr, 64, &engine, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "no TensorRT engine bytes to deserialize")) << why.c_str();
  const uint8_t one = 'E';
  why.clear();
  EXPECT_EQ(deserialize(&one, 0, &engine, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "no TensorRT engine bytes to deserialize")) << why.c_str();
  EXPECT_EQ(engine, nullptr) << "the engine is set on success only";
}

TEST(AdapterLoad, HostLocatedIoTensorIsRefusedAtLoad) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2}))
      .place_on_host("x")
      .add_output("y", DataType::kFloat32, make_shape({2}))
      .identity("x", "y");
  const std::string error = load_error(build_or_fail(b), Error::NotSupported);
  EXPECT_TRUE(has(error, "engine IO tensor 0 'x'")) << error;
  EXPECT_TRUE(has(error, "getTensorLocation returned kHOST")) << error;
  EXPECT_TRUE(has(error, "not a shape tensor")) << error;
}

TEST(AdapterLoad, HostLocatedOutputIsRefusedAtLoad) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2}))
      .add_output("y", DataType::kFloat32, make_shape({2}))
      .place_on_host("y")
      .identity("x", "y");
  const std::string error = load_error(build_or_fail(b), Error::NotSupported);
  EXPECT_TRUE(has(error, "engine IO tensor 1 'y'")) << error;
  EXPECT_TRUE(has(error, "kHOST")) << error;
}

TEST(AdapterLoad, ShapeTensorInputLoadsAndIsDescribedAsSuch) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2}))
      .add_input("shape", DataType::kInt64, make_shape({2}))
      .mark_shape_tensor("shape")
      .add_output("y", DataType::kFloat32, make_shape({2}))
      .identity("x", "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->num_io_tensors(), 3);
  EXPECT_FALSE(engine->io_tensor(0).is_shape_tensor);
  EXPECT_TRUE(engine->io_tensor(1).is_shape_tensor);
  EXPECT_EQ(engine->io_tensor(1).name, "shape");
  EXPECT_EQ(engine->io_tensor(1).dtype, engine::DataType::kInt64);
  EXPECT_FALSE(engine->io_tensor(2).is_shape_tensor);
}

TEST(AdapterLoad, ADataDependentOutputKeepsItsUnknownDimsAndCannotBeEnqueued) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1, -1}))
      .add_output("y", DataType::kFloat32, make_shape({-1, -1}))
      .identity("x", "y")
      .mark_data_dependent("y");
  const int32_t p = b.add_profile();
  b.set_profile_shape(p, "x", make_shape({1, 1}), make_shape({2, 2}), make_shape({4, 4}));
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  ASSERT_EQ(context->set_input_shape(0, make_shape({2, 3}), why), Error::Ok) << why.c_str();
  Shape y;
  ASSERT_EQ(context->tensor_shape(1, &y, why), Error::Ok) << why.c_str();
  EXPECT_EQ(y, make_shape({-1, -1}));
  AlignedVector<float> x(6, 1.0f), out(16);
  ASSERT_EQ(context->set_tensor_address(0, x.data(), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(1, out.data(), why), Error::Ok) << why.c_str();
  EXPECT_EQ(context->enqueue(nullptr, why), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why.c_str(), "output 'y' has a data-dependent shape")) << why.c_str();
}

TEST(AdapterLoad, OnlyAnOutputCanBeDataDependent) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1}))
      .add_output("y", DataType::kFloat32, make_shape({-1}))
      .identity("x", "y")
      .mark_data_dependent("x");
  std::string error;
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(b.build(&bytes, &error));
  EXPECT_TRUE(has(error, "mark_data_dependent('x'): no output of that name")) << error;
}

TEST(EngineDataType, SizesAndSpellingsRoundTrip) {
  using engine::DataType;
  const std::pair<DataType, size_t> kSizes[] = {
      {DataType::kFloat32, 4}, {DataType::kFloat16, 2}, {DataType::kBFloat16, 2}, {DataType::kInt8, 1},
      {DataType::kUInt8, 1},   {DataType::kInt32, 4},   {DataType::kInt64, 8},    {DataType::kBool, 1}};
  for (const auto& [type, size] : kSizes) {
    EXPECT_EQ(engine::element_size(type), size) << engine::to_string(type);
    DataType parsed = DataType::kBool;
    ASSERT_TRUE(engine::parse_data_type(engine::to_string(type), &parsed)) << engine::to_string(type);
    EXPECT_EQ(parsed, type);
  }
  EXPECT_STREQ(engine::to_string(DataType::kBFloat16), "bfloat16");
  DataType untouched = DataType::kInt8;
  EXPECT_FALSE(engine::parse_data_type("float", &untouched));
  EXPECT_FALSE(engine::parse_data_type("", &untouched));
  EXPECT_EQ(untouched, DataType::kInt8);
}

}  // namespace
}  // namespace etrt::gpufree::testing
