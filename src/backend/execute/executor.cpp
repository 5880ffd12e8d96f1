// Executor::execute: one execution, in the order docs/design.md (decision 6) fixes and docs/architecture.md
// ("Following one call") numbers: lock -> wait for in-flight work -> read the thread's request -> prepare the
// arguments (collect the tensors and input shapes, choose the profile and validate every input) -> run (switch, set
// input shapes and infer output shapes, resize outputs, bind, enqueue) -> finish (copy back, report). Nothing that
// changes engine state happens before validation passes, and nothing here allocates: a refusal is written into why_
// and reported once, at the end. What the contexts hold is theirs to keep (bound_context.h).

#include <cstdio>
#include <cstring>
#include <mutex>

#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/platform/log.h>

#include "backend/device/nvtx_range.h"
#include "backend/device/staging.h"
#include "backend/execute/executor.h"
#include "backend/execute/executor_refusals.h"
#include "backend/glue/last_error.h"
#include "backend/policy/scratch_pool_policy.h"
#include "common/compiler.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"

namespace etrt::backend {

using executorch::aten::Tensor;
using executorch::runtime::EValue;
using executorch::runtime::EventTracer;
using executorch::runtime::Span;

namespace {

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
// run, release them in reverse and report. `kTraced` (execute_traced) adds the tracer's parts: each step is timed and
// logged as a delegate event (execution_trace.h), with the device time on a device engine, and the repeat shortcut is
// never taken, so that each step is timed on its own; for a repeat the steps find nothing to change, so it does what
// the shortcut would. Both instantiations are inlined where they are called: execute() keeps its instructions, and
// the traced frame stays out of its way.
template <bool kTraced>
ETRT_ALWAYS_INLINE inline Error Executor::execute_framed(Span<EValue*> args, [[maybe_unused]] EventTracer* tracer) {
  const NvtxRange range("etrt execute");
  const std::lock_guard<DelegateLock> lock(lock_);  // 1. lock
  ThreadState& thread = thread_state();  // one thread-local lookup for the request, the error flag and the report
  thread.has_error = false;              // etrt::clear_last_error()
  DeviceCall device(device_, plan_.name, why_);
  Outcome outcome;
  [[maybe_unused]] int32_t from_profile = -1;
  if constexpr (kTraced) {
    from_profile = active_profile_;
    trace_.begin(tracer);
  }
  Error status = device.begin(current_cuda_stream);  // 2. wait for the previous in-flight work
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
    status = run(thread, device, args, /*may_repeat=*/!kTraced, &outcome);
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

Error Executor::execute(Span<EValue*> args, EventTracer* tracer) {
  if (tracer != nullptr) return execute_traced(args, tracer);  // ExecuTorch's profiling (ETDump): the only check
  return execute_framed<false>(args, nullptr);
}

// execute() with an event tracer attached: the same frame and steps, traced (execute_framed<true>).
ETRT_COLD ETRT_NOINLINE Error Executor::execute_traced(Span<EValue*> args, EventTracer* tracer) {
  return execute_framed<true>(args, tracer);
}

// Under the pool's lock, before anything of this execution reaches the device: orders the stream after the pool's
// last work and, when the pool's buffer changed since the contexts were given it, gives them the new one. On a
// steady call that is a comparison and, on another stream than the last user's, one cudaStreamWaitEvent.
inline Error Executor::take_scratch(ScratchPool& pool, DeviceCall& device) {
  const Error status = device.wait_for_scratch(pool.turn());
  if (status != Error::Ok || !must_rebind(scratch_generation_, pool.generation())) return status;
  return rebind_scratch(pool);
}

// Steps 3-8, after the wait for in-flight work; `device` carries the stream. The steps below are inlined into it
// (flatten): as separate calls they cost a tenth of etrt's per-forward() instructions (docs/host-cost.md).
ETRT_FLATTEN inline Error Executor::run(const ThreadState& thread, DeviceCall& device, Span<EValue*> args,
                                        bool may_repeat, Outcome* outcome) {
  if (may_repeat && repeats_last(thread.request, args, device)) {  // the last execution again: only the enqueue
    BoundContext& target = *current_;
    outcome->choice = target.choice();
    Error status = enqueue(target, device, outcome->choice.profile);
    if (status == Error::Ok && (plan_.arity.aliased != 0 || plan_.writes_back_state)) {
      status = finish_in_place(target, device);
      if (status != Error::Ok) target.repeat_failed();
    }
    return status;
  }

  // Prepare: 3. the request (no guard: the plan's default), 4. the tensors and input shapes, 5. choose and validate.
  trace_.start(TraceStep::kChoice);
  const ProfileRequest request =
      thread.request.kind != ProfileRequest::Kind::kDefault ? thread.request : plan_.default_request;
  profile::Choice choice;
  Error status = prepare_args(request, args, &choice);
  trace_.stop(TraceStep::kChoice);
  if (status != Error::Ok) return status;
  outcome->choice = choice;

  // Run. Validation passed: from here on the engine's state changes, on the execution stream.
  BoundContext& target = context_for(choice.profile);
  status = switch_profile(choice.profile, device, target, outcome);  // 6. switch
  if (status != Error::Ok) return status;
  status = set_shapes_and_infer_outputs(target, choice.profile);  // 7. shapes, inferred outputs, resize
  if (status != Error::Ok) return status;
  target.hold_choice(request, active_profile_, choice);
  status = resize_outputs(target, choice.profile);
  if (status == Error::Ok) status = bind(target, device);  // 8. bind, enqueue, copy back
  if (status == Error::Ok) {
    const TracedStep traced(trace_, TraceStep::kEnqueue);  // here, not in enqueue(): the repeat path has no trace
    status = enqueue(target, device, choice.profile);
  }
  // Finish.
  if (status == Error::Ok) status = finish_outputs(target, device);
  if (status == Error::Ok) remember_call(thread.request, args.size(), target);
  return status;
}

// Whether this call repeats the last successful execution, on the active profile's context (BoundContext::repeats);
// if so, arg_tensors_ holds its tensors. Every check here is one the steps would make, against what the context was
// last given: the tensors' types, the input shapes (so the same choice, with no switch and no shape to set), the
// output shapes (nothing to resize) and the addresses (nothing to bind).
inline bool Executor::repeats_last(const ProfileRequest& request, Span<EValue*> args, DeviceCall& device) {
  const BoundContext& last = *current_;
  if (!last.repeats(request, args.size())) return false;
  const size_t n_in = plan_.arity.inputs;
  // Read once: the stores into arg_tensors_ below would otherwise make the compiler read them again every argument.
  const Argument* const arguments = plan_.arguments.data();
  const Shape* const input_shapes = last.input_shapes();
  const Shape* const output_shapes = last.output_shapes();
  void* const* const addresses = last.addresses();
  const bool aliased_passed = last.aliased_passed();
  size_t next = 0;  // every argument was a tensor: argument by argument, they come in order
  for (size_t k = 0; k < arg_tensors_.size(); ++k) {
    const Argument& argument = arguments[k];
    if (!argument.passed(aliased_passed)) {
      arg_tensors_[k] = nullptr;  // the delegate's own state, bound once; or an aliased output the call leaves out
      continue;
    }
    EValue* value = args[next++];
    if (value == nullptr || !value->isTensor()) return false;
    Tensor& t = value->toTensor();
    arg_tensors_[k] = &t;
    if (t.scalar_type() != argument.scalar_type) return false;
    const bool is_input = k < n_in;
    if (is_input ? !has_shape(t, input_shapes[k]) : !holds_output_shape(t, output_shapes[k - n_in])) return false;
    // Written in place, bound where its input is. A write-back tensor with no memory falls through and is no repeat.
    if (argument.kind == ArgumentKind::kAlias && t.const_data_ptr() != nullptr) continue;
    if (t.const_data_ptr() != addresses[k] || !device.binds_in_place(t)) return false;
  }
  return true;
}

// After a successful execution through the steps: whether the next one may repeat it.
inline void Executor::remember_call(const ProfileRequest& request, size_t num_args, BoundContext& target) {
  size_t tensors = 0;
  bool staged = false;
  for (size_t k = 0; k < arg_tensors_.size(); ++k) {
    tensors += arg_tensors_[k] != nullptr;
    staged = staged || device_.staged[k] != 0;
  }
  if (tensors != num_args || staged) return;
  target.remember_call(request, num_args, /*aliased_passed=*/num_args == plan_.arity.passed);
}

// ---- prepare ----

// The call's tensors and input shapes, and the profile they run on, every input validated against it.
inline Error Executor::prepare_args(const ProfileRequest& request, Span<EValue*> args, profile::Choice* choice) {
  Error status = collect_tensors(args);
  if (status == Error::Ok) status = collect_input_shapes();
  if (status == Error::Ok) status = choose_and_validate(request, choice);
  return status;
}

// Gathers the call's tensors (inputs, then outputs; non-tensor arguments such as SymInts are skipped) into
// arg_tensors_, by argument. Arguments the call never passes (a state's) get nullptr, and so, when the call leaves them
// out (ExecuTorch does when the delegate owns the mutable buffer), do the optional aliased outputs.
inline Error Executor::collect_tensors(Span<EValue*> args) {
  const Arity& arity = plan_.arity;
  size_t found = 0;
  if (arity.passed == arity.bound) {
    // One pass for the common case, every argument passed.
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == nullptr || !args[i]->isTensor()) continue;
      if (found < arity.bound) arg_tensors_[found] = &args[i]->toTensor();
      ++found;
    }
    if (found == arity.bound) return Error::Ok;
  } else {
    for (size_t i = 0; i < args.size(); ++i) found += args[i] != nullptr && args[i]->isTensor();
  }
  bool with_aliased = true;
  if (found != arity.passed) {
    if (arity.optional == 0 || found != arity.passed - arity.optional) return refuse_argument_count(why_, plan_, found);
    with_aliased = false;
  }
  // Place the tensors again, skipping the arguments the call does not pass.
  const Argument* const arguments = plan_.arguments.data();
  size_t k = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr || !args[i]->isTensor()) continue;
    while (!arguments[k].passed(with_aliased)) arg_tensors_[k++] = nullptr;
    arg_tensors_[k++] = &args[i]->toTensor();
  }
  while (k < arity.bound) arg_tensors_[k++] = nullptr;
  return Error::Ok;
}

