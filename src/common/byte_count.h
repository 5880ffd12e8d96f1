#pragma once
// A byte count as the weight_streaming_budget compile spec and string load option carry it (backend/load_options.h),
// and as the tools read it (etrt_parse_byte_count): one rule for both.

#include <cstddef>
#include <cstdint>
#include <limits>

namespace etrt {

// One or more ASCII decimal digits, nothing else (no sign, space, NUL or decimal point), at most INT64_MAX, into
// *bytes; false, and *bytes untouched, for anything else. `text` need not be NUL-terminated.
[[nodiscard]] inline bool parse_byte_count(const char* text, size_t length, int64_t* bytes) {
  if (text == nullptr || length == 0) return false;
  int64_t value = 0;
  for (size_t i = 0; i < length; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return false;
    const int64_t digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *bytes = value;
  return true;
}

}  // namespace etrt
