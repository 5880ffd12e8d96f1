#pragma once
// One execution context as an executor drives it: the engine's context (engine.h) and what it was last given, kept by
// the calls that give it something. TensorRT keeps input shapes and tensor addresses in the context from one enqueue to
// the next, so a steady-state execution (same shapes, same buffers, no switch) repeats no engine call but the enqueue,
// and a call that repeats the last successful execution on the context goes straight to the enqueue
// (docs/host-cost.md).
//
// What the context holds is known in levels (Holds), each implying those before it. Every call below that changes the
// context -- a switch, a new shape or address, new scratch memory, a failed enqueue -- first drops to the level that
// still holds after it, so nothing concluded from an earlier configuration survives the change; no caller lowers a
// level itself. Calls at load (probing output sizes, binding a context to its profile) happen before the context is
// bound here: a BoundContext starts knowing nothing.
//
// Inline: an execution's steps (executor.cpp) are flattened into one function, and these calls with them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backend/device/device.h"
#include "backend/execute/plan.h"
#include "common/error.h"
#include "common/shape.h"
#include "engine/engine.h"
#include "etrt/profile_guard.h"
#include "profile/selection.h"

namespace etrt::backend {

class BoundContext {
 public:
  enum class Holds : uint8_t {
    kNothing,     // a new context, or one just switched: no shape or address it holds is known
    kAddresses,   // the addresses it was given that are not null; its input shapes must all be set again
    kShapes,      // every input shape, the outputs inferred from them and checked by the executor, and the choice made
                  // for them (hold_choice)
    kRan,         // its last enqueue ran with exactly these shapes, addresses, profile and scratch memory: the next one
                  // may be captured into a CUDA graph, or replay one (TensorRT defers work to the first enqueue after a
                  // change)
    kRepeatable,  // and that was a successful execution, every argument a tensor bound in place, which a call of the
                  // same request (asked), argument count and aliased outputs may repeat (remember_call)
  };

  // `index`: the context's place among its executor's (its CUDA graphs'). Sized for `inputs` and `outputs` once, so
  // that no execution allocates.
  BoundContext(size_t index, std::unique_ptr<engine::ExecutionContext> context, size_t inputs, size_t outputs)
      : index_(index),
        context_(std::move(context)),
        input_shapes_(inputs),
        output_shapes_(outputs),
        addresses_(inputs + outputs, nullptr) {}

  size_t index() const { return index_; }
  Holds holds() const { return holds_; }

  // What it holds: the input shapes as last set, the output shapes inferred from them, the address of each argument
  // (inputs, then outputs) as last set, null where unknown.
  const Shape* input_shapes() const { return input_shapes_.data(); }
  const Shape& output_shape(size_t o) const { return output_shapes_[o]; }
  const Shape* output_shapes() const { return output_shapes_.data(); }
  void* address(size_t k) const { return addresses_[k]; }
  void* const* addresses() const { return addresses_.data(); }

  // ---- the engine calls ----

  // The profile the context is on (a virtual call into the engine).
  int32_t profile() const { return context_->optimization_profile(); }

  // Switches the context to `profile`, on `stream`. After a switch every input shape and address is set again.
  [[nodiscard]] Error switch_profile(int32_t profile, engine::StreamHandle stream, Diagnostic& why) {
    forget(Holds::kNothing);
    return context_->set_optimization_profile(profile, stream, why);
  }

  // Whether the context must be given some of `shapes` (one per input): it holds no shapes, or others.
  bool input_shapes_differ(const Shape* shapes, size_t n) const {
    bool differs = holds_ < Holds::kShapes;
    for (size_t i = 0; i < n && !differs; ++i) differs = shapes[i] != input_shapes_[i];
    return differs;
  }

  // Gives the context each of `shapes` (one per input, `inputs` their arguments) it does not hold, every one below
  // kShapes; the outputs must then be inferred (infer_output_shape) and checked again before hold_choice. On a
  // refusal, `*refused` is the input, and the context is given every shape again next time.
  [[nodiscard]] Error set_input_shapes(const Shape* shapes, const Argument* inputs, size_t n, size_t* refused,
                                       Diagnostic& why) {
    const bool had_shapes = holds_ >= Holds::kShapes;
    forget(Holds::kAddresses);
    for (size_t i = 0; i < n; ++i) {
      if (had_shapes && shapes[i] == input_shapes_[i]) continue;
      if (context_->set_input_shape(inputs[i].engine_index, shapes[i], why) != Error::Ok) {
        *refused = i;
        return Error::InvalidArgument;
      }
      input_shapes_[i] = shapes[i];
    }
    return Error::Ok;
  }

  // Reads output `o`'s shape as the engine infers it from the input shapes set; output_shape(o) has it after.
  [[nodiscard]] Error infer_output_shape(size_t o, int32_t engine_index, Diagnostic& why) {
    return context_->tensor_shape(engine_index, &output_shapes_[o], why);
  }