// Checks each input's type and rank and copies its shape into input_shapes_ (sized at load).
inline Error Executor::collect_input_shapes() {
  for (size_t i = 0; i < plan_.arity.inputs; ++i) {
    const Argument& input = plan_.input(i);
    if (input.kind == ArgumentKind::kState) {  // the delegate's own state: its one static shape
      input_shapes_[i] = plan_.states[static_cast<size_t>(input.target)].shape;
      continue;
    }
    const Tensor& t = *arg_tensors_[i];
    const Error typed = check_dtype(why_, input, t, "input");
    if (typed != Error::Ok) return typed;
    const auto sizes = t.sizes();
    if (sizes.size() > static_cast<size_t>(kMaxRank)) return refuse_rank(why_, input, sizes.size());
    Shape& shape = input_shapes_[i];
    shape.rank = static_cast<int32_t>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) shape.d[d] = sizes[d];
  }
  return Error::Ok;
}

// The profile for this execution, every input validated against it (profile::choose_and_validate). An execution
// with the request, active profile and input shapes the active profile's context last chose for reuses that choice.
inline Error Executor::choose_and_validate(const ProfileRequest& request, profile::Choice* choice) {
  const size_t n_in = plan_.arity.inputs;
  if (current_->holds_choice_for(request, active_profile_, input_shapes_.data(), n_in, choice)) return Error::Ok;
  const etrt::Span<const Shape> shapes(input_shapes_.data(), n_in);
  return profile::choose_and_validate(plan_.table, request, active_profile_, shapes, choice, why_);
}

