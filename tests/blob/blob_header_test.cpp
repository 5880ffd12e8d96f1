// The 32-byte header and the layout it describes: every field comes from the
// file, so each can be absurd, and none may lead the reader outside the buffer.

#include <gtest/gtest.h>

#include <limits>

#include "blob/blob.h"
#include "blob_test_util.h"

namespace etrt::blob {
namespace {

using testing::kEngineOffsetField;
using testing::kEngineSizeField;
using testing::kMetadataOffsetField;
using testing::kMetadataSizeField;
using testing::parse_error;
using testing::put_le;
using testing::simple_metadata;
using testing::write;

std::vector<uint8_t> valid_blob() { return write(simple_metadata(), 16); }

TEST(BlobHeader, RefusesDataShorterThanTheHeader) {
  std::vector<uint8_t> blob = valid_blob();
  blob.resize(31);
  EXPECT_BLOB_ERROR(parse_error(blob), "31 bytes, shorter than the 32-byte header", "re-export the model");
}

TEST(BlobHeader, RefusesEmptyData) {
  EXPECT_BLOB_ERROR(parse_error(std::vector<uint8_t>{}), "0 bytes, shorter than the 32-byte header");
}

TEST(BlobHeader, RefusesNullDataAndNullOut) {
  ParsedBlob parsed;
  Diagnostic error;
  EXPECT_EQ(parse_blob(nullptr, 64, &parsed, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "null");
  const std::vector<uint8_t> blob = valid_blob();
  EXPECT_EQ(parse_blob(blob.data(), blob.size(), nullptr, error), Error::InvalidArgument);
  EXPECT_BLOB_ERROR(error.c_str(), "out is null");
}

TEST(BlobHeader, LeavesOutUntouchedOnRefusal) {
  ParsedBlob parsed;
  parsed.magic = "kept";
  std::vector<uint8_t> blob = valid_blob();
  blob[0] = 'X';
  Diagnostic why;
  EXPECT_EQ(parse_blob(blob.data(), blob.size(), &parsed, why), Error::InvalidArgument);
  EXPECT_EQ(parsed.magic, "kept");
}

TEST(BlobHeader, RefusesAnUnknownMagicAndQuotesItSafely) {
  std::vector<uint8_t> blob = valid_blob();
  blob[2] = 0x00;
  blob[3] = 0xFF;
  EXPECT_BLOB_ERROR(parse_error(blob), "magic is 'TR\\x00\\xff', expected 'TR01' or 'TR02'",
                    "not written by a TensorRT exporter");
}

TEST(BlobHeader, RefusesAMetadataOffsetInsideTheHeader) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kMetadataOffsetField, 31, 4);
  EXPECT_BLOB_ERROR(parse_error(blob), "metadata_offset 31 points inside the 32-byte header");
}

TEST(BlobHeader, RefusesMetadataRunningPastTheEnd) {
  std::vector<uint8_t> blob = valid_blob();
  const size_t size = blob.size();
  put_le(blob, kMetadataSizeField, size - 31, 4);
  EXPECT_BLOB_ERROR(parse_error(blob), "metadata at offset 32 with size " + std::to_string(size - 31),
                    "ends at byte " + std::to_string(size + 1),
                    "past the end of the " + std::to_string(size) + "-byte blob");
}

TEST(BlobHeader, RefusesAMetadataOffsetPastTheEnd) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kMetadataOffsetField, 0xFFFFFFFF, 4);
  put_le(blob, kMetadataSizeField, 0xFFFFFFFF, 4);  // offset + size would wrap in 32 bits
  EXPECT_BLOB_ERROR(parse_error(blob), "metadata at offset 4294967295 with size 4294967295", "ends at byte 8589934590");
}

TEST(BlobHeader, RefusesAnEngineOffsetInsideTheHeader) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineOffsetField, 0, 4);
  put_le(blob, kEngineSizeField, 16, 8);
  EXPECT_BLOB_ERROR(parse_error(blob), "engine_offset 0 points inside the 32-byte header");
}

