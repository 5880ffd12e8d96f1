#pragma once
// What a thread has asked of etrt, in one thread-local block: its profile request (etrt/profile_guard.h), its
// innermost open ExecutionReport (etrt/report.h) and whether its last error is current (last_error.h). An execution
// reads and writes all three; in one block they cost one thread-local lookup (__tls_get_addr: libetrt keeps the
// default TLS model so that it can be loaded with dlopen) instead of one each.

#include "etrt/profile_guard.h"
#include "etrt/report.h"

namespace etrt::backend {

struct ThreadState {
  ProfileRequest request{};           // the innermost guard's request; kDefault with none
  ExecutionReport* report = nullptr;  // the innermost open report, or null
  bool has_error = false;             // the last-error text is this thread's latest refusal
};

// The calling thread's block. It lives in libetrt exactly once: a copy in a second shared object would be a second,
// unrelated thread-local.
ThreadState& thread_state() noexcept;

}  // namespace etrt::backend
