// The profile signature (docs/design.md, decision 10): optional, and when present
// it must describe num_profiles well-formed profiles of real engine inputs.

#include <gtest/gtest.h>

#include "blob/blob.h"
#include "blob_test_util.h"

namespace etrt::blob {
namespace {

using testing::llm_metadata;
using testing::parse_error;

std::string validation_error(const Metadata& m) {
  Diagnostic why;
  const Error status = validate_metadata(m, why);
  if (status == Error::Ok) return std::string();
  EXPECT_EQ(status, Error::InvalidArgument) << why.c_str();
  return why.c_str();
}

// Each test breaks one thing in the LLM metadata and checks both that
// validate_metadata names it and that a blob carrying it is refused on read.
std::string read_error(const Metadata& m) {
  const std::string json = metadata_to_json(m);
  return parse_error(testing::raw_blob(json, 16, "TR02"));
}

#define EXPECT_SIGNATURE_ERROR(metadata, ...)                   \
  do {                                                          \
    EXPECT_BLOB_ERROR(validation_error(metadata), __VA_ARGS__); \
    EXPECT_BLOB_ERROR(read_error(metadata), __VA_ARGS__);       \
  } while (0)

ProfileSignature& sig(Metadata& m) { return *m.profile_signature; }

TEST(BlobSignature, WellFormedSignatureValidates) { EXPECT_EQ(validation_error(llm_metadata()), ""); }

TEST(BlobSignature, BlobsWithoutASignatureStayValid) {
  Metadata m = llm_metadata();
  m.profile_signature.reset();
  EXPECT_EQ(validation_error(m), "");
  EXPECT_EQ(metadata_to_json(m).find("profile_signature"), std::string::npos);
}

TEST(BlobSignature, EmptySymbolicDimsAreValid) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims.clear();
  EXPECT_EQ(validation_error(m), "");
  EXPECT_NE(metadata_to_json(m).find(R"("symbolic_dims":[]})"), std::string::npos);
}

TEST(BlobSignature, RefusesZeroProfiles) {
  Metadata m = llm_metadata();
  sig(m).num_profiles = 0;
  EXPECT_SIGNATURE_ERROR(m, "profile_signature.num_profiles is 0", "at least one optimization profile");
}

TEST(BlobSignature, RefusesAnInputWithTooFewProfiles) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].profiles.pop_back();
  EXPECT_SIGNATURE_ERROR(m, "profile_signature.inputs[0] 'input_ids' has 1 profiles but num_profiles is 2");
}

TEST(BlobSignature, RefusesAnInputWithTooManyProfiles) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].profiles.push_back(sig(m).inputs[0].profiles[1]);
  EXPECT_SIGNATURE_ERROR(m, "has 3 profiles but num_profiles is 2");
}

TEST(BlobSignature, RefusesMinOptMaxOfDifferentRanks) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].profiles[1].opt = {512};
  EXPECT_SIGNATURE_ERROR(m, "'input_ids' profile 1 has min of rank 2, opt of rank 1 and max of rank 2");
}

TEST(BlobSignature, RefusesARankThatChangesBetweenProfiles) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].profiles[1] = {{1, 32, 1}, {1, 512, 1}, {1, 2048, 1}};
  EXPECT_SIGNATURE_ERROR(m, "'input_ids' has rank 3 in profile 1 but rank 2 in profile 0");
}

TEST(BlobSignature, RefusesARankAboveTensorRtsLimit) {
  Metadata m = llm_metadata();
  const std::vector<int64_t> nine(9, 1);
  sig(m).inputs[0].profiles = {{nine, nine, nine}, {nine, nine, nine}};
  sig(m).symbolic_dims.clear();
  EXPECT_SIGNATURE_ERROR(m, "'input_ids' has rank 9; TensorRT tensors have at most 8 dimensions");
}

