#pragma once
// Loading: blob bytes -> engine -> profile table -> execution contexts (and,
// for device engines, staging buffers and the in-flight event); unloading.
// Runs in BackendInterface::init() / destroy(); may allocate.

#include <cstddef>
#include <string>

#include "backend/delegate_state.h"

namespace etrt::backend {

// Fills `state` (already constructed, with `name` and `options` set) from the
// TR01/TR02 blob at [blob, blob + size). On failure returns false with a
// message in `error` that says what was wrong and what to do; `state` is then
// only fit for destruction.
[[nodiscard]] bool load_delegate(const void* blob, size_t size, DelegateState* state, std::string* error);

// Waits for the delegate's work in flight, then destroys `state` (constructed, loaded or not) in place, with its
// device current. BackendInterface::destroy() and a failed init() end here.
void destroy_delegate(DelegateState* state);

}  // namespace etrt::backend
