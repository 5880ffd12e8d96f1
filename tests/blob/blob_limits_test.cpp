// The documented limits (docs/limits.md) and linear-time validation: every
// count is refused above its limit before anything sized by it is built,
// duplicates are found through hashing, and names quoted in messages have
// their control characters escaped.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "blob/json_text.h"
#include "blob_test_util.h"

namespace etrt::blob {
namespace {

using testing::parse_error;
using testing::raw_blob;
using testing::write;

std::string many_bindings(size_t n, const std::string& last_name = "") {
  std::string json = R"({"io_bindings":[)";
  for (size_t k = 0; k < n; ++k) {
    const std::string name = k + 1 == n && !last_name.empty() ? last_name : "b" + std::to_string(k);
    json += (k ? "," : "") + std::string(R"({"name":")") + name + R"(","is_input":)" + (k % 2 ? "false" : "true") + "}";
  }
  return json + "]}";
}

TEST(BlobLimits, BindingsAtTheLimitParseAndADuplicateAmongThemIsFoundQuickly) {
  EXPECT_EQ(parse_error(many_bindings(kMaxIoBindings)), "");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_BLOB_ERROR(parse_error(many_bindings(kMaxIoBindings, "b0")),
                    "io_bindings[0] and io_bindings[16383] are both named 'b0'");
  // Comparing every pair took seconds at this size; hashing takes milliseconds (generous bound for sanitizers).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(BlobLimits, TooManyBindingsAreRefusedFromTheTextBeforeParsing) {
  // Broken JSON after the array: the count is what is reported, since the text is counted before it is parsed.
  std::string json = R"({"io_bindings":[)";
  for (size_t k = 0; k <= kMaxIoBindings; ++k) json += k ? ",0" : "0";
  EXPECT_BLOB_ERROR(parse_error(json + "],"), "metadata field 'io_bindings' has more than 16384 entries");
  EXPECT_BLOB_ERROR(parse_error(R"({"io_bindings":[],"aliased_io":[)" + json.substr(16) + "]}"),
                    "metadata field 'aliased_io' has more than 16384 entries");
}

TEST(BlobLimits, TheTextScanCountsOnlyTopLevelArraysOfItsKeys) {
  static const detail::ArrayLimit kLimits[] = {{"io_bindings", 2}};
  const auto over = [](const std::string& text) {
    return detail::find_oversized_array(text.data(), text.size(), kLimits, 1) != nullptr;
  };
  EXPECT_TRUE(over(R"({"io_bindings":[1,2,3]})"));
  EXPECT_FALSE(over(R"({"io_bindings":[1,2]})"));
  EXPECT_FALSE(over(R"({"io_bindings":[[1,2,3],{"a":[1,2,3]}]})")) << "nested arrays are not its entries";
  EXPECT_FALSE(over(R"({"x":{"io_bindings":[1,2,3]}})")) << "not at the top level";
  EXPECT_FALSE(over(R"({"x":"io_bindings","y":[1,2,3]})")) << "a string value is not a key";
  EXPECT_FALSE(over(R"({"io_bindings":["a,b,c,d"]})")) << "commas inside strings";
  EXPECT_FALSE(over(R"({"io\u005fbindings":[1,2,3]})")) << "keys are matched as written";
  EXPECT_TRUE(over(R"({"io_bindings":[1,2,3],"io_bindings":[]})")) << "a repeated key is counted too";
  EXPECT_TRUE(over(R"( { "io_bindings" : [ 1 , 2 , 3 ] } )"));
}

TEST(BlobLimits, MetadataAboveSixteenMebibytesIsRefusedBeforeParsing) {
  const std::string prefix = R"({"io_bindings":[],"serialized_metadata":")";
  const std::string at_limit = prefix + std::string(kMaxMetadataSize - prefix.size() - 2, 'a') + "\"}";
  ASSERT_EQ(at_limit.size(), kMaxMetadataSize);
  Metadata parsed;
  Diagnostic error;
  EXPECT_EQ(parse_metadata_json(at_limit.data(), at_limit.size(), &parsed, error), Error::Ok) << error.c_str();
  const std::string over = prefix + std::string(kMaxMetadataSize - prefix.size() - 1, 'a') + "\"}";
  EXPECT_BLOB_ERROR(parse_error(over),
                    "metadata (16777217 bytes at offset 32) is larger than the limit of 16777216 "
                    "bytes");
}

TEST(BlobLimits, TheSignatureIsHeldToTheProfileLimits) {
  Metadata m = testing::llm_metadata();
  m.profile_signature->num_profiles = kMaxProfiles + 1;
  Diagnostic error;
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "profile_signature.num_profiles is 257, above the limit of 256");
  // A signature of 2^31 - 1 profiles describing no input: refused at once, nothing built per profile.
  EXPECT_BLOB_ERROR(parse_error(R"({"io_bindings":[],"profile_signature":{"num_profiles":2147483647,"inputs":[]}})"),
                    "profile_signature.num_profiles is 2147483647, above the limit of 256");
  // 32769 symbolic dims x 2 profiles is above the table limit.
  m = testing::llm_metadata();
  m.profile_signature->symbolic_dims.assign(kMaxProfileEntries / 2 + 1, m.profile_signature->symbolic_dims[0]);
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(),
                    "profile_signature has 32769 symbolic dims x 2 profiles = 65538 entries, above the limit "
                    "of 65536");
  m.profile_signature->symbolic_dims.assign(kMaxSymbolicDims + 1, m.profile_signature->symbolic_dims[0]);
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(),
                    "metadata field 'profile_signature.symbolic_dims' has 131073 entries, above the limit of "
                    "131072");
}