  // Gives argument `k` (engine IO `engine_index`) `address`, unless the context holds it already.
  [[nodiscard]] Error set_address(size_t k, int32_t engine_index, void* address, Diagnostic& why) {
    if (address == addresses_[k]) return Error::Ok;
    forget(Holds::kShapes);
    addresses_[k] = nullptr;
    const Error status = context_->set_tensor_address(engine_index, address, why);
    if (status == Error::Ok) addresses_[k] = address;
    return status;
  }

  // Gives the context the scratch memory it runs in (a context made with user-managed memory). Nothing it ran before
  // is repeated or replayed on the new memory.
  [[nodiscard]] Error set_device_memory(void* memory, size_t size, Diagnostic& why) {
    forget(Holds::kShapes);
    return context_->set_device_memory(memory, size, why);
  }

  // Runs the context on `device`'s stream (DeviceCall::enqueue): `graphs`, when CUDA graphs are on, replays or
  // captures a graph only when the context last ran exactly as it is now. A failed enqueue leaves the next call to
  // take the steps and enqueue plainly.
  [[nodiscard]] Error enqueue(DeviceCall& device, GraphSet* graphs, int32_t profile) {
    const Error status = device.enqueue(*context_, graphs, holds_ >= Holds::kRan, profile, input_shapes_, addresses_);
    if (status != Error::Ok) {
      forget(Holds::kShapes);
    } else if (holds_ < Holds::kRan) {
      holds_ = Holds::kRan;
    }
    return status;
  }

  // ---- what the executor concluded ----

  // The choice the context holds for `request`, `active_profile` and `shapes` (one per input), if it holds one: the
  // choice is a pure function of the three, so an execution that repeats them (every decode step) reuses it.
  bool holds_choice_for(const ProfileRequest& request, int32_t active_profile, const Shape* shapes, size_t n,
                        profile::Choice* choice) const {
    bool same = holds_ >= Holds::kShapes && request_ == request && active_profile_ == active_profile;
    for (size_t i = 0; i < n && same; ++i) same = shapes[i] == input_shapes_[i];
    if (same) *choice = choice_;
    return same;
  }
  const profile::Choice& choice() const { return choice_; }

  // The shapes step of an execution that does not repeat the last one succeeded (the executor checked every inferred
  // output against its room): the context holds the shapes, and `choice`, made for `request` with `active_profile`
  // active. Whatever the execution ends with, the call the context ran before is no longer one to repeat: only
  // remember_call makes one so.
  void hold_choice(const ProfileRequest& request, int32_t active_profile, const profile::Choice& choice) {
    if (holds_ < Holds::kShapes) holds_ = Holds::kShapes;
    forget(Holds::kRan);
    request_ = request;
    active_profile_ = active_profile;
    choice_ = choice;
  }

  // Whether a call of `asked` with `num_args` arguments may repeat the last one (the executor then checks each
  // argument against what the context holds), and whether that call passed the aliased outputs.
  bool repeats(const ProfileRequest& asked, size_t num_args) const {
    return holds_ == Holds::kRepeatable && num_args == num_args_ && asked == asked_;
  }
  bool aliased_passed() const { return aliased_passed_; }

  // The execution that just ran here succeeded with every argument a tensor bound in place: a call like it may repeat
  // it.
  void remember_call(const ProfileRequest& asked, size_t num_args, bool aliased_passed) {
    asked_ = asked;
    num_args_ = num_args;
    aliased_passed_ = aliased_passed;
    holds_ = Holds::kRepeatable;
  }

  // A repeated call failed after its enqueue (a copy back): the next call takes the steps and enqueues plainly.
  void repeat_failed() { forget(Holds::kShapes); }

 private:
  // Keeps at most `to`; forgetting everything (a switch) forgets the addresses too.
  void forget(Holds to) {
    if (holds_ > to) holds_ = to;
    if (to == Holds::kNothing)
      for (void*& a : addresses_) a = nullptr;
  }

  size_t index_ = 0;
  std::unique_ptr<engine::ExecutionContext> context_;
  Holds holds_ = Holds::kNothing;
  std::vector<Shape> input_shapes_;   // as given to set_input_shape
  std::vector<Shape> output_shapes_;  // as inferred from them
  std::vector<void*> addresses_;      // as given to set_tensor_address, per argument (inputs, then outputs)
  // The choice made for the shapes held.
  ProfileRequest request_;
  int32_t active_profile_ = -1;
  profile::Choice choice_;
  // The call that may be repeated.
  ProfileRequest asked_;         // as the thread asked, before the plan's default request stands in for kDefault
  size_t num_args_ = 0;          // the call's arguments, every one a tensor
  bool aliased_passed_ = false;  // the call passed a tensor for each optional aliased output
};

}  // namespace etrt::backend
