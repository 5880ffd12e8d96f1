#include "etrt/profile_guard.h"

#include "backend/glue/thread_state.h"

namespace etrt {

// The request lives in the thread's block (backend/thread_state.h), beside what an execution reads with it.
ProfileRequest current_profile_request() noexcept { return backend::thread_state().request; }

namespace {

// Puts `request` in force on the calling thread and returns the request it replaces: one thread-local lookup.
ProfileRequest put_in_force(ProfileRequest request) noexcept {
  ProfileRequest& in_force = backend::thread_state().request;
  const ProfileRequest previous = in_force;
  in_force = request;
  return previous;
}

}  // namespace

OptimizationProfileGuard::OptimizationProfileGuard(int32_t profile_index) noexcept
    : installed_(ProfileRequest::pinned(profile_index)), previous_(put_in_force(installed_)) {}

OptimizationProfileGuard::OptimizationProfileGuard(ProfileRequest request) noexcept
    : installed_(request), previous_(put_in_force(request)) {}

OptimizationProfileGuard OptimizationProfileGuard::automatic(AutoPolicy policy) noexcept {
  // A prvalue: C++17 guarantees it is built in the caller's object, so the
  // deleted move constructor is never needed.
  return OptimizationProfileGuard(ProfileRequest::automatic(policy));
}

OptimizationProfileGuard::~OptimizationProfileGuard() { backend::thread_state().request = previous_; }

}  // namespace etrt
