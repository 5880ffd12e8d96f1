#pragma once
// Where refusals go: the thread's last error, which a runner reads through etrt::last_error_message()
// (etrt/report.h), and ExecuTorch's log. Fixed buffers only: a refusal on the execute path must not allocate either.

namespace etrt::backend {

// Formats "TensorRT delegate <delegate>: <message>" into the thread's last-error buffer and logs it at Error level.
void report_error(const char* delegate, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace etrt::backend