TEST(BlobHeader, RefusesAnUnalignedEngineOffset) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineOffsetField, 40, 4);
  EXPECT_BLOB_ERROR(parse_error(blob), "engine_offset 40 is not a multiple of 16");
}

TEST(BlobHeader, RefusesAnEngineRunningPastTheEnd) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineSizeField, 17, 8);
  EXPECT_BLOB_ERROR(parse_error(blob),
                    "with size 17 runs past the end of the " + std::to_string(blob.size()) + "-byte blob");
}

TEST(BlobHeader, RefusesAnAbsurdEngineSizeThatWouldWrapAround) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineSizeField, std::numeric_limits<uint64_t>::max(), 8);
  EXPECT_BLOB_ERROR(parse_error(blob), "with size 18446744073709551615 runs past the end");
}

TEST(BlobHeader, RefusesAnEngineSizeThatWrapsToTheBufferStart) {
  // offset + size == 2^64 exactly; naive addition would give 0 <= size.
  std::vector<uint8_t> blob = valid_blob();
  uint64_t eo = 0;
  for (size_t i = 0; i < 4; ++i) eo |= uint64_t{blob[kEngineOffsetField + i]} << (8 * i);
  put_le(blob, kEngineSizeField, ~eo + 1, 8);
  EXPECT_BLOB_ERROR(parse_error(blob), "runs past the end");
}

TEST(BlobHeader, RefusesAnEngineOffsetPastTheEnd) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineOffsetField, 0xFFFFFFF0, 4);
  put_le(blob, kEngineSizeField, 1, 8);
  EXPECT_BLOB_ERROR(parse_error(blob), "engine at offset 4294967280 with size 1 runs past the end");
}

TEST(BlobHeader, RefusesAnEmptyEngine) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineSizeField, 0, 8);
  EXPECT_BLOB_ERROR(parse_error(blob), "engine_size is 0, the blob carries no engine");
}

TEST(BlobHeader, RefusesAnEngineOverlappingTheMetadata) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineOffsetField, 48, 4);
  put_le(blob, kEngineSizeField, 16, 8);
  EXPECT_BLOB_ERROR(parse_error(blob), "metadata [32, ", ") overlaps engine [48, 64)");
}

TEST(BlobHeader, RefusesAnEngineContainingTheMetadata) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kEngineOffsetField, 32, 4);
  put_le(blob, kEngineSizeField, blob.size() - 32, 8);
  EXPECT_BLOB_ERROR(parse_error(blob), "overlaps engine [32, " + std::to_string(blob.size()) + ")");
}

TEST(BlobHeader, AcceptsAnEngineBeforeTheMetadata) {
  // Nothing requires metadata first; only that the regions are disjoint.
  const std::string json = testing::json_with("");
  std::vector<uint8_t> blob(48 + json.size(), 0);
  const char magic[] = "TR01";
  std::copy(magic, magic + 4, blob.begin());
  put_le(blob, kMetadataOffsetField, 48, 4);
  put_le(blob, kMetadataSizeField, json.size(), 4);
  put_le(blob, kEngineOffsetField, 32, 4);
  put_le(blob, kEngineSizeField, 16, 8);
  std::copy(json.begin(), json.end(), blob.begin() + 48);
  EXPECT_EQ(parse_error(blob), "");
}

TEST(BlobHeader, AcceptsTrailingBytesAfterTheEngine) {
  std::vector<uint8_t> blob = valid_blob();
  blob.resize(blob.size() + 7, 0xEE);
  EXPECT_EQ(parse_error(blob), "");
}

TEST(BlobHeader, RefusesEmptyMetadataAsInvalidJson) {
  std::vector<uint8_t> blob = valid_blob();
  put_le(blob, kMetadataSizeField, 0, 4);
  EXPECT_BLOB_ERROR(parse_error(blob), "metadata (0 bytes at offset 32) is not valid JSON");
}

}  // namespace
}  // namespace etrt::blob
