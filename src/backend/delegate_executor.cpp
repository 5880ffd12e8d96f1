// Delegate::execute: one execution, in the order docs/design.md (decision 6) fixes and docs/architecture.md
// ("Following one call") numbers: lock -> wait for in-flight work -> read the thread's request -> collect the
// tensors and input shapes -> choose the profile and validate every input -> switch -> set input shapes and infer
// output shapes -> resize outputs -> bind -> enqueue -> copy back. Nothing that changes engine state happens before
// validation passes, and nothing here allocates: a refusal is written into why_ and reported once, at the end.

#include <cstdio>
#include <cstring>
#include <mutex>

#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/platform/log.h>

#include "backend/delegate.h"
#include "backend/last_error.h"
#include "backend/nvtx_range.h"
#include "backend/scratch_pool_policy.h"
#include "common/compiler.h"
#include "etrt/report.h"

namespace etrt::backend {

using executorch::aten::Tensor;
using executorch::runtime::EValue;
using executorch::runtime::EventTracer;
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

ETRT_COLD ETRT_NOINLINE Error refuse_dtype(Diagnostic& why, const IoSlot& slot, const Tensor& t, const char* role) {
  return fail(why, Error::InvalidArgument,
              "%s '%s' is %s in the engine, but the tensor passed has ExecuTorch scalar type %d; pass a %s tensor",
              role, slot.display_name.c_str(), engine::to_string(slot.dtype), static_cast<int>(t.scalar_type()),
              engine::to_string(slot.dtype));
}

inline Error check_dtype(Diagnostic& why, const IoSlot& slot, const Tensor& t, const char* role) {
  return t.scalar_type() == slot.scalar_type ? Error::Ok : refuse_dtype(why, slot, t, role);
}

// Whether `t` has exactly shape `s`.
inline bool has_shape(const Tensor& t, const Shape& s) {
  const auto sizes = t.sizes();
  if (sizes.size() != static_cast<size_t>(s.rank)) return false;
  for (int32_t d = 0; d < s.rank; ++d)
    if (sizes[static_cast<size_t>(d)] != s.d[d]) return false;
  return true;
}

// Whether output tensor `t` already has the shape the engine inferred for it. TensorRT reports a 0-d output as [1];
// ExecuTorch's 0-d tensor cannot change rank, and holds the same element.
inline bool holds_output_shape(const Tensor& t, const Shape& inferred) {
  return (t.dim() == 0 && inferred.rank == 1 && inferred.d[0] == 1) || has_shape(t, inferred);
}

}  // namespace

// One execution's frame, with or without an event tracer: lock, wait for in-flight work, take the shared scratch,
// the steps, release them in reverse and report. `kTraced` (execute_traced) adds the tracer's parts: each step is
// timed and logged as a delegate event (execution_trace.h), with the device time on a device engine, and the repeat
// shortcut is never taken, so that each step is timed on its own; for a repeat the steps find nothing to change, so
// it does what the shortcut would. Both instantiations are inlined where they are called: execute() keeps its
// instructions, and the traced frame stays out of its way.
template <bool kTraced>
ETRT_ALWAYS_INLINE inline Error Delegate::execute_framed(Span<EValue*> args, [[maybe_unused]] EventTracer* tracer) {
  const NvtxRange range("etrt execute");
  const std::lock_guard<DelegateLock> lock(lock_);  // 1. lock
  ThreadState& thread = thread_state();  // one thread-local lookup for the request, the error flag and the report
  thread.has_error = false;              // etrt::clear_last_error()
  DeviceCall device(device_, name_, why_);
  Outcome outcome;
  [[maybe_unused]] int32_t from_profile = -1;
  if constexpr (kTraced) {
    from_profile = active_profile_;
    trace_.begin(tracer);
    current_->forget(Holds::kRan);  // every step runs, each timed on its own: no repeat
  }
  Error status = device.begin();  // 2. wait for the previous in-flight work
  // shared_scratch: the pool's lock (after the delegate's: scratch_pool.h, "Locks"), then its last user's work.
  ScratchPool* const pool = status == Error::Ok ? scratch_pool_.pool() : nullptr;
  if (pool != nullptr) {
    pool->lock();
    status = take_scratch(*pool, device);
  }
  if (status == Error::Ok) {
    if constexpr (kTraced) {
      if (device_.device) trace_.start_device(device.stream());
    }
    status = run_steps(thread, device, args, &outcome);
    if constexpr (kTraced) {
      if (device_.device) trace_.stop_device(device.stream(), outcome.choice.profile);
    }
  }
  // Before the lock is released: the next execution must find this one's in-flight event recorded.
  status = device.end(status);
  if (pool != nullptr) {
    device.pass_scratch_turn(&pool->turn());
    pool->unlock();
  }
  status = finish(thread, outcome, device.copied(), status);
  if constexpr (kTraced) trace_.end(trace_outcome(outcome, from_profile, status));
  return status;
}

