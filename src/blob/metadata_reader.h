#pragma once
// Private to etrt_blob: the metadata decoder with the blob offset it came
// from, so parse_blob's JSON errors can say where in the blob they are.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "blob/metadata.h"

namespace etrt::blob::detail {

// `offset` is only for messages; nullopt when the JSON did not come from a blob.
bool decode_metadata(const char* json, size_t size, std::optional<uint64_t> offset, Metadata* out, std::string* error);

}  // namespace etrt::blob::detail
