// The metadata JSON: each malformation is refused with a message that names
// the field, and no exception ever escapes.

#include <gtest/gtest.h>

#include "blob/blob.h"
#include "blob_test_util.h"

namespace etrt::blob {
namespace {

using testing::json_with;
using testing::parse_error;

constexpr const char* kXY = R"({"name":"x","is_input":true},{"name":"y","is_input":false})";

std::string bindings(const std::string& elements) { return R"({"io_bindings":[)" + elements + "]}"; }

TEST(BlobMetadata, RefusesBrokenJsonWithTheParserPosition) {
  EXPECT_BLOB_ERROR(parse_error(std::string(R"({"io_bindings":[)")),
                    "metadata (16 bytes at offset 32) is not valid JSON", "line 1, column", "re-export the model");
}

TEST(BlobMetadata, RefusesTrailingGarbageAfterTheObject) {
  EXPECT_BLOB_ERROR(parse_error(json_with("") + "x"), "is not valid JSON");
}

TEST(BlobMetadata, RefusesNanAndInfinity) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("device_id":NaN)")), "is not valid JSON");
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("device_id":Infinity)")), "is not valid JSON");
}

TEST(BlobMetadata, RefusesInvalidUtf8InAString) {
  EXPECT_BLOB_ERROR(parse_error(bindings("{\"name\":\"\xC3\x28\"}")), "is not valid JSON: invalid UTF-8 at byte 25");
}

TEST(BlobMetadata, RefusesALoneSurrogateEscape) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"\ud800"})")), "is not valid JSON");
}

TEST(BlobMetadata, ParserDetailIsCappedForAnUnterminatedString) {
  const std::string json = R"({"io_bindings":[{"name":")" + std::string(100000, 'a');
  const std::string error = parse_error(json);
  EXPECT_BLOB_ERROR(error, "is not valid JSON");
  EXPECT_LT(error.size(), 600u);
}

TEST(BlobMetadata, RefusesANulByteEvenAfterTheObject) {
  // nlohmann alone would stop at the NUL and accept; Python's json would not.
  const std::string json = json_with("") + std::string(1, '\0') + "garbage";
  EXPECT_BLOB_ERROR(parse_error(json), "is not valid JSON: NUL byte at byte " + std::to_string(json_with("").size()));
}

TEST(BlobMetadata, RefusesJsonThatIsNotAnObject) {
  EXPECT_BLOB_ERROR(parse_error(std::string("[1,2]")), "metadata must be a JSON object, got an array");
  EXPECT_BLOB_ERROR(parse_error(std::string("\"TR01\"")), "metadata must be a JSON object, got a string");
  EXPECT_BLOB_ERROR(parse_error(std::string("null")), "metadata must be a JSON object, got null");
}

TEST(BlobMetadata, RefusesMissingIoBindings) {
  EXPECT_BLOB_ERROR(parse_error(std::string(R"({"device_id":0})")), "metadata has no 'io_bindings'");
}

TEST(BlobMetadata, RefusesIoBindingsThatIsNotAnArray) {
  EXPECT_BLOB_ERROR(parse_error(std::string(R"({"io_bindings":{"name":"x"}})")),
                    "metadata field 'io_bindings' must be an array, got an object");
}

TEST(BlobMetadata, RefusesABindingThatIsNotAnObject) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x"},"y")")),
                    "metadata field 'io_bindings[1]' must be an object, got a string");
}

TEST(BlobMetadata, RefusesABindingWithoutAName) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x"},{"is_input":false})")),
                    "metadata has no 'io_bindings[1].name'");
}

TEST(BlobMetadata, RefusesAnEmptyBindingName) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":""})")), "io_bindings[0].name is empty",
                    "needs its TensorRT tensor name");
}

TEST(BlobMetadata, RefusesDuplicateBindingNames) {
  EXPECT_BLOB_ERROR(
      parse_error(bindings(R"({"name":"x"},{"name":"y","is_input":false},{"name":"x","is_input":false})")),
      "io_bindings[0] and io_bindings[2] are both named 'x'");
}