Error Delegate::execute(Span<EValue*> args, EventTracer* tracer) {
  if (tracer != nullptr) return execute_traced(args, tracer);  // ExecuTorch's profiling (ETDump): the only check
  return execute_framed<false>(args, nullptr);
}

// execute() with an event tracer attached: the same frame and steps, traced (execute_framed<true>).
ETRT_COLD ETRT_NOINLINE Error Delegate::execute_traced(Span<EValue*> args, EventTracer* tracer) {
  return execute_framed<true>(args, tracer);
}

// Under the pool's lock, before anything of this execution reaches the device: orders the stream after the pool's
// last work and, when the pool's buffer changed since the contexts were given it, gives them the new one. On a
// steady call that is a comparison and, on another stream than the last user's, one cudaStreamWaitEvent.
inline Error Delegate::take_scratch(ScratchPool& pool, DeviceCall& device) {
  const Error status = device.wait_for_scratch(pool.turn());
  if (status != Error::Ok || !must_rebind(scratch_generation_, pool.generation())) return status;
  return rebind_scratch(pool);
}

// The pool's buffer is new (this delegate's first execution, or the pool grew or shrank since its last): every
// context is given it, and nothing captured against the old one is used again -- the CUDA graphs are dropped and each
// context's next enqueue runs plainly first, as after any change (docs/cuda-graphs.md).
ETRT_COLD ETRT_NOINLINE Error Delegate::rebind_scratch(ScratchPool& pool) {
  for (size_t c = 0; c < contexts_.size(); ++c) {
    if (contexts_[c]->set_device_memory(pool.data(), pool.size(), why_) != Error::Ok) {
      why_.prepend("could not give context %zu the shared scratch memory (%zu bytes): ", c, pool.size());
      return Error::Internal;
    }
    context_states_[c].forget(Holds::kShapes);
  }
  drop_all_graphs(&device_);
  scratch_generation_ = pool.generation();
  return Error::Ok;
}