// ---- run ----

// The context an execution on `profile` runs on: strategy kSwitch's one context, or for kContextPerProfile the one
// bound to `profile` at load.
inline BoundContext& Executor::context_for(int32_t profile) {
  return contexts_[plan_.strategy == Strategy::kContextPerProfile ? static_cast<size_t>(profile) : 0];
}

// Strategy kSwitch: switches the one context when its profile differs, on the execution stream. Strategy
// kContextPerProfile: `target` is bound to `profile` already. Either way it is the active profile's context after.
inline Error Executor::switch_profile(int32_t profile, DeviceCall& device, BoundContext& target, Outcome* outcome) {
  const TracedStep traced(trace_, TraceStep::kSwitch);
  current_ = &target;
  if (plan_.strategy == Strategy::kContextPerProfile) {
    outcome->switched = profile != active_profile_;
  } else if (const int32_t from = target.profile(); from != profile) {
    const NvtxRange range("etrt switch profile");
    device.issued();  // the switch may have put work on the stream even if it then failed
    if (target.switch_profile(profile, device.stream(), why_) != Error::Ok) {
      why_.prepend("switching from profile %d to profile %d failed: ", from, profile);
      return Error::Internal;
    }
    outcome->switched = true;
  }
  if (outcome->switched) {
    ET_LOG(Debug, "TensorRT delegate %s: profile %d -> %d", plan_.name, active_profile_, profile);
    active_profile_ = profile;
    counts_.count_switch();
  }
  return Error::Ok;
}

