#pragma once
// An engine IO tensor as the blob's resolution matches it (IoSlot, io_resolution.h), and the name index that matches
// slots at load. What an execution reads of each is the plan's Binding (plan.h).

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"

namespace etrt::backend {

// One delegate argument matched to one engine IO tensor.
struct IoSlot {
  std::string name;
  std::string display_name;  // `name` as messages quote it (common/utf8.h)
  int32_t engine_index = -1;
  engine::DataType dtype = engine::DataType::kFloat32;
  // Outputs: the input (an index into the delegate's inputs) this output is written into in place, or -1.
  // Inputs: whether some output is written into it (so it must be memory the engine can update in place).
  int32_t alias_of = -1;
  bool alias_target = false;
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