// Steps 3-8, after the wait for in-flight work; `device` carries the stream. The steps below are inlined into it
// (flatten): as separate calls they cost a tenth of etrt's per-forward() instructions (docs/host-cost.md).
ETRT_FLATTEN inline Error Delegate::run_steps(const ThreadState& thread, DeviceCall& device, Span<EValue*> args,
                                              Outcome* outcome) {
  if (repeats_last(thread.request, args, device)) {  // the last execution again: only the enqueue is left to do
    ContextState& target = *current_;
    outcome->choice = target.choice;
    Error status = enqueue(target, device, outcome->choice.profile);
    if (status == Error::Ok && (num_aliased_ != 0 || writes_back_state_)) status = finish_in_place(target, device);
    if (status != Error::Ok) target.forget(Holds::kShapes);  // the next call takes the steps, and enqueues plainly
    return status;
  }

  trace_.start(TraceStep::kChoice);
  const ProfileRequest request = read_request(thread);  // 3. the request
  Error status = collect_tensors(args);                 // 4. tensors and input shapes
  if (status == Error::Ok) status = collect_input_shapes();
  profile::Choice choice;
  if (status == Error::Ok) status = choose_and_validate(request, &choice);  // 5. choose and validate
  trace_.stop(TraceStep::kChoice);
  if (status != Error::Ok) return status;
  outcome->choice = choice;

  // Validation passed: from here on the engine's state changes, on the execution stream.
  ContextState& target = context_for(choice.profile);
  target.forget(Holds::kRan);  // its last execution is not the last one any more, whatever happens below
  status = switch_profile(choice.profile, device, target, outcome);  // 6. switch
  if (status != Error::Ok) return status;
  status = set_shapes_and_infer_outputs(target, choice.profile);  // 7. shapes, inferred outputs, resize
  if (status != Error::Ok) return status;
  target.request = request;  // the choice made for the shapes the context now holds
  target.active_profile = active_profile_;
  target.choice = choice;
  status = resize_outputs(target, choice.profile);
  if (status == Error::Ok) status = bind(target, device);  // 8. bind, enqueue, copy back
  if (status == Error::Ok) {
    const TracedStep traced(trace_, TraceStep::kEnqueue);  // here, not in enqueue(): the repeat path has no trace
    status = enqueue(target, device, choice.profile);
    if (status == Error::Ok)
      target.holds = Holds::kRan;
    else
      target.forget(Holds::kShapes);
  }
  if (status == Error::Ok) status = finish_outputs(target, device);
  if (status == Error::Ok) remember_repeat(thread.request, args.size(), target);
  return status;
}

// Whether this call repeats the last successful execution, on the active profile's context (Holds::kRepeatable); if
// so, arg_tensors_ holds its tensors. Every check here is one the steps would make, against what the context was last
// given: the tensors' types, the input shapes (so the same choice, with no switch and no shape to set), the output
// shapes (nothing to resize) and the addresses (nothing to bind).
inline bool Delegate::repeats_last(const ProfileRequest& request, Span<EValue*> args, DeviceCall& device) {
  const ContextState& last = *current_;
  if (last.holds != Holds::kRepeatable || args.size() != last.num_args || request != last.asked) return false;
  const size_t n_in = inputs_.size();
  // Read once: the stores into arg_tensors_ below would otherwise make the compiler read them again every argument.
  const Shape* const input_shapes = last.input_shapes.data();
  const Shape* const output_shapes = last.output_shapes.data();
  void* const* const addresses = last.addresses.data();
  const bool aliased_passed = last.aliased_passed;
  size_t next = 0;  // every argument was a tensor: slot by slot, they come in order
  for (size_t k = 0; k < arg_tensors_.size(); ++k) {
    const bool is_input = k < n_in;
    const IoSlot& slot = is_input ? inputs_[k] : outputs_[k - n_in];
    if (slot.state >= 0 || (slot.alias_of >= 0 && !aliased_passed)) {
      arg_tensors_[k] = nullptr;  // the delegate's own state, bound once; or an aliased output the call leaves out
      continue;
    }
    EValue* value = args[next++];
    if (value == nullptr || !value->isTensor()) return false;
    Tensor& t = value->toTensor();
    arg_tensors_[k] = &t;
    if (t.scalar_type() != slot.scalar_type) return false;
    if (is_input ? !has_shape(t, input_shapes[k]) : !holds_output_shape(t, output_shapes[k - n_in])) return false;
    if (slot.alias_of >= 0) continue;  // written in place: bound where its input is
    if (t.const_data_ptr() != addresses[k] || !device.binds_in_place(t)) return false;
  }
  return true;
}

