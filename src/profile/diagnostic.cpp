#include "profile/diagnostic.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace etrt::profile {

namespace {
constexpr char kEllipsis[] = "...";
constexpr size_t kEllipsisLength = sizeof(kEllipsis) - 1;
}  // namespace

void Diagnostic::append(const char* format, ...) noexcept {
  if (truncated_) return;
  const size_t room = kCapacity - length_;  // always >= 1: length_ <= kCapacity - 1
  va_list args;
  va_start(args, format);
  const int written = std::vsnprintf(text_ + length_, room, format, args);
  va_end(args);
  if (written < 0) {
    // An encoding error: vsnprintf may have left partial output; drop it.
    text_[length_] = '\0';
    return;
  }
  if (static_cast<size_t>(written) < room) {
    length_ += static_cast<size_t>(written);
    return;
  }
  // vsnprintf kept room - 1 characters; mark the cut so nobody mistakes a
  // clipped bound list for the whole story.
  truncated_ = true;
  length_ = kCapacity - 1;
  std::memcpy(text_ + length_ - kEllipsisLength, kEllipsis, kEllipsisLength);
  text_[length_] = '\0';
}

}  // namespace etrt::profile
