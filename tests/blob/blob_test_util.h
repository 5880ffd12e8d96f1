#pragma once
// Builders for blob tests: valid metadata to start from, and raw blobs with
// arbitrary metadata text and header fields (write_blob refuses bad ones).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "blob/blob.h"

namespace etrt::blob::testing {

inline constexpr size_t kMetadataOffsetField = 4;
inline constexpr size_t kMetadataSizeField = 8;
inline constexpr size_t kEngineOffsetField = 12;
inline constexpr size_t kEngineSizeField = 16;

inline std::vector<uint8_t> engine_bytes(size_t n, uint8_t seed = 0) {
  std::vector<uint8_t> e(n);
  for (size_t i = 0; i < n; ++i) e[i] = static_cast<uint8_t>(i * 37 + seed * 101 + 11);
  return e;
}

// Two inputs, one output, no signature: the shape of most upstream blobs.
inline Metadata simple_metadata() {
  Metadata m;
  m.io_bindings = {{"x", "float32", {1, -1}, true}, {"mask", "", {}, true}, {"y", "float32", {1, 8}, false}};
  return m;
}

// The decode/prefill engine of docs/design.md: profile 0 = one token, profile 1 = 32..2048.
inline ProfileSignature llm_signature() {
  ProfileSignature s;
  s.num_profiles = 2;
  s.inputs = {{"input_ids", {{{1, 1}, {1, 1}, {1, 1}}, {{1, 32}, {1, 512}, {1, 2048}}}}};
  s.symbolic_dims = {{"seq_len", "input_ids", 1, {{1, 1}, {32, 2048}}}};
  return s;
}

inline Metadata llm_metadata() {
  Metadata m;
  m.io_bindings = {{"input_ids", "int64", {1, -1}, true},
                   {"kv_cache", "float16", {2, 4, 2048, 64}, true},
                   {"logits", "float32", {1, -1, 32000}, false},
                   {"kv_cache_out", "float16", {}, false}};
  m.aliased_io = {{"kv_cache_out", "kv_cache", "kv_cache_update"}};
  m.device_id = 0;
  m.profile_signature = llm_signature();
  return m;
}

inline void put_le(std::vector<uint8_t>& blob, size_t at, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) blob[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

// A well-formed layout around any metadata text; patch fields afterwards.
inline std::vector<uint8_t> raw_blob(const std::string& json, size_t engine_size = 16, const char* magic = "TR01") {
  const size_t engine_offset = (kHeaderSize + json.size() + 15) / 16 * 16;
  std::vector<uint8_t> blob(engine_offset + engine_size, 0);
  for (size_t i = 0; i < 4; ++i) blob[i] = static_cast<uint8_t>(magic[i]);
  put_le(blob, kMetadataOffsetField, kHeaderSize, 4);
  put_le(blob, kMetadataSizeField, json.size(), 4);
  put_le(blob, kEngineOffsetField, engine_offset, 4);
  put_le(blob, kEngineSizeField, engine_size, 8);
  blob[24] = 1;
  std::copy(json.begin(), json.end(), blob.begin() + kHeaderSize);
  const std::vector<uint8_t> engine = engine_bytes(engine_size);
  std::copy(engine.begin(), engine.end(), blob.begin() + static_cast<std::ptrdiff_t>(engine_offset));
  return blob;
}

inline std::vector<uint8_t> write(const Metadata& m, size_t engine_size = 16) {
  const std::vector<uint8_t> engine = engine_bytes(engine_size);
  return write_blob(m, engine.data(), engine.size());
}

// Parses `blob` and returns the error, or "" when it parsed; a refusal must be InvalidArgument. Copies into an
// exactly sized heap buffer so AddressSanitizer sees any read past the end.
inline std::string parse_error(const std::vector<uint8_t>& blob) {
  const std::unique_ptr<uint8_t[]> copy(new uint8_t[blob.empty() ? 1 : blob.size()]);
  std::copy(blob.begin(), blob.end(), copy.get());
  ParsedBlob parsed;
  Diagnostic why;
  const Error status = parse_blob(copy.get(), blob.size(), &parsed, why);
  if (status == Error::Ok) return std::string();
  EXPECT_EQ(status, Error::InvalidArgument) << why.c_str();
  return why.c_str();
}

inline std::string parse_error(const std::string& json) { return parse_error(raw_blob(json)); }

// The metadata of a one-input/one-output blob, with `extra` spliced into the
// top-level object; for tests about one key's type.
inline std::string json_with(const std::string& extra) {
  return R"({"io_bindings":[{"name":"x","is_input":true},{"name":"y","is_input":false}])" +
         (extra.empty() ? std::string() : "," + extra) + "}";
}

// Asserts the parse failed with a message starting "TensorRT blob: " and
// containing every fragment.
#define EXPECT_BLOB_ERROR(error_expr, ...)                                                    \
  do {                                                                                        \
    const std::string etrt_error_ = (error_expr);                                             \
    EXPECT_EQ(etrt_error_.rfind("TensorRT blob: ", 0), 0u) << "error: " << etrt_error_;       \
    for (const std::string& etrt_fragment_ : std::initializer_list<std::string>{__VA_ARGS__}) \
      EXPECT_NE(etrt_error_.find(etrt_fragment_), std::string::npos)                          \
          << "missing \"" << etrt_fragment_ << "\" in: " << etrt_error_;                      \
  } while (0)

}  // namespace etrt::blob::testing
