#include "backend/delegate_executor.h"

#include <cstring>

#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/platform/log.h>

#include "backend/last_error.h"
#include "backend/nvtx_range.h"
#include "backend/thread_state.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"

namespace etrt::backend {

using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::Span;

namespace {

// Writes "[a,b,c]" into `out` (fixed buffer; no allocation).
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

// What an execution did, for the report and the counters.
struct Outcome {
  int32_t profile = -1;
  bool switched = false;
  bool pin_ignored = false;
};

// Finishes an execution: counters, the thread's report, and the error code.
Error finish(DelegateState& state, const ThreadState& thread, const Outcome& outcome, Error status) {
  if (thread.report != nullptr) {
    ExecutionRecord record;
    static_assert(sizeof(record.delegate) == sizeof(state.name), "delegate names are copied whole");
    std::memcpy(record.delegate, state.name, sizeof(record.delegate));
    record.profile = outcome.profile;
    record.num_profiles = state.table.num_profiles();
    record.switched = outcome.switched;
    record.pin_ignored = outcome.pin_ignored;
    record.ok = status == Error::Ok;
    ExecutionReport::record_on_this_thread(record);
  }
  if (status == Error::Ok) state.counts.count_execution(outcome.profile);
  return status;
}

// Gathers the call's tensors (inputs, then outputs; non-tensor arguments such
// as SymInts are skipped) into state.arg_tensors, by slot. A call may leave
// out every output that is written in place into an input (ExecuTorch does
// when the delegate owns the mutable buffer); those slots get nullptr.
bool collect_tensors(DelegateState& state, Span<EValue*> args) {
  const size_t n_in = state.inputs.size();
  const size_t full = n_in + state.outputs.size();
  // One pass for the common case, every slot passed.
  size_t found = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr || !args[i]->isTensor()) continue;
    if (found < full) state.arg_tensors[found] = &args[i]->toTensor();
    ++found;
  }
  if (found == full) return true;
  if (state.num_aliased == 0 || found != full - state.num_aliased) {
    if (state.num_aliased == 0) {
      report_error(state.name,
                   "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs; the .pte and its "
                   "engine do not match: re-export the model",
                   found, n_in, state.outputs.size());
    } else {
      report_error(state.name,
                   "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs, %zu of them written in "
                   "place into inputs: a call passes %zu tensors, or %zu without those outputs; the .pte and its "
                   "engine do not match: re-export the model",
                   found, n_in, state.outputs.size(), state.num_aliased, full, full - state.num_aliased);
    }
    return false;
  }
  // Without the aliased outputs: place the tensors again, skipping those slots.
  size_t slot = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr || !args[i]->isTensor()) continue;
    while (slot >= n_in && state.outputs[slot - n_in].alias_of >= 0) state.arg_tensors[slot++] = nullptr;
    state.arg_tensors[slot++] = &args[i]->toTensor();
  }
  while (slot < full) state.arg_tensors[slot++] = nullptr;
  return true;
}

bool report_dtype(const DelegateState& state, const IoSlot& slot, const Tensor& t, const char* role) {
  report_error(state.name,
               "%s '%s' is %s in the engine, but the tensor passed has ExecuTorch scalar type %d; pass a %s tensor",
               role, slot.display_name.c_str(), engine::to_string(slot.dtype), static_cast<int>(t.scalar_type()),
               engine::to_string(slot.dtype));
  return false;
}

inline bool check_dtype(const DelegateState& state, const IoSlot& slot, const Tensor& t, const char* role) {
  return t.scalar_type() == slot.scalar_type || report_dtype(state, slot, t, role);
}

