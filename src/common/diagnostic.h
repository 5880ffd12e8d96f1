#pragma once
// The message half of etrt's one error convention (common/error.h): a fixed-capacity, heap-free text buffer that a
// fallible function writes its reason into.
//
// execute() must not allocate (docs/design.md, "Targets"), yet every refusal has to say what was wrong and what to do
// (docs/design.md, decision 7). The buffer lives with its caller (on the stack, or in the delegate); only failure
// paths format into it, so a call that succeeds pays for one byte.

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "common/compiler.h"

namespace etrt {

class Diagnostic {
 public:
  /// Total bytes including the terminating NUL. Large enough for the no-fit message of an 8-input, 4-profile rank-4
  /// engine; longer text is cut.
  static constexpr size_t kCapacity = 4096;

  /// Starts empty. Only the first byte is written: constructing one per execute() costs nothing measurable.
  Diagnostic() noexcept {
    clear();
  }  // NOLINT(cppcoreguidelines-pro-type-member-init): the rest of text_ stays unwritten on purpose

  /// Forgets the text.
  void clear() noexcept {
    length_ = 0;
    truncated_ = false;
    text_[0] = '\0';
  }

  /// Appends printf-formatted text. When the text would not fit, keeps what fits, ends the buffer with "..." so a
  /// reader sees it was cut, and ignores later appends.
  ETRT_COLD void append(const char* format, ...) noexcept ETRT_PRINTF_FORMAT(2, 3) {
    va_list args;
    va_start(args, format);
    vappend(format, args);
    va_end(args);
  }

  /// append() with the arguments as a va_list.
  ETRT_COLD void vappend(const char* format, va_list args) noexcept {
    if (truncated_) return;
    const size_t room = kCapacity - length_;  // always >= 1: length_ <= kCapacity - 1
    const int written = std::vsnprintf(text_ + length_, room, format, args);
    if (written < 0) {
      // An encoding error: vsnprintf may have left partial output; drop it.
      text_[length_] = '\0';
      return;
    }
    if (static_cast<size_t>(written) < room) {
      length_ += static_cast<size_t>(written);
      return;
    }
    // vsnprintf kept room - 1 characters; mark the cut so nobody mistakes a clipped list for the whole story.
    static constexpr char kEllipsis[] = "...";
    static constexpr size_t kEllipsisLength = sizeof(kEllipsis) - 1;
    truncated_ = true;
    length_ = kCapacity - 1;
    std::memcpy(text_ + length_ - kEllipsisLength, kEllipsis, kEllipsisLength);
    text_[length_] = '\0';
  }

  /// Puts printf-formatted text in front of what is there: how a caller says where a callee's reason comes from
  /// ("sizing the staging buffers: " + the engine's own words). What no longer fits is cut at the end, as append cuts.
  ETRT_COLD void prepend(const char* format, ...) noexcept ETRT_PRINTF_FORMAT(2, 3) {
    char head[kCapacity];
    va_list args;
    va_start(args, format);
    const int written = std::vsnprintf(head, sizeof(head), format, args);
    va_end(args);
    if (written <= 0) return;  // nothing to put in front (or an encoding error)
    char tail[kCapacity];
    std::memcpy(tail, text_, length_ + 1);
    const bool was_truncated = truncated_;
    clear();
    append("%s%s", head, tail);
    if (was_truncated) truncated_ = true;
  }

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

}  // namespace etrt
