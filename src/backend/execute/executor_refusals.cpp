// The refusals of an execution (executor_refusals.h).

#include "backend/execute/executor_refusals.h"

#include <cstdio>

namespace etrt::backend {
namespace {

// Writes "[a,b,c]" into `out` (fixed buffer; no allocation: an execution refuses without allocating).
const char* format_shape(const Shape& s, char (&out)[128]) {
  size_t n = 0;
  out[n++] = '[';
  for (int32_t i = 0; i < s.rank && n < sizeof(out) - 24; ++i) {
    n += static_cast<size_t>(
        std::snprintf(out + n, sizeof(out) - n, i ? ",%lld" : "%lld", static_cast<long long>(s.d[i])));
  }
  out[n++] = ']';
  out[n] = '\0';
  return out;
}

}  // namespace

Error refuse_dtype(Diagnostic& why, const Argument& argument, const executorch::aten::Tensor& t, const char* role) {
  return fail(why, Error::InvalidArgument,
              "%s '%s' is %s in the engine, but the tensor passed has ExecuTorch scalar type %d; pass a %s tensor",
              role, argument.display_name.c_str(), engine::to_string(argument.dtype), static_cast<int>(t.scalar_type()),
              engine::to_string(argument.dtype));
}

Error refuse_argument_count(Diagnostic& why, const Plan& plan, size_t found) {
  const Arity& a = plan.arity;
  if (!plan.states.empty()) {
    return fail(why, Error::InvalidArgument,
                "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs, %zu of each the "
                "delegate's own state (the blob's delegate_state), which the call does not pass: a call passes %zu "
                "tensors%s; the .pte and its engine do not match: re-export the model",
                found, a.inputs, a.outputs, plan.states.size(), a.passed,
                a.optional != 0 ? ", or fewer without the outputs written in place into inputs" : "");
  }
  if (a.aliased == 0) {
    return fail(why, Error::InvalidArgument,
                "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs; the .pte and its engine "
                "do not match: re-export the model",
                found, a.inputs, a.outputs);
  }
  return fail(why, Error::InvalidArgument,
              "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs, %zu of them written in "
              "place into inputs: a call passes %zu tensors, or %zu without those outputs; the .pte and its engine "
              "do not match: re-export the model",
              found, a.inputs, a.outputs, a.aliased, a.bound, a.bound - a.aliased);
}

Error refuse_rank(Diagnostic& why, const Argument& input, size_t rank) {
  return fail(why, Error::InvalidArgument, "input '%s' has rank %zu; TensorRT accepts at most %d dimensions",
              input.display_name.c_str(), rank, kMaxRank);
}

Error refuse_input_shape(Diagnostic& why, const Argument& input, const Shape& shape, int32_t profile) {
  char text[128];
  why.prepend("the engine refused shape %s for input '%s' under profile %d: ", format_shape(shape, text),
              input.display_name.c_str(), profile);
  return Error::InvalidArgument;
}

Error refuse_data_dependent(Diagnostic& why, const Argument& output, const Shape& inferred, int32_t profile,
                            int32_t d) {
  char text[128];
  return fail(why, Error::NotSupported,
              "output '%s' has shape %s under profile %d after every input shape was set: dimension %d depends "
              "on the input values (a data-dependent shape), which etrt cannot size before running; rebuild "
              "the engine with an output shape the input shapes determine (e.g. pad to an upper bound)",
              output.display_name.c_str(), format_shape(inferred, text), profile, d);
}

Error refuse_alias_room(Diagnostic& why, const Argument& output, const Argument& input, const Shape& inferred,
                        int32_t profile, int64_t room) {
  char text[128];
  return fail(why, Error::InvalidArgument,
              "output '%s' is written in place into input '%s', but would have shape %s (%lld elements) under "
              "profile %d, more than the input's %lld; the engine and the blob's aliased_io disagree: "
              "re-export the model",
              output.display_name.c_str(), input.display_name.c_str(), format_shape(inferred, text),
              static_cast<long long>(inferred.numel()), profile, static_cast<long long>(room));
}

Error refuse_state_shape(Diagnostic& why, const Argument& output, const Shape& state, const Shape& inferred,
                         int32_t profile) {
  char want[128];
  char text[128];
  return fail(why, Error::InvalidArgument,
              "output '%s' is the new value of a delegate-owned state of shape %s, but would have shape %s "
              "under profile %d; the engine and the blob's delegate_state disagree: re-export the model",
              output.display_name.c_str(), format_shape(state, want), format_shape(inferred, text), profile);
}

Error refuse_output_room(Diagnostic& why, const Argument& output, const Shape& inferred, int32_t profile,
                         int64_t capacity) {
  char text[128];
  return fail(why, Error::InvalidArgument,
              "output '%s' would have shape %s (%lld elements) under profile %d, but ExecuTorch planned room for "
              "%lld elements; export the model with an upper bound that covers every profile's largest output",
              output.display_name.c_str(), format_shape(inferred, text), static_cast<long long>(inferred.numel()),
              profile, static_cast<long long>(capacity));
}

Error refuse_resize(Diagnostic& why, const Argument& output, const Shape& inferred, int32_t profile, Error resized) {
  char text[128];
  return fail(why, Error::InvalidArgument,
              "ExecuTorch refused to resize output '%s' to %s under profile %d (error %d); the output is static "
              "or its planned bound is smaller: re-export with a dynamic upper bound covering every profile",
              output.display_name.c_str(), format_shape(inferred, text), profile, static_cast<int>(resized));
}

}  // namespace etrt::backend