// Gives the context every input shape that changed, then reads the output
// shapes inferred from them and checks each against the capacity ExecuTorch
// planned. Only a complete success marks the cache valid, so a refused call
// is checked again in full next time.
Error set_shapes_and_infer_outputs(DelegateState& state, engine::ExecutionContext& context,
                                   DelegateState::ContextCache& cache, int32_t profile) {
  const bool was_valid = cache.valid;
  cache.valid = false;
  const size_t n_in = state.inputs.size();
  for (size_t i = 0; i < n_in; ++i) {
    if (was_valid && state.input_shapes[i] == cache.input_shapes[i]) continue;
    if (!context.set_input_shape(state.inputs[i].engine_index, state.input_shapes[i])) {
      char text[128];
      report_error(state.name, "the engine refused shape %s for input '%s' under profile %d: %s",
                   format_shape(state.input_shapes[i], text), state.inputs[i].display_name.c_str(), profile,
                   context.last_error());
      // What the context holds for this input is unknown now; a cleared cache sets everything again.
      return Error::InvalidArgument;
    }
    cache.input_shapes[i] = state.input_shapes[i];
  }
  for (size_t o = 0; o < state.outputs.size(); ++o) {
    const IoSlot& slot = state.outputs[o];
    const Tensor* out = state.arg_tensors[n_in + o];
    if (out != nullptr && state.output_capacity[o] < 0) state.output_capacity[o] = static_cast<int64_t>(out->numel());
    Shape& inferred = cache.output_shapes[o];
    if (!context.tensor_shape(slot.engine_index, &inferred)) {
      report_error(state.name, "the engine could not infer the shape of output '%s' under profile %d: %s",
                   slot.display_name.c_str(), profile, context.last_error());
      return Error::Internal;
    }
    for (int32_t d = 0; d < inferred.rank; ++d) {
      if (inferred.d[d] >= 0) continue;
      char text[128];
      report_error(state.name,
                   "output '%s' has shape %s under profile %d after every input shape was set: dimension %d depends "
                   "on the input values (a data-dependent shape), which etrt cannot size before running; rebuild "
                   "the engine with an output shape the input shapes determine (e.g. pad to an upper bound)",
                   slot.display_name.c_str(), format_shape(inferred, text), profile, d);
      return Error::NotSupported;
    }
    if (slot.alias_of >= 0) {
      const IoSlot& target = state.inputs[static_cast<size_t>(slot.alias_of)];
      const int64_t room = static_cast<int64_t>(state.arg_tensors[static_cast<size_t>(slot.alias_of)]->numel());
      if (inferred.numel() > room) {
        char text[128];
        report_error(state.name,
                     "output '%s' is written in place into input '%s', but would have shape %s (%lld elements) under "
                     "profile %d, more than the input's %lld; the engine and the blob's aliased_io disagree: "
                     "re-export the model",
                     slot.display_name.c_str(), target.display_name.c_str(), format_shape(inferred, text),
                     static_cast<long long>(inferred.numel()), profile, static_cast<long long>(room));
        return Error::InvalidArgument;
      }
      if (out == nullptr) continue;
    }
    if (inferred.numel() > state.output_capacity[o]) {
      char text[128];
      report_error(state.name,
                   "output '%s' would have shape %s (%lld elements) under profile %d, but ExecuTorch planned room for "
                   "%lld elements; export the model with an upper bound that covers every profile's largest output",
                   slot.display_name.c_str(), format_shape(inferred, text), static_cast<long long>(inferred.numel()),
                   profile, static_cast<long long>(state.output_capacity[o]));
      return Error::InvalidArgument;
    }
  }
  cache.valid = true;
  return Error::Ok;
}

// Gives every output tensor the shape the engine inferred for it, resizing
// only those whose shape differs (resize_tensor is not free).
Error resize_outputs(DelegateState& state, const DelegateState::ContextCache& cache, int32_t profile) {
  const size_t n_in = state.inputs.size();
  for (size_t o = 0; o < state.outputs.size(); ++o) {
    if (state.arg_tensors[n_in + o] == nullptr) continue;  // an aliased output the call passes no tensor for
    Tensor& out = *state.arg_tensors[n_in + o];
    if (!check_dtype(state, state.outputs[o], out, "output")) return Error::InvalidArgument;
    const Shape& inferred = cache.output_shapes[o];
    // TensorRT reports a 0-d output as [1]; ExecuTorch's 0-d tensor cannot change rank, and holds the same element.
    if (out.dim() == 0 && inferred.rank == 1 && inferred.d[0] == 1) continue;
    const auto current = out.sizes();
    bool same = current.size() == static_cast<size_t>(inferred.rank);
    for (int32_t d = 0; same && d < inferred.rank; ++d) same = current[static_cast<size_t>(d)] == inferred.d[d];
    if (same) continue;
    executorch::aten::SizesType sizes[kMaxRank];
    for (int32_t d = 0; d < inferred.rank; ++d) sizes[d] = static_cast<executorch::aten::SizesType>(inferred.d[d]);
    const Error resized = executorch::runtime::resize_tensor(
        out, executorch::aten::ArrayRef<executorch::aten::SizesType>(sizes, static_cast<size_t>(inferred.rank)));
    if (resized != Error::Ok) {
      char text[128];
      report_error(state.name,
                   "ExecuTorch refused to resize output '%s' to %s under profile %d (error %d); the output is static "
                   "or its planned bound is smaller: re-export with a dynamic upper bound covering every profile",
                   state.outputs[o].display_name.c_str(), format_shape(inferred, text), profile,
                   static_cast<int>(resized));
      return Error::InvalidArgument;
    }
  }
  return Error::Ok;
}

