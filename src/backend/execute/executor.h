#pragma once
// What executions of one delegate change, and the execution itself: the executor runs its Plan (plan.h) on the
// contexts it binds (bound_context.h), in the order docs/design.md (decision 6) fixes and docs/architecture.md
// ("Following one call") numbers. As ExecuTorch's XNNPACK executor does, an execution prepares the call's arguments
// (the tensors, their shapes, the profile chosen and every input validated against it), runs (switch, shapes, bind,
// enqueue) and finishes (outputs resized before, copied back after; the report). Nothing here allocates at execute.
//
// The loader (delegate_loader.cpp) makes its resources (initialize(), executor_setup.cpp): the contexts, their scratch
// memory, the staging buffers and the device state.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/event_tracer.h>
#include <executorch/runtime/core/span.h>

#include "backend/device/device.h"
#include "backend/execute/bound_context.h"
#include "backend/execute/delegate_lock.h"
#include "backend/execute/execution_trace.h"
#include "backend/execute/plan.h"
#include "backend/glue/counters.h"
#include "backend/glue/load_options.h"
#include "backend/glue/thread_state.h"
#include "backend/registry/scratch_pool.h"
#include "common/error.h"
#include "common/shape.h"
#include "engine/engine.h"
#include "etrt/profile_guard.h"
#include "profile/selection.h"

namespace etrt::backend {

class Executor {
 public:
  // Runs `plan`, which the loader fills before initialize() and nobody changes after.
  explicit Executor(const Plan& plan) noexcept : plan_(plan) {}
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // ---- load (executor_setup.cpp) ----

  // The device state and the lock executions take: delegate-owned states name their users by them (StateUser).
  DeviceState& device() { return device_; }
  DelegateLock& lock() { return lock_; }

  // Creates the plan's contexts (one, or one per profile), their scratch memory (the delegate's own, or the load's
  // shared pool with `options.shared_scratch`) and the staging buffers, binds the contexts, and sizes what executions
  // use, so that execute() never allocates. `stream`: the load stream of a device engine (null for a host engine).
  [[nodiscard]] Error initialize(engine::Engine& engine, const LoadOptions& options, const void* scope,
                                 engine::StreamHandle stream, Diagnostic& why);

  // The destructor's first step: waits for the work in flight, with the delegate's device current.
  void wait_for_in_flight();

  // ---- one execution (executor.cpp) ----

  // One execution over ExecuTorch's arguments (inputs, then outputs). A refusal is reported as the thread's last
  // error, prefixed with the delegate's name, and leaves the delegate usable. `tracer`: the execution context's event
  // tracer (ETDump), if any; each step is then logged into it (execution_trace.h).
  [[nodiscard]] Error execute(executorch::runtime::Span<executorch::runtime::EValue*> args,
                              executorch::runtime::EventTracer* tracer);

 private:
  // What an execution did, for the report and the counters.
  struct Outcome {
    profile::Choice choice{-1, false};  // profile -1: refused before a profile was chosen
    bool switched = false;
  };

  // ---- load (executor_setup.cpp) ----
  Error create_contexts(engine::Engine& engine, const LoadOptions& options, const void* scope,
                        engine::StreamHandle stream, std::vector<std::unique_ptr<engine::ExecutionContext>>* contexts,
                        Diagnostic& why);
  Error prepare_staging(engine::Engine& engine, engine::StreamHandle stream,
                        const std::vector<std::unique_ptr<engine::ExecutionContext>>& contexts, Diagnostic& why);
  Error plan_output_staging(engine::Engine& engine, engine::StreamHandle stream,
                            const std::vector<std::unique_ptr<engine::ExecutionContext>>& contexts,
                            std::vector<size_t>* bytes, Diagnostic& why);
  void bind_contexts(engine::Engine& engine, const LoadOptions& options,
                     std::vector<std::unique_ptr<engine::ExecutionContext>> contexts);

