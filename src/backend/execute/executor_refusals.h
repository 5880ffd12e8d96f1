#pragma once
// The refusals of an execution (executor.cpp), worded once: what was wrong, with the numbers, and what to do. Cold and
// out of line, so that the flattened steps keep only the branch that calls one. Each writes `why` and returns the
// error the execution reports.

#include <cstddef>
#include <cstdint>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "backend/execute/plan.h"
#include "common/compiler.h"
#include "common/error.h"
#include "common/shape.h"

namespace etrt::backend {

// A tensor of another type than the engine's; `role`: "input" or "output".
ETRT_COLD ETRT_NOINLINE Error refuse_dtype(Diagnostic& why, const Argument& argument, const executorch::aten::Tensor& t,
                                           const char* role);
// Ok when `t` has the argument's type, else refuse_dtype.
inline Error check_dtype(Diagnostic& why, const Argument& argument, const executorch::aten::Tensor& t,
                         const char* role) {
  return t.scalar_type() == argument.scalar_type ? Error::Ok : refuse_dtype(why, argument, t, role);
}
// `found` tensors, which no call of `plan` passes.
ETRT_COLD ETRT_NOINLINE Error refuse_argument_count(Diagnostic& why, const Plan& plan, size_t found);
// An input of more dimensions than TensorRT takes.
ETRT_COLD ETRT_NOINLINE Error refuse_rank(Diagnostic& why, const Argument& input, size_t rank);
// The engine refused `shape` for `input` (its words in `why` already).
ETRT_COLD ETRT_NOINLINE Error refuse_input_shape(Diagnostic& why, const Argument& input, const Shape& shape,
                                                 int32_t profile);
// Dimension `d` of `output` depends on the input values.
ETRT_COLD ETRT_NOINLINE Error refuse_data_dependent(Diagnostic& why, const Argument& output, const Shape& inferred,
                                                    int32_t profile, int32_t d);
// `output`, written in place into `input`, would be larger than the input's `room` elements.
ETRT_COLD ETRT_NOINLINE Error refuse_alias_room(Diagnostic& why, const Argument& output, const Argument& input,
                                                const Shape& inferred, int32_t profile, int64_t room);
// A state's new value would not have the state's shape.
ETRT_COLD ETRT_NOINLINE Error refuse_state_shape(Diagnostic& why, const Argument& output, const Shape& state,
                                                 const Shape& inferred, int32_t profile);
// `output` would be larger than the `capacity` elements ExecuTorch planned for it.
ETRT_COLD ETRT_NOINLINE Error refuse_output_room(Diagnostic& why, const Argument& output, const Shape& inferred,
                                                 int32_t profile, int64_t capacity);
// ExecuTorch refused to resize `output`, with `resized`.
ETRT_COLD ETRT_NOINLINE Error refuse_resize(Diagnostic& why, const Argument& output, const Shape& inferred,
                                            int32_t profile, Error resized);

}  // namespace etrt::backend
