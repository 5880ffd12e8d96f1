#pragma once
// One loaded TensorRT delegate: what ExecuTorch's DelegateHandle points to. Nothing outside src/backend sees it, so
// its layout can change without touching any public header (docs/design.md, decision 9).
//
// load() (delegate_loader.cpp) runs in BackendInterface::init() and may allocate; execute()
// (delegate_executor.cpp) runs the steps of docs/architecture.md ("Following one call") in decision 6's order and
// allocates nothing; the destructor waits for the work in flight with the delegate's device current.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <executorch/runtime/backend/backend_init_context.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/named_data_map.h>
#include <executorch/runtime/core/span.h>

#include "backend/counters.h"
#include "backend/delegate_lock.h"
#include "backend/delegate_state.h"
#include "backend/device.h"
#include "backend/engine_cache.h"
#include "backend/execution_trace.h"
#include "backend/io_resolution.h"
#include "backend/io_slot.h"
#include "backend/load_options.h"
#include "backend/scratch_pool.h"
#include "backend/thread_state.h"
#include "blob/blob.h"
#include "common/error.h"
#include "common/shape.h"
#include "engine/engine.h"
#include "etrt/profile_guard.h"
#include "profile/profile_table.h"
#include "profile/selection.h"

namespace etrt::backend {

// The scope of one load, which delegate-owned state (delegate_state.h) and the shared scratch pool (scratch_pool.h)
// are shared within (docs/design.md, decisions 18 and 19): the method allocator ExecuTorch hands every delegate it
// initializes for a Method. ExecuTorch's Module gives all its methods one allocator and every Module its own, so the
// methods of one Module share, two Modules (or sessions over one shared Program) never do, whatever the program
// carries. The address cannot be reused while a delegate of the scope lives: the delegate lives in that allocator.
inline const void* load_scope(executorch::runtime::BackendInitContext& context) {
  return context.get_runtime_allocator();
}

class Delegate {
 public:
  // `name`: "<method>#<n>", used in every message and report (cut to 63 bytes).
  Delegate(const char* name, const LoadOptions& options) noexcept;
  ~Delegate();
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;

  // Loads the TR01/TR02 blob at [blob, blob + size): the engine, its IO, aliases, profile table, delegate-owned state,
  // contexts and staging. `data` is the program's NamedDataMap (null when it has none): the initial values of the
  // blob's delegate_state come from it. `scope` is the load's (load_scope()): states and the shared scratch pool are
  // shared within it. On failure the reason is in `why` (what was wrong and what to do) and the delegate is only fit
  // for destruction.
  [[nodiscard]] Error load(const void* blob, size_t size, const executorch::runtime::NamedDataMap* data,
                           const void* scope, Diagnostic& why);

  // One execution over ExecuTorch's arguments (inputs, then outputs). A refusal is reported as the thread's last
  // error, prefixed with the delegate's name, and leaves the delegate usable. `tracer`: the execution context's event
  // tracer (ETDump), if any; each step is then logged into it (execution_trace.h).
  [[nodiscard]] Error execute(executorch::runtime::Span<executorch::runtime::EValue*> args,
                              executorch::runtime::EventTracer* tracer = nullptr);

 private:
  // How executions reach the profile they run on, fixed at load.
  enum class Strategy : uint8_t {
    kSwitch,             // one context, switched between profiles when the choice changes
    kContextPerProfile,  // one context bound to each profile, sharing one scratch buffer
  };

  // One execution context: what it was last given, and what that lets the next execution skip. TensorRT keeps input
  // shapes and tensor addresses in the context from one enqueue to the next, so a steady-state execution (same
  // shapes, same buffers, no switch) repeats no engine call but the enqueue, and a call that repeats the last
  // successful execution on the context goes straight to the enqueue (docs/host-cost.md).
  //
  // `holds` says how much of the rest is true now, in levels, each implying those before it. Whatever changes the
  // context -- a switch, a new shape or address, new scratch memory, a failed enqueue -- first calls forget() with the
  // level that still holds after it, so nothing concluded from an earlier configuration survives the change.
  struct ContextState {
    enum class Holds : uint8_t {
      kNothing,     // a new context, or one just switched: no shape or address it holds is known
      kAddresses,   // the addresses below that are not null; its input shapes must all be set again
      kShapes,      // every input shape below, the outputs inferred from them and checked against capacity, and the
                    // choice made for them (request, active_profile, choice)
      kRan,         // its last enqueue ran with exactly these shapes, addresses, profile and scratch memory: the next
                    // one may be captured into a CUDA graph, or replay one (TensorRT defers work to the first enqueue
                    // after a change)
      kRepeatable,  // and that was a successful execution, every argument a tensor bound in place, which a call of
                    // the same request (asked), argument count and aliased outputs may repeat
    };

