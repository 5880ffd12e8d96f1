#pragma once
// The TR01/TR02 blob that a TensorRT delegate carries inside a .pte:
//
//   offset 0   magic[4]            "TR01", or "TR02" when aliased_io is non-empty
//          4   u32 metadata_offset  32
//          8   u32 metadata_size
//         12   u32 engine_offset    16-byte aligned
//         16   u64 engine_size
//         24   reserved[8]          01 00 00 00 00 00 00 00 (ignored on read)
//         32   compact JSON metadata, zero padding, then the serialized engine
//
// All integers are little-endian. The layout is Torch-TensorRT's; files it
// exports load unchanged. docs/blob-format.md has the whole story, including
// python/etrt/blob/writer.py, which writes the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "blob/metadata.h"
#include "common/error.h"

namespace etrt::blob {

inline constexpr size_t kHeaderSize = 32;
// The metadata JSON may be at most this many bytes (docs/limits.md): real metadata is a few KiB, and the parsed
// document takes several times its text.
inline constexpr size_t kMaxMetadataSize = size_t{16} << 20;
inline constexpr size_t kEngineAlignment = 16;
inline constexpr char kMagicTr01[4] = {'T', 'R', '0', '1'};
inline constexpr char kMagicTr02[4] = {'T', 'R', '0', '2'};

struct ParsedBlob {
  std::string magic;  // "TR01" or "TR02"
  Metadata metadata;
  const uint8_t* engine = nullptr;  // points into the caller's buffer, which must outlive it
  uint64_t engine_size = 0;
};

// Reads a blob. Never throws and never reads outside [data, data + size).
// On success fills *out and returns Ok. On failure leaves *out untouched, writes a message starting
// "TensorRT blob: " into `why` that says what was wrong, with the numbers, and what to do, and returns
// InvalidArgument (the blob is malformed), MemoryAllocationFailed (memory ran out decoding it) or Internal.
[[nodiscard]] Error parse_blob(const void* data, size_t size, ParsedBlob* out, Diagnostic& why);

// Decodes and validates the metadata JSON alone (what parse_blob does after
// the header checks). Same error contract as parse_blob.
[[nodiscard]] Error parse_metadata_json(const char* json, size_t size, Metadata* out, Diagnostic& why);

// The compact JSON text the writer embeds: Python's
// json.dumps(..., separators=(",", ":")) byte for byte, so non-ASCII and
// control characters come out as \uXXXX escapes (lowercase hex, surrogate
// pairs above U+FFFF). Strings must be valid UTF-8; validate_metadata checks.
std::string metadata_to_json(const Metadata& metadata);

// Builds a blob. Returns an empty vector when the result would not parse back:
// metadata that fails validate_metadata (call it for the reason), an empty
// engine, or metadata too large for the u32 header fields.
std::vector<uint8_t> write_blob(const Metadata& metadata, const void* engine, size_t engine_size);

}  // namespace etrt::blob