// After a successful execution through the steps: whether the next one may repeat it (Holds::kRepeatable).
inline void Delegate::remember_repeat(const ProfileRequest& request, size_t num_args, ContextState& target) {
  size_t tensors = 0;
  bool staged = false;
  for (size_t k = 0; k < arg_tensors_.size(); ++k) {
    tensors += arg_tensors_[k] != nullptr;
    staged = staged || device_.staged[k] != 0;
  }
  if (tensors != num_args || staged) return;
  target.asked = request;
  target.num_args = num_args;
  target.aliased_passed = num_args + 2 * states_.size() == arg_tensors_.size();
  target.holds = Holds::kRepeatable;
}

// No guard: the module's load-time default (LoadOptions::default_request).
inline ProfileRequest Delegate::read_request(const ThreadState& thread) const {
  if (thread.request.kind != ProfileRequest::Kind::kDefault) return thread.request;
  return options_.default_request(table_.num_profiles());
}

// Gathers the call's tensors (inputs, then outputs; non-tensor arguments such as SymInts are skipped) into
// arg_tensors_, by slot. The slots of delegate-owned state get nullptr: the call never passes them. A call may also
// leave out every other output that is written in place into an input (ExecuTorch does when the delegate owns the
// mutable buffer); those slots get nullptr too.
inline Error Delegate::collect_tensors(Span<EValue*> args) {
  const size_t n_in = inputs_.size();
  const size_t full = n_in + outputs_.size();
  size_t found = 0;
  if (states_.empty()) {
    // One pass for the common case, every slot passed.
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == nullptr || !args[i]->isTensor()) continue;
      if (found < full) arg_tensors_[found] = &args[i]->toTensor();
      ++found;
    }
    if (found == full) return Error::Ok;
  } else {
    for (size_t i = 0; i < args.size(); ++i) found += args[i] != nullptr && args[i]->isTensor();
  }
  const size_t passed = full - 2 * states_.size();
  bool skip_aliased = false;
  if (found != passed) {
    if (num_free_aliased_ == 0 || found != passed - num_free_aliased_) return refuse_argument_count(found);
    skip_aliased = true;
  }
  // Place the tensors again, skipping the slots the call does not pass.
  size_t slot = 0;
  const auto skipped = [&](size_t k) {
    const IoSlot& s = k < n_in ? inputs_[k] : outputs_[k - n_in];
    return s.state >= 0 || (skip_aliased && k >= n_in && s.alias_of >= 0);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr || !args[i]->isTensor()) continue;
    while (skipped(slot)) arg_tensors_[slot++] = nullptr;
    arg_tensors_[slot++] = &args[i]->toTensor();
  }
  while (slot < full) arg_tensors_[slot++] = nullptr;
  return Error::Ok;
}

ETRT_COLD ETRT_NOINLINE Error Delegate::refuse_argument_count(size_t found) {
  const size_t n_in = inputs_.size();
  const size_t full = n_in + outputs_.size();
  if (!states_.empty()) {
    const size_t passed = full - 2 * states_.size();
    return fail(why_, Error::InvalidArgument,
                "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs, %zu of each the "
                "delegate's own state (the blob's delegate_state), which the call does not pass: a call passes %zu "
                "tensors%s; the .pte and its engine do not match: re-export the model",
                found, n_in, outputs_.size(), states_.size(), passed,
                num_free_aliased_ != 0 ? ", or fewer without the outputs written in place into inputs" : "");
  }
  if (num_aliased_ == 0) {
    return fail(why_, Error::InvalidArgument,
                "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs; the .pte and its engine "
                "do not match: re-export the model",
                found, n_in, outputs_.size());
  }
  return fail(why_, Error::InvalidArgument,
              "the call passes %zu tensors, but the engine has %zu inputs and %zu outputs, %zu of them written in "
              "place into inputs: a call passes %zu tensors, or %zu without those outputs; the .pte and its engine "
              "do not match: re-export the model",
              found, n_in, outputs_.size(), num_aliased_, full, full - num_aliased_);
}