  // ---- one execution (executor.cpp), in order ----
  // One execution's frame around run, untraced (execute) or traced (execute_traced: an event tracer attached).
  template <bool kTraced>
  Error execute_framed(executorch::runtime::Span<executorch::runtime::EValue*> args,
                       executorch::runtime::EventTracer* tracer);
  Error execute_traced(executorch::runtime::Span<executorch::runtime::EValue*> args,
                       executorch::runtime::EventTracer* tracer);
  Error take_scratch(ScratchPool& pool, DeviceCall& device);
  Error rebind_scratch(ScratchPool& pool);
  Error run(const ThreadState& thread, DeviceCall& device, executorch::runtime::Span<executorch::runtime::EValue*> args,
            bool may_repeat, Outcome* outcome);
  bool repeats_last(const ProfileRequest& request, executorch::runtime::Span<executorch::runtime::EValue*> args,
                    DeviceCall& device);
  void remember_call(const ProfileRequest& request, size_t num_args, BoundContext& target);
  // prepare
  Error prepare_args(const ProfileRequest& request, executorch::runtime::Span<executorch::runtime::EValue*> args,
                     profile::Choice* choice);
  Error collect_tensors(executorch::runtime::Span<executorch::runtime::EValue*> args);
  Error collect_input_shapes();
  Error choose_and_validate(const ProfileRequest& request, profile::Choice* choice);
  // run
  BoundContext& context_for(int32_t profile);
  Error switch_profile(int32_t profile, DeviceCall& device, BoundContext& target, Outcome* outcome);
  Error set_shapes_and_infer_outputs(BoundContext& target, int32_t profile);
  Error check_output(const BoundContext& target, size_t o, int32_t profile);
  Error bind(BoundContext& target, DeviceCall& device);
  Error enqueue(BoundContext& target, DeviceCall& device, int32_t profile);
  // finish
  Error resize_outputs(const BoundContext& target, int32_t profile);
  Error finish_outputs(const BoundContext& target, DeviceCall& device);
  Error finish_in_place(const BoundContext& target, DeviceCall& device);
  Error finish(const ThreadState& thread, const Outcome& outcome, const CopiedBytes& copied, Error status);
  // What a traced execution did, for its events (executor_trace.cpp).
  TraceOutcome trace_outcome(const Outcome& outcome, int32_t from_profile, Error status) const;

  const Plan& plan_;

  // Serializes executions of this delegate: the contexts below are not reentrant, and the profile bookkeeping must
  // match what the engine did.
  DelegateLock lock_;
  DelegateCounts counts_;  // its executions and switches, counted under `lock_`

  // Declaration order is destruction order reversed: the contexts die before the scratch memory they run in and the
  // staging buffers bound to them (and the engine, the delegate's, after all of them). The delegate's destructor first
  // waits for the work in flight.
  //
  // Device engines: the device, staging buffers and in-flight event (device.h).
  DeviceState device_;
  // Where the contexts run. kContextPerProfile without shared_scratch: scratch_, shared by its contexts. With
  // shared_scratch: the pool of the load and device (scratch_pool.h), which the contexts are given before an execution
  // whenever its generation differs from scratch_generation_ (0: never given). The executor leaves the pool after its
  // contexts are gone and before device_, whose in-flight event the pool may name, is.
  DeviceBuffer scratch_;
  PrivateScratch private_scratch_;  // what the counter scratch_bytes counts of this delegate's own
  ScratchHold scratch_pool_;
  uint64_t scratch_generation_ = 0;
  // kSwitch: one context. kContextPerProfile: contexts_[p] is bound to profile p.
  std::vector<BoundContext> contexts_;

  // Per-execution scratch, sized once at load so execute() never allocates.
  std::vector<Shape> input_shapes_;
  // The tensor arguments of the current call: inputs, then outputs, by argument (nullptr for one the call does not
  // pass).
  std::vector<executorch::aten::Tensor*> arg_tensors_;
  // Capacity (elements) ExecuTorch planned for each output, captured the first time the output is seen, while it
  // still has its upper-bound shape.
  std::vector<int64_t> output_capacity_;

  // The profile the last successful switch (or the last execution) left the engine on; what kStickyFirstFit keeps.
  int32_t active_profile_ = 0;
  // The context of the active profile (kSwitch: the one context): where the next execution looks for a choice to
  // reuse and a call to repeat.
  BoundContext* current_ = nullptr;

  // The steps of a traced execution (execute_traced), and the device times still to be read.
  ExecutionTrace trace_;

  // Where an execution's refusal is written before it is reported (fixed memory: execute() does not allocate).
  Diagnostic why_;
};

}  // namespace etrt::backend
