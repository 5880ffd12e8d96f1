#include "backend/glue/last_error.h"

#include <cstdarg>
#include <cstddef>
#include <cstdio>

#include <executorch/runtime/platform/log.h>

#include "backend/glue/thread_state.h"
#include "etrt/report.h"

namespace etrt {
namespace {

constexpr size_t kMaxMessage = 8192;
thread_local char t_last_error[kMaxMessage] = {};

}  // namespace

// Whether t_last_error holds the thread's latest refusal is in the thread's block (thread_state.h): executions
// clear the flag, not the text.
const char* last_error_message() noexcept { return backend::thread_state().has_error ? t_last_error : ""; }
void clear_last_error() noexcept { backend::thread_state().has_error = false; }
bool has_last_error() noexcept { return backend::thread_state().has_error; }

namespace backend {
namespace {

// ExecuTorch's log formats into a fixed buffer of a few hundred bytes, and a
// refusal that lists every profile is longer: log it a line (or a slice of a
// long line) at a time so nothing is cut. last_error_message() has it whole.
void log_error_lines(const char* message) {
  constexpr int kSlice = 200;
  const char* p = message;
  bool continued = false;
  while (*p != '\0') {
    const char* end = p;
    while (*end != '\0' && *end != '\n' && end - p < kSlice) ++end;
    ET_LOG(Error, "%s%.*s", continued ? "  " : "", static_cast<int>(end - p), p);
    continued = true;
    p = *end == '\n' ? end + 1 : end;
  }
}

}  // namespace

void report_error(const char* delegate, const char* format, ...) {
  int n = std::snprintf(t_last_error, kMaxMessage, "TensorRT delegate %s: ", delegate);
  if (n < 0) n = 0;
  if (static_cast<size_t>(n) < kMaxMessage) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(t_last_error + n, kMaxMessage - static_cast<size_t>(n), format, args);
    va_end(args);
  }
  thread_state().has_error = true;
  log_error_lines(t_last_error);
}

void report_error_of(const char* who, const char* message) {
  std::snprintf(t_last_error, kMaxMessage, "%s: %s", who, message);
  thread_state().has_error = true;
  log_error_lines(t_last_error);
}

}  // namespace backend
}  // namespace etrt
