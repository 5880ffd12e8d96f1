#pragma once
// A shape as error messages print it, "[1, -1, 16]". For failure paths only: it allocates.

#include <string>

#include "common/shape.h"

namespace etrt {

inline std::string shape_text(const int64_t* d, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(d[i]);
  }
  return s + "]";
}
inline std::string shape_text(const Shape& s) { return shape_text(s.d, s.rank); }

}  // namespace etrt