// Gives the context every input shape that changed, then reads the output shapes inferred from them and checks each
// (check_output). Only a complete success lets the context hold the shapes (BoundContext::hold_choice), so a refused
// call is checked again in full next time.
inline Error Executor::set_shapes_and_infer_outputs(BoundContext& target, int32_t profile) {
  const TracedStep traced(trace_, TraceStep::kShapes);
  const size_t n_in = plan_.arity.inputs;
  if (!target.input_shapes_differ(input_shapes_.data(), n_in)) return Error::Ok;

  const NvtxRange range("etrt set shapes");
  size_t refused = 0;
  if (target.set_input_shapes(input_shapes_.data(), plan_.arguments.data(), n_in, &refused, why_) != Error::Ok)
    return refuse_input_shape(why_, plan_.input(refused), input_shapes_[refused], profile);
  for (size_t o = 0; o < plan_.arity.outputs; ++o) {
    const Argument& output = plan_.output(o);
    const Tensor* out = arg_tensors_[n_in + o];
    if (out != nullptr && output_capacity_[o] < 0) output_capacity_[o] = static_cast<int64_t>(out->numel());
    if (target.infer_output_shape(o, output.engine_index, why_) != Error::Ok) {
      why_.prepend("the engine could not infer the shape of output '%s' under profile %d: ",
                   output.display_name.c_str(), profile);
      return Error::Internal;
    }
    const Error checked = check_output(target, o, profile);
    if (checked != Error::Ok) return checked;
  }
  return Error::Ok;
}

