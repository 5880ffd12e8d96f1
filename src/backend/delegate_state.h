#pragma once
// The private per-delegate state behind ExecuTorch's DelegateHandle. Nothing
// outside src/backend sees it: the layout can change without touching any
// public header (docs/design.md, decision 9: the delegate state stays private).

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "backend/counters.h"
#include "backend/delegate_lock.h"
#include "backend/device.h"
#include "backend/load_options.h"
#include "common/shape.h"
#include "engine/engine.h"
#include "etrt/profile_guard.h"
#include "profile/profile_table.h"
#include "profile/selection.h"

namespace etrt::backend {

// ExecuTorch's spelling of an engine element type.
inline executorch::aten::ScalarType scalar_type_of(engine::DataType t) {
  using executorch::aten::ScalarType;
  switch (t) {
    case engine::DataType::kFloat32:
      return ScalarType::Float;
    case engine::DataType::kFloat16:
      return ScalarType::Half;
    case engine::DataType::kBFloat16:
      return ScalarType::BFloat16;
    case engine::DataType::kInt8:
      return ScalarType::Char;
    case engine::DataType::kUInt8:
      return ScalarType::Byte;
    case engine::DataType::kInt32:
      return ScalarType::Int;
    case engine::DataType::kInt64:
      return ScalarType::Long;
    case engine::DataType::kBool:
      return ScalarType::Bool;
  }
  return ScalarType::Undefined;
}

// One delegate argument bound to one engine IO tensor.
struct IoSlot {
  std::string name;
  std::string display_name;  // `name` as messages quote it (common/utf8.h)
  int32_t engine_index = -1;
  engine::DataType dtype = engine::DataType::kFloat32;
  // Outputs: the input (an index into DelegateState::inputs) this output is written into in place, or -1.
  // Inputs: whether some output is written into it (so it must be memory the engine can update in place).
  int32_t alias_of = -1;
  bool alias_target = false;
  // `dtype` as ExecuTorch spells it, so the per-call type check is one comparison.
  executorch::aten::ScalarType scalar_type = executorch::aten::ScalarType::Undefined;
};

// Slot name -> index into a slot list, so that matching names at load stays linear in the number of IO tensors (a
// program may carry thousands). The views point into the slots' names: the slots must outlive the index.
using NameIndex = std::unordered_map<std::string_view, int32_t>;

inline NameIndex index_names(const std::vector<IoSlot>& slots) {
  NameIndex index;
  index.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) index.emplace(slots[i].name, static_cast<int32_t>(i));
  return index;
}

// The index of `name`, or -1.
inline int32_t find_name(const NameIndex& index, const std::string& name) {
  const auto it = index.find(name);
  return it == index.end() ? -1 : it->second;
}

struct DelegateState {
  // "<method>#<n>", used in every message and report.
  char name[64] = {};
  LoadOptions options;

  // Serializes executions of this delegate: the contexts below are not
  // reentrant, and the profile bookkeeping must match what the engine did.
  DelegateLock mutex;
  DelegateCounts counts;  // its executions and switches, counted under `mutex`

  // Declaration order is destruction order reversed: contexts die before the
  // scratch memory they run in and the staging buffers bound to them, which
  // die before the engine. destroy_delegate() first waits for the work in flight.
  std::unique_ptr<engine::Engine> engine;
  // Device engines: the device, staging buffers and in-flight event (device.h).
  DeviceState device;
  DeviceBuffer scratch;
  // kSwitch: one context. kContextPerProfile: contexts[p] is bound to profile p.
  std::vector<std::unique_ptr<engine::ExecutionContext>> contexts;

  profile::ProfileTable table;
  std::vector<IoSlot> inputs;
  std::vector<IoSlot> outputs;
  // Outputs written in place into an input. ExecuTorch passes a tensor for each (the mutable buffer's write-back
  // slot, which then gets a copy) or, when the delegate owns the buffer, none of them.
  size_t num_aliased = 0;

  // Per-execution scratch, sized once at init so execute() never allocates.
  std::vector<Shape> input_shapes;
  // The tensor arguments of the current call: inputs, then outputs, by slot (nullptr for an aliased output the
  // call passes no tensor for).
  std::vector<executorch::aten::Tensor*> arg_tensors;
  // Capacity (elements) ExecuTorch planned for each output, captured the
  // first time the output is seen, while it still has its upper-bound shape.
  std::vector<int64_t> output_capacity;

  // What each context was last given. TensorRT keeps input shapes and tensor
  // addresses in the context from one enqueue to the next, so a steady-state
  // execution (same shapes, same buffers, no switch) repeats no engine call
  // but the enqueue. A switch forgets everything the context was given.
  struct ContextCache {
    bool valid = false;                // input shapes set, outputs inferred and checked against capacity
    std::vector<Shape> input_shapes;   // as given to set_input_shape
    std::vector<Shape> output_shapes;  // as inferred from them
    std::vector<void*> addresses;      // as given to set_tensor_address, per argument (inputs, then outputs)
    // The context's last enqueue ran with exactly these shapes, addresses and its profile: the next one may be
    // captured into a CUDA graph, or replay one (TensorRT defers work to the first enqueue after a change).
    bool ran = false;

    void forget() {
      valid = false;
      ran = false;
      for (void*& a : addresses) a = nullptr;
    }
  };
  std::vector<ContextCache> context_caches;  // parallel to contexts

  // The profile the last successful switch (or the last execution) left the
  // engine on; what kStickyFirstFit keeps.
  int32_t active_profile = 0;

  // The last successful choice and what it was made from. The choice is a pure function of the request, the
  // active profile and the input shapes, so an execution that repeats all three (every decode step) reuses it.
  struct LastChoice {
    bool valid = false;
    ProfileRequest request;
    int32_t active_profile = -1;
    std::vector<Shape> input_shapes;
    profile::Choice choice;
  } last_choice;

  Diagnostic diagnostic;
};

}  // namespace etrt::backend
