#pragma once
// One execution of a delegate, in the order docs/design.md (decision 6) fixes:
// lock -> wait for in-flight work -> read the thread's request -> collect
// input shapes -> choose the profile -> validate every input -> switch ->
// set input shapes -> infer output shapes -> resize outputs -> bind -> enqueue.
// Nothing that changes engine state happens before validation passes.

#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/span.h>

#include "backend/delegate_state.h"

namespace etrt::backend {

[[nodiscard]] executorch::runtime::Error execute_delegate(DelegateState& state,
                                                          executorch::runtime::Span<executorch::runtime::EValue*> args);

}  // namespace etrt::backend
