// deserialize_engine: reference bytes become a reference engine; anything else
// goes to TensorRT, or -- in a build without it -- is refused with the fix.

#include "engine/factory.h"

#include <gtest/gtest.h>

#include "reference_fixtures.h"

namespace etrt::engine::testing {
namespace {

using reference::testing::build_or_fail;
using reference::testing::llm_builder;
using reference::testing::test_label;

TEST(EngineFactory, PicksTheReferenceEngineForReferenceBytes) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  std::string error;
  std::unique_ptr<Engine> engine = deserialize_engine(bytes.data(), bytes.size(), EngineOptions{}, &error);
  ASSERT_NE(engine, nullptr) << error;
  EXPECT_NE(dynamic_cast<reference::ReferenceEngine*>(engine.get()), nullptr);
  EXPECT_EQ(engine->num_profiles(), 2);
}

TEST(EngineFactory, ReportsAMalformedReferenceEngineAsSuchNotAsATensorRtPlan) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  bytes.resize(bytes.size() / 2);
  std::string error;
  EXPECT_EQ(deserialize_engine(bytes.data(), bytes.size(), EngineOptions{}, &error), nullptr);
  EXPECT_EQ(error.rfind("reference engine: ", 0), 0u) << error;
}

#if !ETRT_WITH_TENSORRT
TEST(EngineFactory, RefusesOtherBytesWithTheTensorRtRebuildHint) {
  const uint8_t plan[] = {0x66, 0x74, 0x72, 0x74, 0x00, 0x01, 0x02, 0x03};
  std::string error;
  EXPECT_EQ(deserialize_engine(plan, sizeof(plan), EngineOptions{}, &error), nullptr);
  EXPECT_EQ(error,
            "engine bytes are not a reference engine (magic 'ETRF' expected, found 'ftrt'); this looks like a "
            "TensorRT plan, and this build of etrt has no TensorRT adapter: rebuild with -DETRT_WITH_TENSORRT=ON "
            "-DTENSORRT_ROOT=<path>");
}

TEST(EngineFactory, ShowsUnprintableMagicAsHex) {
  const uint8_t blob[] = {0x00, 0x1f, 0x8b, 0x08, 0x00};
  std::string error;
  EXPECT_EQ(deserialize_engine(blob, sizeof(blob), EngineOptions{}, &error), nullptr);
  EXPECT_NE(error.find("found 00 1f 8b 08"), std::string::npos) << error;
}

TEST(EngineFactory, RefusesEmptyBytes) {
  std::string error;
  EXPECT_EQ(deserialize_engine(nullptr, 0, EngineOptions{}, &error), nullptr);
  EXPECT_NE(error.find("found none: the engine is empty"), std::string::npos) << error;
  EXPECT_EQ(deserialize_engine(nullptr, 4, EngineOptions{}, nullptr), nullptr) << "error may be null";
}
#endif

TEST(EngineDataType, SizesAndSpellingsRoundTrip) {
  const std::pair<DataType, size_t> kSizes[] = {
      {DataType::kFloat32, 4}, {DataType::kFloat16, 2}, {DataType::kBFloat16, 2}, {DataType::kInt8, 1},
      {DataType::kUInt8, 1},   {DataType::kInt32, 4},   {DataType::kInt64, 8},    {DataType::kBool, 1}};
  for (const auto& [type, size] : kSizes) {
    EXPECT_EQ(element_size(type), size) << to_string(type);
    DataType parsed = DataType::kBool;
    ASSERT_TRUE(parse_data_type(to_string(type), &parsed)) << to_string(type);
    EXPECT_EQ(parsed, type);
  }
  EXPECT_STREQ(to_string(DataType::kBFloat16), "bfloat16");
  DataType untouched = DataType::kInt8;
  EXPECT_FALSE(parse_data_type("float", &untouched));
  EXPECT_FALSE(parse_data_type("", &untouched));
  EXPECT_EQ(untouched, DataType::kInt8);
}

}  // namespace
}  // namespace etrt::engine::testing
