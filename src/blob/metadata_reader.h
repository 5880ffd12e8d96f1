#pragma once
// Private to etrt_blob: the metadata decoder with the blob offset it came
// from, so parse_blob's JSON errors can say where in the blob they are.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "blob/metadata.h"
#include "common/error.h"

namespace etrt::blob::detail {

// The limit messages, shared by the reader (which checks each count before it
// builds anything sized by it) and validate_metadata, so both say the same.
std::string too_many_entries(const std::string& path, size_t n, size_t limit);
// `what` x profiles above kMaxProfileEntries; `what` is "inputs" or "symbolic dims".
std::string too_many_profile_entries(const char* what, size_t n, size_t profiles);

// `offset` is only for messages; nullopt when the JSON did not come from a blob. parse_blob's error contract:
// *out is written only on success.
[[nodiscard]] Error decode_metadata(const char* json, size_t size, std::optional<uint64_t> offset, Metadata* out,
                                    Diagnostic& why);

}  // namespace etrt::blob::detail