// Everything after the wait for in-flight work, in decision 6's order (docs/design.md); `device` carries the stream.
Error execute_locked(DelegateState& state, const ThreadState& thread, DeviceCall& device, Span<EValue*> args,
                     Outcome* outcome) {
  ProfileRequest request = thread.request;
  if (request.kind == ProfileRequest::Kind::kDefault)
    request = state.options.default_request(state.table.num_profiles());

  if (!collect_tensors(state, args)) return Error::InvalidArgument;

  const size_t n_in = state.inputs.size();
  for (size_t i = 0; i < n_in; ++i) {
    const Tensor& t = *state.arg_tensors[i];
    if (!check_dtype(state, state.inputs[i], t, "input")) return Error::InvalidArgument;
    const auto sizes = t.sizes();
    if (sizes.size() > static_cast<size_t>(kMaxRank)) {
      report_error(state.name, "input '%s' has rank %zu; TensorRT accepts at most %d dimensions",
                   state.inputs[i].display_name.c_str(), sizes.size(), kMaxRank);
      return Error::InvalidArgument;
    }
    Shape& shape = state.input_shapes[i];
    shape.rank = static_cast<int32_t>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) shape.d[d] = sizes[d];
  }

  DelegateState::LastChoice& last = state.last_choice;
  bool repeat = last.valid && last.request == request && last.active_profile == state.active_profile;
  for (size_t i = 0; i < n_in && repeat; ++i) repeat = state.input_shapes[i] == last.input_shapes[i];
  profile::Choice choice = last.choice;
  if (!repeat) {
    last.valid = false;
    const etrt::Span<const Shape> shapes(state.input_shapes.data(), n_in);
    if (!profile::choose_and_validate(state.table, request, state.active_profile, shapes, &choice,
                                      &state.diagnostic)) {
      report_error(state.name, "%s", state.diagnostic.c_str());
      return Error::InvalidArgument;
    }
    // What the next execution compares against: the active profile once this one has run on its choice.
    last.request = request;
    last.input_shapes = state.input_shapes;  // same size every time: no allocation
    last.choice = choice;
  }
  const int32_t chosen = choice.profile;
  outcome->profile = chosen;
  outcome->pin_ignored = choice.pin_ignored;

  // Validation passed: from here on the engine's state changes, on the execution stream.
  const engine::StreamHandle stream = device.stream();
  // The loader makes several contexts only for kContextPerProfile, one bound to each profile.
  const bool context_per_profile = state.contexts.size() > 1;
  const size_t context_index = context_per_profile ? static_cast<size_t>(chosen) : 0;
  engine::ExecutionContext* context = state.contexts[context_index].get();
  DelegateState::ContextCache& cache = state.context_caches[context_index];
  if (context_per_profile) {
    outcome->switched = chosen != state.active_profile;
  } else {
    if (context->optimization_profile() != chosen) {
      const NvtxRange range("etrt switch profile");
      device.issued();  // the switch may have put work on the stream even if it then failed
      cache.forget();   // after a switch every input shape must be set again
      if (!context->set_optimization_profile(chosen, stream)) {
        report_error(state.name, "switching from profile %d to profile %d failed: %s", context->optimization_profile(),
                     chosen, context->last_error());
        return Error::Internal;
      }
      outcome->switched = true;
    }
  }
  if (outcome->switched) {
    ET_LOG(Debug, "TensorRT delegate %s: profile %d -> %d", state.name, state.active_profile, chosen);
    state.active_profile = chosen;
    state.counts.count_switch();
  }

  bool shapes_changed = !cache.valid;
  for (size_t i = 0; i < n_in && !shapes_changed; ++i) shapes_changed = state.input_shapes[i] != cache.input_shapes[i];
  if (shapes_changed) {
    const NvtxRange range("etrt set shapes");
    cache.ran = false;
    const Error status = set_shapes_and_infer_outputs(state, *context, cache, chosen);
    if (status != Error::Ok) return status;
  }
  const Error resized = resize_outputs(state, cache, chosen);
  if (resized != Error::Ok) return resized;

  const size_t n_args = n_in + state.outputs.size();
  const NvtxRange bind_range("etrt bind and stage");
  for (size_t k = 0; k < n_args; ++k) {
    const bool is_input = k < n_in;
    const IoSlot& slot = is_input ? state.inputs[k] : state.outputs[k - n_in];
    void* address = nullptr;
    if (slot.alias_of >= 0) {
      // Written in place: bound where its input was just bound (TensorRT requires it of a KV-cache update).
      address = cache.addresses[static_cast<size_t>(slot.alias_of)];
      state.device.staged[k] = 0;
    } else if (!state.device.device && state.device.staged[k] == 0 && cache.addresses[k] != nullptr &&
               state.arg_tensors[k]->const_data_ptr() == cache.addresses[k]) {
      continue;  // a host engine's tensor bound in place last time, at the same address: nothing to check or copy
    } else {
      if (slot.alias_target && !device.check_in_place(*state.arg_tensors[k], slot.display_name.c_str()))
        return Error::InvalidArgument;
      const Error bound = device.bind(k, *state.arg_tensors[k], is_input, slot.display_name.c_str(), &address);
      if (bound != Error::Ok) return bound;
    }
    if (address == cache.addresses[k]) continue;  // the context still holds it
    cache.ran = false;
    cache.addresses[k] = nullptr;
    if (!context->set_tensor_address(slot.engine_index, address)) {
      report_error(state.name, "binding '%s' failed: %s", slot.display_name.c_str(), context->last_error());
      return Error::Internal;
    }
    cache.addresses[k] = address;
  }

  device.issued();  // a failed enqueue may still have left work on the stream
  GraphSet* graphs = state.device.graphs.empty() ? nullptr : &state.device.graphs[context_index];
  bool enqueued = false;
  {
    const NvtxRange range("etrt enqueue");
    enqueued = device.enqueue(*context, graphs, cache.ran, chosen, cache.input_shapes, cache.addresses);
  }
  if (!enqueued) {
    cache.ran = false;
    // The engine blamed the data (a token id outside the vocabulary): the caller's argument, not the delegate.
    return context->last_error_is_bad_input() ? Error::InvalidArgument : Error::Internal;
  }
  cache.ran = true;
  const NvtxRange copy_range("etrt copy back");
  if (!device.copy_back_outputs(state.arg_tensors.data(), n_in, state.outputs.size())) return Error::Internal;
  state.last_choice.active_profile = state.active_profile;
  state.last_choice.valid = true;
  for (size_t o = 0; o < state.outputs.size(); ++o) {
    const IoSlot& slot = state.outputs[o];
    if (slot.alias_of < 0) continue;
    const auto input = static_cast<size_t>(slot.alias_of);
    const size_t bytes = static_cast<size_t>(cache.output_shapes[o].numel()) * engine::element_size(slot.dtype);
    if (!device.finish_in_place(input, *state.arg_tensors[input], state.arg_tensors[n_in + o], bytes,
                                state.inputs[input].display_name.c_str()))
      return Error::Internal;
  }
  return Error::Ok;
}

}  // namespace

Error execute_delegate(DelegateState& state, Span<EValue*> args) {
  const NvtxRange range("etrt execute");
  const std::lock_guard<DelegateLock> lock(state.mutex);
  ThreadState& thread = thread_state();  // one thread-local lookup for the request, the error flag and the report
  thread.has_error = false;              // etrt::clear_last_error()
  DeviceCall device(state.device, state.name);
  Outcome outcome;
  Error status = device.begin();
  if (status == Error::Ok) status = execute_locked(state, thread, device, args, &outcome);
  // Before the lock is released: the next execution must find this one's in-flight event recorded.
  status = device.end(status);
  return finish(state, thread, outcome, status);
}

}  // namespace etrt::backend