// Output `o`'s inferred shape against where it goes: no data-dependent dimension; an aliased output within its input;
// a state's new value at the state's shape; a tensor the call passed within the room ExecuTorch planned.
inline Error Executor::check_output(const BoundContext& target, size_t o, int32_t profile) {
  const Argument& output = plan_.output(o);
  const Shape& inferred = target.output_shape(o);
  for (int32_t d = 0; d < inferred.rank; ++d)
    if (inferred.d[d] < 0) return refuse_data_dependent(why_, output, inferred, profile, d);
  if (output.kind == ArgumentKind::kAlias) {
    const auto input = static_cast<size_t>(output.target);
    const Tensor* input_tensor = arg_tensors_[input];
    const int64_t room =
        input_tensor != nullptr ? static_cast<int64_t>(input_tensor->numel()) : input_shapes_[input].numel();
    if (inferred.numel() > room) return refuse_alias_room(why_, output, plan_.input(input), inferred, profile, room);
    if (arg_tensors_[plan_.arity.inputs + o] == nullptr) return Error::Ok;  // a passed one is the call's output too
  }
  if (output.kind == ArgumentKind::kState) {  // the new value of a state written back: the state's own size
    const OwnedState& state = plan_.states[static_cast<size_t>(output.target)];
    if (inferred != state.shape) return refuse_state_shape(why_, output, state.shape, inferred, profile);
    return Error::Ok;
  }
  if (inferred.numel() > output_capacity_[o])
    return refuse_output_room(why_, output, inferred, profile, output_capacity_[o]);
  return Error::Ok;
}

// Gives the context each argument's address: in place where the engine can use the memory, else through the
// argument's staging buffer (DeviceCall::bind). Addresses the context already holds are not set again.
inline Error Executor::bind(BoundContext& target, DeviceCall& device) {
  const size_t n_in = plan_.arity.inputs;
  const size_t n_args = plan_.arity.bound;
  const Argument* const arguments = plan_.arguments.data();
  const NvtxRange range("etrt bind and stage");
  const TracedStep traced(trace_, TraceStep::kStage);
  for (size_t k = 0; k < n_args; ++k) {
    const Argument& argument = arguments[k];
    const bool is_input = k < n_in;
    void* address = nullptr;
    if (argument.kind == ArgumentKind::kAlias) {
      // Written in place: bound where its input was just bound (TensorRT requires it of a KV-cache update). A
      // write-back tensor the call passes is copied to after the enqueue: it needs memory of its own.
      if (const Tensor* copy = arg_tensors_[k]; copy != nullptr && copy->const_data_ptr() == nullptr && copy->nbytes())
        return refuse_missing_memory(why_, "output", argument.display_name.c_str(), copy->nbytes());
      address = target.address(static_cast<size_t>(argument.target));
      device_.staged[k] = kNotStaged;
    } else if (argument.kind == ArgumentKind::kState) {
      // The delegate's own state: its storage, or for a new value written back, the buffer it is written to.
      const OwnedState& state = plan_.states[static_cast<size_t>(argument.target)];
      address = is_input ? state.hold.data() : state.output_buffer.data();
      device_.staged[k] = kNotStaged;
    } else if (!device_.device && device_.staged[k] == kNotStaged && target.address(k) != nullptr &&
               arg_tensors_[k]->const_data_ptr() == target.address(k)) {
      continue;  // a host engine's tensor bound in place last time, at the same address: nothing to check or copy
    } else {
      if (argument.in_place_target) {
        const Error in_place = device.check_in_place(*arg_tensors_[k], argument.display_name.c_str());
        if (in_place != Error::Ok) return in_place;
      }
      const Error bound = device.bind(k, *arg_tensors_[k], is_input, argument.display_name.c_str(), &address);
      if (bound != Error::Ok) return bound;
    }
    if (target.set_address(k, argument.engine_index, address, why_) != Error::Ok) {
      why_.prepend("binding '%s' failed: ", argument.display_name.c_str());
      return Error::Internal;
    }
  }
  return Error::Ok;
}

// Runs the context (or replays its CUDA graph, when graphs are on and nothing changed since its last run). A failed
// enqueue returns InvalidArgument when the engine blamed the data (a token id outside the vocabulary).
inline Error Executor::enqueue(BoundContext& target, DeviceCall& device, int32_t profile) {
  device.issued();  // a failed enqueue may still have left work on the stream
  GraphSet* graphs = device_.graphs.empty() ? nullptr : &device_.graphs[target.index()];
  const NvtxRange range("etrt enqueue");
  return target.enqueue(device, graphs, profile);
}

