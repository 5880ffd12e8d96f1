// What write_blob produces and parse_blob gives back.

#include <gtest/gtest.h>

#include "blob/blob.h"
#include "blob_test_util.h"

namespace etrt::blob {
namespace {

using testing::engine_bytes;
using testing::llm_metadata;
using testing::parse_error;
using testing::raw_blob;
using testing::simple_metadata;
using testing::write;

ParsedBlob parse_ok(const std::vector<uint8_t>& blob) {
  ParsedBlob parsed;
  Diagnostic error;
  EXPECT_EQ(parse_blob(blob.data(), blob.size(), &parsed, error), Error::Ok) << error.c_str();
  return parsed;
}

TEST(BlobRoundTrip, MetadataAndEngineComeBackUnchanged) {
  const Metadata m = simple_metadata();
  const std::vector<uint8_t> engine = engine_bytes(100);
  const std::vector<uint8_t> blob = write_blob(m, engine.data(), engine.size());
  const ParsedBlob parsed = parse_ok(blob);
  EXPECT_EQ(parsed.metadata, m);
  ASSERT_EQ(parsed.engine_size, engine.size());
  EXPECT_TRUE(std::equal(engine.begin(), engine.end(), parsed.engine));
}

TEST(BlobRoundTrip, ProfileSignatureAndAliasesComeBackUnchanged) {
  const Metadata m = llm_metadata();
  EXPECT_EQ(parse_ok(write(m)).metadata, m);
}

TEST(BlobRoundTrip, EnginePointsIntoTheCallersBuffer) {
  const std::vector<uint8_t> blob = write(simple_metadata(), 20);
  const ParsedBlob parsed = parse_ok(blob);
  EXPECT_GE(parsed.engine, blob.data() + kHeaderSize);
  EXPECT_EQ(parsed.engine + parsed.engine_size, blob.data() + blob.size());
}

TEST(BlobRoundTrip, WriterEmitsTr01WithoutAliasedIo) {
  const std::vector<uint8_t> blob = write(simple_metadata());
  EXPECT_EQ(std::string(blob.begin(), blob.begin() + 4), "TR01");
  EXPECT_EQ(parse_ok(blob).magic, "TR01");
}

TEST(BlobRoundTrip, WriterEmitsTr02WithAliasedIo) {
  const std::vector<uint8_t> blob = write(llm_metadata());
  EXPECT_EQ(std::string(blob.begin(), blob.begin() + 4), "TR02");
  EXPECT_EQ(parse_ok(blob).magic, "TR02");
}

TEST(BlobRoundTrip, WriterLaysOutTheHeaderLikeUpstream) {
  const Metadata m = simple_metadata();
  const std::string json = metadata_to_json(m);
  const std::vector<uint8_t> blob = write(m, 5);
  const auto u32 = [&](size_t at) {
    return uint32_t{blob[at]} | uint32_t{blob[at + 1]} << 8 | uint32_t{blob[at + 2]} << 16 |
           uint32_t{blob[at + 3]} << 24;
  };
  EXPECT_EQ(u32(4), 32u);
  EXPECT_EQ(u32(8), json.size());
  EXPECT_EQ(u32(12), (32 + json.size() + 15) / 16 * 16);
  EXPECT_EQ(u32(16), 5u);
  EXPECT_EQ(u32(20), 0u);
  const std::vector<uint8_t> reserved(blob.begin() + 24, blob.begin() + 32);
  EXPECT_EQ(reserved, (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::string(blob.begin() + 32, blob.begin() + 32 + static_cast<std::ptrdiff_t>(json.size())), json);
  for (size_t i = 32 + json.size(); i < u32(12); ++i) EXPECT_EQ(blob[i], 0) << "padding byte " << i;
  EXPECT_EQ(blob.size(), u32(12) + 5u);
}

TEST(BlobRoundTrip, ReaderIgnoresTheReservedBytes) {
  std::vector<uint8_t> blob = write(simple_metadata());
  for (size_t i = 24; i < 32; ++i) blob[i] = 0xAB;
  EXPECT_EQ(parse_ok(blob).metadata, simple_metadata());
}

TEST(BlobRoundTrip, JsonMatchesUpstreamKeyOrderAndCompactSeparators) {
  Metadata m;
  m.io_bindings = {{"x", "", {}, true}, {"y", "", {}, false}};
  EXPECT_EQ(metadata_to_json(m),
            R"({"io_bindings":[{"name":"x","dtype":"","shape":[],"is_input":true},)"
            R"({"name":"y","dtype":"","shape":[],"is_input":false}],"aliased_io":[],"hardware_compatible":false,)"
            R"("device_id":0,"serialized_metadata":"","target_platform":""})");
}

TEST(BlobRoundTrip, ProfileSignatureIsTheLastKeyAndSerializesCompactly) {
  Metadata m;
  m.io_bindings = {{"input_ids", "", {}, true}};
  m.profile_signature = testing::llm_signature();
  const std::string json = metadata_to_json(m);
  const std::string tail =
      R"("target_platform":"","profile_signature":{"num_profiles":2,"inputs":[{"name":"input_ids","profiles":[)"
      R"({"min":[1,1],"opt":[1,1],"max":[1,1]},{"min":[1,32],"opt":[1,512],"max":[1,2048]}]}],)"
      R"("symbolic_dims":[{"name":"seq_len","input":"input_ids","dim":1,"ranges":[[1,1],[32,2048]]}]}})";
  ASSERT_GE(json.size(), tail.size());
  EXPECT_EQ(json.substr(json.size() - tail.size()), tail);
}

TEST(BlobRoundTrip, MissingOptionalKeysTakeUpstreamDefaults) {
  ParsedBlob parsed = parse_ok(raw_blob(R"({"io_bindings":[{"name":"x"}]})"));
  const Metadata& m = parsed.metadata;
  ASSERT_EQ(m.io_bindings.size(), 1u);
  EXPECT_EQ(m.io_bindings[0].dtype, "");
  EXPECT_TRUE(m.io_bindings[0].shape.empty());
  EXPECT_TRUE(m.io_bindings[0].is_input);  // upstream's Python default
  EXPECT_TRUE(m.aliased_io.empty());
  EXPECT_FALSE(m.hardware_compatible);
  EXPECT_EQ(m.device_id, 0);
  EXPECT_EQ(m.serialized_metadata, "");
  EXPECT_EQ(m.target_platform, "");
  EXPECT_FALSE(m.profile_signature.has_value());
}

TEST(BlobRoundTrip, MissingOrEmptyAliasKindMeansKvCacheUpdate) {
  const ParsedBlob parsed = parse_ok(raw_blob(
      R"({"io_bindings":[{"name":"a"},{"name":"b"},{"name":"c","is_input":false},{"name":"d","is_input":false}],)"
      R"("aliased_io":[{"output":"c","input":"a"},{"output":"d","input":"b","kind":""}]})"));
  ASSERT_EQ(parsed.metadata.aliased_io.size(), 2u);
  EXPECT_EQ(parsed.metadata.aliased_io[0].kind, "kv_cache_update");
  EXPECT_EQ(parsed.metadata.aliased_io[1].kind, "kv_cache_update");
}

TEST(BlobRoundTrip, MissingSymbolicDimsMeansNone) {
  const ParsedBlob parsed =
      parse_ok(raw_blob(R"({"io_bindings":[{"name":"x"}],"profile_signature":{"num_profiles":1,)"
                        R"("inputs":[{"name":"x","profiles":[{"min":[1],"opt":[2],"max":[3]}]}]}})"));
  ASSERT_TRUE(parsed.metadata.profile_signature.has_value());
  EXPECT_TRUE(parsed.metadata.profile_signature->symbolic_dims.empty());
}

TEST(BlobRoundTrip, UnknownKeysAreIgnoredAtEveryLevel) {
  const ParsedBlob parsed = parse_ok(raw_blob(
      R"({"future":{"a":[1,2]},"io_bindings":[{"name":"x","is_shape_tensor":false,"extra":null}],)"
      R"("aliased_io":[],"device_id":3,"profile_signature":{"num_profiles":1,"note":"hi",)"
      R"("inputs":[{"name":"x","why":1,"profiles":[{"min":[1],"opt":[1],"max":[1],"label":"decode"}]}],)"
      R"("symbolic_dims":[{"name":"s","input":"x","dim":0,"ranges":[[1,1]],"origin":"export"}]},"zzz":true})"));
  EXPECT_EQ(parsed.metadata.device_id, 3);
  EXPECT_EQ(parsed.metadata.io_bindings.size(), 1u);
  EXPECT_EQ(parsed.metadata.profile_signature->symbolic_dims.size(), 1u);
}

TEST(BlobRoundTrip, ScalarKeysAreFoundInAnyOrder) {
  // Upstream's original reader depended on key order; JSON does not.
  const ParsedBlob parsed =
      parse_ok(raw_blob(R"({"target_platform":"t","device_id":2,"hardware_compatible":true,"serialized_metadata":"s",)"
                        R"("io_bindings":[{"is_input":true,"shape":[1],"dtype":"f","name":"x"}]})"));
  EXPECT_EQ(parsed.metadata.device_id, 2);
  EXPECT_TRUE(parsed.metadata.hardware_compatible);
  EXPECT_EQ(parsed.metadata.serialized_metadata, "s");
  EXPECT_EQ(parsed.metadata.target_platform, "t");
  EXPECT_EQ(parsed.metadata.io_bindings[0].dtype, "f");
}

TEST(BlobRoundTrip, BindingNamedLikeAKeyDoesNotConfuseTheReader) {
  const ParsedBlob parsed =
      parse_ok(raw_blob(R"({"io_bindings":[{"name":"device_id"},{"name":"\"device_id\":7","is_input":false}]})"));
  EXPECT_EQ(parsed.metadata.device_id, 0);
  EXPECT_EQ(parsed.metadata.io_bindings[1].name, "\"device_id\":7");
}

TEST(BlobRoundTrip, Tr01WithAliasedIoIsAccepted) {
  // Upstream's own reader takes either magic; TR02 only exists to lock out
  // readers that predate aliasing, so the pairing is not enforced.
  const std::string json =
      R"({"io_bindings":[{"name":"a"},{"name":"b","is_input":false}],"aliased_io":[{"output":"b","input":"a"}]})";
  EXPECT_EQ(parse_error(raw_blob(json, 16, "TR01")), "");
}

TEST(BlobRoundTrip, Tr02WithoutAliasedIoIsAccepted) {
  EXPECT_EQ(parse_error(raw_blob(testing::json_with(""), 16, "TR02")), "");
}

TEST(BlobRoundTrip, Utf8BomBeforeTheMetadataIsSkipped) {
  // nlohmann skips it, and the Python tools read through this reader (python/etrt/blob/reader.py).
  EXPECT_EQ(parse_error("\xEF\xBB\xBF" + testing::json_with("")), "");
}

TEST(BlobRoundTrip, DuplicateKeysKeepTheLastValueLikePython) {
  const ParsedBlob parsed = parse_ok(raw_blob(testing::json_with(R"("device_id":1,"device_id":2)")));
  EXPECT_EQ(parsed.metadata.device_id, 2);
}

TEST(BlobRoundTrip, CountsInputsAndOutputs) {
  const Metadata m = simple_metadata();
  EXPECT_EQ(m.num_inputs(), 2u);
  EXPECT_EQ(m.num_outputs(), 1u);
}

TEST(BlobRoundTrip, ExtremeIntegersSurvive) {
  Metadata m = simple_metadata();
  m.device_id = INT64_MIN;
  m.io_bindings[0].shape = {INT64_MAX, INT64_MIN, 0, -1};
  EXPECT_EQ(parse_ok(write(m)).metadata, m);
}

TEST(BlobRoundTrip, ParseMetadataJsonReadsTheJsonAlone) {
  const std::string json = metadata_to_json(llm_metadata());
  Metadata m;
  Diagnostic error;
  ASSERT_EQ(parse_metadata_json(json.data(), json.size(), &m, error), Error::Ok) << error.c_str();
  EXPECT_EQ(m, llm_metadata());
}

}  // namespace
}  // namespace etrt::blob
