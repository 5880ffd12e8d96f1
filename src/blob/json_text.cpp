#include "blob/json_text.h"

#include <cstddef>
#include <cstdio>
#include <string_view>

#include "common/utf8.h"

namespace etrt::blob::detail {
namespace {

constexpr uint32_t kReplacementCharacter = 0xFFFD;

using ::etrt::decode_utf8;

void append_u_escape(std::string& out, uint32_t unit) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(unit));
  out += buffer;
}

}  // namespace

size_t find_invalid_utf8(const char* text, size_t size) {
  for (size_t i = 0; i < size;) {
    uint32_t cp = 0;
    size_t length = 0;
    if (!decode_utf8(text, size, i, &cp, &length)) return i;
    i += length;
  }
  return size;
}

bool is_valid_utf8(const std::string& s) { return find_invalid_utf8(s.data(), s.size()) == s.size(); }

bool nests_deeper_than(const char* text, size_t size, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < size; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // whatever follows a backslash cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

const ArrayLimit* find_oversized_array(const char* text, size_t size, const ArrayLimit* limits, size_t n_limits) {
  size_t depth = 0, string_start = 0, commas = 0;
  bool in_string = false;
  std::string_view pending_key, key;  // the last string at depth 1, and the key whose value is being read
  const ArrayLimit* counting = nullptr;
  for (size_t i = 0; i < size; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (depth == 1) pending_key = std::string_view(text + string_start, i - string_start);
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        string_start = i + 1;
        break;
      case ':':
        if (depth == 1) key = pending_key;
        break;
      case ',':
        if (depth == 1) {
          key = pending_key = std::string_view();
        } else if (depth == 2 && counting != nullptr && ++commas >= counting->limit) {
          return counting;  // at least limit + 1 entries
        }
        break;
      case '[':
      case '{':
        ++depth;
        if (depth == 2 && c == '[') {
          counting = nullptr;
          commas = 0;
          for (size_t k = 0; k < n_limits && !key.empty(); ++k)
            if (key == limits[k].key) counting = &limits[k];
        }
        break;
      case ']':
      case '}':
        if (depth > 0) {
          if (depth == 2) counting = nullptr;
          --depth;
        }
        break;
      default:
        break;
    }
  }
  return nullptr;
}

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t length = 0;
    if (!decode_utf8(s.data(), s.size(), i, &cp, &length)) {
      cp = kReplacementCharacter;
      length = 1;
    }
    i += length;
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (cp >= 0x20 && cp <= 0x7E) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      append_u_escape(out, cp);
    } else {
      const uint32_t v = cp - 0x10000;
      append_u_escape(out, 0xD800 + (v >> 10));
      append_u_escape(out, 0xDC00 + (v & 0x3FF));
    }
  }
  out += '"';
}

void append_json_int(std::string& out, int64_t value) {
  // std::to_string is locale-independent for integers and handles INT64_MIN.
  out += std::to_string(value);
}

}  // namespace etrt::blob::detail