TEST(BlobSignature, RefusesMinAboveOpt) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].profiles[1].min = {1, 600};
  EXPECT_SIGNATURE_ERROR(m, "'input_ids' profile 1 dim 1 has min 600, opt 512, max 2048", "0 <= min <= opt <= max");
}

TEST(BlobSignature, RefusesOptAboveMax) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].profiles[0].opt = {2, 1};
  EXPECT_SIGNATURE_ERROR(m, "profile 0 dim 0 has min 1, opt 2, max 1");
}

TEST(BlobSignature, RefusesNegativeBounds) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].profiles[0] = {{-1, 1}, {1, 1}, {1, 1}};
  EXPECT_SIGNATURE_ERROR(m, "profile 0 dim 0 has min -1");
}

TEST(BlobSignature, RefusesAnInputThatIsNotAnEngineInput) {
  Metadata m = llm_metadata();
  sig(m).inputs[0].name = "logits";
  EXPECT_SIGNATURE_ERROR(m, "profile_signature.inputs[0] 'logits' is not an input in io_bindings");
}

TEST(BlobSignature, RefusesAnInputDescribedTwice) {
  Metadata m = llm_metadata();
  sig(m).inputs.push_back(sig(m).inputs[0]);
  EXPECT_SIGNATURE_ERROR(m,
                         "profile_signature.inputs[0] and profile_signature.inputs[1] both describe input "
                         "'input_ids'");
}

TEST(BlobSignature, RefusesASymbolicDimWithoutAName) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims[0].name.clear();
  EXPECT_SIGNATURE_ERROR(m, "profile_signature.symbolic_dims[0].name is empty");
}

TEST(BlobSignature, RefusesASymbolicDimOfAnUnknownInput) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims[0].input = "nope";
  EXPECT_SIGNATURE_ERROR(m, "symbolic_dims[0] 'seq_len' refers to 'nope', which is not an input in io_bindings");
}

TEST(BlobSignature, RefusesASymbolicDimOfAnInputWithoutBounds) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims[0].input = "kv_cache";
  EXPECT_SIGNATURE_ERROR(m, "refers to input 'kv_cache', which has no bounds in profile_signature.inputs");
}

TEST(BlobSignature, RefusesASymbolicDimBeyondTheInputsRank) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims[0].dim = 2;
  EXPECT_SIGNATURE_ERROR(m, "symbolic_dims[0] 'seq_len' is dim 2 of input 'input_ids', which has rank 2");
}

TEST(BlobSignature, RefusesANegativeSymbolicDim) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims[0].dim = -1;
  EXPECT_SIGNATURE_ERROR(m, "is dim -1 of input 'input_ids'");
}

TEST(BlobSignature, RefusesTheWrongNumberOfRanges) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims[0].ranges.pop_back();
  EXPECT_SIGNATURE_ERROR(m, "symbolic_dims[0] 'seq_len' has 1 ranges but num_profiles is 2");
}

TEST(BlobSignature, RefusesAnInvertedRange) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims[0].ranges[1] = {2048, 32};
  EXPECT_SIGNATURE_ERROR(m, "'seq_len' range 1 is [2048, 32]; a range must satisfy 0 <= lo <= hi");
}

TEST(BlobSignature, RefusesTheSameDimDescribedTwice) {
  Metadata m = llm_metadata();
  sig(m).symbolic_dims.push_back(sig(m).symbolic_dims[0]);
  sig(m).symbolic_dims[1].name = "tokens";
  EXPECT_SIGNATURE_ERROR(m,
                         "symbolic_dims[0] and profile_signature.symbolic_dims[1] both describe dim 1 of input "
                         "'input_ids'");
}

TEST(BlobSignature, OneSymbolMayNameDimsOfSeveralInputs) {
  Metadata m = llm_metadata();
  m.io_bindings.insert(m.io_bindings.begin() + 1, IoBinding{"position_ids", "int64", {1, -1}, true});
  sig(m).inputs.push_back({"position_ids", sig(m).inputs[0].profiles});
  sig(m).symbolic_dims.push_back({"seq_len", "position_ids", 1, {{1, 1}, {32, 2048}}});
  EXPECT_EQ(validation_error(m), "");
}