// Checks each input's type and rank and copies its shape into input_shapes_ (sized at load).
inline Error Delegate::collect_input_shapes() {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].state >= 0) {  // the delegate's own state: its one static shape
      input_shapes_[i] = states_[static_cast<size_t>(inputs_[i].state)].shape;
      continue;
    }
    const Tensor& t = *arg_tensors_[i];
    const Error typed = check_dtype(why_, inputs_[i], t, "input");
    if (typed != Error::Ok) return typed;
    const auto sizes = t.sizes();
    if (sizes.size() > static_cast<size_t>(kMaxRank)) {
      return fail(why_, Error::InvalidArgument, "input '%s' has rank %zu; TensorRT accepts at most %d dimensions",
                  inputs_[i].display_name.c_str(), sizes.size(), kMaxRank);
    }
    Shape& shape = input_shapes_[i];
    shape.rank = static_cast<int32_t>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) shape.d[d] = sizes[d];
  }
  return Error::Ok;
}

// The profile for this execution, every input validated against it (profile::choose_and_validate). An execution
// with the request, active profile and input shapes the active profile's context last chose for reuses that choice.
inline Error Delegate::choose_and_validate(const ProfileRequest& request, profile::Choice* choice) {
  const ContextState& last = *current_;
  const size_t n_in = inputs_.size();
  bool repeat = last.holds >= Holds::kShapes && last.request == request && last.active_profile == active_profile_;
  for (size_t i = 0; i < n_in && repeat; ++i) repeat = input_shapes_[i] == last.input_shapes[i];
  if (repeat) {
    *choice = last.choice;
    return Error::Ok;
  }
  const etrt::Span<const Shape> shapes(input_shapes_.data(), n_in);
  return profile::choose_and_validate(table_, request, active_profile_, shapes, choice, why_);
}

// The context an execution on `profile` runs on: strategy kSwitch's one context, or for kContextPerProfile the one
// bound to `profile` at load.
inline Delegate::ContextState& Delegate::context_for(int32_t profile) {
  return context_states_[strategy_ == Strategy::kContextPerProfile ? static_cast<size_t>(profile) : 0];
}

// Strategy kSwitch: switches the one context when its profile differs, on the execution stream. Strategy
// kContextPerProfile: `target` is bound to `profile` already. Either way it is the active profile's context after.
inline Error Delegate::switch_profile(int32_t profile, DeviceCall& device, ContextState& target, Outcome* outcome) {
  const TracedStep traced(trace_, TraceStep::kSwitch);
  current_ = &target;
  if (strategy_ == Strategy::kContextPerProfile) {
    outcome->switched = profile != active_profile_;
  } else if (target.context->optimization_profile() != profile) {
    const NvtxRange range("etrt switch profile");
    device.issued();                 // the switch may have put work on the stream even if it then failed
    target.forget(Holds::kNothing);  // after a switch every input shape must be set again
    const int32_t from = target.context->optimization_profile();
    const Error status = target.context->set_optimization_profile(profile, device.stream(), why_);
    if (status != Error::Ok) {
      why_.prepend("switching from profile %d to profile %d failed: ", from, profile);
      return Error::Internal;
    }
    outcome->switched = true;
  }
  if (outcome->switched) {
    ET_LOG(Debug, "TensorRT delegate %s: profile %d -> %d", name_, active_profile_, profile);
    active_profile_ = profile;
    counts_.count_switch();
  }
  return Error::Ok;
}