TEST(BlobMetadata, AcceptsInputsAndOutputsInterleaved) {
  // The backend splits them by is_input: the arguments are the inputs in order, then the outputs in order.
  const std::string json = bindings(R"({"name":"y","is_input":false},{"name":"a"},{"name":"z","is_input":false},)"
                                    R"({"name":"b"})");
  EXPECT_EQ(parse_error(json), "");
  Metadata m;
  Diagnostic error;
  ASSERT_EQ(parse_metadata_json(json.data(), json.size(), &m, error), Error::Ok) << error.c_str();
  ASSERT_EQ(m.io_bindings.size(), 4u);
  EXPECT_EQ(m.io_bindings[0].name, "y");
  EXPECT_FALSE(m.io_bindings[0].is_input);
  EXPECT_EQ(m.io_bindings[3].name, "b");
  EXPECT_TRUE(m.io_bindings[3].is_input);
  EXPECT_EQ(m.num_inputs(), 2u);
  EXPECT_EQ(m.num_outputs(), 2u);
}

TEST(BlobMetadata, KeepsAnAliasKindItDoesNotKnow) {
  // The readers stay tolerant so tools can show the kind; the backend refuses the delegate at load.
  const std::string json = json_with(R"("aliased_io":[{"output":"y","input":"x","kind":"rotary"}])");
  Metadata m;
  Diagnostic error;
  ASSERT_EQ(parse_metadata_json(json.data(), json.size(), &m, error), Error::Ok) << error.c_str();
  ASSERT_EQ(m.aliased_io.size(), 1u);
  EXPECT_EQ(m.aliased_io[0].kind, "rotary");
  EXPECT_EQ(validate_metadata(m, error), Error::Ok) << error.c_str();
}

TEST(BlobMetadata, RefusesABindingNameThatIsNotAString) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":7})")),
                    "metadata field 'io_bindings[0].name' must be a string, got an integer");
}

TEST(BlobMetadata, RefusesADtypeThatIsNotAString) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","dtype":null})")),
                    "metadata field 'io_bindings[0].dtype' must be a string, got null");
}

TEST(BlobMetadata, RefusesAShapeThatIsNotAnArray) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","shape":"1,2"})")),
                    "metadata field 'io_bindings[0].shape' must be an array, got a string");
}

TEST(BlobMetadata, RefusesAShapeWithANonInteger) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","shape":[1,2.5]})")),
                    "metadata field 'io_bindings[0].shape[1]' must be an integer, got a number");
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","shape":[true]})")),
                    "metadata field 'io_bindings[0].shape[0]' must be an integer, got a boolean");
}

TEST(BlobMetadata, RefusesAShapeDimBeyondInt64) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","shape":[9223372036854775808]})")),
                    "'io_bindings[0].shape[0]' is 9223372036854775808, outside the range of a 64-bit signed integer");
}

TEST(BlobMetadata, RefusesANumberThatOverflowsADouble) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","shape":[1e400]})")), "is not valid JSON");
}

TEST(BlobMetadata, RefusesAShapeDimBelowInt64AsANumber) {
  // nlohmann (and etrt's Python reader, to agree) read it as a float.
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","shape":[-9223372036854775809]})")),
                    "'io_bindings[0].shape[0]' must be an integer, got a number");
}

TEST(BlobMetadata, RefusesAnIsInputThatIsNotABoolean) {
  EXPECT_BLOB_ERROR(parse_error(bindings(R"({"name":"x","is_input":1})")),
                    "metadata field 'io_bindings[0].is_input' must be a boolean, got an integer");
}

TEST(BlobMetadata, RefusesAliasedIoThatIsNotAnArray) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":{"y":["x","user"]})")),
                    "metadata field 'aliased_io' must be an array, got an object");
}

TEST(BlobMetadata, RefusesAnAliasWithoutOutputOrInput) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":[{"input":"x"}])")),
                    "metadata has no 'aliased_io[0].output'");
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":[{"output":"y"}])")),
                    "metadata has no 'aliased_io[0].input'");
}

TEST(BlobMetadata, RefusesAnAliasKindThatIsNotAString) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":[{"output":"y","input":"x","kind":1}])")),
                    "metadata field 'aliased_io[0].kind' must be a string, got an integer");
}

