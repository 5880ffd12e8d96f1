#pragma once
// etrt's one error convention, in every layer of src/:
//
//   [[nodiscard]] Error do_something(..., Diagnostic& why);
//
// A fallible function returns ExecuTorch's error code (the code the delegate finally hands ExecuTorch, so no layer
// translates) and, when it fails, writes what was wrong and what to do into the caller's Diagnostic
// (common/diagnostic.h): fixed memory, so the convention holds on the execute path, which must not allocate. A value
// comes back through an out-parameter, written only on success. A caller that adds where the reason arose does so
// with Diagnostic::prepend.
//
// Which code: InvalidArgument when the caller's data or file is wrong (a shape outside every profile, a malformed
// blob, a token id outside the vocabulary), NotSupported when the input is well formed but etrt or the engine cannot
// do it, MemoryAllocationFailed when memory ran out, Internal when the engine or CUDA failed.
//
// ExecuTorch's error.h is header-only (an enum and its logging macros' declarations): the policy, blob and engine
// layers include it without linking ExecuTorch.

#include <executorch/runtime/core/error.h>

#include "common/diagnostic.h"

namespace etrt {

using Error = executorch::runtime::Error;

// Writes the reason and returns `code`, so a failure is one statement: `return fail(why, Error::Internal, ...)`.
// What `why` held before is replaced: the reason is the callee's, and callers add to it with prepend.
ETRT_COLD inline Error fail(Diagnostic& why, Error code, const char* format, ...) noexcept ETRT_PRINTF_FORMAT(3, 4);

inline Error fail(Diagnostic& why, Error code, const char* format, ...) noexcept {
  why.clear();
  va_list args;
  va_start(args, format);
  why.vappend(format, args);
  va_end(args);
  return code;
}

}  // namespace etrt
