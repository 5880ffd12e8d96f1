// The 32-byte header and the layout checks. Every offset and size comes from
// the file, so each check compares against the space that is left instead of
// adding first: a huge size must not wrap around and pass.

#include "blob/blob.h"

#include <cinttypes>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "blob/metadata_reader.h"

namespace etrt::blob {
namespace {

constexpr size_t kMetadataOffsetField = 4;
constexpr size_t kMetadataSizeField = 8;
constexpr size_t kEngineOffsetField = 12;
constexpr size_t kEngineSizeField = 16;
constexpr size_t kReservedField = 24;
// Upstream's writer puts 1 in the first reserved byte; we mirror it so the
// bytes match. Readers ignore the field.
constexpr uint8_t kReserved[8] = {1, 0, 0, 0, 0, 0, 0, 0};

// Every layout refusal ends with this advice; a format string, so it joins the message's literal.
#define ETRT_RE_EXPORT "; the .pte is truncated or corrupt, re-export the model"

// Little-endian regardless of the host, byte by byte.
uint64_t read_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

void write_le(uint8_t* p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The magic as it would be quoted in Python: printable ASCII as is, other
// bytes as \xNN, so a message never carries raw binary.
std::string quote_magic(const uint8_t* p) {
  static const char kHex[] = "0123456789abcdef";
  std::string s = "'";
  for (size_t i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7F && p[i] != '\\' && p[i] != '\'') {
      s += static_cast<char>(p[i]);
    } else {
      s += "\\x";
      s += kHex[p[i] >> 4];
      s += kHex[p[i] & 0xF];
    }
  }
  return s + "'";
}

Error parse_layout(const uint8_t* bytes, uint64_t size, ParsedBlob* out, uint64_t* metadata_offset,
                   uint64_t* metadata_size, Diagnostic& why) {
  if (size < kHeaderSize)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: the delegate data is %" PRIu64
                " bytes, shorter than the %zu-byte header" ETRT_RE_EXPORT,
                size, kHeaderSize);
  if (std::memcmp(bytes, kMagicTr01, 4) != 0 && std::memcmp(bytes, kMagicTr02, 4) != 0)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: magic is %s, expected 'TR01' or 'TR02'; this delegate data was not written by a "
                "TensorRT exporter or is corrupt, re-export the model",
                quote_magic(bytes).c_str());
  const uint64_t mo = read_le(bytes + kMetadataOffsetField, 4);
  const uint64_t ms = read_le(bytes + kMetadataSizeField, 4);
  const uint64_t eo = read_le(bytes + kEngineOffsetField, 4);
  const uint64_t es = read_le(bytes + kEngineSizeField, 8);
  if (mo < kHeaderSize)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: metadata_offset %" PRIu64 " points inside the %zu-byte header" ETRT_RE_EXPORT, mo,
                kHeaderSize);
  if (eo < kHeaderSize)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: engine_offset %" PRIu64 " points inside the %zu-byte header" ETRT_RE_EXPORT, eo,
                kHeaderSize);
  if (eo % kEngineAlignment != 0)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: engine_offset %" PRIu64
                " is not a multiple of %zu (TensorRT needs the engine 16-byte aligned)" ETRT_RE_EXPORT,
                eo, kEngineAlignment);
  // mo and ms are u32, so mo + ms cannot overflow u64.
  if (mo + ms > size)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: metadata at offset %" PRIu64 " with size %" PRIu64 " ends at byte %" PRIu64
                ", past the end of the %" PRIu64 "-byte blob" ETRT_RE_EXPORT,
                mo, ms, mo + ms, size);
  if (es == 0)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: engine_size is 0, the blob carries no engine" ETRT_RE_EXPORT);
  if (eo > size || es > size - eo)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: engine at offset %" PRIu64 " with size %" PRIu64 " runs past the end of the %" PRIu64
                "-byte blob" ETRT_RE_EXPORT,
                eo, es, size);
  // Both regions are inside the buffer now, so their ends do not overflow.
  if (mo < eo + es && eo < mo + ms)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: metadata [%" PRIu64 ", %" PRIu64 ") overlaps engine [%" PRIu64 ", %" PRIu64
                ")" ETRT_RE_EXPORT,
                mo, mo + ms, eo, eo + es);
  out->magic.assign(reinterpret_cast<const char*>(bytes), 4);
  out->engine = bytes + eo;
  out->engine_size = es;
  *metadata_offset = mo;
  *metadata_size = ms;
  return Error::Ok;
}

#undef ETRT_RE_EXPORT

}  // namespace

Error parse_blob(const void* data, size_t size, ParsedBlob* out, Diagnostic& why) {
  if (out == nullptr)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: parse_blob needs somewhere to put the result (out is null)");
  if (data == nullptr && size != 0)
    return fail(why, Error::InvalidArgument, "TensorRT blob: the delegate data pointer is null");
  const auto* bytes = static_cast<const uint8_t*>(data);
  uint64_t metadata_offset = 0, metadata_size = 0;
  // Built aside and moved into *out only once everything passed: a refusal leaves *out as it was.
  ParsedBlob parsed;
  try {
    const Error layout = parse_layout(bytes, size, &parsed, &metadata_offset, &metadata_size, why);
    if (layout != Error::Ok) return layout;
  } catch (const std::bad_alloc&) {
    return fail(why, Error::MemoryAllocationFailed, "TensorRT blob: ran out of memory reading the blob header");
  }
  const Error decoded =
      detail::decode_metadata(reinterpret_cast<const char*>(bytes + metadata_offset),
                              static_cast<size_t>(metadata_size), metadata_offset, &parsed.metadata, why);
  if (decoded != Error::Ok) return decoded;
  *out = std::move(parsed);
  return Error::Ok;
}

std::vector<uint8_t> write_blob(const Metadata& metadata, const void* engine, size_t engine_size) {
  try {
    if (engine == nullptr || engine_size == 0) return {};
    Diagnostic ignored;  // the caller asks validate_metadata for the reason
    if (validate_metadata(metadata, ignored) != Error::Ok) return {};
    const std::string json = metadata_to_json(metadata);
    const uint64_t engine_offset =
        (kHeaderSize + json.size() + kEngineAlignment - 1) / kEngineAlignment * kEngineAlignment;
    // metadata_size and engine_offset are u32 fields.
    if (engine_offset > std::numeric_limits<uint32_t>::max()) return {};
    std::vector<uint8_t> blob(static_cast<size_t>(engine_offset) + engine_size, 0);
    std::memcpy(blob.data(), metadata.aliased_io.empty() ? kMagicTr01 : kMagicTr02, 4);
    write_le(blob.data() + kMetadataOffsetField, kHeaderSize, 4);
    write_le(blob.data() + kMetadataSizeField, json.size(), 4);
    write_le(blob.data() + kEngineOffsetField, engine_offset, 4);
    write_le(blob.data() + kEngineSizeField, engine_size, 8);
    std::memcpy(blob.data() + kReservedField, kReserved, sizeof(kReserved));
    std::memcpy(blob.data() + kHeaderSize, json.data(), json.size());
    std::memcpy(blob.data() + engine_offset, engine, engine_size);
    return blob;
  } catch (const std::bad_alloc&) {
    return {};
  }
}

}  // namespace etrt::blob