// Gives the context every input shape that changed, then reads the output shapes inferred from them and checks each
// against the capacity ExecuTorch planned. Only a complete success brings the context to Holds::kShapes, so a refused
// call is checked again in full next time.
inline Error Delegate::set_shapes_and_infer_outputs(ContextState& target, int32_t profile) {
  const TracedStep traced(trace_, TraceStep::kShapes);
  const size_t n_in = inputs_.size();
  const bool had_shapes = target.holds >= Holds::kShapes;
  bool changed = !had_shapes;
  for (size_t i = 0; i < n_in && !changed; ++i) changed = input_shapes_[i] != target.input_shapes[i];
  if (!changed) return Error::Ok;

  const NvtxRange range("etrt set shapes");
  target.forget(Holds::kAddresses);
  for (size_t i = 0; i < n_in; ++i) {
    if (had_shapes && input_shapes_[i] == target.input_shapes[i]) continue;
    if (target.context->set_input_shape(inputs_[i].engine_index, input_shapes_[i], why_) != Error::Ok) {
      char text[128];
      why_.prepend("the engine refused shape %s for input '%s' under profile %d: ",
                   format_shape(input_shapes_[i], text), inputs_[i].display_name.c_str(), profile);
      // What the context holds for this input is unknown now; below kShapes, every shape is set again.
      return Error::InvalidArgument;
    }
    target.input_shapes[i] = input_shapes_[i];
  }
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const IoSlot& slot = outputs_[o];
    const Tensor* out = arg_tensors_[n_in + o];
    if (out != nullptr && output_capacity_[o] < 0) output_capacity_[o] = static_cast<int64_t>(out->numel());
    Shape& inferred = target.output_shapes[o];
    if (target.context->tensor_shape(slot.engine_index, &inferred, why_) != Error::Ok) {
      why_.prepend("the engine could not infer the shape of output '%s' under profile %d: ", slot.display_name.c_str(),
                   profile);
      return Error::Internal;
    }
    char text[128];
    for (int32_t d = 0; d < inferred.rank; ++d) {
      if (inferred.d[d] >= 0) continue;
      return fail(why_, Error::NotSupported,
                  "output '%s' has shape %s under profile %d after every input shape was set: dimension %d depends "
                  "on the input values (a data-dependent shape), which etrt cannot size before running; rebuild "
                  "the engine with an output shape the input shapes determine (e.g. pad to an upper bound)",
                  slot.display_name.c_str(), format_shape(inferred, text), profile, d);
    }
    if (slot.alias_of >= 0) {
      const IoSlot& target_input = inputs_[static_cast<size_t>(slot.alias_of)];
      const Tensor* target_tensor = arg_tensors_[static_cast<size_t>(slot.alias_of)];
      const int64_t room = target_tensor != nullptr ? static_cast<int64_t>(target_tensor->numel())
                                                    : input_shapes_[static_cast<size_t>(slot.alias_of)].numel();
      if (inferred.numel() > room) {
        return fail(why_, Error::InvalidArgument,
                    "output '%s' is written in place into input '%s', but would have shape %s (%lld elements) under "
                    "profile %d, more than the input's %lld; the engine and the blob's aliased_io disagree: "
                    "re-export the model",
                    slot.display_name.c_str(), target_input.display_name.c_str(), format_shape(inferred, text),
                    static_cast<long long>(inferred.numel()), profile, static_cast<long long>(room));
      }
      if (out == nullptr) continue;
    }
    if (slot.state >= 0) {  // the new value of a state written back: the state's own size
      const OwnedState& state = states_[static_cast<size_t>(slot.state)];
      if (inferred != state.shape) {
        char want[128];
        return fail(why_, Error::InvalidArgument,
                    "output '%s' is the new value of a delegate-owned state of shape %s, but would have shape %s "
                    "under profile %d; the engine and the blob's delegate_state disagree: re-export the model",
                    slot.display_name.c_str(), format_shape(state.shape, want), format_shape(inferred, text), profile);
      }
      continue;
    }
    if (inferred.numel() > output_capacity_[o]) {
      return fail(why_, Error::InvalidArgument,
                  "output '%s' would have shape %s (%lld elements) under profile %d, but ExecuTorch planned room for "
                  "%lld elements; export the model with an upper bound that covers every profile's largest output",
                  slot.display_name.c_str(), format_shape(inferred, text), static_cast<long long>(inferred.numel()),
                  profile, static_cast<long long>(output_capacity_[o]));
    }
  }
  target.holds = Holds::kShapes;
  return Error::Ok;
}