// Type errors inside the signature, read from raw JSON.
std::string signature_json(const std::string& signature) {
  return R"({"io_bindings":[{"name":"x"},{"name":"y","is_input":false}],"profile_signature":)" + signature + "}";
}

TEST(BlobSignature, RefusesAMissingNumProfiles) {
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"inputs":[]})")),
                    "metadata has no 'profile_signature.num_profiles'");
}

TEST(BlobSignature, RefusesANumProfilesThatIsNotAnInt32) {
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":"2","inputs":[]})")),
                    "'profile_signature.num_profiles' must be an integer, got a string");
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":2147483648,"inputs":[]})")),
                    "'profile_signature.num_profiles' is 2147483648, outside the range of a 32-bit signed integer");
}

TEST(BlobSignature, RefusesMissingOrNonArrayInputs) {
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":1})")), "metadata has no 'profile_signature.inputs'");
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":1,"inputs":{}})")),
                    "'profile_signature.inputs' must be an array, got an object");
}

TEST(BlobSignature, RefusesMalformedProfileBounds) {
  EXPECT_BLOB_ERROR(
      parse_error(signature_json(R"({"num_profiles":1,"inputs":[{"name":"x","profiles":[{"min":[1],"opt":[1]}]}]})")),
      "metadata has no 'profile_signature.inputs[0].profiles[0].max'");
  EXPECT_BLOB_ERROR(
      parse_error(signature_json(
          R"({"num_profiles":1,"inputs":[{"name":"x","profiles":[{"min":[1],"opt":["1"],"max":[1]}]}]})")),
      "'profile_signature.inputs[0].profiles[0].opt[0]' must be an integer, got a string");
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":1,"inputs":[{"name":"x","profiles":[[1]]}]})")),
                    "'profile_signature.inputs[0].profiles[0]' must be an object, got an array");
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":1,"inputs":[{"profiles":[]}]})")),
                    "metadata has no 'profile_signature.inputs[0].name'");
}

TEST(BlobSignature, RefusesMalformedSymbolicDims) {
  const std::string input = R"("inputs":[{"name":"x","profiles":[{"min":[1],"opt":[1],"max":[1]}]}])";
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":1,)" + input + R"(,"symbolic_dims":{}})")),
                    "'profile_signature.symbolic_dims' must be an array, got an object");
  EXPECT_BLOB_ERROR(parse_error(signature_json(R"({"num_profiles":1,)" + input +
                                               R"(,"symbolic_dims":[{"name":"s","input":"x","ranges":[[1,1]]}]})")),
                    "metadata has no 'profile_signature.symbolic_dims[0].dim'");
  EXPECT_BLOB_ERROR(
      parse_error(signature_json(R"({"num_profiles":1,)" + input +
                                 R"(,"symbolic_dims":[{"name":"s","input":"x","dim":0,"ranges":[[1,1,1]]}]})")),
      "'profile_signature.symbolic_dims[0].ranges[0]' must be an array of two integers [lo, hi], got an array of 3");
  EXPECT_BLOB_ERROR(
      parse_error(signature_json(R"({"num_profiles":1,)" + input +
                                 R"(,"symbolic_dims":[{"name":"s","input":"x","dim":0,"ranges":[7]}]})")),
      "'profile_signature.symbolic_dims[0].ranges[0]' must be an array of two integers [lo, hi], got an integer");
  EXPECT_BLOB_ERROR(
      parse_error(signature_json(R"({"num_profiles":1,)" + input +
                                 R"(,"symbolic_dims":[{"name":"s","input":"x","dim":0,"ranges":[[1,null]]}]})")),
      "'profile_signature.symbolic_dims[0].ranges[0][1]' must be an integer, got null");
}

}  // namespace
}  // namespace etrt::blob
