#pragma once
// Loading: blob bytes -> engine -> profile table -> execution contexts.
// Runs in BackendInterface::init(); may allocate.

#include <cstddef>
#include <string>

#include "backend/delegate_state.h"

namespace etrt::backend {

// Fills `state` (already constructed, with `name` and `options` set) from the
// TR01/TR02 blob at [blob, blob + size). On failure returns false with a
// message in `error` that says what was wrong and what to do; `state` is then
// only fit for destruction.
bool load_delegate(const void* blob, size_t size, DelegateState* state, std::string* error);

}  // namespace etrt::backend