// Gives every output tensor the shape the engine inferred for it, resizing only those whose shape differs
// (resize_tensor is not free).
inline Error Delegate::resize_outputs(const ContextState& target, int32_t profile) {
  const size_t n_in = inputs_.size();
  for (size_t o = 0; o < outputs_.size(); ++o) {
    if (arg_tensors_[n_in + o] == nullptr) continue;  // an aliased output the call passes no tensor for
    Tensor& out = *arg_tensors_[n_in + o];
    const Error typed = check_dtype(why_, outputs_[o], out, "output");
    if (typed != Error::Ok) return typed;
    const Shape& inferred = target.output_shapes[o];
    if (holds_output_shape(out, inferred)) continue;
    executorch::aten::SizesType sizes[kMaxRank];
    for (int32_t d = 0; d < inferred.rank; ++d) sizes[d] = static_cast<executorch::aten::SizesType>(inferred.d[d]);
    const Error resized = executorch::runtime::resize_tensor(
        out, executorch::aten::ArrayRef<executorch::aten::SizesType>(sizes, static_cast<size_t>(inferred.rank)));
    if (resized != Error::Ok) {
      char text[128];
      return fail(why_, Error::InvalidArgument,
                  "ExecuTorch refused to resize output '%s' to %s under profile %d (error %d); the output is static "
                  "or its planned bound is smaller: re-export with a dynamic upper bound covering every profile",
                  outputs_[o].display_name.c_str(), format_shape(inferred, text), profile, static_cast<int>(resized));
    }
  }
  return Error::Ok;
}

// Gives the context each argument's address: in place where the engine can use the memory, else through the
// argument's staging buffer (DeviceCall::bind). Addresses the context already holds are not set again.
inline Error Delegate::bind(ContextState& target, DeviceCall& device) {
  const size_t n_in = inputs_.size();
  const size_t n_args = n_in + outputs_.size();
  const NvtxRange range("etrt bind and stage");
  const TracedStep traced(trace_, TraceStep::kStage);
  for (size_t k = 0; k < n_args; ++k) {
    const bool is_input = k < n_in;
    const IoSlot& slot = is_input ? inputs_[k] : outputs_[k - n_in];
    void* address = nullptr;
    if (slot.alias_of >= 0) {
      // Written in place: bound where its input was just bound (TensorRT requires it of a KV-cache update).
      address = target.addresses[static_cast<size_t>(slot.alias_of)];
      device_.staged[k] = kNotStaged;
    } else if (slot.state >= 0) {
      // The delegate's own state: its storage, or for a new value written back, the buffer it is written to.
      const OwnedState& state = states_[static_cast<size_t>(slot.state)];
      address = is_input ? state.hold.data() : state.output_buffer.data();
      device_.staged[k] = kNotStaged;
    } else if (!device_.device && device_.staged[k] == kNotStaged && target.addresses[k] != nullptr &&
               arg_tensors_[k]->const_data_ptr() == target.addresses[k]) {
      continue;  // a host engine's tensor bound in place last time, at the same address: nothing to check or copy
    } else {
      if (slot.alias_target) {
        const Error in_place = device.check_in_place(*arg_tensors_[k], slot.display_name.c_str());
        if (in_place != Error::Ok) return in_place;
      }
      const Error bound = device.bind(k, *arg_tensors_[k], is_input, slot.display_name.c_str(), &address);
      if (bound != Error::Ok) return bound;
    }
    if (address == target.addresses[k]) continue;  // the context still holds it
    target.forget(Holds::kShapes);
    target.addresses[k] = nullptr;
    if (target.context->set_tensor_address(slot.engine_index, address, why_) != Error::Ok) {
      why_.prepend("binding '%s' failed: ", slot.display_name.c_str());
      return Error::Internal;
    }
    target.addresses[k] = address;
  }
  return Error::Ok;
}