    size_t index = 0;  // in contexts_
    engine::ExecutionContext* context = nullptr;
    Holds holds = Holds::kNothing;
    std::vector<Shape> input_shapes;   // as given to set_input_shape
    std::vector<Shape> output_shapes;  // as inferred from them
    std::vector<void*> addresses;      // as given to set_tensor_address, per argument (inputs, then outputs)
    // The choice is a pure function of the request, the active profile and the input shapes, so an execution that
    // repeats all three (every decode step) reuses it.
    ProfileRequest request;
    int32_t active_profile = -1;
    profile::Choice choice;
    // The call that may be repeated.
    ProfileRequest asked;         // as the thread asked, before the load-time default stands in for kDefault
    size_t num_args = 0;          // the call's arguments, every one a tensor
    bool aliased_passed = false;  // the call passed a tensor for each output written in place into an input

    // Keeps at most `to`; forgetting everything (a switch) forgets the addresses too.
    void forget(Holds to) {
      if (holds > to) holds = to;
      if (to == Holds::kNothing)
        for (void*& a : addresses) a = nullptr;
    }
  };
  using Holds = ContextState::Holds;

  // What an execution did, for the report and the counters.
  struct Outcome {
    profile::Choice choice{-1, false};  // profile -1: refused before a profile was chosen
    bool switched = false;
  };

  // ---- load (delegate_loader.cpp), in order ----
  Error deserialize(const blob::ParsedBlob& parsed, DeviceGuard& device, Diagnostic& why);
  void adopt(const blob::Metadata& metadata, Resolution& io);
  Error apply_weight_streaming(engine::Engine& engine, Diagnostic& why);
  Error bind_state(const blob::Metadata& metadata, const std::vector<ResolvedState>& states,
                   const executorch::runtime::NamedDataMap* data, const void* scope, Diagnostic& why);
  Error create_contexts(engine::StreamHandle stream, const void* scope, Diagnostic& why);
  Error prepare_staging(engine::StreamHandle stream, Diagnostic& why);
  Error plan_output_staging(engine::StreamHandle stream, std::vector<size_t>* bytes, Diagnostic& why);
  void size_execution_scratch();

  // ---- one execution (delegate_executor.cpp), in order ----
  Error run_steps(const ThreadState& thread, DeviceCall& device,
                  executorch::runtime::Span<executorch::runtime::EValue*> args, Outcome* outcome);
  bool repeats_last(const ProfileRequest& request, executorch::runtime::Span<executorch::runtime::EValue*> args,
                    DeviceCall& device);
  void remember_repeat(const ProfileRequest& request, size_t num_args, ContextState& target);
  ProfileRequest read_request(const ThreadState& thread) const;
  Error collect_tensors(executorch::runtime::Span<executorch::runtime::EValue*> args);
  Error collect_input_shapes();
  Error choose_and_validate(const ProfileRequest& request, profile::Choice* choice);
  ContextState& context_for(int32_t profile);
  Error switch_profile(int32_t profile, DeviceCall& device, ContextState& target, Outcome* outcome);
  Error set_shapes_and_infer_outputs(ContextState& target, int32_t profile);
  Error resize_outputs(const ContextState& target, int32_t profile);
  Error bind(ContextState& target, DeviceCall& device);
  Error enqueue(const ContextState& target, DeviceCall& device, int32_t profile);
  Error finish_outputs(const ContextState& target, DeviceCall& device);
  Error finish_in_place(const ContextState& target, DeviceCall& device);
  Error refuse_argument_count(size_t found);
  Error finish(const ThreadState& thread, const Outcome& outcome, const CopiedBytes& copied, Error status);
  Error take_scratch(ScratchPool& pool, DeviceCall& device);
  Error rebind_scratch(ScratchPool& pool);
  // One execution's frame around run_steps, untraced (execute) or traced (execute_traced: an event tracer attached).
  template <bool kTraced>
  Error execute_framed(executorch::runtime::Span<executorch::runtime::EValue*> args,
                       executorch::runtime::EventTracer* tracer);
  // An execution with an event tracer attached (delegate_executor.cpp), and what it did for the trace
  // (delegate_trace.cpp).
  Error execute_traced(executorch::runtime::Span<executorch::runtime::EValue*> args,
                       executorch::runtime::EventTracer* tracer);
  TraceOutcome trace_outcome(const Outcome& outcome, int32_t from_profile, Error status) const;

