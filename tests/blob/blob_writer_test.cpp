// The writer: Python's json.dumps escaping byte for byte, and no blob that the
// reader would refuse.

#include <gtest/gtest.h>

#include "blob/blob.h"
#include "blob_test_util.h"

namespace etrt::blob {
namespace {

using testing::engine_bytes;
using testing::simple_metadata;

std::string escaped(const std::string& name) {
  Metadata m;
  m.serialized_metadata = name;
  const std::string json = metadata_to_json(m);
  const std::string key = R"("serialized_metadata":)";
  const size_t start = json.find(key) + key.size();
  return json.substr(start, json.find(R"(,"target_platform")") - start);
}

TEST(BlobWriter, EscapesQuotesBackslashesAndNamedControlCharacters) {
  EXPECT_EQ(escaped("a\"b\\c\b\f\n\r\t/"), R"("a\"b\\c\b\f\n\r\t/")");
}

TEST(BlobWriter, EscapesOtherControlBytesAndDelAsLowercaseU00xx) {
  EXPECT_EQ(escaped(std::string("\x00\x01\x1f\x7f", 4)), R"("\u0000\u0001\u001f\u007f")");
}

TEST(BlobWriter, EscapesNonAsciiAsLowercaseUxxxx) {
  EXPECT_EQ(escaped("entr\xC3\xA9"
                    "e \xE2\x82\xAC \xEF\xBF\xBF"),
            R"("entr\u00e9e \u20ac \uffff")");
}

TEST(BlobWriter, EscapesCharactersAboveTheBmpAsSurrogatePairs) {
  EXPECT_EQ(escaped("\xF0\x9F\x98\x80"), R"("\ud83d\ude00")");
  EXPECT_EQ(escaped("\xF4\x8F\xBF\xBF"), R"("\udbff\udfff")");
  EXPECT_EQ(escaped("\xF0\x90\x80\x80"), R"("\ud800\udc00")");
}

TEST(BlobWriter, LeavesPrintableAsciiAlone) {
  std::string printable;
  for (char c = 0x20; c < 0x7F; ++c)
    if (c != '"' && c != '\\') printable += c;
  EXPECT_EQ(escaped(printable), "\"" + printable + "\"");
}

TEST(BlobWriter, TurnsBytesThatAreNotUtf8IntoReplacementCharacters) {
  // Only reachable through metadata_to_json; write_blob refuses such metadata.
  EXPECT_EQ(escaped("a\xFF"
                    "b\xC3"),
            R"("a\ufffdb\ufffd")");
  EXPECT_EQ(escaped("\xED\xA0\x80"), R"("\ufffd\ufffd\ufffd")");  // an encoded surrogate
  EXPECT_EQ(escaped("\xC0\xAF"), R"("\ufffd\ufffd")");            // an overlong '/'
}

TEST(BlobWriter, WritesIntegersLikePython) {
  Metadata m = simple_metadata();
  m.device_id = -9223372036854775807 - 1;
  m.io_bindings[0].shape = {0, -1, 9223372036854775807};
  const std::string json = metadata_to_json(m);
  EXPECT_NE(json.find(R"("shape":[0,-1,9223372036854775807])"), std::string::npos);
  EXPECT_NE(json.find(R"("device_id":-9223372036854775808)"), std::string::npos);
}

TEST(BlobWriter, RefusesAnEmptyEngine) {
  const uint8_t byte = 0;
  EXPECT_TRUE(write_blob(simple_metadata(), &byte, 0).empty());
  EXPECT_TRUE(write_blob(simple_metadata(), nullptr, 4).empty());
}

TEST(BlobWriter, RefusesMetadataTheReaderWouldRefuse) {
  Metadata m = simple_metadata();
  m.io_bindings.push_back({"x", "", {}, false});
  const std::vector<uint8_t> engine = engine_bytes(4);
  EXPECT_TRUE(write_blob(m, engine.data(), engine.size()).empty());
  Diagnostic error;
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "io_bindings[0] and io_bindings[3] are both named 'x'");
}

TEST(BlobWriter, WritesAnInputAfterAnOutputAsListed) {
  Metadata m = simple_metadata();
  m.io_bindings.push_back({"late_input", "", {}, true});
  const std::vector<uint8_t> engine = engine_bytes(4);
  const std::vector<uint8_t> blob = write_blob(m, engine.data(), engine.size());
  ASSERT_FALSE(blob.empty());
  ParsedBlob parsed;
  Diagnostic error;
  ASSERT_EQ(parse_blob(blob.data(), blob.size(), &parsed, error), Error::Ok) << error.c_str();
  EXPECT_EQ(parsed.metadata, m);
}

TEST(BlobWriter, RefusesStringsThatAreNotUtf8) {
  Metadata m = simple_metadata();
  m.target_platform = "\xFF";
  Diagnostic error;
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "target_platform is not valid UTF-8");
  m.target_platform.clear();
  m.io_bindings[1].dtype = "\xC3";
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "io_bindings[1].dtype is not valid UTF-8");
}

TEST(BlobWriter, RefusesAnEmptyAliasKind) {
  Metadata m = testing::llm_metadata();
  m.aliased_io[0].kind.clear();
  Diagnostic error;
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "aliased_io[0].kind is empty");
}

TEST(BlobWriter, AcceptsAnEmbeddedNulInAString) {
  Metadata m = simple_metadata();
  m.serialized_metadata = std::string("a\0b", 3);
  ParsedBlob parsed;
  Diagnostic error;
  const std::vector<uint8_t> blob = testing::write(m);
  ASSERT_EQ(parse_blob(blob.data(), blob.size(), &parsed, error), Error::Ok) << error.c_str();
  EXPECT_EQ(parsed.metadata.serialized_metadata, m.serialized_metadata);
}

}  // namespace
}  // namespace etrt::blob