// Runs the context (or replays its CUDA graph, when graphs are on and nothing changed since its last run). A failed
// enqueue returns InvalidArgument when the engine blamed the data (a token id outside the vocabulary). The caller
// records the outcome in `target`: the repeat path and the steps know different things about it.
inline Error Delegate::enqueue(const ContextState& target, DeviceCall& device, int32_t profile) {
  device.issued();  // a failed enqueue may still have left work on the stream
  GraphSet* graphs = device_.graphs.empty() ? nullptr : &device_.graphs[target.index];
  const NvtxRange range("etrt enqueue");
  return device.enqueue(*target.context, graphs, target.holds >= Holds::kRan, profile, target.input_shapes,
                        target.addresses);
}

// Copies staged outputs back, then finishes the in-place outputs.
inline Error Delegate::finish_outputs(const ContextState& target, DeviceCall& device) {
  const NvtxRange range("etrt copy back");
  const TracedStep traced(trace_, TraceStep::kCopyBack);
  const Error status = device.copy_back_outputs(arg_tensors_.data(), inputs_.size(), outputs_.size());
  if (status != Error::Ok) return status;
  return finish_in_place(target, device);
}

// Copies each input an output was written into in place back from its staging buffer, if it was staged, and into
// the write-back output ExecuTorch passed, if any; then copies the new value of each delegate-owned state the engine
// does not update in place into the state.
inline Error Delegate::finish_in_place(const ContextState& target, DeviceCall& device) {
  const size_t n_in = inputs_.size();
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const IoSlot& slot = outputs_[o];
    if (slot.alias_of < 0) continue;
    const auto input = static_cast<size_t>(slot.alias_of);
    if (inputs_[input].state >= 0) continue;  // the delegate's own state, updated where it lives: nothing to copy
    const size_t bytes = static_cast<size_t>(target.output_shapes[o].numel()) * engine::element_size(slot.dtype);
    const Error status = device.finish_in_place(input, *arg_tensors_[input], arg_tensors_[n_in + o], bytes,
                                                inputs_[input].display_name.c_str());
    if (status != Error::Ok) return status;
  }
  if (!writes_back_state_) return Error::Ok;
  for (const OwnedState& state : states_) {
    if (state.in_place) continue;
    const Error status = device.write_back_state(state.hold.data(), state.output_buffer.data(), state.bytes,
                                                 inputs_[static_cast<size_t>(state.input)].display_name.c_str());
    if (status != Error::Ok) return status;
  }
  return Error::Ok;
}

// Ends an execution: the refusal (if any) as the thread's last error, the counters and the thread's report.
inline Error Delegate::finish(const ThreadState& thread, const Outcome& outcome, const CopiedBytes& copied,
                              Error status) {
  if (status != Error::Ok) report_error(name_, "%s", why_.c_str());
  if (thread.report != nullptr) {
    ExecutionRecord record;
    static_assert(sizeof(record.delegate) == sizeof(name_), "delegate names are copied whole");
    std::memcpy(record.delegate, name_, sizeof(record.delegate));
    record.profile = outcome.choice.profile;
    record.num_profiles = table_.num_profiles();
    record.switched = outcome.switched;
    record.pin_ignored = outcome.choice.pin_ignored;
    record.ok = status == Error::Ok;
    record.host_to_device_bytes = copied.host_to_device;
    record.device_to_host_bytes = copied.device_to_host;
    record.realigned_bytes = copied.realigned;
    record.write_back_bytes = copied.write_back;
    ExecutionReport::record_on_this_thread(record);
  }
  counts_.count_bytes(copied);  // what moved, moved: a failed execution's copies count too
  if (status == Error::Ok) counts_.count_execution(outcome.choice.profile);
  return status;
}

}  // namespace etrt::backend
