#pragma once
// Where refusals go: the thread's last error, which a runner reads through etrt::last_error_message()
// (etrt/report.h), and ExecuTorch's log. Fixed buffers only: a refusal on the execute path must not allocate either.

#include "common/compiler.h"

namespace etrt::backend {

// Formats "TensorRT delegate <delegate>: <message>" into the thread's last-error buffer and logs it at Error level.
ETRT_COLD void report_error(const char* delegate, const char* format, ...) ETRT_PRINTF_FORMAT(2, 3);

// The same for a refusal that belongs to no delegate: "<who>: <message>" (etrt's CUDA device allocator).
ETRT_COLD void report_error_of(const char* who, const char* message);

}  // namespace etrt::backend
