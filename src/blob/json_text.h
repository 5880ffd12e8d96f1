#pragma once
// JSON text helpers of the blob writer (and of the tools' answers, backend/inspection.cpp). The blob must match
// Python's json.dumps byte for byte. nlohmann's dump() leaves non-ASCII and DEL raw by default; with ensure_ascii it
// agrees on valid text but throws on invalid UTF-8, and key order would need ordered_json. These few lines pin the
// bytes to Python's regardless of the library's version or settings.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/utf8.h"

namespace etrt::blob::detail {

// True when `s` is well-formed UTF-8 as RFC 3629 defines it: no overlong
// forms, no encoded surrogates, nothing above U+10FFFF. Python's strict codec
// and nlohmann's parser draw the same line.
bool is_valid_utf8(const std::string& s);

// Offset of the first byte that does not start a well-formed UTF-8 sequence,
// or `size` when there is none (Python's UnicodeDecodeError.start).
size_t find_invalid_utf8(const char* text, size_t size);

// A name as error messages quote it (common/utf8.h).
using ::etrt::escape_name;

// True when brackets and braces outside strings nest deeper than `limit`.
// The metadata schema nests 7 deep; the limit bounds the parser's recursion,
// and keeps every blob the reader accepts readable by Python's json module
// (which recurses), so the tools can hand the parsed metadata to Python.
bool nests_deeper_than(const char* text, size_t size, size_t limit);

// A top-level key whose array value may hold at most `limit` entries.
struct ArrayLimit {
  const char* key;
  size_t limit;
};

// Scans the text without parsing it and returns the first of `limits` whose
// key, at the top level of the document, holds an array of more than its limit
// of entries (or null). Keys are matched as written, escapes undecoded. Lets the
// reader refuse an absurd count before the parser allocates anything for it.
const ArrayLimit* find_oversized_array(const char* text, size_t size, const ArrayLimit* limits, size_t n_limits);

// Appends `s` as a quoted JSON string exactly as Python's json.dumps with
// ensure_ascii=True writes it: \" \\ \b \f \n \r \t by name; every other byte
// below 0x20, DEL and every non-ASCII character as \uXXXX with lowercase hex,
// characters above U+FFFF as a surrogate pair. A byte that is not part of
// well-formed UTF-8 becomes \ufffd (Python cannot hold such a string at all;
// the writer refuses it before getting here).
void append_json_string(std::string& out, const std::string& s);

// Appends a signed integer in decimal, as Python's int.__repr__ writes it.
void append_json_int(std::string& out, int64_t value);

}  // namespace etrt::blob::detail