  char name_[64] = {};
  LoadOptions options_;
  Strategy strategy_ = Strategy::kSwitch;

  // Serializes executions of this delegate: the contexts below are not reentrant, and the profile bookkeeping must
  // match what the engine did.
  DelegateLock lock_;
  DelegateCounts counts_;  // its executions and switches, counted under `lock_`

  // Declaration order is destruction order reversed: contexts die before the scratch memory they run in and the
  // staging buffers bound to them, which die before the engine. The destructor first waits for the work in flight.
  // The engine is the process's one of its key, shared with every other delegate that loaded it (engine_cache.h).
  EngineHold engine_;
  // Device engines: the device, staging buffers and in-flight event (device.h).
  DeviceState device_;
  // Where the contexts run. kContextPerProfile without shared_scratch: scratch_, shared by its contexts. With
  // shared_scratch: the pool of the program and device (scratch_pool.h), which the contexts are given before an
  // execution whenever its generation differs from scratch_generation_ (0: never given). The delegate leaves the
  // pool after its contexts are gone and before device_, whose in-flight event the pool may name, is.
  DeviceBuffer scratch_;
  PrivateScratch private_scratch_;  // what the counter scratch_bytes counts of this delegate's own
  ScratchHold scratch_pool_;
  uint64_t scratch_generation_ = 0;
  // kSwitch: one context. kContextPerProfile: contexts_[p] is bound to profile p.
  std::vector<std::unique_ptr<engine::ExecutionContext>> contexts_;
  std::vector<ContextState> context_states_;  // parallel to contexts_

  profile::ProfileTable table_;
  std::vector<IoSlot> inputs_;
  std::vector<IoSlot> outputs_;
  // Outputs written in place into an input. ExecuTorch passes a tensor for each (the mutable buffer's write-back
  // slot, which then gets a copy) or, when the delegate owns the buffer, none of them.
  size_t num_aliased_ = 0;

  // Delegate-owned state (delegate_state.h): bound to its storage once, never passed by the call. A state whose new
  // value the engine writes to an output of its own (not in place) gets that output's buffer and a copy back after
  // each execution.
  struct OwnedState {
    StateHold hold;
    int32_t input = -1;   // input slot
    int32_t output = -1;  // output slot
    bool in_place = false;
    Shape shape;
    size_t bytes = 0;
    DeviceBuffer output_buffer;  // !in_place: where the engine writes the new value
  };
  std::vector<OwnedState> states_;
  size_t num_free_aliased_ = 0;     // aliased outputs that are not a state's: the call may leave them out
  bool writes_back_state_ = false;  // some state is not updated in place

  // Per-execution scratch, sized once at load so execute() never allocates.
  std::vector<Shape> input_shapes_;
  // The tensor arguments of the current call: inputs, then outputs, by slot (nullptr for an aliased output the call
  // passes no tensor for).
  std::vector<executorch::aten::Tensor*> arg_tensors_;
  // Capacity (elements) ExecuTorch planned for each output, captured the first time the output is seen, while it
  // still has its upper-bound shape.
  std::vector<int64_t> output_capacity_;

  // The profile the last successful switch (or the last execution) left the engine on; what kStickyFirstFit keeps.
  int32_t active_profile_ = 0;
  // The context of the active profile (kSwitch: the one context): where the next execution looks for a choice to
  // reuse and a call to repeat.
  ContextState* current_ = nullptr;

  // The steps of a traced execution (execute_traced), and the device times still to be read.
  ExecutionTrace trace_;

  // Where an execution's refusal is written before it is reported (fixed memory: execute() does not allocate).
  Diagnostic why_;
};

}  // namespace etrt::backend
