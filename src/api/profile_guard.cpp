#include "etrt/profile_guard.h"

#include "common/fast_tls.h"

namespace etrt {

namespace {
// The current thread's request. It lives in the shared library `etrt` exactly
// once: a copy in a second shared object would be a second, unrelated
// thread-local (the same reason ExecuTorch keeps CallerStreamGuard's state in
// a shared library).
thread_local ProfileRequest t_current_request ETRT_FAST_TLS{};
}  // namespace

ProfileRequest current_profile_request() noexcept { return t_current_request; }

OptimizationProfileGuard::OptimizationProfileGuard(int32_t profile_index) noexcept
    : OptimizationProfileGuard(ProfileRequest::pinned(profile_index)) {}

OptimizationProfileGuard::OptimizationProfileGuard(ProfileRequest request) noexcept
    : installed_(request), previous_(t_current_request) {
  t_current_request = request;
}

OptimizationProfileGuard OptimizationProfileGuard::automatic(AutoPolicy policy) noexcept {
  // A prvalue: C++17 guarantees it is built in the caller's object, so the
  // deleted move constructor is never needed.
  return OptimizationProfileGuard(ProfileRequest::automatic(policy));
}

OptimizationProfileGuard::~OptimizationProfileGuard() { t_current_request = previous_; }

}  // namespace etrt
