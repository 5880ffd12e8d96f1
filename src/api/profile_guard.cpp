#include "etrt/profile_guard.h"

#include "backend/thread_state.h"

namespace etrt {

// The request lives in the thread's block (backend/thread_state.h), beside what an execution reads with it.
ProfileRequest current_profile_request() noexcept { return backend::thread_state().request; }

OptimizationProfileGuard::OptimizationProfileGuard(int32_t profile_index) noexcept
    : OptimizationProfileGuard(ProfileRequest::pinned(profile_index)) {}

OptimizationProfileGuard::OptimizationProfileGuard(ProfileRequest request) noexcept
    : installed_(request), previous_(backend::thread_state().request) {
  backend::thread_state().request = request;
}

OptimizationProfileGuard OptimizationProfileGuard::automatic(AutoPolicy policy) noexcept {
  // A prvalue: C++17 guarantees it is built in the caller's object, so the
  // deleted move constructor is never needed.
  return OptimizationProfileGuard(ProfileRequest::automatic(policy));
}

OptimizationProfileGuard::~OptimizationProfileGuard() { backend::thread_state().request = previous_; }

}  // namespace etrt