TEST(BlobLimits, TheWriterRefusesWhatTheReaderWould) {
  Metadata m;
  for (size_t k = 0; k <= kMaxIoBindings; ++k) m.io_bindings.push_back({"b" + std::to_string(k), "", {}, true});
  EXPECT_TRUE(write(m).empty());
  Diagnostic error;
  EXPECT_EQ(validate_metadata(m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "metadata field 'io_bindings' has 16385 entries, above the limit of 16384");
  m.io_bindings.resize(1);
  m.io_bindings[0].name = std::string(kMaxNameLength + 1, 'n');
  EXPECT_TRUE(write(m).empty());
  m.io_bindings[0].name = std::string(kMaxNameLength, 'n');
  EXPECT_FALSE(write(m).empty());
}

TEST(BlobLimits, NamesInMessagesHaveControlCharactersEscaped) {
  EXPECT_EQ(detail::escape_name(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(detail::escape_name("tab\there\x7f"), "tab\\x09here\\x7f");
  EXPECT_EQ(detail::escape_name("back\\slash"), "back\\\\slash");
  EXPECT_EQ(detail::escape_name("entr\xc3\xa9"
                                "e"),
            "entr\xc3\xa9"
            "e");
  EXPECT_EQ(detail::escape_name("bad\xff"), "bad\\xff");
  // A NUL cannot name a TensorRT tensor (its names are C strings): refused, and the message is whole.
  const std::string error = parse_error(std::string(R"({"io_bindings":[{"name":"in\u0000put"}]})"));
  EXPECT_BLOB_ERROR(error.c_str(), "io_bindings[0].name 'in\\x00put' contains a NUL byte", "re-export the model");
  EXPECT_EQ(error.find('\0'), std::string::npos);
  // Other control characters are legal in a name, and escaped wherever one is quoted.
  EXPECT_BLOB_ERROR(parse_error(std::string(R"({"io_bindings":[{"name":"a\nb"},{"name":"a\nb"}]})")),
                    "are both named 'a\\x0ab'");
  EXPECT_BLOB_ERROR(
      parse_error(std::string(R"({"io_bindings":[{"name":"x"}],"aliased_io":[{"output":"o\u001b[0m","input":"x"}]})")),
      "aliased_io[0].output 'o\\x1b[0m' is not an output");
}

}  // namespace
}  // namespace etrt::blob