// ---- finish ----

// Gives every output tensor the shape the engine inferred for it, resizing only those whose shape differs
// (resize_tensor is not free).
inline Error Executor::resize_outputs(const BoundContext& target, int32_t profile) {
  const size_t n_in = plan_.arity.inputs;
  for (size_t o = 0; o < plan_.arity.outputs; ++o) {
    if (arg_tensors_[n_in + o] == nullptr) continue;  // an output the call passes no tensor for
    Tensor& out = *arg_tensors_[n_in + o];
    const Argument& output = plan_.output(o);
    const Error typed = check_dtype(why_, output, out, "output");
    if (typed != Error::Ok) return typed;
    const Shape& inferred = target.output_shape(o);
    if (holds_output_shape(out, inferred)) continue;
    executorch::aten::SizesType sizes[kMaxRank];
    for (int32_t d = 0; d < inferred.rank; ++d) sizes[d] = static_cast<executorch::aten::SizesType>(inferred.d[d]);
    const Error resized = executorch::runtime::resize_tensor(
        out, executorch::aten::ArrayRef<executorch::aten::SizesType>(sizes, static_cast<size_t>(inferred.rank)));
    if (resized != Error::Ok) return refuse_resize(why_, output, inferred, profile, resized);
  }
  return Error::Ok;
}

// Copies staged outputs back, then finishes the in-place outputs.
inline Error Executor::finish_outputs(const BoundContext& target, DeviceCall& device) {
  const NvtxRange range("etrt copy back");
  const TracedStep traced(trace_, TraceStep::kCopyBack);
  const Error status = device.copy_back_outputs(arg_tensors_.data(), plan_.arity.inputs, plan_.arity.outputs);
  if (status != Error::Ok) return status;
  return finish_in_place(target, device);
}

// Copies each input an output was written into in place back from its staging buffer, if it was staged, and into
// the write-back output ExecuTorch passed, if any; then copies the new value of each delegate-owned state the engine
// does not update in place into the state.
inline Error Executor::finish_in_place(const BoundContext& target, DeviceCall& device) {
  const size_t n_in = plan_.arity.inputs;
  for (size_t o = 0; o < plan_.arity.outputs; ++o) {
    const Argument& output = plan_.output(o);
    if (output.kind != ArgumentKind::kAlias) continue;
    const auto input = static_cast<size_t>(output.target);
    const Argument& written = plan_.input(input);
    if (written.kind == ArgumentKind::kState) continue;  // the delegate's own state, updated where it lives
    const size_t bytes = static_cast<size_t>(target.output_shape(o).numel()) * engine::element_size(output.dtype);
    const Error status = device.finish_in_place(input, *arg_tensors_[input], arg_tensors_[n_in + o], bytes,
                                                written.display_name.c_str());
    if (status != Error::Ok) return status;
  }
  if (!plan_.writes_back_state) return Error::Ok;
  for (const OwnedState& state : plan_.states) {
    if (state.in_place) continue;
    const Error status = device.write_back_state(state.hold.data(), state.output_buffer.data(), state.bytes,
                                                 plan_.input(static_cast<size_t>(state.input)).display_name.c_str());
    if (status != Error::Ok) return status;
  }
  return Error::Ok;
}

// Ends an execution: the refusal (if any) as the thread's last error, the counters and the thread's report.
inline Error Executor::finish(const ThreadState& thread, const Outcome& outcome, const CopiedBytes& copied,
                              Error status) {
  if (status != Error::Ok) report_error(plan_.name, "%s", why_.c_str());
  if (thread.report != nullptr) {
    ExecutionRecord record;
    static_assert(sizeof(record.delegate) == sizeof(plan_.name), "delegate names are copied whole");
    std::memcpy(record.delegate, plan_.name, sizeof(record.delegate));
    record.profile = outcome.choice.profile;
    record.num_profiles = plan_.table.num_profiles();
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
