// The runtime's readings for tools (inspection.h).
#include "backend/inspection.h"

#include <new>
#include <string>

#include "blob/blob.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::backend {

namespace {

// A little-endian u32 of a header parse_blob accepted.
uint32_t header_u32(const uint8_t* bytes, size_t at) {
  return static_cast<uint32_t>(bytes[at]) | static_cast<uint32_t>(bytes[at + 1]) << 8 |
         static_cast<uint32_t>(bytes[at + 2]) << 16 | static_cast<uint32_t>(bytes[at + 3]) << 24;
}

}  // namespace

Error describe_blob(const void* data, size_t size, std::string* text) {
  try {
    blob::ParsedBlob parsed;
    Diagnostic why;
    if (const Error e = blob::parse_blob(data, size, &parsed, why); e != Error::Ok) {
      *text = why.c_str();
      return e;
    }
    const auto* bytes = static_cast<const uint8_t*>(data);
    std::string metadata = blob::metadata_to_json(parsed.metadata);
    text->clear();
    text->reserve(metadata.size() + 200);
    *text += "{\"magic\":\"" + parsed.magic + "\",\"metadata_offset\":" + std::to_string(header_u32(bytes, 4)) +
             ",\"metadata_size\":" + std::to_string(header_u32(bytes, 8)) +
             ",\"engine_offset\":" + std::to_string(header_u32(bytes, 12)) +
             ",\"engine_size\":" + std::to_string(parsed.engine_size) + ",\"blob_size\":" + std::to_string(size) +
             ",\"metadata\":";
    *text += metadata;
    *text += '}';
    return Error::Ok;
  } catch (const std::bad_alloc&) {
    text->clear();
    return Error::MemoryAllocationFailed;
  }
}

Error describe_engine(const void* data, size_t size, std::string* text) {
  return engine::tensorrt::describe_gpufree_engine(data, size, text);
}

}  // namespace etrt::backend
