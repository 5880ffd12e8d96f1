#pragma once
// Small value types shared by every layer: a fixed-capacity shape and a
// non-owning span. Neither allocates, so the per-execution path can build and
// pass them freely.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace etrt {

// TensorRT's Dims carries at most 8 dimensions; nothing we accept is larger.
inline constexpr int32_t kMaxRank = 8;

struct Shape {
  int32_t rank = 0;
  int64_t d[kMaxRank] = {};

  constexpr int64_t operator[](int32_t i) const { return d[i]; }
  constexpr int64_t& operator[](int32_t i) { return d[i]; }

  // Product of the dimensions; 1 for rank 0. Negative if any dim is dynamic (-1).
  constexpr int64_t numel() const {
    int64_t n = 1;
    for (int32_t i = 0; i < rank; ++i) n *= d[i];
    return n;
  }

  friend constexpr bool operator==(const Shape& a, const Shape& b) {
    if (a.rank != b.rank) return false;
    for (int32_t i = 0; i < a.rank; ++i)
      if (a.d[i] != b.d[i]) return false;
    return true;
  }
  friend constexpr bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
};

// Builds a Shape from a braced list, e.g. make_shape({1, 32}). Ranks above
// kMaxRank are truncated to rank -1 so callers can detect the misuse.
template <typename Int>
constexpr Shape make_shape(std::initializer_list<Int> dims) {
  Shape s;
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    s.rank = -1;
    return s;
  }
  for (Int v : dims) s.d[s.rank++] = static_cast<int64_t>(v);
  return s;
}

// A minimal std::span stand-in (C++17 has none): a pointer and a length.
template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}
  template <typename Container, typename = decltype(std::declval<Container&>().data())>
  constexpr Span(Container& c) : data_(c.data()), size_(c.size()) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace etrt
