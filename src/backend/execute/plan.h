#pragma once
// What a load resolved, fixed for the delegate's life: the Plan an executor runs (executor.h). The loader
// (delegate_loader.cpp) builds it once, from the blob's resolution against the engine (io_resolution.h) and the
// delegate-owned states it holds; nothing changes it after load() returns.
//
// Every delegate argument -- the engine's inputs, then its outputs -- is one Argument, bound by its kind to where its
// memory comes from: a tensor the call passes, the delegate's own state, or the input an output is written into in
// place. How many tensors a call passes follows from the kinds and is counted once, into the plan's Arity.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "backend/device/device.h"
#include "backend/registry/delegate_state.h"
#include "backend/rules/io_slot.h"
#include "common/shape.h"
#include "engine/engine.h"
#include "etrt/profile_guard.h"
#include "profile/profile_table.h"

namespace etrt::backend {

// How executions reach the profile they run on.
enum class Strategy : uint8_t {
  kSwitch,             // one context, switched between profiles when the choice changes
  kContextPerProfile,  // one context bound to each profile, sharing one scratch buffer
};

// Where a delegate argument's memory comes from.
enum class ArgumentKind : uint8_t {
  kCaller,  // a tensor the call passes
  kState,   // delegate-owned state (delegate_state.h), never passed: the state's storage (its input), or the buffer the
            // engine writes the state's new value to (its output, when that is not written in place)
  kAlias,   // an output the engine writes in place into input `target`: bound where that input is bound
};

// One delegate argument bound to one engine IO tensor.
struct Argument {
  ArgumentKind kind = ArgumentKind::kCaller;
  // kAlias into a caller's input: the call passes a tensor for it (the mutable buffer's write-back slot) or, leaving
  // out every such output at once, none. An output written in place into a state is never passed.
  bool optional = false;
  // kCaller inputs: some output is written into this one in place, so it must be memory the engine can update there.
  bool in_place_target = false;
  int32_t target = -1;  // kAlias: the input it is written into; kState: the state (an index into Plan::states)
  int32_t engine_index = -1;
  engine::DataType dtype = engine::DataType::kFloat32;
  // `dtype` as ExecuTorch spells it, so the per-call type check is one comparison.
  executorch::aten::ScalarType scalar_type = executorch::aten::ScalarType::Undefined;
  std::string display_name;  // the engine's name as messages quote it (common/utf8.h)

  // Whether a call passes a tensor for this argument; `with_aliased`: the call passes the optional aliased outputs.
  bool passed(bool with_aliased) const { return kind == ArgumentKind::kCaller || (optional && with_aliased); }
};

// The argument counts of a call, from the arguments' kinds.
struct Arity {
  size_t inputs = 0;
  size_t outputs = 0;
  size_t bound = 0;     // inputs + outputs: every engine IO tensor
  size_t passed = 0;    // the tensors a call passes: every argument but the states' (two per state)
  size_t optional = 0;  // of those, the aliased outputs a call may leave out, all together
  size_t aliased = 0;   // outputs written in place into an input, the states' included
};

// A delegate-owned state tensor: bound to its storage once, never passed by the call. A state whose new value the
// engine writes to an output of its own (not in place) gets that output's buffer and a copy back after each execution.
struct OwnedState {
  StateHold hold;
  int32_t input = -1;   // its input (an index into the inputs)
  int32_t output = -1;  // its output (an index into the outputs)
  bool in_place = false;
  Shape shape;
  size_t bytes = 0;
  DeviceBuffer output_buffer;  // !in_place: where the engine writes the new value
};

struct Plan {
  char name[64] = {};               // "<method>#<n>", in every message and report
  std::vector<Argument> arguments;  // the inputs, then the outputs, in the call's order
  Arity arity;
  profile::ProfileTable table;
  Strategy strategy = Strategy::kSwitch;
  // What an execution without a guard asks for (LoadOptions::default_request).
  ProfileRequest default_request;
  std::vector<OwnedState> states;
  bool writes_back_state = false;  // some state's new value is not written in place

  const Argument& input(size_t i) const { return arguments[i]; }
  const Argument& output(size_t o) const { return arguments[arity.inputs + o]; }
};

// ExecuTorch's spelling of an engine element type.
executorch::aten::ScalarType scalar_type_of(engine::DataType t);

// The arguments of the resolution's arguments (io_resolution.h): every one the caller's, or an alias.
void plan_arguments(const std::vector<IoSlot>& inputs, const std::vector<IoSlot>& outputs, Plan* plan);

// Binds state `k` (plan->states[k], its slots set) to its storage: its input becomes kState, and its output too unless
// the engine writes it in place (then it stays the alias of a state's input, which no call passes).
void plan_state(size_t k, Plan* plan);

// Counts the arguments from the arguments (Arity) and marks the aliases a call may leave out; after the states.
void count_arguments(Plan* plan);

}  // namespace etrt::backend
