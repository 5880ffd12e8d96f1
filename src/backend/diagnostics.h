#pragma once
// Where refusals go: a thread-local "last error" a runner can read
// (etrt::last_error_message()) and ExecuTorch's log. Fixed buffers only: a
// refusal on the execute path must not allocate either.

#include <atomic>
#include <cstdarg>
#include <cstdint>

#include "etrt/report.h"

namespace etrt::backend {

// Formats "TensorRT delegate <delegate>: <message>" into the thread's
// last-error buffer and logs it at Error level.
void report_error(const char* delegate, const char* format, ...) __attribute__((format(printf, 2, 3)));


// Process-wide counters behind get_option (etrt/options.h kCounter*).
struct Counters {
  std::atomic<int64_t> switches{0};
  std::atomic<int64_t> executions{0};
  std::atomic<int32_t> last_profile{-1};
};
Counters& counters() noexcept;

}  // namespace etrt::backend