TEST(BlobMetadata, RefusesAnAliasOfAnUnknownOrWrongWayBinding) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":[{"output":"z","input":"x"}])")),
                    "aliased_io[0].output 'z' is not an output in io_bindings");
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":[{"output":"x","input":"x"}])")),
                    "aliased_io[0].output 'x' is not an output in io_bindings");
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":[{"output":"y","input":"y"}])")),
                    "aliased_io[0].input 'y' is not an input in io_bindings");
}

TEST(BlobMetadata, RefusesAnOutputAliasedTwice) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("aliased_io":[{"output":"y","input":"x"},{"output":"y","input":"x"}])")),
                    "aliased_io[0] and aliased_io[1] both alias output 'y'");
}

TEST(BlobMetadata, RefusesAHardwareCompatibleThatIsNotABoolean) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("hardware_compatible":"1")")),
                    "metadata field 'hardware_compatible' must be a boolean, got a string");
}

TEST(BlobMetadata, RefusesADeviceIdThatIsNotAnInteger) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("device_id":"0")")),
                    "metadata field 'device_id' must be an integer, got a string");
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("device_id":0.0)")),
                    "metadata field 'device_id' must be an integer, got a number");
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("device_id":false)")),
                    "metadata field 'device_id' must be an integer, got a boolean");
}

TEST(BlobMetadata, RefusesASerializedMetadataThatIsNotAString) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("serialized_metadata":["a"])")),
                    "metadata field 'serialized_metadata' must be a string, got an array");
}

TEST(BlobMetadata, RefusesATargetPlatformThatIsNotAString) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("target_platform":{})")),
                    "metadata field 'target_platform' must be a string, got an object");
}

TEST(BlobMetadata, RefusesAProfileSignatureThatIsNotAnObject) {
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("profile_signature":null)")),
                    "metadata field 'profile_signature' must be an object, got null");
}

TEST(BlobMetadata, ReportsTheFirstProblemInKeyOrder) {
  // device_id comes before target_platform in the writer's order.
  EXPECT_BLOB_ERROR(parse_error(json_with(R"("target_platform":1,"device_id":"x")")), "'device_id'");
}

TEST(BlobMetadata, AcceptsAnEmptyBindingList) { EXPECT_EQ(parse_error(std::string(R"({"io_bindings":[]})")), ""); }

TEST(BlobMetadata, AcceptsUnknownValuesNestedUpToTheDepthLimit) {
  // The top-level object is level 1, so 63 more brackets make 64.
  EXPECT_EQ(parse_error(json_with("\"deep\":" + std::string(63, '[') + std::string(63, ']'))), "");
}

TEST(BlobMetadata, RefusesNestingBeyondTheDepthLimit) {
  // Python's recursive json module could not read it, so the tools could not hand it on; the reader refuses it.
  EXPECT_BLOB_ERROR(parse_error(json_with("\"deep\":" + std::string(64, '[') + std::string(64, ']'))),
                    "nests deeper than 64 levels");
}

TEST(BlobMetadata, BracketsInsideStringsDoNotCountAsNesting) {
  EXPECT_EQ(parse_error(json_with("\"s\":\"" + std::string(100, '[') + "\\\"{{{\"")), "");
}

TEST(BlobMetadata, ReportsInvalidUtf8WithItsOffset) {
  EXPECT_BLOB_ERROR(parse_error(std::string("{\"io_bindings\":[{\"name\":\"\xE0\x80\x80\"}]}")),
                    "is not valid JSON: invalid UTF-8 at byte 25");
}

TEST(BlobMetadata, ParseMetadataJsonReportsWithoutAnOffset) {
  Metadata m;
  Diagnostic error;
  EXPECT_EQ(parse_metadata_json("{", 1, &m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "metadata (1 bytes) is not valid JSON");
  EXPECT_EQ(parse_metadata_json(nullptr, 0, &m, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "metadata (0 bytes) is not valid JSON");
}

TEST(BlobMetadata, UsesBothBindingsInTheHelperFixture) {
  // Guard for the fixture itself: json_with("") must be valid on its own.
  EXPECT_EQ(parse_error(bindings(kXY)), "");
  EXPECT_EQ(parse_error(json_with("")), "");
}

}  // namespace
}  // namespace etrt::blob
