#pragma once
// UTF-8 decoding and the escaping every message applies to names it quotes. For load and failure paths only: the
// escape allocates.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace etrt {

// Decodes one UTF-8 sequence starting at s[i]. On success stores the code point and its length; on failure returns
// false (the caller treats s[i] as one bad byte). The ranges are RFC 3629's table, which is what rules out overlong
// forms and surrogates without separate checks.
inline bool decode_utf8(const char* s, size_t size, size_t i, uint32_t* code_point, size_t* length) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *code_point = b0;
    *length = 1;
    return true;
  }
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // U+D800..U+DFFF
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return false;
  }
  if (size - i < n) return false;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return false;
  for (size_t k = 2; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return false;
  uint32_t cp = b0 & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
  *code_point = cp;
  *length = n;
  return true;
}

// A name as messages quote it: control characters (below 0x20), DEL and bytes that are not part of well-formed
// UTF-8 as \xNN, a backslash as \\, the rest as is. A NUL can then never cut a message short, and a newline or an
// escape sequence in a tensor name never reaches a log as such.
inline std::string escape_name(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    uint32_t cp = 0;
    size_t length = 0;
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c < 0x20 || c == 0x7F || !decode_utf8(s.data(), s.size(), i, &cp, &length)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    } else {
      out.append(s.data() + i, length);
      i += length;
    }
  }
  return out;
}

}  // namespace etrt
