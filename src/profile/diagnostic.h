#pragma once
// A fixed-capacity, heap-free message buffer for refusals on the execute path.
//
// execute() must not allocate (docs/design.md, "Targets"), yet every refusal has to say
// what was wrong with the numbers and what to do (docs/design.md, decision 7). The
// buffer lives on the caller's stack; only the failure path formats into it.

#include <cstddef>

#if defined(__GNUC__) || defined(__clang__)
#define ETRT_PRINTF_FORMAT(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define ETRT_PRINTF_FORMAT(fmt_index, args_index)
#endif

namespace etrt::profile {

class Diagnostic {
 public:
  /// Total bytes including the terminating NUL. Large enough for the no-fit
  /// message of an 8-input, 4-profile rank-4 engine; longer text is cut.
  static constexpr size_t kCapacity = 4096;

  /// Starts empty. Only the first byte is written: constructing one per
  /// execute() costs nothing measurable.
  Diagnostic() noexcept { clear(); }  // NOLINT(cppcoreguidelines-pro-type-member-init): the rest of text_ stays unwritten on purpose

  /// Forgets the text.
  void clear() noexcept {
    length_ = 0;
    truncated_ = false;
    text_[0] = '\0';
  }

  /// Appends printf-formatted text. When the text would not fit, keeps what
  /// fits, ends the buffer with "..." so a reader sees it was cut, and ignores
  /// later appends.
  void append(const char* format, ...) noexcept ETRT_PRINTF_FORMAT(2, 3);

  /// The NUL-terminated text (empty when nothing was appended).
  const char* c_str() const noexcept { return text_; }
  /// Length of the text, without the NUL.
  size_t size() const noexcept { return length_; }
  bool empty() const noexcept { return length_ == 0; }
  /// True once an append did not fit.
  bool truncated() const noexcept { return truncated_; }

 private:
  size_t length_;
  bool truncated_;
  char text_[kCapacity];
};

}  // namespace etrt::profile
