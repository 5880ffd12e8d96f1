#pragma once
// A delegate argument bound to an engine IO tensor (IoSlot), and the name index that matches slots at load.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "engine/engine.h"

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
  // Outputs: the input (an index into the delegate's inputs) this output is written into in place, or -1.
  // Inputs: whether some output is written into it (so it must be memory the engine can update in place).
  int32_t alias_of = -1;
  bool alias_target = false;
  // The delegate-owned state (an index into Delegate::states_) this slot reads or writes, or -1. The call passes no
  // tensor for it: it is bound to the state's storage.
  int32_t state = -1;
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

}  // namespace etrt::backend
